//! The demo: enqueue jobs (some scheduled for later, some that fail and
//! retry, a few that fail for good), work them with concurrent workers, and
//! print a summary: processed, retried, dead, jobs/s and the enqueue→start
//! latency. The embedded executor is the default, so it needs no server.

use echomq::Delete;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use echomq::transition::Retention;
use echomq::worker::{HandlerError, JobContext, Worker, WorkerOptions};
use echomq::{EnqueueOptions, Queue, RetryPolicy};

use crate::connect::Error;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How the demo runs.
#[derive(clap::Args, Debug)]
pub struct Options {
    /// How many jobs to enqueue.
    #[arg(long, default_value_t = 20_000)]
    jobs: u64,
    /// How many jobs run at once.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Run against this Redis (Lua scripts, or the native module when loaded;
    /// `--via` picks) instead of in-process. The demo's queue is deleted at
    /// the end.
    #[arg(long, value_name = "URL")]
    redis: Option<String>,
    /// With --redis: keep the demo's queue on the server (for `emq stats`,
    /// `emq list`, the dashboard; `emq delete-queue` deletes it).
    #[arg(long, requires = "redis")]
    keep: bool,
}

const LEASE: Duration = Duration::from_secs(30);
/// How many jobs one enqueue round trip carries.
const BATCH: usize = 256;
const POLICY: RetryPolicy = RetryPolicy::new()
    .max_attempts(3)
    .backoff(Duration::from_millis(20))
    .max_backoff(Duration::from_millis(200))
    .jitter(0.5);

/// Every 25th job fails on its first attempt and succeeds on retry; every
/// 500th fails every time and ends dead.
fn outcome(job: u64, attempt: u64) -> Result<(), String> {
    if job % 500 == 499 {
        Err(format!("job {job} always fails (attempt {attempt})"))
    } else if job % 25 == 24 && attempt == 1 {
        Err(format!("job {job} fails once"))
    } else {
        Ok(())
    }
}

/// What the handler counted.
#[derive(Default)]
struct Tally {
    processed: AtomicU64,
    retried: AtomicU64,
    dead: AtomicU64,
    /// Enqueue→start of each first attempt, in µs.
    latencies: Mutex<Vec<u64>>,
}

pub async fn run(server: &crate::connect::Server, options: Options) -> Result<(), Error> {
    let queue_name = format!("demo-{}", std::process::id());
    let (queue, via) = open(server, &options, &queue_name).await?;
    tell!(
        "EchoMQ demo: {} jobs, {} at once, {via} executor, queue {queue_name}",
        options.jobs,
        options.concurrency
    );
    let started = Instant::now();
    enqueue(&queue, options.jobs, started).await?;
    let tally = Arc::new(Tally::default());
    let elapsed = work(&queue, &options, &tally, started).await?;
    summarize(&queue, &tally, options.jobs, elapsed).await?;
    if options.redis.is_some() {
        if options.keep {
            tell!("\nthe queue {queue_name} stays on the server (emq delete-queue {queue_name} deletes it)");
        } else {
            queue.delete(Delete::IfIdle).await?;
            tell!("\nthe queue {queue_name} is deleted from the server (--keep keeps it)");
        }
    }
    Ok(())
}

/// The demo's queue, in process or on the Redis of `--redis`, and its
/// executor's name; it keeps every finished job, so that done + dead
/// counts them all (the default retention keeps the newest 10,000 done
/// jobs, PROTOCOL.md §7.4).
async fn open(
    server: &crate::connect::Server,
    options: &Options,
    queue_name: &str,
) -> Result<(Queue, String), Error> {
    let (queue, via) = match &options.redis {
        None => (Queue::new(Arc::new(echomq::Embedded::new()), queue_name)?, "embedded".to_owned()),
        Some(url) => {
            let server = server.at(url);
            let via = format!("Redis ({})", server.executor_name().await);
            (Queue::new(server.executor().await?, queue_name)?, via)
        }
    };
    let all = Retention { age: None, count: None };
    queue.configure(echomq::Config::default().keep_done(all).keep_dead(all)).await?;
    Ok((queue, via))
}

/// Enqueue `jobs` jobs, each payload its number and its enqueue time (µs
/// since `started`). Jobs due now go in batches (one round trip each on
/// Redis); every tenth is scheduled 50 ms later, one by one.
async fn enqueue(queue: &Queue, jobs: u64, started: Instant) -> Result<(), Error> {
    let mut batch = Vec::with_capacity(BATCH);
    for job in 0..jobs {
        let enqueued_us = started.elapsed().as_micros() as u64;
        let payload = format!("{job} {enqueued_us}").into_bytes();
        if job % 10 == 9 {
            queue.enqueue_with(payload, EnqueueOptions::default().delay(Duration::from_millis(50))).await?;
        } else {
            batch.push(payload);
        }
        if batch.len() == BATCH || job + 1 == jobs {
            for outcome in queue.enqueue_batch(std::mem::take(&mut batch)).await? {
                outcome?;
            }
        }
    }
    let enqueued = started.elapsed();
    tell!("enqueued {jobs} jobs in {enqueued:.0?} ({:.0} jobs/s)", per_second(jobs, enqueued));
    Ok(())
}

