//! Run mode, the orchestrator: its own redis-server, a fleet of workers, the
//! producers (of plain jobs, and of flows) and the chaos plan at once, with
//! an audit after each event; then the calm (the chaos is over: no worker
//! kills itself any more), the drain while the flows' parents are watched,
//! a graceful stop, the final audit and the verdicts; then the report.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use echomq::{EventsFrom, JobId, Queue};
use echomq_test_support::RedisServer;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::time::Instant;

use crate::audit::{self, Row};
use crate::chaos::{self, Action, Pauses, Stage};
use crate::fleet::Fleet;
use crate::flow_verdict::{Evidence, FlowVerdict, Resolved};
use crate::flows::{self, Kind, Plan, Watch};
use crate::journal::{self, Entry};
use crate::produce::{produce, Produced};
use crate::report::{FlowsReport, Report};
use crate::rng::Rng;
use crate::setup::{open_queues, start_fleet, start_server};
use crate::verdict::Verdict;
use crate::worker::{fails_first, FAILS_FIRST};

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
    /// Flows to add, alongside the plain jobs: a parent each, waiting for
    /// two to four children spread over three queues, every fifth with a
    /// nested flow (see `flows.rs`).
    #[arg(long, default_value_t = 0)]
    pub flows: usize,
    /// The chance, per RESOLVE answered, that a worker kills itself before
    /// the relay deletes the notice (with `--flows`; until the chaos is
    /// over). A relay round of k notices then dies with a chance of
    /// 1 - (1 - p)^k: while notices pile up, most rounds die, each sending
    /// them all again, to no effect.
    #[arg(long, default_value_t = 0.1)]
    pub resolve_kills: f64,
    /// How long after its last child was done a flow's parent may still
    /// wait, once the chaos is over, before it counts as stuck, ms (ten of
    /// the workers' 200 ms upkeep periods, which relay the notices).
    #[arg(long, default_value_t = 2000)]
    pub flow_grace_ms: u64,
    /// Fair groups (protocol 1.7): every fifth plain job joins one of this
    /// many groups, each capped at 2 running and 10 claims a second, both
    /// then proven from the queue's event log (see `groups.rs`).
    #[arg(long, default_value_t = 0)]
    pub groups: usize,
}

/// The plain jobs' queue; the server is the run's own.
pub(crate) const QUEUE: &str = "chaos";

/// How long stopped workers get to finish gracefully (their grace is 5 s).
const STOP: Duration = Duration::from_secs(20);

/// Run the chaos and print what happened; `Ok(true)` when no promise broke.
pub async fn run(o: Options) -> Result<bool, String> {
    let began = Instant::now();
    let seed = o.seed.unwrap_or_else(|| {
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |since| since.as_nanos() as u64)
    });
    crate::report::announce(&o, seed);
    let (dir, temporary) = match &o.journals {
        Some(dir) => (dir.clone(), false),
        None => (std::env::temp_dir().join(format!("echomq-chaos-{}", std::process::id())), true),
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut run = Run::start(&o, seed, &dir).await?;
    let acked = run.unleash(&o).await?;
    // The chaos is over: no worker kills itself from now on.
    run.fleet.calm_all().map_err(|e| format!("calm the workers: {e}"))?;
    run.drain(&acked, o.jobs).await;
    let records = run.stop(&acked).await?;
    let report = run.report(&o, acked, &records, began).await?;
    report.print();
    let clean = report.violations.is_empty();
    if clean && temporary {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        println!("journals: {}", dir.display());
    }
    Ok(clean)
}

/// What the producers had acknowledged when the chaos was over.
struct Acked {
    /// The plain jobs.
    plain: Vec<JobId>,
    /// The flows, by their numbers.
    flows: Vec<usize>,
    /// What the plain jobs' producer did.
    produced: Produced,
    /// What the flows' producer did.
    produced_flows: Produced,
}

/// `via` as the command line spells it.
pub(crate) fn via_name(via: Via) -> String {
    format!("{via:?}").to_lowercase()
}

