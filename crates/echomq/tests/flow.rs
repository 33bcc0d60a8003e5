//! Flow control under real workers: a paused queue's workers run nothing
//! and wake on resume, a concurrency limit holds across workers, and a rate
//! holds in every window of its period, counted by the server's clock.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use echomq::worker::{HandlerError, JobContext, Worker, WorkerOptions};
use echomq::{Config, Executor, Limit, Native, Queue, Rate};
use echomq_test_support::{eventually, module_path, unique_queue, RedisServer, ServerOptions};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

fn options() -> WorkerOptions {
    WorkerOptions::default()
        .concurrency(4)
        .lease(Duration::from_secs(30))
        .upkeep(Duration::from_millis(50))
        .idle_wait(Duration::from_millis(200))
        .grace(Duration::from_secs(5))
}

/// Run a worker in the background; the sender stops it gracefully.
fn spawn(worker: Worker) -> (tokio::sync::oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let stop_when = async move {
        let _ = stopped.await;
    };
    let task = tokio::spawn(async move { worker.run_until(stop_when).await.expect("the worker runs") });
    (stop, task)
}

fn with_module() -> RedisServer {
    RedisServer::start_with(ServerOptions { module: Some(module_path()), ..ServerOptions::default() })
}

/// Executors as a worker process would get them, each over connections of
/// its own: `connect` on the module's server (native, blocking claims) and
/// on a server without it that announces arrivals (Lua, woken), and an
/// embedded one.
async fn waiting_executors() -> ([RedisServer; 2], [(&'static str, Arc<dyn Executor>); 3]) {
    let module = with_module();
    let notified = RedisServer::start_with(ServerOptions {
        module: None,
        args: vec!["--notify-keyspace-events".into(), "Kz".into()],
        ..ServerOptions::default()
    });
    let executors: [(&str, Arc<dyn Executor>); 3] = [
        ("native", echomq::connect(&module.client()).await.unwrap()),
        ("lua, woken", echomq::connect(&notified.client()).await.unwrap()),
        ("embedded", Arc::new(echomq::Embedded::new())),
    ];
    ([module, notified], executors)
}

/// An idle worker with more slots than its queue's concurrency limit (and
/// a rate) waits on the server for an arrival, as without limits: the
/// limits hold back nothing of an empty queue, so its claim gets no
/// trailer, and it does not poll. Then an arrival runs at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_worker_under_a_limit_below_its_slots_waits_on_the_server() {
    let module = with_module();
    let plain = RedisServer::start();
    for (via, server) in [("native", &module), ("lua", &plain)] {
        let queue =
            Queue::new(echomq::connect(&server.client()).await.unwrap(), &unique_queue("limited")).unwrap();
        queue
            .configure(
                Config::default()
                    .concurrency(echomq::Limit::To(2))
                    .rate(echomq::Limit::To(echomq::Rate { claims: 100, per: Duration::from_secs(1) })),
            )
            .await
            .unwrap();
        let ran = Arc::new(AtomicU64::new(0));
        let counter = ran.clone();
        let handler = move |_: JobContext| {
            counter.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, HandlerError>(()) }
        };
        let options = options().concurrency(8).idle_wait(Duration::from_secs(300));
        let (stop, task) = spawn(Worker::with_options(queue.clone(), handler, options));
        let mut conn = server.connection().await;
        // A claim blocked on the server (EMQ.CLAIM BLOCK, or BZPOPMIN on the wake-up key).
        eventually("the idle worker waits on the server", || {
            let mut conn = conn.clone();
            async move {
                let info: String = redis::cmd("INFO").arg("clients").query_async(&mut conn).await.unwrap();
                info.lines().any(|line| line.strip_prefix("blocked_clients:").is_some_and(|n| n != "0"))
            }
        })
        .await;
        queue.enqueue(b"x".to_vec()).await.unwrap();
        eventually("the arrival runs", || async { ran.load(Ordering::SeqCst) == 1 }).await;
        let _: redis::Value = redis::cmd("PING").query_async(&mut conn).await.unwrap();
        let _ = stop.send(());
        task.await.unwrap();
        println!("{via}: waited on the server, ran the arrival");
    }
}

/// A paused queue's worker runs none of its jobs while it serves another
/// queue, and its claim, blocked for five minutes, wakes on resume.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_queues_workers_run_nothing_and_wake_on_resume() {
    let (_servers, executors) = waiting_executors().await;
    for (via, executor) in executors {
        let paused = Queue::new(executor.clone(), &unique_queue("paused")).unwrap();
        let other = Queue::new(executor.clone(), &unique_queue("other")).unwrap();
        paused.pause().await.unwrap();
        assert!(paused.settings().await.unwrap().paused, "{via}");
        let ran = Arc::new(AtomicU64::new(0));
        let counter = ran.clone();
        let handler = move |job: JobContext| {
            let counter = counter.clone();
            async move {
                if job.payload == b"paused" {
                    counter.fetch_add(1, Ordering::SeqCst);
                }
                Ok::<_, HandlerError>(())
            }
        };
        let options = options().idle_wait(Duration::from_secs(300));
        let (stop, task) = spawn(Worker::with_options(paused.clone(), handler, options).queue(other.clone()));

        // Enqueue goes on while paused; the worker is alive (it runs the other
        // queue's jobs, enqueued after) and claims none of the paused ones.
        paused.enqueue_batch((0..5).map(|_| b"paused".to_vec())).await.unwrap();
        other.enqueue_batch((0..20).map(|_| b"other".to_vec())).await.unwrap();
        eventually("the other queue's jobs are done", || async { other.stats().await.unwrap().done == 20 })
            .await;
        let stats = paused.stats().await.unwrap();
        assert_eq!((stats.pending, stats.active, stats.done), (5, 0, 0), "{via}: a paused queue ran");
        assert_eq!(ran.load(Ordering::SeqCst), 0, "{via}");

        // Resume: the claim waiting five minutes wakes now.
        assert!(!paused.resume().await.unwrap().paused, "{via}");
        eventually("the resumed queue's jobs are done", || async { paused.stats().await.unwrap().done == 5 })
            .await;
        assert_eq!(ran.load(Ordering::SeqCst), 5, "{via}");
        stop.send(()).unwrap();
        task.await.unwrap();
    }
}

