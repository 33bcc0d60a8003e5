//! A partitioned queue against one queue on a local Cluster of three
//! masters (protocol 1.8, PROTOCOL.md §7.10), the module on each.
//!
//! Rounds, interleaved: the same jobs through one queue (one slot, one
//! node) and through a queue of `--partitions` partitions spread over the
//! three nodes, each enqueued and then drained by one `Worker` (a no-op
//! handler), the same retention in both (10,000 done jobs kept, split
//! between the partitions). For each: the jobs/s of the drain, and the
//! servers' CPU per job (`INFO cpu`, user and system, from before the
//! enqueue to the end of the trims), summed over the nodes, and each
//! node's share; beside it the commands' own µs (`INFO commandstats`),
//! which count more than the servers spent: the time a busy machine kept
//! a server off its core mid-command, and each command a script (or the
//! module) calls both on its own and inside the call. `--commands` lists
//! them, command by command. From the CPU per job it projects what one
//! queue and a partitioned queue could carry with a core per primary, for
//! 3 and 6 primaries: this machine has 2 cores for the three nodes and the
//! worker, so it cannot host that, and says so.
//!
//! With `--spread`, ordinary queues, one on each node, worked by one
//! worker: what spreading over three busy servers costs on this machine,
//! partitions or not (the control for the partitioned queue's ratio).
//! With `--one-node`, every queue's slot moved to the first node: what
//! partitioning itself costs a server, with no spreading at all.
//!
//! With `--exact`, two more layouts: the partitioned queue held to an exact
//! rate too high to bind (100,000 claims per 100 ms), so that its rows show
//! what the permits cost (a PERMIT a claim, on the definition's node), and
//! one held to an exact concurrency too high to bind (100,000 jobs): a
//! PERMIT a claim, a RENEW a round of heartbeats, a ZREM a batch of ended
//! jobs; and,
//! after the rounds, the partitioned queue held to `--exact-rate` claims a
//! second for `--steady` seconds, with a backlog: the claims the
//! partitions' event logs recorded, and the most that any 1,000 ms held.
//!
//! Then a steady load on the partitioned queue: a producer at a steady
//! rate (60% of the drain's measured jobs/s by default) and the worker;
//! every 250 ms the age of each partition's oldest pending job (from its
//! id's ULID time), and the spread between the oldest and the youngest of
//! those ages. Run it on purpose, in release mode:
//!
//! ```text
//! cargo build --release -p echomq-module
//! ECHOMQ_MODULE=target/release/libechomq_module.so cargo run --release -p echomq-bench --bin echomq-partitions -- --via native
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Parser;
use echomq::worker::{HandlerError, JobContext, Worker, WorkerOptions};
use echomq::{Config, Executor, Limit, Lua, Partitioned, Queue, Rate, Retention};
use echomq_test_support::{module_path, unique_queue, RedisCluster};
use redis::cluster::ClusterClient;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A partitioned queue against one queue on a local three-master Cluster.
#[derive(Parser, Debug)]
struct Options {
    /// Jobs a round.
    #[arg(long, default_value_t = 60_000)]
    jobs: usize,
    /// Partitions of the partitioned queue.
    #[arg(long, default_value_t = 12)]
    partitions: usize,
    /// The worker's concurrency.
    #[arg(long, default_value_t = 256)]
    concurrency: usize,
    /// Rounds of each layout, interleaved; the medians are printed.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// `native` or `lua`.
    #[arg(long, default_value = "native")]
    via: String,
    /// Jobs a producer's call enqueues (each call's jobs one run in one partition).
    #[arg(long, default_value_t = 100)]
    batch: usize,
    /// The steady load's rate, jobs/s (default: 60% of the partitioned queue's measured jobs/s).
    #[arg(long)]
    steady_rate: Option<f64>,
    /// Seconds of steady load (0: none).
    #[arg(long, default_value_t = 20)]
    steady: u64,
    /// Also measure an exact rate across the partitions: its cost, and how it holds.
    #[arg(long)]
    exact: bool,
    /// After each round, each command's calls and server µs a job, summed over the nodes.
    #[arg(long)]
    commands: bool,
    /// Also measure ordinary queues, one a node, worked by one worker: what
    /// spreading over the nodes costs on this machine, partitions or not.
    #[arg(long)]
    spread: bool,
    /// With --exact: the rate held, claims a second across every partition.
    #[arg(long, default_value_t = 50)]
    exact_rate: u64,
    /// Move every queue's slot to the first node before the rounds: what
    /// partitioning itself costs a server, apart from three busy servers
    /// sharing this machine's cores (not with --spread).
    #[arg(long, conflicts_with = "spread")]
    one_node: bool,
}

