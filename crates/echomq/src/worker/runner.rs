//! The runner: one job's run, from its start by a claim loop to its
//! outcome. The job runs in a task of the worker's [`Runs`]; its handler in
//! a task of its own (so a panic is a failed job, not a dead worker), its
//! lease renewed by the queue's heart at least every third of it, within
//! its timeout; the handler is cancelled when the lease is lost (a renewal
//! answered `EMQFENCE`) or the worker's grace runs out. What became of the
//! run ([`Outcome`]) goes on to the sink with the lease and the slot; the
//! runner sends nothing to the server itself.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, Notify, OwnedSemaphorePermit};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};
use tracing::Instrument;

use super::context::{well_formed_traceparent, JobContext};
use super::handler::{self, HandlerError};
use super::lease::{Heart, Lease};
use super::meters::Meters;
use super::options::Shared;
use super::sink::{Finished, Outcome, Sink};
use crate::id::JobId;
use crate::queue::{Queue, TRACEPARENT};
use crate::transition::Claimed;

/// How long a handler whose job was taken away may take to notice
/// [`JobContext::cancelled`] and stop by itself before its task is aborted.
const CANCEL_WINDOW: Duration = Duration::from_secs(1);

/// What a handler's task returns.
type HandlerResult = std::result::Result<Option<Vec<u8>>, HandlerError>;

/// What the runs of one queue's jobs need, made once per queue a worker
/// works: the queue, the heart that renews its leases, its metric
/// handles, the worker's handler and stops, the sink its outcomes go to,
/// and the worker's runs, where each job's task is counted.
pub(super) struct Runner {
    queue: Queue,
    heart: Arc<Heart>,
    meters: Meters,
    shared: Arc<Shared>,
    sink: Arc<Sink>,
    runs: Arc<Runs>,
}

/// The tasks that run a worker's jobs. Its starter, a task of its own,
/// hands each job a claim loop starts to a task that ran a job and waits
/// for the next, or to a new one: at concurrency 1 the job an ACKNEXT
/// claimed runs in the task of the job that claimed it. A job is counted
/// from its start to the end of its run, so that a stopping worker waits
/// for it. Dropping the [`DropGuard`] that [`Runs::new`] gives the
/// worker's run cancels every task, as a killed process's would be (their
/// leases run out and another worker takes the jobs).
///
/// Measured against a task spawned by the claim loop for each job
/// (`echomq-compare`, median of 7 to 9 runs): that was 5-11% slower on
/// embedded process-c1 (a task made and freed each job) and 12-14% on
/// native process-c10 (the claim loop handing out a claim's jobs before it
/// could claim again); this is as fast as the worker whose job ran the
/// job its ACKNEXT claimed in its own task, or faster.
pub(super) struct Runs {
    /// The jobs started, on their way to the starter.
    starts: mpsc::UnboundedSender<Start>,
    /// The tasks waiting for a job, the latest last.
    idle: Mutex<Vec<oneshot::Sender<Start>>>,
    /// The jobs started whose run has not ended.
    running: AtomicUsize,
    /// Told when the last job's run ends.
    ended: Notify,
    dropped: CancellationToken,
}

/// A job to run: its queue's runner, the job, and its slot.
type Start = (Arc<Runner>, Claimed, OwnedSemaphorePermit);

/// Counts its job's run as ended when dropped, however the run ends.
struct Counted<'a>(&'a Runs);

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        if self.0.running.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.ended.notify_waiters();
        }
    }
}

impl Runs {
    /// No runs yet, their starter spawned, and the guard whose drop
    /// cancels all of them.
    pub(super) fn new() -> (Arc<Runs>, DropGuard) {
        let dropped = CancellationToken::new();
        let (starts, inbox) = mpsc::unbounded_channel();
        let runs = Arc::new(Runs {
            starts,
            idle: Mutex::new(Vec::new()),
            running: AtomicUsize::new(0),
            ended: Notify::new(),
            dropped: dropped.clone(),
        });
        runs.spawn(runs.clone().starter(inbox));
        (runs, dropped.drop_guard())
    }

    /// Start `start`'s job: counted from now, handed on by the starter.
    fn start(&self, start: Start) {
        self.running.fetch_add(1, Ordering::AcqRel);
        // Refused only once the worker's run is dropped: nothing runs then.
        let _ = self.starts.send(start);
    }

