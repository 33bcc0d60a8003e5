//! The `via`: who runs a transition. A host call carries its executor and
//! never inspects it.
//!
//! [`Executor`] has one method per transition. Executors that ship KEYS and
//! ARGV somewhere and read the reply back implement the smaller [`Dispatch`]
//! and get [`Executor`] from it, so every transition goes through one path,
//! with one tracing span.

use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;
use tracing::Instrument;

use crate::keyspace::Keyspace;
use crate::transition::*;
use crate::Result;

mod embedded;
mod lua;
mod native;
mod wakeups;

pub use embedded::Embedded;
pub use lua::{script_source, Lua};
#[cfg(feature = "cluster")]
pub use native::connect_cluster;
pub use native::{connect, connect_with, detect, Native};
pub use wakeups::Wakeups;

/// Runs the protocol's transitions. One method per transition.
#[async_trait]
pub trait Executor: Send + Sync + 'static {
    /// Admit a job: its record, then pending (or delayed). `false` for a duplicate.
    async fn enqueue(&self, keys: &Keyspace, call: &Enqueue) -> Result<bool>;
    /// Take jobs from the head of pending, each under a new lease and a new token.
    async fn claim(&self, keys: &Keyspace, call: &Claim) -> Result<Vec<Claimed>>;
    /// The lease holder finishes the job: to done.
    async fn ack(&self, keys: &Keyspace, call: &Ack) -> Result<()>;
    /// The lease holder failed: to delayed for a retry, or to dead.
    async fn fail(&self, keys: &Keyspace, call: &Fail) -> Result<Failed>;
    /// The lease holder renews its lease; the new deadline in server ms.
    async fn extend(&self, keys: &Keyspace, call: &Extend) -> Result<u64>;
    /// The lease holder gives the job back to pending, without blame.
    async fn release(&self, keys: &Keyspace, call: &Release) -> Result<()>;
    /// Expired leases back to pending, or to dead when attempts are used up.
    async fn reap(&self, keys: &Keyspace, call: &Reap) -> Result<Reaped>;
    /// Due delayed jobs to pending; how many moved.
    async fn promote(&self, keys: &Keyspace, call: &Promote) -> Result<u64>;
    /// Delete finished jobs past an age; how many went.
    async fn purge(&self, keys: &Keyspace, call: &Purge) -> Result<u64>;
    /// Take a job out of the flow for good; `false` when it was cancelled already.
    async fn cancel(&self, keys: &Keyspace, call: &Cancel) -> Result<bool>;
    /// A dead job back to pending.
    async fn retry(&self, keys: &Keyspace, call: &Retry) -> Result<()>;
    /// One job's record and last error; `None` when there is no such job.
    async fn inspect(&self, keys: &Keyspace, call: &Inspect) -> Result<Option<Inspection>>;
    /// How many jobs the queue holds in each state.
    async fn stats(&self, keys: &Keyspace, call: &Stats) -> Result<StatsReply>;
    /// Admit many jobs in one round trip; each job's own outcome.
    async fn enqueue_batch(&self, keys: &Keyspace, calls: &[Enqueue]) -> Result<Vec<Result<bool>>>;
    /// Finish many claimed jobs in one round trip; each ack's own outcome.
    async fn ack_batch(&self, keys: &Keyspace, calls: &[Ack]) -> Result<Vec<Result<()>>>;
    /// Claim, or wait up to `wait` for a job when none is pending (see [`Executor::waits`]).
    async fn claim_waiting(&self, keys: &Keyspace, call: &Claim, wait: Duration) -> Result<Vec<Claimed>>;
    /// Whether `claim_waiting` waits without polling; when not, it claims at once.
    fn waits(&self) -> bool;
    /// Warnings about the server's set-up, for a worker to log at start
    /// (a `maxmemory-policy` that may evict jobs).
    async fn server_warnings(&self) -> Vec<String>;
    /// Let every claim waiting for work in `claim_waiting` return now, empty
    /// unless a job came: a stopping worker asks, so that its shutdown does
    /// not sit out `idle_wait`. Claims that start later wait as usual.
    async fn interrupt_waits(&self);
}

/// An executor that runs any transition from its KEYS and ARGV.
pub trait Dispatch: Send + Sync + 'static {
    /// Run `call` on the queue `keys` and read its reply.
    fn dispatch<T: Transition>(
        &self,
        keys: &Keyspace,
        call: &T,
    ) -> impl Future<Output = Result<T::Output>> + Send;

    /// Run many calls of one transition, in one round trip where the executor
    /// can (a pipeline). Each call gets its own result; the outer error is the
    /// connection's. The calls are not one transaction: each is atomic alone.
    fn dispatch_batch<T: Transition>(
        &self,
        keys: &Keyspace,
        calls: &[T],
    ) -> impl Future<Output = Result<Vec<Result<T::Output>>>> + Send;

    /// Claim, or wait up to `wait` for a job to arrive when none is pending.
    /// By default an executor cannot wait without polling and claims at once.
    fn claim_waiting(
        &self,
        keys: &Keyspace,
        call: &Claim,
        wait: Duration,
    ) -> impl Future<Output = Result<Vec<Claimed>>> + Send {
        let _ = wait;
        self.dispatch(keys, call)
    }

    /// Whether [`claim_waiting`](Dispatch::claim_waiting) really waits.
    fn waits(&self) -> bool {
        false
    }

    /// Warnings about the server's set-up; none by default.
    fn server_warnings(&self) -> impl Future<Output = Vec<String>> + Send {
        async { Vec::new() }
    }

    /// Let waiting claims return now (see [`Executor::interrupt_waits`]);
    /// nothing to do for an executor that does not wait.
    fn interrupt_waits(&self) -> impl Future<Output = ()> + Send {
        async {}
    }
}

