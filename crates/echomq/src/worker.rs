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
//! worker.run().await?; // until SIGINT or SIGTERM, then drains gracefully
//! # Ok(()) }
//! ```
//!
//! # Layout
//! A job's path runs one way, each stop handing on to the next and naming
//! none before it: claim loop → runner → sink → slots. The jobs an ACKNEXT
//! claims go back to the claim loop, each with its slot, over a channel,
//! and start there as the jobs it claims do (`tests/structure.rs` keeps the
//! files' imports one way and their functions short).
//! - `worker.rs`: [`Worker`] and its [`Control`]: it starts each queue's
//!   parts and steers the stop.
//! - `worker/options.rs`: [`WorkerOptions`], and what a running worker's
//!   parts share: the handler, the options, the stops.
//! - `worker/claims.rs`: a queue's claim loop: slots gathered, claims,
//!   outages; it starts the jobs it claims and those an ACKNEXT claimed.
//! - `worker/turns.rs`: one loop that claims for a worker's several queues
//!   of one executor, in turns, and waits for them all with one `BZPOPMIN`
//!   (on a Cluster, for each idle one on a connection of its own).
//! - `worker/runner.rs`: one job's run: the handler, its lease, its
//!   timeout, its cancellation; what became of it goes to the sink. The
//!   tasks that run jobs, each taking the next job once its own is done.
//! - `worker/sink.rs`: the outcome sink: ACK, FAIL with back-off, DEFER,
//!   RELEASE at shutdown, each sent again through an outage up to the
//!   lease's last safe moment; then the slot is freed.
//! - `worker/sink/acker.rs`: acks gathered into one round trip under load,
//!   the worker's last running jobs' batch fetching the next jobs for the
//!   slots it frees (ACKNEXT).
//! - `worker/slots.rs`: the concurrency slots, gathered for a claim, and the
//!   way back to the claim loop for the jobs an ACKNEXT claimed.
//! - `worker/lease.rs`: the lease, and the heart that renews every running
//!   job's lease in one round trip per round.
//! - `worker/context.rs`: what a handler gets: [`JobContext`].
//! - `worker/handler.rs`: what a handler is and returns: [`Handler`],
//!   [`JobOutput`], [`Json`], [`RetryAfter`].
//! - `worker/meters.rs`: the metrics' names ([`metric`]) and each queue's handles.
//! - `worker/upkeep.rs`: reaping expired leases and promoting due jobs.
//! - `worker/registration.rs`: the worker's entry in the worker registry
//!   (`emq:workers`), its queues and running jobs, beating under a TTL.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::executor::Executor;
use crate::queue::Queue;
use crate::Result;

mod claims;
mod context;
mod handler;
mod lease;
mod meters;
mod options;
mod registration;
mod runner;
mod sink;
mod slots;
mod turns;
mod upkeep;

use claims::claim_loop;
use lease::Heart;
use meters::Meters;
use options::Shared;
use registration::Registrar;
use runner::{Runner, Runs};
use sink::Sink;
use slots::{RefillInbox, Refills};

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
            records_gone: std::sync::atomic::AtomicU64::new(0),
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
    ///
    /// # Errors
    /// As [`run_until`](Worker::run_until); [`ErrorKind::Server`](crate::ErrorKind::Server)
    /// when the process cannot listen for the signals (nothing ran).
    pub async fn run(self) -> Result<()> {
        let signals = shutdown_signal()?;
        self.run_until(signals).await
    }

    /// Run until `shutdown` completes (or a [`Control`] says stop); then stop
    /// claiming, let jobs in flight finish within the grace period, and
    /// release the rest to pending. A server that does not answer is waited
    /// for 5 s past the stop (claims in flight; past the grace, when it is
    /// shorter) and past the grace (the release), then left: what those
    /// calls held runs again once its lease ends.
    ///
    /// # Errors
    /// [`ErrorKind::Argument`](crate::ErrorKind::Argument) for options a
    /// worker cannot run with (no concurrency, a lease outside the
    /// protocol's), before anything is claimed. A failure of the server
    /// while it runs is not an error of the run: the worker logs it, and
    /// claims and upkeep try again.
    pub async fn run_until(self, shutdown: impl Future<Output = ()>) -> Result<()> {
        self.shared.options.check()?;
        metric::describe();
        for queue in &self.queues {
            for warning in crate::executor::server_warnings(&**queue.executor()).await {
                tracing::warn!(queue = queue.name(), "{warning}");
            }
        }
        let shared = self.shared.clone();
        let executors: Vec<Arc<dyn Executor>> = self.queues.iter().map(|q| q.executor().clone()).collect();
        let slots = Arc::new(Semaphore::new(shared.options.concurrency.max(1)));
        // JoinSets and a guard, not detached tasks: dropping this future
        // aborts every loop and cancels every job it runs, heartbeats and
        // all, as a killed process would, so their leases run out and
        // another worker takes them.
        let (runs, _cancels_runs) = Runs::new();
        let (mut loops, mut claims, mut keeping) = (JoinSet::new(), JoinSet::new(), JoinSet::new());
        let keeper: Arc<str> = Arc::from(self.id.as_str());
        let leased = self.queues.iter().any(|queue| queue.coordinator().is_some());
        let sets = (&mut loops, &mut claims, &mut keeping);
        let hearts = start(self.queues, &shared, &slots, &runs, &keeper, sets);
        let options = &shared.options;
        let registrar =
            Arc::new(Registrar::new(self.id, options.concurrency, options.registry_beat, &hearts));
        loops.spawn(registrar.clone().run());
        steer(&shared, shutdown, claims, &runs, executors).await;
        // A partitioned queue's upkeep ends its call in flight and gives its
        // leases back (bounded: a server that does not answer is not waited
        // for); any other's is stopped where it is, as before leases.
        if leased {
            let kept = async { while keeping.join_next().await.is_some() {} };
            let _ = tokio::time::timeout(GIVE_BACK_WAIT, kept).await;
        }
        keeping.shutdown().await;
        loops.shutdown().await;
        // A server that does not answer leaves the entry to expire.
        let _ = tokio::time::timeout(GIVE_BACK_WAIT, registrar.unregister()).await;
        Ok(())
    }
}

