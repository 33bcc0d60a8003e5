//! One job's run: the handler in a task of its own (so a panic is a failed
//! job, not a dead worker), a heartbeat renewing the lease every third of it,
//! and the outcome: ack, fail, or, when the lease was lost, nothing at all.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use serde::de::DeserializeOwned;
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};
use tracing::Instrument;

use super::acker::Acker;
use super::Shared;
use crate::id::JobId;
use crate::queue::Queue;
use crate::transition::{Claimed, Failed};
use crate::{Error, Result};

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
    /// Jobs whose lease was lost while their handler ran.
    pub const LEASES_LOST: &str = "emq_leases_lost_total";
    /// Seconds from claim to the handler's end.
    pub const RUN_SECONDS: &str = "emq_job_run_seconds";
}

/// The longest error text kept; FAIL's limit is far above it.
const ERROR_TEXT: usize = 4096;

/// How long a handler whose job was taken away may take to notice
/// [`JobContext::cancelled`] and stop by itself before its task is aborted.
const CANCEL_WINDOW: Duration = Duration::from_secs(1);

/// What a handler gets: the job, and a way to learn its lease was lost.
#[derive(Clone, Debug)]
pub struct JobContext {
    /// The job's id.
    pub id: JobId,
    /// Which attempt this is, from 1: the claim's token.
    pub attempt: u64,
    /// The job's bytes.
    pub payload: Vec<u8>,
    /// The queue's name.
    pub queue: String,
    cancel: CancellationToken,
}

impl JobContext {
    /// The payload read as JSON into `T`: typed jobs.
    pub fn json<T: DeserializeOwned>(&self) -> serde_json::Result<T> {
        serde_json::from_slice(&self.payload)
    }

    /// Completes when the job is taken from this handler: its lease was lost
    /// (another worker may hold it now) or the worker is shutting down. The
    /// handler's task is aborted then anyway; this lets it stop tidily.
    pub fn cancelled(&self) -> WaitForCancellationFuture<'_> {
        self.cancel.cancelled()
    }

    /// Whether [`cancelled`](JobContext::cancelled) has completed.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
}

enum Outcome {
    Finished(std::result::Result<HandlerResult, tokio::task::JoinError>),
    LeaseLost,
    Released,
}

/// Run one claimed job to its end. `_slot` is its place in the concurrency limit.
pub(super) async fn run(
    queue: Queue,
    acker: Acker,
    shared: Arc<Shared>,
    job: Claimed,
    _slot: OwnedSemaphorePermit,
) {
    let span = tracing::info_span!("emq.job", queue = queue.name(), id = %job.id, attempt = job.token);
    run_traced(queue, acker, shared, job).instrument(span).await
}

