//! Consuming: claiming jobs and everything a lease holder does with them
//! (ack, fail, extend, release, progress, defer).

use std::time::Duration;

use super::{Queue, RetryPolicy};
use crate::executor::{claim_waiting, execute, Executor};
use crate::keyspace::Keyspace;
use crate::transition::*;
use crate::Result;

impl Queue {
    /// Claim the job at the head of pending under a lease of `lease`.
    pub async fn claim(&self, lease: Duration) -> Result<Option<Claimed>> {
        Ok(self.claim_batch(lease, 1).await?.pop())
    }

    /// Claim up to `count` jobs (1..=1000) in one round trip, each under its own lease.
    pub async fn claim_batch(&self, lease: Duration, count: u64) -> Result<Vec<Claimed>> {
        Ok(self.run(&Claim { lease, count }).await?.jobs)
    }

    /// Claim up to `count` jobs, and say whether the queue's gate (paused,
    /// its concurrency limit) held some back. With `wait`, a claim that gets
    /// nothing because nothing is pending or the queue is paused waits up to
    /// that long for an arrival or a resume, on executors that can.
    pub async fn claims(&self, lease: Duration, count: u64, wait: Option<Duration>) -> Result<Claims> {
        match wait {
            None => self.run(&Claim { lease, count }).await,
            Some(wait) => claim_waiting(&*self.via, &self.keys, &Claim { lease, count }, wait).await,
        }
    }

    /// Claim up to `count` jobs; when none is pending, wait up to `wait` for
    /// one to arrive on executors that can ([`Executor::waits`]), else return at once.
    pub async fn claim_waiting(&self, lease: Duration, count: u64, wait: Duration) -> Result<Vec<Claimed>> {
        Ok(claim_waiting(&*self.via, &self.keys, &Claim { lease, count }, wait).await?.jobs)
    }

    /// Finish a claimed job. [`ErrorKind::Fence`](crate::ErrorKind::Fence) when the lease was lost.
    pub async fn ack(&self, job: &Claimed) -> Result<()> {
        self.run(&Ack::of(job)).await
    }

    /// Finish a claimed job and keep `result` beside it, for
    /// [`Queue::result`] and [`Queue::wait`]; it goes when the done job is
    /// trimmed or purged.
    pub async fn ack_with(&self, job: &Claimed, result: impl Into<Vec<u8>>) -> Result<()> {
        self.run(&Ack { id: job.id.clone(), token: job.token, result: Some(result.into()) }).await
    }

    /// Finish a claimed job (keeping `result`, if any) and claim up to
    /// `count` more under `lease`, in one atomic step and one round trip
    /// (ACKNEXT). When the ack is refused ([`ErrorKind::Fence`](crate::ErrorKind::Fence):
    /// the lease was lost), nothing is acked and nothing claimed.
    pub async fn ack_and_claim(
        &self,
        job: &Claimed,
        result: Option<Vec<u8>>,
        lease: Duration,
        count: u64,
    ) -> Result<Claims> {
        let ack = Ack { id: job.id.clone(), token: job.token, result };
        self.run(&AckNext { ack, lease, count }).await
    }

    /// Finish many claimed jobs, at most 1000 ([`limits::ACKS`](echomq_core::limits::ACKS)),
    /// in one call (ACKMANY); each ack's own outcome, in order
    /// ([`ErrorKind::Fence`](crate::ErrorKind::Fence) for a job whose lease was lost).
    /// The outer error is the call's: a refusal of the whole call (a key of
    /// the wrong type) acked nothing.
    pub async fn ack_batch(&self, jobs: &[Claimed]) -> Result<Vec<Result<()>>> {
        ack_many(&*self.via, &self.keys, &AckMany { acks: jobs.iter().map(Ack::of).collect() }).await
    }

    /// Report a claimed job's failure: it retries after the policy's back-off,
    /// or dies when its attempts reached the policy's maximum.
    pub async fn fail(&self, job: &Claimed, error: &str, policy: &RetryPolicy) -> Result<Failed> {
        let call = Fail {
            id: job.id.clone(),
            token: job.token,
            max_attempts: policy.max_attempts,
            backoff: policy.delay_for(&job.id, job.token),
            error: error.to_owned(),
        };
        self.run(&call).await
    }

    /// Renew a claimed job's lease; the new deadline in server ms.
    pub async fn extend(&self, job: &Claimed, lease: Duration) -> Result<u64> {
        self.run(&Extend { id: job.id.clone(), token: job.token, lease }).await
    }

    /// Give a claimed job back to pending without blame and without spending
    /// its attempt: the job's own maximum grows by one (from `policy`'s, for a
    /// job with none of its own), so a shutdown never brings it nearer to dead.
    pub async fn release(&self, job: &Claimed, policy: &RetryPolicy) -> Result<()> {
        self.run(&Release { id: job.id.clone(), token: job.token, max_attempts: policy.max_attempts }).await
    }

    /// Report a claimed job's progress (at most 4096 bytes), kept beside the
    /// record until the job is purged and read by [`Queue::inspect`].
    /// [`ErrorKind::Fence`](crate::ErrorKind::Fence) when the lease was lost.
    pub async fn progress(&self, job: &Claimed, value: impl Into<Vec<u8>>) -> Result<()> {
        self.run(&Progress { id: job.id.clone(), token: job.token, value: value.into() }).await
    }

    /// The holder of `job` was told to come back after `delay` (an HTTP 429):
    /// the job waits in delayed without spending its attempt (`retry`'s
    /// maximum is the default for a job with none of its own), and with
    /// `pause_queue` the queue's claims wait as long.
    pub async fn defer(
        &self,
        job: &Claimed,
        delay: Duration,
        retry: &RetryPolicy,
        pause_queue: bool,
    ) -> Result<()> {
        let call = Defer {
            id: job.id.clone(),
            token: job.token,
            delay,
            max_attempts: retry.max_attempts,
            pause_queue,
        };
        self.run(&call).await
    }
}

/// Run `call`, one ACKMANY: each job's own outcome in order, a refusal
/// naming its job. The outer error is the call's: the connection's, or a
/// refusal of the whole call, which acked nothing.
pub(crate) async fn ack_many(via: &dyn Executor, keys: &Keyspace, call: &AckMany) -> Result<Vec<Result<()>>> {
    let outcomes = execute(via, keys, call).await?;
    if outcomes.len() != call.acks.len() {
        let (got, sent) = (outcomes.len(), call.acks.len());
        return Err(crate::Error::new(
            crate::ErrorKind::Reply,
            format!("ACKMANY answered {got} replies for {sent} jobs"),
        ));
    }
    let named = outcomes.into_iter().zip(&call.acks);
    Ok(named
        .map(|(outcome, ack)| outcome.map_err(|err| err.at(AckMany::NAME, keys.queue(), Some(&ack.id))))
        .collect())
}
