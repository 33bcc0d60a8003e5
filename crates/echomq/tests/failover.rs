//! A failover under a running worker, on Lua and on Native: a master with a
//! replica (the module loaded on both), clients that reach the master through
//! a loopback TCP proxy standing in for a virtual IP, and the master killed
//! mid-flow. The replica is promoted with `REPLICAOF NO ONE`, the proxy
//! repointed, a new replica joins, and the worker carries on. The executors ask one replica to
//! confirm every write (`Replication`, WAIT), so no acknowledged enqueue is
//! lost in the failover and every job is done on the new master.

use echomq::Upkeep;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use echomq::worker::{HandlerError, JobContext, Worker, WorkerOptions};
use echomq::{EnqueueOptions, Executor, JobId, Lua, Native, Queue, Replication, RetryPolicy};
use echomq_test_support::{eventually, module_path, unique_queue, RedisServer, ServerOptions};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

#[derive(Clone, Copy, Debug)]
enum Via {
    Lua,
    Native,
}

/// Jobs in the queue before the worker starts, and jobs enqueued while it runs.
const BACKLOG: usize = 300;
const DURING: usize = 300;
/// How long one enqueue may keep failing across the failover.
const DEADLINE: Duration = Duration::from_secs(60);

/// A loopback TCP proxy to one server at a time: what clients of a failover
/// reach (a virtual IP, a DNS name, a Sentinel-aware load balancer).
/// Repointing it cuts every connection it carries, as a moved IP would.
struct Proxy {
    port: u16,
    target: Arc<AtomicU16>,
    carried: Arc<Mutex<Vec<JoinHandle<()>>>>,
    accepting: JoinHandle<()>,
}