async fn run_traced(queue: Queue, acker: Acker, shared: Arc<Shared>, job: Claimed) {
    let options = &shared.options;
    let cancel = CancellationToken::new();
    let context = JobContext {
        id: job.id.clone(),
        attempt: job.token,
        payload: job.payload.clone(),
        queue: queue.name().to_owned(),
        cancel: cancel.clone(),
    };
    // The claim came just before this moment: the lease holds until `lease` from now.
    let started = Instant::now();
    let mut lease = Lease::new(&queue, &job, options.lease, started);
    // A task of its own, not a future polled here: a handler that computes or
    // blocks for long must not starve its own heartbeat. (Polling it inline
    // was measured ~10% faster on no-op jobs, and rejected for that reason.)
    let mut handler = tokio::spawn(shared.handler.handle(context));
    let outcome = tokio::select! {
        held = lease.hold(&mut handler) => match held {
            Some(joined) => Outcome::Finished(joined),
            None => Outcome::LeaseLost,
        },
        () = shared.releasing.cancelled() => Outcome::Released,
    };
    let labels = [("queue", queue.name().to_owned())];
    match outcome {
        Outcome::Finished(Ok(Ok(()))) => {
            match persist(&mut lease, "ack", None, || acker.ack(&queue, &job)).await {
                Ok(()) => metrics::counter!(metric::PROCESSED, &labels).increment(1),
                Err(err) => lost_or_failed(&labels, "ack", &err),
            }
        }
        Outcome::Finished(result) => {
            let error = match result {
                Ok(Err(error)) => error.to_string(),
                Err(join) if join.is_panic() => {
                    format!("handler panicked: {}", panic_text(join.into_panic()))
                }
                Err(join) => format!("handler task ended: {join}"),
                Ok(Ok(())) => unreachable!("handled above"),
            };
            metrics::counter!(metric::FAILED, &labels).increment(1);
            tracing::info!(error = %error, "job failed");
            let error = truncate(error);
            match persist(&mut lease, "fail", None, || queue.fail(&job, &error, &options.retry)).await {
                Ok(Failed::Delayed) => metrics::counter!(metric::RETRIED, &labels).increment(1),
                Ok(Failed::Dead) => metrics::counter!(metric::DEAD, &labels).increment(1),
                Err(err) => lost_or_failed(&labels, "fail", &err),
            }
        }
        Outcome::LeaseLost => {
            metrics::counter!(metric::LEASES_LOST, &labels).increment(1);
            tracing::warn!(
                "lease lost (reaped or cancelled; another worker may hold the job now): \
                 the handler is cancelled and its result discarded"
            );
            stop(cancel, handler).await;
        }
        Outcome::Released => {
            lease.keep(stop(cancel, handler)).await;
            // Shutdown waits for this: a few tries, not the whole lease.
            let until = Instant::now() + RELEASE_PERSISTENCE;
            if let Err(err) = persist(&mut lease, "release", Some(until), || queue.release(&job)).await {
                lost_or_failed(&labels, "release", &err);
            }
        }
    }
    metrics::histogram!(metric::RUN_SECONDS, &labels).record(started.elapsed().as_secs_f64());
}

/// Take the job from its handler: tell it, give it a moment to stop by
/// itself, then abort its task. Whatever it returns is discarded.
async fn stop(cancel: CancellationToken, mut handler: tokio::task::JoinHandle<HandlerResult>) {
    cancel.cancel();
    if tokio::time::timeout(CANCEL_WINDOW, &mut handler).await.is_err() {
        handler.abort();
    }
}

type HandlerResult = std::result::Result<(), super::HandlerError>;

/// The first back-off between two tries of a finishing call, and the longest.
const PERSIST_BACKOFF: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(1));
/// Naps shorter than this near the lease's end are not worth taking: the last
/// try goes at the last safe moment instead.
const PERSIST_NAP_MIN: Duration = Duration::from_millis(20);
/// How long a release at shutdown is tried.
const RELEASE_PERSISTENCE: Duration = Duration::from_secs(2);

