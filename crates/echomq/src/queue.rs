//! [`Queue`]: the API a Rust user calls. A queue is a name and a `via`; every
//! method is one transition.
//!
//! # Layout
//! The methods are grouped by who calls them, each group an `impl Queue`
//! of its own file:
//! - `produce`: enqueue, one job, many, or a batch with a callback.
//! - `consume`: claim, and ack many at once; `lease`: what the holder of a
//!   claimed job does with it (ack, fail, extend, …).
//! - `operate`: pause, limits, retention, cancel, retry, drain, delete,
//!   stats, inspect; `schedules`: a queue's schedules, on [`Schedules`]
//!   ([`Queue::schedules`]); `groups`: a queue's fair groups, on
//!   [`QueueGroups`].
//! - `read`: results, waiting for a job, the event log.
//! - `upkeep`: reap, promote, trim, settle, fire schedules: a worker's
//!   duties, on [`Upkeep`], apart from the everyday surface.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::executor::{execute, Executor};
use crate::id::JobId;
use crate::keyspace::Keyspace;
use crate::transition::Transition;
use crate::Result;

mod consume;
mod flows;
mod groups;
mod lease;
mod operate;
mod produce;
mod read;
pub mod registry;
mod relay;
mod schedules;
mod upkeep;

pub(crate) use consume::ack_many;
pub use flows::{ChildJobs, Flow, FlowAdded, Flows};
pub use groups::QueueGroups;
pub use lease::{Lease, Leases, Wait};
pub use operate::{Delete, Drain};
pub use produce::{BatchOpened, EnqueueOptions, Enqueued};
pub use read::{EventsFrom, Finished};
pub use relay::SWEEP_GRACE;
pub(crate) use relay::{relay, sweep, RELAY_STEP};
pub use schedules::Schedules;
pub use upkeep::Upkeep;

/// One queue, over one executor. Cheap to clone; clones share the executor.
#[derive(Clone)]
pub struct Queue {
    keys: Arc<Keyspace>,
    via: Arc<dyn Executor>,
    /// Whether this queue (and its clones) noted itself in the registry.
    registered: Arc<Registered>,
    /// The coordinator of the exact limits of the partitioned queue this
    /// one belongs to (PROTOCOL.md §7.10): asked before each claim.
    coordinator: Option<Arc<crate::partition::Coordinator>>,
}

/// A queue's own word of the registry: noted there, and whether a failure
/// to note it was said (once).
#[derive(Debug, Default)]
struct Registered {
    noted: AtomicBool,
    said: AtomicBool,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue").field("queue", &self.keys.queue()).finish_non_exhaustive()
    }
}

/// The header that carries a job's W3C trace context.
pub const TRACEPARENT: &str = "traceparent";

/// How many jobs a call moves or deletes when the library sweeps a set in
/// many calls (the worker's upkeep, [`Queue::drain`], [`Queue::purge`],
/// [`Queue::delete`]); the protocol allows up to 1000. Redis runs one call
/// at a time, and a call's time is every other client's wait: a TRIM of a
/// thousand jobs held the server 5-11 ms, one of a hundred 0.6-0.8 ms (2.5
/// at the longest; `bench/stalls.py`), and between calls others are served.
pub const SWEEP_STEP: u64 = 100;

/// When a failed job is retried, and how often before it dies. The policy
/// travels as FAIL's arguments; nothing of it is stored in the record.
///
/// ```
/// # use std::time::Duration;
/// let policy = echomq::RetryPolicy::new().max_attempts(3).backoff(Duration::from_millis(200));
/// assert_eq!(policy.max_attempts, 3);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
#[must_use]
pub struct RetryPolicy {
    /// A job dies when its attempts reach this.
    pub max_attempts: u64,
    /// The back-off after the first failure; it doubles with each attempt.
    pub backoff: Duration,
    /// The back-off never grows past this.
    pub max_backoff: Duration,
    /// How much of each back-off is random, 0.0..=1.0: jobs that failed
    /// together (a dependency went down) come back spread out, not in a herd.
    pub jitter: f64,
}

impl Default for RetryPolicy {
    /// [`RetryPolicy::new`].
    fn default() -> Self {
        RetryPolicy::new()
    }
}

impl RetryPolicy {
    /// Five attempts, backing off about 1 s, 2 s, 4 s, 8 s (less up to half,
    /// at random), never more than an hour.
    pub const fn new() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 5,
            backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(3600),
            jitter: 0.5,
        }
    }

    /// A job dies when its attempts reach `attempts`.
    pub const fn max_attempts(mut self, attempts: u64) -> RetryPolicy {
        self.max_attempts = attempts;
        self
    }

    /// The back-off after the first failure; it doubles with each attempt.
    pub const fn backoff(mut self, backoff: Duration) -> RetryPolicy {
        self.backoff = backoff;
        self
    }

    /// The back-off never grows past `most`.
    pub const fn max_backoff(mut self, most: Duration) -> RetryPolicy {
        self.max_backoff = most;
        self
    }

    /// How much of each back-off is random, 0.0..=1.0 (clamped when used).
    pub const fn jitter(mut self, jitter: f64) -> RetryPolicy {
        self.jitter = jitter;
        self
    }

    /// The back-off after job `id` failed attempt `attempt`, jitter applied.
    /// The randomness is the id's own (its ULID's random bits, hashed with the
    /// attempt), so it needs no generator and differs from job to job.
    #[must_use]
    pub fn delay_for(&self, id: &JobId, attempt: u64) -> Duration {
        use std::hash::{DefaultHasher, Hash, Hasher};
        let mut hasher = DefaultHasher::new();
        (id, attempt).hash(&mut hasher);
        let unit = (hasher.finish() % 10_000) as f64 / 10_000.0;
        self.backoff_after(attempt).mul_f64(1.0 - self.jitter.clamp(0.0, 1.0) * unit)
    }

    /// The back-off after failing attempt number `attempt` (1 for the first).
    #[must_use]
    pub fn backoff_after(&self, attempt: u64) -> Duration {
        let doublings = u32::try_from(attempt.saturating_sub(1)).unwrap_or(u32::MAX).min(31);
        self.backoff.saturating_mul(1 << doublings).min(self.max_backoff)
    }
}

