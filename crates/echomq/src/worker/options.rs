//! How a worker runs ([`WorkerOptions`]), and what its parts share while
//! it runs: the handler, the options and the stops.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use echomq_core::limits;

use super::handler::Handler;
use crate::queue::RetryPolicy;
use crate::{Error, ErrorKind, Result};

/// How a worker runs: the defaults, changed by its setters.
///
/// ```
/// # use std::time::Duration;
/// let options = echomq::worker::WorkerOptions::default().concurrency(4).lease(Duration::from_secs(60));
/// assert_eq!(options.concurrency, 4);
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
#[must_use]
pub struct WorkerOptions {
    /// Jobs run at once, across the worker's queues.
    pub concurrency: usize,
    /// Each claim's lease; renewed before a third of it has passed, every
    /// running job of a queue in one pipelined round of EXTENDs.
    pub lease: Duration,
    /// Retries and back-off, and the reaper's maximum attempts, for jobs
    /// whose producer set no policy of their own (a job's own ATTEMPTS,
    /// BACKOFF or BACKOFF_EXP win, on the server).
    pub retry: RetryPolicy,
    /// How long one attempt may run, for jobs with no TIMEOUT of their own;
    /// `None`: as long as it heart-beats. A job past its timeout is
    /// cancelled (as on a lost lease) and failed with a timeout error.
    pub timeout: Option<Duration>,
    /// How long an idle claim waits for work before it asks again (on
    /// executors that can wait: native, embedded, Lua on the queue's
    /// wake-up key). A stopping worker ends its waits early (on Redis, with
    /// `CLIENT UNBLOCK` when its user may send it).
    pub idle_wait: Duration,
    /// The longest nap between two claims of an idle worker that has to poll
    /// (Lua with no connection of its own to wait on).
    pub idle_poll: Duration,
    /// How often the worker reaps expired leases and promotes due jobs.
    pub upkeep: Duration,
    /// On shutdown, how long jobs in flight may run on before they are
    /// cancelled and released back to pending.
    pub grace: Duration,
    /// How often the worker writes its entry in the worker registry
    /// (`emq:workers`, [`workers`](crate::workers())), its running jobs
    /// with it: its registry beat, not a lease's. The entry expires after
    /// three registry beats without one. Taken within
    /// 10 ms..=60 s.
    pub registry_beat: Duration,
}

impl Default for WorkerOptions {
    fn default() -> Self {
        WorkerOptions {
            concurrency: 10,
            lease: Duration::from_secs(30),
            retry: RetryPolicy::default(),
            timeout: None,
            idle_wait: Duration::from_secs(1),
            idle_poll: Duration::from_millis(20),
            upkeep: Duration::from_millis(250),
            grace: Duration::from_secs(10),
            registry_beat: crate::workers::DEFAULT_BEAT,
        }
    }
}

impl WorkerOptions {
    /// Jobs run at once, across the worker's queues: at least 1.
    pub fn concurrency(mut self, jobs: usize) -> WorkerOptions {
        self.concurrency = jobs;
        self
    }

    /// Each claim's lease.
    pub fn lease(mut self, lease: Duration) -> WorkerOptions {
        self.lease = lease;
        self
    }

    /// Retries and back-off for jobs with no policy of their own.
    pub fn retry(mut self, retry: RetryPolicy) -> WorkerOptions {
        self.retry = retry;
        self
    }

    /// How long one attempt may run, for jobs with no TIMEOUT of their own.
    pub fn timeout(mut self, timeout: Duration) -> WorkerOptions {
        self.timeout = Some(timeout);
        self
    }

    /// How long an idle claim waits for work before it asks again.
    pub fn idle_wait(mut self, wait: Duration) -> WorkerOptions {
        self.idle_wait = wait;
        self
    }

    /// The longest nap between two claims of an idle worker that polls.
    pub fn idle_poll(mut self, nap: Duration) -> WorkerOptions {
        self.idle_poll = nap;
        self
    }

    /// How often the worker runs its queues' upkeep.
    pub fn upkeep(mut self, every: Duration) -> WorkerOptions {
        self.upkeep = every;
        self
    }

    /// On shutdown, how long jobs in flight may run on.
    pub fn grace(mut self, grace: Duration) -> WorkerOptions {
        self.grace = grace;
        self
    }

    /// How often the worker writes its entry in the worker registry.
    pub fn registry_beat(mut self, beat: Duration) -> WorkerOptions {
        self.registry_beat = beat;
        self
    }

    /// The options a worker can run with, in the words a refusal would use.
    ///
    /// # Errors
    /// [`ErrorKind::Argument`] naming the option: no concurrency, a lease
    /// outside the protocol's (1 ms to about 24 days), a retry's attempts
    /// outside theirs, or a zero upkeep or poll period (a loop that never sleeps).
    pub(super) fn check(&self) -> Result<()> {
        let bad = |what: String| Err(Error::new(ErrorKind::Argument, format!("WorkerOptions: {what}")));
        let lease_ms = u64::try_from(self.lease.as_millis()).unwrap_or(u64::MAX);
        if self.concurrency == 0 {
            return bad("concurrency is 0: a worker runs at least one job at once".into());
        }
        if !limits::LEASE_MS.contains(&lease_ms) {
            return bad(format!("lease {lease_ms} ms is outside {:?} ms", limits::LEASE_MS));
        }
        if !limits::MAX_ATTEMPTS.contains(&self.retry.max_attempts) {
            return bad(format!(
                "retry's max_attempts {} is outside {:?}",
                self.retry.max_attempts,
                limits::MAX_ATTEMPTS
            ));
        }
        if self.upkeep.is_zero() || self.idle_poll.is_zero() {
            return bad("upkeep and idle_poll must be longer than 0".into());
        }
        Ok(())
    }
}

/// What a running worker's parts share: its handler, its options, and
/// the stops that [`Control`](super::Control) and the shutdown future cancel.
pub(super) struct Shared {
    pub(super) handler: Box<dyn Handler>,
    pub(super) options: WorkerOptions,
    /// Stop claiming (shutdown began).
    pub(super) stopping: CancellationToken,
    /// Grace is over: cancel the handlers still running and release their jobs.
    pub(super) releasing: CancellationToken,
    /// A stop asked through a [`Control`](super::Control), as the shutdown future's end.
    pub(super) asked: CancellationToken,
    /// How many times a finishing call found its job's record gone
    /// (`EMQNOJOB`): the claim loops then ask whether the server restarted
    /// and lost its data, which a busy worker's claims may not have seen.
    pub(super) records_gone: std::sync::atomic::AtomicU64,
}
