//! A partitioned queue (protocol 1.8) through the failures of a Redis
//! Cluster of three masters, each with a replica, the module on every node,
//! on Lua and on Native: while a worker runs it and a producer enqueues
//! jobs under unique keys (each key twice), and a schedule ticks every
//! 100 ms, partition 0's slot moves to another master, one master is failed
//! over by the operator (`CLUSTER FAILOVER`), and the third crashes behind
//! a lagging replica: the replica is stopped and cut off, a probe job goes
//! into one of the master's partitions (its claim on the master alone),
//! the master is SIGKILLed, its replica takes over at once (`CLUSTER
//! FAILOVER FORCE`, what the cluster does itself once it judges the master
//! failed), and the old master comes back as its replica. The executors
//! ask one replica to confirm each write and each claim (`Replication`).
//! Then, from what every run of the handler saw and what the records say:
//!
//! - **0 lost**: every enqueue that was answered is done;
//! - **0 stale acks accepted**: each done job's result is from the run that
//!   held its final token, and no token of any job was handed out twice (a
//!   claim the failover lost would have the new master mint it again);
//! - **no tick fired twice**: a tick is one job (its id derived from the
//!   tick), so a tick fired again would be a token handed out twice, and
//!   ticks go on firing after the crash;
//! - **no unique key admitted twice**: the second enqueue of every key
//!   answered the first's job, and its own id was never stored.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use echomq::worker::{HandlerError, JobContext, WorkerOptions};
use echomq::{EnqueueOptions, Enqueued, Executor, JobId, Lua, Partitioned, Replication, Schedule};
use echomq_test_support::{eventually, module_path, unique_queue, RedisCluster};
use redis::cluster::ClusterClient;

#[derive(Clone, Copy, Debug)]
enum Via {
    Lua,
    Native,
}

/// Keys the producer enqueues (each twice) before, between and after the
/// cluster's changes, at one every `PACE` or so.
const KEYS_BETWEEN: usize = 50;
const PACE: Duration = Duration::from_millis(5);
/// How long node 2's replica lags (stopped) before node 2 crashes.
const LAG: Duration = Duration::from_millis(500);
/// Node 2 serves partitions 8 to 11 (`tests/cluster.rs` checks the layout).
const ON_NODE_2: std::ops::Range<usize> = 8..12;
/// How long a call may keep failing across a failover before the test gives up.
const DEADLINE: Duration = Duration::from_secs(60);
/// One replica confirms each write and claim, given up to this long.
const REPLICATION: Replication = Replication { replicas: 1, timeout: Duration::from_secs(5) };

/// One run of the handler: the job, the token it held, and the result it returned.
#[derive(Clone, Debug)]
struct Run {
    id: JobId,
    token: u64,
    result: Vec<u8>,
    tick: bool,
    began: Instant,
}

/// The executor `via`, over the cluster, confirming its writes and claims on a replica.
async fn executor(client: &ClusterClient, via: Via) -> Arc<dyn Executor> {
    let open = {
        let client = client.clone();
        move || {
            let client = client.clone();
            async move { client.get_async_connection().await }
        }
    };
    let conn = client.get_async_connection().await.unwrap();
    match via {
        Via::Lua => Arc::new(Lua::new(conn).with_replication(REPLICATION).with_blocking_connections(open)),
        Via::Native => {
            let open = move || {
                let opened = open();
                async move { opened.await.map(echomq::ByFirstKey) }
            };
            Arc::new(
                echomq::Native::new(echomq::ByFirstKey(conn))
                    .with_replication(REPLICATION)
                    .with_blocking_connections(open),
            )
        }
    }
}

