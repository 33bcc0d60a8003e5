//! The report: the counts a run prints, one `label: numbers` line each, so
//! that people and the CI test read the same lines; violations first.

use std::time::Duration;

use crate::chaos::Pauses;
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
    /// Acknowledged jobs done at the end.
    pub done: u64,
    /// The journals' verdict.
    pub verdict: Verdict,
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
        println!(
            "handler runs: {} begun, {} ended Ok; {} jobs ran more than once ({} re-runs)",
            v.starts, v.ends, v.rerun_jobs, v.reruns
        );
        println!(
            "acks accepted: {} seen, {} unseen (the answer was lost, or the worker died before journaling it)",
            v.acks_seen,
            self.done.saturating_sub(v.acks_seen)
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
