//! Run mode, the orchestrator: its own redis-server, a fleet of workers, the
//! producer and the chaos plan at once, with an audit after each event; then
//! the drain, a graceful stop, the final audit and the verdict; then the
//! report.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
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
use crate::produce::{produce, Produced};
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
    announce(&o, seed);
    let (dir, temporary) = match &o.journals {
        Some(dir) => (dir.clone(), false),
        None => (std::env::temp_dir().join(format!("echomq-chaos-{}", std::process::id())), true),
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut run = Run::start(&o, seed, &dir).await?;
    let (acked, produced) = run.unleash(&o).await?;
    run.drain(acked.len(), o.jobs).await;
    let records = run.stop(&acked).await?;
    let report = run.report(acked.len(), produced, &records, began)?;
    report.print();
    let clean = report.violations.is_empty();
    if clean && temporary {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        println!("journals: {}", dir.display());
    }
    Ok(clean)
}

/// Print the command line that runs this run again.
fn announce(o: &Options, seed: u64) {
    let via = via_name(o.via);
    println!(
        "echomq-chaos run --via {via} --seed {seed} --jobs {} --workers {} --concurrency {} --seconds {} \
         --kills {} --pauses {} --restarts {} --lease-ms {} --work-ms {}",
        o.jobs, o.workers, o.concurrency, o.seconds, o.kills, o.pauses, o.restarts, o.lease_ms, o.work_ms
    );
}

/// `via` as the command line spells it.
fn via_name(via: Via) -> String {
    format!("{via:?}").to_lowercase()
}

/// A run under way: its server, the queue on it and the fleet of workers,
/// and what the run has counted and found so far.
struct Run {
    server: Arc<Mutex<RedisServer>>,
    queue: Queue,
    /// The checks' connection, which the audits read on.
    reader: ConnectionManager,
    fleet: Fleet,
    /// The seeded generator of the plan and the victims.
    rng: Rng,
    lease: Duration,
    /// The ids of the jobs to enqueue, minted up front.
    ids: Arc<Vec<JobId>>,
    /// Ids whose first attempt fails by design (see `worker.rs`).
    failing: HashSet<JobId>,
    kills: u64,
    pauses: Pauses,
    restarts: u64,
    audits: u64,
    violations: Vec<String>,
}

impl Run {
    /// Start the server, configure the queue on it and start the workers,
    /// which journal into `dir`.
    async fn start(o: &Options, seed: u64, dir: &Path) -> Result<Run, String> {
        let server = start_server(o.via).await?;
        let client = server.client();
        let url = server.url();
        let server = Arc::new(Mutex::new(server));
        let queue = open_queue(&client, o.via).await?;
        let config = ConnectionManagerConfig::new().set_response_timeout(Some(Duration::from_secs(10)));
        let reader = ConnectionManager::new_with_config(client, config).await.map_err(|e| e.to_string())?;
        let ids: Arc<Vec<JobId>> = Arc::new((0..o.jobs).map(|_| JobId::mint()).collect());
        let failing: HashSet<JobId> = ids
            .iter()
            .enumerate()
            .filter(|(n, _)| *n as u64 % FAILS_FIRST == 7)
            .map(|(_, id)| id.clone())
            .collect();
        let fleet = start_fleet(o, url, dir)?;
        Ok(Run {
            server,
            queue,
            reader,
            fleet,
            rng: Rng::new(seed),
            lease: Duration::from_millis(o.lease_ms),
            ids,
            failing,
            kills: 0,
            pauses: Pauses::default(),
            restarts: 0,
            audits: 0,
            violations: Vec::new(),
        })
    }

