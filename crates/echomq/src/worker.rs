//! [`Worker`]: runs a handler on the jobs of one or more queues, with a
//! concurrency limit, leases renewed by heartbeats, retries, and graceful
//! shutdown. The fencing token makes it safe: a job whose lease was lost (its
//! heartbeat or its ack answered `EMQFENCE`) has its handler cancelled and its
//! result thrown away, so it is never completed by a worker that no longer holds it.
//!
//! ```no_run
//! # async fn demo(queue: echomq::Queue) -> echomq::Result<()> {
//! use echomq::worker::{HandlerError, JobContext, Worker};
//! let worker = Worker::new(queue, |job: JobContext| async move {
//!     println!("job {} attempt {}: {:?}", job.id, job.attempt, job.payload);
//!     Ok::<_, HandlerError>(()) // the error type, which no `?` or `Err` names here
//! });
//! worker.run().await; // until SIGINT or SIGTERM, then drains gracefully
//! # Ok(()) }
//! ```
//!
//! # Layout
//! - `worker.rs`: [`Worker`] and its [`Control`].
//! - `worker/options.rs`: [`WorkerOptions`], and what a running worker's
//!   parts share: the handler, the options, the stops.
//! - `worker/claims.rs`: a queue's claim loop: slots gathered, claims, outages.
//! - `worker/turns.rs`: one loop that claims for a worker's several queues
//!   on one server, in turns, and waits for them all with one `BZPOPMIN`.
//! - `worker/context.rs`: what a handler gets: [`JobContext`].
//! - `worker/handler.rs`: what a handler is and returns: [`Handler`],
//!   [`JobOutput`], [`Json`], [`RetryAfter`].
//! - `worker/job.rs`: one job's run: the handler, its lease, its outcome.
//! - `worker/lease.rs`: the lease, and the heart that renews every
//!   running job's lease in one round trip per round; an outcome sent again
//!   through an outage, up to the lease's last safe moment.
//! - `worker/acker.rs`: acks gathered into one round trip under load, each
//!   round trip fetching the next jobs for the slots it frees (ACKNEXT).
//! - `worker/meters.rs`: the metrics' names ([`metric`]) and each queue's handles.
//! - `worker/upkeep.rs`: reaping expired leases and promoting due jobs.
//! - `worker/registration.rs`: the worker's entry in the worker registry
//!   (`emq:workers`), its queues and running jobs, beating under a TTL.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::executor::Executor;
use crate::queue::Queue;

mod acker;
mod claims;
mod context;
mod handler;
mod job;
mod lease;
mod meters;
mod options;
mod registration;
mod turns;
mod upkeep;

use claims::claim_loop;
use options::Shared;

pub use context::JobContext;
pub use handler::{Handler, HandlerError, HandlerFuture, JobOutput, Json, RetryAfter};
pub(crate) use meters::unhandled;
pub use meters::{metric, UNHANDLED};
pub use options::WorkerOptions;

/// Steers a running worker from outside its shutdown future, for a host
/// that tells its stops apart (`emq work`: SIGTSTP, a second SIGTERM).
#[derive(Clone)]
pub struct Control {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Control {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Control").finish_non_exhaustive()
    }
}

impl Control {
    /// Stop claiming for good; jobs in flight run on to their end, with no
    /// grace counted, and the worker waits for a stop ([`stop`](Self::stop),
    /// [`now`](Self::now) or the shutdown future).
    pub fn quiet(&self) {
        self.shared.stopping.cancel();
    }

    /// Stop as when the shutdown future completes: no new claims, the grace
    /// for jobs in flight, then their release.
    pub fn stop(&self) {
        self.shared.asked.cancel();
    }

    /// Stop now: no new claims, and every job in flight has its handler
    /// cancelled and is released, as when the grace is over.
    pub fn now(&self) {
        self.shared.asked.cancel();
        self.shared.releasing.cancel();
    }
}

/// A worker over one or more queues.
pub struct Worker {
    queues: Vec<Queue>,
    shared: Arc<Shared>,
    id: String,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker").field("id", &self.id).field("queues", &self.queues).finish_non_exhaustive()
    }
}

impl Worker {
    /// A worker running `handler` on `queue`'s jobs with the default options.
    pub fn new(queue: Queue, handler: impl Handler) -> Worker {
        Worker::with_options(queue, handler, WorkerOptions::default())
    }

    /// A worker with `options`.
    pub fn with_options(queue: Queue, handler: impl Handler, options: WorkerOptions) -> Worker {
        let shared = Shared {
            handler: Box::new(handler),
            options,
            stopping: CancellationToken::new(),
            releasing: CancellationToken::new(),
            asked: CancellationToken::new(),
        };
        Worker { queues: vec![queue], shared: Arc::new(shared), id: registration::new_id() }
    }

    /// Its id in the worker registry: `<host>:<pid>:<ULID>`, new for each
    /// worker made ([`workers`](crate::workers())).
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Work this queue as well; the concurrency limit is shared.
    #[must_use]
    pub fn queue(mut self, queue: Queue) -> Worker {
        self.queues.push(queue);
        self
    }

    /// A handle to stop this worker, or only its claims, while it runs.
    #[must_use]
    pub fn control(&self) -> Control {
        Control { shared: self.shared.clone() }
    }

    /// Run until SIGINT or SIGTERM, then shut down gracefully.
    pub async fn run(self) {
        self.run_until(shutdown_signal()).await
    }

