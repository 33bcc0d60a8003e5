//! One Redis transport under the Lua and Native executors: the connection
//! calls go on, the connections of their own for commands that block, the
//! replicas that confirm writes, and what every Redis answers alike (server
//! facts, the event log). The executors differ only in how a [`Call`]
//! becomes a command (EVALSHA of its script, or `EMQ.<NAME>`) and in how an
//! idle claim waits.

use crate::ErrorKind;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::Value;

use async_trait::async_trait;
use echomq_core::{Code, Refusal, Reply};

use super::blocking::{Blocking, Open};
use super::plain::{answer, plain_command};
use super::replication::{confirms, Sent};
use super::stream::read_stream_on;
use super::{Answer, Call, Command, Plain, Replication, StreamEntry};
use crate::{Error, Result};

/// The transport: what a Redis executor holds, whatever it sends.
#[derive(Clone)]
pub(super) struct Transport<C> {
    /// The connection every call goes on; each call clones it, so a multiplexed one.
    pub(super) conn: C,
    /// Connections of their own for commands that block (a waiting claim,
    /// `XREAD … BLOCK`), when the executor was given any.
    pub(super) blocking: Option<Arc<Blocking<C>>>,
    /// The replicas that must confirm each write, when asked for.
    pub(super) replication: Option<Replication>,
    /// Whether every queue is on this one server (set by [`connect`](super::connect),
    /// which makes no Cluster connection): one `BZPOPMIN` may then name many
    /// queues' wake-up keys, which a Cluster refuses (`CROSSSLOT`).
    pub(super) one_server: bool,
    /// Set once the server refused a `BZPOPMIN` over many queues.
    pub(super) many_refused: Arc<AtomicBool>,
}

impl<C> Transport<C> {
    /// A transport over `conn`, with no blocking connections and no replication.
    pub(super) fn new(conn: C) -> Transport<C> {
        Transport { conn, blocking: None, replication: None, one_server: false, many_refused: Arc::default() }
    }

    /// Block on connections of their own that `open` makes, kept for later waits.
    pub(super) fn open_blocking<F, Fut>(&mut self, open: F)
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = redis::RedisResult<C>> + Send + 'static,
    {
        let open: Open<C> = Box::new(move || Box::pin(open()));
        self.blocking = Some(Arc::new(Blocking::new(Vec::new(), Some(open))));
    }

    /// Block on `conn` alone: one wait at a time.
    pub(super) fn block_on(&mut self, conn: C) {
        self.blocking = Some(Arc::new(Blocking::new(vec![conn], None)));
    }

    /// Whether [`pop_any`](Transport::pop_any) can wait for one key: see [`Setup::waits_each`](super::Setup::waits_each).
    pub(super) fn pops_each(&self) -> bool {
        self.blocking.is_some() && !self.many_refused.load(Ordering::SeqCst)
    }

    /// Whether [`pop_any`](Transport::pop_any) can wait: see [`Executor::waits_on_many`](super::Executor::waits_on_many).
    pub(super) fn pops_any(&self) -> bool {
        self.one_server && self.blocking.is_some() && !self.many_refused.load(Ordering::SeqCst)
    }

    /// The replication a run of `calls` waits for: the executor's, when any
    /// of them writes what a caller relies on (see [`confirms`]).
    pub(super) fn replication_for(&self, calls: &[Call]) -> Option<Replication> {
        self.replication.filter(|_| confirms(calls))
    }
}