/// A refused ack, fail or release: either the lease was lost (counted), or
/// the server could not be reached (the lease runs out and the job is reaped).
fn lost_or_failed(labels: &[(&'static str, String)], what: &str, err: &Error) {
    if err.is_lost_lease() {
        metrics::counter!(metric::LEASES_LOST, labels).increment(1);
        tracing::warn!(error = %err, "{what} refused: the lease was lost, the result is discarded");
    } else if let Error::NotReplicated { .. } = err {
        tracing::warn!(error = %err, "{what} applied; a failover now could undo it");
    } else {
        tracing::error!(
            error = %err,
            "{what} failed until the lease's last safe moment; the job runs again once it is reaped"
        );
    }
}

/// Send a finishing call (ack, fail, release), and send it again while the
/// server cannot be reached (not when it refused, nor when it applied the
/// call and only its replicas lagged). A Redis restart that takes seconds
/// must not cost a finished job a second run, so the call is tried up to the
/// lease's last safe moment (or `stop_by`, when sooner), backing off but
/// never napping past half the time left, the last try at that moment; and
/// the heartbeat goes on meanwhile, so that a lease renewed while the call
/// waits (behind a slow batch, or a server that answers some calls and not
/// others) gives it longer. Past that moment the job is the reaper's.
async fn persist<T, F, Fut>(
    lease: &mut Lease<'_>,
    what: &'static str,
    stop_by: Option<Instant>,
    call: F,
) -> Result<T>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let (mut wait, longest) = PERSIST_BACKOFF;
    let mut waiting_since = None;
    loop {
        match lease.keep(call()).await {
            Err(err) if err.code().is_none() && !matches!(err, Error::NotReplicated { .. }) => {
                let now = Instant::now();
                let last =
                    stop_by.map_or(lease.last_safe_moment(), |stop| stop.min(lease.last_safe_moment()));
                if now >= last {
                    return Err(err);
                }
                if waiting_since.is_none() {
                    tracing::warn!(
                        error = %err,
                        "{what} cannot reach the server; trying again for up to {:.1?} (the lease's last safe moment)",
                        last - now
                    );
                    waiting_since = Some(now);
                } else {
                    tracing::debug!(error = %err, "{what} still cannot reach the server");
                }
                let nap = wait.min((last - now) / 2);
                let nap = if nap < PERSIST_NAP_MIN { last - now } else { nap };
                lease.keep(tokio::time::sleep(nap)).await;
                wait = (wait * 2).min(longest);
            }
            done => {
                if let (Ok(_), Some(since)) = (&done, waiting_since) {
                    tracing::info!("{what} went through after {:.1?} of retries", since.elapsed());
                }
                return done;
            }
        }
    }
}

/// A job's lease as its worker holds it: renewed by a heartbeat every third
/// of it, and surely held until `until`, counted from when the claim or the
/// last renewal was sent (so never later than the server's own deadline).
struct Lease<'a> {
    queue: &'a Queue,
    job: &'a Claimed,
    length: Duration,
    until: Instant,
    heartbeat: tokio::time::Interval,
    /// The server said the lease is gone: no more heartbeats.
    lost: bool,
    /// Since when renewals have not reached the server.
    failing_since: Option<Instant>,
}

