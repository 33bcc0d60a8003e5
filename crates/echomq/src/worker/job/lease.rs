//! A job's lease as its worker holds it, renewed by a heartbeat while the
//! handler runs and while its outcome is sent; and the sending of that outcome
//! (ack, fail, release), which waits out an outage for as long as the lease
//! surely holds.

use std::time::Duration;

use echomq_core::Name;
use tokio::time::Instant;

use crate::queue::Queue;
use crate::transition::Claimed;
use crate::{Error, Result};

/// The first back-off between two tries of a finishing call, and the longest.
const PERSIST_BACKOFF: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(1));
/// Naps shorter than this near the lease's end are not worth taking: the last
/// try goes at the last safe moment instead.
const PERSIST_NAP_MIN: Duration = Duration::from_millis(20);

/// How a finishing call reaches the server, which decides whether the lease
/// may be renewed between its tries.
pub(super) enum Route {
    /// Straight to the server (fail, release): a try that surely did not get
    /// there (the connection refused, or the server answered that it cannot
    /// serve now) leaves the lease the worker's to renew before the next.
    Direct,
    /// Through the ack gatherer, whose batch may have got there although the
    /// error seen is that of a later try alone: no renewal, ever, since one
    /// after a landed ack would be refused with the job's own token.
    Gathered,
}

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
/// (see [`Route`]); never while a try is on its way, since a renewal that
/// lands after the call would be refused.
pub(super) async fn persist<T, F, Fut>(
    lease: &mut Lease<'_>,
    what: Name,
    route: Route,
    stop_by: Option<Instant>,
    call: F,
) -> Result<T>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let (mut wait, longest) = PERSIST_BACKOFF;
    let mut waiting_since = None;
    let mut renewing = matches!(route, Route::Direct);
    loop {
        match call().await {
            Err(err) if err.code().is_none() && !matches!(err, Error::NotReplicated { .. }) => {
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
                        "{what} cannot reach the server; trying again for up to {:.1?} (the lease's last safe moment)",
                        last - now
                    );
                    waiting_since = Some(now);
                } else {
                    tracing::debug!(error = %err, "{what} still cannot reach the server");
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
                return done;
            }
        }
    }
}

/// A job's lease as its worker holds it: renewed by a heartbeat every third
/// of it, and surely held until `until`, counted from when the claim or the
/// last renewal was sent (so never later than the server's own deadline).
pub(super) struct Lease<'a> {
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
    pub(super) fn new(queue: &'a Queue, job: &'a Claimed, length: Duration, claimed: Instant) -> Lease<'a> {
        let beat = (length / 3).max(Duration::from_millis(1));
        let mut heartbeat = tokio::time::interval_at(claimed + beat, beat);
        // After a wait without beats (a call on its way), one beat, not a burst.
        heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
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
    pub(super) async fn hold<T>(&mut self, work: impl std::future::Future<Output = T>) -> Option<T> {
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

    /// Run `work` (a nap between tries, a handler being stopped) to its end
    /// while the heartbeat renews the lease; a renewal that finds the lease
    /// lost only ends the beats.
    pub(super) async fn keep<T>(&mut self, work: impl std::future::Future<Output = T>) -> T {
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;

    use super::*;
    use crate::{Embedded, JobId};

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
        Claimed {
            id: JobId::mint(),
            token: 1,
            payload: Vec::new(),
            policy: None,
            headers: Default::default(),
        }
    }

    /// The server comes back 0.3 s before a 1 s lease ends, later than the
    /// back-off alone (50, 100, 200, 400 ms, …) would try again.
    #[tokio::test]
    async fn a_finishing_call_is_tried_up_to_the_leases_last_safe_moment() {
        let (queue, job) = (queue(), unknown_job());
        let claimed = Instant::now();
        let mut lease = Lease::new(&queue, &job, Duration::from_secs(1), claimed);
        let tries = AtomicU32::new(0);
        let done = persist(
            &mut lease,
            Name::Ack,
            Route::Direct,
            None,
            down_until(claimed + Duration::from_millis(700), &tries),
        );
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
        assert!(persist(&mut lease, Name::Ack, Route::Direct, None, never).await.is_err());
        assert!(Instant::now() >= last, "not before the last safe moment");
        // A refusal is final at once.
        let refused = || std::future::ready(Err::<(), _>(Error::Fence("stale".into())));
        assert!(persist(&mut lease, Name::Ack, Route::Direct, None, refused)
            .await
            .unwrap_err()
            .is_lost_lease());
    }

    /// While a direct call waits after tries that surely did not reach the
    /// server, the heartbeat renews the lease, and the call is tried for
    /// longer than the lease the claim gave.
    #[tokio::test]
    async fn the_heartbeat_goes_on_while_a_finishing_call_waits() {
        let queue = queue();
        queue.enqueue(b"x".to_vec()).await.unwrap();
        let length = Duration::from_secs(3);
        let claimed = Instant::now();
        let job = queue.claim(length).await.unwrap().expect("a job");
        let mut lease = Lease::new(&queue, &job, length, claimed);
        let tries = AtomicU32::new(0);
        let done = persist(
            &mut lease,
            Name::Ack,
            Route::Direct,
            None,
            down_until(claimed + length + length / 3, &tries),
        );
        assert!(done.await.is_ok(), "tried past the first lease's end");
        assert!(lease.until > claimed + length, "renewed");
    }

    /// No renewal once a try may have reached the server (a renewal after a
    /// landed ack would be refused with the job's own token): not after a
    /// broken connection, and never for an ack gathered into a batch.
    #[tokio::test]
    async fn no_renewal_once_a_try_may_have_landed() {
        let broken = || {
            let broken = std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the connection broke");
            std::future::ready(Err::<(), _>(Error::Redis(redis::RedisError::from(broken))))
        };
        for (route, what) in [(Route::Direct, "a broken connection"), (Route::Gathered, "a gathered ack")] {
            let queue = queue();
            queue.enqueue(b"x".to_vec()).await.unwrap();
            let length = Duration::from_secs(1);
            let claimed = Instant::now();
            let job = queue.claim(length).await.unwrap().expect("a job");
            let mut lease = Lease::new(&queue, &job, length, claimed);
            let tries = AtomicU32::new(0);
            let broken_then_refused = || {
                let first = tries.fetch_add(1, Ordering::SeqCst) == 0;
                let refused = std::future::ready(Err::<(), _>(unreachable_server()));
                async move {
                    if first {
                        broken().await
                    } else {
                        refused.await
                    }
                }
            };
            let done = if matches!(route, Route::Direct) {
                persist(&mut lease, Name::Fail, route, None, broken_then_refused).await
            } else {
                persist(&mut lease, Name::Ack, route, None, down_until(claimed + length * 3, &tries)).await
            };
            assert!(done.is_err(), "{what}: given up at the lease's end");
            assert_eq!(lease.until, claimed + length, "{what}: never renewed");
        }
    }
}