    /// Enqueue the jobs while the chaos plan runs, auditing every job
    /// acknowledged so far after each action: the acknowledged ids, and
    /// what the producer did.
    async fn unleash(&mut self, o: &Options) -> Result<(Vec<JobId>, Produced), String> {
        let span = Duration::from_secs_f64(o.seconds);
        let acked = Arc::new(Mutex::new(Vec::new()));
        let start = Instant::now();
        let producer =
            tokio::spawn(produce(self.queue.clone(), self.ids.clone(), start, span, acked.clone()));
        for (at, action) in chaos::plan(&mut self.rng, span, o.kills, o.pauses, o.restarts) {
            tokio::time::sleep_until(start + at).await;
            let what = self.act(action).await?;
            eprintln!("{:>7.2} s  {what}", start.elapsed().as_secs_f64());
            self.fleet.check().map_err(|e| e.to_string())?;
            let so_far = acked.lock().unwrap_or_else(|p| p.into_inner()).clone();
            self.audit_acked(&so_far, false).await?;
        }
        let produced = producer.await.map_err(|e| format!("the producer failed: {e}"))?;
        self.violations.extend(produced.violations.iter().cloned());
        let acked: Vec<JobId> = acked.lock().unwrap_or_else(|p| p.into_inner()).clone();
        Ok((acked, produced))
    }

    /// Do one action of the plan; says what it did. A pause that broke a
    /// promise says so, and it is a violation.
    async fn act(&mut self, action: Action) -> Result<String, String> {
        let mut stage = Stage {
            fleet: &mut self.fleet,
            queue: &self.queue,
            lease: self.lease,
            failing: &self.failing,
            rng: &mut self.rng,
        };
        Ok(match action {
            Action::Kill => {
                self.kills += 1;
                format!("kill {}", chaos::kill(&mut stage).map_err(|e| format!("kill a worker: {e}"))?)
            }
            Action::Pause => chaos::pause(&mut stage, &mut self.pauses).await.unwrap_or_else(|broken| {
                self.violations.push(broken.clone());
                broken
            }),
            Action::Restart => {
                chaos::restart(&self.server).await?;
                self.restarts += 1;
                "restart redis-server".into()
            }
        })
    }

    /// Audit `acked`, noting what is wrong with them: their rows by id.
    async fn audit_acked(&mut self, acked: &[JobId], settled: bool) -> Result<HashMap<JobId, Row>, String> {
        let (rows, found) =
            audit(&mut self.reader, self.queue.keyspace(), acked, self.lease, settled).await?;
        self.violations.extend(found);
        self.audits += 1;
        Ok(rows)
    }