    /// Run until `shutdown` completes (or a [`Control`] says stop); then stop
    /// claiming, let jobs in flight finish within the grace period, and
    /// release the rest to pending.
    pub async fn run_until(self, shutdown: impl Future<Output = ()>) {
        metric::describe();
        let shared = self.shared.clone();
        for queue in &self.queues {
            for warning in queue.executor().server_warnings().await {
                tracing::warn!(queue = queue.name(), "{warning}");
            }
        }
        let executors: Vec<Arc<dyn Executor>> = self.queues.iter().map(|q| q.executor().clone()).collect();
        let slots = Arc::new(Semaphore::new(shared.options.concurrency.max(1)));
        // JoinSets, not detached tasks (a TaskTracker's): dropping this future
        // aborts every job it runs, heartbeats and all, as a killed process
        // would, so their leases run out and another worker takes them.
        let mut jobs = JoinSet::new();
        let mut loops = JoinSet::new();
        let (job_tx, mut job_rx) = tokio::sync::mpsc::unbounded_channel();
        // One queue: its acks fetch its next jobs (ACKNEXT). Several: the
        // claim loops share the slots fairly, so acks only ack. Nor when
        // replicas must confirm writes: an ACKNEXT that a lagging replica
        // leaves unconfirmed answers that, not the jobs it claimed, which
        // would sit out their leases; the claim loop's claims are not waited for.
        let refills = self.queues.len() == 1 && self.queues[0].executor().replication().is_none();
        let queues = self.queues.len();
        // Several queues of one server: one loop claims for all of them, in
        // turns (worker/turns.rs); else a claim loop each.
        let one_server = self.queues.iter().all(|q| Arc::ptr_eq(q.executor(), self.queues[0].executor()));
        let in_turns = queues > 1 && one_server && self.queues[0].executor().waits_on_many();
        let mut taking_turns = Vec::new();
        let mut hearts = Vec::with_capacity(queues);
        for queue in self.queues {
            let heart = lease::Heart::new(queue.clone(), shared.options.lease);
            hearts.push(heart.clone());
            loops.spawn(heart.clone().run());
            let (acker, inbox) = acker::Acker::channel();
            let meters = meters::Meters::new(queue.name());
            let refills_slots = refills.then(|| slots.clone());
            let hands =
                Arc::new(job::Hands { queue: queue.clone(), acker, heart, meters, refills: refills_slots });
            let refill = refills.then(|| acker::Refill {
                shared: shared.clone(),
                slots: slots.clone(),
                jobs: job_tx.downgrade(),
            });
            loops.spawn(acker::gather(hands.clone(), inbox, refill));
            if in_turns {
                taking_turns.push(hands);
            } else {
                loops.spawn(upkeep::run(vec![queue], shared.clone()));
                loops.spawn(claim_loop(hands, shared.clone(), slots.clone(), job_tx.clone(), queues));
            }
        }
        if in_turns {
            let queues = taking_turns.iter().map(|hands| hands.queue.clone()).collect();
            loops.spawn(upkeep::run(queues, shared.clone()));
            loops.spawn(turns::run(taking_turns, shared.clone(), slots.clone(), job_tx.clone()));
        }
        drop(job_tx);
        let options = &shared.options;
        let registrar = Arc::new(registration::Registrar::new(
            self.id,
            options.concurrency,
            options.registry_beat,
            &hearts,
        ));
        loops.spawn(registrar.clone().run());
        tokio::pin!(shutdown);
        // The grace runs from the stop asked; until then (a quiet worker,
        // claiming no more) jobs run to their end.
        let grace = tokio::time::sleep(Duration::from_secs(365 * 24 * 3600));
        tokio::pin!(grace);
        let (mut shut, mut asked, mut claiming, mut interrupting) = (false, false, true, None);
        while claiming || !jobs.is_empty() || !asked {
            tokio::select! {
                () = &mut shutdown, if !shut => {
                    shut = true;
                    shared.asked.cancel();
                }
                () = shared.asked.cancelled(), if !asked => {
                    asked = true;
                    shared.stopping.cancel();
                    grace.as_mut().reset(tokio::time::Instant::now() + shared.options.grace);
                }
                () = shared.stopping.cancelled(), if claiming && interrupting.is_none() => {
                    interrupting = Some(tokio::spawn(interrupt_waits(executors.clone())));
                }
                started = job_rx.recv(), if claiming => match started {
                    Some(run) => { jobs.spawn(run); }
                    // Claim loops are done: no more waits to interrupt.
                    None => {
                        claiming = false;
                        if let Some(interrupting) = interrupting.take() {
                            interrupting.abort();
                        }
                    }
                },
                Some(_) = jobs.join_next(), if !jobs.is_empty() => {}
                () = &mut grace, if asked && !shared.releasing.is_cancelled() => shared.releasing.cancel(),
            }
        }
        loops.shutdown().await;
        registrar.unregister().await;
    }
}

/// A job's run, as the claim loops and the acker hand it to the worker.
type JobRun = Pin<Box<dyn Future<Output = ()> + Send>>;

/// While a worker stops, end its claims' waits for work, again and again
/// until its claim loops are done: a claim that began waiting just after an
/// interrupt is caught by the next one.
async fn interrupt_waits(executors: Vec<Arc<dyn Executor>>) {
    loop {
        for executor in &executors {
            executor.interrupt_waits().await;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// SIGINT or SIGTERM.
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(signal) => signal,
            Err(_) => return interrupt.await.unwrap_or_default(),
        };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    interrupt.await.unwrap_or_default();
}
