//! Run mode, the orchestrator: its own redis-server, a fleet of workers, the
//! producer and the chaos plan at once, with an audit after each event; then
//! the drain, a graceful stop, the final audit and the verdict; then the
//! report.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use echomq::transition::Retention;
use echomq::{JobId, Keyspace, Queue};
use echomq_test_support::{module_path, RedisServer, ServerOptions};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::time::Instant;

use crate::audit::{self, Row};
use crate::chaos::{self, Action, Pauses, Stage};
use crate::fleet::{Fleet, Spec};
use crate::journal::{self, Entry};
use crate::produce::produce;
use crate::report::Report;
use crate::rng::Rng;
use crate::verdict::Verdict;
use crate::worker::FAILS_FIRST;

/// The executor the workers run on.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// The Lua scripts, on a server without the module (idle workers wait on the wake-up key).
    Lua,
    /// The native module, loaded into the server (`ECHOMQ_MODULE`, or the workspace's debug build).
    Native,
}

/// How a chaos run goes.
#[derive(clap::Args, Debug)]
pub struct Options {
    /// The executor.
    #[arg(long, value_enum, default_value_t = Via::Lua)]
    pub via: Via,
    /// Jobs to enqueue.
    #[arg(long, default_value_t = 20_000)]
    pub jobs: usize,
    /// Worker processes alive at any time.
    #[arg(long, default_value_t = 3)]
    pub workers: usize,
    /// Jobs at once in each worker.
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
    /// Seconds over which the jobs arrive and the chaos happens.
    #[arg(long, default_value_t = 20.0)]
    pub seconds: f64,
    /// Workers killed with SIGKILL (each replaced at once).
    #[arg(long, default_value_t = 6)]
    pub kills: u32,
    /// Workers paused with SIGSTOP past their lease, then resumed.
    #[arg(long, default_value_t = 2)]
    pub pauses: u32,
    /// redis-server restarts (SIGKILL, then start on the same AOF).
    #[arg(long, default_value_t = 2)]
    pub restarts: u32,
    /// Each claim's lease, ms.
    #[arg(long, default_value_t = 2000)]
    pub lease_ms: u64,
    /// The longest a handler works (sleeps), ms; each job's own length is fixed by its number.
    #[arg(long, default_value_t = 40)]
    pub work_ms: u64,
    /// The seed of the chaos plan and of the victims; by default from the clock.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Keep the journals here; by default a temporary directory, removed after a clean run.
    #[arg(long)]
    pub journals: Option<PathBuf>,
}

/// The queue every run uses; the server is the run's own.
const QUEUE: &str = "chaos";

/// How long stopped workers get to finish gracefully (their grace is 5 s).
const STOP: Duration = Duration::from_secs(20);

