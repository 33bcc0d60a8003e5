//! Consuming: claiming jobs and everything a lease holder does with them
//! (ack, fail, extend, release, progress, defer).

use std::time::Duration;

use super::lease::{Lease, Leases, Wait};
use super::{Queue, RetryPolicy};
use crate::executor::{claim_waiting, execute, Executor};
use crate::keyspace::Keyspace;
use crate::transition::*;
use crate::Result;

impl Queue {
    /// Claim the job at the head of pending under a lease of `lease`.
    ///
    /// # Errors
    /// [`ErrorKind::Argument`](crate::ErrorKind::Argument) for a lease of
    /// zero or over a day; a key of the wrong type, malformed stored state,
    /// a failure of the connection or the server.
    pub async fn claim(&self, lease: Duration) -> Result<Option<Lease>> {
        Ok(self.claim_many(lease, 1, None).await?.jobs.pop())
    }

    /// Claim up to `count` jobs (1..=1000) in one round trip, each under its
    /// own lease, and say whether the queue's gate (paused, its limits) held
    /// some back. With `wait`, a claim that gets nothing because nothing is
    /// pending or the queue is paused waits up to that long for an arrival
    /// or a resume, on executors that can ([`Setup::waits`](crate::executor::Setup::waits)).
    /// A partition of a queue held to an exact rate ([`Partitioned::exact_rate`](crate::Partitioned::exact_rate))
    /// claims under permits, which cannot wait on the server: it answers at
    /// once, held back for a moment ([`Held::Wait`]) when it found nothing.
    ///
    /// # Errors
    /// As [`claim`](Queue::claim); `count` out of range is
    /// [`ErrorKind::Argument`](crate::ErrorKind::Argument).
    pub async fn claim_many(&self, lease: Duration, count: u64, wait: Option<Duration>) -> Result<Leases> {
        Ok(self.leases(self.claims(lease, count, wait).await?))
    }

    /// Finish many claimed jobs, at most 1000 ([`limits::ACKS`](echomq_core::limits::ACKS)),
    /// in one call (ACKMANY); each ack's own outcome, in order
    /// ([`ErrorKind::Fence`](crate::ErrorKind::Fence) for a job whose lease was lost).
    ///
    /// # Errors
    /// The outer error is the call's: a refusal of the whole call (a key of
    /// the wrong type, more than 1000 jobs) acked nothing.
    pub async fn ack_many(&self, jobs: Vec<Lease>) -> Result<Vec<Result<()>>> {
        let acks = jobs.into_iter().map(|lease| Ack::of(&lease.into_job())).collect();
        ack_many(&*self.via, &self.keys, &AckMany { acks }).await
    }

    /// Leases on the jobs `claims` got.
    pub(crate) fn leases(&self, claims: Claims) -> Leases {
        let jobs = claims.jobs.into_iter().map(|job| Lease::new(self, job)).collect();
        Leases { jobs, held: claims.held }
    }

    /// CLAIM, waiting as [`claim_many`](Queue::claim_many) says: the jobs
    /// as data. A partition of a queue with an exact rate asks its
    /// coordinator first (PROTOCOL.md §7.10).
    pub(crate) async fn claims(&self, lease: Duration, count: u64, wait: Option<Duration>) -> Result<Claims> {
        match &self.coordinator {
            Some(coordinator) => coordinator.claims(self, lease, count, wait).await,
            None => self.claims_freely(lease, count, wait).await,
        }
    }

    /// [`claims`](Queue::claims) with no coordinator to ask.
    pub(crate) async fn claims_freely(
        &self,
        lease: Duration,
        count: u64,
        wait: Option<Duration>,
    ) -> Result<Claims> {
        match wait {
            None => self.run(&Claim { lease, count }).await,
            Some(wait) => claim_waiting(&*self.via, &self.keys, &Claim { lease, count }, wait).await,
        }
    }

    pub(crate) async fn ack(&self, job: &Claimed) -> Result<()> {
        self.run(&Ack::of(job)).await
    }

    pub(crate) async fn ack_with(&self, job: &Claimed, result: impl Into<Vec<u8>>) -> Result<()> {
        self.run(&Ack { id: job.id.clone(), token: job.token, result: Some(result.into()) }).await
    }

    pub(crate) async fn ack_and_claim(
        &self,
        job: &Claimed,
        result: Option<Vec<u8>>,
        lease: Duration,
        count: u64,
    ) -> Result<Claims> {
        let ack = Ack { id: job.id.clone(), token: job.token, result };
        // A partitioned queue's claims ask for permits first: the ack alone, then a claim that does.
        if self.coordinator.is_some() {
            self.run(&ack).await?;
            return self.claims(lease, count, None).await;
        }
        self.run(&AckNext { ack, lease, count }).await
    }

    pub(crate) async fn fail(&self, job: &Claimed, error: &str, policy: &RetryPolicy) -> Result<Failed> {
        let call = Fail {
            id: job.id.clone(),
            token: job.token,
            max_attempts: policy.max_attempts,
            backoff: policy.delay_for(&job.id, job.token),
            error: error.to_owned(),
        };
        self.run(&call).await
    }

    pub(crate) async fn extend(&self, job: &Claimed, lease: Duration) -> Result<u64> {
        self.run(&Extend { id: job.id.clone(), token: job.token, lease }).await
    }

    pub(crate) async fn release(&self, job: &Claimed, policy: &RetryPolicy) -> Result<()> {
        self.run(&Release { id: job.id.clone(), token: job.token, max_attempts: policy.max_attempts }).await
    }

    pub(crate) async fn progress(&self, job: &Claimed, value: impl Into<Vec<u8>>) -> Result<()> {
        self.run(&Progress { id: job.id.clone(), token: job.token, value: value.into() }).await
    }

    pub(crate) async fn defer(
        &self,
        job: &Claimed,
        delay: Duration,
        retry: &RetryPolicy,
        wait: Wait,
    ) -> Result<()> {
        let call = Defer {
            id: job.id.clone(),
            token: job.token,
            delay,
            max_attempts: retry.max_attempts,
            pause_queue: wait == Wait::Queue,
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