impl Proxy {
    async fn start(target: u16) -> Proxy {
        let listener = TcpListener::bind(("127.0.0.1", echomq_test_support::free_port())).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let target = Arc::new(AtomicU16::new(target));
        let carried: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let accepting = {
            let (target, carried) = (target.clone(), carried.clone());
            tokio::spawn(async move {
                while let Ok((mut inbound, _)) = listener.accept().await {
                    let to = target.load(Ordering::SeqCst);
                    let carry = tokio::spawn(async move {
                        if let Ok(mut outbound) = TcpStream::connect(("127.0.0.1", to)).await {
                            let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        }
                    });
                    carried.lock().unwrap().push(carry);
                }
            })
        };
        Proxy { port, target, carried, accepting }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Send new connections to `port`, and cut the ones to the old server.
    fn repoint(&self, port: u16) {
        self.target.store(port, Ordering::SeqCst);
        for carry in self.carried.lock().unwrap().drain(..) {
            carry.abort();
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accepting.abort();
        self.repoint(0);
    }
}

fn info(server: &RedisServer, section: &str) -> String {
    let mut conn = server.client().get_connection().unwrap();
    redis::cmd("INFO").arg(section).query(&mut conn).unwrap()
}

/// A queue over reconnecting connections through `url`, whose every write one
/// replica must confirm within `wait`.
async fn queue(url: &str, via: Via, name: &str, wait: Duration) -> Queue {
    let client = redis::Client::open(url).unwrap();
    let config = ConnectionManagerConfig::new().set_response_timeout(None);
    let conn = ConnectionManager::new_with_config(client.clone(), config.clone()).await.unwrap();
    let replication = Replication { replicas: 1, timeout: wait };
    let executor: Arc<dyn Executor> = match via {
        Via::Lua => Arc::new(Lua::new(conn).with_replication(replication)),
        Via::Native => {
            let blocking = ConnectionManager::new_with_config(client, config).await.unwrap();
            Arc::new(Native::new(conn).with_blocking_connection(blocking).with_replication(replication))
        }
    };
    Queue::new(executor, name).unwrap()
}

/// Enqueue `id` until a clean answer: through a failover a call may fail, or
/// apply without a replica's word; enqueue is idempotent by id.
async fn enqueue_surely(queue: &Queue, id: JobId) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let options = EnqueueOptions::default().id(id.clone());
        match queue.enqueue_with(b"during".to_vec(), options).await {
            Ok(_) => return,
            Err(err) => {
                assert!(err.code().is_none(), "enqueue refused: {err}");
                assert!(Instant::now() < deadline, "enqueue of {id} never went through: {err}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_carries_on_through_a_failover_and_loses_no_acknowledged_job() {
    // A master starts a replica's full sync at once, not after the 5 s it
    // waits by default for more replicas to join the same transfer.
    let at_once = || vec!["--repl-diskless-sync-delay".to_owned(), "0".to_owned()];
    for via in [Via::Lua, Via::Native] {
        let master = RedisServer::start_with(ServerOptions {
            module: Some(module_path()),
            args: at_once(),
            ..ServerOptions::default()
        });
        let mut args = vec!["--replicaof".into(), "127.0.0.1".into(), master.port().to_string()];
        args.extend(at_once());
        let replica = RedisServer::start_with(ServerOptions {
            module: Some(module_path()),
            args,
            ..ServerOptions::default()
        });
        let linked = || async { info(&replica, "replication").contains("master_link_status:up") };
        eventually("the replica is in sync", linked).await;

        let proxy = Proxy::start(master.port()).await;
        let q = queue(&proxy.url(), via, &unique_queue("failover"), Duration::from_secs(2)).await;
        let backlog =
            q.enqueue_batch((0..BACKLOG).map(|i| format!("backlog-{i}").into_bytes())).await.unwrap();
        let mut ids: Vec<JobId> = backlog.into_iter().map(|id| id.unwrap()).collect();

        let runs: Arc<Mutex<HashMap<JobId, usize>>> = Arc::default();
        let seen = runs.clone();
        let handler = move |job: JobContext| {
            *seen.lock().unwrap().entry(job.id).or_default() += 1;
            async { Ok::<_, HandlerError>(()) }
        };
        let options = WorkerOptions::default()
            .concurrency(4)
            .lease(Duration::from_secs(3))
            .idle_wait(Duration::from_millis(100))
            .upkeep(Duration::from_millis(100))
            .retry(RetryPolicy::new().max_attempts(100));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let working = tokio::spawn(Worker::with_options(q.clone(), handler, options).run_until(async move {
            let _ = stopped.await;
        }));

        // A producer goes on enqueuing, one job at a time, across the failover.
        let during: Vec<JobId> = (0..DURING).map(|_| JobId::mint()).collect();
        ids.extend(during.iter().cloned());
        let produced = Arc::new(AtomicUsize::new(0));
        let producer = {
            let (q, produced) = (q.clone(), produced.clone());
            tokio::spawn(async move {
                for id in during {
                    enqueue_surely(&q, id).await;
                    produced.fetch_add(1, Ordering::SeqCst);
                }
            })
        };

        // Mid-flow, the master dies; the replica takes over.
        eventually("the flow is under way", || async {
            runs.lock().unwrap().len() >= BACKLOG / 3 && produced.load(Ordering::SeqCst) >= DURING / 10
        })
        .await;
        let done_by_then = runs.lock().unwrap().len();
        drop(master);
        let mut promoted = replica.client().get_connection().unwrap();
        let _: () = redis::cmd("REPLICAOF").arg("NO").arg("ONE").query(&mut promoted).unwrap();
        proxy.repoint(replica.port());
        // A new replica joins the new master (the old master's machine, back
        // as a replica): until it is in sync, writes apply but are not
        // confirmed, and the producer tries again.
        let args = vec!["--replicaof".into(), "127.0.0.1".into(), replica.port().to_string()];
        let _rejoined = RedisServer::start_with(ServerOptions {
            module: Some(module_path()),
            args,
            ..ServerOptions::default()
        });

        producer.await.unwrap();
        let total = ids.len() as u64;
        eventually("every job is done on the new master", || async {
            q.stats().await.map(|stats| stats.done == total).unwrap_or(false)
        })
        .await;
        let _ = stop.send(());
        working.await.unwrap().unwrap();

        let stats = q.stats().await.unwrap();
        assert_eq!((stats.pending, stats.active, stats.delayed, stats.dead), (0, 0, 0, 0), "{via:?}");
        let runs = runs.lock().unwrap();
        for id in &ids {
            assert!(runs.contains_key(id), "{via:?}: job {id} never ran");
        }
        let again: usize = runs.values().map(|n| n - 1).sum();
        println!(
            "{via:?}: {total} jobs, the master killed after {done_by_then} had run; \
             all done on the promoted replica, {again} runs again"
        );
    }
}

/// With no replica to confirm it, a write still applies on the master, and
/// the caller hears that no replica has it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_no_replica_confirms_is_applied_and_reported() {
    let alone =
        RedisServer::start_with(ServerOptions { module: Some(module_path()), ..ServerOptions::default() });
    for via in [Via::Lua, Via::Native] {
        let name = unique_queue("unconfirmed");
        // Each write waits this long for the replica that is not there.
        let q = queue(&alone.url(), via, &name, Duration::from_millis(200)).await;
        let id = JobId::mint();
        let err = q.enqueue_with(b"x".to_vec(), EnqueueOptions::default().id(id.clone())).await.unwrap_err();
        assert_eq!(err.kind, echomq::ErrorKind::NotReplicated { confirmed: 0, wanted: 1 }, "{via:?}: {err}");
        let plain = Queue::new(
            Arc::new(Lua::new(alone.client().get_multiplexed_async_connection().await.unwrap())),
            &name,
        )
        .unwrap();
        assert!(plain.inspect(&id).await.unwrap().is_some(), "{via:?}: the enqueue applied");
        // A batch answers the same for each of its jobs, after applying every call.
        let outcomes = q.enqueue_batch([b"a".to_vec(), b"b".to_vec()]).await.unwrap();
        for outcome in &outcomes {
            assert!(
                matches!(outcome, Err(echomq::Error { kind: echomq::ErrorKind::NotReplicated { .. }, .. })),
                "{via:?}: {outcome:?}"
            );
        }
        assert_eq!(plain.stats().await.unwrap().pending, 3, "{via:?}");
        // In a pipeline of calls, each answers on its own: a refused job its
        // refusal (it wrote nothing), the applied ones the shortfall.
        let mut conn = alone.client().get_multiplexed_async_connection().await.unwrap();
        let unique = plain.keyspace().role(echomq::keyspace::Role::Unique, None).unwrap();
        let () = redis::cmd("SET").arg(&unique).arg("in the way").query_async(&mut conn).await.unwrap();
        let jobs = [
            (b"applied".to_vec(), EnqueueOptions::default().priority(1)),
            (b"refused".to_vec(), EnqueueOptions::default().unique("k", Duration::from_secs(60))),
        ];
        let outcomes = q.enqueue_many(jobs).await.unwrap();
        assert!(
            matches!(outcomes[0], Err(echomq::Error { kind: echomq::ErrorKind::NotReplicated { .. }, .. })),
            "{via:?}: {outcomes:?}"
        );
        assert_eq!(
            outcomes[1].as_ref().unwrap_err().code(),
            Some(echomq::Code::Type),
            "{via:?}: {outcomes:?}"
        );
        assert_eq!(plain.stats().await.unwrap().pending, 4, "{via:?}: the applied one only");
        let () = redis::cmd("DEL").arg(&unique).query_async(&mut conn).await.unwrap();
        // A refused call wrote nothing: its refusal, not "not replicated".
        let cancelled = plain.keyspace().cancelled();
        let () = redis::cmd("SET").arg(&cancelled).arg("in the way").query_async(&mut conn).await.unwrap();
        let err = q.cancel(&id).await.unwrap_err();
        assert_eq!(err.code(), Some(echomq::Code::Type), "{via:?}: {err}");

        // A batch with a callback is opened over its jobs all the same (they
        // are on the master): the callback comes once they have finished.
        let name = unique_queue("unconfirmed-batch");
        let q = queue(&alone.url(), via, &name, Duration::from_millis(200)).await;
        let plain = Queue::new(
            Arc::new(Lua::new(alone.client().get_multiplexed_async_connection().await.unwrap())),
            &name,
        )
        .unwrap();
        let err = q.enqueue_batch_with_callback([b"c".to_vec()], "called back").await.unwrap_err();
        let Some(batch) = err.batch() else { panic!("{via:?}: {err}") };
        let cause = err.cause();
        assert!(
            cause.is_some_and(|cause| matches!(cause.kind, echomq::ErrorKind::NotReplicated { .. })),
            "{via:?}: {err}"
        );
        assert!(err.to_string().contains("opened, but"), "{via:?}: {err}");
        let Ok([job]) =
            <[_; 1]>::try_from(plain.claim_many(Duration::from_secs(60), 10, None).await.unwrap().jobs)
        else {
            panic!("{via:?}: one job was pending")
        };
        assert_eq!(batch.jobs, std::slice::from_ref(&job.id), "{via:?}: the error names the job");
        job.ack().await.unwrap();
        assert_eq!(Upkeep::of(&plain).settle(1000).await.unwrap().closed, 1, "{via:?}: the batch was open");
        let callback = plain.claim_many(Duration::from_secs(60), 10, None).await.unwrap().jobs;
        assert_eq!(callback.len(), 1, "{via:?}: the callback");
        assert_eq!(callback[0].payload, b"called back", "{via:?}");
        // Acks gathered in one call answer each on their own: an acked job
        // the shortfall, one whose lease was lost its refusal.
        plain.enqueue_batch([b"d".to_vec(), b"e".to_vec()]).await.unwrap();
        let jobs = plain.claim_many(Duration::from_secs(60), 10, None).await.unwrap().jobs;
        assert_eq!(jobs.len(), 2, "{via:?}");
        let stale = echomq::Lease::held(&q, jobs[1].id.clone(), jobs[1].token + 1);
        let first = jobs.into_iter().next().expect("two jobs");
        let outcomes = q.ack_many(vec![first, stale]).await.unwrap();
        assert!(
            matches!(outcomes[0], Err(echomq::Error { kind: echomq::ErrorKind::NotReplicated { .. }, .. })),
            "{via:?}: {outcomes:?}"
        );
        assert!(outcomes[1].as_ref().is_err_and(echomq::Error::is_lost_lease), "{via:?}: {outcomes:?}");
    }
}

/// A claim is confirmed by the replicas before its jobs are handed out, a
/// claim that waited for a job (`EMQ.CLAIM … BLOCK`) too: while the replica
/// lags (stopped), the claim answers only once the WAIT has timed out, and
/// then still answers its job (an error would strand it until its lease ran
/// out). Were it not waited for, a failover could hand the same token to
/// another worker (`tests/cluster_failover.rs` shows that on a Cluster).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_answers_once_the_replicas_confirm_it_or_the_wait_ends() {
    let master = RedisServer::start_with(ServerOptions {
        module: Some(module_path()),
        args: vec!["--repl-diskless-sync-delay".into(), "0".into()],
        ..ServerOptions::default()
    });
    let replica = RedisServer::start_with(ServerOptions {
        module: Some(module_path()),
        args: vec!["--replicaof".into(), "127.0.0.1".into(), master.port().to_string()],
        ..ServerOptions::default()
    });
    let linked = || async { info(&replica, "replication").contains("master_link_status:up") };
    eventually("the replica is in sync", linked).await;
    let wait = Duration::from_millis(300);
    for via in [Via::Lua, Via::Native] {
        let name = unique_queue("claim-confirmed");
        let q = queue(&master.url(), via, &name, wait).await;
        let plain = Queue::new(
            Arc::new(Lua::new(master.client().get_multiplexed_async_connection().await.unwrap())),
            &name,
        )
        .unwrap();
        // A claim that waits for a job in the server (Native's BLOCK; Lua's
        // waits on the wake-up key, then claims as below), woken by an arrival.
        let waiting = matches!(via, Via::Native).then(|| {
            let q = q.clone();
            tokio::spawn(async move {
                let claimed = q.claim_many(Duration::from_secs(60), 1, Some(Duration::from_secs(30))).await;
                (claimed.map(|leases| leases.jobs), Instant::now())
            })
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        let server = info(&replica, "server");
        let pid =
            server.lines().find_map(|l| l.strip_prefix("process_id:")).expect("the replica's pid").trim();
        let lagging = std::process::Command::new("kill").args(["-STOP", pid]).status().unwrap();
        assert!(lagging.success(), "the replica stopped");
        let arrived = Instant::now();
        let first = plain.enqueue(b"first".to_vec()).await.unwrap();
        let second = plain.enqueue(b"second".to_vec()).await.unwrap();
        if let Some(waiting) = waiting {
            let (jobs, answered) = waiting.await.unwrap();
            assert_eq!(jobs.unwrap().iter().map(|job| &job.id).collect::<Vec<_>>(), [&first], "{via:?}");
            let took = answered - arrived;
            assert!(took >= wait, "{via:?}: a waiting claim answered in {took:?}, before the WAIT ended");
        }
        let asked = Instant::now();
        let jobs = q.claim_many(Duration::from_secs(60), 2, None).await.unwrap().jobs;
        let took = asked.elapsed();
        let _ = std::process::Command::new("kill").args(["-CONT", pid]).status().unwrap();
        let want = if matches!(via, Via::Native) { vec![&second] } else { vec![&first, &second] };
        assert_eq!(jobs.iter().map(|job| &job.id).collect::<Vec<_>>(), want, "{via:?}");
        assert!(took >= wait, "{via:?}: answered in {took:?}, before the WAIT ended");
    }
}
