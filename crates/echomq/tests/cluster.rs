//! EchoMQ on a Redis Cluster of three masters, the module loaded on each:
//! queues spread over every node, one worker over all of them, on Lua and on
//! Native; and one queue's slot moved to another node while jobs flow in and
//! out of it. The client follows MOVED and ASK; every job is done, none lost.
//! A partitioned queue (protocol 1.8) of 12 partitions lands 4 on each
//! node, and one partition's slot moves while its worker runs.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use echomq::worker::{HandlerError, JobContext, Worker, WorkerOptions};
use echomq::{EnqueueOptions, Executor, JobId, Lua, Queue};
use echomq_test_support::{eventually, module_path, unique_queue, RedisCluster, RedisServer};
use redis::cluster::ClusterClient;
use redis::Value;

#[derive(Clone, Copy, Debug)]
enum Via {
    Lua,
    Native,
}

/// Queues per node, so every node serves some.
const QUEUES_PER_NODE: usize = 2;
/// Jobs per queue before the slot moves, and as many again while and after it does.
const JOBS: usize = 300;

/// Lua over one cluster connection, its idle claims waiting on their queue's
/// wake-up key (BZPOPMIN, routed to the queue's node); Native as
/// `connect_cluster` makes it. Each with a cluster connection of its own for
/// each waiting claim.
async fn executor(client: &ClusterClient, via: Via) -> Arc<dyn Executor> {
    match via {
        Via::Lua => {
            let open = {
                let client = client.clone();
                move || {
                    let client = client.clone();
                    async move { client.get_async_connection().await }
                }
            };
            let lua = Lua::new(client.get_async_connection().await.unwrap()).with_blocking_connections(open);
            assert!(lua.setup().waits, "Lua waits on the wake-up key");
            Arc::new(lua)
        }
        Via::Native => {
            let native = echomq::connect_cluster(client).await.unwrap();
            assert!(native.setup().waits, "the module is on every node: Native, which blocks");
            native
        }
    }
}

/// Queue names chosen so each node serves `QUEUES_PER_NODE` of them.
fn spread(cluster: &RedisCluster, prefix: &str) -> Vec<String> {
    let mut per_node = vec![0; cluster.nodes().len()];
    let mut names = Vec::new();
    while per_node.iter().any(|&n| n < QUEUES_PER_NODE) {
        let name = unique_queue(prefix);
        let node = cluster.owner(cluster.slot(&format!("{{{name}}}")));
        if per_node[node] < QUEUES_PER_NODE {
            per_node[node] += 1;
            names.push(name);
        }
    }
    names
}

/// The slot of a queue's keys.
fn slot(cluster: &RedisCluster, queue: &Queue) -> u16 {
    cluster.slot(&queue.keyspace().pending())
}

/// How many MOVED and ASK replies `node` has sent (`INFO errorstats`).
fn redirections(node: &RedisServer) -> u64 {
    let mut conn = node.client().get_connection().unwrap();
    let info: String = redis::cmd("INFO").arg("errorstats").query(&mut conn).unwrap();
    info.lines()
        .filter(|line| line.starts_with("errorstat_MOVED:") || line.starts_with("errorstat_ASK:"))
        .filter_map(|line| line.split("count=").nth(1)?.split(',').next()?.parse::<u64>().ok())
        .sum()
}

