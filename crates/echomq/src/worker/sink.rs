//! The outcome sink: where a job's run hands what became of it
//! ([`Outcome`]), with what it held (its lease, its slot), and which tells
//! the server. An ack joins the others that end with it (`sink/acker.rs`:
//! one ACKMANY under load, one ACK alone); the worker's last running job's
//! ack is an ACKNEXT that claims the next job for its slot, which goes back
//! to the claim loop with it. A failure is a FAIL with the back-off of the
//! worker's policy, a "retry after" a DEFER, a job taken back at shutdown a
//! RELEASE. Each is sent again through an outage, up to the lease's last
//! safe moment ([`persist`]); nothing is sent once the lease is lost. Then
//! the slot is freed: the last stop of a job's path.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use echomq_core::Name;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::Instant;

use super::handler::RetryAfter;
use super::lease::Lease;
use super::meters::Meters;
use super::options::Shared;
use super::slots::Refills;
use crate::queue::{Queue, RetryPolicy};
use crate::transition::{Ack, Claimed, Failed};
use crate::{Error, ErrorKind, Result};

mod acker;

use acker::Acker;

/// What became of a job's run, for the sink to tell the server.
pub(super) enum Outcome {
    /// The handler succeeded: ACK, keeping its result, if any.
    Ack(Option<Vec<u8>>),
    /// The handler failed (an error, a panic, a timeout): FAIL with this text.
    Fail(String),
    /// The handler said "retry after": DEFER.
    Defer(RetryAfter),
    /// The worker stopped and its grace ran out: RELEASE.
    Release,
    /// The lease was lost: nothing is written.
    Lost,
    /// The job waits for children its handler named (ADOPT): nothing more
    /// is written.
    Waits,
}

#[cfg(feature = "otel")]
impl Outcome {
    /// The outcome's name on the job's span (`messaging.echomq.outcome`).
    pub(super) fn name(&self) -> &'static str {
        match self {
            Outcome::Ack(_) => "completed",
            Outcome::Fail(_) => "failed",
            Outcome::Defer(_) => "deferred",
            Outcome::Release => "released",
            Outcome::Lost => "lost",
            Outcome::Waits => "waits",
        }
    }

    /// The failure's text, when the handler failed.
    pub(super) fn error(&self) -> Option<&str> {
        match self {
            Outcome::Fail(error) => Some(error),
            _ => None,
        }
    }
}

/// A job whose run ended, handed to the sink with what it held.
pub(super) struct Finished {
    /// The claimed job (its payload and headers gone to the handler).
    pub(super) job: Claimed,
    pub(super) outcome: Outcome,
    /// Its lease, renewed while its outcome waits out an outage.
    pub(super) lease: Lease,
    /// Its place in the concurrency limit, freed once the outcome is delivered.
    pub(super) slot: OwnedSemaphorePermit,
    /// When its run began.
    pub(super) started: Instant,
}

/// One queue's outcome sink. The jobs' runs deliver their outcomes through
/// it; its ack gatherer runs in a task of its own.
pub(super) struct Sink {
    queue: Queue,
    acker: Acker,
    meters: Meters,
    /// When the worker's acks may claim its next jobs (ACKNEXT).
    refills: Option<Refills>,
    /// The lease of the jobs an ACKNEXT claims.
    lease: Duration,
    retry: RetryPolicy,
    /// The worker's, told of a job's record found gone.
    shared: Arc<Shared>,
}

/// The longest error text kept; FAIL's limit is far above it.
const ERROR_TEXT: usize = 4096;

/// How long a release at shutdown is tried.
const RELEASE_PERSISTENCE: Duration = Duration::from_secs(2);

impl Sink {
    /// The sink of `queue`'s outcomes, and its ack gatherer, to run for as
    /// long as the worker does.
    pub(super) fn new(
        queue: Queue,
        shared: &Arc<Shared>,
        meters: Meters,
        refills: Option<Refills>,
    ) -> (Arc<Sink>, impl std::future::Future<Output = ()> + Send + 'static) {
        let options = &shared.options;
        let max_attempts = options.retry.max_attempts;
        let (acker, gatherer) = Acker::channel(queue.clone(), refills.clone(), options.lease, max_attempts);
        let (lease, retry, shared) = (options.lease, options.retry, shared.clone());
        let sink = Sink { queue, acker, meters, refills, lease, retry, shared };
        (Arc::new(sink), gatherer.run())
    }

