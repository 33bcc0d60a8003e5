//! One job's run: the handler in a task of its own (so a panic is a failed
//! job, not a dead worker), its lease renewed by the queue's heart at least
//! every third of it, and the outcome: ack, fail, or, when the lease was
//! lost, nothing at all.
//! `lease.rs` holds the lease, and the finishing call that waits out an
//! outage within it.

use crate::ErrorKind;
use std::sync::Arc;
use std::time::Duration;

use echomq_core::Name;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::acker::{self, Acker};
use super::context::{well_formed_traceparent, JobContext};
use super::handler::{self, HandlerError};
use super::lease::{persist, Heart, Lease};
use super::meters::Meters;
use super::options::Shared;
use crate::id::JobId;
use crate::queue::{Queue, TRACEPARENT};
use crate::transition::{Ack, Claimed, Failed};
use crate::Error;

/// The longest error text kept; FAIL's limit is far above it.
const ERROR_TEXT: usize = 4096;

/// How long a handler whose job was taken away may take to notice
/// [`JobContext::cancelled`] and stop by itself before its task is aborted.
const CANCEL_WINDOW: Duration = Duration::from_secs(1);

/// What a job's run needs of its queue, made once per queue a worker works:
/// the queue, its ack gatherer, the heart that renews its leases, its
/// metric handles, and the worker's slots when its acks may claim its next
/// jobs (ACKNEXT: a worker of this one queue).
pub(in crate::worker) struct Hands {
    pub(in crate::worker) queue: Queue,
    pub(in crate::worker) acker: Acker,
    pub(in crate::worker) heart: Arc<Heart>,
    pub(in crate::worker) meters: Meters,
    pub(in crate::worker) refills: Option<Arc<Semaphore>>,
}

/// How a job's run ended: its handler finished (or panicked), its lease was
/// lost, or the worker released it at shutdown.
enum Ending {
    Finished(std::result::Result<HandlerResult, tokio::task::JoinError>),
    TimedOut(Duration),
    LeaseLost,
    Released,
}

/// Run one claimed job to its end. `slot` is its place in the concurrency
/// limit, handed on with its ack (the next job may take it). When it is the
/// worker's only running job, its ack claims the next one (ACKNEXT), which
/// runs next in this same task and slot: at concurrency 1 a job is a
/// handler and one round trip, with no hand-over between tasks.
pub(super) async fn run(hands: Arc<Hands>, shared: Arc<Shared>, job: Claimed, slot: OwnedSemaphorePermit) {
    let mut next = Some((job, slot));
    while let Some((job, slot)) = next.take() {
        next = run_one(hands.clone(), shared.clone(), job, slot).await;
    }
}

/// Run `job` to its end: the next job it claimed with its ack, if any.
async fn run_one(
    hands: Arc<Hands>,
    shared: Arc<Shared>,
    job: Claimed,
    slot: OwnedSemaphorePermit,
) -> Option<(Claimed, OwnedSemaphorePermit)> {
    let span = tracing::info_span!(
        "emq.job",
        queue = hands.queue.name(),
        id = %job.id,
        attempt = job.token,
        traceparent = tracing::field::Empty,
        trace_id = tracing::field::Empty,
    );
    // The producer's trace context, when it sent one: a layer that reads
    // these fields (OpenTelemetry's) joins the job to its producer's trace.
    if let Some(traceparent) = job.headers.get(TRACEPARENT).filter(|value| well_formed_traceparent(value)) {
        span.record("traceparent", traceparent.as_str());
        span.record("trace_id", &traceparent[3..35]);
    }
    run_traced(hands, shared, job, slot).instrument(span).await
}

