//! The worker registry (PROTOCOL.md §2, `emq:workers`), on Lua, Native and
//! Embedded: a running worker is listed with its queues and the job it runs
//! (with its lease); a graceful stop takes it out; a killed one's entry
//! expires, and the reader then drops it from the set; a key of the wrong
//! type is a clear error to the reader and no trouble to a worker.

mod common;

use std::sync::Arc;
use std::time::Duration;

use echomq::keyspace::WORKERS;
use echomq::worker::{HandlerError, JobContext, Worker, WorkerOptions};
use echomq::{workers, ErrorKind, Executor, Queue, WorkerInfo};
use echomq_test_support::{eventually, now_ms, unique_queue, RedisServer};
use tokio::sync::Semaphore;

/// Short beats, so that a killed worker's entry expires within a test.
fn options() -> WorkerOptions {
    WorkerOptions::default()
        .concurrency(3)
        .registry_beat(Duration::from_millis(100))
        .idle_wait(Duration::from_millis(50))
        .grace(Duration::from_secs(5))
}

/// A worker on `queue` whose jobs wait for a permit of `release`.
fn blocked_worker(queue: Queue, release: &Arc<Semaphore>) -> Worker {
    let release = release.clone();
    let handler = move |_job: JobContext| {
        let release = release.clone();
        async move {
            release.acquire().await.expect("never closed").forget();
            Ok::<_, HandlerError>(())
        }
    };
    Worker::with_options(queue, handler, options())
}

async fn listed(executor: &dyn Executor, id: &str) -> Option<WorkerInfo> {
    workers(executor).await.unwrap().into_iter().find(|worker| worker.id == id)
}