impl Queue {
    /// The queue `name`, run by `via`: [`connect`](crate::connect) picks
    /// the native module when the server has it, else Lua scripts;
    /// [`Embedded`](crate::Embedded) runs in this process, with no server.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidQueue`](crate::ErrorKind::InvalidQueue) for a
    /// name that is empty, over 255 bytes, or holds `{`, `}` or NUL.
    pub fn new(via: Arc<dyn Executor>, name: &str) -> Result<Queue> {
        Ok(Queue { keys: Arc::new(Keyspace::new(name)?), via, registered: Arc::default(), coordinator: None })
    }

    /// This queue, as one of the queues of a partitioned queue whose exact
    /// rate `coordinator` hands out.
    pub(crate) fn coordinated(mut self, coordinator: Arc<crate::partition::Coordinator>) -> Queue {
        self.coordinator = Some(coordinator);
        self
    }

    /// The coordinator of the partitioned queue it belongs to, when it
    /// does: under an exact concurrency, its jobs' running permits.
    pub(crate) fn coordinator(&self) -> Option<&Arc<crate::partition::Coordinator>> {
        self.coordinator.as_ref()
    }

    /// Whether its claims ask a partitioned queue's coordinator first: an
    /// ACKNEXT, which claims without asking, must not claim for it.
    pub(crate) fn coordinated_claims(&self) -> bool {
        self.coordinator.is_some()
    }

    /// The queue's name.
    #[must_use]
    pub fn name(&self) -> &str {
        self.keys.queue()
    }

    /// The queue's keys.
    #[must_use]
    pub fn keyspace(&self) -> &Keyspace {
        &self.keys
    }

    /// The executor the queue runs on.
    #[must_use]
    pub fn executor(&self) -> &Arc<dyn Executor> {
        &self.via
    }

    /// Note the queue in the registry ([`REGISTRY`](crate::keyspace::REGISTRY))
    /// once for this queue and its clones; `again` notes it anyway (a
    /// worker's upkeep keeps its last-seen time fresh). The registry is
    /// advisory: a failure to write it (a user not allowed to) is logged,
    /// and the call that asked goes on.
    pub(crate) async fn register(&self, again: bool) {
        if self.registered.noted.swap(true, Ordering::Relaxed) && !again {
            return;
        }
        if let Err(err) = registry::note(&*self.via, self.name()).await {
            self.registered.noted.store(false, Ordering::Relaxed);
            if !self.registered.said.swap(true, Ordering::Relaxed) {
                tracing::warn!(queue = self.name(), error = %err, "the queue registry could not be written");
            }
        }
    }

    /// Take the queue out of the registry (it was deleted), so that the
    /// next enqueue notes it again.
    pub(crate) async fn unregister(&self) -> Result<()> {
        self.registered.noted.store(false, Ordering::Relaxed);
        registry::forget(&*self.via, self.name()).await
    }

    /// Run one transition on this queue.
    pub(crate) async fn run<T: Transition>(&self, transition: &T) -> Result<T::Output> {
        execute(&*self.via, &self.keys, transition).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let policy = RetryPolicy {
            max_attempts: 10,
            backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(1000),
            jitter: 0.5,
        };
        let got: Vec<u128> = (1..=6).map(|a| policy.backoff_after(a).as_millis()).collect();
        assert_eq!(got, [100, 200, 400, 800, 1000, 1000]);
        assert_eq!(policy.backoff_after(u64::MAX), Duration::from_millis(1000));
    }

    #[test]
    fn jitter_spreads_jobs_within_its_share() {
        let policy = RetryPolicy { jitter: 0.5, ..RetryPolicy::new() };
        let delays: Vec<Duration> = (0..200).map(|_| policy.delay_for(&JobId::mint(), 1)).collect();
        assert!(delays.iter().all(|d| *d >= Duration::from_millis(500) && *d <= Duration::from_secs(1)));
        let distinct: std::collections::BTreeSet<_> = delays.iter().collect();
        assert!(distinct.len() > 150, "only {} distinct delays", distinct.len());
        let id = JobId::mint();
        assert_eq!(
            policy.delay_for(&id, 2),
            policy.delay_for(&id, 2),
            "the same job and attempt, the same delay"
        );
        let exact = RetryPolicy { jitter: 0.0, ..policy };
        assert_eq!(exact.delay_for(&id, 3), Duration::from_secs(4));
    }
}
