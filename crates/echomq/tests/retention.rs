//! Bounded retention under real workers, on Lua and Native: with done jobs
//! kept to the newest 1,000, a queue that runs 20,000 jobs ends with 1,000
//! done, and the server's memory once that window is full stays flat while
//! the rest run through (the short soak; `echomq-soak` runs a million).

use std::sync::Arc;
use std::time::Duration;

use echomq::worker::{HandlerError, JobContext, Worker, WorkerOptions};
use echomq::{Executor, Queue, Retention, Span};
use echomq_test_support::{eventually, module_path, unique_queue, RedisServer, ServerOptions};

async fn used_memory(conn: &mut redis::aio::MultiplexedConnection) -> u64 {
    let info: String = redis::cmd("INFO").arg("memory").query_async(conn).await.unwrap();
    let line = info.lines().find_map(|line| line.strip_prefix("used_memory:")).expect("used_memory");
    line.trim().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finished_jobs_are_trimmed_and_memory_stays_flat() {
    let server =
        RedisServer::start_with(ServerOptions { module: Some(module_path()), ..ServerOptions::default() });
    let mut conn = server.connection().await;
    let executors: [(&str, Arc<dyn Executor>); 2] = [
        ("lua", Arc::new(echomq::Lua::new(conn.clone()))),
        ("native", Arc::new(echomq::Native::new(conn.clone()))),
    ];
    for (via, executor) in executors {
        let q = Queue::new(executor, &unique_queue("retention")).unwrap();
        let kept = Retention { age: None, count: Some(1000) };
        let settings = q.configure(echomq::Config::default().keep_done(kept)).await.unwrap();
        assert_eq!(settings.keep_done, Retention { age: None, count: Some(1000) }, "{via}");
        let options = WorkerOptions::default().concurrency(16).upkeep(Duration::from_millis(50));
        let worker =
            Worker::with_options(q.clone(), |_job: JobContext| async { Ok::<_, HandlerError>(()) }, options);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(worker.run_until(async move {
            let _ = stopped.await;
        }));

        let mut enqueued = 0;
        let mut window = 0;
        for round in 0..20 {
            q.enqueue_batch((0..1000).map(|n| format!("job {round}-{n}").into_bytes())).await.unwrap();
            enqueued += 1000;
            eventually("the round is worked", || async {
                let stats = q.stats().await.unwrap();
                stats.pending + stats.active == 0
            })
            .await;
            if round == 4 {
                // The window is full: 5,000 jobs ran, 1,000 are kept.
                eventually("done is trimmed to 1000", || async { q.stats().await.unwrap().done <= 1000 })
                    .await;
                window = used_memory(&mut conn).await;
            }
        }
        eventually("done is trimmed to 1000", || async { q.stats().await.unwrap().done == 1000 }).await;
        let after = used_memory(&mut conn).await;
        stop.send(()).unwrap();
        task.await.unwrap().unwrap();
        // The counters (protocol 1.4) saw every job, whatever retention
        // kept: a chart drawn from them is the work done, not the done set.
        let counts = q.counts(Span::Minutes).await.unwrap();
        assert_eq!(counts.totals.enqueued, enqueued, "{via}: {counts:?}");
        assert_eq!(counts.totals.completed, enqueued, "{via}: {counts:?}");
        let charted: u64 = counts.slots.iter().map(|slot| slot.completed).sum();
        assert_eq!(charted, enqueued, "{via}: the minutes add up to every job finished");
        // 15,000 more jobs came and went; kept, they would take megabytes.
        assert!(
            after < window + 512 * 1024,
            "{via}: used_memory {window} with the window full, {after} after {enqueued} jobs"
        );
    }
}
