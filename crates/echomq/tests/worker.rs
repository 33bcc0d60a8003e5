//! The worker runtime on a real redis-server, on Lua and on Native: a killed
//! worker's job is finished by another, a lost lease cancels its handler and
//! refuses its late ack, attempts run out into dead and a manual retry
//! completes, shutdown releases what it cannot finish, and a Redis restart
//! (AOF on) loses nothing.

use echomq::Upkeep;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use echomq::worker::{Handler, HandlerError, JobContext, Worker, WorkerOptions};
use echomq::{EnqueueOptions, Executor, JobId, Lua, Native, Queue, Replication, RetryPolicy, State};
use echomq_test_support::{eventually, module_path, unique_queue, RedisServer, ServerOptions};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::Notify;

mod log;
use log::Log;

#[derive(Clone, Copy, Debug)]
enum Via {
    Lua,
    Native,
}

const BOTH: [Via; 2] = [Via::Lua, Via::Native];

fn server(args: &[&str]) -> RedisServer {
    let args = args.iter().map(|a| a.to_string()).collect();
    RedisServer::start_with(ServerOptions { module: Some(module_path()), args, ..ServerOptions::default() })
}

/// A queue on `server` run by `via`, over reconnecting connections (a
/// blocking one of its own for Native's waiting claims).
async fn queue(server: &RedisServer, via: Via, name: &str) -> Queue {
    let client = server.client();
    let config = ConnectionManagerConfig::new().set_response_timeout(None);
    let conn = ConnectionManager::new_with_config(client.clone(), config.clone()).await.unwrap();
    let executor: Arc<dyn Executor> = match via {
        Via::Lua => Arc::new(Lua::new(conn)),
        Via::Native => {
            let blocking = ConnectionManager::new_with_config(client, config).await.unwrap();
            Arc::new(Native::new(conn).with_blocking_connection(blocking))
        }
    };
    Queue::new(executor, name).unwrap()
}

fn options() -> WorkerOptions {
    WorkerOptions::default()
        .concurrency(4)
        .lease(Duration::from_secs(10))
        .upkeep(Duration::from_millis(50))
        .idle_wait(Duration::from_millis(200))
        .grace(Duration::from_secs(5))
        .retry(RetryPolicy::new().max_attempts(3).backoff(Duration::from_millis(10)))
}

async fn state(queue: &Queue, id: &JobId) -> Option<(State, u64)> {
    queue.inspect(id).await.unwrap().map(|job| (job.record.state, job.record.attempts))
}