    /// Hand each job started to a task waiting for one, or to a new task.
    async fn starter(self: Arc<Runs>, mut inbox: mpsc::UnboundedReceiver<Start>) {
        while let Some(mut start) = inbox.recv().await {
            loop {
                let waiting = self.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).pop();
                let Some(waiting) = waiting else {
                    let runs = self.clone();
                    self.spawn(async move { runs.serve(start).await });
                    break;
                };
                match waiting.send(start) {
                    Ok(()) => break,
                    // It stopped waiting (the worker is done): the next one.
                    Err(back) => start = back,
                }
            }
        }
    }

    /// Spawn `task`, cancelled when the worker's run is dropped.
    fn spawn(&self, task: impl std::future::Future<Output = ()> + Send + 'static) {
        let dropped = self.dropped.clone();
        tokio::spawn(async move {
            tokio::select! {
                biased;
                () = dropped.cancelled() => {}
                () = task => {}
            }
        });
    }

    /// Run `start`'s job, then each job handed to this task, for as long as
    /// the worker runs.
    async fn serve(&self, mut start: Start) {
        loop {
            let (runner, job, slot) = start;
            let counted = Counted(self);
            runner.run(job, slot).await;
            drop((counted, runner));
            let (handed, next) = oneshot::channel();
            self.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(handed);
            match next.await {
                Ok(next) => start = next,
                Err(_) => return,
            }
        }
    }

    /// How many jobs' runs have not ended.
    pub(super) fn running(&self) -> usize {
        self.running.load(Ordering::Acquire)
    }

    /// Wait until no job's run is going on.
    pub(super) async fn ended(&self) {
        loop {
            let ended = self.ended.notified();
            if self.running.load(Ordering::Acquire) == 0 {
                return;
            }
            ended.await;
        }
    }
}

/// How a job's run ended: its handler finished (or panicked), ran past its
/// timeout, its lease was lost, or the worker released it at shutdown.
enum Ending {
    Finished(std::result::Result<HandlerResult, tokio::task::JoinError>),
    TimedOut(Duration),
    LeaseLost,
    Released,
}

/// A job's handler, running in its task, and how to take the job from it.
struct Running {
    handler: JoinHandle<HandlerResult>,
    cancel: CancellationToken,
}

impl Runner {
    /// The runner of `queue`'s jobs, whose outcomes go to `sink`, and whose
    /// tasks are counted in `runs`.
    pub(super) fn new(
        queue: Queue,
        heart: Arc<Heart>,
        meters: Meters,
        shared: Arc<Shared>,
        sink: Arc<Sink>,
        runs: Arc<Runs>,
    ) -> Arc<Runner> {
        Arc::new(Runner { queue, heart, meters, shared, sink, runs })
    }

    /// The queue whose jobs this runner runs.
    pub(super) fn queue(&self) -> &Queue {
        &self.queue
    }

    /// Start `job`, claimed into `slot` (its place in the concurrency
    /// limit), in a task of the worker's runs.
    pub(super) fn start(self: &Arc<Runner>, job: Claimed, slot: OwnedSemaphorePermit) {
        self.runs.start((self.clone(), job, slot));
    }

    /// Run `job`: the handler, then its outcome handed to the sink, all in
    /// the job's span.
    async fn run(&self, job: Claimed, slot: OwnedSemaphorePermit) {
        let span = self.span(&job);
        async {
            let finished = self.finish(job, slot).await;
            #[cfg(feature = "otel")]
            crate::otel::ended(&tracing::Span::current(), finished.outcome.name(), finished.outcome.error());
            self.sink.deliver(finished).await;
        }
        .instrument(span)
        .await;
    }

    /// The job's span: its queue, id and attempt, and the producer's trace
    /// context when it sent one. With the `otel` feature it is also the
    /// consumer span of OpenTelemetry's messaging conventions, a child of
    /// the producer's (`crate::otel`).
    fn span(&self, job: &Claimed) -> tracing::Span {
        let span = tracing::info_span!(
            "emq.job",
            queue = self.queue.name(),
            id = %job.id,
            attempt = job.token,
            traceparent = tracing::field::Empty,
            trace_id = tracing::field::Empty,
            otel.name = tracing::field::Empty,
            otel.kind = tracing::field::Empty,
        );
        if let Some(traceparent) = job.headers.get(TRACEPARENT).filter(|value| well_formed_traceparent(value))
        {
            span.record("traceparent", traceparent.as_str());
            span.record("trace_id", &traceparent[3..35]);
        }
        #[cfg(feature = "otel")]
        crate::otel::consumer(&span, self.queue.name(), job.id.as_str(), job.token, &job.headers);
        span
    }

    /// Run `job`'s handler to its end, under its lease: what became of it.
    async fn finish(&self, mut job: Claimed, slot: OwnedSemaphorePermit) -> Finished {
        let cancel = CancellationToken::new();
        // The payload and headers move to the handler: no copy of them stays here.
        let context =
            JobContext::new(&mut job, &self.queue, self.shared.options.retry.max_attempts, cancel.clone());
        let waits = context.waits();
        // The claim came just before this moment: the lease holds until `lease` from now.
        let started = Instant::now();
        if let Some(waited) = waited(&job.id) {
            self.meters.wait_seconds.record(waited.as_secs_f64());
        }
        let mut lease = Lease::new(&self.heart, &job, started);
        // A task of its own, not a future polled here: a handler that computes or
        // blocks for long must not starve its own heartbeat. (Polling it inline
        // was measured ~10% faster on no-op jobs, and rejected for that reason.)
        // In the job's span, so that what the handler logs is the job's.
        let handler = tokio::spawn(self.shared.handler.handle(context).in_current_span());
        let mut running = Running { handler, cancel };
        // The job's own timeout, else the worker's: how long this attempt may run.
        let timeout = job
            .policy
            .and_then(|policy| policy.timeout)
            .map(Duration::from_millis)
            .or(self.shared.options.timeout);
        let ending = self.end(&mut running, &mut lease, started, timeout).await;
        let outcome = if waits.load(Ordering::Acquire) {
            // The job waits for children its handler named (ADOPT): its
            // claim is over, whatever the handler returned or the lease did.
            if !matches!(ending, Ending::Finished(_)) {
                running.stop().await;
            }
            Outcome::Waits
        } else {
            self.outcome(ending, running, &mut lease).await
        };
        Finished { job, outcome, lease, slot, started }
    }