    /// Tell the server what became of the job, then free its slot (or
    /// hand it on with its ack, to the next job).
    pub(super) async fn deliver(&self, finished: Finished) {
        let Finished { job, outcome, mut lease, slot, started } = finished;
        let slot = match outcome {
            Outcome::Ack(result) => {
                self.ack(&job, &mut lease, slot, result, started).await;
                None
            }
            Outcome::Fail(error) => {
                self.fail(&job, &mut lease, error, started).await;
                Some(slot)
            }
            Outcome::Defer(told) => {
                self.defer(&job, &mut lease, told).await;
                Some(slot)
            }
            Outcome::Release => {
                self.release(&job, &mut lease, started).await;
                Some(slot)
            }
            Outcome::Lost | Outcome::Waits => {
                lease.settle();
                Some(slot)
            }
        };
        self.meters.run_seconds.record(started.elapsed().as_secs_f64());
        drop(lease);
        drop(slot);
    }

    /// ACK the job, keeping `result`. The worker's only running job, while
    /// it takes new ones: its ack claims the next (ACKNEXT), for this slot,
    /// in the same round trip. Else the slot goes with the ack's first try:
    /// the gatherer may fill it, or free it as the ack leaves.
    async fn ack(
        &self,
        job: &Claimed,
        lease: &mut Lease,
        slot: OwnedSemaphorePermit,
        result: Option<Vec<u8>>,
        started: Instant,
    ) {
        let last = self.refills.as_ref().filter(|refills| refills.last());
        let (slot, claiming) = (Mutex::new(Some(slot)), AtomicBool::new(last.is_some()));
        let ack = || async {
            // A try after a failed round trip acks alone: what the
            // ACKNEXT may have claimed is not known, and is reaped.
            match last {
                Some(refills) if claiming.swap(false, Ordering::Relaxed) => {
                    self.ack_next(job, result.clone(), take(&slot), refills).await
                }
                Some(_) => self.acker.ack(&self.queue, job, result.clone(), None).await,
                None => self.acker.ack(&self.queue, job, result.clone(), take(&slot)).await,
            }
        };
        match persist(lease, Name::Ack, None, ack).await {
            Ok(()) => {
                self.meters.processed.increment(1);
                tracing::info!(run_ms = run_ms(started), "job done");
            }
            Err(err) => self.lost_or_failed(Name::Ack, &err),
        }
    }

    /// ACKNEXT: ack `job` and claim the next one for its `slot`; that job
    /// goes back to the claim loop with the slot, which is freed otherwise.
    async fn ack_next(
        &self,
        job: &Claimed,
        result: Option<Vec<u8>>,
        slot: Option<OwnedSemaphorePermit>,
        refills: &Refills,
    ) -> Result<()> {
        let ack = Ack { id: job.id.clone(), token: job.token, result };
        let (outcome, jobs) = acker::ack_next(&self.queue, ack, self.lease, 1).await;
        if let (Some(next), Some(slot)) = (jobs.into_iter().next(), slot) {
            acker::refill(&self.queue, refills, self.retry.max_attempts, next, slot).await;
        }
        outcome
    }

    /// FAIL the job with `error`, until the lease's last safe moment.
    async fn fail(&self, job: &Claimed, lease: &mut Lease, error: String, started: Instant) {
        self.meters.failed.increment(1);
        tracing::info!(error = %error, run_ms = run_ms(started), "job failed");
        let error = truncate(error);
        let fail = || self.queue.fail(job, &error, &self.retry);
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
                    id = %job.id,
                    "job dead: out of attempts (`emq retry` sends it back to pending)"
                );
            }
            Err(err) => self.lost_or_failed(Name::Fail, &err),
        }
    }

    /// DEFER the job as its handler said.
    async fn defer(&self, job: &Claimed, lease: &mut Lease, told: RetryAfter) {
        tracing::info!(after = ?told.after, wait = ?told.wait, "job deferred");
        let defer = || self.queue.defer(job, told.after, &self.retry, told.wait);
        match persist(lease, Name::Defer, None, defer).await {
            Ok(()) => self.meters.deferred.increment(1),
            Err(err) => self.lost_or_failed(Name::Defer, &err),
        }
    }

    /// RELEASE the job back to pending: the worker is stopping.
    async fn release(&self, job: &Claimed, lease: &mut Lease, started: Instant) {
        // Shutdown waits for this: a few tries, not the whole lease.
        let until = Instant::now() + RELEASE_PERSISTENCE;
        match persist(lease, Name::Release, Some(until), || self.queue.release(job, &self.retry)).await {
            Ok(()) => {
                tracing::info!(run_ms = run_ms(started), "job released to pending: the worker is stopping")
            }
            Err(err) => self.lost_or_failed(Name::Release, &err),
        }
    }
}

