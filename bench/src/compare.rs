//! `echomq-compare`: one EchoMQ executor on the peer workloads that
//! `bench/compare` also runs through BullMQ, printed as JSON lines (the
//! median of the rounds) for the comparison table.
//!
//! ```text
//! echomq-compare --url redis://127.0.0.1:6390/ --via native --jobs 20000
//! ```

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use echomq::worker::{JobContext, Worker, WorkerOptions};
use echomq::{Embedded, Executor, Lua, Native, Queue};
use echomq_test_support::unique_queue;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

/// One executor on the peer workloads, as JSON lines.
#[derive(Parser, Debug)]
struct Options {
    /// The server (the same one every system in a comparison uses).
    #[arg(long)]
    url: String,
    /// The executor: lua, native or embedded (embedded ignores the server).
    #[arg(long)]
    via: String,
    /// Jobs per measurement.
    #[arg(long, default_value_t = 20_000)]
    jobs: usize,
    /// Rounds per measurement; the median is printed.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Payload size in bytes.
    #[arg(long, default_value_t = 53)]
    payload: usize,
}

const BULK: usize = 100;

async fn executor(options: &Options) -> Arc<dyn Executor> {
    let client = redis::Client::open(options.url.as_str()).expect("a Redis URL");
    let config = ConnectionManagerConfig::new().set_response_timeout(None);
    let conn = || ConnectionManager::new_with_config(client.clone(), config.clone());
    match options.via.as_str() {
        "lua" => Arc::new(Lua::new(conn().await.expect("connect"))),
        "native" => Arc::new(
            Native::new(conn().await.expect("connect"))
                .with_blocking_connection(conn().await.expect("connect")),
        ),
        "embedded" => Arc::new(Embedded::new()),
        other => panic!("no executor {other}"),
    }
}

fn queue(via: &Arc<dyn Executor>) -> Queue {
    Queue::with_executor(via.clone(), &unique_queue("compare")).expect("a valid name")
}

async fn enqueue_bulk(queue: &Queue, jobs: usize, payload: &[u8]) {
    let mut left = jobs;
    while left > 0 {
        let n = left.min(BULK);
        for outcome in queue.enqueue_batch(vec![payload.to_vec(); n]).await.expect("enqueue_batch") {
            outcome.expect("an enqueue");
        }
        left -= n;
    }
}

/// Enqueue `jobs` from `in_flight` concurrent producers, one job per call.
async fn enqueue_concurrent(queue: &Queue, jobs: usize, in_flight: usize, payload: &[u8]) {
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..in_flight {
        let (queue, payload) = (queue.clone(), payload.to_vec());
        let count = jobs / in_flight;
        tasks.spawn(async move {
            for _ in 0..count {
                queue.enqueue(payload.clone()).await.expect("enqueue");
            }
        });
    }
    while tasks.join_next().await.is_some() {}
}

/// Run a no-op worker at `concurrency` until `jobs` are done; when they were
/// (the worker's shutdown after that is not the workload's time).
async fn process(queue: &Queue, jobs: usize, concurrency: usize) -> Instant {
    let options =
        WorkerOptions { concurrency, idle_wait: Duration::from_millis(100), ..WorkerOptions::default() };
    let worker = Worker::with_options(queue.clone(), |_job: JobContext| async { Ok(()) }, options);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(worker.run_until(async move {
        let _ = stopped.await;
    }));
    while queue.stats().await.expect("stats").done < jobs as u64 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let done = Instant::now();
    let _ = stop.send(());
    task.await.expect("the worker");
    done
}

/// Jobs per second of one workload on a fresh queue.
async fn throughput(via: &Arc<dyn Executor>, workload: &str, options: &Options) -> f64 {
    let queue = queue(via);
    let payload = vec![b'x'; options.payload];
    let jobs = options.jobs;
    let (started, done) = match workload {
        "add-50" => {
            let started = Instant::now();
            enqueue_concurrent(&queue, jobs, 50, &payload).await;
            (started, Instant::now())
        }
        "add-bulk" => {
            let started = Instant::now();
            enqueue_bulk(&queue, jobs, &payload).await;
            (started, Instant::now())
        }
        "process-c1" | "process-c10" | "process-c100" => {
            let concurrency = workload.trim_start_matches("process-c").parse().expect("a concurrency");
            enqueue_bulk(&queue, jobs, &payload).await;
            let started = Instant::now();
            (started, process(&queue, jobs, concurrency).await)
        }
        "end-to-end" => {
            let started = Instant::now();
            let producer = {
                let (queue, payload) = (queue.clone(), payload.clone());
                tokio::spawn(async move { enqueue_bulk(&queue, jobs, &payload).await })
            };
            let done = process(&queue, jobs, 100).await;
            producer.await.expect("the producer");
            (started, done)
        }
        other => panic!("no workload {other}"),
    };
    jobs as f64 / (done - started).as_secs_f64()
}