/// Three workers, each with room for eight, over one queue limited to two
/// active jobs: an audit of the handlers running at once never sees three.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrency_limit_holds_across_three_workers() {
    let module = with_module();
    for via in ["native", "lua"] {
        let name = unique_queue("limited");
        let mut queues = Vec::new();
        for _ in 0..3 {
            // Each worker on connections of its own, as three processes would be.
            let config = ConnectionManagerConfig::new().set_response_timeout(None);
            let conn = ConnectionManager::new_with_config(module.client(), config.clone()).await.unwrap();
            let executor: Arc<dyn Executor> = match via {
                "native" => {
                    let blocking = ConnectionManager::new_with_config(module.client(), config).await.unwrap();
                    Arc::new(Native::new(conn).with_blocking_connection(blocking))
                }
                _ => Arc::new(echomq::Lua::new(conn)),
            };
            queues.push(Queue::new(executor, &name).unwrap());
        }
        assert_eq!(
            queues[0].configure(Config::default().concurrency(Limit::To(2))).await.unwrap().concurrency,
            Some(2)
        );
        queues[0].enqueue_batch((0..40).map(|_| b"job".to_vec())).await.unwrap();

        let (running, most) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let mut workers = Vec::new();
        for q in &queues {
            let (running, most) = (running.clone(), most.clone());
            let handler = move |_job: JobContext| {
                let (running, most) = (running.clone(), most.clone());
                async move {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    // Long enough for the others to try to claim meanwhile.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    running.fetch_sub(1, Ordering::SeqCst);
                    Ok::<_, HandlerError>(())
                }
            };
            let options = options().concurrency(8);
            workers.push(spawn(Worker::with_options(q.clone(), handler, options)));
        }
        eventually("every job is done", || async { queues[0].stats().await.unwrap().done == 40 }).await;
        for (stop, task) in workers {
            stop.send(()).unwrap();
            task.await.unwrap();
        }
        let most = most.load(Ordering::SeqCst);
        assert!((1..=2).contains(&most), "{via}: {most} jobs ran at once under a limit of 2");
    }
}

/// Three workers over one queue limited to 50 claims a second: no window of
/// a second, by the server's clock, holds more than 50 claims. Each claim's
/// time is its record's `updated_at`, which the claim writes (native and
/// embedded), read by the handler before anything else writes the record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_of_50_a_second_holds_in_every_second_across_three_workers() {
    let module = with_module();
    let native = echomq::connect(&module.client()).await.unwrap();
    for (via, executor) in
        [("native", native), ("embedded", Arc::new(echomq::Embedded::new()) as Arc<dyn Executor>)]
    {
        let q = Queue::new(executor, &unique_queue("rated")).unwrap();
        let fifty = Rate { claims: 50, per: Duration::from_secs(1) };
        let settings = q.configure(Config::default().rate(Limit::To(fifty))).await.unwrap();
        assert_eq!(settings.rate, Some(fifty), "{via}");
        q.enqueue_batch((0..120).map(|_| b"job".to_vec())).await.unwrap();

        let claimed_at = Arc::new(Mutex::new(Vec::new()));
        let mut workers = Vec::new();
        for _ in 0..3 {
            let (q2, claimed_at) = (q.clone(), claimed_at.clone());
            let handler = move |job: JobContext| {
                let (q2, claimed_at) = (q2.clone(), claimed_at.clone());
                async move {
                    let record = q2.inspect(&job.id).await.unwrap().expect("its record").record;
                    claimed_at.lock().unwrap().push(record.updated_at.expect("a claim time"));
                    Ok::<_, HandlerError>(())
                }
            };
            let options = options().concurrency(16);
            workers.push(spawn(Worker::with_options(q.clone(), handler, options)));
        }
        eventually("every job is done", || async { q.stats().await.unwrap().done == 120 }).await;
        for (stop, task) in workers {
            stop.send(()).unwrap();
            task.await.unwrap();
        }
        let mut times = claimed_at.lock().unwrap().clone();
        times.sort_unstable();
        assert_eq!(times.len(), 120, "{via}");
        for (i, start) in times.iter().enumerate() {
            let in_window = times[i..].iter().take_while(|t| **t < start + 1000).count();
            assert!(in_window <= 50, "{via}: {in_window} claims in the second from {start}");
        }
        assert_eq!(q.stats().await.unwrap().dead, 0);
    }
}
