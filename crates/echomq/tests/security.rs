//! SECURITY.md, proven: the ACL recipes for a worker, a producer and an
//! operator work through `echomq::connect` on Lua and on Native, and refuse
//! what they should; a worker runs over `rediss://` against a TLS-only
//! server; and no password shows in an error or a tracing log.
//!
//! The rules here are the ones SECURITY.md prints; a test checks that the
//! page still holds each of them word for word.

#[path = "security/logs.rs"]
mod logs;
#[path = "security/tls.rs"]
mod tls;

use echomq::Upkeep;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use echomq::worker::{HandlerError, JobContext, Worker, WorkerOptions};
use echomq::{Executor, JobId, Queue, RetryPolicy, State};
use echomq_test_support::{module_path, unique_queue, RedisServer, ServerOptions};
use redis::aio::MultiplexedConnection;

/// A worker on the Lua executor: EchoMQ's keys, the scripts, and the
/// commands the scripts run (Redis checks those against the caller too).
pub const WORKER_LUA: &str = "~emq:* resetchannels -@all +command|info +evalsha +evalsha_ro +script|load \
     +time +type +hget +hmget +hgetall +hset +hdel +del +zadd +zrem +zcard +zcount +zrange +zrangebyscore +zscore +exists \
     +xadd +bzpopmin +hincrby +pexpire +xlen +xread +xdel";
/// A worker on the native module: its keys and the `EMQ.*` commands a worker sends.
pub const WORKER_NATIVE: &str = "~emq:* resetchannels -@all +command|info +emq.version +emq.enqueue +emq.enqueuemany +emq.claim \
     +emq.ack +emq.acknext +emq.ackmany +emq.fail +emq.defer +emq.extend +emq.release +emq.reap +emq.promote +emq.inspect +emq.stats +emq.trim \
     +emq.progress +emq.schedules +emq.fire +emq.settle +emq.resolve +emq.children +emq.permit +emq.renew +xlen +xread +xdel \
     (~emq:queues ~emq:workers ~emq:worker:* +zadd +zrem +hset +pexpire +del)";
/// A producer on Lua: only the keys ENQUEUE touches (its event log, and the
/// config that holds the log's length, too), and its commands.
pub const PRODUCER_LUA: &str = "~emq:*:job:* ~emq:*:pending ~emq:*:delayed ~emq:*:priority ~emq:*:policy ~emq:*:unique ~emq:*:unique_until \
     ~emq:*:events ~emq:*:config ~emq:*:headers ~emq:*:batches ~emq:*:batch_jobs ~emq:*:batch_open ~emq:*:wake ~emq:*:counts ~emq:queues \
     ~emq:*:parents ~emq:*:children:* ~emq:*:waiting ~emq:*:group ~emq:*:groups ~emq:*:gnames ~emq:*:ready ~emq:*:gwait \
     ~emq:*:gpending:* ~emq:*:gactive:* ~emq:*:grate:* \
     resetchannels -@all +command|info +evalsha +script|load +time +type +hset +zadd +hget +zscore +zrangebyscore +hdel +zrem \
     +xadd +hexists +hmget +hincrby +zcard +zcount +zrange";
/// A producer on the native module.
pub const PRODUCER_NATIVE: &str = "~emq:*:job:* ~emq:*:pending ~emq:*:delayed ~emq:*:priority ~emq:*:policy ~emq:*:unique ~emq:*:unique_until \
     ~emq:*:events ~emq:*:config ~emq:*:headers ~emq:*:batches ~emq:*:batch_jobs ~emq:*:batch_open ~emq:*:wake ~emq:*:counts \
     ~emq:*:parents ~emq:*:children:* ~emq:*:waiting \
     resetchannels -@all +command|info +emq.version +emq.enqueue +emq.enqueuemany +emq.batch +emq.flow (~emq:queues +zadd)";
/// An operator (the `emq` CLI, its dashboard) on Lua: every transition, and
/// SCAN to find the queues.
pub const OPERATOR_LUA: &str =
    "~emq:* resetchannels -@all +command|info +scan +evalsha +evalsha_ro +script|load \
     +time +type +hget +hmget +hgetall +hset +hdel +del +zadd +zrem +zcard +zcount +zrange +zrangebyscore \
     +zscore +exists +xadd +xread +xrevrange +hexists +hincrby +zremrangebyscore +pexpire +xlen +xdel +hsetnx";