impl<'a> Lease<'a> {
    fn new(queue: &'a Queue, job: &'a Claimed, length: Duration, claimed: Instant) -> Lease<'a> {
        let beat = (length / 3).max(Duration::from_millis(1));
        let heartbeat = tokio::time::interval_at(claimed + beat, beat);
        let until = claimed + length;
        Lease { queue, job, length, until, heartbeat, lost: false, failing_since: None }
    }

    /// The last moment a finishing call is worth sending: the lease's end as
    /// this worker knows it, less a moment for the call's way to the server.
    fn last_safe_moment(&self) -> Instant {
        self.until - (self.length / 20).min(Duration::from_millis(100))
    }

    /// Run `work` while the heartbeat renews the lease; `None`, and `work`
    /// dropped, as soon as a renewal finds the lease lost.
    async fn hold<T>(&mut self, work: impl std::future::Future<Output = T>) -> Option<T> {
        tokio::pin!(work);
        loop {
            tokio::select! {
                done = &mut work => return Some(done),
                _ = self.heartbeat.tick(), if !self.lost => {
                    self.renew().await;
                    if self.lost {
                        return None;
                    }
                }
            }
        }
    }

    /// Run `work` to its end while the heartbeat renews the lease: a
    /// finishing call's answer counts even when a renewal found the lease gone
    /// meanwhile (an ack that was applied ends the lease too).
    async fn keep<T>(&mut self, work: impl std::future::Future<Output = T>) -> T {
        tokio::pin!(work);
        loop {
            tokio::select! {
                done = &mut work => return done,
                _ = self.heartbeat.tick(), if !self.lost => self.renew().await,
            }
        }
    }

    /// One heartbeat. A failure to reach the server is said once, and its end.
    async fn renew(&mut self) {
        let sent = Instant::now();
        match self.queue.extend(self.job, self.length).await {
            Ok(_) => {
                self.until = sent + self.length;
                if let Some(since) = self.failing_since.take() {
                    tracing::info!("heartbeat renews the lease again, after {:.1?}", since.elapsed());
                }
            }
            Err(err) if err.is_lost_lease() => self.lost = true,
            // A connection trouble: the next beat tries again, well within the lease.
            Err(err) if self.failing_since.is_none() => {
                tracing::warn!(
                    error = %err,
                    "heartbeat cannot reach the server; the lease holds for {:.1?} more",
                    self.until.saturating_duration_since(sent)
                );
                self.failing_since = Some(sent);
            }
            Err(err) => tracing::debug!(error = %err, "heartbeat still cannot reach the server"),
        }
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
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;
    use crate::Embedded;

    fn unreachable_server() -> Error {
        let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "the server is down");
        Error::Redis(redis::RedisError::from(refused))
    }

    /// A call that cannot reach the server until `back`, then goes through.
    fn down_until(back: Instant, tries: &AtomicU32) -> impl Fn() -> std::future::Ready<Result<()>> + '_ {
        move || {
            tries.fetch_add(1, Ordering::SeqCst);
            std::future::ready(if Instant::now() < back { Err(unreachable_server()) } else { Ok(()) })
        }
    }

    fn queue() -> Queue {
        Queue::with_executor(Arc::new(Embedded::new()), "persist").unwrap()
    }

    /// A job this queue never had: its heartbeat finds the lease gone at the
    /// first beat, so the lease's end stays where the claim put it.
    fn unknown_job() -> Claimed {
        Claimed { id: JobId::mint(), token: 1, payload: Vec::new() }
    }

    /// The server comes back 0.3 s before a 1 s lease ends, later than the
    /// back-off alone (50, 100, 200, 400 ms, …) would try again.
    #[tokio::test]
    async fn a_finishing_call_is_tried_up_to_the_leases_last_safe_moment() {
        let (queue, job) = (queue(), unknown_job());
        let claimed = Instant::now();
        let mut lease = Lease::new(&queue, &job, Duration::from_secs(1), claimed);
        let tries = AtomicU32::new(0);
        let done = persist(&mut lease, "ack", None, down_until(claimed + Duration::from_millis(700), &tries));
        assert!(done.await.is_ok(), "the call went through once the server was back");
        assert!(tries.load(Ordering::SeqCst) > 1);
    }

    #[tokio::test]
    async fn a_call_that_never_gets_through_gives_up_at_the_last_safe_moment() {
        let (queue, job) = (queue(), unknown_job());
        let claimed = Instant::now();
        let mut lease = Lease::new(&queue, &job, Duration::from_secs(1), claimed);
        let last = lease.last_safe_moment();
        let tries = AtomicU32::new(0);
        let never = down_until(claimed + Duration::from_secs(3600), &tries);
        assert!(persist(&mut lease, "ack", None, never).await.is_err());
        assert!(Instant::now() >= last, "not before the last safe moment");
        // A refusal is final at once.
        let refused = || std::future::ready(Err::<(), _>(Error::Fence("stale".into())));
        assert!(persist(&mut lease, "ack", None, refused).await.unwrap_err().is_lost_lease());
    }

    /// While the call waits, the heartbeat renews the lease, and the call is
    /// tried for longer than the lease the claim gave.
    #[tokio::test]
    async fn the_heartbeat_goes_on_while_a_finishing_call_waits() {
        let queue = queue();
        queue.enqueue(b"x".to_vec()).await.unwrap();
        let length = Duration::from_secs(3);
        let claimed = Instant::now();
        let job = queue.claim(length).await.unwrap().expect("a job");
        let mut lease = Lease::new(&queue, &job, length, claimed);
        let tries = AtomicU32::new(0);
        let done = persist(&mut lease, "ack", None, down_until(claimed + length + length / 3, &tries));
        assert!(done.await.is_ok(), "tried past the first lease's end");
        assert!(lease.until > claimed + length, "renewed");
    }
}
