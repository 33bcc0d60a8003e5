//! [`Lease`]: a claimed job in the hands of its claimer. What ends the job
//! (ack, fail, release, defer) takes the lease by value, so a job is ended
//! once: a second ack does not compile.

use std::time::Duration;

use super::{Queue, RetryPolicy};
use crate::id::JobId;
use crate::transition::{Claimed, Failed, Headers, Held};
use crate::Result;

/// A claimed job, held under a lease until one of [`ack`](Lease::ack),
/// [`ack_with`](Lease::ack_with), [`ack_and_claim`](Lease::ack_and_claim),
/// [`fail`](Lease::fail), [`release`](Lease::release) or
/// [`defer`](Lease::defer) ends it; [`extend`](Lease::extend) and
/// [`progress`](Lease::progress) keep it. It reads as its job
/// ([`Claimed`]: `lease.id`, `lease.payload`, `lease.token`).
///
/// Every call is fenced by the job's token: when the lease was lost
/// meanwhile (it expired and the job was reaped, or the job was cancelled),
/// the call changes nothing and answers
/// [`ErrorKind::Fence`](crate::ErrorKind::Fence) or
/// [`ErrorKind::NoJob`](crate::ErrorKind::NoJob).
///
/// An ending call that fails takes the handle with it. When it surely did
/// nothing ([`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable)),
/// send it again on [`Lease::held`] of the id and token kept beforehand;
/// when it may have landed ([`ErrorKind::MayHaveLanded`](crate::ErrorKind::MayHaveLanded)),
/// sending it again is safe too (a repeat is fenced). Either way a job left
/// alone is not lost: its lease expires and it is reaped and runs again.
#[must_use = "a lease left alone holds its job until the lease expires; then the job is reaped and runs again"]
#[derive(Debug)]
pub struct Lease {
    job: Claimed,
    queue: Queue,
}

/// What [`Queue::claim_many`] got: leases on its jobs, in pending order, and
/// what held the claim back, if anything.
#[must_use = "each lease holds its job until it is ended or expires"]
#[derive(Debug)]
pub struct Leases {
    /// The claimed jobs; empty when nothing is pending.
    pub jobs: Vec<Lease>,
    /// Set when the queue's gate let fewer jobs through than were asked for.
    pub held: Option<Held>,
}

impl std::ops::Deref for Lease {
    type Target = Claimed;

    fn deref(&self) -> &Claimed {
        &self.job
    }
}

impl Lease {
    pub(crate) fn new(queue: &Queue, job: Claimed) -> Lease {
        Lease { job, queue: queue.clone() }
    }

    /// The lease of a job claimed elsewhere, whose id and token were handed
    /// over (a worker process to a child, `emq work` to its command, a
    /// holder that kept them): the calls are fenced by `token` as any
    /// holder's. It carries no payload, policy or headers.
    pub fn held(queue: &Queue, id: JobId, token: u64) -> Lease {
        let job = Claimed { id, token, payload: Vec::new(), policy: None, headers: Headers::default() };
        Lease::new(queue, job)
    }

    /// The job without its handle, to end it by another path (a worker's
    /// own acker); nothing is sent.
    #[must_use]
    pub fn into_job(self) -> Claimed {
        self.job
    }

    /// Finish the job.
    ///
    /// # Errors
    /// [`ErrorKind::Fence`](crate::ErrorKind::Fence) or
    /// [`ErrorKind::NoJob`](crate::ErrorKind::NoJob) when the lease was
    /// lost; a failure of the connection or the server.
    pub async fn ack(self) -> Result<()> {
        let acked = self.queue.ack(&self.job).await;
        self.over(&acked);
        acked
    }

    /// Finish the job and keep `result` beside it, for [`Queue::result`]
    /// and [`Queue::wait`]; it goes when the done job is trimmed or purged.
    ///
    /// # Errors
    /// As [`ack`](Lease::ack); [`ErrorKind::TooLarge`](crate::ErrorKind::TooLarge)
    /// for a result over the payload limit, before anything is sent.
    pub async fn ack_with(self, result: impl Into<Vec<u8>>) -> Result<()> {
        let acked = self.queue.ack_with(&self.job, result).await;
        self.over(&acked);
        acked
    }

