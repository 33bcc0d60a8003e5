//! The native executor: each transition is one `EMQ.<NAME>` command of the
//! `echomq-module` Redis module, with a key count and then the same KEYS and
//! ARGV as its script, as `EVALSHA` takes them. A host uses the module only
//! when its `EMQ.VERSION` answers the host's major version of the protocol
//! (`connect.rs`). The connection, blocking pool, replication and event log
//! are the shared Redis transport's (`transport.rs`).

use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;
use echomq_core::Reply;
use redis::aio::ConnectionLike;
#[cfg(feature = "cluster")]
use redis::Value;

use super::replication::{claim_reply, short_of, wait_for};
use super::transport::{reply, sized_command, Transport};
use super::{claimed_nothing, Call, Executor, Plain, Ran, Replication, Setup, BUSY_NAP};
use crate::{Error, Result};

/// Runs transitions as the module's `EMQ.*` commands, over any async
/// connection of the `redis` crate.
#[derive(Clone)]
pub struct Native<C> {
    /// The connection, the blocking connections (for `EMQ.CLAIM … BLOCK`: a
    /// blocked claim holds its connection until it returns, so each waiting
    /// claim gets a connection of its own) and the replication.
    redis: Transport<C>,
}

impl<C> std::fmt::Debug for Native<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Native").finish_non_exhaustive()
    }
}

impl<C> Native<C> {
    /// An executor over `conn`; each call clones it, so pass a multiplexed one.
    pub fn new(conn: C) -> Native<C> {
        Native { redis: Transport::new(conn) }
    }

    /// Wait for jobs with `EMQ.CLAIM … BLOCK` on `conn`, a connection used for
    /// nothing else whose response timeout is longer than any wait (or none).
    /// One claim waits at a time; a claim that finds it busy claims at once
    /// and, finding nothing, naps 20 ms.
    /// A worker over several queues wants [`with_blocking_connections`](Native::with_blocking_connections).
    pub fn with_blocking_connection(mut self, conn: C) -> Native<C> {
        self.redis.block_on(conn);
        self
    }

    /// Wait for jobs with `EMQ.CLAIM … BLOCK`, each waiting claim on a
    /// connection of its own that `open` makes (used for nothing else, with no
    /// response timeout shorter than a wait); they are kept for later claims.
    pub fn with_blocking_connections<F, Fut>(mut self, open: F) -> Native<C>
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
    pub fn on_one_server(mut self) -> Native<C> {
        self.redis.one_server = true;
        self
    }

    /// Have `replication.replicas` replicas confirm each transition that
    /// writes, and each claim, before it returns (WAIT in the same round
    /// trip), but a heartbeat's (see [`Replication`]).
    pub fn with_replication(mut self, replication: Replication) -> Native<C> {
        self.redis.replication = Some(replication);
        self
    }
}