/// A run under way: its server, the queues on it and the fleet of workers,
/// the flows, and what the run has counted and found so far.
struct Run {
    server: Arc<Mutex<RedisServer>>,
    /// The plain jobs' queue, then (with flows) [`flows::PARENTS`] and [`flows::NESTED`].
    queues: Vec<Queue>,
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
    /// The flows, their ids fixed.
    plan: Plan,
    /// Each flow's job's queue, by its place in `queues`.
    homes: HashMap<JobId, usize>,
    /// The watch for stuck parents, once the chaos is over.
    watch: Watch,
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
        let names: &[&'static str] =
            if o.flows > 0 { &[QUEUE, flows::PARENTS, flows::NESTED] } else { &[QUEUE] };
        let queues = open_queues(&client, o.via, names, o.groups > 0).await?;
        crate::groups::configure(&queues[0], o.groups).await?;
        let config = ConnectionManagerConfig::new().set_response_timeout(Some(Duration::from_secs(10)));
        let reader = ConnectionManager::new_with_config(client, config).await.map_err(|e| e.to_string())?;
        let ids: Arc<Vec<JobId>> = Arc::new((0..o.jobs).map(|_| JobId::mint()).collect());
        let plan = Plan::build(o.flows, QUEUE);
        let mut failing: HashSet<JobId> = ids
            .iter()
            .enumerate()
            .filter(|(n, _)| *n as u64 % FAILS_FIRST == 7)
            .map(|(_, id)| id.clone())
            .collect();
        let home = |queue: &str| names.iter().position(|name| *name == queue).expect("a queue of the run");
        let homes = plan.jobs.iter().map(|job| (job.id.clone(), home(job.queue))).collect();
        for job in &plan.jobs {
            let kind = if job.is_parent() { Kind::Parent } else { Kind::Child };
            if fails_first(kind, job.number) {
                failing.insert(job.id.clone());
            }
        }
        let fleet = start_fleet(o, seed, url, dir)?;
        Ok(Run {
            server,
            queues,
            reader,
            fleet,
            rng: Rng::new(seed),
            lease: Duration::from_millis(o.lease_ms),
            ids,
            failing,
            plan,
            homes,
            watch: Watch::new(Duration::from_millis(o.flow_grace_ms)),
            kills: 0,
            pauses: Pauses::default(),
            restarts: 0,
            audits: 0,
            violations: Vec::new(),
        })
    }

    /// Enqueue the jobs and add the flows while the chaos plan runs,
    /// auditing every job acknowledged so far after each action, and
    /// replacing the workers that killed themselves as they do: what was
    /// acknowledged, and what the producers did.
    async fn unleash(&mut self, o: &Options) -> Result<Acked, String> {
        let span = Duration::from_secs_f64(o.seconds);
        let acked = Arc::new(Mutex::new(Vec::new()));
        let acked_flows = Arc::new(Mutex::new(Vec::new()));
        let start = Instant::now();
        let mut producer = tokio::spawn(produce(
            self.queues[0].clone(),
            self.ids.clone(),
            (start, span, o.groups),
            acked.clone(),
        ));
        // Late children are due once the chaos is over: their parents wait on into the watch.
        let flows = Arc::new(self.plan.flows(SystemTime::now() + span + flows::LATE));
        let parents = self.queues.get(1).unwrap_or(&self.queues[0]).clone();
        let mut flow_producer =
            tokio::spawn(flows::produce(parents, flows, start, span, acked_flows.clone()));
        for (at, action) in chaos::plan(&mut self.rng, span, o.kills, o.pauses, o.restarts) {
            while Instant::now() < start + at {
                self.fleet.check().map_err(|e| e.to_string())?;
                tokio::time::sleep_until((start + at).min(Instant::now() + CHECK)).await;
            }
            let what = self.act(action).await?;
            eprintln!("{:>7.2} s  {what}", start.elapsed().as_secs_f64());
            self.fleet.check().map_err(|e| e.to_string())?;
            let so_far = acked.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let flows_so_far = acked_flows.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let jobs = self.acked_jobs(&so_far, &flows_so_far);
            self.audit_acked(&jobs, false).await?;
        }
        let produced = self.awaiting(&mut producer).await.map_err(|e| format!("the producer failed: {e}"))?;
        let produced_flows = self
            .awaiting(&mut flow_producer)
            .await
            .map_err(|e| format!("the flows' producer failed: {e}"))?;
        self.violations.extend(produced.violations.iter().cloned());
        self.violations.extend(produced_flows.violations.iter().cloned());
        let plain = acked.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut flows = acked_flows.lock().unwrap_or_else(|p| p.into_inner()).clone();
        flows.sort_unstable();
        Ok(Acked { plain, flows, produced, produced_flows })
    }

