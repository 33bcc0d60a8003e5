//! EchoMQ's benchmark program: enqueue and claim+ack throughput for each
//! executor (Lua, Native, Embedded), one at a time and with many calls in
//! flight, all in one run on one fresh redis-server that it starts itself
//! (the module loaded). It prints jobs/s, the median of several rounds, and
//! the ratios native/Lua. Run it on purpose, in release mode:
//!
//! ```text
//! cargo build -p echomq-module --release
//! ECHOMQ_MODULE=target/release/libechomq_module.so cargo run --release -p echomq-bench -- --jobs 20000
//! ```
//!
//! The machine is shared and noisy: read the ratios, measured side by side,
//! rather than the absolute figures.

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use echomq::{Embedded, Executor, Lua, Native, Queue};
use echomq_test_support::{module_path, unique_queue, RedisServer, ServerOptions};

/// The allocator a service at this rate would set: with glibc's malloc the
/// embedded worker spent about a third of its time allocating (BENCHMARKS.md,
/// "The allocator"). Redis-backed runs wait on the server, not on it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Throughput of each executor, side by side.
#[derive(Parser, Debug)]
struct Options {
    /// Jobs per measurement.
    #[arg(long, default_value_t = 20_000)]
    jobs: usize,
    /// Calls in flight for the pipelined measurements.
    #[arg(long, default_value_t = 64)]
    in_flight: usize,
    /// Rounds per measurement; the median is reported.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Payload size in bytes.
    #[arg(long, default_value_t = 53)]
    payload: usize,
}

const LEASE: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, Debug, PartialEq)]
enum Workload {
    /// One enqueue at a time: a round trip each.
    Enqueue,
    /// `in_flight` concurrent enqueuers on the multiplexed connection.
    EnqueueConcurrent,
    /// `enqueue_batch` of `in_flight` jobs: one pipeline each.
    EnqueueBatch,
    /// Claim one, ack it, again: two round trips a job.
    ClaimAck,
    /// `claim_batch` of `in_flight`, then `ack_batch`: two round trips a batch.
    ClaimAckBatch,
}

impl Workload {
    const ALL: [Workload; 5] = [
        Workload::Enqueue,
        Workload::EnqueueConcurrent,
        Workload::EnqueueBatch,
        Workload::ClaimAck,
        Workload::ClaimAckBatch,
    ];

    fn label(self, in_flight: usize) -> String {
        match self {
            Workload::Enqueue => "enqueue, 1 at a time".into(),
            Workload::EnqueueConcurrent => format!("enqueue, {in_flight} concurrent"),
            Workload::EnqueueBatch => format!("enqueue, pipelined by {in_flight}"),
            Workload::ClaimAck => "claim+ack, 1 at a time".into(),
            Workload::ClaimAckBatch => format!("claim+ack, batches of {in_flight}"),
        }
    }
}

/// Run `jobs` calls split over `in_flight` tasks; their total time.
async fn spread<F, Fut>(jobs: usize, in_flight: usize, task: F) -> Duration
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let started = Instant::now();
    let per_task = jobs.div_ceil(in_flight);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..in_flight {
        tasks.spawn(task(per_task));
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("a benchmark task panicked");
    }
    started.elapsed()
}

