//! The flows' verdict: the plan of the flows acknowledged, held against
//! what the workers journaled, what the server kept, and the parents'
//! queues' event logs. Pure logic, tested on made-up histories below.
//! (`verdict.rs` judges every job's tokens, flows' jobs included; the
//! watch in `flows.rs` finds the parents stuck.)
//!
//! - **Results byte for byte**: each run of a parent's handler journaled
//!   what `children_results()` gave it; that must be each of its children,
//!   and each one's bytes exactly what the child returned (`result_of` its
//!   id and payload). The result the server kept for every job of a flow
//!   must be exactly its own.
//! - **No parent run twice**, in the flow's sense: no run of a parent's
//!   handler before every one of its children had ended (a child missing
//!   from what it read), and no parent made pending twice: its queue's
//!   log holds, for each of its children, exactly one `resolved` entry (a
//!   notice applied once per parent, incarnation and child, however often
//!   the relay sent it), and exactly one that made it `pending`, with no
//!   child left open. A parent whose handler began again because its own
//!   lease was lost (its worker killed or paused: at least once) is no
//!   violation; `verdict.rs` holds its tokens to the same rules as any
//!   job's, and each of its runs must still read every child's result.
//! - **The relay**: no RESOLVE refused, none applied twice by the journals.
//!   The kills between a RESOLVE and its XDEL are counted, with how many
//!   of their notices were sent again.

use std::collections::{HashMap, HashSet};

use echomq::{JobId, JobRef};

use crate::audit::Row;
use crate::flows::Plan;
use crate::journal::{hex, Entry, Event, Relayed};

/// One `resolved` entry of a parent's queue's event log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The child it heard of, `{<queue>}<id>`.
    pub child: String,
    /// The parent's state after.
    pub state: String,
    /// How many children it had left open after.
    pub open: String,
}

/// What the flows' verdict is read against.
pub struct Evidence<'a> {
    /// The flows.
    pub plan: &'a Plan,
    /// The jobs of the flows acknowledged, by their places in the plan.
    pub jobs: &'a [usize],
    /// Every worker's journal.
    pub journals: &'a [Vec<Entry>],
    /// The final records.
    pub records: &'a HashMap<JobId, Row>,
    /// The result the server kept for each job of a flow.
    pub kept: &'a HashMap<JobId, Option<Vec<u8>>>,
    /// Each parent's `resolved` entries, in order.
    pub resolved: &'a HashMap<JobId, Vec<Resolved>>,
}

/// What the flows' verdict found.
#[derive(Debug, Default)]
pub struct FlowVerdict {
    /// Parents (nested ones included) and children (nested parents included).
    pub parents: u64,
    /// Jobs that are children of a parent.
    pub children: u64,
    /// Runs of parents' handlers, by the journals.
    pub parent_runs: u64,
    /// Parents whose handler began more than once (its lease lost: at least once).
    pub parents_rerun: u64,
    /// Children's results read by parents' handlers.
    pub results_read: u64,
    /// Results compared byte for byte: read by parents, and kept by the server.
    pub results_compared: u64,
    /// Results that were not byte for byte what their job returned.
    pub not_byte_for_byte: u64,
    /// Parents that ran before all their children had ended.
    pub ran_early: u64,
    /// Parents made pending more than once.
    pub pending_twice: u64,
    /// Notices applied to their parent more than once.
    pub applied_twice: u64,
    /// RESOLVEs journaled: applied, unchanged, unanswered, refused.
    pub resolves: [u64; 4],
    /// Workers that killed themselves between a RESOLVE and its XDEL.
    pub aborts: u64,
    /// … of them, right after a RESOLVE that applied its notice.
    pub aborts_applied: u64,
    /// Notices of those kills that were sent again (the XDEL had not come).
    pub resent: u64,
    /// Every broken promise, described.
    pub violations: Vec<String>,
}

impl FlowVerdict {
    /// Parents run twice in the flow's sense: early, or made pending twice.
    pub fn run_twice(&self) -> u64 {
        self.ran_early + self.pending_twice
    }

    /// Judge the flows.
    pub fn judge(e: &Evidence<'_>) -> FlowVerdict {
        let mut v = FlowVerdict::default();
        let lines = Lines::read(e.journals);
        for &at in e.jobs {
            let job = &e.plan.jobs[at];
            v.children += u64::from(job.parent.is_some());
            v.kept(&job.reference(), &job.result(), e.kept.get(&job.id));
            if job.is_parent() {
                v.parents += 1;
                v.parent(e, at, &lines);
            }
        }
        v.relay(&lines);
        v
    }

