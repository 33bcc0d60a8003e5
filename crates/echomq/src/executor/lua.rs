//! The Lua executor: one script per transition (`lua/scripts.rs`), loaded
//! once per server and run with EVALSHA; a server that answers NOSCRIPT
//! (restarted, flushed, a new replica) gets the script again with SCRIPT
//! LOAD and the call is retried. An idle claim waits on the queue's wake-up
//! key with `BZPOPMIN`. The connection, blocking pool, replication and event
//! log are the shared Redis transport's (`transport.rs`).

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use echomq_core::{Name, Reply, Role};
use redis::aio::ConnectionLike;
use redis::Value;

use super::blocking::Blocking;
use super::replication::claim_reply;
use super::transport::{bzpopmin, reply, sized_command, Transport};
use super::{claimed_nothing, Call, Executor, Interrupts, Plain, Ran, Replication, Setup, BUSY_NAP};
use crate::{Error, Result};

#[cfg_attr(not(feature = "protocol"), allow(unreachable_pub))]
mod scripts;

use scripts::script;
#[cfg_attr(not(feature = "protocol"), allow(unreachable_pub))]
pub use scripts::script_source;

/// Runs transitions as Lua scripts on any Redis or Valkey ≥ 7, over any async
/// connection of the `redis` crate (a `ConnectionManager` reconnects by itself).
#[derive(Clone)]
pub struct Lua<C> {
    /// The connection, the blocking connections (`BZPOPMIN` on the wake-up
    /// key, `XREAD … BLOCK` on the event log) and the replication.
    redis: Transport<C>,
    /// Set once the server refused a wait on the wake-up key: poll from then on.
    wake_refused: Arc<AtomicBool>,
    interrupts: Arc<Interrupts>,
}

impl<C> std::fmt::Debug for Lua<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lua").finish_non_exhaustive()
    }
}

impl<C> Lua<C> {
    /// An executor over `conn`; each call clones it, so pass a multiplexed one.
    pub fn new(conn: C) -> Lua<C> {
        Lua { redis: Transport::new(conn), wake_refused: Arc::default(), interrupts: Arc::default() }
    }

    /// Block on the queue's wake-up key (`BZPOPMIN`) when a claim finds no
    /// work, and on reads of the event log (`XREAD … BLOCK`), each on a
    /// connection of its own that `open` makes (used for nothing else, with
    /// no response timeout shorter than a wait); they are kept for later
    /// waits. Without, an idle worker polls and a read that waits polls
    /// every 50 ms.
    pub fn with_blocking_connections<F, Fut>(mut self, open: F) -> Lua<C>
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = redis::RedisResult<C>> + Send + 'static,
    {
        self.redis.open_blocking(open);
        self
    }

    /// Every queue this executor serves is on its one server, not a Redis
    /// Cluster ([`connect`](crate::connect) says so): a worker of several
    /// queues then waits for them all with one `BZPOPMIN` over their
    /// wake-up keys (PROTOCOL.md §9), where a Cluster refuses keys of
    /// several slots in one command.
    #[must_use]
    pub fn on_one_server(mut self) -> Lua<C> {
        self.redis.one_server = true;
        self
    }

    /// Have `replication.replicas` replicas confirm each transition that
    /// writes, and each claim, before it returns (WAIT in the same round
    /// trip), but a heartbeat's (see [`Replication`]).
    pub fn with_replication(mut self, replication: Replication) -> Lua<C> {
        self.redis.replication = Some(replication);
        self
    }
}

#[async_trait]
impl<C> Executor for Lua<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    /// One call that writes goes as one EVALSHA (SCRIPT LOAD and again on
    /// NOSCRIPT); anything else as one pipeline of EVALSHA, EVALSHA_RO for a
    /// transition that only reads, in which the calls a server without
    /// their scripts refused with NOSCRIPT go again, once, after SCRIPT LOAD.
    async fn run(&self, calls: &[Call]) -> Result<Ran> {
        let replication = self.redis.replication_for(calls);
        match calls {
            [] => Ok(Ran::replies(Vec::new())),
            [call] if replication.is_none() && !call.name.describe().reads_only() => {
                let command = evalsha(call);
                let mut sent = self.redis.query_one(&command).await;
                if matches!(&sent, Err(err) if err.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript))
                {
                    script(call.name).load_async(&mut self.redis.conn.clone()).await?;
                    sent = self.redis.query_one(&command).await;
                }
                Ok(Ran::replies(vec![sent.map_err(Error::from).and_then(reply)]))
            }
            calls => self.pipeline(calls, replication).await,
        }
    }

    /// With blocking connections, claim and wait on the queue's wake-up key
    /// (`BZPOPMIN`, PROTOCOL.md §9); without, claim at once (the worker polls).
    async fn claim_waiting(&self, claim: &Call, wait: Duration) -> Result<Reply> {
        let run = || async { claim_reply(self.run(std::slice::from_ref(claim)).await?) };
        let key = |role| Name::Claim.describe().position(role).and_then(|at| claim.keys.get(at));
        match (&self.redis.blocking, key(Role::Wake), key(Role::Pending)) {
            (Some(blocking), Some(wake), Some(pending)) if self.waits() => {
                // Unknown (a refusal, a broken connection) counts as none: the
                // claim waits as it would have, and its next try says what broke.
                let waiting = || async {
                    let count: redis::RedisResult<u64> =
                        redis::cmd("ZCARD").arg(pending).query_async(&mut self.redis.conn.clone()).await;
                    count.unwrap_or(0)
                };
                let interrupts = &self.interrupts;
                claim_on_wake(blocking, interrupts, &self.wake_refused, wake, wait, run, waiting).await
            }
            _ => run().await,
        }
    }

    fn setup(&self) -> Setup {
        Setup {
            waits: self.waits(),
            waits_on_many: self.redis.pops_any() && self.waits(),
            waits_each: self.redis.pops_each() && self.waits(),
            replication: self.redis.replication,
        }
    }

    async fn wait_on_many(&self, wakes: &[String], wait: Duration) -> Result<Option<usize>> {
        self.redis.pop_any(wakes, wait).await
    }

    async fn interrupt_waits(&self) {
        self.interrupts.interrupt();
        self.redis.unblock_waits().await;
    }

    fn plain(&self) -> &dyn Plain {
        &self.redis
    }
}

