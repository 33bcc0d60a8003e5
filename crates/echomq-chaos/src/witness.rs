//! The witness: an [`Executor`] that runs every transition on the real one
//! and journals each call that hands out or carries a token, with the
//! server's answer. The library's `Worker` runs unchanged on top of it, so
//! the journal sees every claim, ack, fail, heartbeat and release the worker
//! sends, and what each one got, without a hook in the worker.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use echomq::executor::Call;
use echomq::executor::StreamEntry;
use echomq::transition::{Claim, Transition};
use echomq::{Executor, JobId, Name, Result};
use redis::Value;

use crate::journal::{Event, Heard, Journal};

/// Runs transitions on `inner`, journaling tokens and what the server said.
pub struct Witness {
    inner: Arc<dyn Executor>,
    journal: Arc<Journal>,
}

impl Witness {
    /// A witness of `inner`, writing to `journal`.
    pub fn new(inner: Arc<dyn Executor>, journal: Arc<Journal>) -> Witness {
        Witness { inner, journal }
    }

    /// Journal `call` and its reply: a claim's jobs and tokens; a fenced
    /// call's token and what it heard (`None`: the round trip failed). One
    /// exhaustive match on [`Name`], with no `_` arm: a transition added to
    /// the core does not compile here until it says what is journaled of it.
    fn witness(&self, call: &Call, reply: Option<&Result<Value>>) {
        match call.name {
            Name::Claim => self.claimed(reply),
            Name::AckMany => self.acked_many(call, reply),
            Name::Ack => {
                self.fenced(Event::Ack, call, reply);
            }
            // ACKNEXT: an ack, then (after it, in the same step) a claim.
            Name::AckNext => {
                if self.fenced(Event::Ack, call, reply) {
                    self.claimed(reply);
                }
            }
            Name::Fail => {
                self.fenced(Event::Fail, call, reply);
            }
            Name::Extend => {
                self.fenced(Event::Extend, call, reply);
            }
            Name::Release => {
                self.fenced(Event::Release, call, reply);
            }
            // Fenced, but never sent by the chaos worker's handler (it neither
            // defers nor reports progress): a new use must be journaled here.
            Name::Defer | Name::Progress => {}
            // Not a holder's call: no lease's token to journal.
            Name::Enqueue
            | Name::EnqueueMany
            | Name::Reap
            | Name::Promote
            | Name::Purge
            | Name::Cancel
            | Name::Retry
            | Name::Inspect
            | Name::Stats
            | Name::Counts
            | Name::Config
            | Name::Schedule
            | Name::Unschedule
            | Name::Schedules
            | Name::Fire
            | Name::Drain
            | Name::Remove
            | Name::Obliterate
            | Name::Trim
            | Name::Batch
            | Name::Settle => {}
        }
    }

    /// Journal a fenced call as `event`, with its token and what it heard;
    /// whether it was journaled (its ARGV begins with a job's id and token).
    fn fenced(&self, event: fn(Heard) -> Event, call: &Call, reply: Option<&Result<Value>>) -> bool {
        let id = call.args.first().and_then(|id| JobId::try_from(id.as_slice()).ok());
        let token = call.args.get(1).and_then(|token| std::str::from_utf8(token).ok()?.parse().ok());
        let (Some(id), Some(token)) = (id, token) else { return false };
        let heard = reply.map_or(Heard::Error, |reply| self.refused(call.name, reply));
        self.journal.record(event(heard), &id, token);
        true
    }

