//! Flows under the chaos (protocol 1.6, PROTOCOL.md §7.8): the plan of
//! flows, every id fixed when it is built; what each of their jobs is
//! handed and returns; the producer that adds them, adding a flow again
//! (the same `Flow` value) after a call that got no answer; and the watch
//! that finds parents stuck once the chaos has stopped.
//!
//! A flow's parent waits in [`PARENTS`] for two to four children spread
//! over [`PARENTS`] itself, the plain jobs' queue and [`NESTED`]; every
//! fifth flow also has a child that is a parent of its own (in [`NESTED`],
//! with two children). Each child returns [`result_of`] its id and payload,
//! some bytes of it binary; each parent's handler journals what
//! `children_results()` gave it, which the verdict (`flow_verdict.rs`)
//! holds against those results byte for byte. The last tenth of the flows
//! each have a child due only after the chaos is over ([`LATE`]), so that
//! the watch sees parents released once it is, not only parents done.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use echomq::{EnqueueOptions, Flow, Flows, JobId, JobRef, OnFailure, Queue};
use tokio::time::Instant;

use crate::audit::Row;
use crate::produce::Produced;
use crate::rng::mix;

/// The queue of the flows' parents.
pub const PARENTS: &str = "flows";
/// The queue of the nested flows' parents, and of some children.
pub const NESTED: &str = "flows-x";

/// How long after the span of the run a late child is due.
pub const LATE: Duration = Duration::from_millis(1500);

/// The first number of a flow's job (its work, and whether it fails its
/// first attempt, come from it as a plain job's do from its own).
const FIRST_NUMBER: u64 = 1_000_000;

/// What a job's payload says it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A plain job, `<n>`: returns nothing.
    Plain,
    /// A flow's child, `child <n>`: returns [`result_of`] its id and payload.
    Child,
    /// A flow's parent, `parent <n>`: reads its children's results first,
    /// and returns as a child does (a nested parent is its parent's child).
    Parent,
}

/// A payload read: what the job is, and its number; `None` when it does
/// not read as one.
pub fn read_payload(payload: &[u8]) -> Option<(Kind, u64)> {
    let text = std::str::from_utf8(payload).ok()?;
    let (kind, number) = match text.split_once(' ') {
        None => (Kind::Plain, text),
        Some(("child", number)) => (Kind::Child, number),
        Some(("parent", number)) => (Kind::Parent, number),
        Some(_) => return None,
    };
    Some((kind, number.parse().ok()?))
}

/// What a flow's job returns: its payload, its id, and 0 to 63 bytes of
/// any value (NUL, newlines, bytes that are no UTF-8) fixed by its id, so
/// that a result cut, re-encoded or handed to the wrong parent shows.
pub fn result_of(id: &JobId, payload: &[u8]) -> Vec<u8> {
    let seed = id.as_str().bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    let mut result = payload.to_vec();
    result.push(b'|');
    result.extend_from_slice(id.as_str().as_bytes());
    result.push(b'|');
    result.extend((0..mix(seed) % 64).map(|at| mix(seed.wrapping_add(at + 1)) as u8));
    result
}

/// One job of a flow.
#[derive(Clone, Debug)]
pub struct FlowJob {
    /// Its queue.
    pub queue: &'static str,
    /// Its id, fixed when the plan was built.
    pub id: JobId,
    /// Its payload: `parent <n>` or `child <n>`.
    pub payload: Vec<u8>,
    /// Its number.
    pub number: u64,
    /// Its parent, by its place in [`Plan::jobs`].
    pub parent: Option<usize>,
    /// Its children, by their places: none for a child that is no parent.
    pub children: Vec<usize>,
    /// Whether it is due only after the chaos ([`LATE`]).
    pub late: bool,
}

impl FlowJob {
    /// Whether it is a parent.
    pub fn is_parent(&self) -> bool {
        !self.children.is_empty()
    }

    /// Its name across queues, `{<queue>}<id>`.
    pub fn reference(&self) -> JobRef {
        JobRef::new(self.queue, self.id.clone()).expect("the chaos queues' names are valid")
    }

    /// What it returns.
    pub fn result(&self) -> Vec<u8> {
        result_of(&self.id, &self.payload)
    }
}

/// The flows of a run, every id fixed up front.
pub struct Plan {
    /// Every job of every flow.
    pub jobs: Vec<FlowJob>,
    /// Each flow's top parent, by its place in `jobs`.
    pub flows: Vec<usize>,
}