/// Work the queue with a worker of `--concurrency` slots until every job
/// is done or dead, and stop it: how long since `started` that took.
async fn work(
    queue: &Queue,
    options: &Options,
    tally: &Arc<Tally>,
    started: Instant,
) -> Result<Duration, Error> {
    let handler_tally = tally.clone();
    let handler = move |job: JobContext| {
        let tally = handler_tally.clone();
        async move { handle(&tally, started, &job) }
    };
    let worker_options = WorkerOptions::default()
        .concurrency(options.concurrency)
        .lease(LEASE)
        .retry(POLICY)
        .upkeep(Duration::from_millis(10));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker =
        tokio::spawn(Worker::with_options(queue.clone(), handler, worker_options).run_until(async move {
            let _ = stopped.await;
        }));
    let elapsed = finished(queue, options.jobs, started).await?;
    let _ = stop.send(());
    worker.await??;
    Ok(elapsed)
}

/// Wait until `total` jobs are done or dead, with a progress bar: how long
/// since `started`. The bar is drawn on a terminal only; elsewhere (a
/// pipe, CI) the summary says it all.
async fn finished(queue: &Queue, total: u64, started: Instant) -> Result<Duration, Error> {
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stdout()).with_style(
        ProgressStyle::with_template("  [{bar:40}] {human_pos}/{human_len} finished in {elapsed}")
            .expect("a valid template")
            .progress_chars("#>."),
    );
    loop {
        let stats = queue.stats().await?;
        let finished = stats.done + stats.dead;
        bar.set_position(finished);
        if finished >= total {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let elapsed = started.elapsed();
    bar.finish();
    Ok(elapsed)
}

/// Print the summary: what the handler counted, the queue's sets, the
/// rate of `total` jobs in `elapsed`, and the enqueue→start latency.
async fn summarize(queue: &Queue, tally: &Tally, total: u64, elapsed: Duration) -> Result<(), Error> {
    let stats = queue.stats().await?;
    let mut latencies = std::mem::take(&mut *tally.latencies.lock().expect("no handler panicked"));
    latencies.sort_unstable();
    let percentile = |p: f64| {
        let at = ((latencies.len() as f64 * p).ceil() as usize).clamp(1, latencies.len().max(1)) - 1;
        latencies.get(at).map_or(0.0, |us| *us as f64 / 1000.0)
    };
    tell!("\nsummary");
    tell!("  processed  {}", tally.processed.load(Ordering::Relaxed));
    tell!("  retried    {}", tally.retried.load(Ordering::Relaxed));
    tell!("  dead       {}", tally.dead.load(Ordering::Relaxed));
    tell!(
        "  queue      done {}, dead {}, pending {}, active {}, delayed {}",
        stats.done,
        stats.dead,
        stats.pending,
        stats.active,
        stats.delayed
    );
    tell!("  elapsed    {elapsed:.2?}: {:.0} jobs/s, enqueue and work together", per_second(total, elapsed));
    tell!(
        "  latency    enqueue→start p50 {:.1} ms, p99 {:.1} ms (all jobs enqueued up front)",
        percentile(0.50),
        percentile(0.99)
    );
    Ok(())
}

/// Run one job: its outcome is decided by its number and attempt.
fn handle(tally: &Tally, started: Instant, job: &JobContext) -> Result<(), HandlerError> {
    let text = String::from_utf8_lossy(&job.payload);
    let mut fields = text.split(' ').map(|n| n.parse::<u64>().unwrap_or(0));
    let (number, enqueued_us) = (fields.next().unwrap_or(0), fields.next().unwrap_or(0));
    if job.attempt == 1 {
        let waited = (started.elapsed().as_micros() as u64).saturating_sub(enqueued_us);
        tally.latencies.lock().expect("no handler panicked").push(waited);
    }
    match outcome(number, job.attempt) {
        Ok(()) => {
            tally.processed.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
        Err(error) => {
            let counter = if job.attempt >= POLICY.max_attempts { &tally.dead } else { &tally.retried };
            counter.fetch_add(1, Ordering::Relaxed);
            Err(error.into())
        }
    }
}

fn per_second(count: u64, elapsed: Duration) -> f64 {
    count as f64 / elapsed.as_secs_f64().max(1e-9)
}