impl<C> Lua<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    /// Whether a claim waits on the wake-up key: with blocking connections,
    /// until the server refused the pop.
    fn waits(&self) -> bool {
        self.redis.blocking.is_some() && !self.wake_refused.load(Ordering::SeqCst)
    }

    /// The calls as one pipeline, with a WAIT after them when `replication`
    /// is given (see [`Executor::run`]'s use of `confirms`).
    async fn pipeline(&self, calls: &[Call], replication: Option<Replication>) -> Result<Ran> {
        let mut sent = self.redis.pipelined(calls, evalsha, replication).await?;
        let unknown = |reply: &Result<Value>| matches!(reply, Err(err) if err.redis_error().is_some_and(|err| err.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript)));
        let again: Vec<usize> = (0..sent.replies.len()).filter(|&i| unknown(&sent.replies[i])).collect();
        if !again.is_empty() {
            let mut loaded = Vec::new();
            for &i in &again {
                if !loaded.contains(&calls[i].name) {
                    script(calls[i].name).load_async(&mut self.redis.conn.clone()).await?;
                    loaded.push(calls[i].name);
                }
            }
            let retried =
                self.redis.pipelined(again.iter().map(|&i| &calls[i]), evalsha, replication).await?;
            // The second WAIT covers the first pipeline's writes as well.
            sent.confirmed = retried.confirmed;
            for (i, reply) in again.into_iter().zip(retried.replies) {
                sent.replies[i] = reply;
            }
        }
        Ok(sent.ran(replication))
    }
}

/// `call` as the command that runs its script: EVALSHA, or EVALSHA_RO for
/// a transition that only reads.
fn evalsha(call: &Call) -> redis::Cmd {
    let eval = if call.name.describe().reads_only() { "EVALSHA_RO" } else { "EVALSHA" };
    let mut command = sized_command(call, &[eval, script(call.name).get_hash()]);
    command.arg(call.keys.len()).arg(&call.keys).arg(&call.args);
    command
}

/// Claim until a claim finds work, `wait` is over or the wait is
/// interrupted, waiting between tries on the queue's wake-up key `wake` with
/// `BZPOPMIN` on a connection of its own (PROTOCOL.md §9): any Redis, no
/// module, no notifications. A job that comes after an empty claim has set
/// the key by the time the pop looks, so no arrival is missed; each pop takes
/// the key's one member, so one arrival wakes one waiting worker (its claim
/// tells the next when it left jobs behind).
///
/// A claim that answered `[]` while `pending` (what `pending` counts, ZCARD
/// of the queue's pending set) says jobs wait took only ids without a record
/// (PROTOCOL.md §7 CLAIM): it set no wake-up, so it claims again, for as long
/// as each try leaves pending smaller, before it waits.
///
/// A server that refuses the pop for good (`NOPERM`: a user without
/// `+bzpopmin`) sets `refused`, said once: the executor's claims poll from
/// then on. Any other error is the call's, as a claim's would be.
async fn claim_on_wake<C, F, Fut, P, PFut>(
    blocking: &Blocking<C>,
    interrupts: &Interrupts,
    refused: &std::sync::atomic::AtomicBool,
    wake: &str,
    wait: Duration,
    claim: F,
    pending: P,
) -> Result<Reply>
where
    C: redis::aio::ConnectionLike + Send,
    F: Fn() -> Fut,
    Fut: Future<Output = Result<Reply>>,
    P: Fn() -> PFut,
    PFut: Future<Output = u64>,
{
    let deadline = tokio::time::Instant::now() + wait;
    let since = interrupts.count();
    let mut pending_before: Option<u64> = None;
    loop {
        let claimed = claim().await;
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if !claimed_nothing(&claimed) || interrupts.count() != since || left.is_zero() {
            return claimed;
        }
        if matches!(&claimed, Ok(Reply::Array(jobs)) if jobs.is_empty()) {
            let now = pending().await;
            if now > 0 && pending_before.is_none_or(|before| now < before) {
                pending_before = Some(now);
                continue;
            }
        }
        match blocking.query(&bzpopmin(&[wake], left)).await? {
            // Every blocking connection is busy: nap as a polling worker would.
            None => {
                tokio::time::sleep(left.min(BUSY_NAP)).await;
                return claimed;
            }
            // Told: claim again.
            Some(Ok(Value::Array(popped))) if !popped.is_empty() => {
                pending_before = None;
                continue;
            }
            // The wait ran out, or a stopping worker ended it (CLIENT UNBLOCK).
            Some(Ok(_)) => return claimed,
            // Only a refusal for good (an ACL without `+bzpopmin`) turns the
            // waits off; anything else (a restart's LOADING) is the claim's trouble.
            Some(Err(err)) if err.code() != Some("NOPERM") => return Err(err.into()),
            Some(Err(err)) => {
                if !refused.swap(true, std::sync::atomic::Ordering::SeqCst) {
                    tracing::warn!(
                        error = %err,
                        "the server refused BZPOPMIN on {wake}; idle claims poll instead (grant +bzpopmin, SECURITY.md)"
                    );
                }
                return claimed;
            }
        }
    }
}