/// An operator on the native module: every `EMQ.*` command, and the reads the
/// CLI and dashboard send themselves.
pub const OPERATOR_NATIVE: &str = "~emq:* resetchannels -@all +command|info +scan +zcard +zrange +hmget +xread +xrevrange +emq.version \
     +emq.enqueue +emq.enqueuemany +emq.claim +emq.ack +emq.acknext +emq.ackmany +emq.fail +emq.defer +emq.extend +emq.release +emq.reap +emq.promote \
     +emq.purge +emq.cancel +emq.retry +emq.inspect +emq.stats +emq.counts +emq.config +emq.trim +emq.drain +emq.remove +emq.obliterate +emq.progress +emq.schedule \
     +emq.unschedule +emq.schedules +emq.fire +emq.batch +emq.settle +emq.flow +emq.resolve +emq.children +emq.group +emq.groups \
     +emq.permit +emq.renew +xlen +xdel \
     (~emq:queues ~emq:workers ~emq:worker:* +zadd +zrem +zremrangebyscore +hgetall +hset +pexpire +del)";

/// A monitor on Lua: read-only keys, INSPECT and STATS (EVALSHA_RO), and the
/// reads the CLI and dashboard send themselves. It can change nothing.
pub const MONITOR_LUA: &str = "%R~emq:* resetchannels -@all +command|info +scan +zrange +evalsha_ro \
     +script|load +time +type +hget +hmget +hgetall +zcard +xread +xrevrange";
/// A monitor on the native module, whose INSPECT and STATS declare their keys read-only.
pub const MONITOR_NATIVE: &str =
    "%R~emq:* resetchannels -@all +command|info +scan +zrange +hmget +xread +xrevrange +emq.version +emq.inspect +emq.stats +emq.counts +emq.children +hgetall";

/// Optional, for a native worker: end its blocked claims at once when it
/// stops (CLIENT UNBLOCK of its own connections) instead of after `idle_wait`.
pub const PROMPT_STOP: &str = "+client|id +client|unblock";
/// Optional for a native worker: claim for several queues in turns, waiting
/// for them all with one `BZPOPMIN` on their wake-up keys, and read what
/// the upkeep has due before calling it.
pub const TURNS_NATIVE: &str = "+bzpopmin +time +zrange +exists +zcard";

/// Optional, for a native worker of a partitioned queue: its definition
/// read, and its exact limits' permits given back.
pub const PARTITIONED_NATIVE: &str = "+hgetall +hget +zrem";

/// Optional, for a worker of a partitioned queue (Lua or native): each
/// partition kept by one worker at a time, under its upkeep lease; this
/// selector lets the worker write those keys and no other.
pub const UPKEEP_LEASE: &str = "(~emq:{*}:upkeep +set +get +pexpire +del)";

/// Optional, for a native operator of partitioned queues: creating,
/// limiting and deleting one writes its definition with plain commands.
pub const PARTITIONS_OPERATOR_NATIVE: &str = "+hsetnx +hset +hget +hgetall +exists +del";

/// Optional, for Lua on a Redis Cluster: what the scripts' resharding check
/// (a record missing while its slot moves answers TRYAGAIN) reads. The
/// scripts call these through `pcall`: denied, the check is off.
pub const CLUSTER_LUA: &str = "+exists +info +cluster|keyslot +cluster|nodes";

