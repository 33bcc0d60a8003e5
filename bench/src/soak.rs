//! The retention soak: a million jobs (by default) through one queue, worked
//! as they come by a `Worker`, on a fresh redis-server it starts itself (the
//! module loaded for `--via native`). Every 100,000 jobs it prints the jobs/s
//! of that stretch, how many done jobs are kept, and the server's
//! `used_memory`: with bounded retention (the default keeps 10,000 done
//! jobs) the memory levels off once the window is full. With `--flows`,
//! the jobs are children of flows, a parent to every 100 (protocol 1.6):
//! the parents' dependencies, the notices and the children's links must
//! level off with them. Run it on purpose, in release mode:
//!
//! ```text
//! cargo build -p echomq-module --release
//! ECHOMQ_MODULE=target/release/libechomq_module.so cargo run --release -p echomq-bench --bin echomq-soak -- --via lua
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use echomq::worker::{HandlerError, JobContext, Worker, WorkerOptions};
use echomq::{Executor, Lua, Native, Queue};
use echomq_test_support::{module_path, unique_queue, RedisServer, ServerOptions};

/// The allocator a service at this rate would set: with glibc's malloc the
/// embedded worker spent about a third of its time allocating (BENCHMARKS.md,
/// "The allocator"). Redis-backed runs wait on the server, not on it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A long run through one queue, to watch memory under retention.
#[derive(Parser, Debug)]
struct Options {
    /// Jobs in all.
    #[arg(long, default_value_t = 1_000_000)]
    jobs: usize,
    /// `lua` or `native`.
    #[arg(long, default_value = "lua")]
    via: String,
    /// Payload size in bytes.
    #[arg(long, default_value_t = 53)]
    payload: usize,
    /// The jobs are flows' children, 100 to a parent (the parents not counted).
    #[arg(long)]
    flows: bool,
}

async fn used_memory(conn: &mut redis::aio::MultiplexedConnection) -> u64 {
    let info: String = redis::cmd("INFO").arg("memory").query_async(conn).await.expect("INFO");
    let line = info.lines().find_map(|line| line.strip_prefix("used_memory:")).expect("used_memory");
    line.trim().parse().expect("a number")
}

#[tokio::main]
async fn main() {
    let options = Options::parse();
    let server =
        RedisServer::start_with(ServerOptions { module: Some(module_path()), ..ServerOptions::default() });
    let mut conn = server.connection().await;
    let executor: Arc<dyn Executor> = match options.via.as_str() {
        "native" => Arc::new(Native::new(conn.clone())),
        _ => Arc::new(Lua::new(conn.clone())),
    };
    let queue = Queue::new(executor, &unique_queue("soak")).expect("a queue");
    let worker_options = WorkerOptions::default().concurrency(64);
    let worker = Worker::with_options(
        queue.clone(),
        |_job: JobContext| async { Ok::<_, HandlerError>(()) },
        worker_options,
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(worker.run_until(async move {
        let _ = stopped.await;
    }));

    println!("{:>10} {:>10} {:>10} {:>14}", "jobs", "jobs/s", "done kept", "used_memory");
    let payload = vec![b'x'; options.payload];
    let (mut sent, mut stretch) = (0, Instant::now());
    while sent < options.jobs {
        let batch = 1000.min(options.jobs - sent);
        if options.flows {
            for _ in 0..batch.div_ceil(100) {
                let mut flow = echomq::Flow::new(payload.clone());
                for _ in 0..100 {
                    flow = flow.child(queue.name(), payload.clone());
                }
                echomq::Flows::of(&queue).add(flow).await.expect("a flow");
            }
        } else {
            queue.enqueue_batch((0..batch).map(|_| payload.clone())).await.expect("enqueued");
        }
        sent += batch;
        // Keep the backlog short: the run measures retention, not a queue's depth.
        while queue.stats().await.expect("stats").pending > 20_000 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        if sent % 100_000 == 0 || sent == options.jobs {
            loop {
                let stats = queue.stats().await.expect("stats");
                if stats.pending + stats.active + stats.waiting == 0 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let rate = 100_000f64.min(sent as f64) / stretch.elapsed().as_secs_f64();
            let done = queue.stats().await.expect("stats").done;
            println!("{sent:>10} {rate:>10.0} {done:>10} {:>14}", used_memory(&mut conn).await);
            stretch = Instant::now();
        }
    }
    stop.send(()).expect("the worker runs");
    task.await.expect("the worker stops").expect("the worker runs");
}