/// Enqueue→handler-start latencies (ms) at a steady `rate` per second for `jobs` jobs.
async fn latency(via: &Arc<dyn Executor>, jobs: usize, rate: u64) -> Vec<f64> {
    let queue = queue(via);
    let origin = Instant::now();
    let seen = Arc::new(Mutex::new(Vec::with_capacity(jobs)));
    let record = seen.clone();
    let handler = move |job: JobContext| {
        let now = origin.elapsed().as_micros() as u64;
        let sent: u64 = String::from_utf8_lossy(&job.payload).parse().unwrap_or(now);
        record.lock().unwrap().push(now.saturating_sub(sent) as f64 / 1000.0);
        async { Ok(()) }
    };
    let options = WorkerOptions { concurrency: 10, ..WorkerOptions::default() };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(Worker::with_options(queue.clone(), handler, options).run_until(async move {
        let _ = stopped.await;
    }));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / rate));
    for _ in 0..jobs {
        tick.tick().await;
        queue.enqueue(origin.elapsed().as_micros().to_string().into_bytes()).await.expect("enqueue");
    }
    while seen.lock().unwrap().len() < jobs {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let _ = stop.send(());
    task.await.expect("the worker");
    let mut latencies = std::mem::take(&mut *seen.lock().unwrap());
    latencies.sort_by(f64::total_cmp);
    latencies
}

/// Redis bytes per pending job: `used_memory` before and after `jobs` enqueues.
async fn bytes_per_job(via: &Arc<dyn Executor>, url: &str, jobs: usize, payload: &[u8]) -> f64 {
    let mut conn =
        redis::Client::open(url).expect("a URL").get_multiplexed_async_connection().await.expect("connect");
    let used = |info: String| -> f64 {
        info.lines()
            .find_map(|l| l.strip_prefix("used_memory:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0.0)
    };
    let before: String = redis::cmd("INFO").arg("memory").query_async(&mut conn).await.expect("INFO");
    enqueue_bulk(&queue(via), jobs, payload).await;
    let after: String = redis::cmd("INFO").arg("memory").query_async(&mut conn).await.expect("INFO");
    (used(after) - used(before)) / jobs as f64
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn emit(system: &str, workload: &str, value: f64, unit: &str) {
    println!(r#"{{"system":"{system}","workload":"{workload}","value":{value:.2},"unit":"{unit}"}}"#);
}

async fn flush(url: &str) {
    let mut conn =
        redis::Client::open(url).expect("a URL").get_multiplexed_async_connection().await.expect("connect");
    let _: () = redis::cmd("FLUSHALL").query_async(&mut conn).await.expect("FLUSHALL");
}

#[tokio::main]
async fn main() {
    let options = Options::parse();
    let via = executor(&options).await;
    let system = format!("echomq-{}", options.via);
    for workload in ["add-50", "add-bulk", "process-c1", "process-c10", "process-c100", "end-to-end"] {
        let mut rounds = Vec::new();
        for _ in 0..options.rounds {
            rounds.push(throughput(&via, workload, &options).await);
            flush(&options.url).await;
        }
        emit(&system, workload, median(rounds), "jobs/s");
    }
    let latencies = latency(&via, 2_000.min(options.jobs), 1_000).await;
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    emit(&system, "latency-p50", at(0.50), "ms");
    emit(&system, "latency-p99", at(0.99), "ms");
    emit(&system, "latency-p99.9", at(0.999), "ms");
    flush(&options.url).await;
    if options.via != "embedded" {
        let jobs = 10_000.min(options.jobs);
        emit(
            &system,
            "bytes-per-pending-job",
            bytes_per_job(&via, &options.url, jobs, &vec![b'x'; options.payload]).await,
            "bytes",
        );
        flush(&options.url).await;
    }
}