/// What `slot` holds, taken out.
fn take<T>(slot: &Mutex<Option<T>>) -> Option<T> {
    slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take()
}

/// How long a run has taken, in ms, as the log says it.
fn run_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
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

impl Sink {
    /// A refused ack, fail or release: either the lease was lost (counted),
    /// or the server could not be reached (the lease runs out and the job
    /// is reaped).
    fn lost_or_failed(&self, what: Name, err: &Error) {
        let meters = &self.meters;
        if let Error { kind: ErrorKind::NoJob, .. } = err {
            // Not another holder's now: the record is gone. The claim loops
            // then ask whether the server restarted.
            self.shared.records_gone.fetch_add(1, Ordering::Relaxed);
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
}

/// The first back-off between two tries of a finishing call, and the longest.
const PERSIST_BACKOFF: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(1));
/// Naps shorter than this near the lease's end are not worth taking: the last
/// try goes at the last safe moment instead.
const PERSIST_NAP_MIN: Duration = Duration::from_millis(20);

/// Send a finishing call (ack, fail, release), and send it again while the
/// server cannot be reached (not when it refused, nor when it applied the
/// call and only its replicas lagged). A Redis restart that takes seconds
/// must not cost a finished job a second run, so the call is tried up to the
/// lease's last safe moment (or `stop_by`, when sooner), backing off but
/// never napping past half the time left, the last try at that moment. Past
/// that moment the job is the reaper's.
///
/// While the call waits, the heartbeat goes on renewing the lease, which
/// moves that moment on, for as long as no try may have reached the server
/// (each failed with the connection refused, or the server answered that it
/// cannot serve now: a gathered ack's error says so only when its whole
/// batch surely did nothing); never while a try is on its way, since a
/// renewal that lands after the call would be refused. For the same reason
/// each try first waits for a renewal already on its way to come back.
async fn persist<T, F, Fut>(lease: &mut Lease, what: Name, stop_by: Option<Instant>, call: F) -> Result<T>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let (mut wait, longest) = PERSIST_BACKOFF;
    let mut waiting_since = None;
    let mut renewing = true;
    loop {
        // A renewal on its way would land after this try and be refused.
        lease.quiet().await;
        match call().await {
            Err(err)
                if err.code().is_none()
                    && !matches!(err, Error { kind: ErrorKind::NotReplicated { .. }, .. }) =>
            {
                renewing &= err.surely_did_nothing();
                let now = Instant::now();
                let last =
                    stop_by.map_or(lease.last_safe_moment(), |stop| stop.min(lease.last_safe_moment()));
                if now >= last {
                    return Err(err);
                }
                if waiting_since.is_none() {
                    tracing::warn!(
                        error = %err,
                        "{what} {}; trying again for up to {:.1?} (the lease's last safe moment)",
                        err.failing_words(),
                        last - now
                    );
                    waiting_since = Some(now);
                } else {
                    tracing::debug!(error = %err, "{what} still {}", err.failing_words());
                }
                let nap = wait.min((last - now) / 2);
                let nap = if nap < PERSIST_NAP_MIN { last - now } else { nap };
                if renewing {
                    lease.keep(tokio::time::sleep(nap)).await;
                } else {
                    tokio::time::sleep(nap).await;
                }
                wait = (wait * 2).min(longest);
            }
            done => {
                if let (Ok(_), Some(since)) = (&done, waiting_since) {
                    tracing::info!("{what} went through after {:.1?} of retries", since.elapsed());
                }
                let applied =
                    |err: &Error| err.is_lost_lease() || matches!(err.kind, ErrorKind::NotReplicated { .. });
                if done.as_ref().map_or_else(applied, |_| true) {
                    lease.settle();
                }
                return done;
            }
        }
    }
}

#[cfg(test)]
mod tests;