impl Plan {
    /// `count` flows, their children in `PARENTS`, `plain` (the plain jobs'
    /// queue) and `NESTED`; the first child of each of the last tenth late.
    pub fn build(count: usize, plain: &'static str) -> Plan {
        let mut plan = Plan { jobs: Vec::new(), flows: Vec::new() };
        let spread = [PARENTS, plain, NESTED];
        let late_from = count - count.div_ceil(10);
        for f in 0..count {
            let top = plan.add(PARENTS, true, None);
            for i in 0..2 + mix(f as u64) % 3 {
                let child = plan.add(spread[(f + i as usize) % spread.len()], false, Some(top));
                plan.jobs[child].late = i == 0 && f >= late_from;
            }
            if f % 5 == 4 {
                let nested = plan.add(NESTED, true, Some(top));
                plan.add(plain, false, Some(nested));
                plan.add(NESTED, false, Some(nested));
            }
            plan.flows.push(top);
        }
        plan
    }

    /// The `Flow` of each flow, to add: built once, so that adding one
    /// again is adding the same value. Late children are due `late_at`.
    pub fn flows(&self, late_at: SystemTime) -> Vec<Flow> {
        self.flows.iter().map(|&top| self.flow(top, late_at)).collect()
    }

    /// Add one job, a child of `parent`: its place.
    fn add(&mut self, queue: &'static str, parent_job: bool, parent: Option<usize>) -> usize {
        let number = FIRST_NUMBER + self.jobs.len() as u64;
        let kind = if parent_job { "parent" } else { "child" };
        let at = self.jobs.len();
        self.jobs.push(FlowJob {
            queue,
            id: JobId::mint(),
            payload: format!("{kind} {number}").into_bytes(),
            number,
            parent,
            children: Vec::new(),
            late: false,
        });
        if let Some(parent) = parent {
            self.jobs[parent].children.push(at);
        }
        at
    }

    /// The `Flow` of parent `at`, its children's ids and its own fixed.
    fn flow(&self, at: usize, late_at: SystemTime) -> Flow {
        let parent = &self.jobs[at];
        let mut flow = Flow::new(parent.payload.clone()).id(parent.id.clone());
        for &c in &parent.children {
            let child = &self.jobs[c];
            flow = if child.is_parent() {
                flow.child_flow(child.queue, self.flow(c, late_at), OnFailure::Fail)
            } else {
                let mut options = EnqueueOptions::default().id(child.id.clone());
                if child.late {
                    options = options.at(late_at);
                }
                flow.child_with(child.queue, child.payload.clone(), options, OnFailure::Fail)
            };
        }
        flow
    }

    /// The jobs of flow `f`: its top parent and every job under it.
    pub fn jobs_of(&self, f: usize) -> Vec<usize> {
        let mut jobs = vec![self.flows[f]];
        let mut at = 0;
        while at < jobs.len() {
            jobs.extend(self.jobs[jobs[at]].children.iter().copied());
            at += 1;
        }
        jobs
    }

    /// The places of the jobs of the flows `acked`, parents first in each.
    pub fn acked_jobs(&self, acked: &[usize]) -> Vec<usize> {
        acked.iter().flat_map(|&f| self.jobs_of(f)).collect()
    }
}

/// How many flows are added at once.
const PRODUCERS: usize = 4;

/// How long one flow's add is retried before the run counts it as a
/// violation; once one gave up, later failures give up at once.
const GIVE_UP: Duration = Duration::from_secs(60);

/// Add flow `f` of `flows` (on `queue`, the parents' queue) at `span * f /
/// len` after `start`; the acknowledged flows' numbers are pushed to
/// `acked` as their replies come. A flow whose add got no answer is added
/// again, the same value: what had landed stays, what had not is added.
pub async fn produce(
    queue: Queue,
    flows: Arc<Vec<Flow>>,
    start: Instant,
    span: Duration,
    acked: Arc<Mutex<Vec<usize>>>,
) -> Produced {
    let mut tasks = tokio::task::JoinSet::new();
    let gave_up = Arc::new(AtomicBool::new(false));
    for first in 0..PRODUCERS {
        let (queue, flows, acked, gave_up) = (queue.clone(), flows.clone(), acked.clone(), gave_up.clone());
        tasks.spawn(async move {
            let mut produced = Produced::default();
            let count = flows.len() as u32;
            for f in (first..flows.len()).step_by(PRODUCERS) {
                tokio::time::sleep_until(start + span * f as u32 / count.max(1)).await;
                if add(&queue, &flows[f], &gave_up, &mut produced).await {
                    acked.lock().unwrap_or_else(|p| p.into_inner()).push(f);
                }
            }
            produced
        });
    }
    let mut all = Produced::default();
    while let Some(produced) = tasks.join_next().await {
        let produced = produced.expect("a flow producer task panicked");
        all.retries += produced.retries;
        all.landed += produced.landed;
        all.violations.extend(produced.violations);
    }
    all
}