async fn enqueue_all(queues: &[Queue], jobs: usize, round: &str) -> Vec<(usize, JobId)> {
    let mut ids = Vec::new();
    for (q, queue) in queues.iter().enumerate() {
        let payloads = (0..jobs).map(|i| format!("{round}-{i}").into_bytes());
        for id in queue.enqueue_batch(payloads).await.unwrap() {
            ids.push((q, id.unwrap()));
        }
    }
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queues_spread_over_the_nodes_and_a_slot_moves_mid_flow() {
    let cluster = Arc::new(RedisCluster::start(3, Some(module_path())));
    let client = ClusterClient::new(cluster.urls()).unwrap();

    for via in [Via::Lua, Via::Native] {
        let names = spread(&cluster, &format!("cl-{via:?}"));
        let executor = executor(&client, via).await;
        let queues: Vec<Queue> =
            names.iter().map(|name| Queue::new(executor.clone(), name).unwrap()).collect();

        // Each job's runs, by id.
        let runs: Arc<Mutex<HashMap<JobId, usize>>> = Arc::default();
        let seen = runs.clone();
        let handler = move |job: JobContext| {
            *seen.lock().unwrap().entry(job.id).or_default() += 1;
            async { Ok::<_, HandlerError>(()) }
        };
        let options = WorkerOptions::default()
            .concurrency(8)
            .lease(Duration::from_secs(20))
            .idle_wait(Duration::from_millis(100))
            .upkeep(Duration::from_millis(100));
        let mut worker = Worker::with_options(queues[0].clone(), handler, options);
        for queue in &queues[1..] {
            worker = worker.queue(queue.clone());
        }
        // A backlog first, so claims pop ids while their records move.
        let mut ids = enqueue_all(&queues, JOBS, "before").await;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let working = tokio::spawn(worker.run_until(async move {
            let _ = stopped.await;
        }));

        // Jobs go in one at a time, by a second producer, while the slot moves.
        let produced = Arc::new(AtomicUsize::new(0));
        let producer = {
            let (queues, produced) = (queues.clone(), produced.clone());
            tokio::spawn(async move {
                let mut ids = Vec::new();
                for i in 0..JOBS {
                    for (q, queue) in queues.iter().enumerate() {
                        ids.push((q, queue.enqueue(format!("during-{i}").into_bytes()).await.unwrap()));
                    }
                    produced.store(i + 1, Ordering::SeqCst);
                }
                ids
            })
        };

        // Mid-flow: the first queue has done some jobs, and the producer is under way.
        let moving = &queues[0];
        eventually("the moving queue is part done", || async {
            moving.stats().await.unwrap().done > 0 && produced.load(Ordering::SeqCst) >= 1
        })
        .await;
        let moving_slot = slot(&cluster, moving);
        let from = cluster.owner(moving_slot);
        let to = (from + 1) % cluster.nodes().len();
        let redirected_before = redirections(&cluster.nodes()[from]);
        let mover = cluster.clone();
        let moved = tokio::task::spawn_blocking(move || mover.migrate_slot(moving_slot, to)).await.unwrap();
        let produced_by_then = produced.load(Ordering::SeqCst);
        assert!(moved > 0, "the moving queue had keys to move");
        assert_eq!(cluster.owner(moving_slot), to);
        ids.extend(producer.await.unwrap());
        ids.extend(enqueue_all(&queues, JOBS, "after").await);

        let total = ids.len();
        eventually("every job is done", || async {
            let mut done = 0;
            for queue in &queues {
                done += queue.stats().await.unwrap().done;
            }
            done as usize == total
        })
        .await;
        let _ = stop.send(());
        working.await.unwrap().unwrap();

        for queue in &queues {
            let stats = queue.stats().await.unwrap();
            assert_eq!(
                (stats.pending, stats.active, stats.delayed, stats.dead),
                (0, 0, 0, 0),
                "{via:?}: {} is drained",
                queue.name()
            );
        }
        // The clients met the move: the old node sent them on with MOVED or ASK.
        let redirected = redirections(&cluster.nodes()[from]) - redirected_before;
        assert!(redirected > 0, "{via:?}: no client was redirected from node {from}");

        let runs = runs.lock().unwrap();
        for (q, id) in &ids {
            assert!(runs.contains_key(id), "{via:?}: job {id} of {} never ran", queues[*q].name());
        }
        let again: usize = runs.values().map(|n| n - 1).sum();
        println!(
            "{via:?}: {total} jobs over {} queues on 3 nodes; {moved} keys moved from node {from} to {to} \
             after {produced_by_then} of {JOBS} producer rounds; {redirected} redirections; {again} runs again",
            queues.len()
        );
    }
}

/// Claim the head of `queue`'s pending set straight on one node, as a cluster
/// client sent there would (ASKING first when the node is importing the slot).
fn claim_on(
    node: &RedisServer,
    queue: &Queue,
    via: Via,
    count: u64,
    asking: bool,
) -> redis::RedisResult<Value> {
    let mut conn = node.client().get_connection().unwrap();
    let k = queue.keyspace();
    let keys: Vec<String> =
        echomq::Name::Claim.describe().keys.iter().map(|role| k.role(*role, None).expect("a key")).collect();
    let mut claim = match via {
        Via::Native => redis::cmd("EMQ.CLAIM"),
        Via::Lua => {
            let mut eval = redis::cmd("EVAL");
            eval.arg(echomq::executor::script_source(echomq::Name::Claim));
            eval
        }
    };
    claim.arg(keys.len()).arg(&keys).arg(60_000).arg("COUNT").arg(count);
    let mut pipe = redis::pipe();
    if asking {
        pipe.cmd("ASKING").ignore();
    }
    pipe.add_command(claim);
    pipe.query::<(Value,)>(&mut conn).map(|(reply,)| reply)
}

/// ENQUEUE of job `id` (the seed's two keys) straight on one node.
fn enqueue_on(node: &RedisServer, queue: &Queue, via: Via, id: &JobId) -> redis::RedisResult<Value> {
    let mut conn = node.client().get_connection().unwrap();
    let keys = [queue.keyspace().job(id), queue.keyspace().pending()];
    let mut enqueue = match via {
        Via::Native => redis::cmd("EMQ.ENQUEUE"),
        Via::Lua => {
            let mut eval = redis::cmd("EVAL");
            eval.arg(echomq::executor::script_source(echomq::Name::Enqueue));
            eval
        }
    };
    enqueue.arg(2).arg(&keys).arg(id.as_str()).arg("again").query(&mut conn)
}

/// `queue`'s pending ids on `node` (through ASKING: the slot may be importing there).
fn pending_on(node: &RedisServer, queue: &Queue) -> Vec<String> {
    let mut conn = node.client().get_connection().unwrap();
    let (ids,): (Vec<String>,) = redis::pipe()
        .cmd("ASKING")
        .ignore()
        .cmd("ZRANGE")
        .arg(queue.keyspace().pending())
        .arg(0)
        .arg(-1)
        .query(&mut conn)
        .unwrap();
    ids
}

/// A resharding that moves a queue's keys a few at a time (as `redis-cli
/// --cluster reshard` does, ten per MIGRATE) splits the queue between two
/// nodes for a while. A claim that pops an id whose record is on the other
/// node must not drop the job: it answers TRYAGAIN and changes nothing, on
/// either node, and the cluster client's retry claims the job once the slot
/// has moved. An ENQUEUE of an id whose record moved is refused by Redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_on_a_half_moved_queue_says_tryagain_and_loses_nothing() {
    let cluster = RedisCluster::start(3, Some(module_path()));
    let client = ClusterClient::new(cluster.urls()).unwrap();
    for via in [Via::Lua, Via::Native] {
        let queue = Queue::new(executor(&client, via).await, &unique_queue("split")).unwrap();
        let [a, b, c] = [0, 1, 2].map(|_| JobId::mint());
        // Each with a policy of its own, so that the policy key exists too.
        for id in [a, b.clone(), c.clone()] {
            queue.enqueue_with(b"x".to_vec(), EnqueueOptions::default().id(id).attempts(9)).await.unwrap();
        }
        // One job active, and a rate whose log holds its claim, so the
        // active set, the config, the log (and the policies) exist on the source: the claim
        // below runs there instead of being sent on by Redis itself (a key
        // missing on a migrating slot is an ASK redirect, on the importing
        // one a TRYAGAIN: either way the claim waits for the move).
        queue
            .configure(
                echomq::Config::default()
                    .rate(echomq::Limit::To(echomq::Rate { claims: 1000, per: Duration::from_secs(3600) })),
            )
            .await
            .unwrap();
        assert_eq!(queue.claim_many(Duration::from_secs(60), 1, None).await.unwrap().jobs.len(), 1);

        let slot = slot(&cluster, &queue);
        let to = (cluster.owner(slot) + 1) % cluster.nodes().len();
        let mut moving = cluster.begin_move(slot, to);
        let (source, target) = (&cluster.nodes()[moving.from()], &cluster.nodes()[to]);
        let record = |id: &JobId| queue.keyspace().job(id).into_bytes();

        // The source keeps the sets; b's record has gone to the target.
        moving.keys(&[record(&b)]);
        let refused = claim_on(source, &queue, via, 2, false).unwrap_err();
        assert_eq!(refused.code(), Some("TRYAGAIN"), "{via:?} on the source: {refused}");
        assert_eq!(pending_on(source, &queue), [b.to_string(), c.to_string()], "{via:?}: nothing dropped");
        // b again, on the source, its record on the target: Redis itself
        // refuses it (a declared key missing while the slot moves), and the
        // module asks the cluster nothing of its own.
        let again = enqueue_on(source, &queue, via, &b).unwrap_err();
        assert_eq!(again.code(), Some("TRYAGAIN"), "{via:?}: no second b on the source: {again}");

        // The target has everything but c's record.
        let rest: Vec<Vec<u8>> = moving.left().into_iter().filter(|key| *key != record(&c)).collect();
        moving.keys(&rest);
        let refused = claim_on(target, &queue, via, 2, true).unwrap_err();
        assert_eq!(refused.code(), Some("TRYAGAIN"), "{via:?} on the target: {refused}");
        assert_eq!(pending_on(target, &queue), [b.to_string(), c.to_string()], "{via:?}: nothing dropped");

        // A claim through the cluster client retries until the move is done.
        let claiming = {
            let queue = queue.clone();
            tokio::spawn(async move {
                queue.claim_many(Duration::from_secs(60), 2, None).await.map(|leases| leases.jobs)
            })
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        moving.rest();
        moving.finish();
        let claimed = claiming.await.unwrap().unwrap();
        let ids: Vec<&JobId> = claimed.iter().map(|job| &job.id).collect();
        assert_eq!(ids, [&b, &c], "{via:?}: both jobs claimed after the move");
    }
}

/// On a cluster, an idle Lua claim waits on its queue's wake-up key on the
/// queue's own node, and an arrival wakes it well before its wait ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lua_idle_claim_on_a_cluster_is_woken_by_an_arrival() {
    let cluster = RedisCluster::start(3, None);
    let client = ClusterClient::new(cluster.urls()).unwrap();
    let executor = executor(&client, Via::Lua).await;
    for name in spread(&cluster, "cl-wake") {
        let queue = Queue::new(executor.clone(), &name).unwrap();
        let waiting = {
            let queue = queue.clone();
            tokio::spawn(async move {
                queue
                    .claim_many(Duration::from_secs(60), 1, Some(Duration::from_secs(30)))
                    .await
                    .map(|leases| leases.jobs)
            })
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        let id = queue.enqueue(b"wake".to_vec()).await.unwrap();
        let claimed =
            tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("woken").unwrap().unwrap();
        assert_eq!(claimed.iter().map(|job| &job.id).collect::<Vec<_>>(), [&id], "{name}");
    }
}

/// What each run of a parent read: its children's results.
type Runs = Arc<Mutex<Vec<Vec<(echomq::JobRef, Vec<u8>)>>>>;

/// A flow across the cluster: one parent, 1,000 children spread over three
/// queues whose slots are on the three nodes, every step a single-slot
/// call; the parent runs once, after all of them, and reads all 1,000
/// results. Beside it, a running job adds a child on each node and reads
/// their three results once they have run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_of_a_thousand_children_spans_three_nodes() {
    let cluster = Arc::new(RedisCluster::start(3, Some(module_path())));
    let client = ClusterClient::new(cluster.urls()).unwrap();
    for via in [Via::Lua, Via::Native] {
        // One queue a node for the children, and the parent's on the first.
        let mut children: Vec<String> = Vec::new();
        while children.len() < 3 {
            let name = unique_queue(&format!("kids-{via:?}"));
            let node = cluster.owner(cluster.slot(&format!("{{{name}}}")));
            if node == children.len() {
                children.push(name);
            }
        }
        let executor = executor(&client, via).await;
        let parents = Queue::new(executor.clone(), &unique_queue(&format!("parent-{via:?}"))).unwrap();
        let mut flow = echomq::Flow::new(b"parent".to_vec());
        for n in 0..1000 {
            flow = flow.child(&children[n % 3], format!("{n}").into_bytes());
        }
        let added = echomq::Flows::of(&parents).add(flow).await.unwrap();
        assert_eq!(added.children.len(), 1000);
        // And a job that adds a child on each node while it runs (ADOPT).
        parents.enqueue(b"adopt".to_vec()).await.unwrap();

        let runs: Runs = Arc::default();
        let seen = runs.clone();
        let kids = children.clone();
        let handler = move |job: JobContext| {
            let (seen, kids) = (seen.clone(), kids.clone());
            async move {
                if job.payload == b"adopt" {
                    let named = kids
                        .iter()
                        .fold(echomq::ChildJobs::new(), |named, queue| named.child(queue, b"a".to_vec()));
                    job.wait_for(named).await?;
                }
                if job.payload == b"parent" || job.payload == b"adopt" {
                    let results =
                        job.children_results().await.map_err(|err| HandlerError::from(err.to_string()))?;
                    seen.lock().unwrap().push(results);
                    return Ok::<_, HandlerError>(Vec::new());
                }
                Ok([b"r".as_slice(), &job.payload].concat())
            }
        };
        let options = WorkerOptions::default()
            .concurrency(16)
            .lease(Duration::from_secs(30))
            .idle_wait(Duration::from_millis(100))
            .upkeep(Duration::from_millis(100));
        let mut worker = Worker::with_options(parents.clone(), handler, options);
        for name in &children {
            worker = worker.queue(Queue::new(executor.clone(), name).unwrap());
        }
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let working = tokio::spawn(worker.run_until(async move {
            let _ = stopped.await;
        }));
        eventually("both parents ran", || async { runs.lock().unwrap().len() == 2 }).await;
        let _ = stop.send(());
        working.await.unwrap().unwrap();
        let mut runs = runs.lock().unwrap();
        runs.sort_by_key(Vec::len);
        assert_eq!(runs.len(), 2, "{via:?}: each parent ran to its end once");
        let adopted: Vec<&[u8]> = runs[0].iter().map(|(_, result)| result.as_slice()).collect();
        assert_eq!(adopted, [b"ra"; 3], "{via:?}: the running job's three children, one a node");
        let mut results: Vec<Vec<u8>> = runs[1].iter().map(|(_, result)| result.clone()).collect();
        results.sort();
        let mut want: Vec<Vec<u8>> = (0..1000).map(|n| format!("r{n}").into_bytes()).collect();
        want.sort();
        assert_eq!(results, want, "{via:?}: every child's result, once");
        let nodes: std::collections::BTreeSet<usize> =
            children.iter().map(|name| cluster.owner(cluster.slot(&format!("{{{name}}}")))).collect();
        assert_eq!(nodes.len(), 3, "the children's queues are on three nodes");
        println!("{via:?}: 1 parent, 1000 children over 3 nodes: the parent read all 1000 results");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_queue_spreads_evenly_over_three_nodes_and_a_partition_moves() {
    let cluster = Arc::new(RedisCluster::start(3, Some(module_path())));
    let client = ClusterClient::new(cluster.urls()).unwrap();
    for via in [Via::Lua, Via::Native] {
        let executor = executor(&client, via).await;
        let orders = echomq::Partitioned::create(executor, &unique_queue(&format!("orders-{via:?}")), 12)
            .await
            .unwrap();
        // redis-cli gives each of three masters a third of the slots, in order:
        // partitions 0-3 on the first, 4-7 on the second, 8-11 on the third.
        let owners: Vec<usize> =
            orders.partitions().iter().map(|q| cluster.owner(slot(&cluster, q))).collect();
        assert_eq!(owners, [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2], "{via:?}");

        let mut ids = Vec::new();
        for n in 0..600 {
            ids.push(orders.enqueue(format!("{n}").into_bytes()).await.unwrap());
        }
        let runs: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let seen = runs.clone();
        let handler = move |job: JobContext| {
            let seen = seen.clone();
            async move {
                *seen.lock().unwrap().entry(job.id.to_string()).or_default() += 1;
                Ok::<_, HandlerError>(())
            }
        };
        let options = WorkerOptions::default().concurrency(16).idle_wait(Duration::from_millis(100));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let worker = orders.worker(handler, options);
        let keeper = worker.id().to_owned();
        let working = tokio::spawn(worker.run_until(async move {
            let _ = stopped.await;
        }));
        // Mid-flow, partition 0's slot moves to the second node; jobs go on arriving.
        let moving = orders.partitions()[0].clone();
        eventually("partition 0 is part done", || async { moving.stats().await.unwrap().done > 0 }).await;
        let (mover, moving_slot) = (cluster.clone(), slot(&cluster, &moving));
        let moved = tokio::task::spawn_blocking(move || mover.migrate_slot(moving_slot, 1)).await.unwrap();
        assert!(moved > 0 && cluster.owner(moving_slot) == 1, "{via:?}: partition 0 moved");
        for n in 600..900 {
            ids.push(orders.enqueue(format!("{n}").into_bytes()).await.unwrap());
        }
        eventually("every job ran", || async { runs.lock().unwrap().len() == ids.len() }).await;
        // The worker keeps each partition under its upkeep lease, on its node
        // (partition 0's moved there mid-flow).
        for partition in orders.partitions() {
            let lease = echomq::executor::Command::Get(format!("emq:{{{}}}:upkeep", partition.name()));
            let held = || async {
                let holder = partition.executor().plain().one(lease.clone()).await;
                holder.and_then(echomq::executor::Answer::text).ok().flatten()
            };
            eventually("the worker holds the lease", || async { held().await.as_ref() == Some(&keeper) })
                .await;
        }
        let _ = stop.send(());
        working.await.unwrap().unwrap();
        let once = ids.iter().all(|id| runs.lock().unwrap().get(id.as_str()) == Some(&1));
        assert!(once, "{via:?}: each job ran once");
        let mut per_node = [0usize; 3];
        for id in &ids {
            per_node[owners[orders.index_of(id)]] += 1;
        }
        // 300 a node on average; 200 to 400 is six sigmas either way.
        assert!(per_node.iter().all(|n| (200..=400).contains(n)), "{via:?}: jobs per node {per_node:?}");
        // Back where it was, for the next executor's queue.
        let mover = cluster.clone();
        tokio::task::spawn_blocking(move || mover.migrate_slot(moving_slot, 0)).await.unwrap();
    }
}

/// A worker of a partitioned queue, idle on every partition, waits for each
/// on a connection of its own (one pop cannot span slots): an arrival in
/// any partition wakes it long before its `idle_wait` would look again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_partitioned_worker_is_woken_by_an_arrival_in_any_partition() {
    let cluster = RedisCluster::start(3, Some(module_path()));
    let client = ClusterClient::new(cluster.urls()).unwrap();
    for via in [Via::Lua, Via::Native] {
        let orders = echomq::Partitioned::create(executor(&client, via).await, &unique_queue("idle"), 6)
            .await
            .unwrap();
        let ran: Arc<Mutex<Vec<JobId>>> = Arc::default();
        let seen = ran.clone();
        let handler = move |job: JobContext| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(job.id.clone());
                Ok::<_, HandlerError>(())
            }
        };
        let options = WorkerOptions::default().concurrency(8).idle_wait(Duration::from_secs(60));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let working = tokio::spawn(orders.worker(handler, options).run_until(async move {
            let _ = stopped.await;
        }));
        // Idle a while, every partition empty; then one job in each partition in turn.
        tokio::time::sleep(Duration::from_millis(300)).await;
        for k in 0..6 {
            let id = orders.mint_in(k);
            let started = std::time::Instant::now();
            orders.enqueue_with(b"x".to_vec(), EnqueueOptions::default().id(id.clone())).await.unwrap();
            eventually("the job ran", || async { ran.lock().unwrap().contains(&id) }).await;
            let took = started.elapsed();
            assert!(took < Duration::from_secs(20), "{via:?}: partition {k}'s job waited {took:?}");
        }
        let _ = stop.send(());
        working.await.unwrap().unwrap();
    }
}