/// The operator's rules for `via`.
#[must_use]
pub fn operator(via: Via) -> &'static str {
    match via {
        Via::Lua => OPERATOR_LUA,
        Via::Native => OPERATOR_NATIVE,
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Via {
    Lua,
    Native,
}

/// A server for `via`: with the module for Native, without for Lua.
pub fn server(via: Via, args: &[&str]) -> RedisServer {
    let module = (via == Via::Native).then(module_path);
    RedisServer::start_with(ServerOptions {
        module,
        args: args.iter().map(|a| a.to_string()).collect(),
        ..ServerOptions::default()
    })
}

/// An admin connection (the default user).
pub async fn admin(server: &RedisServer) -> MultiplexedConnection {
    server.connection().await
}

/// Create user `name` with `password` and `rules` (a recipe, space-separated).
pub async fn create_user(server: &RedisServer, name: &str, password: &str, rules: &str) {
    let mut command = redis::cmd("ACL");
    command.arg("SETUSER").arg(name).arg("reset").arg("on").arg(format!(">{password}"));
    command.arg(rules.split_whitespace().collect::<Vec<_>>());
    let () = command.query_async(&mut admin(server).await).await.unwrap();
}

/// `redis://name:password@127.0.0.1:<port>/`.
#[must_use]
pub fn url_as(server: &RedisServer, name: &str, password: &str) -> String {
    format!("redis://{name}:{password}@127.0.0.1:{}/", server.port())
}

/// Connect as a user the way an application does, and pick the executor.
///
/// # Errors
/// As [`echomq::connect`] (a wrong password is the server's refusal).
pub async fn connect_as(
    server: &RedisServer,
    name: &str,
    password: &str,
) -> echomq::Result<Arc<dyn Executor>> {
    echomq::connect(&redis::Client::open(url_as(server, name, password))?).await
}

/// `echomq::connect_with` for a connect that must fail: no retries, which
/// would only wait longer each time (seconds in all) to fail the same way.
///
/// # Errors
/// As [`echomq::connect_with`].
pub async fn connect_once(url: &str) -> echomq::Result<Arc<dyn Executor>> {
    let config = redis::aio::ConnectionManagerConfig::new().set_number_of_retries(0);
    echomq::connect_with(&redis::Client::open(url)?, config).await
}

pub use echomq_test_support::eventually;

async fn state(queue: &Queue, id: &JobId) -> Option<(State, u64)> {
    queue.inspect(id).await.unwrap().map(|job| (job.record.state, job.record.attempts))
}

/// A whole worker run on `queue`: a job that succeeds, one that fails once
/// and succeeds on its retry, one that fails until it is dead. Returns once
/// each is where it belongs and the worker has stopped.
pub async fn full_run(queue: Queue) {
    let ok = queue.enqueue(b"ok".to_vec()).await.unwrap();
    let flaky = queue.enqueue(b"flaky".to_vec()).await.unwrap();
    let doomed = queue.enqueue(b"doomed".to_vec()).await.unwrap();
    let options = WorkerOptions::default()
        .concurrency(2)
        .lease(Duration::from_secs(10))
        .upkeep(Duration::from_millis(50))
        .idle_wait(Duration::from_millis(200))
        .grace(Duration::from_secs(5))
        .retry(RetryPolicy::new().max_attempts(2).backoff(Duration::from_millis(10)));
    let worker = Worker::with_options(
        queue.clone(),
        |job: JobContext| async move {
            match (job.payload.as_slice(), job.attempt) {
                (b"flaky", 1) | (b"doomed", _) => {
                    Err(HandlerError::from(format!("attempt {} failed", job.attempt)))
                }
                _ => Ok(()),
            }
        },
        options,
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(worker.run_until(async move {
        let _ = stopped.await;
    }));
    eventually("every job is done or dead", || async {
        state(&queue, &ok).await == Some((State::Done, 1))
            && state(&queue, &flaky).await == Some((State::Done, 2))
            && state(&queue, &doomed).await == Some((State::Dead, 2))
    })
    .await;
    let dead = queue.inspect(&doomed).await.unwrap().unwrap();
    assert_eq!(dead.error.as_deref(), Some("attempt 2 failed"));
    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(20), run).await.expect("the worker stops").unwrap().unwrap();
}

/// The error code of a refused raw command (`NOPERM`, `ERR`, …), or "ok".
async fn refused(conn: &mut MultiplexedConnection, words: &[&str]) -> String {
    let mut command = redis::cmd(words[0]);
    command.arg(&words[1..]);
    match command.query_async::<redis::Value>(conn).await {
        Ok(_) => "ok".into(),
        Err(err) => err.code().unwrap_or("no code").to_owned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_user_runs_a_whole_worker_and_nothing_else() {
    for (via, rules) in [(Via::Lua, WORKER_LUA), (Via::Native, WORKER_NATIVE)] {
        let server = server(via, &[]);
        create_user(&server, "worker", "w0rker-secret", rules).await;
        let executor = connect_as(&server, "worker", "w0rker-secret").await.expect("connect as worker");
        // Both wait for work: the module's blocking claim, Lua's wake-up key.
        assert!(executor.setup().waits, "{via:?}");
        assert!(
            echomq::executor::server_warnings(&*executor).await.is_empty(),
            "CONFIG GET denied: no warning, no error"
        );
        let name = unique_queue("acl");
        full_run(Queue::new(executor, &name).unwrap()).await;
        // Its upkeep's writes beside the transitions landed too: the queue
        // registry names the queue (and the worker registry took it in and
        // out: tests/workers.rs).
        let noted: Option<f64> = redis::cmd("ZSCORE")
            .arg("emq:queues")
            .arg(&name)
            .query_async(&mut admin(&server).await)
            .await
            .unwrap();
        assert!(noted.is_some(), "{via:?}: the worker noted its queue");

        let client = redis::Client::open(url_as(&server, "worker", "w0rker-secret")).unwrap();
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();
        let () = redis::cmd("SET")
            .arg("app:secret")
            .arg("x")
            .query_async(&mut admin(&server).await)
            .await
            .unwrap();
        let mut denied = vec![
            &["GET", "app:secret"][..],
            &["HSET", "app:other", "f", "v"],
            &["ZADD", "app:other", "1", "m"],
            &["FLUSHALL"],
            &["FLUSHDB"],
            &["KEYS", "*"],
            &["SCAN", "0"],
            &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"],
            &["CONFIG", "GET", "requirepass"],
            &["ACL", "LIST"],
            &["EVAL", "return 1", "0"],
        ];
        if via == Via::Native {
            denied.push(&["EMQ.STATS", "6", "app:a", "app:b", "app:c", "app:d", "app:e", "app:f"]);
        }
        for words in denied {
            assert_eq!(refused(&mut conn, words).await, "NOPERM", "{via:?}: {words:?}");
        }
        // A script runs with its caller's rights: one of its own reaching out
        // of EchoMQ's keys is refused (on Lua, where the user may load one).
        if via == Via::Lua {
            let mut load = redis::cmd("SCRIPT");
            load.arg("LOAD").arg("return redis.call('HSET', 'app:other', 'f', 'v')");
            let sha: String = load.query_async(&mut conn).await.unwrap();
            assert_ne!(refused(&mut conn, &["EVALSHA", &sha, "0"]).await, "ok");
        }
        let exists: bool =
            redis::cmd("EXISTS").arg("app:other").query_async(&mut admin(&server).await).await.unwrap();
        assert!(!exists, "{via:?}: the worker wrote outside emq:*");
    }
}

/// The worker's rules let a Lua worker wait on the wake-up key (BZPOPMIN).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lua_worker_waits_on_the_wake_up_key_with_its_rules() {
    let server = server(Via::Lua, &[]);
    create_user(&server, "worker", "w4ke-secret", WORKER_LUA).await;
    let executor = connect_as(&server, "worker", "w4ke-secret").await.expect("connect as worker");
    let queue = Queue::new(executor.clone(), &unique_queue("wake")).unwrap();
    let waiting = {
        let queue = queue.clone();
        tokio::spawn(async move {
            queue
                .claim_many(Duration::from_secs(60), 1, Some(Duration::from_secs(30)))
                .await
                .map(|leases| leases.jobs)
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let id = queue.enqueue(b"x".to_vec()).await.unwrap();
    let claimed =
        tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("woken").unwrap().unwrap();
    assert_eq!(claimed.iter().map(|job| &job.id).collect::<Vec<_>>(), [&id]);
    assert!(executor.setup().waits, "the pop was allowed");
    full_run(queue).await;
}

/// A user whose rules lack `+bzpopmin` (an older recipe): the worker polls
/// instead, rather than failing its claims.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lua_worker_denied_bzpopmin_polls() {
    let server = server(Via::Lua, &[]);
    create_user(&server, "worker", "p0ll-secret", &format!("{WORKER_LUA} -bzpopmin")).await;
    let executor = connect_as(&server, "worker", "p0ll-secret").await.expect("connect as worker");
    let queue = Queue::new(executor.clone(), &unique_queue("poll")).unwrap();
    let claimed =
        queue.claim_many(Duration::from_secs(60), 1, Some(Duration::from_secs(5))).await.unwrap().jobs;
    assert!(claimed.is_empty());
    assert!(!executor.setup().waits, "refused the pop, so the worker polls");
    full_run(queue).await;
}

/// A native worker of several queues under the recipe, which grants no
/// `BZPOPMIN`, claims and waits for each queue on its own (`EMQ.CLAIM …
/// BLOCK`); with the optional rule it claims for them in turns. Either way
/// every job of both queues is done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_native_worker_of_several_queues_runs_with_or_without_bzpopmin() {
    for (rules, in_turns) in
        [(WORKER_NATIVE.to_owned(), false), (format!("{WORKER_NATIVE} {TURNS_NATIVE}"), true)]
    {
        let server = server(Via::Native, &[]);
        create_user(&server, "worker", "turn-secret", &rules).await;
        let executor = connect_as(&server, "worker", "turn-secret").await.expect("connect as worker");
        let queues = [unique_queue("first"), unique_queue("second")]
            .map(|name| Queue::new(executor.clone(), &name).unwrap());
        for queue in &queues {
            queue.enqueue_batch((0..20u32).map(|n| n.to_be_bytes().to_vec())).await.unwrap();
        }
        let options = WorkerOptions::default().concurrency(8).idle_wait(Duration::from_millis(200));
        let worker = Worker::with_options(
            queues[0].clone(),
            |_job: JobContext| async { Ok::<_, HandlerError>(()) },
            options,
        )
        .queue(queues[1].clone());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(worker.run_until(async move {
            let _ = stopped.await;
        }));
        for queue in &queues {
            echomq_test_support::eventually("every job is done", || async {
                queue.stats().await.unwrap().done == 20
            })
            .await;
        }
        stop.send(()).unwrap();
        task.await.unwrap().unwrap();
        assert_eq!(executor.setup().waits_on_many, in_turns, "{rules}");
    }
}

/// A partitioned queue created and held to an exact rate and concurrency
/// by an operator, and worked by a worker, each with its rules (and,
/// native, the partitioned queues' optional ones, the upkeep lease's
/// selector among them): the worker opens the queue, takes permits, gives
/// them back, and runs every job, on Lua and native; native, it keeps each
/// partition under its lease; Lua, refused the lease, it keeps every one
/// itself and every job still runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_user_runs_a_partitioned_queue_under_exact_limits() {
    use echomq::{Limit, Partitioned, Rate};
    // Lua without the upkeep lease's selector (its worker keeps every
    // partition every period, and every job runs), native with it.
    let native = format!("{WORKER_NATIVE} {PARTITIONED_NATIVE} {UPKEEP_LEASE}");
    for (via, rules, leased) in [(Via::Lua, WORKER_LUA.to_owned(), false), (Via::Native, native, true)] {
        let server = server(via, &[]);
        let partitions = if via == Via::Native { PARTITIONS_OPERATOR_NATIVE } else { "" };
        create_user(&server, "operator", "0perator-secret", &format!("{} {partitions}", operator(via))).await;
        let operator = connect_as(&server, "operator", "0perator-secret").await.unwrap();
        let name = unique_queue("split");
        let made = Partitioned::create(operator, &name, 3).await.unwrap();
        made.exact_rate(Limit::To(Rate { claims: 1000, per: Duration::from_secs(1) })).await.unwrap();
        made.exact_concurrency(Limit::To(4)).await.unwrap();
        let jobs = (0..30u32).map(|n| (n.to_be_bytes().to_vec(), echomq::EnqueueOptions::default()));
        assert!(made.enqueue_many(jobs).await.unwrap().iter().all(Result::is_ok));
        create_user(&server, "worker", "part-secret", &rules).await;
        let executor = connect_as(&server, "worker", "part-secret").await.expect("connect as worker");
        let split = Partitioned::open(executor, &name).await.unwrap();
        let options = WorkerOptions::default().concurrency(8).idle_wait(Duration::from_millis(100));
        let worker = split.worker(|_job: JobContext| async { Ok::<_, HandlerError>(()) }, options);
        let id = worker.id().to_owned();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(worker.run_until(async move {
            let _ = stopped.await;
        }));
        eventually("every job is done", || async { made.stats().await.unwrap().done == 30 }).await;
        // With the selector, it keeps each partition under the partition's upkeep lease.
        for partition in made.partitions().iter().filter(|_| leased) {
            let key = format!("emq:{{{}}}:upkeep", partition.name());
            let held = || async {
                let mut admin = admin(&server).await;
                redis::cmd("GET").arg(&key).query_async::<Option<String>>(&mut admin).await.unwrap()
            };
            eventually("the worker holds the lease", || async {
                held().await.as_deref() == Some(id.as_str())
            })
            .await;
        }
        stop.send(()).unwrap();
        task.await.unwrap().unwrap();
        let leases: Vec<String> =
            redis::cmd("KEYS").arg("emq:*:upkeep").query_async(&mut admin(&server).await).await.unwrap();
        assert!(leases.is_empty(), "{via:?}: given back at its stop, or never taken: {leases:?}");
    }
}

/// A read a script sends with `redis.pcall` (its key's type check too) that
/// an ACL refuses: the call is refused with the ACL's own words, changes
/// nothing, and is not mistaken for a key of the wrong type.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_read_an_acl_refuses_says_so() {
    let server = server(Via::Lua, &[]);
    create_user(&server, "worker", "hm-secret", &format!("{WORKER_LUA} -hmget -zrange")).await;
    let executor = connect_as(&server, "worker", "hm-secret").await.expect("connect as worker");
    let queue = Queue::new(executor, &unique_queue("acl")).unwrap();
    create_user(&server, "operator", "0perator-secret", operator(Via::Lua)).await;
    let operator = connect_as(&server, "operator", "0perator-secret").await.unwrap();
    let operator = Queue::new(operator, queue.name()).unwrap();
    // Enqueued by the operator: an enqueue reads the counters with HMGET too.
    let id = operator.enqueue(b"kept".to_vec()).await.unwrap();
    let refusal = queue.claim(Duration::from_secs(60)).await.unwrap_err().to_string();
    // Redis 7.0's words for an ACL refusal inside a script (NOPERM elsewhere).
    let acl = refusal.contains("can't run this command") || refusal.to_lowercase().contains("noperm");
    assert!(acl, "{refusal}");
    assert!(!refusal.contains("EMQTYPE") && !refusal.contains("attempt to"), "{refusal}");
    assert_eq!(state(&operator, &id).await, Some((State::Pending, 0)), "the claim changed nothing");
}

/// With the prompt-stop rules, a native worker whose claim waits five
/// minutes for work stops at once; without them it would sit the wait out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_prompt_stop_rules_a_native_worker_stops_at_once() {
    let server = server(Via::Native, &[]);
    create_user(&server, "worker", "st0p-secret", &format!("{WORKER_NATIVE} {PROMPT_STOP}")).await;
    let executor = connect_as(&server, "worker", "st0p-secret").await.expect("connect as worker");
    let queue = Queue::new(executor, &unique_queue("stop")).unwrap();
    let id = queue.enqueue(b"first".to_vec()).await.unwrap();
    let options = WorkerOptions::default().idle_wait(Duration::from_secs(300));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker =
        Worker::with_options(queue.clone(), |_job: JobContext| async { Ok::<_, HandlerError>(()) }, options);
    let task = tokio::spawn(worker.run_until(async move {
        let _ = stopped.await;
    }));
    eventually("the job is done", || async { state(&queue, &id).await.map(|s| s.0) == Some(State::Done) })
        .await;
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("the worker stopped at once")
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_producer_user_enqueues_and_claims_nothing() {
    for (via, rules) in [(Via::Lua, PRODUCER_LUA), (Via::Native, PRODUCER_NATIVE)] {
        let server = server(via, &[]);
        create_user(&server, "producer", "pr0ducer-secret", rules).await;
        let executor = connect_as(&server, "producer", "pr0ducer-secret").await.expect("connect as producer");
        let name = unique_queue("producer");
        let queue = Queue::new(executor, &name).unwrap();
        queue.enqueue(b"now".to_vec()).await.unwrap();
        let options =
            echomq::EnqueueOptions::default().priority(-3).delay(Duration::from_secs(60)).attempts(2);
        let options = options.unique("once", Duration::from_secs(60));
        queue.enqueue_with(b"later".to_vec(), options).await.unwrap();
        let refusal = queue.claim(Duration::from_secs(10)).await.unwrap_err().to_string();
        assert!(refusal.to_lowercase().contains("noperm"), "{via:?}: {refusal}");
        let refusal = queue.stats().await.unwrap_err().to_string();
        assert!(refusal.to_lowercase().contains("noperm"), "{via:?}: {refusal}");

        // An operator sees both jobs; the producer's rules were enough to write them.
        create_user(&server, "operator", "0perator-secret", operator(via)).await;
        let operator = connect_as(&server, "operator", "0perator-secret").await.unwrap();
        let stats = Queue::new(operator, &name).unwrap().stats().await.unwrap();
        assert_eq!((stats.pending, stats.delayed), (1, 1), "{via:?}");
    }
}

/// A monitor reads every count and record, through keys it may only read,
/// and can change nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_monitor_user_reads_and_changes_nothing() {
    for (via, rules) in [(Via::Lua, MONITOR_LUA), (Via::Native, MONITOR_NATIVE)] {
        let server = server(via, &[]);
        let name = unique_queue("monitor");
        create_user(&server, "operator", "0perator-secret", operator(via)).await;
        let operator = connect_as(&server, "operator", "0perator-secret").await.unwrap();
        let written = Queue::new(operator, &name).unwrap();
        let id = written.enqueue(b"watched".to_vec()).await.unwrap();

        create_user(&server, "monitor", "m0nitor-secret", rules).await;
        let executor = connect_as(&server, "monitor", "m0nitor-secret").await.expect("connect as monitor");
        let queue = Queue::new(executor, &name).unwrap();
        assert_eq!(queue.stats().await.unwrap().pending, 1, "{via:?}");
        let job = queue.inspect(&id).await.unwrap().expect("the job");
        assert_eq!(job.record.payload, b"watched", "{via:?}");
        assert!(queue.inspect(&JobId::mint()).await.unwrap().is_none(), "{via:?}: no such job");
        for refusal in [
            queue.enqueue(b"x".to_vec()).await.map(drop),
            queue.claim(Duration::from_secs(10)).await.map(drop),
            queue.cancel(&id).await.map(drop),
            Upkeep::of(&queue).purge(State::Done, Duration::ZERO).await.map(drop),
        ] {
            let refusal = refusal.unwrap_err().to_string();
            assert!(refusal.to_lowercase().contains("noperm"), "{via:?}: {refusal}");
        }
        assert_eq!(written.stats().await.unwrap().pending, 1, "{via:?}: nothing changed");

        // A monitor may wait for a job's end and read its result (it follows
        // the event log; CONFIG, a write, is refused to it).
        let waiting = tokio::spawn({
            let (queue, id) = (queue.clone(), id.clone());
            async move { queue.wait(&id, Duration::from_secs(30)).await }
        });
        let claimed = written.claim(Duration::from_secs(10)).await.unwrap().expect("the job");
        claimed.ack_with("seen").await.unwrap();
        let finished = waiting.await.unwrap().unwrap();
        assert_eq!(finished, Some(echomq::Finished::Done(Some(b"seen".to_vec()))), "{via:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_user_runs_every_operation() {
    for via in [Via::Lua, Via::Native] {
        let server = server(via, &[]);
        let partitions = if via == Via::Native { PARTITIONS_OPERATOR_NATIVE } else { "" };
        create_user(&server, "operator", "0perator-secret", &format!("{} {partitions}", operator(via))).await;
        let executor = connect_as(&server, "operator", "0perator-secret").await.expect("connect as operator");
        let name = unique_queue("operator");
        let queue = Queue::new(executor, &name).unwrap();
        let dead = queue.enqueue(b"dies".to_vec()).await.unwrap();
        let job = queue.claim(Duration::from_secs(10)).await.unwrap().expect("a job");
        let policy = RetryPolicy::new().max_attempts(1);
        job.fail("boom", &policy).await.unwrap();
        assert_eq!(state(&queue, &dead).await, Some((State::Dead, 1)), "{via:?}");
        queue.retry(&dead).await.unwrap();
        assert!(queue.cancel(&dead).await.unwrap());
        assert_eq!(Upkeep::of(&queue).purge(State::Cancelled, Duration::ZERO).await.unwrap(), 1);
        assert_eq!(queue.stats().await.unwrap(), echomq::StatsReply::default());
        queue.enqueue(b"listed".to_vec()).await.unwrap();

        // The CLI and the dashboard find queues with SCAN and list a state with ZRANGE.
        let client = redis::Client::open(url_as(&server, "operator", "0perator-secret")).unwrap();
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();
        let pattern = echomq::keyspace::state_pattern(State::Pending);
        let (_, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(0)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(keys, vec![queue.keyspace().pending()], "{via:?}");
        let ids: Vec<String> =
            redis::cmd("ZRANGE").arg(&keys[0]).arg(0).arg(-1).query_async(&mut conn).await.unwrap();
        assert_eq!(ids.len(), 1);
        for words in
            [&["FLUSHALL"][..], &["CONFIG", "SET", "save", ""], &["GET", "app:secret"], &["ACL", "LIST"]]
        {
            assert_eq!(refused(&mut conn, words).await, "NOPERM", "{via:?}: {words:?}");
        }
    }
}

#[tokio::test]
async fn a_wrong_password_is_refused_without_showing_it() {
    let server = server(Via::Lua, &[]);
    create_user(&server, "worker", "the-right-one", WORKER_LUA).await;
    let err = match connect_once(&url_as(&server, "worker", "Wr0ng-Pa55")).await {
        Ok(_) => panic!("a wrong password connected"),
        Err(err) => err,
    };
    for shown in [err.to_string(), format!("{err:?}")] {
        assert!(
            !shown.contains("Wr0ng-Pa55") && !shown.contains("the-right-one"),
            "a password shows: {shown}"
        );
    }
    assert!(err.to_string().to_lowercase().contains("auth"), "the error says why: {err}");
}

#[test]
fn security_md_prints_these_rules() {
    let page = include_str!("../../../SECURITY.md");
    let words = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let page = words(page);
    for rules in [
        WORKER_LUA,
        WORKER_NATIVE,
        CLUSTER_LUA,
        PRODUCER_LUA,
        PRODUCER_NATIVE,
        OPERATOR_LUA,
        OPERATOR_NATIVE,
        MONITOR_LUA,
        MONITOR_NATIVE,
        PROMPT_STOP,
        TURNS_NATIVE,
        PARTITIONED_NATIVE,
        UPKEEP_LEASE,
        PARTITIONS_OPERATOR_NATIVE,
    ] {
        assert!(page.contains(&words(rules)), "SECURITY.md lacks the rules {rules}");
    }
}

/// The ACL rules a script needs: `+<command>` for each command it calls,
/// `+<command>|<subcommand>` for a container command such as CLUSTER.
fn rules_of_script(transition: &str) -> BTreeSet<String> {
    const CONTAINERS: [&str; 6] = ["cluster", "config", "client", "script", "object", "memory"];
    let name = echomq::Name::ALL.iter().find(|name| name.as_str() == transition).expect("a transition");
    let source = echomq::executor::script_source(*name);
    let mut rules = BTreeSet::new();
    for (_, call) in source.match_indices("call(").map(|(at, _)| source.split_at(at + 5)) {
        let mut words = call.split(['\'', '"']);
        let (Some(""), Some(command)) = (words.next(), words.next()) else { continue };
        let command = command.to_lowercase();
        let sub = words.nth(1).filter(|_| CONTAINERS.contains(&command.as_str()));
        rules.insert(match sub {
            Some(sub) => format!("+{command}|{}", sub.to_lowercase()),
            None => format!("+{command}"),
        });
    }
    rules
}

/// Each Lua recipe allows every command its transitions' scripts may call
/// (their includes too, so a rare path such as a resharding cannot meet a
/// refusal), but the optional cluster ones, and each native recipe its
/// transitions' commands; when a script starts calling a new command, or a
/// role a new transition, this says which recipe (and SECURITY.md) must grow.
#[test]
fn the_recipes_cover_every_command_their_transitions_call() {
    let worker = [
        "enqueue",
        "enqueuemany",
        "claim",
        "ack",
        "acknext",
        "ackmany",
        "fail",
        "defer",
        "extend",
        "release",
        "reap",
        "promote",
        "inspect",
        "stats",
        "trim",
        "progress",
        "schedules",
        "fire",
        "settle",
        "permit",
        "renew",
    ];
    let operator = [
        &worker[..],
        &[
            "purge",
            "cancel",
            "retry",
            "config",
            "drain",
            "obliterate",
            "schedule",
            "unschedule",
            "group",
            "groups",
        ],
    ]
    .concat();
    for (recipe, rules, transitions) in [
        ("WORKER_LUA", WORKER_LUA, &worker[..]),
        ("PRODUCER_LUA", PRODUCER_LUA, &["enqueue", "enqueuemany", "batch"][..]),
        ("OPERATOR_LUA", OPERATOR_LUA, &operator[..]),
    ] {
        let granted: BTreeSet<&str> =
            rules.split_whitespace().chain(CLUSTER_LUA.split_whitespace()).collect();
        for transition in transitions {
            let needed = rules_of_script(transition);
            assert!(
                needed.contains("+type"),
                "every script checks its keys' types: {transition}: {needed:?}"
            );
            for rule in needed {
                assert!(
                    granted.contains(rule.as_str()),
                    "{transition}'s script calls {rule}: add it to {recipe} and SECURITY.md"
                );
            }
        }
    }
    // The native recipes: each transition's own command.
    for (recipe, rules, transitions) in [
        ("WORKER_NATIVE", WORKER_NATIVE, &worker[..]),
        ("PRODUCER_NATIVE", PRODUCER_NATIVE, &["enqueue", "enqueuemany", "batch"][..]),
        ("OPERATOR_NATIVE", OPERATOR_NATIVE, &operator[..]),
    ] {
        let granted: BTreeSet<&str> = rules.split_whitespace().collect();
        for transition in transitions {
            let rule = format!("+emq.{transition}");
            assert!(granted.contains(rule.as_str()), "add {rule} to {recipe} and SECURITY.md");
        }
    }
}
