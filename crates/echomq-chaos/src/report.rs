//! The report: the counts a run prints, one `label: numbers` line each, so
//! that people and the CI test read the same lines; violations first.

use std::time::Duration;

use crate::chaos::Pauses;
use crate::flow_verdict::FlowVerdict;
use crate::produce::Produced;
use crate::verdict::Verdict;

/// How many violations are printed one by one.
const LISTED: usize = 40;

/// What a run did and found.
pub struct Report {
    /// Enqueues acknowledged.
    pub acked: u64,
    /// What the producer did.
    pub produced: Produced,
    /// Acknowledged plain jobs done at the end.
    pub done: u64,
    /// Jobs of acknowledged flows done at the end.
    pub done_flows: u64,
    /// The journals' verdict.
    pub verdict: Verdict,
    /// The flows, when the run had some.
    pub flows: Option<FlowsReport>,
    /// The groups' verdict, when the run had some.
    pub groups: Option<crate::groups::GroupsVerdict>,
    /// Workers killed.
    pub kills: u64,
    /// What the pauses did.
    pub pauses: Pauses,
    /// Server restarts.
    pub restarts: u64,
    /// Audits of every acknowledged job.
    pub audits: u64,
    /// Every broken promise.
    pub violations: Vec<String>,
    /// The run's length.
    pub took: Duration,
}

/// What the flows did and the flows' verdict found.
pub struct FlowsReport {
    /// Flows planned.
    pub planned: u64,
    /// Flows whose add was acknowledged.
    pub acked: u64,
    /// Nested flows' parents among them.
    pub nested: u64,
    /// What the flows' producer did (its violations are the run's).
    pub produced: Produced,
    /// Their jobs done at the end.
    pub done: u64,
    /// The flows' verdict.
    pub verdict: FlowVerdict,
    /// Parents stuck once the chaos was over.
    pub stuck: u64,
    /// Parents still waiting when the chaos was over.
    pub waiting_at_calm: u64,
    /// … of them seen released since.
    pub released: u64,
    /// The longest such a parent waited after its last child was seen done.
    pub slowest: Duration,
    /// How long it may.
    pub grace: Duration,
    /// Workers that killed themselves between a RESOLVE and its XDEL.
    pub self_killed: u64,
    /// The chance of it, per RESOLVE.
    pub chance: f64,
}

impl FlowsReport {
    fn print(&self) {
        let (v, p) = (&self.verdict, &self.produced);
        println!(
            "flows acknowledged: {} of {} (retried {}, of which {} had landed); {} parents ({} nested), \
             {} children; {} of their jobs done",
            self.acked, self.planned, p.retries, p.landed, v.parents, self.nested, v.children, self.done
        );
        println!(
            "parents stuck: {} (once the chaos was over, {} waiting, {} then released; the slowest {} ms \
             after its last child was seen done, of a grace of {} ms)",
            self.stuck,
            self.waiting_at_calm,
            self.released,
            self.slowest.as_millis(),
            self.grace.as_millis()
        );
        println!(
            "parents run twice: {} (ran before their children ended {}, made pending twice {}, \
             notices applied twice {}); {} runs of {} parents, {} re-run after their own lease was lost \
             (at least once: no violation)",
            v.run_twice(),
            v.ran_early,
            v.pending_twice,
            v.applied_twice,
            v.parent_runs,
            v.parents,
            v.parents_rerun
        );
        println!(
            "results not byte for byte: {} (of {} compared: {} children's results read by parents' handlers, \
             the rest kept by the server)",
            v.not_byte_for_byte, v.results_compared, v.results_read
        );
        let [applied, unchanged, lost, refused] = v.resolves;
        println!(
            "kills between RESOLVE and XDEL: {} (chance {} per RESOLVE; {} journaled, {} right after one \
             that applied; {} of their notices sent again)",
            self.self_killed, self.chance, v.aborts, v.aborts_applied, v.resent
        );
        println!(
            "RESOLVEs: {} ({applied} applied, {unchanged} changed nothing, {lost} unanswered, {refused} refused)",
            applied + unchanged + lost + refused
        );
    }
}

impl Report {
    /// Print the report to stdout.
    pub fn print(&self) {
        for broken in self.violations.iter().take(LISTED) {
            println!("VIOLATION {broken}");
        }
        if self.violations.len() > LISTED {
            println!("VIOLATION … and {} more", self.violations.len() - LISTED);
        }
        let (p, v) = (&self.produced, &self.verdict);
        let [acks, fails, heartbeats, releases] = v.stale_refused;
        println!(
            "enqueues acknowledged: {} (retried {}, of which {} had landed)",
            self.acked, p.retries, p.landed
        );
        println!("jobs done: {}", self.done);
        if let Some(flows) = &self.flows {
            flows.print();
        }
        if let Some(groups) = &self.groups {
            groups.print();
        }
        println!(
            "handler runs: {} begun, {} ended Ok; {} jobs ran more than once ({} re-runs)",
            v.starts, v.ends, v.rerun_jobs, v.reruns
        );
        println!(
            "acks accepted: {} seen, {} unseen (the answer was lost, or the worker died before journaling it)",
            v.acks_seen,
            (self.done + self.done_flows).saturating_sub(v.acks_seen)
        );
        println!("worker kills (SIGKILL): {}", self.kills);
        let idle = match self.pauses.idle {
            0 => String::new(),
            idle => format!(" ({idle} found no running handler)"),
        };
        println!(
            "worker pauses (SIGSTOP past the lease): {}, catching {} running tokens{idle}",
            self.pauses.done, self.pauses.caught
        );
        println!("server restarts (SIGKILL, appendfsync always): {}", self.restarts);
        println!(
            "stale tokens refused: {} (acks {acks}, fails {fails}, heartbeats {heartbeats}, releases {releases})",
            acks + fails + heartbeats + releases
        );
        println!(
            "answers lost with a connection: {}; repeats refused (their first try had landed): {}",
            v.unanswered, v.repeats_refused
        );
        println!(
            "claims: {}; audits: {} (every acknowledged job, atomically per 500)",
            v.claims, self.audits
        );
        println!("violations: {}", self.violations.len());
        println!("run time: {:.1} s", self.took.as_secs_f64());
    }
}

/// Print the command line that runs this run again.
pub(crate) fn announce(o: &crate::run::Options, seed: u64) {
    let via = crate::run::via_name(o.via);
    println!(
        "echomq-chaos run --via {via} --seed {seed} --jobs {} --workers {} --concurrency {} --seconds {} \
         --kills {} --pauses {} --restarts {} --lease-ms {} --work-ms {} --flows {} --resolve-kills {} \
         --flow-grace-ms {} --groups {}",
        o.jobs,
        o.workers,
        o.concurrency,
        o.seconds,
        o.kills,
        o.pauses,
        o.restarts,
        o.lease_ms,
        o.work_ms,
        o.flows,
        o.resolve_kills,
        o.flow_grace_ms,
        o.groups,
    );
}
