//! `echomq-compare`: one EchoMQ executor on the peer workloads that
//! `bench/compare` also runs through BullMQ, printed as JSON lines for the
//! comparison table. `bench/compare` runs one `--workload` per process and
//! interleaves the systems round by round; without `--workload` every
//! workload runs `--rounds` times here and the median is printed (the smoke
//! test's way).
//!
//! ```text
//! echomq-compare --url redis://127.0.0.1:6390/ --via native --workload process-c10
//! echomq-compare --url redis://127.0.0.1:6390/ --via raw --workload hset-zadd
//! ```
//!
//! Every measurement has its connections and its worker built before the
//! clock starts, counts completions in-process (the worker's
//! `emq_jobs_processed_total` counter, as BullMQ counts `completed` events),
//! and reports the server's µs per job from `INFO commandstats`.
//!
//! # Layout
//! - `compare.rs`: options, the workloads' dispatch, the JSON lines.
//! - `compare/counted.rs`: the in-process completion count.
//! - `compare/processes.rs`: `process-4x25`, four worker processes on one queue.
//! - `compare/ceiling.rs`: raw HSET+ZADD and the seed's script from this client.
//! - `compare/server.rs`: the server's own figures (commandstats, memory).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use echomq::worker::{HandlerError, JobContext, Worker, WorkerOptions};
use echomq::{Embedded, EnqueueOptions, Executor, Lua, Native, Queue};
use echomq_test_support::unique_queue;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

/// The allocator a service at this rate would set: with glibc's malloc the
/// embedded worker spent about a third of its time allocating (BENCHMARKS.md,
/// "The allocator"). Redis-backed runs wait on the server, not on it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "compare/ceiling.rs"]
mod ceiling;
#[path = "compare/counted.rs"]
mod counted;
#[path = "compare/processes.rs"]
mod processes;
#[path = "compare/server.rs"]
mod server;

/// One executor on the peer workloads, as JSON lines.
#[derive(Parser, Debug, Clone)]
struct Options {
    /// The server (the same one every system in a comparison uses).
    #[arg(long)]
    url: String,
    /// The executor: lua, native or embedded (embedded ignores the server),
    /// or raw for the ceiling workloads (hset-zadd, seed-lua).
    #[arg(long)]
    via: String,
    /// One workload, measured once; without it, every throughput workload,
    /// latency and memory, `--rounds` times each.
    #[arg(long)]
    workload: Option<String>,
    /// Jobs per measurement.
    #[arg(long, default_value_t = 20_000)]
    jobs: usize,
    /// Rounds per measurement without `--workload`; the median is printed.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Payload size in bytes.
    #[arg(long, default_value_t = 53)]
    payload: usize,
    /// The latency workload: jobs enqueued per second, on a fixed schedule.
    #[arg(long, default_value_t = 1_000)]
    rate: u64,
    /// The latency workload: how long it enqueues.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// The recovery workload: the crashed worker's lease, in seconds.
    #[arg(long, default_value_t = 5.0)]
    lease: f64,
    /// The latency workload: the worker's concurrency.
    #[arg(long, default_value_t = 10)]
    concurrency: usize,
    /// The queue a `worker-child` works (its parent, `process-4x25`, names it).
    #[arg(long, hide = true)]
    queue: Option<String>,
    /// Turn each queue's event log off (CONFIG EVENTS 0), to measure what
    /// the log costs: the system is then `echomq-<via>-noevents`.
    #[arg(long)]
    no_events: bool,
}

/// Jobs per `enqueue_batch` (BullMQ: per `addBulk`).
const BULK: usize = 100;

/// The throughput workloads, in the table's order.
const THROUGHPUT: [&str; 12] = [
    "add-50",
    "add-bulk",
    "add-bulk-1kb",
    "process-c1",
    "process-c10",
    "process-c100",
    "process-c100-1kb",
    "process-c100-1ms",
    "process-c100-10ms",
    "queues-100",
    "queues-1000",
    "end-to-end",
];