/// One measurement on a fresh queue; jobs per second.
async fn measure(via: Arc<dyn Executor>, workload: Workload, options: &Options) -> f64 {
    let queue = Queue::new(via, &unique_queue("bench")).expect("a valid name");
    let payload = vec![b'x'; options.payload];
    let jobs = options.jobs;
    let enqueue_all = |queue: Queue, in_flight: usize| {
        let payload = payload.clone();
        spread(jobs, in_flight, move |count| {
            let (queue, payload) = (queue.clone(), payload.clone());
            async move {
                for _ in 0..count {
                    queue.enqueue(payload.clone()).await.expect("enqueue");
                }
            }
        })
    };
    let batch = options.in_flight;
    let enqueue_batches = |queue: Queue| {
        let payload = payload.clone();
        async move {
            let started = Instant::now();
            for _ in 0..jobs.div_ceil(batch) {
                let outcomes =
                    queue.enqueue_batch(vec![payload.clone(); batch]).await.expect("enqueue_batch");
                assert!(outcomes.iter().all(Result::is_ok), "a refused enqueue");
            }
            started.elapsed()
        }
    };
    let elapsed = match workload {
        Workload::Enqueue => enqueue_all(queue, 1).await,
        Workload::EnqueueConcurrent => enqueue_all(queue, options.in_flight).await,
        Workload::EnqueueBatch => enqueue_batches(queue).await,
        Workload::ClaimAck => {
            enqueue_batches(queue.clone()).await;
            let started = Instant::now();
            while let Some(job) = queue.claim(LEASE).await.expect("claim") {
                job.ack().await.expect("ack");
            }
            started.elapsed()
        }
        Workload::ClaimAckBatch => {
            enqueue_batches(queue.clone()).await;
            let started = Instant::now();
            loop {
                let claimed = queue.claim_many(LEASE, batch as u64, None).await.expect("claim").jobs;
                if claimed.is_empty() {
                    break;
                }
                let acks = queue.ack_many(claimed).await.expect("ack_batch");
                assert!(acks.iter().all(Result::is_ok), "a refused ack");
            }
            started.elapsed()
        }
    };
    jobs as f64 / elapsed.as_secs_f64()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[tokio::main]
async fn main() {
    let options = Options::parse();
    let server =
        RedisServer::start_with(ServerOptions { module: Some(module_path()), ..ServerOptions::default() });
    let conn = server.client().get_multiplexed_async_connection().await.expect("connect");
    let version: String =
        redis::cmd("INFO").arg("server").query_async(&mut conn.clone()).await.expect("INFO");
    let version = version.lines().find_map(|l| l.strip_prefix("redis_version:")).unwrap_or("?").to_owned();
    println!(
        "echomq-bench: {} jobs per measurement, {} rounds (median), payload {} bytes, redis {version}, module {}",
        options.jobs,
        options.rounds,
        options.payload,
        module_path().display()
    );
    let executors: [(&str, Arc<dyn Executor>); 3] = [
        ("lua", Arc::new(Lua::new(conn.clone()))),
        ("native", Arc::new(Native::new(conn.clone()))),
        ("embedded", Arc::new(Embedded::new())),
    ];
    println!("\n{:<28} {:>12} {:>12} {:>12} {:>14}", "jobs/s", "lua", "native", "embedded", "native/lua");
    let mut server_cost = Vec::new();
    for workload in Workload::ALL {
        let mut row = Vec::new();
        let mut cost = Vec::new();
        for (_, via) in &executors {
            let mut rounds = Vec::new();
            let _: () = redis::cmd("CONFIG")
                .arg("RESETSTAT")
                .query_async(&mut conn.clone())
                .await
                .expect("RESETSTAT");
            for _ in 0..options.rounds {
                rounds.push(measure(via.clone(), workload, &options).await);
                let _: () = redis::cmd("FLUSHALL").query_async(&mut conn.clone()).await.expect("FLUSHALL");
            }
            row.push(median(rounds));
            cost.push(server_usec(&conn).await / (options.rounds * options.jobs) as f64);
        }
        println!(
            "{:<28} {:>12.0} {:>12.0} {:>12.0} {:>13.2}x",
            workload.label(options.in_flight),
            row[0],
            row[1],
            row[2],
            row[1] / row[0]
        );
        server_cost.push((workload, cost));
    }
    // What the server spent inside EchoMQ's commands (INFO commandstats):
    // the executors' own cost, whatever the client and the network add.
    println!("\n{:<28} {:>12} {:>12} {:>14}", "server µs per job", "lua", "native", "lua/native");
    for (workload, cost) in server_cost {
        let label = workload.label(options.in_flight);
        println!("{label:<28} {:>12.2} {:>12.2} {:>13.2}x", cost[0], cost[1], cost[0] / cost[1]);
    }
}

/// Microseconds the server spent in EVALSHA and `EMQ.*` since the last RESETSTAT
/// (the enqueues that set a claim workload up included).
async fn server_usec(conn: &redis::aio::MultiplexedConnection) -> f64 {
    let info: String =
        redis::cmd("INFO").arg("commandstats").query_async(&mut conn.clone()).await.expect("INFO");
    info.lines()
        .filter(|line| line.starts_with("cmdstat_evalsha:") || line.starts_with("cmdstat_emq."))
        .filter_map(|line| line.split([':', ',']).find_map(|field| field.strip_prefix("usec=")))
        .filter_map(|usec| usec.parse::<f64>().ok())
        .sum()
}