async fn run_traced(
    hands: Arc<Hands>,
    shared: Arc<Shared>,
    mut job: Claimed,
    slot: OwnedSemaphorePermit,
) -> Option<(Claimed, OwnedSemaphorePermit)> {
    let Hands { queue, acker, heart, meters, refills } = &*hands;
    let options = &shared.options;
    let cancel = CancellationToken::new();
    // The payload and headers move to the handler: no copy of them stays here.
    let context = JobContext::new(&mut job, queue, cancel.clone());
    // The claim came just before this moment: the lease holds until `lease` from now.
    let started = Instant::now();
    if let Some(waited) = waited(&job.id) {
        meters.wait_seconds.record(waited.as_secs_f64());
    }
    let mut lease = Lease::new(heart, &job, started);
    // A task of its own, not a future polled here: a handler that computes or
    // blocks for long must not starve its own heartbeat. (Polling it inline
    // was measured ~10% faster on no-op jobs, and rejected for that reason.)
    // In the job's span, so that what the handler logs is the job's.
    let mut handler = tokio::spawn(shared.handler.handle(context).in_current_span());
    // The job's own timeout, else the worker's: how long this attempt may run.
    let timeout = job.policy.and_then(|policy| policy.timeout).map(Duration::from_millis).or(options.timeout);
    let timed_out = async {
        match timeout {
            Some(limit) => tokio::time::sleep_until(started + limit).await,
            None => std::future::pending().await,
        }
    };
    // The job the ack claimed after this one, with this slot.
    let mut next = None;
    let outcome = tokio::select! {
        held = lease.hold(&mut handler) => match held {
            Some(joined) => Ending::Finished(joined),
            None => Ending::LeaseLost,
        },
        () = shared.releasing.cancelled() => Ending::Released,
        () = timed_out => Ending::TimedOut(timeout.unwrap_or_default()),
    };
    match outcome {
        Ending::Finished(Ok(Ok(result))) => {
            // The worker's only running job, while it takes new ones: its
            // ack claims the next (ACKNEXT), for this slot. Else the slot
            // goes with the ack's first try: the gatherer may fill it, or
            // the claim loop.
            let last =
                refills.as_ref().is_some_and(|slots| slots.available_permits() + 1 >= options.concurrency)
                    && !shared.stopping.is_cancelled();
            let (slot, claimed) = (std::sync::Mutex::new(Some(slot)), std::sync::Mutex::new(None));
            let claiming = std::sync::atomic::AtomicBool::new(last);
            let ack = || async {
                // A try after a failed round trip acks alone: what the
                // ACKNEXT may have claimed is not known, and is reaped.
                if !claiming.swap(false, std::sync::atomic::Ordering::Relaxed) {
                    let slot = if last { None } else { take(&slot) };
                    return acker.ack(queue, &job, result.clone(), slot).await;
                }
                let ack = Ack { id: job.id.clone(), token: job.token, result: result.clone() };
                let (outcome, jobs) = acker::ack_next(queue, ack, options.lease, 1).await;
                let slot = take(&slot).expect("kept for the next job");
                *claimed.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) =
                    jobs.into_iter().next().map(|job| (job, slot));
                outcome
            };
            let acked = persist(&mut lease, Name::Ack, None, ack).await;
            next = take(&claimed);
            match acked {
                Ok(()) => {
                    meters.processed.increment(1);
                    tracing::info!(run_ms = run_ms(started), "job done");
                }
                Err(err) => lost_or_failed(meters, Name::Ack, &err),
            }
        }
        Ending::Finished(Ok(Err(error))) if handler::deferral(&error).is_some() => {
            let told = handler::deferral(&error).expect("checked above");
            tracing::info!(after = ?told.after, wait = ?told.wait, "job deferred");
            let defer = || queue.defer(&job, told.after, &options.retry, told.wait);
            match persist(&mut lease, Name::Defer, None, defer).await {
                Ok(()) => meters.deferred.increment(1),
                Err(err) => lost_or_failed(meters, Name::Defer, &err),
            }
        }
        Ending::Finished(result) => {
            let failure = Failure { queue, job: &job, retry: &options.retry, meters, started };
            failure.report(&mut lease, failure_text(result)).await;
        }
        Ending::TimedOut(limit) => {
            // Stopped as on a lost lease, the lease kept meanwhile; then
            // failed like any other failure, retried by the job's policy.
            lease.keep(stop(cancel, handler)).await;
            meters.timed_out.increment(1);
            let failure = Failure { queue, job: &job, retry: &options.retry, meters, started };
            failure.report(&mut lease, format!("timed out after {limit:?}")).await;
        }
        Ending::LeaseLost => {
            meters.leases_lost.increment(1);
            tracing::warn!(
                "lease lost (reaped or cancelled; another worker may hold the job now): \
                 the handler is cancelled and its result discarded"
            );
            stop(cancel, handler).await;
        }
        Ending::Released => {
            lease.keep(stop(cancel, handler)).await;
            // Shutdown waits for this: a few tries, not the whole lease.
            let until = Instant::now() + RELEASE_PERSISTENCE;
            match persist(&mut lease, Name::Release, Some(until), || queue.release(&job, &options.retry))
                .await
            {
                Ok(()) => tracing::info!(
                    run_ms = run_ms(started),
                    "job released to pending: the worker is stopping"
                ),
                Err(err) => lost_or_failed(meters, Name::Release, &err),
            }
        }
    }
    meters.run_seconds.record(started.elapsed().as_secs_f64());
    match next {
        Some((job, _)) if shared.stopping.is_cancelled() => {
            acker::give_back(queue, options.retry.max_attempts, job.id, job.token).await;
            None
        }
        next => next,
    }
}