/// Done jobs kept (the default retention), split between the partitions.
const KEPT: usize = 10_000;

/// Commands the benchmark sends for itself, left out of the server's time
/// (and the `CLUSTER NODES` the module asks, whose time its command's includes).
const BOOKKEEPING: [&str; 4] = ["info", "config", "flushall", "cluster"];

/// `INFO <section>` as `node` answers it.
fn info(node: &echomq_test_support::RedisServer, section: &str) -> String {
    let mut conn = node.client().get_connection().expect("connect to a node");
    redis::cmd("INFO").arg(section).query(&mut conn).expect("INFO")
}

/// Each command of an `INFO commandstats`: its name (`cluster|nodes` for
/// a subcommand), calls and µs.
fn command_stats(info: &str) -> impl Iterator<Item = (&str, u64, f64)> {
    info.lines().filter_map(|line| line.strip_prefix("cmdstat_")).filter_map(|line| {
        let (name, fields) = line.split_once(':')?;
        let field = |key: &str| fields.split(',').find_map(|f| f.strip_prefix(key)).unwrap_or("0");
        Some((name, field("calls=").parse().unwrap_or(0), field("usec=").parse().unwrap_or(0.0)))
    })
}

/// Whether the benchmark sent `command` for itself (its subcommands too).
fn bookkeeping(command: &str) -> bool {
    BOOKKEEPING.contains(&command.split('|').next().unwrap_or(command))
}

/// The µs each node spent in commands since its last `CONFIG RESETSTAT`.
fn server_usec(cluster: &RedisCluster) -> Vec<f64> {
    let usec =
        |info: &str| command_stats(info).filter(|(name, ..)| !bookkeeping(name)).map(|(.., us)| us).sum();
    cluster.nodes().iter().map(|node| usec(&info(node, "commandstats"))).collect()
}

/// The CPU each node's process has used, µs (`INFO cpu`, user and system):
/// its whole cost, the event loop and its sockets too, and only while on a
/// core, where a command's µs also count the time the OS had it waiting.
fn server_cpu(cluster: &RedisCluster) -> Vec<f64> {
    let cpu = |info: &str| -> f64 {
        let field = |key: &str| {
            info.lines().find_map(|line| line.strip_prefix(key)).and_then(|v| v.trim().parse::<f64>().ok())
        };
        (field("used_cpu_user:").unwrap_or(0.0) + field("used_cpu_sys:").unwrap_or(0.0)) * 1e6
    };
    cluster.nodes().iter().map(|node| cpu(&info(node, "cpu"))).collect()
}

/// Each command's calls and µs since the last `CONFIG RESETSTAT`, summed over
/// the nodes, the most time first (a command a script or the module calls
/// counts beside the call, whose own time includes it).
fn commands(cluster: &RedisCluster) -> Vec<(String, u64, f64)> {
    let mut by_name: std::collections::BTreeMap<String, (u64, f64)> = Default::default();
    for node in cluster.nodes() {
        for (name, calls, usec) in command_stats(&info(node, "commandstats")) {
            let entry = by_name.entry(name.to_owned()).or_default();
            entry.0 += calls;
            entry.1 += usec;
        }
    }
    let mut listed: Vec<(String, u64, f64)> =
        by_name.into_iter().map(|(name, (n, us))| (name, n, us)).collect();
    listed.sort_by(|a, b| b.2.total_cmp(&a.2));
    listed
}

