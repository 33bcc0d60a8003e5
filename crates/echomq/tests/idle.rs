//! An idle worker does not spin, and a new job still starts within
//! milliseconds: on Native (EMQ.CLAIM BLOCK), on Embedded (an in-process
//! signal), on Lua waiting on its queue's wake-up key (BZPOPMIN), and on Lua
//! without a connection to wait on (which has to poll, backing off to 20 ms). This file is a test binary of
//! its own, so the process's CPU time is the worker's.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use echomq::worker::{HandlerError, JobContext, Worker, WorkerOptions};
use echomq::{Embedded, Executor, Lua, Native, Queue};
use echomq_test_support::{module_path, unique_queue, RedisServer, ServerOptions};
use redis::aio::ConnectionManagerConfig;

/// The CPU time this process's live threads have run, in ns, from each
/// one's `/proc/self/task/<tid>/schedstat` (the scheduler's own count, not
/// `/proc/self/stat`'s 10 ms ticks). A thread that ends meanwhile takes
/// its time with it: the runtime's threads live through the test.
fn cpu_time() -> Duration {
    let tasks = std::fs::read_dir("/proc/self/task").expect("Linux /proc");
    let ns: u64 = tasks
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(ns)
}

/// What an idle worker may spend, as a share of the wall time it idled:
/// one that waits (a blocked claim, a signal) makes a few upkeep calls a
/// second, measured at 1% of a core alone and under a build loading both
/// cores; one that polls makes ~50 claims a second, measured at 4%. A
/// spinning worker burns most of a core, and still a third of one when
/// two busy cores are shared by four: a share, unlike a fixed number of
/// ms, is not moved by how long a loaded machine stretches the second.
const WAITING_SHARE: f64 = 0.08;
const POLLING_SHARE: f64 = 0.20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_workers_do_not_spin_and_new_jobs_start_at_once() {
    let server =
        RedisServer::start_with(ServerOptions { module: Some(module_path()), ..ServerOptions::default() });
    let client = server.client();
    let config = ConnectionManagerConfig::new().set_response_timeout(None);
    let conn = redis::aio::ConnectionManager::new_with_config(client.clone(), config.clone()).await.unwrap();
    let blocking =
        redis::aio::ConnectionManager::new_with_config(client.clone(), config.clone()).await.unwrap();
    let open = move || redis::aio::ConnectionManager::new_with_config(client.clone(), config.clone());
    let executors: [(&str, Arc<dyn Executor>); 4] = [
        ("native", Arc::new(Native::new(conn.clone()).with_blocking_connection(blocking))),
        ("embedded", Arc::new(Embedded::new())),
        ("lua, waiting on the wake-up key", Arc::new(Lua::new(conn.clone()).with_blocking_connections(open))),
        ("lua, polling", Arc::new(Lua::new(conn))),
    ];
    for (name, via) in executors {
        let queue = Queue::new(via, &unique_queue("idle")).unwrap();
        let started = Arc::new(Mutex::new(Vec::new()));
        let seen = started.clone();
        let worker = Worker::with_options(
            queue.clone(),
            move |_job: JobContext| {
                seen.lock().unwrap().push(Instant::now());
                async { Ok::<_, HandlerError>(()) }
            },
            WorkerOptions::default(),
        );
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(worker.run_until(async move {
            let _ = stopped.await;
        }));

        // Idle: the worker's CPU time over a second, as a share of it.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (before, began) = (cpu_time(), Instant::now());
        tokio::time::sleep(Duration::from_secs(1)).await;
        let (idle_cpu, idled) = (cpu_time() - before, began.elapsed());
        let share = idle_cpu.as_secs_f64() / idled.as_secs_f64();
        let bound = if name.ends_with("polling") { POLLING_SHARE } else { WAITING_SHARE };
        assert!(
            share < bound,
            "{name}: idle for {idled:?}, it spent {idle_cpu:?} of CPU: {:.1}% of a core, over {:.0}%",
            share * 100.0,
            bound * 100.0
        );

        // A new job starts within milliseconds: five, one at a time.
        let mut waits = Vec::new();
        for n in 1..=5 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let enqueued = Instant::now();
            queue.enqueue(b"now".to_vec()).await.unwrap();
            let deadline = Instant::now() + Duration::from_secs(10);
            while started.lock().unwrap().len() < n {
                assert!(Instant::now() < deadline, "{name}: job {n} never started");
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            waits.push(started.lock().unwrap()[n - 1] - enqueued);
        }
        waits.sort();
        println!(
            "{name}: idle {idled:?}, {idle_cpu:?} of CPU ({:.2}%); enqueue→start {waits:?}",
            share * 100.0
        );
        assert!(waits[2] < Duration::from_millis(60), "{name}: median enqueue→start {:?}", waits[2]);

        stop.send(()).unwrap();
        task.await.unwrap().unwrap();
    }
}
