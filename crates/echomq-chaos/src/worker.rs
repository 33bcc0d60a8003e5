//! Worker mode: one process running the library's [`Worker`] over the
//! witness, as the orchestrator started it. Its handler journals `start`,
//! sleeps the job's work, and journals `end` before it returns Ok, so a job
//! the worker acks has its `end` line on disk first. It stops gracefully
//! (stop claiming, finish or release what it holds) when its stdin closes:
//! the orchestrator closes it at the end, and it closes by itself when the
//! orchestrator dies, so no worker outlives a run.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use echomq::worker::{HandlerError, JobContext, Worker, WorkerOptions};
use echomq::{Queue, RetryPolicy};

use crate::journal::{Event, Journal};
use crate::witness::Witness;

/// How a worker process runs; the orchestrator passes all of it.
#[derive(clap::Args, Debug)]
pub struct Options {
    /// The server.
    #[arg(long)]
    pub url: String,
    /// The queue.
    #[arg(long)]
    pub queue: String,
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
    let client = redis::Client::open(options.url.as_str()).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let executor = loop {
        match echomq::connect_with(&client, redis::aio::ConnectionManagerConfig::new()).await {
            Ok(executor) => break executor,
            Err(err) if started.elapsed() > CONNECT_DEADLINE => return Err(format!("connect: {err}")),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    };
    let witness = Arc::new(Witness::new(executor, journal.clone()));
    let queue = Queue::new(witness, &options.queue).map_err(|e| e.to_string())?;
    let lease = Duration::from_millis(options.lease_ms);
    // Attempts never run out here: a job killed with its worker again and
    // again must still be done at the end, not dead.
    let retry = RetryPolicy::new()
        .max_attempts(1000)
        .backoff(Duration::from_millis(20))
        .max_backoff(Duration::from_millis(200))
        .jitter(0.5);
    let worker_options = WorkerOptions::default()
        .concurrency(options.concurrency)
        .lease(lease)
        .retry(retry)
        .idle_wait(Duration::from_millis(200))
        .upkeep(Duration::from_millis(200))
        .grace(Duration::from_secs(5));
    let most = options.work_ms;
    let handler = move |job: JobContext| {
        let journal = journal.clone();
        async move {
            journal.record(Event::Start, &job.id, job.attempt);
            let number: u64 = std::str::from_utf8(&job.payload)
                .ok()
                .and_then(|text| text.parse().ok())
                .ok_or_else(|| HandlerError::from("the payload is not a job number"))?;
            tokio::time::sleep(work(number, most)).await;
            if number % FAILS_FIRST == 7 && job.attempt == 1 {
                return Err(HandlerError::from("every twentieth job fails its first attempt"));
            }
            journal.record(Event::End, &job.id, job.attempt);
            Ok::<(), HandlerError>(())
        }
    };
    Worker::with_options(queue, handler, worker_options).run_until(stdin_closed()).await.unwrap();
    Ok(())
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