/// Ordinary queues over `via`, one on each node.
fn one_a_node(cluster: &RedisCluster, via: &Arc<dyn Executor>) -> Vec<Queue> {
    let mut names: Vec<Option<String>> = vec![None; cluster.nodes().len()];
    while names.iter().any(Option::is_none) {
        let name = unique_queue("spread");
        let node = cluster.owner(cluster.slot(&format!("{{{name}}}")));
        names[node].get_or_insert(name);
    }
    names.into_iter().flatten().map(|name| Queue::new(via.clone(), &name).expect("a queue")).collect()
}

/// Every slot the layouts' keys are in (each queue's, and a partitioned
/// queue's own, its definition's) moved to the first node, with its keys.
fn onto_one_node(cluster: &RedisCluster, layouts: &[Layout]) {
    let mut names: Vec<&str> = layouts.iter().flat_map(|layout| layout.queues()).map(Queue::name).collect();
    names.extend(layouts.iter().filter_map(Layout::partitioned).map(Partitioned::name));
    tokio::task::block_in_place(|| {
        for name in names {
            let slot = cluster.slot(&format!("{{{name}}}"));
            if cluster.owner(slot) != 0 {
                let _keys = cluster.migrate_slot(slot, 0);
            }
        }
    });
}

/// Every node: `args`, on a connection of its own.
fn on_every_node(cluster: &RedisCluster, args: &[&str]) {
    for node in cluster.nodes() {
        let mut conn = node.client().get_connection().expect("connect to a node");
        let _: redis::Value = redis::cmd(args[0]).arg(&args[1..]).query(&mut conn).expect("a node's answer");
    }
}

async fn executor(client: &ClusterClient, via: &str) -> Arc<dyn Executor> {
    if via == "lua" {
        let open = {
            let client = client.clone();
            move || {
                let client = client.clone();
                async move { client.get_async_connection().await }
            }
        };
        let conn = client.get_async_connection().await.expect("connect to the cluster");
        return Arc::new(Lua::new(conn).with_blocking_connections(open));
    }
    echomq::connect_cluster(client).await.expect("the module on every node")
}

/// One queue, or a partitioned one, or a partitioned one under an exact
/// rate or an exact concurrency, or ordinary queues one a node (`--spread`).
enum Layout {
    One(Queue),
    Partitioned(Partitioned),
    Exact(Partitioned),
    Capped(Partitioned),
    Spread(Vec<Queue>),
}

/// The exact concurrency of the cost rounds: never reached, so every job
/// holds a running permit and no claim waits for one.
const UNBOUND_CAP: u64 = 100_000;

/// The exact rate of the cost rounds: never reached, so every claim pays
/// for its permits and none waits for them.
const UNBOUND: Rate = Rate { claims: 100_000, per: Duration::from_millis(100) };

impl Layout {
    fn name(&self) -> String {
        match self {
            Layout::One(_) => "one queue".into(),
            Layout::Partitioned(p) => format!("{} partitions", p.partitions().len()),
            Layout::Exact(p) => format!("{} partitions, exact rate", p.partitions().len()),
            Layout::Capped(p) => format!("{} partitions, exact concurrency", p.partitions().len()),
            Layout::Spread(queues) => format!("{} queues, one a node", queues.len()),
        }
    }

    fn partitioned(&self) -> Option<&Partitioned> {
        match self {
            Layout::One(_) | Layout::Spread(_) => None,
            Layout::Partitioned(p) | Layout::Exact(p) | Layout::Capped(p) => Some(p),
        }
    }

    async fn enqueue(&self, jobs: usize, batch: usize) {
        let payload = vec![b'x'; 53];
        for (call, start) in (0..jobs).step_by(batch).enumerate() {
            let batch = (start..jobs.min(start + batch)).map(|_| (payload.clone(), Default::default()));
            let outcomes = match self.partitioned() {
                // Ordinary queues take the calls in turn.
                None => self.queues()[call % self.queues().len()].enqueue_many(batch).await,
                Some(p) => p.enqueue_many(batch).await,
            };
            assert!(outcomes.expect("enqueued").iter().all(Result::is_ok), "every job enqueued");
        }
    }

