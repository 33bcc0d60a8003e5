//! The witness: an [`Executor`] that runs every transition on the real one
//! and journals each call that hands out or carries a token, with the
//! server's answer. The library's `Worker` runs unchanged on top of it, so
//! the journal sees every claim, ack, fail, heartbeat and release the worker
//! sends, and what each one got, without a hook in the worker.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use echomq::transition::*;
use echomq::{Executor, Keyspace, Result};

use crate::journal::{Event, Journal, Outcome};

/// Runs transitions on `inner`, journaling tokens and outcomes.
pub struct Witness {
    inner: Arc<dyn Executor>,
    journal: Arc<Journal>,
}

impl Witness {
    /// A witness of `inner`, writing to `journal`.
    pub fn new(inner: Arc<dyn Executor>, journal: Arc<Journal>) -> Witness {
        Witness { inner, journal }
    }

    fn claimed(&self, claimed: &Result<Vec<Claimed>>) {
        for job in claimed.iter().flatten() {
            self.journal.record(Event::Claim, &job.id, job.token);
        }
    }

    /// A refusal the worker never provokes by itself, told on stderr (the
    /// journal keeps only its kind; the run counts it as a violation).
    fn refused<T>(&self, what: &str, result: &Result<T>) -> Outcome {
        let outcome = Outcome::of(result);
        if let (Outcome::Refused, Err(err)) = (outcome, result) {
            eprintln!("echomq-chaos worker: {what} refused: {err}");
        }
        outcome
    }
}

#[async_trait]
impl Executor for Witness {
    async fn enqueue(&self, keys: &Keyspace, call: &Enqueue) -> Result<bool> {
        self.inner.enqueue(keys, call).await
    }
    async fn claim(&self, keys: &Keyspace, call: &Claim) -> Result<Vec<Claimed>> {
        let claimed = self.inner.claim(keys, call).await;
        self.claimed(&claimed);
        claimed
    }
    async fn ack(&self, keys: &Keyspace, call: &Ack) -> Result<()> {
        let acked = self.inner.ack(keys, call).await;
        self.journal.record(Event::Ack(self.refused("ack", &acked)), &call.id, call.token);
        acked
    }
    async fn fail(&self, keys: &Keyspace, call: &Fail) -> Result<Failed> {
        let failed = self.inner.fail(keys, call).await;
        self.journal.record(Event::Fail(self.refused("fail", &failed)), &call.id, call.token);
        failed
    }
    async fn extend(&self, keys: &Keyspace, call: &Extend) -> Result<u64> {
        let extended = self.inner.extend(keys, call).await;
        self.journal.record(Event::Extend(self.refused("extend", &extended)), &call.id, call.token);
        extended
    }
    async fn release(&self, keys: &Keyspace, call: &Release) -> Result<()> {
        let released = self.inner.release(keys, call).await;
        self.journal.record(Event::Release(self.refused("release", &released)), &call.id, call.token);
        released
    }
    async fn reap(&self, keys: &Keyspace, call: &Reap) -> Result<Reaped> {
        self.inner.reap(keys, call).await
    }
    async fn promote(&self, keys: &Keyspace, call: &Promote) -> Result<u64> {
        self.inner.promote(keys, call).await
    }
    async fn purge(&self, keys: &Keyspace, call: &Purge) -> Result<u64> {
        self.inner.purge(keys, call).await
    }
    async fn cancel(&self, keys: &Keyspace, call: &Cancel) -> Result<bool> {
        self.inner.cancel(keys, call).await
    }
    async fn retry(&self, keys: &Keyspace, call: &Retry) -> Result<()> {
        self.inner.retry(keys, call).await
    }
    async fn inspect(&self, keys: &Keyspace, call: &Inspect) -> Result<Option<Inspection>> {
        self.inner.inspect(keys, call).await
    }
    async fn stats(&self, keys: &Keyspace, call: &Stats) -> Result<StatsReply> {
        self.inner.stats(keys, call).await
    }
    async fn enqueue_batch(&self, keys: &Keyspace, calls: &[Enqueue]) -> Result<Vec<Result<bool>>> {
        self.inner.enqueue_batch(keys, calls).await
    }
    /// Each ack of the batch journaled with its own outcome; all `error`
    /// when the round trip failed as a whole.
    async fn ack_batch(&self, keys: &Keyspace, calls: &[Ack]) -> Result<Vec<Result<()>>> {
        let acked = self.inner.ack_batch(keys, calls).await;
        match &acked {
            Ok(outcomes) => {
                for (call, outcome) in calls.iter().zip(outcomes) {
                    self.journal.record(Event::Ack(self.refused("ack", outcome)), &call.id, call.token);
                }
            }
            Err(_) => {
                for call in calls {
                    self.journal.record(Event::Ack(Outcome::Error), &call.id, call.token);
                }
            }
        }
        acked
    }
    async fn claim_waiting(&self, keys: &Keyspace, call: &Claim, wait: Duration) -> Result<Vec<Claimed>> {
        let claimed = self.inner.claim_waiting(keys, call, wait).await;
        self.claimed(&claimed);
        claimed
    }
    fn waits(&self) -> bool {
        self.inner.waits()
    }
    async fn server_warnings(&self) -> Vec<String> {
        self.inner.server_warnings().await
    }
    async fn interrupt_waits(&self) {
        self.inner.interrupt_waits().await
    }
}