    /// The result the server kept for a job.
    fn kept(&mut self, job: &JobRef, want: &[u8], kept: Option<&Option<Vec<u8>>>) {
        self.results_compared += 1;
        if kept.and_then(Option::as_deref) != Some(want) {
            self.not_byte_for_byte += 1;
            let kept = kept.map(|kept| kept.as_deref().map(hex));
            self.violations.push(format!("{job}: kept {kept:?}, not what it returned, {}", hex(want)));
        }
    }

    /// One parent: what each run of its handler read, and its log.
    fn parent(&mut self, e: &Evidence<'_>, at: usize, lines: &Lines<'_>) {
        let parent = &e.plan.jobs[at];
        let me = parent.reference();
        let want: HashMap<JobRef, Vec<u8>> =
            parent.children.iter().map(|&c| (e.plan.jobs[c].reference(), e.plan.jobs[c].result())).collect();
        let starts = lines.starts.get(&parent.id).map_or(0, HashSet::len) as u64;
        self.parent_runs += starts;
        self.parents_rerun += u64::from(starts > 1);
        let read = lines.read.get(&parent.id).map_or(&[][..], Vec::as_slice);
        let mut early = false;
        for (token, results) in read {
            self.results_read += results.len() as u64;
            let got: HashMap<&JobRef, &Vec<u8>> =
                results.iter().map(|(child, bytes)| (child, bytes)).collect();
            let mut missing: Vec<String> =
                want.keys().filter(|child| !got.contains_key(child)).map(ToString::to_string).collect();
            if !missing.is_empty() {
                missing.sort();
                early = true;
                self.violations.push(format!(
                    "{me}: attempt {token} ran before its children {} had ended",
                    missing.join(", ")
                ));
            }
            for (child, bytes) in got {
                self.results_compared += 1;
                if want.get(child) != Some(bytes) {
                    self.not_byte_for_byte += 1;
                    let wanted = want.get(child).map(|want| hex(want));
                    self.violations.push(format!(
                        "{me}: attempt {token} read {} from {child}, which returned {wanted:?}",
                        hex(bytes)
                    ));
                }
            }
        }
        let record = e.records.get(&parent.id);
        if let Some(Row { state, attempts: Some(last), .. }) = record {
            if state == "done" && !read.iter().any(|(token, _)| token == last) {
                self.violations
                    .push(format!("{me}: done, but its final run (attempt {last}) read no children"));
            }
        }
        early |= self.log(&me, &want, e.resolved.get(&parent.id).map_or(&[][..], Vec::as_slice));
        self.ran_early += u64::from(early);
    }

    /// A parent's `resolved` entries: one per child, one that made it
    /// pending, with none open. Whether it was made pending with children
    /// open (it would run early).
    fn log(&mut self, me: &JobRef, want: &HashMap<JobRef, Vec<u8>>, log: &[Resolved]) -> bool {
        let mut heard: HashMap<&str, u64> = HashMap::new();
        for entry in log {
            *heard.entry(entry.child.as_str()).or_default() += 1;
        }
        let names: HashSet<String> = want.keys().map(ToString::to_string).collect();
        for child in &names {
            match heard.get(child.as_str()).copied().unwrap_or(0) {
                1 => {}
                0 => self.violations.push(format!("{me}: its log never heard of child {child}")),
                times => {
                    self.applied_twice += 1;
                    self.violations.push(format!("{me}: heard of child {child} {times} times"));
                }
            }
        }
        for stranger in heard.keys().filter(|child| !names.contains(**child)) {
            self.violations.push(format!("{me}: heard of {stranger}, no child of its"));
        }
        let pending: Vec<&Resolved> = log.iter().filter(|entry| entry.state == "pending").collect();
        let mut early = false;
        for open in pending.iter().map(|entry| &entry.open).filter(|open| *open != "0") {
            self.violations.push(format!("{me}: made pending with {open} children open"));
            early = true;
        }
        match pending.len() {
            1 => {}
            0 => self.violations.push(format!("{me}: never made pending by its children's notices")),
            times => {
                self.pending_twice += 1;
                self.violations.push(format!("{me}: made pending {times} times"));
            }
        }
        early
    }