async fn noted(executor: &dyn Executor, id: &str) -> bool {
    let members = echomq::executor::Command::ZRange {
        key: echomq::keyspace::WORKERS.into(),
        count: 10_000,
        latest: true,
    };
    let members = executor.plain().one(members).await.unwrap().scored().unwrap();
    members.iter().any(|(member, _)| member == id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_is_listed_while_it_runs_and_gone_after() {
    let (_server, executors) = common::three_executors().await;
    for (via, executor) in executors {
        let name = unique_queue("registered");
        let queue = Queue::new(executor.clone(), &name).unwrap();
        let release = Arc::new(Semaphore::new(0));
        let worker = blocked_worker(queue.clone(), &release);
        let id = worker.id().to_owned();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(worker.run_until(async move {
            let _ = stopped.await;
        }));
        let job = queue.enqueue(b"x".to_vec()).await.unwrap();
        eventually("the worker is listed with its running job", || async {
            listed(&*executor, &id).await.is_some_and(|me| me.running.len() == 1)
        })
        .await;
        let me = listed(&*executor, &id).await.unwrap();
        let now = now_ms();
        assert!(!me.host.is_empty() && id.starts_with(&format!("{}:{}:", me.host, me.pid)), "{via}: {me:?}");
        assert_eq!(me.pid, std::process::id(), "{via}");
        assert_eq!(me.queues, std::slice::from_ref(&name), "{via}");
        assert!(me.works(&name), "{via}");
        assert_eq!(me.concurrency, 3, "{via}");
        assert_eq!(me.version, format!("echomq-rust {}", env!("CARGO_PKG_VERSION")), "{via}");
        assert_eq!(me.protocol, echomq::PROTOCOL.to_string(), "{via}");
        assert_eq!(me.ttl, Duration::from_millis(300), "{via}: three beats");
        assert!(me.started <= me.beat && me.beat <= now, "{via}: {me:?}");
        let running = &me.running[0];
        assert_eq!((running.queue.as_str(), &running.id, running.token), (name.as_str(), &job, 1), "{via}");
        let lease = options().lease.as_millis() as u64;
        assert!(running.lease_until > now && running.lease_until <= now + lease, "{via}: {running:?}");

        // A graceful stop deletes its entry and takes it out of the set.
        release.add_permits(1);
        let _ = stop.send(());
        running_to_end(task).await;
        assert!(listed(&*executor, &id).await.is_none(), "{via}: gone after a graceful stop");
        assert!(!noted(&*executor, &id).await, "{via}: out of {WORKERS}");
        assert_eq!(queue.stats().await.unwrap().done, 1, "{via}: its job was done");
    }
}

async fn running_to_end(task: tokio::task::JoinHandle<echomq::Result<()>>) {
    let ran = tokio::time::timeout(Duration::from_secs(30), task).await.expect("the worker stops");
    ran.unwrap().expect("the worker runs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_workers_entry_expires_and_the_reader_drops_it() {
    let (_server, executors) = common::three_executors().await;
    for (via, executor) in executors {
        let queue = Queue::new(executor.clone(), &unique_queue("killed")).unwrap();
        let worker = blocked_worker(queue.clone(), &Arc::new(Semaphore::new(0)));
        let id = worker.id().to_owned();
        let task = tokio::spawn(worker.run_until(std::future::pending()));
        queue.enqueue(b"x".to_vec()).await.unwrap();
        eventually("the worker is listed", || async {
            listed(&*executor, &id).await.is_some_and(|me| me.running.len() == 1)
        })
        .await;
        // Killed: no graceful stop, its entry left to its TTL.
        task.abort();
        let _ = task.await;
        assert!(noted(&*executor, &id).await, "{via}: still in the set until a reader finds it gone");
        eventually("the reader drops the killed worker from the set", || async {
            let listed = workers(&*executor).await.unwrap();
            !listed.iter().any(|worker| worker.id == id) && !noted(&*executor, &id).await
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_of_the_wrong_type_fails_the_reader_not_the_worker() {
    let server = RedisServer::start_with(echomq_test_support::ServerOptions {
        module: Some(echomq_test_support::module_path()),
        ..echomq_test_support::ServerOptions::default()
    });
    let conn = server.connection().await;
    let embedded = echomq::Embedded::new();
    embedded.store().put_other(WORKERS.as_bytes(), "string");
    let executors: [(&str, Arc<dyn Executor>); 3] = [
        ("lua", Arc::new(echomq::Lua::new(conn.clone()))),
        ("native", Arc::new(echomq::Native::new(conn.clone()))),
        ("embedded", Arc::new(embedded)),
    ];
    let _: () =
        redis::cmd("SET").arg(WORKERS).arg("not a sorted set").query_async(&mut conn.clone()).await.unwrap();
    for (via, executor) in executors {
        let err = workers(&*executor).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::Server, "{via}: {err}");
        let said = err.to_string();
        assert!(said.contains(WORKERS) && said.contains("WRONGTYPE"), "{via}: {said}");

        // A worker beside it runs its jobs all the same.
        let queue = Queue::new(executor.clone(), &unique_queue("wrongtype")).unwrap();
        let release = Arc::new(Semaphore::new(1));
        let worker = blocked_worker(queue.clone(), &release);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(worker.run_until(async move {
            let _ = stopped.await;
        }));
        queue.enqueue(b"x".to_vec()).await.unwrap();
        eventually("the worker did its job", || async { queue.stats().await.unwrap().done == 1 }).await;
        let _ = stop.send(());
        running_to_end(task).await;
    }
    // Nothing overwrote the key of the wrong type.
    let kept: String = redis::cmd("GET").arg(WORKERS).query_async(&mut conn.clone()).await.unwrap();
    assert_eq!(kept, "not a sorted set");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_registration_is_a_typed_error_naming_it() {
    let server = RedisServer::start();
    let mut conn = server.connection().await;
    let executor = echomq::Lua::new(conn.clone());
    let _: () = redis::cmd("HSET")
        .arg(echomq::keyspace::worker("bad"))
        .arg("pid")
        .arg("not a number")
        .query_async(&mut conn)
        .await
        .unwrap();
    let _: () =
        redis::cmd("ZADD").arg(WORKERS).arg(now_ms()).arg("bad").query_async(&mut conn).await.unwrap();
    let err = workers(&executor).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Malformed, "{err}");
    assert!(err.to_string().contains("emq:worker:bad"), "{err}");
}

/// On a Redis Cluster the registry's two keys live in other slots than the
/// queue's, and than each other: a worker is listed and leaves all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_on_a_cluster_is_listed_and_leaves() {
    let cluster = echomq_test_support::RedisCluster::start(3, Some(echomq_test_support::module_path()));
    let client = redis::cluster::ClusterClient::new(cluster.urls()).unwrap();
    let executors: [(&str, Arc<dyn Executor>); 2] = [
        ("lua", Arc::new(echomq::Lua::new(client.get_async_connection().await.unwrap()))),
        ("native", echomq::connect_cluster(&client).await.unwrap()),
    ];
    for (via, executor) in executors {
        let queue = Queue::new(executor.clone(), &unique_queue("clustered")).unwrap();
        let release = Arc::new(Semaphore::new(0));
        let worker = blocked_worker(queue.clone(), &release);
        let id = worker.id().to_owned();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(worker.run_until(async move {
            let _ = stopped.await;
        }));
        let job = queue.enqueue(b"x".to_vec()).await.unwrap();
        eventually("the worker is listed with its job", || async {
            listed(&*executor, &id).await.is_some_and(|me| me.running.iter().any(|running| running.id == job))
        })
        .await;
        release.add_permits(1);
        let _ = stop.send(());
        running_to_end(task).await;
        assert!(listed(&*executor, &id).await.is_none(), "{via}: gone after a graceful stop");
        assert!(!noted(&*executor, &id).await, "{via}: out of {WORKERS}");
    }
}

/// The read-only reader (`emq dashboard --read-only`) lists what the
/// tidying one lists but writes nothing: a dead member stays in the set
/// until a tidying reader takes it out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_read_only_reader_leaves_a_dead_member_in_the_set() {
    let server = RedisServer::start();
    let mut conn = server.connection().await;
    let executors: [(&str, Arc<dyn Executor>); 2] = [
        ("lua", Arc::new(echomq::Lua::new(conn.clone()))),
        ("native", Arc::new(echomq::Native::new(conn.clone()))),
    ];
    for (via, executor) in executors {
        // Dead: in the set, its hash gone (a killed worker's TTL ran out).
        let dead = format!("box:1:{via}-dead");
        let _: () =
            redis::cmd("ZADD").arg(WORKERS).arg(now_ms()).arg(&dead).query_async(&mut conn).await.unwrap();
        let listed = echomq::workers_read_only(&*executor).await.unwrap();
        assert!(!listed.iter().any(|worker| worker.id == dead), "{via}: a dead member is not listed");
        assert!(noted(&*executor, &dead).await, "{via}: the read-only reader left it in {WORKERS}");
        let listed = workers(&*executor).await.unwrap();
        assert!(!listed.iter().any(|worker| worker.id == dead), "{via}");
        assert!(!noted(&*executor, &dead).await, "{via}: the tidying reader took it out");
    }
}