/// Interrupts of waiting claims (see [`Executor::interrupt_waits`]), for the
/// executors that wait in this process: each interrupt ends every wait that
/// began before it.
#[derive(Default)]
struct Interrupts {
    count: std::sync::atomic::AtomicU64,
    told: tokio::sync::Notify,
}

impl Interrupts {
    fn interrupt(&self) {
        self.count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.told.notify_waiters();
    }

    fn count(&self) -> u64 {
        self.count.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// How many replicas must confirm each write before a call returns. Redis
/// replicates asynchronously: a master that acknowledges a write and dies
/// before any replica has it loses the write on failover. With this set, an
/// executor sends `WAIT <replicas> <timeout>` after its transitions, in the
/// same round trip, and answers [`Error::NotReplicated`](crate::Error) when
/// fewer confirm in time (the write stands on the master). It narrows the
/// window; it does not make Redis a consensus store (see RELIABILITY.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replication {
    /// Replicas that must confirm each write.
    pub replicas: u64,
    /// How long to wait for them.
    pub timeout: Duration,
}

/// A job store must never be evicted: warn unless `maxmemory-policy` is
/// `noeviction`. A server that will not say (CONFIG denied by an ACL) gets no warning.
async fn eviction_warnings<C>(conn: &C) -> Vec<String>
where
    C: redis::aio::ConnectionLike + Clone + Send,
{
    let policy: redis::RedisResult<(String, String)> =
        redis::cmd("CONFIG").arg("GET").arg("maxmemory-policy").query_async(&mut conn.clone()).await;
    match policy {
        Ok((_, policy)) if policy != "noeviction" => vec![format!(
            "maxmemory-policy is {policy}: Redis may evict jobs under memory pressure; set it to noeviction"
        )],
        _ => Vec::new(),
    }
}

/// Claim until a claim finds work, `wait` is over or the wait is
/// interrupted, sleeping between tries until `arrivals` is told a job may
/// have come. Listening starts before each claim, so an arrival (or an
/// interrupt) between the claim and the sleep is not missed.
async fn claim_on_arrival<F, Fut>(
    arrivals: &tokio::sync::Notify,
    interrupts: &Interrupts,
    wait: Duration,
    claim: F,
) -> Result<Vec<Claimed>>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<Vec<Claimed>>>,
{
    let deadline = tokio::time::Instant::now() + wait;
    let since = interrupts.count();
    loop {
        let arrival = arrivals.notified();
        let interrupted = interrupts.told.notified();
        tokio::pin!(arrival, interrupted);
        arrival.as_mut().enable();
        interrupted.as_mut().enable();
        let claimed = claim().await?;
        if !claimed.is_empty() || interrupts.count() != since {
            return Ok(claimed);
        }
        tokio::select! {
            () = &mut arrival => {}
            () = &mut interrupted => return Ok(claimed),
            () = tokio::time::sleep_until(deadline) => return Ok(claimed),
        }
    }
}

/// What a pipeline of calls answered: one reply per call, and when a WAIT
/// followed them, how many replicas confirmed the writes.
struct Sent {
    replies: Vec<Result<redis::RedisResult<redis::Value>>>,
    confirmed: Option<u64>,
}

impl Sent {
    /// The replies, or [`Error::NotReplicated`](crate::Error) when fewer
    /// replicas than `replication` asks for confirmed them.
    fn replicated(
        self,
        replication: Option<Replication>,
    ) -> Result<Vec<Result<redis::RedisResult<redis::Value>>>> {
        match (replication, self.confirmed) {
            (Some(Replication { replicas, .. }), Some(confirmed)) if confirmed < replicas => {
                Err(crate::Error::NotReplicated { confirmed, wanted: replicas })
            }
            _ => Ok(self.replies),
        }
    }
}

/// One reply per call: each call the host's checks refused (bad arguments)
/// gets its refusal and is never sent; the others go as one pipeline of the
/// commands `command` builds from each call's KEYS and ARGV, then a WAIT when
/// `replication` asks for one.
async fn pipelined<'c, C, T>(
    conn: &C,
    keys: &Keyspace,
    calls: impl IntoIterator<Item = &'c T>,
    command: impl Fn(Vec<String>, Vec<Vec<u8>>) -> redis::Cmd,
    replication: Option<Replication>,
) -> Result<Sent>
where
    C: redis::aio::ConnectionLike + Clone + Send,
    T: Transition + 'c,
{
    let mut pipe = redis::pipe();
    let mut replies: Vec<Option<Result<redis::RedisResult<redis::Value>>>> = Vec::new();
    for call in calls {
        match call.args() {
            Ok(args) => {
                pipe.add_command(command(call.keys(keys), args));
                replies.push(None);
            }
            Err(refused) => replies.push(Some(Err(refused))),
        }
    }
    let mut confirmed = None;
    let mut sent = if pipe.is_empty() {
        Vec::new()
    } else {
        if let Some(replication) = replication {
            pipe.cmd("WAIT").arg(replication.replicas).arg(replication.timeout.as_millis() as u64);
        }
        let mut sent = pipe
            .ignore_errors()
            .query_async::<Vec<redis::RedisResult<redis::Value>>>(&mut conn.clone())
            .await?;
        if replication.is_some() {
            confirmed = match sent.pop() {
                Some(Ok(redis::Value::Int(n))) => Some(n as u64),
                other => return Err(crate::Error::Reply(format!("WAIT answered {other:?}"))),
            };
        }
        sent
    }
    .into_iter();
    let replies = replies
        .into_iter()
        .map(|reply| reply.unwrap_or_else(|| Ok(sent.next().expect("a reply per command"))))
        .collect();
    Ok(Sent { replies, confirmed })
}