impl<C> Transport<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    /// One command's reply: an error reply is the command's error, and an array
    /// keeps the error replies inside it (ACKMANY's per-job refusals), where
    /// `query_async` would make the first of them the whole reply's.
    pub(super) async fn query_one(&self, command: &redis::Cmd) -> redis::RedisResult<Value> {
        match self.conn.clone().req_packed_command(command).await? {
            Value::ServerError(err) => Err(err.into()),
            value => Ok(value),
        }
    }

    /// Send `calls` as one pipeline of the commands `command` builds, then a
    /// WAIT when `replication` asks for one. One reply per call.
    pub(super) async fn pipelined<'c>(
        &self,
        calls: impl IntoIterator<Item = &'c Call>,
        command: impl Fn(&Call) -> redis::Cmd,
        replication: Option<Replication>,
    ) -> Result<Sent> {
        let mut pipe = redis::pipe();
        for call in calls {
            pipe.add_command(command(call));
        }
        if let Some(replication) = replication {
            pipe.add_command(super::replication::wait_for(replication));
        }
        let mut sent = pipe
            .ignore_errors()
            .query_async::<Vec<redis::RedisResult<Value>>>(&mut self.conn.clone())
            .await?;
        let mut confirmed = None;
        if replication.is_some() {
            confirmed = match sent.pop() {
                Some(Ok(Value::Int(n))) => Some(n as u64),
                other => return Err(Error::new(ErrorKind::Reply, format!("WAIT answered {other:?}"))),
            };
        }
        let replies = sent.into_iter().map(|reply| reply.map_err(Error::from)).collect();
        Ok(Sent { replies, confirmed })
    }

    /// One `BZPOPMIN` over `wakes` for up to `wait`, on a blocking
    /// connection: the index of the key it popped (see
    /// [`Executor::wait_on_many`](super::Executor::wait_on_many)). A user
    /// refused the pop for good (`NOPERM`) is told once, and
    /// [`pops_any`](Transport::pops_any) says no from then on.
    pub(super) async fn pop_any(&self, wakes: &[String], wait: Duration) -> Result<Option<usize>> {
        let Some(blocking) = self.blocking.as_ref().filter(|_| !wakes.is_empty()) else {
            tokio::time::sleep(wait.min(super::BUSY_NAP)).await;
            return Ok(None);
        };
        match blocking.query(&bzpopmin(wakes, wait)).await? {
            // Every blocking connection is busy: nap as a polling worker would.
            None => {
                tokio::time::sleep(wait.min(super::BUSY_NAP)).await;
                Ok(None)
            }
            Some(Ok(Value::Array(popped))) => Ok(match popped.first() {
                Some(Value::BulkString(key)) => {
                    wakes.iter().position(|wake| wake.as_bytes() == key.as_slice())
                }
                _ => None,
            }),
            Some(Ok(_)) => Ok(None),
            Some(Err(err)) if err.code() == Some("NOPERM") => {
                // Only slower (the per-queue waits the refusal leaves work as
                // before, EMQ.CLAIM … BLOCK on native), so not a warning.
                if !self.many_refused.swap(true, Ordering::SeqCst) {
                    tracing::info!(
                        error = %err,
                        "the server refused BZPOPMIN: a worker of several queues claims and waits for each on its own (grant +bzpopmin to claim for them in turns, SECURITY.md)"
                    );
                }
                Ok(None)
            }
            Some(Err(err)) => Err(err.into()),
        }
    }

    /// End every wait on the blocking connections now (see [`unblock_waits`]).
    pub(super) async fn unblock_waits(&self) {
        if let Some(blocking) = &self.blocking {
            unblock_waits(&self.conn, blocking).await;
        }
    }
}

/// `BZPOPMIN` of `keys` for up to `wait`: seconds to the millisecond (a
/// float timeout: Redis ≥ 6), at least one.
pub(super) fn bzpopmin(keys: &[impl redis::ToRedisArgs], wait: Duration) -> redis::Cmd {
    let mut pop = redis::cmd("BZPOPMIN");
    pop.arg(keys).arg(format!("{:.3}", wait.as_secs_f64().max(0.001)));
    pop
}