/// Add one flow until it is acknowledged: whether it was.
async fn add(queue: &Queue, flow: &Flow, gave_up: &AtomicBool, produced: &mut Produced) -> bool {
    let first = Instant::now();
    let mut retried = false;
    loop {
        match Flows::of(queue).add(flow.clone()).await {
            Ok(added) => {
                if !added.created && !retried {
                    produced.violations.push(format!("{}: a fresh flow's parent existed", added.parent));
                }
                produced.landed += u64::from(!added.created);
                return true;
            }
            // No answer: what landed stays; add the same flow again.
            Err(err)
                if err.code().is_none() && first.elapsed() < GIVE_UP && !gave_up.load(Ordering::Relaxed) =>
            {
                produced.retries += 1;
                retried = true;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(err) => {
                gave_up.store(true, Ordering::Relaxed);
                produced.violations.push(format!("a flow was never acknowledged: {err}"));
                return false;
            }
        }
    }
}

/// Watches the flows' parents once the chaos has stopped: a parent still
/// waiting longer than the grace after its last child was seen done is
/// stuck, and so is one not done at the end.
pub struct Watch {
    grace: Duration,
    /// Each waiting parent whose children are all done: since when (at the
    /// earliest, when the watch began).
    due: HashMap<usize, Instant>,
    /// The parents seen waiting.
    waited: HashSet<usize>,
    /// The parents found stuck, each said once.
    stuck: HashSet<usize>,
    /// What is wrong with each stuck parent.
    pub found: Vec<String>,
    /// Parents seen waiting, and then released.
    pub released: u64,
    /// The longest a parent was seen waiting after its children were done.
    pub slowest: Duration,
    /// Parents still waiting when the watch began.
    pub waiting_at_start: Option<u64>,
}

impl Watch {
    /// A watch that allows each parent `grace` after its last child.
    pub fn new(grace: Duration) -> Watch {
        Watch {
            grace,
            due: HashMap::new(),
            waited: HashSet::new(),
            stuck: HashSet::new(),
            found: Vec::new(),
            released: 0,
            slowest: Duration::ZERO,
            waiting_at_start: None,
        }
    }

    /// One look at the `jobs` of the acknowledged flows (places in
    /// `plan.jobs`), read at `now` as `rows`.
    pub fn look(&mut self, plan: &Plan, jobs: &[usize], rows: &HashMap<JobId, Row>, now: Instant) {
        let state = |at: usize| rows.get(&plan.jobs[at].id).map_or("", |row| row.state.as_str());
        let mut waiting = 0;
        for &p in jobs.iter().filter(|&&at| plan.jobs[at].is_parent()) {
            if state(p) != "waiting" {
                if self.waited.remove(&p) {
                    self.released += 1;
                }
                if let Some(since) = self.due.remove(&p) {
                    self.slowest = self.slowest.max(now - since);
                }
                continue;
            }
            self.waited.insert(p);
            waiting += 1;
            if !plan.jobs[p].children.iter().all(|&c| state(c) == "done") {
                continue;
            }
            let since = *self.due.entry(p).or_insert(now);
            if now - since > self.grace && self.stuck.insert(p) {
                self.found.push(format!(
                    "{}: stuck: still waiting {:?} after its last child was done, the chaos over",
                    plan.jobs[p].reference(),
                    now - since
                ));
            }
        }
        self.waiting_at_start.get_or_insert(waiting);
    }

    /// The last look, at the end: every parent not done is stuck.
    pub fn end(&mut self, plan: &Plan, jobs: &[usize], rows: &HashMap<JobId, Row>) {
        for &p in jobs.iter().filter(|&&at| plan.jobs[at].is_parent()) {
            let state = rows.get(&plan.jobs[p].id).map_or("no record", |row| row.state.as_str());
            if state != "done" && self.stuck.insert(p) {
                self.found.push(format!("{}: stuck: never done ({state})", plan.jobs[p].reference()));
            }
        }
    }

    /// How many parents were stuck.
    pub fn stuck(&self) -> u64 {
        self.stuck.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_spreads_children_over_the_queues_and_nests_every_fifth_flow() {
        let plan = Plan::build(10, "chaos");
        assert_eq!(plan.flows.len(), 10);
        let parents = plan.jobs.iter().filter(|job| job.is_parent()).count();
        assert_eq!(parents, 12, "ten flows, two nested");
        assert_eq!(plan.jobs.iter().filter(|job| job.late).count(), 1, "the last tenth's first children");
        assert!(plan.jobs[plan.jobs[plan.flows[9]].children[0]].late);
        assert_eq!(plan.flows(SystemTime::now()).len(), 10);
        for (f, top) in plan.flows.iter().enumerate() {
            let top = &plan.jobs[*top];
            assert_eq!((top.queue, top.parent), (PARENTS, None));
            assert!((2..=5).contains(&top.children.len()), "flow {f}");
        }
        let queues: HashSet<&str> =
            plan.jobs.iter().filter(|job| job.parent.is_some()).map(|job| job.queue).collect();
        assert_eq!(queues, HashSet::from([PARENTS, "chaos", NESTED]));
        // Every job once, each id its own, each number its own.
        let all: Vec<usize> = (0..10).flat_map(|f| plan.jobs_of(f)).collect();
        assert_eq!(all.len(), plan.jobs.len());
        assert_eq!(plan.jobs.iter().map(|job| &job.id).collect::<HashSet<_>>().len(), plan.jobs.len());
        for job in &plan.jobs {
            let kind = if job.is_parent() { Kind::Parent } else { Kind::Child };
            assert_eq!(read_payload(&job.payload), Some((kind, job.number)));
        }
        assert_eq!(read_payload(b"17"), Some((Kind::Plain, 17)));
        assert_eq!(read_payload(b"sibling 3"), None);
    }

    #[test]
    fn a_result_is_fixed_by_the_id_and_payload_and_holds_any_byte() {
        let plan = Plan::build(40, "chaos");
        let results: Vec<Vec<u8>> = plan.jobs.iter().map(FlowJob::result).collect();
        assert_eq!(results, plan.jobs.iter().map(FlowJob::result).collect::<Vec<_>>(), "the same again");
        assert_eq!(results.iter().collect::<HashSet<_>>().len(), results.len(), "each its own");
        let bytes: HashSet<u8> = results.iter().flatten().copied().collect();
        assert!(bytes.contains(&0) && bytes.iter().any(|b| *b >= 0x80), "binary bytes too");
    }

    fn row(state: &str) -> Row {
        Row { state: state.into(), attempts: Some(1), sets: vec![state.into()], lease: None, now: 0 }
    }

    #[test]
    fn a_parent_waiting_past_the_grace_after_its_children_is_stuck() {
        let plan = Plan::build(2, "chaos");
        let jobs = plan.acked_jobs(&[0, 1]);
        let (a, b) = (plan.flows[0], plan.flows[1]);
        let mut rows: HashMap<JobId, Row> = plan
            .jobs
            .iter()
            .map(|job| (job.id.clone(), row(if job.is_parent() { "waiting" } else { "active" })))
            .collect();
        let mut watch = Watch::new(Duration::from_secs(2));
        let t0 = Instant::now();
        watch.look(&plan, &jobs, &rows, t0);
        assert_eq!(watch.waiting_at_start, Some(2));
        // Flow a's children end; flow b's parent is released a second later.
        for &c in plan.jobs[a].children.iter().chain(&plan.jobs[b].children) {
            rows.insert(plan.jobs[c].id.clone(), row("done"));
        }
        watch.look(&plan, &jobs, &rows, t0 + Duration::from_secs(1));
        rows.insert(plan.jobs[b].id.clone(), row("pending"));
        watch.look(&plan, &jobs, &rows, t0 + Duration::from_secs(2));
        assert_eq!((watch.released, watch.slowest, watch.stuck()), (1, Duration::from_secs(1), 0));
        watch.look(&plan, &jobs, &rows, t0 + Duration::from_millis(3500));
        assert_eq!(watch.stuck(), 1, "{:?}", watch.found);
        assert!(watch.found[0].contains("still waiting"), "{:?}", watch.found);
        watch.end(&plan, &jobs, &rows);
        assert_eq!(watch.stuck(), 2, "b was never done: {:?}", watch.found);
    }
}
