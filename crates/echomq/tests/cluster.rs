//! EchoMQ on a Redis Cluster of three masters, the module loaded on each:
//! queues spread over every node, one worker over all of them, on Lua and on
//! Native; and one queue's slot moved to another node while jobs flow in and
//! out of it. The client follows MOVED and ASK; every job is done, none lost.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use echomq::worker::{JobContext, Worker, WorkerOptions};
use echomq::{Executor, JobId, Lua, Native, Queue};
use echomq_test_support::{module_path, unique_queue, RedisCluster, RedisServer};
use redis::cluster::{ClusterClient, ClusterConfig};

#[derive(Clone, Copy, Debug)]
enum Via {
    Lua,
    Native,
}

/// Queues per node, so every node serves some.
const QUEUES_PER_NODE: usize = 2;
/// Jobs per queue before the slot moves, and as many again while and after it does.
const JOBS: usize = 300;
/// How long the whole flow may take on a busy machine.
const DEADLINE: Duration = Duration::from_secs(60);

async fn executor(client: &ClusterClient, via: Via) -> Arc<dyn Executor> {
    let conn = client.get_async_connection().await.unwrap();
    match via {
        Via::Lua => Arc::new(Lua::new(conn)),
        Via::Native => {
            let blocking = client.get_async_connection_with_config(ClusterConfig::new()).await.unwrap();
            Arc::new(Native::new(conn).with_blocking_connection(blocking))
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

async fn eventually<F, Fut>(what: &str, check: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + DEADLINE;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
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

    // The module is on every node: the cluster executor is the native one.
    let picked = echomq::connect_cluster(&client).await.unwrap();
    assert!(picked.waits(), "connect_cluster picks Native, which blocks instead of polling");

    for via in [Via::Lua, Via::Native] {
        let names = spread(&cluster, &format!("cl-{via:?}"));
        let executor = executor(&client, via).await;
        let queues: Vec<Queue> =
            names.iter().map(|name| Queue::with_executor(executor.clone(), name).unwrap()).collect();

        // Each job's runs, by id.
        let runs: Arc<Mutex<HashMap<JobId, usize>>> = Arc::default();
        let seen = runs.clone();
        let handler = move |job: JobContext| {
            *seen.lock().unwrap().entry(job.id).or_default() += 1;
            async { Ok(()) }
        };
        let options = WorkerOptions {
            concurrency: 8,
            lease: Duration::from_secs(20),
            idle_wait: Duration::from_millis(100),
            upkeep: Duration::from_millis(100),
            ..WorkerOptions::default()
        };
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
        working.await.unwrap();

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
