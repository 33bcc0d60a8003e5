//! Worker mode: one process running the library's [`Worker`]s over the
//! witness, as the orchestrator started it: one `Worker` for each group of
//! queues it is given (the plain jobs' queue alone, so that its acks fetch
//! its next jobs; the flows' queues together). Its handler journals
//! `start`, sleeps the job's work, and journals `end` before it returns Ok,
//! so a job the worker acks has its `end` line on disk first. A flow's
//! parent's handler first journals what `children_results()` gave it; a
//! flow's job returns its result (`flows::result_of`). It stops gracefully
//! (stop claiming, finish or release what it holds) when its stdin closes:
//! the orchestrator closes it at the end, and it closes by itself when the
//! orchestrator dies, so no worker outlives a run.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use echomq::worker::{HandlerError, JobContext, Worker, WorkerOptions};
use echomq::{Queue, RetryPolicy};

use crate::flows::{self, Kind};
use crate::journal::{Event, Journal};
use crate::witness::{Suicide, Witness};

/// How a worker process runs; the orchestrator passes all of it.
#[derive(clap::Args, Debug)]
pub struct Options {
    /// The server.
    #[arg(long)]
    pub url: String,
    /// The queues of one `Worker`, comma-separated; once for each.
    #[arg(long = "queues", required = true)]
    pub groups: Vec<String>,
    /// This process's journal.
    #[arg(long)]
    pub journal: PathBuf,
    /// Each claim's lease, in ms.
    #[arg(long)]
    pub lease_ms: u64,
    /// Jobs at once.
    #[arg(long)]
    pub concurrency: usize,
    /// The longest a job's handler sleeps, in ms.
    #[arg(long)]
    pub work_ms: u64,
    /// The chance, per RESOLVE answered, that the worker kills itself
    /// before the relay deletes the notice (0: never).
    #[arg(long, default_value_t = 0.0)]
    pub resolve_kills: f64,
    /// The seed of those kills.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// While any of these files exists, the worker does not kill itself.
    #[arg(long)]
    pub calm: Vec<PathBuf>,
}

/// How long a worker keeps trying to reach the server at start (it may be
/// restarting just then) before it gives up.
const CONNECT_DEADLINE: Duration = Duration::from_secs(30);

/// Every job whose number is 7 modulo this fails its first attempt, so
/// FAIL, the back-off in delayed and PROMOTE run under the chaos too.
pub const FAILS_FIRST: u64 = 20;

/// A job's work: how long its handler sleeps, from 0 to `most` ms, the same
/// for every attempt of the job and spread over the jobs.
pub fn work(number: u64, most: u64) -> Duration {
    Duration::from_millis(crate::rng::mix(number) % (most + 1))
}

/// Run until stdin closes.
pub async fn run(options: Options) -> Result<(), String> {
    let journal = Arc::new(Journal::create(&options.journal).map_err(|e| format!("journal: {e}"))?);
    let executor = connect(&options.url).await?;
    let suicide = Suicide { chance: options.resolve_kills, seed: options.seed, calm: options.calm.clone() };
    let witness: Arc<dyn echomq::Executor> = Arc::new(Witness::new(executor, journal.clone(), suicide));
    let most = options.work_ms;
    let handler = Arc::new(move |job: JobContext| handle(job, journal.clone(), most));
    let mut workers = Vec::new();
    for group in &options.groups {
        let mut queues = group.split(',').map(|name| Queue::new(witness.clone(), name));
        let first = queues.next().ok_or("a group of no queues")?.map_err(|e| e.to_string())?;
        let handler = handler.clone();
        let mut worker = Worker::with_options(first, move |job| handler(job), worker_options(&options));
        for queue in queues {
            worker = worker.queue(queue.map_err(|e| e.to_string())?);
        }
        workers.push(worker);
    }
    run_until_stdin_closes(workers).await
}

/// The server's executor at `url`, tried for up to [`CONNECT_DEADLINE`].
async fn connect(url: &str) -> Result<Arc<dyn echomq::Executor>, String> {
    let client = redis::Client::open(url).map_err(|e| e.to_string())?;
    let started = Instant::now();
    loop {
        match echomq::connect_with(&client, redis::aio::ConnectionManagerConfig::new()).await {
            Ok(executor) => return Ok(executor),
            Err(err) if started.elapsed() > CONNECT_DEADLINE => return Err(format!("connect: {err}")),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// How each `Worker` of the process runs.
fn worker_options(options: &Options) -> WorkerOptions {
    // Attempts never run out here: a job killed with its worker again and
    // again must still be done at the end, not dead.
    let retry = RetryPolicy::new()
        .max_attempts(1000)
        .backoff(Duration::from_millis(20))
        .max_backoff(Duration::from_millis(200))
        .jitter(0.5);
    WorkerOptions::default()
        .concurrency(options.concurrency)
        .lease(Duration::from_millis(options.lease_ms))
        .retry(retry)
        .idle_wait(Duration::from_millis(200))
        .upkeep(Duration::from_millis(200))
        .grace(Duration::from_secs(5))
}

/// The handler: `start`; a parent's children's results read and
/// journaled; the job's work (at most `most` ms); `end`, and a flow's
/// job's result.
async fn handle(job: JobContext, journal: Arc<Journal>, most: u64) -> Result<Option<Vec<u8>>, HandlerError> {
    journal.record(Event::Start, &job.id, job.attempt);
    let (kind, number) = flows::read_payload(&job.payload)
        .ok_or_else(|| HandlerError::from("the payload is not a chaos job"))?;
    if kind == Kind::Parent {
        let results = job.children_results().await.map_err(|err| HandlerError::from(err.to_string()))?;
        journal.record(Event::Children(results), &job.id, job.attempt);
    }
    tokio::time::sleep(work(number, most)).await;
    if fails_first(kind, number) && job.attempt == 1 {
        return Err(HandlerError::from("every twentieth job fails its first attempt"));
    }
    journal.record(Event::End, &job.id, job.attempt);
    Ok((kind != Kind::Plain).then(|| flows::result_of(&job.id, &job.payload)))
}

/// Run `workers` until stdin closes; then each stops gracefully.
async fn run_until_stdin_closes(workers: Vec<Worker>) -> Result<(), String> {
    let controls: Vec<_> = workers.iter().map(Worker::control).collect();
    tokio::spawn(async move {
        stdin_closed().await;
        for control in controls {
            control.stop();
        }
    });
    let mut running = tokio::task::JoinSet::new();
    for worker in workers {
        running.spawn(worker.run_until(std::future::pending()));
    }
    while let Some(ran) = running.join_next().await {
        ran.map_err(|e| e.to_string())?.map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Whether a job fails its first attempt by design: every plain job and
/// flow's child whose number is 7 modulo [`FAILS_FIRST`]; never a parent
/// (its re-runs are then all the chaos's doing).
pub fn fails_first(kind: Kind, number: u64) -> bool {
    kind != Kind::Parent && number % FAILS_FIRST == 7
}

/// Completes when stdin reaches its end (the orchestrator closed it, or died).
async fn stdin_closed() {
    let (closed, on_close) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
        let _ = closed.send(());
    });
    let _ = on_close.await;
}