    /// Finish the job (keeping `result`, if any) and claim up to `count`
    /// more under `lease`, in one atomic step and one round trip (ACKNEXT).
    ///
    /// # Errors
    /// As [`ack`](Lease::ack): when the ack is refused, nothing is acked
    /// and nothing claimed.
    pub async fn ack_and_claim(self, result: Option<Vec<u8>>, lease: Duration, count: u64) -> Result<Leases> {
        let claims = self.queue.ack_and_claim(&self.job, result, lease, count).await;
        self.over(&claims);
        let claims = claims?;
        Ok(self.queue.leases(claims))
    }

    /// Report the job's failure: it retries after the policy's back-off, or
    /// dies when its attempts reached the policy's maximum (a job's own
    /// policy, given at enqueue, wins on the server).
    ///
    /// # Errors
    /// As [`ack`](Lease::ack); [`ErrorKind::TooLarge`](crate::ErrorKind::TooLarge)
    /// for an error text over its limit.
    pub async fn fail(self, error: &str, policy: &RetryPolicy) -> Result<Failed> {
        let failed = self.queue.fail(&self.job, error, policy).await;
        self.over(&failed);
        failed
    }

    /// Give the job back to pending without blame and without spending its
    /// attempt: the job's own maximum grows by one (from `policy`'s, for a
    /// job with none of its own), so a shutdown never brings it nearer to dead.
    ///
    /// # Errors
    /// As [`ack`](Lease::ack).
    pub async fn release(self, policy: &RetryPolicy) -> Result<()> {
        let released = self.queue.release(&self.job, policy).await;
        self.over(&released);
        released
    }

    /// The job was told to come back after `delay` (an HTTP 429): it waits
    /// in delayed without spending its attempt (`policy`'s maximum is the
    /// default for a job with none of its own); with [`Wait::Queue`] the
    /// queue's claims wait as long, for every worker.
    ///
    /// # Errors
    /// As [`ack`](Lease::ack).
    pub async fn defer(self, delay: Duration, policy: &RetryPolicy, wait: Wait) -> Result<()> {
        let deferred = self.queue.defer(&self.job, delay, policy, wait).await;
        self.over(&deferred);
        deferred
    }

    /// Renew the lease for `lease` from now: the new deadline, in server ms.
    ///
    /// # Errors
    /// As [`ack`](Lease::ack).
    pub async fn extend(&self, lease: Duration) -> Result<u64> {
        if let Some(coordinator) = self.queue.coordinator() {
            // Its running permit first, under an exact concurrency: a lease never outlasts it.
            if coordinator.renew(&self.queue, &[&self.job.id], lease).await?.first() == Some(&false) {
                return Err(crate::Error::new(
                    crate::ErrorKind::Fence,
                    format!(
                        "the running permit of {} under its queue's exact concurrency is gone (it lapsed): \
                         its lease is not renewed, and another job may run in its place; stop this one",
                        self.job.id
                    ),
                ));
            }
        }
        self.queue.extend(&self.job, lease).await
    }

    /// A finishing call answered `outcome`: the job no longer runs here.
    /// Under a partitioned queue's exact concurrency its running permit goes
    /// back when the call landed or found the lease lost; after a failure,
    /// which may have landed or not, it lapses instead.
    fn over<T>(&self, outcome: &Result<T>) {
        if let Some(coordinator) = self.queue.coordinator() {
            let landed = outcome.as_ref().map_or_else(crate::Error::is_lost_lease, |_| true);
            coordinator.ended(&self.queue, &self.job.id, landed);
        }
    }

    /// Report the job's progress (at most 4096 bytes), kept beside the
    /// record until the job is purged and read by [`Queue::inspect`].
    ///
    /// # Errors
    /// As [`ack`](Lease::ack); [`ErrorKind::TooLarge`](crate::ErrorKind::TooLarge)
    /// over 4096 bytes.
    pub async fn progress(&self, value: impl Into<Vec<u8>>) -> Result<()> {
        self.queue.progress(&self.job, value).await
    }
}

/// Who waits when a job is deferred ([`Lease::defer`], DEFER's `PAUSE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Wait {
    /// Only the job.
    Job,
    /// The job, and every claim of its queue, for every worker.
    Queue,
}