/// Enqueue with `options` (an id among them) until a clean answer: across
/// a failover a call may fail, or apply with no replica's word; an enqueue
/// of a given id is idempotent.
async fn enqueue_surely(orders: &Partitioned, options: EnqueueOptions) -> Enqueued {
    let deadline = Instant::now() + DEADLINE;
    loop {
        match orders.enqueue_with(b"job".to_vec(), options.clone()).await {
            Ok(enqueued) => return enqueued,
            Err(err) => {
                assert!(err.code().is_none(), "enqueue refused: {err}");
                assert!(Instant::now() < deadline, "an enqueue never went through: {err}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

/// The producer's progress, and what it is told.
#[derive(Default)]
struct Producer {
    /// Keys enqueued (twice each).
    produced: AtomicUsize,
    /// Told to stop enqueuing.
    enough: AtomicBool,
    /// Told to hold off, and holding off.
    hold: AtomicBool,
    holding: AtomicBool,
}

/// One key's two enqueues: the ids given, and what each answered.
struct Key {
    key: String,
    ids: [JobId; 2],
    answers: [Enqueued; 2],
}

/// Keys, each enqueued twice under two ids of its partition, until told
/// that is enough.
async fn produce(orders: Partitioned, producer: Arc<Producer>) -> Vec<Key> {
    let hold = Duration::from_secs(3600);
    let mut keys = Vec::new();
    while !producer.enough.load(Ordering::SeqCst) {
        let holding = producer.hold.load(Ordering::SeqCst);
        producer.holding.store(holding, Ordering::SeqCst);
        if !holding {
            let key = format!("key-{}", keys.len());
            let unique = EnqueueOptions::default().unique(&key, hold);
            let (first, second) = (orders.place(&unique).unwrap(), orders.place(&unique).unwrap());
            let once = enqueue_surely(&orders, unique.clone().id(first.clone())).await;
            let again = enqueue_surely(&orders, unique.id(second.clone())).await;
            keys.push(Key { key, ids: [first, second], answers: [once, again] });
            producer.produced.store(keys.len(), Ordering::SeqCst);
        }
        tokio::time::sleep(PACE).await;
    }
    keys
}

/// Wait until the producer has enqueued `KEYS_BETWEEN` more keys.
async fn more_produced(producer: &Producer) {
    let past = producer.produced.load(Ordering::SeqCst) + KEYS_BETWEEN;
    eventually("the producer gets on", || async { producer.produced.load(Ordering::SeqCst) >= past }).await;
}

/// Run `change` to the cluster on a thread of its own (it blocks).
async fn on_cluster<T: Send + 'static>(
    cluster: &Arc<Mutex<RedisCluster>>,
    change: impl FnOnce(&mut RedisCluster) -> T + Send + 'static,
) -> T {
    let cluster = cluster.clone();
    tokio::task::spawn_blocking(move || change(&mut cluster.lock().unwrap())).await.unwrap()
}

/// A handler that notes each run, and returns a result no other run returns.
fn noting(runs: Arc<Mutex<Vec<Run>>>) -> impl echomq::worker::Handler {
    move |job: JobContext| {
        let runs = runs.clone();
        async move {
            let result = format!("{}:{}", job.id, JobId::mint()).into_bytes();
            let tick = job.payload == b"tick";
            let run =
                Run { id: job.id, token: job.attempt, result: result.clone(), tick, began: Instant::now() };
            runs.lock().unwrap().push(run);
            Ok::<_, HandlerError>(result)
        }
    }
}

/// A schedule ticking every 100 ms, named so it lives on node 0 or 1.
async fn ticking(orders: &Partitioned) {
    let name = (0..)
        .map(|n| format!("beat-{n}"))
        .find(|name| (1..8).any(|k| orders.partition_for(name).name() == orders.partitions()[k].name()))
        .unwrap();
    let beat = Schedule::every(&name, Duration::from_millis(100), "tick").unwrap();
    orders.partition_for(&name).schedules().add(&beat).await.unwrap();
}

/// Node 2's replica lags (stopped), a probe job goes into one of node 2's
/// partitions (its enqueue waits for the replica), the worker may claim
/// it, and node 2 crashes: what only node 2 had is lost. Its replica takes
/// over, and node 2 comes back as that one's replica. The producer holds
/// off meanwhile, and node 2's partitions are idle when the replica stops,
/// so a claim of the probe is the first thing the worker asks node 2
/// after that. Returns when node 2 crashed and the probe's id.
async fn crash_behind_a_lagging_replica(
    cluster: &Arc<Mutex<RedisCluster>>,
    orders: &Partitioned,
    producer: &Producer,
) -> (Instant, tokio::task::JoinHandle<Enqueued>) {
    producer.hold.store(true, Ordering::SeqCst);
    eventually("the producer holds off", || async { producer.holding.load(Ordering::SeqCst) }).await;
    eventually("node 2's partitions are idle", || async {
        let mut idle = true;
        for k in ON_NODE_2 {
            let stats = orders.partitions()[k].stats().await.unwrap();
            idle &= stats.pending + stats.active == 0;
        }
        idle
    })
    .await;
    let replica = on_cluster(cluster, |cluster| {
        let replica = cluster.replica_of(2);
        cluster.freeze(replica);
        replica
    })
    .await;
    let probe = {
        let (orders, id) = (orders.clone(), orders.mint_in(ON_NODE_2.start));
        tokio::spawn(async move { enqueue_surely(&orders, EnqueueOptions::default().id(id)).await })
    };
    tokio::time::sleep(LAG).await;
    let crashed = Instant::now();
    on_cluster(cluster, move |cluster| {
        cluster.crash(2);
        cluster.thaw(replica);
        cluster.fail_over(replica, true);
        cluster.revive(2);
    })
    .await;
    producer.hold.store(false, Ordering::SeqCst);
    (crashed, probe)
}

async fn through_failovers(via: Via) {
    let cluster = RedisCluster::start_replicated(3, Some(module_path()));
    let client = ClusterClient::new(cluster.urls()).unwrap();
    let cluster = Arc::new(Mutex::new(cluster));
    let orders =
        Partitioned::create(executor(&client, via).await, &unique_queue("failover"), 12).await.unwrap();
    ticking(&orders).await;
    let runs: Arc<Mutex<Vec<Run>>> = Arc::default();
    let options = WorkerOptions::default()
        .concurrency(8)
        .lease(Duration::from_secs(10))
        .idle_wait(Duration::from_millis(100))
        .upkeep(Duration::from_millis(100));
    // The worker on connections of its own, as in a process of its own:
    // the producer's WAITs do not hold its calls up.
    let worker = Partitioned::open(executor(&client, via).await, orders.name()).await.unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let working = tokio::spawn(worker.worker(noting(runs.clone()), options).run_until(async move {
        let _ = stopped.await;
    }));
    let producer = Arc::new(Producer::default());
    let producing = tokio::spawn(produce(orders.clone(), producer.clone()));

    // While jobs go in and run: partition 0 moves from node 0 to node 1,
    // the operator fails node 1 over, and node 2 crashes.
    more_produced(&producer).await;
    let moving = orders.partitions()[0].keyspace().pending();
    let moved = on_cluster(&cluster, move |cluster| cluster.migrate_slot(cluster.slot(&moving), 1)).await;
    more_produced(&producer).await;
    on_cluster(&cluster, |cluster| cluster.fail_over(cluster.replica_of(1), false)).await;
    more_produced(&producer).await;
    let (crashed, probe) = crash_behind_a_lagging_replica(&cluster, &orders, &producer).await;
    more_produced(&producer).await;
    producer.enough.store(true, Ordering::SeqCst);
    let keys = producing.await.unwrap();
    let probe = probe.await.unwrap();

    eventually("every job answered ran, and ticks fired after the crash", || async {
        let runs = runs.lock().unwrap();
        let ran: std::collections::HashSet<&JobId> = runs.iter().map(|run| &run.id).collect();
        keys.iter().all(|key| ran.contains(&key.ids[0]))
            && ran.contains(&probe.id)
            && runs.iter().any(|run| run.tick && run.began > crashed)
    })
    .await;
    let _ = stop.send(());
    working.await.unwrap().unwrap();
    assert!(moved > 0, "{via:?}: partition 0 had keys to move");
    let runs = runs.lock().unwrap().clone();
    judge(via, &orders, &keys, &runs).await;
    let ticks = runs.iter().filter(|run| run.tick).count();
    println!(
        "{via:?}: {} keys, each enqueued twice, and {ticks} ticks through a slot move ({moved} keys), \
         an operator's failover and a crash behind a lagging replica: every job done, none lost, \
         no token twice",
        keys.len()
    );
}

/// The verdict: no unique key admitted twice, no token handed out twice
/// (nor a tick fired twice), and every job that ran done, its result from
/// the holder of its final token.
async fn judge(via: Via, orders: &Partitioned, keys: &[Key], runs: &[Run]) {
    for Key { key, ids: [first, second], answers: [once, again] } in keys {
        // The first's own id (a try after an answer the failover lost finds
        // its own job: a duplicate of itself).
        assert_eq!(&once.id, first, "{via:?}: {key}'s first enqueue answered another job");
        assert_eq!((again.duplicate, &again.id), (true, first), "{via:?}: {key} admitted twice");
        let stored = orders.partition_of(second).inspect(second).await.unwrap();
        assert!(stored.is_none(), "{via:?}: {key}'s second job {second} was stored");
    }
    // A tick fired again would be its job's token 1 a second time.
    let mut tokens: HashMap<(&JobId, u64), usize> = HashMap::new();
    for run in runs {
        *tokens.entry((&run.id, run.token)).or_default() += 1;
    }
    let twice: Vec<_> = tokens.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "{via:?}: tokens handed out twice: {twice:?}");
    let mut jobs: Vec<&JobId> = runs.iter().map(|run| &run.id).collect();
    jobs.sort();
    jobs.dedup();
    for id in jobs {
        // A tick's id is derived from its tick, not routed: look in every partition.
        let mut found = orders.partition_of(id).inspect(id).await.unwrap();
        for partition in orders.partitions() {
            if found.is_none() {
                found = partition.inspect(id).await.unwrap();
            }
        }
        let inspection = found.unwrap_or_else(|| panic!("{via:?}: job {id} lost"));
        assert_eq!(inspection.record.state, echomq::State::Done, "{via:?}: {id}");
        let holder = runs.iter().find(|run| run.id == *id && Some(&run.result) == inspection.result.as_ref());
        let holder = holder.unwrap_or_else(|| panic!("{via:?}: {id}'s result is no run's"));
        assert_eq!(holder.token, inspection.record.attempts, "{via:?}: {id} acked by a stale token");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_queue_on_lua_loses_nothing_through_failovers_and_a_slot_move() {
    through_failovers(Via::Lua).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_queue_on_native_loses_nothing_through_failovers_and_a_slot_move() {
    through_failovers(Via::Native).await;
}