/// What `slot` holds, taken out.
fn take<T>(slot: &std::sync::Mutex<Option<T>>) -> Option<T> {
    slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take()
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

/// A failed run, to report with FAIL.
struct Failure<'a> {
    queue: &'a Queue,
    job: &'a Claimed,
    retry: &'a crate::queue::RetryPolicy,
    meters: &'a Meters,
    /// When its run began.
    started: Instant,
}

/// How long a run has taken, in ms, as the log says it.
fn run_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

impl Failure<'_> {
    /// FAIL the job with `error`, until the lease's last safe moment.
    async fn report(&self, lease: &mut Lease, error: String) {
        self.meters.failed.increment(1);
        tracing::info!(error = %error, run_ms = run_ms(self.started), "job failed");
        let error = truncate(error);
        let fail = || self.queue.fail(self.job, &error, self.retry);
        match persist(lease, Name::Fail, None, fail).await {
            Ok(Failed::Delayed) => {
                self.meters.retried.increment(1);
                tracing::info!("job delayed: it runs again when its back-off is over");
            }
            Ok(Failed::Dead) => {
                self.meters.dead.increment(1);
                // Named in the line itself: under a WARN filter the job's
                // (INFO) span is not shown.
                tracing::warn!(
                    queue = self.queue.name(),
                    id = %self.job.id,
                    "job dead: out of attempts (`emq retry` sends it back to pending)"
                );
            }
            Err(err) => lost_or_failed(self.meters, Name::Fail, &err),
        }
    }
}

/// Why a finished handler failed, as FAIL's error text.
fn failure_text(result: std::result::Result<HandlerResult, tokio::task::JoinError>) -> String {
    match result {
        Ok(Ok(_)) => "handler succeeded".to_owned(),
        Ok(Err(error)) => handler::error_text(&error),
        Err(join) if join.is_panic() => format!("handler panicked: {}", panic_text(join.into_panic())),
        Err(join) => format!("handler task ended: {join}"),
    }
}

/// Take the job from its handler: tell it, give it a moment to stop by
/// itself, then abort its task. Whatever it returns is discarded.
async fn stop(cancel: CancellationToken, mut handler: tokio::task::JoinHandle<HandlerResult>) {
    cancel.cancel();
    if tokio::time::timeout(CANCEL_WINDOW, &mut handler).await.is_err() {
        handler.abort();
    }
}

type HandlerResult = std::result::Result<Option<Vec<u8>>, HandlerError>;

/// How long a release at shutdown is tried.
const RELEASE_PERSISTENCE: Duration = Duration::from_secs(2);

/// A refused ack, fail or release: either the lease was lost (counted), or
/// the server could not be reached (the lease runs out and the job is reaped).
fn lost_or_failed(meters: &Meters, what: Name, err: &Error) {
    if let Error { kind: ErrorKind::NoJob, .. } = err {
        // Not another holder's now: the record is gone.
        meters.leases_lost.increment(1);
        tracing::warn!(
            error = %err,
            "{what} refused: the job is no longer on the server (deleted, purged, or the server lost its data in a restart without persistence); the result is discarded"
        );
    } else if err.is_lost_lease() {
        meters.leases_lost.increment(1);
        tracing::warn!(error = %err, "{what} refused: the lease was lost, the result is discarded");
    } else if let Error { kind: ErrorKind::NotReplicated { .. }, .. } = err {
        tracing::warn!(error = %err, "{what} applied; a failover now could undo it");
    } else {
        tracing::error!(
            error = %err,
            "{what} failed until the lease's last safe moment; the job runs again once it is reaped"
        );
    }
}

fn panic_text(panic: Box<dyn std::any::Any + Send>) -> String {
    match panic.downcast::<String>() {
        Ok(text) => *text,
        Err(panic) => panic.downcast_ref::<&str>().map_or("(not text)".into(), |text| (*text).to_owned()),
    }
}

/// At most [`ERROR_TEXT`] bytes, cut on a character boundary.
fn truncate(mut text: String) -> String {
    if text.len() > ERROR_TEXT {
        let mut end = ERROR_TEXT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
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
