//! An idle worker does not spin, and a new job still starts within
//! milliseconds: on Native (EMQ.CLAIM BLOCK), on Embedded (an in-process
//! signal), on Lua waiting on its queue's wake-up key (BZPOPMIN), and on Lua
//! without a connection to wait on (which has to poll, backing off to 20 ms). This file is a test binary of
//! its own, so the process's CPU time is the worker's.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use echomq::worker::{JobContext, Worker, WorkerOptions};
use echomq::{Embedded, Executor, Lua, Native, Queue};
use echomq_test_support::{module_path, unique_queue, RedisServer, ServerOptions};
use redis::aio::ConnectionManagerConfig;

/// This process's CPU time (user + system), from /proc.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("Linux /proc");
    // Fields after the command name (which is in parentheses and may hold spaces).
    let fields: Vec<&str> = stat.rsplit_once(')').expect("a stat line").1.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    let hz = std::process::Command::new("getconf").arg("CLK_TCK").output().ok();
    let hz: u64 = hz.and_then(|o| String::from_utf8(o.stdout).ok()?.trim().parse().ok()).unwrap_or(100);
    Duration::from_millis(ticks * 1000 / hz)
}

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
        let queue = Queue::with_executor(via, &unique_queue("idle")).unwrap();
        let started = Arc::new(Mutex::new(Vec::new()));
        let seen = started.clone();
        let worker = Worker::with_options(
            queue.clone(),
            move |_job: JobContext| {
                seen.lock().unwrap().push(Instant::now());
                async { Ok(()) }
            },
            WorkerOptions::default(),
        );
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(worker.run_until(async move {
            let _ = stopped.await;
        }));

        // Idle: a second of the worker's CPU time.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let before = cpu_time();
        tokio::time::sleep(Duration::from_secs(1)).await;
        let idle_cpu = cpu_time() - before;
        // A spinning worker burns most of a core (hundreds of ms). One that
        // waits costs next to nothing; one that polls makes ~50 claims a
        // second, whose client CPU grows on a slow machine: a looser bound.
        let bound = if name.ends_with("polling") { 200 } else { 60 };
        assert!(idle_cpu < Duration::from_millis(bound), "{name}: an idle second cost {idle_cpu:?} of CPU");

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
        println!("{name}: idle second {idle_cpu:?} of CPU; enqueue→start {waits:?}");
        assert!(waits[2] < Duration::from_millis(60), "{name}: median enqueue→start {:?}", waits[2]);

        stop.send(()).unwrap();
        task.await.unwrap();
    }
}