    /// Its queues: the one, or the partitions.
    fn queues(&self) -> &[Queue] {
        match self {
            Layout::One(queue) => std::slice::from_ref(queue),
            Layout::Spread(queues) => queues,
            Layout::Partitioned(p) | Layout::Exact(p) | Layout::Capped(p) => p.partitions(),
        }
    }

    /// Done jobs kept, in all.
    async fn done(&self) -> usize {
        let mut done = 0;
        for queue in self.queues() {
            done += queue.stats().await.expect("stats").done as usize;
        }
        done
    }

    fn worker(&self, done: Arc<AtomicUsize>, options: WorkerOptions) -> Worker {
        let handler = move |_job: JobContext| {
            let done = done.clone();
            async move {
                done.fetch_add(1, Ordering::Relaxed);
                Ok::<_, HandlerError>(())
            }
        };
        match self.partitioned() {
            None => {
                let worker = Worker::with_options(self.queues()[0].clone(), handler, options);
                self.queues()[1..].iter().fold(worker, |worker, queue| worker.queue(queue.clone()))
            }
            Some(p) => p.worker(handler, options),
        }
    }
}

/// What one round measured: each node's command µs and CPU µs, and the drain's jobs/s.
#[derive(Clone)]
struct Round {
    usec: Vec<f64>,
    cpu: Vec<f64>,
    rate: f64,
}

