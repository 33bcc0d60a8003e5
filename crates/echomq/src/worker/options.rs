//! How a worker runs ([`WorkerOptions`]), and what its parts share while
//! it runs: the handler, the options and the stops.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::handler::Handler;
use crate::queue::RetryPolicy;

/// How a worker runs.
#[derive(Clone, Debug)]
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
}