    /// Journal each job of an ACKMANY as an ack, with its own answer: its
    /// element of the reply, or the whole call's when the call was refused.
    fn acked_many(&self, call: &Call, reply: Option<&Result<Value>>) {
        let (mut at, mut nth) = (0, 0);
        while let (Some(id), Some(token)) = (call.args.get(at), call.args.get(at + 1)) {
            at += 2;
            while call.args.get(at).is_some_and(|word| word.eq_ignore_ascii_case(b"RESULT")) {
                at += 2;
            }
            // An ACKMANY short of replicas comes marked (an attribute around
            // the array, the executor's): each ack it applied is unconfirmed.
            let (outcomes, unconfirmed) = match reply {
                Some(Ok(Value::Attribute { data, .. })) => (Some(&**data), true),
                Some(Ok(value)) => (Some(value), false),
                _ => (None, false),
            };
            let heard = match (reply, outcomes) {
                (None, _) => Heard::Error,
                (_, Some(Value::Array(outcomes))) => match outcomes.get(nth) {
                    Some(Value::Int(1)) if unconfirmed => Heard::Error,
                    Some(Value::Int(1)) => Heard::Ok,
                    Some(Value::ServerError(refusal)) => {
                        let refusal = echomq::Error::from(redis::RedisError::from(refusal.clone()));
                        self.refused(call.name, &Err(refusal))
                    }
                    _ => Heard::Refused,
                },
                (Some(whole), _) => self.refused(call.name, whole),
            };
            nth += 1;
            let id = JobId::try_from(id.as_slice()).ok();
            let token = std::str::from_utf8(token).ok().and_then(|token| token.parse().ok());
            if let (Some(id), Some(token)) = (id, token) {
                self.journal.record(Event::Ack(heard), &id, token);
            }
        }
    }

    /// Journal the jobs a claim (or an ACKNEXT) handed out, with their tokens.
    fn claimed(&self, reply: Option<&Result<Value>>) {
        let claimed = reply.and_then(|reply| reply.as_ref().ok()).map(|value| Claim::parse(value.clone()));
        for job in claimed.into_iter().flatten().flat_map(|claims| claims.jobs) {
            self.journal.record(Event::Claim, &job.id, job.token);
        }
    }

    /// A refusal the worker never provokes by itself, told on stderr (the
    /// journal keeps only its kind; the run counts it as a violation).
    fn refused(&self, name: Name, reply: &Result<Value>) -> Heard {
        let heard = Heard::of(reply);
        if let (Heard::Refused, Err(err)) = (heard, reply) {
            eprintln!("echomq-chaos worker: {name} refused: {err}");
        }
        heard
    }
}

#[async_trait]
impl Executor for Witness {
    async fn run(&self, calls: &[Call]) -> Result<Vec<Result<Value>>> {
        let replies = self.inner.run(calls).await;
        for (i, call) in calls.iter().enumerate() {
            self.witness(call, replies.as_ref().ok().and_then(|replies| replies.get(i)));
        }
        replies
    }
    async fn claim_waiting(&self, claim: &Call, wait: Duration) -> Result<Value> {
        let reply = self.inner.claim_waiting(claim, wait).await;
        self.witness(claim, Some(&reply));
        reply
    }
    fn waits(&self) -> bool {
        self.inner.waits()
    }
    fn replication(&self) -> Option<echomq::Replication> {
        self.inner.replication()
    }
    async fn server_warnings(&self) -> Vec<String> {
        self.inner.server_warnings().await
    }
    async fn interrupt_waits(&self) {
        self.inner.interrupt_waits().await
    }
    async fn read_stream(
        &self,
        key: &str,
        after: &str,
        count: usize,
        wait: Duration,
    ) -> Result<Vec<StreamEntry>> {
        self.inner.read_stream(key, after, count, wait).await
    }
    async fn stream_last(&self, key: &str) -> Result<Option<String>> {
        self.inner.stream_last(key).await
    }
    async fn register(&self, key: &str, name: &str) -> Result<()> {
        self.inner.register(key, name).await
    }
    async fn registered(&self, key: &str, limit: usize) -> Result<Vec<String>> {
        self.inner.registered(key, limit).await
    }
    async fn unregister(&self, key: &str, name: &str) -> Result<()> {
        self.inner.unregister(key, name).await
    }
    async fn beat_worker(&self, registration: &echomq::workers::Registration) -> Result<()> {
        self.inner.beat_worker(registration).await
    }
    async fn noted_workers(&self, limit: usize) -> Result<Vec<echomq::workers::Noted>> {
        self.inner.noted_workers(limit).await
    }
    async fn forget_workers(&self, ids: &[String], before: u64) -> Result<()> {
        self.inner.forget_workers(ids, before).await
    }
    async fn unregister_worker(&self, id: &str) -> Result<()> {
        self.inner.unregister_worker(id).await
    }
}