/// How long a stopped worker waits at most for its upkeep to give its
/// leases back (PROTOCOL.md §11.3).
const GIVE_BACK_WAIT: Duration = Duration::from_secs(1);

/// Start the path of `queues`' jobs: each queue's heart, sink (its ack
/// gatherer) and runner, their loops in `loops`, the claim loops that
/// start the jobs they claim in `claims`, and the upkeep (as the worker
/// `keeper`) in `keeping`. The queues' hearts.
fn start(
    queues: Vec<Queue>,
    shared: &Arc<Shared>,
    slots: &Arc<Semaphore>,
    runs: &Arc<Runs>,
    keeper: &Arc<str>,
    (loops, claims, keeping): (&mut JoinSet<()>, &mut JoinSet<()>, &mut JoinSet<()>),
) -> Vec<Arc<Heart>> {
    // One queue: its acks fetch its next jobs (ACKNEXT). Several: the
    // claim loops share the slots fairly, so acks only ack. Nor when
    // replicas must confirm writes: an ACKNEXT that a lagging replica
    // leaves unconfirmed answers that, not the jobs it claimed, which
    // would sit out their leases; the claim loop's claims are not waited for.
    // Nor for a partitioned queue's: its claims ask for permits first.
    let refills = queues.len() == 1
        && queues[0].executor().setup().replication.is_none()
        && !queues[0].coordinated_claims();
    let count = queues.len();
    // Several queues of one executor (one server, or one Cluster): one loop
    // claims for all of them, in turns (worker/turns.rs); else a claim loop each.
    let one_server = queues.iter().all(|q| Arc::ptr_eq(q.executor(), queues[0].executor()));
    let setup = queues[0].executor().setup();
    let in_turns = count > 1 && one_server && (setup.waits_on_many || setup.waits_each);
    let (mut hearts, mut taking_turns) = (Vec::with_capacity(count), Vec::new());
    for queue in queues {
        let (runner, heart, refilled) = stages(queue.clone(), shared, slots, runs, refills, loops);
        hearts.push(heart);
        if in_turns {
            taking_turns.push(runner);
        } else {
            keeping.spawn(upkeep::run(vec![queue], shared.clone(), keeper.clone()));
            claims.spawn(claim_loop(runner, shared.clone(), slots.clone(), refilled, count));
        }
    }
    if in_turns {
        let queues: Vec<_> = taking_turns.iter().map(|runner| runner.queue().clone()).collect();
        if setup.waits_on_many {
            keeping.spawn(upkeep::run(queues, shared.clone(), keeper.clone()));
        } else {
            // A Cluster's: one round trip cannot span slots, so an upkeep each.
            for queue in queues {
                keeping.spawn(upkeep::run(vec![queue], shared.clone(), keeper.clone()));
            }
        }
        claims.spawn(turns::run(taking_turns, shared.clone(), slots.clone()));
    }
    hearts
}

/// One queue's heart, sink and runner, the heart's and the ack gatherer's
/// loops spawned in `loops`; with `refills`, the inbox through which the
/// jobs its ACKNEXTs claim come back to its claim loop.
fn stages(
    queue: Queue,
    shared: &Arc<Shared>,
    slots: &Arc<Semaphore>,
    runs: &Arc<Runs>,
    refills: bool,
    loops: &mut JoinSet<()>,
) -> (Arc<Runner>, Arc<Heart>, Option<RefillInbox>) {
    let heart = Heart::new(queue.clone(), shared.options.lease);
    loops.spawn(heart.clone().run());
    let meters = Meters::new(queue.name());
    let (refills, refilled) = match refills {
        true => {
            let (refills, inbox) = Refills::channel(slots, shared);
            (Some(refills), Some(inbox))
        }
        false => (None, None),
    };
    let (sink, gatherer) = Sink::new(queue.clone(), shared, meters.clone(), refills);
    loops.spawn(gatherer);
    let runner = Runner::new(queue, heart.clone(), meters, shared.clone(), sink, runs.clone());
    (runner, heart, refilled)
}