    /// The relay's RESOLVEs and the kills between them and their XDELs.
    fn relay(&mut self, lines: &Lines<'_>) {
        let mut applied: HashMap<(&JobId, u64), u64> = HashMap::new();
        let mut sent: HashMap<(&JobId, u64), u64> = HashMap::new();
        for &(child, incarnation, relayed) in &lines.resolves {
            self.resolves[relayed as usize] += 1;
            *sent.entry((child, incarnation)).or_default() += 1;
            match relayed {
                Relayed::Applied => *applied.entry((child, incarnation)).or_default() += 1,
                Relayed::Refused => {
                    self.violations.push(format!("{child}: its notice's RESOLVE was refused"))
                }
                _ => {}
            }
        }
        for ((child, incarnation), times) in applied {
            if times > 1 {
                self.applied_twice += 1;
                self.violations.push(format!(
                    "{child}: its notice to incarnation {incarnation} was applied {times} times"
                ));
            }
        }
        let mut aborted: HashMap<(&JobId, u64), u64> = HashMap::new();
        for &(child, incarnation, relayed) in &lines.aborts {
            self.aborts += 1;
            self.aborts_applied += u64::from(relayed == Relayed::Applied);
            *aborted.entry((child, incarnation)).or_default() += 1;
        }
        // Each kill follows its own RESOLVE's line; any more lines of the
        // notice are its sends again (or a relay of another worker's at once).
        for (notice, kills) in aborted {
            self.resent += u64::from(sent.get(&notice).copied().unwrap_or(0) > kills);
        }
    }
}

/// What one run of a parent's handler read: its token, and each child's result.
type Read<'j> = (u64, &'j [(JobRef, Vec<u8>)]);