#[async_trait]
impl<C> Executor for Native<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    /// One call as one `EMQ.<NAME>` command; more as one pipeline of them,
    /// with a WAIT after them when replication asks for one and any writes
    /// what a caller relies on or claims (not a heartbeat alone).
    async fn run(&self, calls: &[Call]) -> Result<Ran> {
        let replication = self.redis.replication_for(calls);
        match calls {
            [] => Ok(Ran::replies(Vec::new())),
            [call] if replication.is_none() => {
                let sent = self.redis.query_one(&command(call)).await;
                Ok(Ran::replies(vec![sent.map_err(Error::from).and_then(reply)]))
            }
            calls => Ok(self.redis.pipelined(calls, command, replication).await?.ran(replication)),
        }
    }

    /// `EMQ.CLAIM … BLOCK <ms>` on a blocking connection: the server wakes
    /// the claim when a job arrives. Without one free, a plain claim. With
    /// replication, a WAIT follows it on the same connection (see [`Replication`]).
    async fn claim_waiting(&self, claim: &Call, wait: Duration) -> Result<Reply> {
        let run_now = || async { claim_reply(self.run(std::slice::from_ref(claim)).await?) };
        let Some(blocking) = &self.redis.blocking else { return run_now().await };
        // BLOCK 0 would wait without limit: wait at least a millisecond instead.
        let wait_ms = wait.as_millis().clamp(1, u128::from(*echomq_core::limits::LEASE_MS.end()));
        let mut blocked = command(claim);
        blocked.arg("BLOCK").arg(wait_ms as u64);
        let confirm = self.redis.replication.map(wait_for);
        let Some((sent, confirmed)) = blocking.query_then(&blocked, confirm.as_ref()).await? else {
            // Every blocking connection is busy: claim, and nap as a polling worker would.
            let claimed = run_now().await;
            if claimed_nothing(&claimed) {
                tokio::time::sleep(wait.min(BUSY_NAP)).await;
            }
            return claimed;
        };
        let claimed = reply(sent?);
        if let (Some(replication), Some(confirmed)) = (self.redis.replication, confirmed) {
            short_of(replication, &claimed, confirmed);
        }
        claimed
    }

    fn setup(&self) -> Setup {
        let waits = self.redis.blocking.is_some();
        Setup {
            waits,
            waits_on_many: self.redis.pops_any() && waits,
            waits_each: self.redis.pops_each() && waits,
            replication: self.redis.replication,
        }
    }

    async fn wait_on_many(&self, wakes: &[String], wait: Duration) -> Result<Option<usize>> {
        self.redis.pop_any(wakes, wait).await
    }

    /// `CLIENT UNBLOCK` each blocked claim's connection: the module answers
    /// it as a wait that ran out, with no job.
    async fn interrupt_waits(&self) {
        self.redis.unblock_waits().await;
    }

    fn plain(&self) -> &dyn Plain {
        &self.redis
    }
}

/// The call as its `EMQ.<NAME>` command: `EMQ.<NAME> numkeys key… arg…`.
fn command(call: &Call) -> redis::Cmd {
    let mut command = sized_command(call, &[call.name.describe().command]);
    command.arg(call.keys.len()).arg(&call.keys).arg(&call.args);
    command
}

/// A cluster connection for [`Native`]: it sends each `EMQ.*` command, and
/// each pipeline of them, to the node of the command's first key. The
/// cluster client routes a command it does not know by its first argument,
/// which for `EMQ.<NAME> numkeys key…` is the count (as it knows to skip
/// `EVALSHA`'s); every call would then be redirected. Other commands (WAIT,
/// `CLIENT UNBLOCK`, stream reads) go as the client routes them.
#[cfg(feature = "cluster")]
#[derive(Clone)]
pub struct ByFirstKey(pub redis::cluster_async::ClusterConnection);

#[cfg(feature = "cluster")]
impl std::fmt::Debug for ByFirstKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ByFirstKey").finish_non_exhaustive()
    }
}

#[cfg(feature = "cluster")]
impl ByFirstKey {
    /// The node of `command`'s first key, when it is a native command with keys.
    fn route(command: &redis::Cmd) -> Option<redis::cluster_routing::Route> {
        let mut words = command.args_iter().map(|arg| match arg {
            redis::Arg::Simple(word) => word,
            _ => &[],
        });
        let name = words.next()?;
        if !name.get(..4)?.eq_ignore_ascii_case(b"EMQ.") {
            return None;
        }
        let count = std::str::from_utf8(words.next()?).ok()?.parse::<usize>().ok()?;
        let key = words.next().filter(|_| count > 0)?;
        Some(redis::cluster_routing::Route::with_key(key, redis::cluster_routing::SlotAddr::Master))
    }
}

#[cfg(feature = "cluster")]
impl ConnectionLike for ByFirstKey {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a redis::Cmd) -> redis::RedisFuture<'a, Value> {
        use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
        match ByFirstKey::route(cmd) {
            Some(route) => {
                let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route));
                Box::pin(self.0.route_command(cmd.clone(), routing))
            }
            None => self.0.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> redis::RedisFuture<'a, Vec<Value>> {
        use redis::cluster_routing::SingleNodeRoutingInfo;
        match pipeline.cmd_iter().find_map(ByFirstKey::route) {
            Some(route) => {
                let route = SingleNodeRoutingInfo::SpecificNode(route);
                Box::pin(self.0.route_pipeline(pipeline.clone(), offset, count, route))
            }
            None => self.0.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        self.0.get_db()
    }
}
