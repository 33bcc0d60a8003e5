//! The native executor: each transition is one `EMQ.<NAME>` command of the
//! `echomq-module` Redis module, with the same KEYS and ARGV as its script.

use std::sync::Arc;
use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::Value;

use super::{Dispatch, Replication};
use crate::keyspace::Keyspace;
use crate::transition::{Claim, Claimed, Transition};
use crate::Result;

/// Runs transitions as the module's `EMQ.*` commands, over any async
/// connection of the `redis` crate.
#[derive(Clone)]
pub struct Native<C> {
    conn: C,
    /// For `EMQ.CLAIM … BLOCK`: a blocked claim holds its connection until it
    /// returns, so it gets one of its own, one claim at a time.
    blocking: Option<Arc<tokio::sync::Mutex<C>>>,
    replication: Option<Replication>,
}

impl<C> Native<C> {
    /// An executor over `conn`; each call clones it, so pass a multiplexed one.
    pub fn new(conn: C) -> Native<C> {
        Native { conn, blocking: None, replication: None }
    }

    /// Have `replication.replicas` replicas confirm each transition before
    /// it returns (WAIT in the same round trip; see [`Replication`]).
    pub fn with_replication(mut self, replication: Replication) -> Native<C> {
        self.replication = Some(replication);
        self
    }

    /// Wait for jobs with `EMQ.CLAIM … BLOCK` on `conn`, a connection used for
    /// nothing else whose response timeout is longer than any wait (or none).
    pub fn with_blocking_connection(mut self, conn: C) -> Native<C> {
        self.blocking = Some(Arc::new(tokio::sync::Mutex::new(conn)));
        self
    }
}

impl<C> Dispatch for Native<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    async fn dispatch<T: Transition>(&self, keys: &Keyspace, call: &T) -> Result<T::Output> {
        if self.replication.is_some() {
            return self.dispatch_batch(keys, std::slice::from_ref(call)).await?.remove(0);
        }
        let mut command = redis::cmd(T::COMMAND);
        command.arg(call.keys(keys)).arg(call.args()?);
        let mut conn = self.conn.clone();
        let reply: Value = command.query_async(&mut conn).await?;
        T::parse(reply)
    }

    /// `EMQ.CLAIM … BLOCK <ms>` on the blocking connection: the server wakes
    /// the claim when a job arrives. Without that connection, a plain claim.
    async fn claim_waiting(&self, keys: &Keyspace, call: &Claim, wait: Duration) -> Result<Vec<Claimed>> {
        let Some(blocking) = &self.blocking else { return self.dispatch(keys, call).await };
        // BLOCK 0 would wait without limit: wait at least a millisecond instead.
        let wait_ms = wait.as_millis().clamp(1, u128::from(*echomq_core::limits::LEASE_MS.end()));
        let mut command = redis::cmd(Claim::COMMAND);
        command.arg(call.keys(keys)).arg(call.args()?).arg("BLOCK").arg(wait_ms as u64);
        let mut conn = blocking.lock().await;
        let reply: Value = command.query_async(&mut *conn).await?;
        Claim::parse(reply)
    }

    fn waits(&self) -> bool {
        self.blocking.is_some()
    }

    async fn server_warnings(&self) -> Vec<String> {
        super::eviction_warnings(&self.conn).await
    }

    /// One pipeline of `EMQ.<NAME>` commands.
    async fn dispatch_batch<T: Transition>(
        &self,
        keys: &Keyspace,
        calls: &[T],
    ) -> Result<Vec<Result<T::Output>>> {
        let command = |keys: Vec<String>, args: Vec<Vec<u8>>| {
            let mut command = redis::cmd(T::COMMAND);
            command.arg(keys).arg(args);
            command
        };
        let replies = super::pipelined(&self.conn, keys, calls, command, self.replication)
            .await?
            .replicated(self.replication)?;
        Ok(replies.into_iter().map(super::read::<T>).collect())
    }
}

/// The executor a server supports best over `conn`: [`Native`] when the
/// module's commands are there, else [`Lua`](super::Lua). For waiting claims
/// as well, use [`connect`].
pub async fn detect<C>(conn: C) -> Result<Arc<dyn super::Executor>>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    Ok(if has_module(&conn).await? { Arc::new(Native::new(conn)) } else { Arc::new(super::Lua::new(conn)) })
}

/// Connect to the server `client` names and pick its best executor, over
/// reconnecting connections: [`Native`] with a second connection for its
/// blocking claims; else [`Lua`](super::Lua), woken by keyspace
/// notifications when the server sends them ([`Wakeups`](super::Wakeups)).
pub async fn connect(client: &redis::Client) -> Result<Arc<dyn super::Executor>> {
    connect_with(client, redis::aio::ConnectionManagerConfig::new()).await
}

/// [`connect`] with the connections' own settings (retries, time-outs). The
/// response time-out is always lifted: a blocking claim answers only when a
/// job comes or its wait is over.
pub async fn connect_with(
    client: &redis::Client,
    config: redis::aio::ConnectionManagerConfig,
) -> Result<Arc<dyn super::Executor>> {
    use redis::aio::ConnectionManager;
    let config = config.set_response_timeout(None);
    let conn = ConnectionManager::new_with_config(client.clone(), config.clone()).await?;
    if !has_module(&conn).await? {
        let lua = super::Lua::new(conn);
        return Ok(match super::Wakeups::start(client).await? {
            Some(wakeups) => Arc::new(lua.with_wakeups(wakeups)),
            None => Arc::new(lua),
        });
    }
    let blocking = ConnectionManager::new_with_config(client.clone(), config).await?;
    Ok(Arc::new(Native::new(conn).with_blocking_connection(blocking)))
}

/// Connect to a Redis Cluster and pick its best executor: [`Native`] when
/// the module is loaded (on every node: the check asks one), with a second
/// cluster connection for its blocking claims; else [`Lua`](super::Lua),
/// which polls, since keyspace notifications are each node's own.
///
/// Every transition names one queue's keys, all in the queue's `{hashtag}`
/// slot, so each call and each batch goes to one node; the cluster client
/// follows MOVED and ASK when a slot moves, and retries TRYAGAIN.
#[cfg(feature = "cluster")]
pub async fn connect_cluster(client: &redis::cluster::ClusterClient) -> Result<Arc<dyn super::Executor>> {
    let conn = client.get_async_connection().await?;
    if !has_module(&conn).await? {
        return Ok(Arc::new(super::Lua::new(conn)));
    }
    // A blocking claim answers only when a job comes or its wait is over: no response time-out.
    let blocking = client.get_async_connection_with_config(redis::cluster::ClusterConfig::new()).await?;
    Ok(Arc::new(Native::new(conn).with_blocking_connection(blocking)))
}

/// Whether the server has the module's commands (`COMMAND INFO EMQ.CLAIM`).
async fn has_module<C: ConnectionLike + Clone>(conn: &C) -> Result<bool> {
    let info: Value =
        redis::cmd("COMMAND").arg("INFO").arg(Claim::COMMAND).query_async(&mut conn.clone()).await?;
    Ok(matches!(&info, Value::Array(entries) if entries.iter().any(|e| *e != Value::Nil)))
}