    /// Wait until the `acked` jobs are done and nothing is pending, active
    /// or delayed, while the (surviving) fleet runs: a minute, and 2 ms for
    /// each of the run's `jobs`, at most.
    async fn drain(&mut self, acked: usize, jobs: usize) {
        let drain = Duration::from_secs(60) + Duration::from_millis(2 * jobs as u64);
        let drained = Instant::now() + drain;
        loop {
            let stats = self.queue.stats().await;
            if let Ok(s) = &stats {
                if s.done as usize >= acked && s.pending + s.active + s.delayed == 0 {
                    break;
                }
            }
            if Instant::now() > drained {
                self.violations.push(format!("stuck: not drained within {drain:?}: {stats:?}"));
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Stop the fleet gracefully, then audit the `acked` jobs as settled and
    /// check that the queue holds them all done and nothing else: the final
    /// records.
    async fn stop(&mut self, acked: &[JobId]) -> Result<HashMap<JobId, Row>, String> {
        self.fleet.check().map_err(|e| e.to_string())?;
        tokio::task::block_in_place(|| self.fleet.stop(STOP)).map_err(|e| e.to_string())?;
        self.violations.append(&mut self.fleet.crashes);
        let records = self.audit_acked(acked, true).await?;
        match self.queue.stats().await {
            Ok(s)
                if (s.done as usize, s.pending, s.active, s.delayed, s.dead, s.cancelled)
                    == (acked.len(), 0, 0, 0, 0, 0) => {}
            other => self.violations.push(format!(
                "the queue's sets at the end: {other:?}, for {} acknowledged jobs",
                acked.len()
            )),
        }
        Ok(records)
    }

    /// Judge the journals against the final `records`, and report the run.
    fn report(
        &mut self,
        acked: usize,
        produced: Produced,
        records: &HashMap<JobId, Row>,
        began: Instant,
    ) -> Result<Report, String> {
        let journals = read_journals(self.fleet.journals(), &mut self.violations)?;
        let verdict = Verdict::judge(&journals, records);
        self.violations.extend(verdict.violations.iter().cloned());
        let done = records.values().filter(|row| row.state == "done").count() as u64;
        Ok(Report {
            acked: acked as u64,
            produced,
            done,
            verdict,
            kills: self.kills,
            pauses: std::mem::take(&mut self.pauses),
            restarts: self.restarts,
            audits: self.audits,
            violations: std::mem::take(&mut self.violations),
            took: began.elapsed(),
        })
    }
}

/// Start the run's own redis-server, which writes every command to its AOF
/// before answering, with the module loaded for `via` native.
async fn start_server(via: Via) -> Result<RedisServer, String> {
    let native = via == Via::Native;
    tokio::task::spawn_blocking(move || {
        let args = ["--appendonly", "yes", "--appendfsync", "always"].map(str::to_owned).to_vec();
        RedisServer::start_with(ServerOptions {
            module: native.then(module_path),
            args,
            ..ServerOptions::default()
        })
    })
    .await
    .map_err(|e| format!("redis-server did not start: {e}"))
}

/// The queue on the server, on the executor of `via` (the server must have
/// the module exactly when it is native), configured to keep every
/// finished job.
async fn open_queue(client: &redis::Client, via: Via) -> Result<Queue, String> {
    let native = via == Via::Native;
    let mut conn = client.get_multiplexed_async_connection().await.map_err(|e| e.to_string())?;
    let modules: Vec<redis::Value> =
        redis::cmd("MODULE").arg("LIST").query_async(&mut conn).await.map_err(|e| e.to_string())?;
    if modules.is_empty() == native {
        let via = via_name(via);
        return Err(format!("--via {via}, but the server has {} module(s) loaded", modules.len()));
    }
    // The producer's and the checks' connection never blocks on the server,
    // so it keeps a response time-out (`connect_with` lifts it, for blocking
    // claims): a request lost across a restart is answered with an error
    // and sent again, instead of holding the run past every deadline. (A
    // run in the full suite once sat after its last restart until its test
    // gave up; not seen since, in 20 runs alone and side by side.)
    let config = ConnectionManagerConfig::new().set_response_timeout(Some(Duration::from_secs(10)));
    let conn = ConnectionManager::new_with_config(client.clone(), config).await.map_err(|e| e.to_string())?;
    let executor: Arc<dyn echomq::Executor> =
        if native { Arc::new(echomq::Native::new(conn)) } else { Arc::new(echomq::Lua::new(conn)) };
    let queue = Queue::new(executor, QUEUE).map_err(|e| e.to_string())?;
    // Every finished job kept, so that the audit finds each: the default
    // retention keeps the newest 10,000 done jobs (PROTOCOL.md §7.4), and a
    // run of more jobs would count the older ones lost.
    let all = Retention { age: None, count: None };
    let config = echomq::Config::default().keep_done(all).keep_dead(all);
    queue.configure(config).await.map_err(|e| e.to_string())?;
    Ok(queue)
}

/// Start the fleet: `o.workers` processes of this binary (at least one) on
/// the server at `url`, journaling into `dir`.
fn start_fleet(o: &Options, url: String, dir: &Path) -> Result<Fleet, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let spec = Spec {
        exe,
        url,
        queue: QUEUE.into(),
        lease_ms: o.lease_ms,
        concurrency: o.concurrency,
        work_ms: o.work_ms,
        dir: dir.to_path_buf(),
    };
    let mut fleet = Fleet::new(spec);
    for _ in 0..o.workers.max(1) {
        fleet.start().map_err(|e| format!("start a worker: {e}"))?;
    }
    Ok(fleet)
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
