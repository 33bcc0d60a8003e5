//! The worker's metrics: their names, defined once ([`metric`]), and each
//! queue's handles, made once per worker ([`Meters`]).

/// Metric: jobs claimed whose id this host cannot hold (not UTF-8), so cannot run.
pub const UNHANDLED: &str = "emq_jobs_unhandled_total";

/// A claimed job this host cannot run, since it cannot even name it: say so
/// and count it, never drop it without a word (PROTOCOL.md §1). It stays
/// active until its lease runs out and REAP takes it back, or kills it.
pub(crate) fn unhandled(why: &str) {
    tracing::error!(
        id = why,
        "claimed a job whose id this host cannot hold; it cannot run here and stays active until REAP"
    );
    metrics::counter!(UNHANDLED).increment(1);
}

/// Metric names, defined once.
pub mod metric {
    /// Jobs acked.
    pub const PROCESSED: &str = "emq_jobs_processed_total";
    /// Jobs whose handler failed (an error or a panic).
    pub const FAILED: &str = "emq_jobs_failed_total";
    /// Failed jobs sent to delayed for another attempt.
    pub const RETRIED: &str = "emq_jobs_retried_total";
    /// Failed jobs out of attempts.
    pub const DEAD: &str = "emq_jobs_dead_total";
    /// Jobs whose handler said "retry after" (deferred, not failed).
    pub const DEFERRED: &str = "emq_jobs_deferred_total";
    /// Jobs whose handler ran past its timeout (each also counts as failed).
    pub const TIMED_OUT: &str = "emq_jobs_timed_out_total";
    /// Jobs whose lease was lost while their handler ran.
    pub const LEASES_LOST: &str = "emq_leases_lost_total";
    /// Seconds from claim to the handler's end.
    pub const RUN_SECONDS: &str = "emq_job_run_seconds";
    /// Seconds from enqueue to the start of this attempt: from the mint
    /// time in the job's branded id (a ULID's ms), since a claim's reply
    /// carries no `enqueued_at`; so a delayed or retried job's wait counts
    /// its delay and its earlier attempts too. Jobs whose id is not branded
    /// (another speaker's, a derived one) are not counted.
    pub const WAIT_SECONDS: &str = "emq_job_wait_seconds";

    /// Give each family its help text (Prometheus' `# HELP`, which
    /// `promtool check metrics` asks for) in the recorder installed now. A
    /// worker calls it as it starts; calling it again changes nothing.
    pub fn describe() {
        use metrics::{describe_counter, describe_histogram, Unit};
        describe_counter!(PROCESSED, "Jobs this worker acked (completed), by queue.");
        describe_counter!(
            FAILED,
            "Attempts whose handler failed (an error, a panic or a timeout), by queue: every failed attempt, \
             retried or not (the server's failed count is only the attempts that get another)."
        );
        describe_counter!(RETRIED, "Failed attempts sent to delayed for another attempt, by queue.");
        describe_counter!(DEAD, "Failed attempts that were the job's last: sent to dead, by queue.");
        describe_counter!(DEFERRED, "Jobs whose handler asked to come back later (retry after), by queue.");
        describe_counter!(TIMED_OUT, "Attempts that ran past their timeout (each also counts as failed).");
        describe_counter!(LEASES_LOST, "Jobs whose lease was lost while their handler ran (fenced out).");
        describe_histogram!(RUN_SECONDS, Unit::Seconds, "Seconds from a job's claim to its handler's end.");
        describe_histogram!(
            WAIT_SECONDS,
            Unit::Seconds,
            "Seconds from a job's enqueue (its branded id's time) to the start of this attempt."
        );
        describe_counter!(
            super::UNHANDLED,
            "Jobs claimed whose id this host cannot hold, left active for REAP."
        );
    }
}

/// A queue's metric handles, labelled with its name: registered once per
/// worker, not at every job (a recorder's registration is a lookup, and
/// the labels an allocation).
#[derive(Clone)]
pub(super) struct Meters {
    pub(super) processed: metrics::Counter,
    pub(super) failed: metrics::Counter,
    pub(super) retried: metrics::Counter,
    pub(super) dead: metrics::Counter,
    pub(super) deferred: metrics::Counter,
    pub(super) timed_out: metrics::Counter,
    pub(super) leases_lost: metrics::Counter,
    pub(super) run_seconds: metrics::Histogram,
    pub(super) wait_seconds: metrics::Histogram,
}

impl Meters {
    /// The handles of the queue named `queue`.
    pub(super) fn new(queue: &str) -> Meters {
        let labels = [("queue", queue.to_owned())];
        Meters {
            processed: metrics::counter!(metric::PROCESSED, &labels),
            failed: metrics::counter!(metric::FAILED, &labels),
            retried: metrics::counter!(metric::RETRIED, &labels),
            dead: metrics::counter!(metric::DEAD, &labels),
            deferred: metrics::counter!(metric::DEFERRED, &labels),
            timed_out: metrics::counter!(metric::TIMED_OUT, &labels),
            leases_lost: metrics::counter!(metric::LEASES_LOST, &labels),
            run_seconds: metrics::histogram!(metric::RUN_SECONDS, &labels),
            wait_seconds: metrics::histogram!(metric::WAIT_SECONDS, &labels),
        }
    }
}