/// Run the chaos and print what happened; `Ok(true)` when no promise broke.
pub async fn run(o: Options) -> Result<bool, String> {
    let began = Instant::now();
    let seed = o.seed.unwrap_or_else(|| {
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |since| since.as_nanos() as u64)
    });
    let via = format!("{:?}", o.via).to_lowercase();
    println!(
        "echomq-chaos run --via {via} --seed {seed} --jobs {} --workers {} --concurrency {} --seconds {} \
         --kills {} --pauses {} --restarts {} --lease-ms {} --work-ms {}",
        o.jobs, o.workers, o.concurrency, o.seconds, o.kills, o.pauses, o.restarts, o.lease_ms, o.work_ms
    );
    let mut rng = Rng::new(seed);
    let span = Duration::from_secs_f64(o.seconds);
    let lease = Duration::from_millis(o.lease_ms);
    let (dir, temporary) = match &o.journals {
        Some(dir) => (dir.clone(), false),
        None => (std::env::temp_dir().join(format!("echomq-chaos-{}", std::process::id())), true),
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;

    let native = o.via == Via::Native;
    let server = tokio::task::spawn_blocking(move || {
        let args = ["--appendonly", "yes", "--appendfsync", "always"].map(str::to_owned).to_vec();
        RedisServer::start_with(ServerOptions {
            module: native.then(module_path),
            args,
            ..ServerOptions::default()
        })
    })
    .await
    .map_err(|e| format!("redis-server did not start: {e}"))?;
    let client = server.client();
    let url = server.url();
    let server = Arc::new(Mutex::new(server));
    let error = |e: &dyn std::fmt::Display| e.to_string();
    let mut conn = client.get_multiplexed_async_connection().await.map_err(|e| error(&e))?;
    let modules: Vec<redis::Value> =
        redis::cmd("MODULE").arg("LIST").query_async(&mut conn).await.map_err(|e| error(&e))?;
    if modules.is_empty() == native {
        return Err(format!("--via {via}, but the server has {} module(s) loaded", modules.len()));
    }
    // The producer's and the checks' connection never blocks on the server,
    // so it keeps a response time-out (`connect_with` lifts it, for blocking
    // claims): a request lost across a restart is answered with an error
    // and sent again, instead of holding the run past every deadline. (A
    // run in the full suite once sat after its last restart until its test
    // gave up; not seen since, in 20 runs alone and side by side.)
    let config = ConnectionManagerConfig::new().set_response_timeout(Some(Duration::from_secs(10)));
    let conn = ConnectionManager::new_with_config(client.clone(), config).await.map_err(|e| error(&e))?;
    let executor: Arc<dyn echomq::Executor> =
        if native { Arc::new(echomq::Native::new(conn)) } else { Arc::new(echomq::Lua::new(conn)) };
    let queue = Queue::new(executor, QUEUE).map_err(|e| error(&e))?;
    // Every finished job kept, so that the audit finds each: the default
    // retention keeps the newest 10,000 done jobs (PROTOCOL.md §7.4), and a
    // run of more jobs would count the older ones lost.
    let all = Retention { age: None, count: None };
    let config = echomq::Config::default().keep_done(all).keep_dead(all);
    queue.configure(config).await.map_err(|e| error(&e))?;
    let config = ConnectionManagerConfig::new().set_response_timeout(Some(Duration::from_secs(10)));
    let mut reader = ConnectionManager::new_with_config(client, config).await.map_err(|e| error(&e))?;

    let ids: Arc<Vec<JobId>> = Arc::new((0..o.jobs).map(|_| JobId::mint()).collect());
    let failing: HashSet<JobId> = ids
        .iter()
        .enumerate()
        .filter(|(n, _)| *n as u64 % FAILS_FIRST == 7)
        .map(|(_, id)| id.clone())
        .collect();
    let exe = std::env::current_exe().map_err(|e| error(&e))?;
    let spec = Spec {
        exe,
        url,
        queue: QUEUE.into(),
        lease_ms: o.lease_ms,
        concurrency: o.concurrency,
        work_ms: o.work_ms,
        dir: dir.clone(),
    };
    let mut fleet = Fleet::new(spec);
    for _ in 0..o.workers.max(1) {
        fleet.start().map_err(|e| format!("start a worker: {e}"))?;
    }

    let acked = Arc::new(Mutex::new(Vec::new()));
    let start = Instant::now();
    let producer = tokio::spawn(produce(queue.clone(), ids.clone(), start, span, acked.clone()));
    let mut violations = Vec::new();
    let (mut kills, mut restarts, mut audits) = (0u64, 0u64, 0u64);
    let mut pauses = Pauses::default();
    for (at, action) in chaos::plan(&mut rng, span, o.kills, o.pauses, o.restarts) {
        tokio::time::sleep_until(start + at).await;
        let mut stage = Stage { fleet: &mut fleet, queue: &queue, lease, failing: &failing, rng: &mut rng };
        let what = match action {
            Action::Kill => {
                kills += 1;
                format!("kill {}", chaos::kill(&mut stage).map_err(|e| format!("kill a worker: {e}"))?)
            }
            Action::Pause => chaos::pause(&mut stage, &mut pauses).await.unwrap_or_else(|broken| {
                violations.push(broken.clone());
                broken
            }),
            Action::Restart => {
                chaos::restart(&server).await?;
                restarts += 1;
                "restart redis-server".into()
            }
        };
        eprintln!("{:>7.2} s  {what}", start.elapsed().as_secs_f64());
        fleet.check().map_err(|e| error(&e))?;
        let so_far = acked.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let (_, found) = audit(&mut reader, queue.keyspace(), &so_far, lease, false).await?;
        violations.extend(found);
        audits += 1;
    }
    let produced = producer.await.map_err(|e| format!("the producer failed: {e}"))?;
    violations.extend(produced.violations.iter().cloned());
    let acked: Vec<JobId> = acked.lock().unwrap_or_else(|p| p.into_inner()).clone();

    // Every acknowledged job must reach done while the (surviving) fleet runs.
    let drain = Duration::from_secs(60) + Duration::from_millis(2 * o.jobs as u64);
    let drained = Instant::now() + drain;
    loop {
        let stats = queue.stats().await;
        if let Ok(s) = &stats {
            if s.done as usize >= acked.len() && s.pending + s.active + s.delayed == 0 {
                break;
            }
        }
        if Instant::now() > drained {
            violations.push(format!("stuck: not drained within {drain:?}: {stats:?}"));
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    fleet.check().map_err(|e| error(&e))?;
    tokio::task::block_in_place(|| fleet.stop(STOP)).map_err(|e| error(&e))?;
    violations.append(&mut fleet.crashes);

    let (records, found) = audit(&mut reader, queue.keyspace(), &acked, lease, true).await?;
    violations.extend(found);
    audits += 1;
    match queue.stats().await {
        Ok(s)
            if (s.done as usize, s.pending, s.active, s.delayed, s.dead, s.cancelled)
                == (acked.len(), 0, 0, 0, 0, 0) => {}
        other => violations
            .push(format!("the queue's sets at the end: {other:?}, for {} acknowledged jobs", acked.len())),
    }

    let journals = read_journals(fleet.journals(), &mut violations)?;
    let verdict = Verdict::judge(&journals, &records);
    violations.extend(verdict.violations.iter().cloned());
    let done = records.values().filter(|row| row.state == "done").count() as u64;
    let report = Report {
        acked: acked.len() as u64,
        produced,
        done,
        verdict,
        kills,
        pauses,
        restarts,
        audits,
        violations,
        took: began.elapsed(),
    };
    report.print();
    let clean = report.violations.is_empty();
    if clean && temporary {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        println!("journals: {}", dir.display());
    }
    Ok(clean)
}

/// Audit `ids`, retrying while the server is out of reach (up to 30 s):
/// the rows by id, and what is wrong with them.
async fn audit(
    conn: &mut ConnectionManager,
    keys: &Keyspace,
    ids: &[JobId],
    lease: Duration,
    settled: bool,
) -> Result<(HashMap<JobId, Row>, Vec<String>), String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let rows = loop {
        match audit::read(conn, keys, ids).await {
            Ok(rows) => break rows,
            Err(err) if Instant::now() > deadline => return Err(format!("the audit cannot read: {err}")),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    };
    let mut found = Vec::new();
    for (id, row) in ids.iter().zip(&rows) {
        if let Some(problem) = audit::problem(row, lease, settled) {
            found.push(format!("{id}: {problem}"));
        }
    }
    Ok((ids.iter().cloned().zip(rows).collect(), found))
}

/// Every journal's entries, in order; a line that does not parse is a violation.
fn read_journals(paths: &[PathBuf], violations: &mut Vec<String>) -> Result<Vec<Vec<Entry>>, String> {
    let mut journals = Vec::new();
    for path in paths {
        let lines = journal::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut entries = Vec::with_capacity(lines.len());
        for line in lines {
            match line {
                Ok(entry) => entries.push(entry),
                Err(bad) => violations.push(format!("{}: {bad}", path.display())),
            }
        }
        journals.push(entries);
    }
    Ok(journals)
}