/// How long a stopping worker waits for a server that does not answer:
/// for its claims in flight from the stop (or from the grace's end, when
/// the grace is shorter), for its jobs' release from the grace's end. Past
/// it, they are abandoned: a job they hold runs again once its lease ends.
const ABANDON_WAIT: Duration = Duration::from_secs(5);

/// Steer the worker's stop: on `shutdown` (or a [`Control`]'s stop) no
/// more claims, the grace for the jobs in flight, then their release.
/// Until the claim loops have ended, and every job's run after them; or,
/// with a server that stopped answering, [`ABANDON_WAIT`] past each.
async fn steer(
    shared: &Shared,
    shutdown: impl Future<Output = ()>,
    mut claims: JoinSet<()>,
    runs: &Runs,
    executors: Vec<Arc<dyn Executor>>,
) {
    tokio::pin!(shutdown);
    // The grace runs from the stop asked; until then (a quiet worker,
    // claiming no more) jobs run to their end.
    let never = || tokio::time::Instant::now() + Duration::from_secs(365 * 24 * 3600);
    let (grace, abandon) = (tokio::time::sleep_until(never()), tokio::time::sleep_until(never()));
    tokio::pin!(grace, abandon);
    let (mut shut, mut asked, mut claiming, mut running) = (false, false, true, true);
    let mut interrupting = None;
    while claiming || running || !asked {
        tokio::select! {
            () = &mut shutdown, if !shut => {
                shut = true;
                shared.asked.cancel();
            }
            () = shared.asked.cancelled(), if !asked => {
                asked = true;
                shared.stopping.cancel();
                grace.as_mut().reset(tokio::time::Instant::now() + shared.options.grace);
                abandon.as_mut().reset(tokio::time::Instant::now() + ABANDON_WAIT);
            }
            () = shared.stopping.cancelled(), if claiming && interrupting.is_none() => {
                interrupting = Some(tokio::spawn(interrupt_waits(executors.clone())));
            }
            ended = claims.join_next(), if claiming => {
                // Claim loops are done: no more waits to interrupt, no more jobs started.
                if ended.is_none() {
                    claiming = false;
                    if let Some(interrupting) = interrupting.take() {
                        interrupting.abort();
                    }
                }
            }
            () = runs.ended(), if !claiming && running => running = false,
            () = &mut grace, if asked && !shared.releasing.is_cancelled() => {
                shared.releasing.cancel();
                abandon.as_mut().reset(tokio::time::Instant::now() + ABANDON_WAIT);
            }
            () = &mut abandon, if asked => {
                if claiming {
                    claims.abort_all();
                    if let Some(interrupting) = interrupting.take() {
                        interrupting.abort();
                    }
                }
                running &= !shared.releasing.is_cancelled();
                abandoned(claiming, running, runs);
                claiming = false;
                abandon.as_mut().reset(never());
            }
        }
    }
}

/// Say what a stopping worker no longer waits for, its server silent for
/// [`ABANDON_WAIT`]: its claims in flight (`claiming`), and, past the
/// grace, its jobs' release (unless still `running`).
fn abandoned(claiming: bool, running: bool, runs: &Runs) {
    if claiming {
        tracing::warn!(
            "the server has not answered the claims in flight since the stop: \
             stopping without them; a job they took runs again once its lease ends"
        );
    }
    if !running && runs.running() > 0 {
        tracing::warn!(
            jobs = runs.running(),
            "the server has not answered the jobs' release {ABANDON_WAIT:?} after the grace: \
             stopping without it; they run again once their leases end"
        );
    }
}

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
fn shutdown_signal() -> Result<impl Future<Output = ()>> {
    let cannot = |err: std::io::Error| {
        crate::Error::new(crate::ErrorKind::Server, format!("cannot listen for SIGINT and SIGTERM: {err}"))
    };
    #[cfg(unix)]
    let mut terminate =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).map_err(cannot)?;
    Ok(async move {
        let interrupt = tokio::signal::ctrl_c();
        #[cfg(unix)]
        tokio::select! {
            // SIGINT that cannot be listened for leaves SIGTERM.
            listened = interrupt => if listened.is_err() {
                terminate.recv().await;
            },
            _ = terminate.recv() => {}
        }
        #[cfg(not(unix))]
        if interrupt.await.is_err() {
            std::future::pending::<()>().await;
        }
    })
}