/// The flows' lines of every journal, gathered.
struct Lines<'j> {
    /// Each job's tokens whose handler began.
    starts: HashMap<&'j JobId, HashSet<u64>>,
    /// Each parent's runs: the token, and what it read.
    read: HashMap<&'j JobId, Vec<Read<'j>>>,
    /// Every RESOLVE: the child, the incarnation, the answer.
    resolves: Vec<(&'j JobId, u64, Relayed)>,
    /// Every kill of a worker's own after a RESOLVE.
    aborts: Vec<(&'j JobId, u64, Relayed)>,
}

impl<'j> Lines<'j> {
    fn read(journals: &'j [Vec<Entry>]) -> Lines<'j> {
        let mut lines =
            Lines { starts: HashMap::new(), read: HashMap::new(), resolves: Vec::new(), aborts: Vec::new() };
        for Entry { event, id, token } in journals.iter().flatten() {
            match event {
                Event::Start => {
                    lines.starts.entry(id).or_default().insert(*token);
                }
                Event::Children(results) => lines.read.entry(id).or_default().push((*token, results)),
                Event::Resolve(relayed) => lines.resolves.push((id, *token, *relayed)),
                Event::Abort(relayed) => lines.aborts.push((id, *token, *relayed)),
                _ => {}
            }
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flows::FlowJob;

    fn done(attempts: u64) -> Row {
        Row { state: "done".into(), attempts: Some(attempts), sets: vec!["done".into()], lease: None, now: 0 }
    }

    fn line(event: Event, id: &JobId, token: u64) -> Entry {
        Entry { event, id: id.clone(), token }
    }

    /// One flow of two children, run cleanly: the parent read both, the
    /// server kept every result, the log heard each child once.
    struct History {
        plan: Plan,
        jobs: Vec<usize>,
        journals: Vec<Vec<Entry>>,
        records: HashMap<JobId, Row>,
        kept: HashMap<JobId, Option<Vec<u8>>>,
        resolved: HashMap<JobId, Vec<Resolved>>,
    }

    impl History {
        fn new() -> History {
            let plan = Plan::build(1, "chaos");
            let jobs = plan.acked_jobs(&[0]);
            let parent = plan.jobs[plan.flows[0]].clone();
            let children: Vec<FlowJob> = parent.children.iter().map(|&c| plan.jobs[c].clone()).collect();
            let read = children.iter().map(|child| (child.reference(), child.result())).collect();
            let mut journals = vec![vec![
                line(Event::Start, &parent.id, 1),
                line(Event::Children(read), &parent.id, 1),
                line(Event::End, &parent.id, 1),
            ]];
            let mut resolved = Vec::new();
            for (n, child) in children.iter().enumerate() {
                journals[0].push(line(Event::Resolve(Relayed::Applied), &child.id, 7));
                let open = (children.len() - n - 1).to_string();
                let state = if open == "0" { "pending" } else { "waiting" };
                resolved.push(Resolved { child: child.reference().to_string(), state: state.into(), open });
            }
            let records = plan.jobs.iter().map(|job| (job.id.clone(), done(1))).collect();
            let kept = plan.jobs.iter().map(|job| (job.id.clone(), Some(job.result()))).collect();
            History { plan, jobs, journals, records, kept, resolved: HashMap::from([(parent.id, resolved)]) }
        }

        fn judge(&self) -> FlowVerdict {
            FlowVerdict::judge(&Evidence {
                plan: &self.plan,
                jobs: &self.jobs,
                journals: &self.journals,
                records: &self.records,
                kept: &self.kept,
                resolved: &self.resolved,
            })
        }

        fn parent(&self) -> &FlowJob {
            &self.plan.jobs[self.plan.flows[0]]
        }
    }

    #[test]
    fn a_clean_flow_breaks_nothing() {
        let h = History::new();
        let v = h.judge();
        assert_eq!(v.violations, Vec::<String>::new());
        let children = h.parent().children.len() as u64;
        assert_eq!((v.parents, v.children, v.parent_runs, v.results_read), (1, children, 1, children));
        assert_eq!(v.results_compared, 2 * children + 1, "read, and kept for each job");
        assert_eq!(v.resolves, [children, 0, 0, 0]);
    }

    #[test]
    fn a_result_off_by_a_byte_is_caught_where_it_was_read_and_kept() {
        let mut h = History::new();
        let Event::Children(read) = &mut h.journals[0][1].event else { panic!() };
        read[0].1.push(0);
        let child = h.plan.jobs[h.parent().children[1]].id.clone();
        h.kept.insert(child, Some(b"other".to_vec()));
        let v = h.judge();
        assert_eq!(v.not_byte_for_byte, 2, "{:?}", v.violations);
        assert_eq!(v.run_twice(), 0);
    }

    #[test]
    fn a_parent_that_ran_before_a_child_ended_or_was_made_pending_twice_ran_twice() {
        let mut h = History::new();
        let Event::Children(read) = &mut h.journals[0][1].event else { panic!() };
        read.pop();
        let v = h.judge();
        assert_eq!(v.ran_early, 1, "{:?}", v.violations);
        assert!(v.violations.iter().any(|v| v.contains("ran before its children")), "{:?}", v.violations);

        let mut h = History::new();
        let id = h.parent().id.clone();
        let log = h.resolved.get_mut(&id).unwrap();
        let again = log.last().unwrap().clone();
        log.push(again);
        let v = h.judge();
        assert_eq!((v.pending_twice, v.applied_twice), (1, 1), "{:?}", v.violations);
        assert_eq!(v.run_twice(), 1);

        let mut h = History::new();
        let id = h.parent().id.clone();
        h.resolved.get_mut(&id).unwrap()[0].state = "pending".into();
        let v = h.judge();
        assert!(v.violations.iter().any(|v| v.contains("children open")), "{:?}", v.violations);
        assert_eq!(v.run_twice(), 2, "early, and pending twice");
    }

    #[test]
    fn a_rerun_after_a_lost_lease_is_no_violation_but_must_read_its_children_too() {
        let mut h = History::new();
        let id = h.parent().id.clone();
        let first = h.journals[0][1].clone();
        h.journals.push(vec![
            line(Event::Start, &id, 2),
            Entry { token: 2, ..first },
            line(Event::End, &id, 2),
        ]);
        h.records.insert(id.clone(), done(2));
        let v = h.judge();
        assert_eq!(v.violations, Vec::<String>::new());
        assert_eq!((v.parent_runs, v.parents_rerun), (2, 1));

        h.journals[1].remove(1);
        let v = h.judge();
        assert!(v.violations.iter().any(|v| v.contains("read no children")), "{:?}", v.violations);
    }

    #[test]
    fn kills_between_resolve_and_xdel_are_counted_with_their_notices_sent_again() {
        let mut h = History::new();
        let child = h.plan.jobs[h.parent().children[0]].id.clone();
        h.journals.push(vec![line(Event::Resolve(Relayed::Applied), &child, 7)]);
        h.journals[1].push(line(Event::Abort(Relayed::Applied), &child, 7));
        let v = h.judge();
        assert_eq!((v.aborts, v.aborts_applied, v.resent), (1, 1, 1));
        assert!(v.violations.iter().any(|v| v.contains("applied 2 times")), "{:?}", v.violations);

        // Sent again, it changes nothing: no violation.
        h.journals[0].push(line(Event::Resolve(Relayed::Unchanged), &child, 7));
        h.journals[1][0].event = Event::Resolve(Relayed::Unchanged);
        h.journals[1][1].event = Event::Abort(Relayed::Unchanged);
        let v = h.judge();
        assert_eq!(v.violations, Vec::<String>::new());
        assert_eq!((v.aborts, v.aborts_applied, v.resent), (1, 0, 1));
    }
}