/// One round: what it measured.
async fn round(cluster: &RedisCluster, layout: &Layout, options: &Options) -> Round {
    on_every_node(cluster, &["FLUSHALL"]);
    on_every_node(cluster, &["CONFIG", "RESETSTAT"]);
    // The same retention in all: 10,000 done jobs kept, a partition its share.
    let keep = |count: usize| Config::default().keep_done(Retention { age: None, count: Some(count as u64) });
    match layout.partitioned() {
        None => {
            for queue in layout.queues() {
                queue.configure(keep(KEPT / layout.queues().len())).await.expect("configured");
            }
        }
        Some(p) => {
            // The definition, flushed with the rest, written again.
            let via = p.partitions()[0].executor().clone();
            Partitioned::create(via, p.name(), p.partitions().len()).await.expect("partitioned");
            p.configure(keep(KEPT / p.partitions().len())).await.expect("configured");
            if matches!(layout, Layout::Exact(_)) {
                p.exact_rate(Limit::To(UNBOUND)).await.expect("an exact rate");
            }
            if matches!(layout, Layout::Capped(_)) {
                p.exact_concurrency(Limit::To(UNBOUND_CAP)).await.expect("an exact concurrency");
            }
        }
    }
    let cpu_before = server_cpu(cluster);
    layout.enqueue(options.jobs, options.batch).await;
    let enqueued: f64 = server_usec(cluster).iter().sum();
    eprintln!("#   enqueue: {:.2} server µs per job", enqueued / options.jobs as f64);
    let done = Arc::new(AtomicUsize::new(0));
    let worker_options = WorkerOptions::default().concurrency(options.concurrency);
    let worker = layout.worker(done.clone(), worker_options);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let started = Instant::now();
    let task = tokio::spawn(worker.run_until(async move {
        let _ = stopped.await;
    }));
    while done.load(Ordering::Relaxed) < options.jobs {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let rate = options.jobs as f64 / started.elapsed().as_secs_f64();
    // The retention's trims, which upkeep does a bounded amount at a time, counted too.
    let deadline = Instant::now() + Duration::from_secs(60);
    while layout.done().await > KEPT && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = stop.send(());
    task.await.expect("the worker stops").expect("the worker runs");
    if options.commands {
        for (name, calls, usec) in commands(cluster) {
            let jobs = options.jobs as f64;
            eprintln!("#   {name}: {calls} calls, {:.3} server µs a job", usec / jobs);
        }
    }
    let cpu = server_cpu(cluster).iter().zip(cpu_before).map(|(after, before)| after - before).collect();
    Round { usec: server_usec(cluster), cpu, rate }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The age of each partition's oldest pending job, ms (0 for none pending).
async fn oldest_ages(p: &Partitioned, conn: &mut redis::cluster_async::ClusterConnection) -> Vec<u64> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970").as_millis() as u64;
    let mut ages = Vec::new();
    for queue in p.partitions() {
        let head: Vec<String> = redis::cmd("ZRANGE")
            .arg(queue.keyspace().pending())
            .arg(0)
            .arg(0)
            .query_async(conn)
            .await
            .expect("ZRANGE");
        let minted = head.first().and_then(|id| ulid::Ulid::from_string(id.get(4..)?).ok());
        ages.push(minted.map_or(0, |ulid| now.saturating_sub(ulid.timestamp_ms())));
    }
    ages
}

/// Steady load: a producer at `rate` jobs/s, in calls of `--batch`, and
/// the worker; the spread of the partitions' oldest-pending ages (an
/// empty partition's is 0).
async fn steady(client: &ClusterClient, p: &Partitioned, options: &Options, rate: f64) {
    let layout = Layout::Partitioned(p.clone());
    let done = Arc::new(AtomicUsize::new(0));
    let worker = layout.worker(done, WorkerOptions::default().concurrency(options.concurrency));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(worker.run_until(async move {
        let _ = stopped.await;
    }));
    let producing = {
        let (p, seconds, batch) = (p.clone(), options.steady, options.batch);
        tokio::spawn(async move {
            let started = Instant::now();
            let mut sent = 0usize;
            while started.elapsed() < Duration::from_secs(seconds) {
                let due = (started.elapsed().as_secs_f64() * rate) as usize;
                while sent < due {
                    let n = batch.min(due - sent);
                    p.enqueue_many((0..n).map(|_| (vec![b'x'; 53], Default::default())))
                        .await
                        .expect("enqueued");
                    sent += n;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            sent
        })
    };
    let mut conn = client.get_async_connection().await.expect("connect to the cluster");
    let (mut spreads, mut oldest) = (Vec::new(), 0u64);
    while !producing.is_finished() {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let ages = oldest_ages(p, &mut conn).await;
        let (max, min) = (ages.iter().copied().max().unwrap_or(0), ages.iter().copied().min().unwrap_or(0));
        oldest = oldest.max(max);
        spreads.push((max - min) as f64);
    }
    let sent = producing.await.expect("the producer");
    let _ = stop.send(());
    task.await.expect("the worker stops").expect("the worker runs");
    let worst = spreads.iter().copied().fold(0.0, f64::max);
    println!(
        "\nSteady load, {} s: {sent} jobs at {rate:.0} jobs/s in calls of {}, the same worker. Every 250 ms, \
         the spread between the partitions' oldest-pending ages (an empty partition's is 0), {} samples: \
         median {:.0} ms, worst {worst:.0} ms; the oldest pending job seen was {oldest} ms old.",
        options.steady,
        options.batch,
        spreads.len(),
        median(spreads.clone()),
    );
}

/// The partitioned queue held to `--exact-rate` claims a second, with a
/// backlog, for `--steady` seconds (10 at least): the claims its event logs
/// recorded, by the nodes' clocks, and the most any 1,000 ms held.
async fn exactly(p: &Partitioned, options: &Options) {
    let via = p.partitions()[0].executor().clone();
    let p = Partitioned::create(via, p.name(), p.partitions().len()).await.expect("partitioned");
    let rate = Rate { claims: options.exact_rate, per: Duration::from_secs(1) };
    p.exact_rate(Limit::To(rate)).await.expect("an exact rate");
    let seconds = options.steady.max(10);
    let backlog = (options.exact_rate * (seconds + 2)) as usize;
    let layout = Layout::Partitioned(p.clone());
    layout.enqueue(backlog, options.batch).await;
    let worker = layout
        .worker(Arc::new(AtomicUsize::new(0)), WorkerOptions::default().concurrency(options.concurrency));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(worker.run_until(async move {
        let _ = stopped.await;
    }));
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let _ = stop.send(());
    task.await.expect("the worker stops").expect("the worker runs");
    let mut claimed = Vec::new();
    for queue in p.partitions() {
        let mut events = queue.events(echomq::EventsFrom::Oldest).await.expect("the event log");
        while let Some(event) = events.next_within(Duration::from_millis(1)).await.expect("an event") {
            if event.kind == echomq::EventKind::Active {
                claimed.push(event.id.ms);
            }
        }
    }
    claimed.sort_unstable();
    let busiest = claimed
        .iter()
        .map(|at| claimed.partition_point(|t| *t < at + 1000) - claimed.partition_point(|t| t < at))
        .max();
    let span = claimed.last().zip(claimed.first()).map_or(0, |(last, first)| last - first) as f64 / 1000.0;
    println!(
        "\nExact rate {}/1s across {} partitions, {seconds} s with a backlog: {} claims over {span:.1} s \
         ({:.1}/s), the busiest 1,000 ms held {} (never more than {} is the promise; a busy queue runs \
         up to a tenth below it).",
        options.exact_rate,
        p.partitions().len(),
        claimed.len(),
        claimed.len() as f64 / span.max(0.001),
        busiest.unwrap_or(0),
        options.exact_rate,
    );
}

/// Each round's measures, by layout.
type Measured = Vec<Vec<Round>>;

/// The table of `measured`'s medians, the ratio and the projection; each layout's median jobs/s.
fn report(layouts: &[Layout], measured: &Measured, options: &Options) -> Vec<f64> {
    let moved = if options.one_node { ", every queue's slot moved to node 1" } else { "" };
    println!(
        "Partitioned queue against one queue, {} jobs a round, a worker of {} slots, via {}, on a local Cluster of \
         3 masters{moved} (this 2-core machine hosts the 3 nodes and the worker); median of {} rounds.\n",
        options.jobs, options.concurrency, options.via, options.rounds
    );
    println!(
        "| layout | drain, jobs/s | server CPU µs a job (enqueue, work, trim), all nodes | node 1 | node 2 | node 3 \
         | commands' µs a job |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let (mut cpu_per_job, mut usec_per_job, mut rates) = (Vec::new(), Vec::new(), Vec::new());
    for (layout, rounds) in layouts.iter().zip(measured) {
        let rate = median(rounds.iter().map(|round| round.rate).collect());
        let jobs = options.jobs as f64;
        let cpu = median(rounds.iter().map(|round| round.cpu.iter().sum::<f64>()).collect()) / jobs;
        let usec = median(rounds.iter().map(|round| round.usec.iter().sum::<f64>()).collect()) / jobs;
        let shares: Vec<String> = (0..3)
            .map(|node| median(rounds.iter().map(|r| r.cpu[node] / r.cpu.iter().sum::<f64>()).collect()))
            .map(|share| format!("{:.1}%", share * 100.0))
            .collect();
        println!("| {} | {rate:.0} | {cpu:.2} | {} | {usec:.2} |", layout.name(), shares.join(" | "));
        cpu_per_job.push(cpu);
        usec_per_job.push(usec);
        rates.push(rate);
    }
    ratios(layouts, &cpu_per_job, &usec_per_job, &rates, options);
    rates
}

/// The ratios and the projection from each layout's CPU and commands' µs a
/// job and jobs/s: the partitioned queue's against one queue's, and the
/// other layouts' where measured.
fn ratios(layouts: &[Layout], cpu_per_job: &[f64], usec_per_job: &[f64], rates: &[f64], options: &Options) {
    let (one, parted) = (cpu_per_job[0], cpu_per_job[1]);
    println!(
        "\nServer time per job, partitioned ÷ one queue: {:.3}× by the servers' CPU ({:.3}× by the commands' \
         µs, which also count the time a busy machine kept a server off its core, and a script's calls once \
         in the script and once on their own)",
        parted / one,
        usec_per_job[1] / usec_per_job[0]
    );
    let spread = layouts.iter().position(|layout| matches!(layout, Layout::Spread(_)));
    if let Some(k) = spread {
        println!(
            "{} ÷ one queue: {:.3}× by the servers' CPU; {} partitions ÷ {}: {:.3}×.",
            layouts[k].name(),
            cpu_per_job[k] / one,
            options.partitions,
            layouts[k].name(),
            parted / cpu_per_job[k]
        );
    }
    for (what, k) in [
        ("An exact rate's permits", layouts.iter().position(|layout| matches!(layout, Layout::Exact(_)))),
        (
            "An exact concurrency's permits",
            layouts.iter().position(|layout| matches!(layout, Layout::Capped(_))),
        ),
    ] {
        if let Some(k) = k {
            println!(
                "{what} (never reached): server CPU per job ×{:.3} the partitioned queue's, drain ×{:.3}.",
                cpu_per_job[k] / parted,
                rates[k] / rates[1]
            );
        }
    }
    if options.one_node {
        return;
    }
    println!(
        "Projected from server CPU alone (each job enqueued, worked and trimmed), a core per primary (not \
         measured: this machine cannot host it): one queue ≤ {:.0} jobs/s on any number of primaries; {} \
         partitions ≤ {:.0} jobs/s on 3 primaries, ≤ {:.0} on 6.",
        1e6 / one,
        options.partitions,
        3e6 / parted,
        6e6 / parted
    );
}

#[tokio::main]
async fn main() {
    let options = Options::parse();
    let cluster = RedisCluster::start(3, Some(module_path()));
    let client = ClusterClient::new(cluster.urls()).expect("a cluster client");
    let via = executor(&client, &options.via).await;
    let one = Layout::One(Queue::new(via.clone(), &unique_queue("one")).expect("a queue"));
    let name = unique_queue("parted");
    let parted =
        Layout::Partitioned(Partitioned::create(via, &name, options.partitions).await.expect("partitioned"));
    let mut layouts = vec![one, parted];
    if options.exact {
        let via = layouts[1].queues()[0].executor().clone();
        let name = unique_queue("exact");
        layouts.push(Layout::Exact(
            Partitioned::create(via.clone(), &name, options.partitions).await.expect("partitioned"),
        ));
        let name = unique_queue("capped");
        layouts.push(Layout::Capped(
            Partitioned::create(via, &name, options.partitions).await.expect("partitioned"),
        ));
    }
    if options.spread {
        layouts.push(Layout::Spread(one_a_node(&cluster, layouts[0].queues()[0].executor())));
    }
    if options.one_node {
        onto_one_node(&cluster, &layouts);
    }
    let mut measured: Measured = vec![Vec::new(); layouts.len()];
    for n in 0..options.rounds {
        for k in (0..layouts.len()).map(|k| (k + n) % layouts.len()) {
            let measures = round(&cluster, &layouts[k], &options).await;
            eprintln!(
                "# round {} {}: {:.0} jobs/s, server µs per node {:.0?}, CPU µs per node {:.0?}",
                n + 1,
                layouts[k].name(),
                measures.rate,
                measures.usec,
                measures.cpu
            );
            measured[k].push(measures);
        }
    }
    let rates = report(&layouts, &measured, &options);
    if options.exact {
        if let Layout::Partitioned(p) = &layouts[1] {
            on_every_node(&cluster, &["FLUSHALL"]);
            exactly(p, &options).await;
        }
    }
    if options.steady > 0 {
        if let Layout::Partitioned(p) = &layouts[1] {
            on_every_node(&cluster, &["FLUSHALL"]);
            let via = p.partitions()[0].executor().clone();
            Partitioned::create(via, p.name(), p.partitions().len()).await.expect("partitioned");
            steady(&client, p, &options, options.steady_rate.unwrap_or(rates[1] * 0.6)).await;
        }
    }
}