/// A pipelined reply read as `T`'s output, or its typed error.
fn read<T: Transition>(reply: Result<redis::RedisResult<redis::Value>>) -> Result<T::Output> {
    reply.and_then(|reply| reply.map_err(crate::Error::from)).and_then(T::parse)
}

async fn traced<D: Dispatch, T: Transition>(via: &D, keys: &Keyspace, call: &T) -> Result<T::Output> {
    let span = tracing::debug_span!("emq.transition", transition = T::NAME, queue = keys.queue());
    via.dispatch(keys, call).instrument(span).await
}

async fn traced_batch<D: Dispatch, T: Transition>(
    via: &D,
    keys: &Keyspace,
    calls: &[T],
) -> Result<Vec<Result<T::Output>>> {
    let span =
        tracing::debug_span!("emq.batch", transition = T::NAME, queue = keys.queue(), calls = calls.len());
    via.dispatch_batch(keys, calls).instrument(span).await
}

#[async_trait]
impl<D: Dispatch> Executor for D {
    async fn enqueue(&self, keys: &Keyspace, call: &Enqueue) -> Result<bool> {
        traced(self, keys, call).await
    }
    async fn claim(&self, keys: &Keyspace, call: &Claim) -> Result<Vec<Claimed>> {
        traced(self, keys, call).await
    }
    async fn ack(&self, keys: &Keyspace, call: &Ack) -> Result<()> {
        traced(self, keys, call).await
    }
    async fn fail(&self, keys: &Keyspace, call: &Fail) -> Result<Failed> {
        traced(self, keys, call).await
    }
    async fn extend(&self, keys: &Keyspace, call: &Extend) -> Result<u64> {
        traced(self, keys, call).await
    }
    async fn release(&self, keys: &Keyspace, call: &Release) -> Result<()> {
        traced(self, keys, call).await
    }
    async fn reap(&self, keys: &Keyspace, call: &Reap) -> Result<Reaped> {
        traced(self, keys, call).await
    }
    async fn promote(&self, keys: &Keyspace, call: &Promote) -> Result<u64> {
        traced(self, keys, call).await
    }
    async fn purge(&self, keys: &Keyspace, call: &Purge) -> Result<u64> {
        traced(self, keys, call).await
    }
    async fn cancel(&self, keys: &Keyspace, call: &Cancel) -> Result<bool> {
        traced(self, keys, call).await
    }
    async fn retry(&self, keys: &Keyspace, call: &Retry) -> Result<()> {
        traced(self, keys, call).await
    }
    async fn inspect(&self, keys: &Keyspace, call: &Inspect) -> Result<Option<Inspection>> {
        traced(self, keys, call).await
    }
    async fn stats(&self, keys: &Keyspace, call: &Stats) -> Result<StatsReply> {
        traced(self, keys, call).await
    }
    async fn enqueue_batch(&self, keys: &Keyspace, calls: &[Enqueue]) -> Result<Vec<Result<bool>>> {
        traced_batch(self, keys, calls).await
    }
    async fn ack_batch(&self, keys: &Keyspace, calls: &[Ack]) -> Result<Vec<Result<()>>> {
        traced_batch(self, keys, calls).await
    }
    async fn claim_waiting(&self, keys: &Keyspace, call: &Claim, wait: Duration) -> Result<Vec<Claimed>> {
        let span = tracing::debug_span!("emq.transition", transition = "claim", queue = keys.queue());
        Dispatch::claim_waiting(self, keys, call, wait).instrument(span).await
    }
    fn waits(&self) -> bool {
        Dispatch::waits(self)
    }
    async fn server_warnings(&self) -> Vec<String> {
        Dispatch::server_warnings(self).await
    }
    async fn interrupt_waits(&self) {
        Dispatch::interrupt_waits(self).await
    }
}