async fn executor(options: &Options) -> Arc<dyn Executor> {
    let client = redis::Client::open(options.url.as_str()).expect("a Redis URL");
    let config = ConnectionManagerConfig::new().set_response_timeout(None);
    let conn = || ConnectionManager::new_with_config(client.clone(), config.clone());
    // As `echomq::connect` makes them: waits (BZPOPMIN on the wake-up key,
    // or EMQ.CLAIM … BLOCK) on connections of their own, every queue on one server.
    let open = {
        let (client, config) = (client.clone(), config.clone());
        move || ConnectionManager::new_with_config(client.clone(), config.clone())
    };
    match options.via.as_str() {
        "lua" => {
            Arc::new(Lua::new(conn().await.expect("connect")).with_blocking_connections(open).on_one_server())
        }
        "native" => Arc::new(
            Native::new(conn().await.expect("connect")).with_blocking_connections(open).on_one_server(),
        ),
        "embedded" => Arc::new(Embedded::new()),
        other => panic!("no executor {other}"),
    }
}

/// A fresh queue, its event log off with `--no-events`.
async fn queue(via: &Arc<dyn Executor>, options: &Options) -> Queue {
    let queue = Queue::new(via.clone(), &unique_queue("compare")).expect("a valid name");
    if options.no_events {
        let off = echomq::Config::default().events(echomq::EventLog::Off);
        queue.configure(off).await.expect("the event log turned off");
    }
    queue
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

/// A worker over `queues` at `concurrency` whose handler takes `work`; its
/// stop signal and task. Started at once: call it when the clock starts.
fn start_worker(
    queues: &[Queue],
    concurrency: usize,
    work: Duration,
) -> (tokio::sync::oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let options = WorkerOptions::default().concurrency(concurrency).idle_wait(Duration::from_millis(100));
    let handler = move |_job: JobContext| async move {
        if !work.is_zero() {
            tokio::time::sleep(work).await;
        }
        Ok::<_, HandlerError>(())
    };
    let mut worker = Worker::with_options(queues[0].clone(), handler, options);
    for queue in &queues[1..] {
        worker = worker.queue(queue.clone());
    }
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let stop_when = async move {
        let _ = stopped.await;
    };
    let task = tokio::spawn(async move { worker.run_until(stop_when).await.expect("the worker runs") });
    (stop, task)
}

/// Jobs per second of one throughput workload on fresh queues, and the
/// server's µs per job over the same window.
async fn throughput(
    via: &Arc<dyn Executor>,
    workload: &str,
    options: &Options,
) -> (f64, Option<server::Spent>) {
    let size = if workload.ends_with("-1kb") { 1024 } else { options.payload };
    let payload = vec![b'x'; size];
    let mut jobs = match workload {
        "process-c100-10ms" => options.jobs / 4,
        _ => options.jobs,
    };
    let stats = server::Stats::connect(&options.url, options.via != "embedded").await;
    let queue = queue(via, options).await;
    let (started, done) = match workload {
        "add-50" => {
            let started = stats.start().await;
            enqueue_concurrent(&queue, jobs, 50, &payload).await;
            (started, Instant::now())
        }
        "add-bulk" | "add-bulk-1kb" => {
            let started = stats.start().await;
            enqueue_bulk(&queue, jobs, &payload).await;
            (started, Instant::now())
        }
        "process-c1" | "process-c10" | "process-c100" | "process-c100-1kb" | "process-c100-1ms"
        | "process-c100-10ms" => process(&stats, &queue, workload, jobs, &payload).await,
        "capped-999-c1" | "capped-999-c10" => capped(&stats, &queue, workload, jobs, &payload).await,
        "queues-100" | "queues-1000" => {
            let many: usize = workload["queues-".len()..].parse().unwrap();
            // At least a job a queue, however few JOBS (a smoke run's 200).
            let per = (jobs / many).max(1);
            jobs = per * many;
            many_queues(via, options, &stats, many, per, &payload).await
        }
        "end-to-end" => end_to_end(&stats, &queue, jobs, &payload).await,
        "flow-100" => {
            // A flow a parent and its 100 children: whole flows only.
            let flows = (jobs / 101).max(1);
            jobs = flows * 101;
            flows_end_to_end(&stats, &queue, flows, &payload).await
        }
        other => panic!("no workload {other}"),
    };
    let spent = stats.spent_since_start(jobs).await;
    (jobs as f64 / (done - started).as_secs_f64(), spent)
}

/// `process-c<n>[-1kb|-1ms|-10ms]`: `jobs` jobs enqueued up front on
/// `queue`, then worked by one worker of n slots whose handler takes the
/// time the workload names: when the clock started, and when the last
/// job was done.
async fn process(
    stats: &server::Stats,
    queue: &Queue,
    workload: &str,
    jobs: usize,
    payload: &[u8],
) -> (Instant, Instant) {
    let concurrency = workload["process-c".len()..].split('-').next().unwrap().parse().unwrap();
    let work = match workload {
        "process-c100-1ms" => Duration::from_millis(1),
        "process-c100-10ms" => Duration::from_millis(10),
        _ => Duration::ZERO,
    };
    enqueue_bulk(queue, jobs, payload).await;
    worked(stats, std::slice::from_ref(queue), concurrency, work, jobs).await
}

/// `capped-999-c<n>`: as `process-c<n>`, but its jobs are one group's,
/// beside 999 groups at their cap of 1, each running a job (under an hour's
/// lease, never acked) and holding another (PROTOCOL.md §7.9): the speed of
/// the free group, which the capped ones must not slow.
async fn capped(
    stats: &server::Stats,
    queue: &Queue,
    workload: &str,
    jobs: usize,
    payload: &[u8],
) -> (Instant, Instant) {
    let concurrency = workload["capped-999-c".len()..].parse().unwrap();
    let groups = echomq::QueueGroups::of(queue);
    let mut held = Vec::new();
    for g in 0..999 {
        let group = format!("capped-{g}");
        groups.set(echomq::Group::new(group.as_str()).cap(echomq::Limit::To(1))).await.expect("a cap");
        held.extend((0..2).map(|_| (payload.to_vec(), EnqueueOptions::default().group(group.as_str()))));
    }
    for outcome in queue.enqueue_many(held).await.expect("the capped groups' jobs") {
        outcome.expect("an enqueue");
    }
    let running = queue.claim_many(Duration::from_secs(3600), 1000, None).await.expect("a claim");
    assert_eq!(running.jobs.len(), 999, "each capped group runs one job");
    let free = (0..jobs).map(|_| (payload.to_vec(), EnqueueOptions::default().group("free")));
    for outcome in queue.enqueue_many(free).await.expect("the free group's jobs") {
        outcome.expect("an enqueue");
    }
    worked(stats, std::slice::from_ref(queue), concurrency, Duration::ZERO, jobs).await
}

/// `jobs` jobs already enqueued on `queues`, worked by one worker of
/// `concurrency` slots whose handler takes `work`: when the clock started,
/// and when the last job was done.
async fn worked(
    stats: &server::Stats,
    queues: &[Queue],
    concurrency: usize,
    work: Duration,
    jobs: usize,
) -> (Instant, Instant) {
    let count = counted::expect(jobs);
    let started = stats.start().await;
    let (stop, task) = start_worker(queues, concurrency, work);
    let done = count.await;
    let _ = stop.send(());
    task.await.expect("the worker");
    (started, done)
}

/// `queues-<n>`: `per` jobs enqueued up front on each of `many` fresh
/// queues, then worked by one worker of 100 slots: when the clock
/// started, and when the last job was done.
async fn many_queues(
    via: &Arc<dyn Executor>,
    options: &Options,
    stats: &server::Stats,
    many: usize,
    per: usize,
    payload: &[u8],
) -> (Instant, Instant) {
    let mut queues = Vec::with_capacity(many);
    for _ in 0..many {
        queues.push(queue(via, options).await);
    }
    for queue in &queues {
        enqueue_bulk(queue, per, payload).await;
    }
    worked(stats, &queues, 100, Duration::ZERO, per * many).await
}

/// `flow-100`: `flows` flows of a parent and 100 children, all on `queue`,
/// added one after the other (as BullMQ's FlowProducer adds them) while
/// one worker of 100 slots works them: when the clock started, and when
/// the last job (a parent: its children ran before it) was done. The
/// children reach their parents by the worker's upkeep (the relay).
async fn flows_end_to_end(
    stats: &server::Stats,
    queue: &Queue,
    flows: usize,
    payload: &[u8],
) -> (Instant, Instant) {
    let count = counted::expect(flows * 101);
    let started = stats.start().await;
    let (stop, task) = start_worker(std::slice::from_ref(queue), 100, Duration::ZERO);
    let producer = {
        let (queue, payload) = (queue.clone(), payload.to_vec());
        tokio::spawn(async move {
            for _ in 0..flows {
                let mut flow = echomq::Flow::new(payload.clone());
                for _ in 0..100 {
                    flow = flow.child(queue.name(), payload.clone());
                }
                echomq::Flows::of(&queue).add(flow).await.expect("a flow");
            }
        })
    };
    let done = count.await;
    producer.await.expect("the producer");
    let _ = stop.send(());
    task.await.expect("the worker");
    (started, done)
}

/// `end-to-end`: `jobs` jobs enqueued on `queue` while one worker of 100
/// slots works them: when the clock started, and when the last job was
/// done.
async fn end_to_end(stats: &server::Stats, queue: &Queue, jobs: usize, payload: &[u8]) -> (Instant, Instant) {
    let count = counted::expect(jobs);
    let started = stats.start().await;
    let (stop, task) = start_worker(std::slice::from_ref(queue), 100, Duration::ZERO);
    let producer = {
        let (queue, payload) = (queue.clone(), payload.to_vec());
        tokio::spawn(async move { enqueue_bulk(&queue, jobs, &payload).await })
    };
    let done = count.await;
    producer.await.expect("the producer");
    let _ = stop.send(());
    task.await.expect("the worker");
    (started, done)
}

/// Enqueue→handler-start latencies (ms), enqueuing `rate` jobs a second on a
/// fixed schedule (1 ms ticks: the jobs due by each tick, one call, not
/// waiting for the call before) for `seconds`; the rate achieved; and the
/// rate the jobs started at, from the first send to the last start (below
/// the rate sent when the worker fell behind).
async fn latency(via: &Arc<dyn Executor>, options: &Options) -> (Vec<f64>, f64, f64) {
    let queue = queue(via, options).await;
    let origin = Instant::now();
    let jobs = (options.rate as f64 * options.seconds) as usize;
    let seen = Arc::new(Mutex::new(Vec::with_capacity(jobs)));
    let last_start = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let (record, last) = (seen.clone(), last_start.clone());
    let handler = move |job: JobContext| {
        let now = origin.elapsed().as_micros() as u64;
        last.fetch_max(now, std::sync::atomic::Ordering::Relaxed);
        let sent: u64 = String::from_utf8_lossy(&job.payload).parse().unwrap_or(now);
        record.lock().unwrap().push(now.saturating_sub(sent) as f64 / 1000.0);
        async { Ok::<_, HandlerError>(()) }
    };
    let options_worker = WorkerOptions::default().concurrency(options.concurrency);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task =
        tokio::spawn(Worker::with_options(queue.clone(), handler, options_worker).run_until(async move {
            let _ = stopped.await;
        }));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    let started_us = origin.elapsed().as_micros() as u64;
    let mut tick = tokio::time::interval(Duration::from_millis(1));
    let mut sent = 0usize;
    let mut producers = tokio::task::JoinSet::new();
    while sent < jobs {
        tick.tick().await;
        let due = ((started.elapsed().as_secs_f64() * options.rate as f64) as usize + 1).min(jobs);
        // One job a tick is one enqueue; more go as one batch, as end-to-end's producer sends them.
        let queue = queue.clone();
        let count = due - sent;
        producers.spawn(async move {
            let stamp = || origin.elapsed().as_micros().to_string().into_bytes();
            match count {
                0 => {}
                1 => drop(queue.enqueue(stamp()).await.expect("enqueue")),
                n => drop(queue.enqueue_batch((0..n).map(|_| stamp())).await.expect("enqueue_batch")),
            }
        });
        sent = due;
        while producers.try_join_next().is_some() {}
    }
    let achieved = jobs as f64 / started.elapsed().as_secs_f64();
    while producers.join_next().await.is_some() {}
    let deadline = Instant::now() + Duration::from_secs(60);
    while seen.lock().unwrap().len() < jobs && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let _ = stop.send(());
    task.await.expect("the worker").expect("the worker runs");
    let mut latencies = std::mem::take(&mut *seen.lock().unwrap());
    latencies.sort_by(f64::total_cmp);
    let took = last_start.load(std::sync::atomic::Ordering::Relaxed).saturating_sub(started_us).max(1);
    (latencies, achieved, jobs as f64 / (took as f64 / 1e6))
}

/// Seconds from a worker's crash to its jobs done by another: `jobs` jobs
/// claimed under a lease of `--lease` s by a worker that then vanished (its
/// claims never acked), and a fresh worker with the default upkeep (it reaps
/// expired leases) started at once.
async fn recovery(via: &Arc<dyn Executor>, options: &Options) -> f64 {
    let queue = queue(via, options).await;
    let jobs = options.jobs.min(1_000);
    enqueue_bulk(&queue, jobs, &vec![b'x'; options.payload]).await;
    let lease = Duration::from_secs_f64(options.lease);
    let crashed = queue.claim_many(lease, jobs as u64, None).await.expect("claim").jobs;
    assert_eq!(crashed.len(), jobs, "the crashed worker held every job");
    let at = Instant::now();
    let count = counted::expect(jobs);
    let worker = WorkerOptions::default().concurrency(100).lease(lease);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let handler = |_job: JobContext| async { Ok::<_, HandlerError>(()) };
    let task = tokio::spawn(Worker::with_options(queue.clone(), handler, worker).run_until(async move {
        let _ = stopped.await;
    }));
    let done = count.await;
    let _ = stop.send(());
    task.await.expect("the worker").expect("the worker runs");
    (done - at).as_secs_f64()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn emit(system: &str, workload: &str, value: f64, unit: &str, spent: Option<server::Spent>) {
    let server = spent
        .map(|spent| format!(r#","server_us":{:.3},"server_cpu_us":{:.3}"#, spent.commands, spent.cpu))
        .unwrap_or_default();
    println!(r#"{{"system":"{system}","workload":"{workload}","value":{value:.2},"unit":"{unit}"{server}}}"#);
}

async fn run_latency(via: &Arc<dyn Executor>, system: &str, options: &Options) {
    let (latencies, achieved, started) = latency(via, options).await;
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    emit(system, "latency-p50", at(0.50), "ms", None);
    emit(system, "latency-p99", at(0.99), "ms", None);
    emit(system, "latency-p99.9", at(0.999), "ms", None);
    emit(system, "latency-rate", achieved, "jobs/s", None);
    emit(system, "latency-started", started, "jobs/s", None);
}

#[tokio::main]
async fn main() {
    let options = Options::parse();
    counted::install();
    if options.via == "raw" {
        let workload = options.workload.as_deref().expect("--via raw needs --workload");
        let (rate, spent) = ceiling::run(&options.url, workload, options.jobs, options.payload).await;
        emit("ceiling", workload, rate, "jobs/s", spent);
        return;
    }
    let via = executor(&options).await;
    let system = format!("echomq-{}{}", options.via, if options.no_events { "-noevents" } else { "" });
    match options.workload.as_deref() {
        Some("latency") => run_latency(&via, &system, &options).await,
        Some("process-4x25") => {
            assert!(options.via != "embedded", "worker processes share a server: lua or native");
            let (rate, spent) = processes::parent(&via, &options).await;
            emit(&system, "process-4x25", rate, "jobs/s", spent);
        }
        Some("worker-child") => processes::child(&via, &options).await,
        Some("recovery") => {
            let seconds = recovery(&via, &options).await;
            emit(&system, "recovery", seconds, "s", None);
        }
        Some("memory") => run_memory(&via, &system, &options, options.jobs).await,
        Some(workload) => {
            // The whole workload once first, untimed, in this same process:
            // the connections, the allocator and the scripts warm (BullMQ's
            // side does the same for its JIT, which a tenth did not warm).
            throughput(&via, workload, &options).await;
            server::flush(&options.url).await;
            let (rate, spent) = throughput(&via, workload, &options).await;
            emit(&system, workload, rate, "jobs/s", spent);
        }
        None => run_all(&via, &system, &options).await,
    }
}

/// Every throughput workload `--rounds` times, the median of each printed;
/// then the latency; then, on a server, the bytes of a pending job (of
/// 10,000 at most).
async fn run_all(via: &Arc<dyn Executor>, system: &str, options: &Options) {
    for workload in THROUGHPUT {
        let rounds = (0..options.rounds).map(|_| async { throughput(via, workload, options).await.0 });
        let mut values = Vec::new();
        for round in rounds {
            values.push(round.await);
            server::flush(&options.url).await;
        }
        emit(system, workload, median(values), "jobs/s", None);
    }
    run_latency(via, system, options).await;
    server::flush(&options.url).await;
    if options.via != "embedded" {
        run_memory(via, system, options, 10_000.min(options.jobs)).await;
        server::flush(&options.url).await;
    }
}

/// The server's memory a pending job takes: `jobs` jobs enqueued on a fresh
/// queue, the server's used memory before and after.
async fn run_memory(via: &Arc<dyn Executor>, system: &str, options: &Options, jobs: usize) {
    let stats = server::Stats::connect(&options.url, true).await;
    let before = stats.used_memory().await;
    enqueue_bulk(&queue(via, options).await, jobs, &vec![b'x'; options.payload]).await;
    let bytes = (stats.used_memory().await - before) / jobs as f64;
    emit(system, "bytes-per-pending-job", bytes, "bytes", None);
}