/// A transition's reply as the core types it: a Lua script's or the
/// module's, off the wire. An error inside an array (ACKMANY's per-job
/// refusals) is the item's [`Refusal`]; one with a code outside the
/// protocol's is the whole reply's error.
pub(super) fn reply(value: Value) -> Result<Reply> {
    Ok(match value {
        Value::Int(n) => Reply::Int(n),
        Value::BulkString(bytes) => Reply::Bulk(bytes),
        Value::SimpleString(text) | Value::VerbatimString { text, .. } => Reply::Bulk(text.into_bytes()),
        Value::Okay => Reply::Bulk(b"OK".to_vec()),
        Value::Nil => Reply::Nil,
        Value::Array(items) | Value::Set(items) => {
            Reply::Array(items.into_iter().map(reply).collect::<Result<_>>()?)
        }
        Value::ServerError(err) => {
            let refusal = Code::parse(err.code())
                .map(|code| Refusal { code, text: err.details().unwrap_or_default().to_owned() });
            match refusal {
                Some(refusal) => Reply::Error(refusal),
                None => return Err(Error::from(redis::RedisError::from(err))),
            }
        }
        other => {
            return Err(Error::new(
                ErrorKind::Reply,
                format!("a reply the protocol does not give: {other:?}"),
            ))
        }
    })
}

#[async_trait]
impl<C> Plain for Transport<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    /// One pipeline of the commands, each answer read by its command.
    async fn send(&self, commands: &[Command]) -> Result<Vec<Result<Answer>>> {
        let now = || {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            u64::try_from(now.as_millis()).unwrap_or(u64::MAX)
        };
        let mut pipe = redis::pipe();
        for command in commands {
            pipe.add_command(plain_command(command, now));
        }
        let replies = pipe
            .ignore_errors()
            .query_async::<Vec<redis::RedisResult<Value>>>(&mut self.conn.clone())
            .await?;
        Ok(commands.iter().zip(replies).map(|(command, reply)| answer(command, reply?)).collect())
    }

    async fn read_stream(
        &self,
        key: &str,
        after: &str,
        count: usize,
        wait: Duration,
    ) -> Result<Vec<StreamEntry>> {
        read_stream_on(&self.conn, self.blocking.as_deref(), key, after, count, wait).await
    }
}

/// A command that starts with `head`, with room for `call`'s key count,
/// keys and arguments after it: built at its size, a pipeline of
/// enqueues no longer grows each command's buffer a few times over
/// (callgrind, BENCHMARKS.md).
pub(super) fn sized_command(call: &Call, head: &[&str]) -> redis::Cmd {
    let words = head.len() + 1 + call.keys.len() + call.args.len();
    let bytes = 4
        + head.iter().map(|word| word.len()).sum::<usize>()
        + call.keys.iter().map(String::len).sum::<usize>()
        + call.args.iter().map(Vec::len).sum::<usize>();
    let mut command = redis::Cmd::with_capacity(words, bytes);
    for word in head {
        command.arg(*word);
    }
    command
}

/// End every wait on `blocking`'s connections now (`CLIENT UNBLOCK`, sent on
/// `conn`): a stopping worker's. A user who may not send it waits its time out.
async fn unblock_waits<C>(conn: &C, blocking: &Blocking<C>)
where
    C: redis::aio::ConnectionLike + Clone + Send,
{
    for id in blocking.waiting_ids() {
        let unblocked: redis::RedisResult<i64> =
            redis::cmd("CLIENT").arg("UNBLOCK").arg(id).query_async(&mut conn.clone()).await;
        if let Err(err) = unblocked {
            tracing::debug!(error = %err, "cannot end a blocked wait early; it waits its time out");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_inside_a_reply_is_its_items_refusal() {
        let fenced = redis::make_extension_error("EMQFENCE".into(), Some("stale".into()));
        let fenced = Value::ServerError(redis::ServerError::try_from(fenced).unwrap());
        let read = reply(Value::Array(vec![Value::Int(1), fenced])).unwrap();
        assert_eq!(
            read,
            Reply::Array(vec![
                Reply::Int(1),
                Reply::Error(Refusal { code: Code::Fence, text: "stale".into() })
            ])
        );
        let other = redis::make_extension_error("WRONGTYPE".into(), Some("no".into()));
        let other = Value::ServerError(redis::ServerError::try_from(other).unwrap());
        assert!(reply(Value::Array(vec![other])).is_err());
    }
}