    /// Wait for the run's end: the handler's, the lease's, the grace's or
    /// the timeout's, whichever comes first.
    async fn end(
        &self,
        running: &mut Running,
        lease: &mut Lease,
        started: Instant,
        timeout: Option<Duration>,
    ) -> Ending {
        let timed_out = async {
            match timeout {
                Some(limit) => tokio::time::sleep_until(started + limit).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            held = lease.hold(&mut running.handler) => match held {
                Some(joined) => Ending::Finished(joined),
                None => Ending::LeaseLost,
            },
            () = self.shared.releasing.cancelled() => Ending::Released,
            () = timed_out => Ending::TimedOut(timeout.unwrap_or_default()),
        }
    }

    /// What `ending` becomes: a handler still running is stopped first (the
    /// lease kept meanwhile, but when it was lost).
    async fn outcome(&self, ending: Ending, running: Running, lease: &mut Lease) -> Outcome {
        match ending {
            Ending::Finished(Ok(Ok(result))) => Outcome::Ack(result),
            Ending::Finished(Ok(Err(error))) => match handler::deferral(&error) {
                Some(told) => Outcome::Defer(told),
                None => Outcome::Fail(handler::error_text(&error)),
            },
            Ending::Finished(Err(join)) => Outcome::Fail(join_text(join)),
            Ending::TimedOut(limit) => {
                // Stopped as on a lost lease, the lease kept meanwhile; then
                // failed like any other failure, retried by the job's policy.
                lease.keep(running.stop()).await;
                self.meters.timed_out.increment(1);
                Outcome::Fail(format!("timed out after {limit:?}"))
            }
            Ending::LeaseLost => {
                self.meters.leases_lost.increment(1);
                tracing::warn!(
                    "lease lost (reaped or cancelled; another worker may hold the job now): \
                     the handler is cancelled and its result discarded"
                );
                running.stop().await;
                Outcome::Lost
            }
            Ending::Released => {
                lease.keep(running.stop()).await;
                Outcome::Release
            }
        }
    }
}

impl Running {
    /// Take the job from its handler: tell it, give it a moment to stop by
    /// itself, then abort its task. Whatever it returns is discarded.
    async fn stop(mut self) {
        self.cancel.cancel();
        if tokio::time::timeout(CANCEL_WINDOW, &mut self.handler).await.is_err() {
            self.handler.abort();
        }
    }
}

/// Why a handler's task ended without an answer, as FAIL's error text.
fn join_text(join: tokio::task::JoinError) -> String {
    if join.is_panic() {
        format!("handler panicked: {}", panic_text(join.into_panic()))
    } else {
        format!("handler task ended: {join}")
    }
}

fn panic_text(panic: Box<dyn std::any::Any + Send>) -> String {
    match panic.downcast::<String>() {
        Ok(text) => *text,
        Err(panic) => panic.downcast_ref::<&str>().map_or("(not text)".into(), |text| (*text).to_owned()),
    }
}

/// How long ago the job was enqueued, from the mint time in its branded id;
/// `None` for an id that is not branded. A clock behind the producer's reads as 0.
fn waited(id: &JobId) -> Option<Duration> {
    if !id.is_branded() {
        return None;
    }
    let minted = ulid::Ulid::from_string(&id.as_str()[crate::id::PREFIX.len()..]).ok()?.timestamp_ms();
    Some(Duration::from_millis(crate::workers::now_ms().saturating_sub(minted)))
}

#[cfg(test)]
mod tests {
    use super::waited;
    use crate::JobId;

    #[test]
    fn a_branded_id_tells_how_long_its_job_waited() {
        let minted = JobId::mint();
        assert!(waited(&minted).unwrap() < std::time::Duration::from_secs(5));
        // Minted at the epoch's first ms: as long ago as the clock says.
        let old: JobId = "JOB_00000000010000000000000000".parse().unwrap();
        let age = waited(&old).unwrap().as_millis() as u64;
        assert!(age.abs_diff(crate::workers::now_ms()) < 5_000, "{age}");
        assert_eq!(waited(&"JOBX".parse().unwrap()), None, "not branded: not counted");
    }
}