/// A handler that counts the jobs it starts; a job whose payload is `stall`
/// never ends, one whose payload is `quick` takes 100 ms, the rest end at once.
fn counting(running: Arc<AtomicU64>) -> impl Handler {
    move |job: JobContext| {
        running.fetch_add(1, Ordering::SeqCst);
        async move {
            match job.payload.as_slice() {
                b"stall" => std::future::pending::<()>().await,
                b"quick" => tokio::time::sleep(Duration::from_millis(100)).await,
                _ => {}
            }
            Ok::<_, HandlerError>(())
        }
    }
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

/// Move a job's lease deadline into the past, as if its holder had stalled
/// past the lease, and wait until a reap (the test's or a worker's) sends it
/// back to pending.
async fn expire_and_reap(server: &RedisServer, queue: &Queue, id: &JobId) {
    let mut conn = server.connection().await;
    let active = queue.keyspace().active();
    let _: () = redis::cmd("ZADD").arg(active).arg(0).arg(id.as_str()).query_async(&mut conn).await.unwrap();
    eventually("the job is reaped", || async {
        Upkeep::of(queue).reap(10).await.unwrap();
        state(queue, id).await.map(|s| s.0) == Some(State::Pending)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_workers_job_is_reaped_and_finished_by_another() {
    for via in BOTH {
        let server = server(&[]);
        let q = queue(&server, via, &unique_queue("killed")).await;
        let id = q.enqueue(b"work".to_vec()).await.unwrap();

        // Worker one takes the job, then dies mid-job without a word.
        let started = Arc::new(Notify::new());
        let signal = started.clone();
        let short = options().lease(Duration::from_millis(600));
        let one = Worker::with_options(
            q.clone(),
            move |_job: JobContext| {
                let signal = signal.clone();
                async move {
                    signal.notify_one();
                    std::future::pending::<()>().await;
                    Ok::<_, HandlerError>(())
                }
            },
            short,
        );
        let (_stop, task) = spawn(one);
        started.notified().await;
        task.abort();

        // Worker two gets it once the lease runs out, and finishes it.
        let log = Arc::new(Mutex::new(Vec::new()));
        let seen = log.clone();
        let two = Worker::with_options(
            q.clone(),
            move |job: JobContext| {
                seen.lock().unwrap().push((job.id.clone(), job.attempt));
                async { Ok::<_, HandlerError>(()) }
            },
            options(),
        );
        let (stop, task) = spawn(two);
        eventually("the job is done", || async { state(&q, &id).await == Some((State::Done, 2)) }).await;
        stop.send(()).unwrap();
        task.await.unwrap();
        assert_eq!(*log.lock().unwrap(), vec![(id.clone(), 2)], "{via:?}: one finish, by the second holder");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_lease_cancels_the_handler_and_its_late_ack_is_refused() {
    for via in BOTH {
        let server = server(&[]);
        let q = queue(&server, via, &unique_queue("lost")).await;
        let id = q.enqueue(b"work".to_vec()).await.unwrap();

        // Worker one (one slot, so it cannot take the job back itself) has a
        // handler that finishes only when told to; its heartbeat is 3 s away.
        let (started, go_on) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let (s, g) = (started.clone(), go_on.clone());
        let one = Worker::with_options(
            q.clone(),
            move |_job: JobContext| {
                let (s, g) = (s.clone(), g.clone());
                async move {
                    s.notify_one();
                    g.notified().await;
                    Ok::<_, HandlerError>(())
                }
            },
            options().concurrency(1),
        );
        let (stop_one, one_task) = spawn(one);
        started.notified().await;

        // Its lease runs out; a second holder claims the job (token 2).
        expire_and_reap(&server, &q, &id).await;
        let second = q.claim(Duration::from_secs(30)).await.unwrap().unwrap();
        assert_eq!(second.token, 2, "{via:?}");

        // Worker one's handler now finishes; a shutdown waits for its ack,
        // which is refused and changes nothing.
        go_on.notify_one();
        stop_one.send(()).unwrap();
        one_task.await.unwrap();
        assert_eq!(state(&q, &id).await, Some((State::Active, 2)), "{via:?}: the late ack was refused");

        // The second holder's ack stands.
        second.ack().await.unwrap();
        assert_eq!(state(&q, &id).await, Some((State::Done, 2)));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heartbeat_that_finds_the_lease_gone_cancels_the_handler() {
    for via in BOTH {
        let server = server(&[]);
        let q = queue(&server, via, &unique_queue("heartbeat")).await;
        let id = q.enqueue(b"work".to_vec()).await.unwrap();
        let (started, cancelled) = (Arc::new(Notify::new()), Arc::new(AtomicBool::new(false)));
        let (s, c) = (started.clone(), cancelled.clone());
        let fast_beats = options().lease(Duration::from_millis(900));
        let worker = Worker::with_options(
            q.clone(),
            move |job: JobContext| {
                let (s, c) = (s.clone(), c.clone());
                async move {
                    s.notify_one();
                    job.cancelled().await;
                    c.store(true, Ordering::SeqCst);
                    Ok::<_, HandlerError>(())
                }
            },
            fast_beats,
        );
        let (stop, task) = spawn(worker);
        started.notified().await;
        // Cancelling the job by hand ends its lease: the next heartbeat is fenced.
        assert!(q.cancel(&id).await.unwrap());
        eventually("the handler is cancelled", || async { cancelled.load(Ordering::SeqCst) }).await;
        assert_eq!(state(&q, &id).await, Some((State::Cancelled, 1)), "{via:?}");
        stop.send(()).unwrap();
        task.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attempts_run_out_into_dead_and_a_manual_retry_completes() {
    for via in BOTH {
        let server = server(&[]);
        let q = queue(&server, via, &unique_queue("dead")).await;
        let healed = Arc::new(AtomicBool::new(false));
        let h = healed.clone();
        let worker = Worker::with_options(
            q.clone(),
            move |job: JobContext| {
                let healed = h.load(Ordering::SeqCst);
                async move {
                    if job.attempt == 2 {
                        panic!("attempt two panics");
                    }
                    if healed {
                        Ok(())
                    } else {
                        Err(HandlerError::from(format!("boom on attempt {}", job.attempt)))
                    }
                }
            },
            options(),
        );
        let (stop, task) = spawn(worker);
        let id = q.enqueue(b"flaky".to_vec()).await.unwrap();
        eventually("the job is dead", || async { state(&q, &id).await == Some((State::Dead, 3)) }).await;
        assert_eq!(
            q.inspect(&id).await.unwrap().unwrap().error.as_deref(),
            Some("boom on attempt 3"),
            "{via:?}"
        );

        healed.store(true, Ordering::SeqCst);
        q.retry(&id).await.unwrap();
        eventually("the retried job is done", || async { state(&q, &id).await == Some((State::Done, 4)) })
            .await;
        stop.send(()).unwrap();
        task.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_handler_fails_its_job_and_the_worker_goes_on() {
    let server = server(&[]);
    let q = queue(&server, Via::Lua, &unique_queue("panic")).await;
    let worker = Worker::with_options(
        q.clone(),
        |job: JobContext| async move {
            if job.payload == b"bad" {
                panic!("bad payload");
            }
            Ok::<_, HandlerError>(())
        },
        options().retry(RetryPolicy::new().max_attempts(1)),
    );
    let (stop, task) = spawn(worker);
    let bad = q.enqueue(b"bad".to_vec()).await.unwrap();
    let good = q.enqueue(b"good".to_vec()).await.unwrap();
    eventually("both jobs are settled", || async {
        state(&q, &bad).await.map(|s| s.0) == Some(State::Dead)
            && state(&q, &good).await.map(|s| s.0) == Some(State::Done)
    })
    .await;
    let error = q.inspect(&bad).await.unwrap().unwrap().error.unwrap();
    assert_eq!(error, "handler panicked: bad payload");
    stop.send(()).unwrap();
    task.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_finishes_what_it_can_within_the_grace_and_releases_the_rest() {
    for via in BOTH {
        let server = server(&[]);
        let q = queue(&server, via, &unique_queue("shutdown")).await;
        let running = Arc::new(AtomicU64::new(0));
        let options = options().concurrency(3).grace(Duration::from_millis(700));
        let worker = Worker::with_options(q.clone(), counting(running.clone()), options);
        let (stop, task) = spawn(worker);
        let quick = q.enqueue(b"quick".to_vec()).await.unwrap();
        let stuck: Vec<JobId> =
            vec![q.enqueue(b"stall".to_vec()).await.unwrap(), q.enqueue(b"stall".to_vec()).await.unwrap()];
        eventually("three jobs run", || async { running.load(Ordering::SeqCst) == 3 }).await;

        let asked = Instant::now();
        stop.send(()).unwrap();
        task.await.unwrap();
        let took = asked.elapsed();
        assert!(took < Duration::from_secs(5), "{via:?}: shutdown took {took:?}");
        assert_eq!(
            state(&q, &quick).await.map(|s| s.0),
            Some(State::Done),
            "{via:?}: finished within the grace"
        );
        for id in &stuck {
            assert_eq!(
                state(&q, id).await,
                Some((State::Pending, 1)),
                "{via:?}: released, not left to expire"
            );
        }
        let stats = q.stats().await.unwrap();
        assert_eq!((stats.active, stats.pending, stats.done), (0, 2, 1), "{via:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_restart_under_a_running_worker_loses_nothing() {
    for via in BOTH {
        let mut server = server(&["--appendonly", "yes", "--appendfsync", "always"]);
        let q = queue(&server, via, &unique_queue("restart")).await;
        let done = Arc::new(Mutex::new(BTreeMap::<JobId, u64>::new()));
        let d = done.clone();
        let worker = Worker::with_options(
            q.clone(),
            move |job: JobContext| {
                d.lock().unwrap().entry(job.id.clone()).and_modify(|n| *n += 1).or_insert(1);
                async { Ok::<_, HandlerError>(()) }
            },
            options().lease(Duration::from_secs(2)),
        );
        let (stop, task) = spawn(worker);

        let mut ids = Vec::new();
        for n in 0..50u8 {
            ids.push(q.enqueue(vec![n]).await.unwrap());
        }
        eventually("the first jobs run", || async { !done.lock().unwrap().is_empty() }).await;
        server.restart();
        // Enqueues after the restart; the connection comes back by itself.
        for n in 50..100u8 {
            loop {
                match q.enqueue(vec![n]).await {
                    Ok(id) => break ids.push(id),
                    Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
        }
        eventually("every job is done", || async {
            q.stats().await.is_ok_and(|s| s.done == 100 && s.active == 0 && s.pending == 0)
        })
        .await;
        for id in &ids {
            assert_eq!(state(&q, id).await.map(|s| s.0), Some(State::Done), "{via:?}: {id}");
            assert!(done.lock().unwrap().contains_key(id), "{via:?}: {id} never ran");
        }
        stop.send(()).unwrap();
        task.await.unwrap();
    }
}

/// A job that ends while Redis is down for longer than a few quick retries
/// is still acked once the server is back, within its lease: it runs once.
/// (It timed out 1 run in 20, its log showed why: while the server was down
/// another server took its freed port, the ack met a stranger (EMQNOJOB,
/// the lease counted lost), and the revived server, unable to bind, looked
/// ready. Ports are now handed out once per process, from below the
/// kernel's ephemeral range that any process's `bind(…:0)` or connection
/// draws from, and a server is ready only when the one answering is its
/// own: see `echomq_test_support::free_port`. On a failure it still prints
/// the worker's log.)
#[test]
fn a_job_that_ends_during_an_outage_is_acked_when_the_server_is_back() {
    let log = Log::default();
    let (runtime, _default) = log.runtime();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runtime.block_on(outage())));
    if let Err(panic) = outcome {
        eprintln!("the worker's log:\n{}", log.text());
        std::panic::resume_unwind(panic);
    }
}

async fn outage() {
    for via in BOTH {
        let mut server = server(&["--appendonly", "yes", "--appendfsync", "always"]);
        let q = queue(&server, via, &unique_queue("outage")).await;
        let runs = Arc::new(AtomicU64::new(0));
        let (started, finish) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let handler = {
            let (runs, started, finish) = (runs.clone(), started.clone(), finish.clone());
            move |_job: JobContext| {
                runs.fetch_add(1, Ordering::SeqCst);
                let (started, finish) = (started.clone(), finish.clone());
                async move {
                    started.notify_one();
                    finish.notified().await;
                    Ok::<_, HandlerError>(())
                }
            }
        };
        let lease = Duration::from_secs(30);
        let (stop, task) = spawn(Worker::with_options(q.clone(), handler, options().lease(lease)));
        let id = q.enqueue(b"x".to_vec()).await.unwrap();
        started.notified().await;

        server.kill();
        finish.notify_one();
        // Down for longer than a few quick retries last: the outage itself,
        // not a wait for a condition.
        tokio::time::sleep(Duration::from_secs(3)).await;
        server.revive();

        eventually(&format!("{via:?}: the job is done"), || async {
            q.inspect(&id).await.ok().flatten().is_some_and(|job| job.record.state == State::Done)
        })
        .await;
        assert_eq!(state(&q, &id).await, Some((State::Done, 1)), "{via:?}: acked with its first token");
        assert_eq!(runs.load(Ordering::SeqCst), 1, "{via:?}: it ran once");
        stop.send(()).unwrap();
        task.await.unwrap();
    }
}

/// One executor of each kind that waits for work without polling, as
/// `connect` picks them (native; Lua waiting on the wake-up key, on a
/// server with no module and no notifications) and embedded, with the
/// servers behind them.
async fn waiting_executors() -> ([RedisServer; 2], [(&'static str, Arc<dyn Executor>); 3]) {
    let with_module = server(&[]);
    let plain = RedisServer::start_with(ServerOptions { module: None, ..ServerOptions::default() });
    let executors: [(&str, Arc<dyn Executor>); 3] = [
        ("native", echomq::connect(&with_module.client()).await.unwrap()),
        ("lua, woken", echomq::connect(&plain.client()).await.unwrap()),
        ("embedded", Arc::new(echomq::Embedded::new())),
    ];
    ([with_module, plain], executors)
}

/// A worker over an idle queue and a busy one: the idle queue's waiting
/// claim holds neither the worker's slots nor the connection the other
/// queue's claims wait on. Its wait is five minutes, so any of that would show.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_queue_does_not_hold_up_a_busy_one() {
    let (_servers, executors) = waiting_executors().await;
    for (via, executor) in executors {
        assert!(executor.setup().waits, "{via}");
        let idle = Queue::new(executor.clone(), &unique_queue("idle")).unwrap();
        let busy = Queue::new(executor.clone(), &unique_queue("busy")).unwrap();
        let options = options().concurrency(8).idle_wait(Duration::from_secs(300));
        let worker = Worker::with_options(
            idle.clone(),
            |_job: JobContext| async { Ok::<_, HandlerError>(()) },
            options,
        )
        .queue(busy.clone());
        let (stop, task) = spawn(worker);

        // Both queues idle, both claims waiting: a job on one wakes its own.
        let first = busy.enqueue(b"first".to_vec()).await.unwrap();
        eventually("the first job is done", || async {
            state(&busy, &first).await.map(|s| s.0) == Some(State::Done)
        })
        .await;
        // Then a flood on the busy queue runs at the worker's full width.
        busy.enqueue_batch((0..300u32).map(|n| n.to_be_bytes().to_vec())).await.unwrap();
        eventually("the flood is done", || async { busy.stats().await.unwrap().done == 301 }).await;
        // Every job is done: a graceful stop ends the idle claims' waits at once.
        stop.send(()).unwrap();
        task.await.unwrap();
    }
}

/// A worker over twenty queues on one server claims in turns: each call
/// takes many jobs of one queue (native: under a quarter as many claims as
/// jobs, where a claim loop per queue sharing the slots made about one a
/// job), and every job of every queue is done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_of_many_queues_claims_many_jobs_a_call() {
    let (servers, executors) = waiting_executors().await;
    for (via, executor) in executors {
        let queues: Vec<Queue> = (0..20)
            .map(|n| Queue::new(executor.clone(), &unique_queue(&format!("turn{n}"))).unwrap())
            .collect();
        for queue in &queues {
            queue.enqueue_batch((0..50u32).map(|n| n.to_be_bytes().to_vec())).await.unwrap();
        }
        let claims_before = claim_calls(&servers[0]).await;
        let options = options().concurrency(40);
        let mut worker = Worker::with_options(
            queues[0].clone(),
            |_job: JobContext| async { Ok::<_, HandlerError>(()) },
            options,
        );
        for queue in &queues[1..] {
            worker = worker.queue(queue.clone());
        }
        let (stop, task) = spawn(worker);
        for queue in &queues {
            eventually(&format!("{via}: {}'s 50 jobs are done", queue.name()), || async {
                queue.stats().await.unwrap().done == 50
            })
            .await;
        }
        stop.send(()).unwrap();
        task.await.unwrap();
        if via == "native" {
            let claims = claim_calls(&servers[0]).await - claims_before;
            assert!(claims < 250, "{via}: {claims} claims for 1000 jobs");
        }
    }
}

/// A queue that goes idle while another keeps every slot busy is not
/// hidden by it: a job that arrives on it runs long before the busy
/// queue's backlog is done (its idle wait, five minutes, plays no part).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_queue_does_not_hide_an_arrival_on_an_idle_one() {
    let (_servers, executors) = waiting_executors().await;
    for (via, executor) in executors {
        let busy = Queue::new(executor.clone(), &unique_queue("busy")).unwrap();
        let quiet = Queue::new(executor.clone(), &unique_queue("quiet")).unwrap();
        // 400 jobs of 25 ms at concurrency 4: 2.5 s of work at the least.
        busy.enqueue_batch((0..400u32).map(|_| b"slow".to_vec())).await.unwrap();
        let options = options().concurrency(4).idle_wait(Duration::from_secs(300));
        let handler = |job: JobContext| async move {
            if job.payload == b"slow" {
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            Ok::<_, HandlerError>(())
        };
        let (stop, task) = spawn(Worker::with_options(busy.clone(), handler, options).queue(quiet.clone()));
        eventually(&format!("{via}: the busy queue is running"), || async {
            busy.stats().await.unwrap().done > 0
        })
        .await;
        let arrival = quiet.enqueue(b"now".to_vec()).await.unwrap();
        eventually(&format!("{via}: the arrival is done"), || async {
            state(&quiet, &arrival).await.map(|s| s.0) == Some(State::Done)
        })
        .await;
        let left = busy.stats().await.unwrap().pending;
        assert!(left > 0, "{via}: the arrival waited for the whole backlog");
        stop.send(()).unwrap();
        task.await.unwrap();
    }
}

/// A worker of thirty idle queues reads, each period, what their upkeep
/// has due, and calls nothing that would find nothing: no transition runs
/// while they stay idle (it made seven calls a queue a period). A delayed
/// job on one of them is still promoted when due, and run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_queues_cost_their_upkeep_one_read() {
    let (servers, executors) = waiting_executors().await;
    for ((via, executor), server) in executors.into_iter().zip([&servers[0], &servers[1]]) {
        let queues: Vec<Queue> = (0..30)
            .map(|n| Queue::new(executor.clone(), &unique_queue(&format!("idle{n}"))).unwrap())
            .collect();
        let options = options().idle_wait(Duration::from_secs(300));
        let handler = |_job: JobContext| async { Ok::<_, HandlerError>(()) };
        let mut worker = Worker::with_options(queues[0].clone(), handler, options);
        for queue in &queues[1..] {
            worker = worker.queue(queue.clone());
        }
        let (stop, task) = spawn(worker);
        // The first period, its claims and its first waits: then quiet.
        let first = queues[3].enqueue(b"first".to_vec()).await.unwrap();
        eventually(&format!("{via}: the first job is done"), || async {
            state(&queues[3], &first).await.map(|s| s.0) == Some(State::Done)
        })
        .await;
        let before = transitions_run(server).await;
        // Twenty upkeep periods of 50 ms.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let idle = transitions_run(server).await - before;
        assert!(idle < 30, "{via}: {idle} transitions in 20 idle periods of 30 queues");
        let delayed = EnqueueOptions::default().delay(Duration::from_millis(300));
        let later = queues[17].enqueue_with(b"later".to_vec(), delayed).await.unwrap().id;
        assert_eq!(state(&queues[17], &later).await.map(|s| s.0), Some(State::Delayed), "{via}");
        eventually(&format!("{via}: the delayed job is done"), || async {
            state(&queues[17], &later).await.map(|s| s.0) == Some(State::Done)
        })
        .await;
        stop.send(()).unwrap();
        task.await.unwrap();
    }
}

/// The transitions the server has run: EVALSHA and EVALSHA_RO, and the
/// module's commands (INFO commandstats).
async fn transitions_run(server: &RedisServer) -> u64 {
    let mut conn = server.connection().await;
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(&mut conn).await.unwrap();
    info.lines()
        .filter(|line| line.starts_with("cmdstat_evalsha") || line.starts_with("cmdstat_emq."))
        .filter_map(|line| line.split_once(":calls=")?.1.split(',').next()?.parse::<u64>().ok())
        .sum()
}

/// The native CLAIMs the server has run (INFO commandstats).
async fn claim_calls(server: &RedisServer) -> u64 {
    let mut conn = server.connection().await;
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(&mut conn).await.unwrap();
    info.lines()
        .find_map(|line| line.strip_prefix("cmdstat_emq.claim:calls="))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |calls| calls.parse().unwrap())
}

/// A stopping worker ends its claims' waits for work at once, on every
/// executor that waits, instead of sitting out `idle_wait` (five minutes
/// here); and a job that comes after the stop is left for another worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_worker_does_not_sit_out_its_idle_wait() {
    let (_servers, executors) = waiting_executors().await;
    for (via, executor) in executors {
        let q = Queue::new(executor, &unique_queue("stop")).unwrap();
        let options = options().idle_wait(Duration::from_secs(300));
        let (stop, task) = spawn(Worker::with_options(
            q.clone(),
            |_job: JobContext| async { Ok::<_, HandlerError>(()) },
            options,
        ));
        // A first job proves the worker is up; its claim loop then waits for the next.
        let first = q.enqueue(b"first".to_vec()).await.unwrap();
        eventually("the first job is done", || async {
            state(&q, &first).await.map(|s| s.0) == Some(State::Done)
        })
        .await;
        stop.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(30), task)
            .await
            .unwrap_or_else(|_| panic!("{via}: the worker sat out its idle wait"))
            .unwrap();
        let late = q.enqueue(b"late".to_vec()).await.unwrap();
        assert_eq!(state(&q, &late).await, Some((State::Pending, 0)), "{via}: nobody took it");
    }
}

#[tokio::test]
async fn a_server_that_may_evict_jobs_is_warned_about() {
    for (policy, warned) in [("allkeys-lru", true), ("noeviction", false)] {
        let server = server(&["--maxmemory-policy", policy]);
        for via in BOTH {
            let q = queue(&server, via, &unique_queue("evict")).await;
            let warnings = echomq::executor::server_warnings(&**q.executor()).await;
            assert_eq!(!warnings.is_empty(), warned, "{via:?} {policy}: {warnings:?}");
            assert!(warnings.iter().all(|w| w.contains(policy)), "{warnings:?}");
        }
    }
}

/// A Lua worker's idle claim waits on the wake-up key across a server
/// restart: an arrival after the restart wakes it, rather than polling.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lua_idle_claim_is_woken_after_a_server_restart() {
    let mut server = RedisServer::start_with(ServerOptions { module: None, ..ServerOptions::default() });
    let q = Queue::new(echomq::connect(&server.client()).await.unwrap(), &unique_queue("wake")).unwrap();
    // A first wait opens the blocking connection, which the restart breaks.
    assert!(q
        .claim_many(Duration::from_secs(60), 1, Some(Duration::from_millis(50)))
        .await
        .unwrap()
        .jobs
        .is_empty());
    server.restart();
    eventually("the queue's connection is back", || async { q.stats().await.is_ok() }).await;
    assert!(q.executor().setup().waits);
    let idle = {
        let q = q.clone();
        tokio::spawn(async move {
            // The broken connection's wait fails once; the next opens a new one.
            loop {
                match q
                    .claim_many(Duration::from_secs(60), 1, Some(Duration::from_secs(30)))
                    .await
                    .map(|leases| leases.jobs)
                {
                    Ok(claimed) if !claimed.is_empty() => return claimed,
                    _ => tokio::time::sleep(Duration::from_millis(10)).await,
                }
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let id = q.enqueue(b"x".to_vec()).await.unwrap();
    let claimed = tokio::time::timeout(Duration::from_secs(15), idle)
        .await
        .expect("an arrival wakes the idle claim")
        .unwrap();
    assert_eq!(claimed.iter().map(|job| &job.id).collect::<Vec<_>>(), [&id]);
}

/// No lost wake-up: a job enqueued between a claim that found nothing and
/// the wait on the wake-up key (the moment a worker is most likely to miss
/// it) wakes the wait at once, since the ENQUEUE set the key. And one
/// arrival wakes one of two waiting claims, not both; a claim that took a
/// job while more were pending wakes the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wake_up_key_loses_no_arrival_and_wakes_one_claim_per_arrival() {
    let server = RedisServer::start_with(ServerOptions { module: None, ..ServerOptions::default() });
    let q = Queue::new(echomq::connect(&server.client()).await.unwrap(), &unique_queue("lost")).unwrap();
    let mut admin = server.client().get_multiplexed_async_connection().await.unwrap();
    let wake = format!("emq:{{{}}}:wake", q.name());
    // The empty claim, then the arrival, then the wait: it must not sleep.
    assert!(q.claim_many(Duration::from_secs(60), 1, None).await.unwrap().jobs.is_empty());
    let id = q.enqueue(b"between".to_vec()).await.unwrap();
    let started = Instant::now();
    let popped: Option<(String, String, f64)> =
        redis::cmd("BZPOPMIN").arg(&wake).arg(10).query_async(&mut admin).await.unwrap();
    assert!(popped.is_some() && started.elapsed() < Duration::from_secs(5), "the wait saw the arrival");
    assert_eq!(q.claim_many(Duration::from_secs(60), 1, None).await.unwrap().jobs[0].id, id);

    // Two idle claims; one arrival wakes exactly one of them.
    let wait = |q: Queue| {
        tokio::spawn(async move {
            q.claim_many(Duration::from_secs(60), 1, Some(Duration::from_secs(3)))
                .await
                .map(|leases| leases.jobs)
        })
    };
    let blocked = || async {
        let mut conn = server.client().get_multiplexed_async_connection().await.unwrap();
        let info: String = redis::cmd("INFO").arg("clients").query_async(&mut conn).await.unwrap();
        info.contains("blocked_clients:2")
    };
    let (first, second) = (wait(q.clone()), wait(q.clone()));
    eventually("both claims wait on the key", blocked).await;
    q.enqueue(b"one".to_vec()).await.unwrap();
    let (first, second) = (first.await.unwrap().unwrap(), second.await.unwrap().unwrap());
    assert_eq!(first.len() + second.len(), 1, "one arrival, one job claimed");

    // Two jobs at once, two idle claims: the first claim, leaving a job
    // behind, tells the second, which takes it well before its wait ends.
    let (first, second) = (wait(q.clone()), wait(q.clone()));
    eventually("both claims wait on the key", blocked).await;
    let started = Instant::now();
    q.enqueue_batch(vec![b"a".to_vec(), b"b".to_vec()]).await.unwrap();
    let (first, second) = (first.await.unwrap().unwrap(), second.await.unwrap().unwrap());
    assert_eq!((first.len(), second.len()), (1, 1), "each claim took one");
    assert!(started.elapsed() < Duration::from_secs(2), "the second was woken, not timed out");
}

/// A claim that took only ids without a record (a damaged queue: the
/// records deleted by hand) answers `[]` and sets no wake-up while real jobs
/// wait behind them. The Lua claim that waits claims again while pending
/// shrinks instead of sleeping on the wake-up key: it takes the job, long
/// before its wait would have ended with nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lua_waiting_claim_goes_past_ids_without_records() {
    let server = RedisServer::start_with(ServerOptions { module: None, ..ServerOptions::default() });
    let q = Queue::new(echomq::connect(&server.client()).await.unwrap(), &unique_queue("orphans")).unwrap();
    assert!(q.executor().setup().waits);
    let mut admin = server.client().get_multiplexed_async_connection().await.unwrap();
    let pending = format!("emq:{{{}}}:pending", q.name());
    let orphans: Vec<String> = (1..=3).map(|n| format!("JOB_{n:026}")).collect();
    for orphan in &orphans {
        let _: () =
            redis::cmd("ZADD").arg(&pending).arg(0).arg(orphan).query_async(&mut admin).await.unwrap();
    }
    let id = q.enqueue(b"behind".to_vec()).await.unwrap();
    // One job a claim: the first takes an orphan, the wake-up the ENQUEUE set
    // brings a second that takes another, and then nothing would wake a third.
    let claimed = q.claim_many(Duration::from_secs(60), 1, Some(Duration::from_secs(20))).await.unwrap().jobs;
    assert_eq!(claimed.iter().map(|job| &job.id).collect::<Vec<_>>(), [&id]);
    let left: u64 = redis::cmd("ZCARD").arg(&pending).query_async(&mut admin).await.unwrap();
    assert_eq!(left, 0, "the orphans were dropped from pending on the way");
}

#[tokio::test]
async fn connect_picks_the_executor_that_can_wait() {
    // The module: native, whose claims block on the server.
    let with_module = server(&[]);
    assert!(echomq::connect(&with_module.client()).await.unwrap().setup().waits);
    // No module, no notifications: Lua, which waits on the wake-up key.
    let plain = RedisServer::start();
    let lua = echomq::connect(&plain.client()).await.unwrap();
    assert!(lua.setup().waits);
    // Lua with no connection of its own to wait on polls.
    let conn = plain.client().get_multiplexed_async_connection().await.unwrap();
    assert!(!Lua::new(conn).setup().waits);
    let q = Queue::new(lua, &unique_queue("plain")).unwrap();
    q.enqueue(b"x".to_vec()).await.unwrap();
    assert_eq!(q.stats().await.unwrap().pending, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_last_free_slot_is_used_while_long_jobs_hold_the_rest() {
    for via in BOTH {
        let server = server(&[]);
        let q = queue(&server, via, &unique_queue("slots")).await;
        // Eight slots: seven long jobs, then one more must still start (claims
        // gather free slots for a moment under load, never wait for many).
        let running = Arc::new(AtomicU64::new(0));
        let options = options().concurrency(8).grace(Duration::from_millis(100));
        let worker = Worker::with_options(q.clone(), counting(running.clone()), options);
        let (stop, task) = spawn(worker);
        for _ in 0..7 {
            q.enqueue(b"stall".to_vec()).await.unwrap();
        }
        eventually("seven long jobs run", || async { running.load(Ordering::SeqCst) == 7 }).await;
        let short = q.enqueue(b"short".to_vec()).await.unwrap();
        eventually("the eighth job is done", || async {
            state(&q, &short).await.map(|s| s.0) == Some(State::Done)
        })
        .await;
        stop.send(()).unwrap();
        task.await.unwrap();
    }
}

/// At concurrency 1 a worker fetches each next job with the ack of the last
/// (ACKNEXT): one round trip a job, not a CLAIM and an ACK. Counted on the
/// native module, whose commands the server counts one by one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_concurrency_one_each_ack_fetches_the_next_job() {
    let server = server(&[]);
    let q = queue(&server, Via::Native, &unique_queue("acknext")).await;
    let ids = q.enqueue_batch((0..50u32).map(|n| n.to_be_bytes().to_vec())).await.unwrap();
    let mut admin = server.client().get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query_async(&mut admin).await.unwrap();
    let worker = Worker::with_options(
        q.clone(),
        |_job: JobContext| async { Ok::<_, HandlerError>(()) },
        options().concurrency(1),
    );
    let (stop, task) = spawn(worker);
    let done = || async { q.stats().await.unwrap().done == ids.len() as u64 };
    eventually("every job is done", done).await;
    stop.send(()).unwrap();
    task.await.unwrap();
    let stats: String = redis::cmd("INFO").arg("commandstats").query_async(&mut admin).await.unwrap();
    let calls = |command: &str| {
        let line = stats.lines().find(|line| line.starts_with(&format!("cmdstat_{command}:")));
        line.and_then(|line| line.split("calls=").nth(1)?.split(',').next()?.parse::<u64>().ok()).unwrap_or(0)
    };
    // The first job came by CLAIM; each of the other 49 with its predecessor's ack.
    assert!(calls("emq.acknext") >= 49, "{stats}");
    assert!(calls("emq.ack") <= 1, "{stats}");
}

/// A worker at concurrency 1 stopped while each ack claims the next job
/// leaves no job active: the job an ACKNEXT claimed as the stop came is run
/// or given back, never left to sit out its lease. Stopped at several points
/// of a stream, on both executors; a last worker finishes every job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_stopped_between_acks_leaves_no_job_active() {
    for via in BOTH {
        let server = server(&[]);
        let q = queue(&server, via, &unique_queue("acknext-stop")).await;
        let total = 300u64;
        q.enqueue_batch((0..total).map(|n| n.to_be_bytes().to_vec())).await.unwrap();
        let handler = |_job: JobContext| async {
            tokio::time::sleep(Duration::from_millis(1)).await;
            Ok::<_, HandlerError>(())
        };
        for stop_after in [1, 5, 9, 20, 40, 60, 90, 130] {
            let worker = Worker::with_options(q.clone(), handler, options().concurrency(1));
            let (stop, task) = spawn(worker);
            eventually("the worker gets going", || async { q.stats().await.unwrap().done >= stop_after })
                .await;
            stop.send(()).unwrap();
            task.await.unwrap();
            let stats = q.stats().await.unwrap();
            assert_eq!(stats.active, 0, "{via:?}, stopped after {stop_after} jobs: {stats:?}");
            assert_eq!(stats.done + stats.pending, total, "{via:?}, stopped after {stop_after}: {stats:?}");
        }
        let (stop, task) = spawn(Worker::with_options(q.clone(), handler, options().concurrency(1)));
        eventually("every job is done", || async { q.stats().await.unwrap().done == total }).await;
        stop.send(()).unwrap();
        task.await.unwrap();
    }
}
/// Jobs that finish together are acked together: the acks that gather while
/// one is on its way go as one ACKMANY, each job still getting its own
/// outcome. Counted on the native module, whose commands the server counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_that_finish_together_are_acked_in_one_call() {
    let server = server(&[]);
    let q = queue(&server, Via::Native, &unique_queue("ackmany")).await;
    let calls = calls_of_twenty_jobs_finishing_together(&server, &q, &q).await;
    let count = |command: &str| calls.get(command).copied().unwrap_or(0);
    assert!(count("emq.ackmany") >= 1, "twenty jobs ended at once, each acked alone: {calls:?}");
    assert!(count("emq.ack") + count("emq.acknext") < 20, "{calls:?}");
}

/// A worker whose writes a replica must confirm, with none there to: its
/// claims wait out the replica's time-out and still hand out their jobs,
/// so it runs them; an ACKMANY that no replica
/// confirmed was applied, and is not sent again job by job (each would wait
/// as long for the same replicas, and be refused).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_whose_writes_no_replica_confirms_runs_and_acks_each_job_once() {
    let server = server(&[]);
    let name = unique_queue("unconfirmed");
    let plain = queue(&server, Via::Native, &name).await;
    let client = server.client();
    let conn = ConnectionManager::new_with_config(client, ConnectionManagerConfig::new()).await.unwrap();
    let replication = Replication { replicas: 1, timeout: Duration::from_millis(100) };
    let confirmed = Queue::new(Arc::new(Native::new(conn).with_replication(replication)), &name).unwrap();
    let calls = calls_of_twenty_jobs_finishing_together(&server, &plain, &confirmed).await;
    let count = |command: &str| calls.get(command).copied().unwrap_or(0);
    assert!(count("emq.ackmany") >= 1, "{calls:?}");
    assert!(count("emq.ack") + count("emq.acknext") < 20, "acks sent again alone: {calls:?}");
    assert_eq!(count("emq.acknext"), 0, "an unconfirmed ACKNEXT would strand its claims: {calls:?}");
    assert_eq!(plain.stats().await.unwrap().active, 0);
}

/// Twenty jobs enqueued on `producer`, run by a worker of concurrency 20 on
/// `queue` and held until all twenty run, then let finish together: the
/// calls each command made inside the server meanwhile.
async fn calls_of_twenty_jobs_finishing_together(
    server: &RedisServer,
    producer: &Queue,
    queue: &Queue,
) -> BTreeMap<String, u64> {
    let ids = producer.enqueue_batch((0..20u32).map(|n| n.to_be_bytes().to_vec())).await.unwrap();
    let mut admin = server.client().get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query_async(&mut admin).await.unwrap();
    let (running, go) = (Arc::new(AtomicU64::new(0)), Arc::new(tokio::sync::Semaphore::new(0)));
    let handler = {
        let (running, go) = (running.clone(), go.clone());
        move |_job: JobContext| {
            running.fetch_add(1, Ordering::SeqCst);
            let go = go.clone();
            async move {
                go.acquire().await.expect("the gate stays open").forget();
                Ok::<_, HandlerError>(())
            }
        }
    };
    let worker = Worker::with_options(queue.clone(), handler, options().concurrency(20));
    let (stop, task) = spawn(worker);
    eventually("every job runs", || async { running.load(Ordering::SeqCst) == 20 }).await;
    go.add_permits(20);
    let done = || async { producer.stats().await.unwrap().done == ids.len() as u64 };
    eventually("every job is done", done).await;
    stop.send(()).unwrap();
    task.await.unwrap();
    let stats: String = redis::cmd("INFO").arg("commandstats").query_async(&mut admin).await.unwrap();
    calls_by_command(&stats)
}

/// The calls one command made inside the server, by name, from `INFO commandstats`.
fn calls_by_command(stats: &str) -> std::collections::BTreeMap<String, u64> {
    stats
        .lines()
        .filter_map(|line| {
            let (command, rest) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            Some((command.to_owned(), rest.split("calls=").nth(1)?.split(',').next()?.parse().ok()?))
        })
        .collect()
}

/// A Lua ACKNEXT, the call a worker at concurrency 1 makes for every job,
/// asks the type of each of its keys once but the acked record's (HMGET
/// reads it, and its error names the type), though several includes check
/// the same keys: the scripts' cost is their calls into Redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lua_acknext_asks_each_keys_type_once() {
    let server = server(&[]);
    let q = queue(&server, Via::Lua, &unique_queue("types")).await;
    q.enqueue_batch([b"first".to_vec(), b"second".to_vec(), b"third".to_vec()]).await.unwrap();
    let lease = Duration::from_secs(60);
    let first = q.claim(lease).await.unwrap().expect("a job");
    // Once before counting: the script is loaded then.
    let second = first.ack_and_claim(None, lease, 1).await.unwrap().jobs.pop().expect("a job");
    let mut admin = server.client().get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query_async(&mut admin).await.unwrap();
    let third = second.ack_and_claim(None, lease, 1).await.unwrap();
    assert_eq!(third.jobs.len(), 1);
    let stats: String = redis::cmd("INFO").arg("commandstats").query_async(&mut admin).await.unwrap();
    let calls = calls_by_command(&stats);
    assert_eq!(calls.get("evalsha"), Some(&1), "{stats}");
    // Ten: pending, config and parents are checked by the reads that need
    // them anyway (ZRANGE, HMGET, the link's HGET), the others by TYPE, each
    // once; the tenth is `<q>group`'s (1.7: whether the queue has groups).
    assert_eq!(calls.get("type"), Some(&10), "{stats}");
    assert_eq!(calls.get("time"), Some(&1), "one moment a call: {stats}");
    // 26 today: 21, two for the counters (protocol 1.4: one HMGET,
    // which is also its key's type check, and one HSET of the total, the
    // minute's and the hour's counts, each one more than it read), and two
    // for the flows' keys (protocol 1.6: notices' TYPE, and the link's HGET,
    // which is also parents' type check), and one for the groups (1.7:
    // `<q>group`'s TYPE); 28 when the clock, the settings and pending's
    // length were each read twice; 34 when each include asked its keys'
    // types again: a call more is a cost every job pays.
    let outside = ["evalsha", "config|resetstat"];
    let inside: u64 =
        calls.iter().filter(|(command, _)| !outside.contains(&command.as_str())).map(|(_, n)| n).sum();
    assert!(inside <= 26, "{inside} calls inside one ACKNEXT: {calls:?}");
}