    /// `task`'s end, replacing the workers that kill themselves meanwhile.
    async fn awaiting<T>(
        &mut self,
        task: &mut tokio::task::JoinHandle<T>,
    ) -> Result<T, tokio::task::JoinError> {
        loop {
            tokio::select! {
                ended = &mut *task => return ended,
                () = tokio::time::sleep(CHECK) => {
                    if let Err(err) = self.fleet.check() {
                        self.violations.push(format!("the fleet: {err}"));
                    }
                }
            }
        }
    }

    /// The acknowledged jobs: the plain ones in the first queue, then every
    /// job of the acknowledged flows in its own; each as (queue, id).
    fn acked_jobs(&self, plain: &[JobId], flows: &[usize]) -> Vec<(usize, JobId)> {
        let flow_jobs = self.plan.acked_jobs(flows).into_iter().map(|at| &self.plan.jobs[at].id);
        plain
            .iter()
            .map(|id| (0, id.clone()))
            .chain(flow_jobs.map(|id| (self.homes[id], id.clone())))
            .collect()
    }

    /// Do one action of the plan; says what it did. A pause that broke a
    /// promise says so, and it is a violation.
    async fn act(&mut self, action: Action) -> Result<String, String> {
        let mut stage = Stage {
            fleet: &mut self.fleet,
            queues: &self.queues,
            homes: &self.homes,
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

    /// Audit `acked` (queue, id), noting what is wrong with them: their rows by id.
    async fn audit_acked(
        &mut self,
        acked: &[(usize, JobId)],
        settled: bool,
    ) -> Result<HashMap<JobId, Row>, String> {
        let (rows, found) = audit(&mut self.reader, &self.queues, acked, self.lease, settled).await?;
        self.violations.extend(found);
        self.audits += 1;
        Ok(rows)
    }

    /// Wait until every acknowledged job is done, nothing is pending,
    /// active, delayed or waiting, and no notice is left, while the
    /// (surviving) fleet runs: a minute, and 2 ms for each of the run's
    /// `jobs`, at most. Meanwhile, the flows' parents are watched.
    async fn drain(&mut self, acked: &Acked, jobs: usize) {
        let drain = Duration::from_secs(60) + Duration::from_millis(2 * jobs as u64);
        let drained = Instant::now() + drain;
        let all = self.acked_jobs(&acked.plain, &acked.flows);
        let flow_jobs = self.plan.acked_jobs(&acked.flows);
        let flow_ids: Vec<(usize, JobId)> = all[acked.plain.len()..].to_vec();
        let mut owed = vec![0; self.queues.len()];
        for (queue, _) in &all {
            owed[*queue] += 1;
        }
        loop {
            if let Err(err) = self.fleet.check() {
                self.violations.push(format!("the fleet: {err}"));
            }
            if !flow_ids.is_empty() {
                if let Ok((rows, _)) =
                    audit(&mut self.reader, &self.queues, &flow_ids, self.lease, false).await
                {
                    self.watch.look(&self.plan, &flow_jobs, &rows, Instant::now());
                }
            }
            let left = self.left(&owed).await;
            if left.as_ref().is_ok_and(Vec::is_empty) {
                break;
            }
            if Instant::now() > drained {
                self.violations.push(format!("stuck: not drained within {drain:?}: {left:?}"));
                break;
            }
            tokio::time::sleep(CHECK).await;
        }
    }

    /// What keeps the queues from being drained: for each queue, its stats
    /// and notices, unless it holds its `owed` jobs done and nothing else
    /// to do.
    async fn left(&mut self, owed: &[u64]) -> Result<Vec<String>, String> {
        let mut left = Vec::new();
        for (queue, owed) in self.queues.iter().zip(owed) {
            let s = queue.stats().await.map_err(|e| e.to_string())?;
            let notices = notices(&mut self.reader, queue).await?;
            if s.done < *owed || s.pending + s.active + s.delayed + s.waiting + notices > 0 {
                left.push(format!("{}: {s:?}, {notices} notices, {owed} owed", queue.name()));
            }
        }
        Ok(left)
    }

    /// Stop the fleet gracefully, then audit the acknowledged jobs as
    /// settled and check that each queue holds them all done, nothing
    /// else, and no notice: the final records.
    async fn stop(&mut self, acked: &Acked) -> Result<HashMap<JobId, Row>, String> {
        self.fleet.check().map_err(|e| e.to_string())?;
        tokio::task::block_in_place(|| self.fleet.stop(STOP)).map_err(|e| e.to_string())?;
        self.violations.append(&mut self.fleet.crashes);
        let all = self.acked_jobs(&acked.plain, &acked.flows);
        let records = self.audit_acked(&all, true).await?;
        for (at, queue) in self.queues.clone().iter().enumerate() {
            let owed = all.iter().filter(|(home, _)| *home == at).count() as u64;
            let notices = notices(&mut self.reader, queue).await;
            match (queue.stats().await, notices) {
                (Ok(s), Ok(0))
                    if (s.done, s.pending, s.active, s.delayed, s.dead, s.cancelled, s.waiting)
                        == (owed, 0, 0, 0, 0, 0, 0) => {}
                other => self.violations.push(format!(
                    "{}'s sets and notices at the end: {other:?}, for {owed} acknowledged jobs",
                    queue.name()
                )),
            }
        }
        Ok(records)
    }

    /// Judge the journals against the final `records`, and the flows, and
    /// report the run.
    /// With `--groups`, the groups' caps and rates replayed from the event log.
    async fn judge_groups(&mut self, o: &Options) -> Result<Option<crate::groups::GroupsVerdict>, String> {
        let verdict = crate::groups::judge_run(&mut self.reader, QUEUE, &self.ids, o.groups).await?;
        self.violations.extend(verdict.iter().flat_map(|verdict| verdict.violations.iter().cloned()));
        Ok(verdict)
    }

    async fn report(
        &mut self,
        o: &Options,
        acked: Acked,
        records: &HashMap<JobId, Row>,
        began: Instant,
    ) -> Result<Report, String> {
        let journals = journal::read_all(self.fleet.journals(), &mut self.violations)?;
        let verdict = Verdict::judge(&journals, records);
        self.violations.extend(verdict.violations.iter().cloned());
        let done_of = |ids: &mut dyn Iterator<Item = &JobId>| {
            ids.filter(|id| records.get(*id).is_some_and(|row| row.state == "done")).count() as u64
        };
        let done = done_of(&mut acked.plain.iter());
        let flows = match o.flows {
            0 => None,
            _ => Some(self.judge_flows(o, &acked, &journals, records).await?),
        };
        let done_flows = flows.as_ref().map_or(0, |flows| flows.done);
        let groups = self.judge_groups(o).await?;
        Ok(Report {
            acked: acked.plain.len() as u64,
            produced: acked.produced,
            done,
            done_flows,
            verdict,
            flows,
            groups,
            kills: self.kills,
            pauses: std::mem::take(&mut self.pauses),
            restarts: self.restarts,
            audits: self.audits,
            violations: std::mem::take(&mut self.violations),
            took: began.elapsed(),
        })
    }

    /// The flows' verdict: what the parents read, what the server kept and
    /// the parents' logs, against the plan; and the watch's last look.
    async fn judge_flows(
        &mut self,
        o: &Options,
        acked: &Acked,
        journals: &[Vec<Entry>],
        records: &HashMap<JobId, Row>,
    ) -> Result<FlowsReport, String> {
        let jobs = self.plan.acked_jobs(&acked.flows);
        let mut kept = HashMap::new();
        for &at in &jobs {
            let job = &self.plan.jobs[at];
            let queue = &self.queues[self.homes[&job.id]];
            let result = queue.result(&job.id).await.map_err(|e| format!("read {}: {e}", job.reference()))?;
            kept.insert(job.id.clone(), result);
        }
        let mut resolved = HashMap::new();
        for queue in &self.queues[1..] {
            resolved_log(queue, &mut resolved).await?;
        }
        let evidence =
            Evidence { plan: &self.plan, jobs: &jobs, journals, records, kept: &kept, resolved: &resolved };
        let verdict = FlowVerdict::judge(&evidence);
        self.violations.extend(verdict.violations.iter().cloned());
        self.watch.end(&self.plan, &jobs, records);
        self.violations.extend(self.watch.found.iter().cloned());
        let killed = self.fleet.self_killed;
        if o.resolve_kills > 0.0 && killed == 0 {
            self.violations.push(format!(
                "no worker killed itself between a RESOLVE and its XDEL, at a chance of {} each: \
                 a chaos that did not happen proves nothing",
                o.resolve_kills
            ));
        }
        let done =
            jobs.iter().filter(|&&at| records.get(&self.plan.jobs[at].id).is_some_and(|r| r.state == "done"));
        Ok(FlowsReport {
            planned: self.plan.flows.len() as u64,
            acked: acked.flows.len() as u64,
            nested: jobs
                .iter()
                .filter(|&&at| self.plan.jobs[at].is_parent() && self.plan.jobs[at].parent.is_some())
                .count() as u64,
            produced: Produced {
                retries: acked.produced_flows.retries,
                landed: acked.produced_flows.landed,
                violations: Vec::new(),
            },
            done: done.count() as u64,
            verdict,
            stuck: self.watch.stuck(),
            waiting_at_calm: self.watch.waiting_at_start.unwrap_or(0),
            released: self.watch.released,
            slowest: self.watch.slowest,
            grace: Duration::from_millis(o.flow_grace_ms),
            self_killed: killed,
            chance: o.resolve_kills,
        })
    }
}

/// How often the orchestrator looks for workers that killed themselves,
/// and at a draining run.
const CHECK: Duration = Duration::from_millis(100);

/// How many notices `queue` holds, not yet relayed.
async fn notices(conn: &mut ConnectionManager, queue: &Queue) -> Result<u64, String> {
    let key = queue.keyspace().notices();
    redis::cmd("XLEN").arg(&key).query_async(conn).await.map_err(|e| format!("XLEN {key}: {e}"))
}

/// Each parent's `resolved` entries in `queue`'s event log, added to `logs`.
async fn resolved_log(queue: &Queue, logs: &mut HashMap<JobId, Vec<Resolved>>) -> Result<(), String> {
    let mut events = queue.events(EventsFrom::Oldest).await.map_err(|e| e.to_string())?;
    while let Some(event) = events.next_within(Duration::ZERO).await.map_err(|e| e.to_string())? {
        let (true, Some(parent)) = (event.kind.as_str() == "resolved", event.job.clone()) else { continue };
        let field = |name: &str| event.field(name).map(|value| value.into_owned()).unwrap_or_default();
        let entry = Resolved { child: field("child"), state: field("state"), open: field("open") };
        logs.entry(parent).or_default().push(entry);
    }
    Ok(())
}

/// Audit `jobs` (each its queue's place in `queues`, and its id), each
/// queue's atomically per chunk, retrying while the server is out of reach
/// (up to 30 s): the rows by id, and what is wrong with them.
async fn audit(
    conn: &mut ConnectionManager,
    queues: &[Queue],
    jobs: &[(usize, JobId)],
    lease: Duration,
    settled: bool,
) -> Result<(HashMap<JobId, Row>, Vec<String>), String> {
    let (mut all, mut found) = (HashMap::with_capacity(jobs.len()), Vec::new());
    for (at, queue) in queues.iter().enumerate() {
        let ids: Vec<JobId> = jobs.iter().filter(|(home, _)| *home == at).map(|(_, id)| id.clone()).collect();
        if ids.is_empty() {
            continue;
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        let rows = loop {
            match audit::read(conn, queue.keyspace(), &ids).await {
                Ok(rows) => break rows,
                Err(err) if Instant::now() > deadline => return Err(format!("the audit cannot read: {err}")),
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        };
        for (id, row) in ids.iter().zip(&rows) {
            if let Some(problem) = audit::problem(row, lease, settled) {
                found.push(format!("{id} ({}): {problem}", queue.name()));
            }
        }
        all.extend(ids.into_iter().zip(rows));
    }
    Ok((all, found))
}
