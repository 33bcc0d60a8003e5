//! One Redis transport under the Lua and Native executors: the connection
//! calls go on, the connections of their own for commands that block, the
//! replicas that confirm writes, and what every Redis answers alike (server
//! facts, the event log). The executors differ only in how a [`Call`]
//! becomes a command (EVALSHA of its script, or `EMQ.<NAME>`) and in how an
//! idle claim waits.

use crate::ErrorKind;
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::Value;

use super::blocking::{Blocking, Open};
use super::replication::{confirms, Sent};
use super::stream::{read_stream_on, stream_last_on};
use super::{Call, Replication, ServerRun, StreamEntry};
use crate::keyspace;
use crate::workers::{Noted, Registration};
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
    /// Set once the server refused the upkeep's reads ([`due::read`](super::due::read)).
    pub(super) due_refused: Arc<AtomicBool>,
}

impl<C> Transport<C> {
    /// A transport over `conn`, with no blocking connections and no replication.
    pub(super) fn new(conn: C) -> Transport<C> {
        Transport {
            conn,
            blocking: None,
            replication: None,
            one_server: false,
            many_refused: Arc::default(),
            due_refused: Arc::default(),
        }
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
            pipe.cmd("WAIT").arg(replication.replicas).arg(replication.timeout.as_millis() as u64);
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

    /// Warnings about the server's set-up (see [`eviction_warnings`]).
    pub(super) async fn server_warnings(&self) -> Vec<String> {
        eviction_warnings(&self.conn).await
    }

    /// Which run of the server answers (see [`server_run_on`]).
    pub(super) async fn server_run(&self) -> Option<ServerRun> {
        server_run_on(&self.conn).await
    }

    /// Entries of the stream `key` after `after`, waiting up to `wait` for the
    /// first on a blocking connection when one is free.
    pub(super) async fn read_stream(
        &self,
        key: &str,
        after: &str,
        count: usize,
        wait: Duration,
    ) -> Result<Vec<StreamEntry>> {
        read_stream_on(&self.conn, self.blocking.as_deref(), key, after, count, wait).await
    }

    /// The id of the stream `key`'s newest entry.
    pub(super) async fn stream_last(&self, key: &str) -> Result<Option<String>> {
        stream_last_on(&self.conn, key).await
    }

    /// `ZADD key GT <now ms> name`: the queue registry (PROTOCOL.md §2).
    pub(super) async fn register(&self, key: &str, name: &str) -> Result<()> {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let mut conn = self.conn.clone();
        let _: i64 = redis::cmd("ZADD")
            .arg(key)
            .arg("GT")
            .arg(now.as_millis() as u64)
            .arg(name)
            .query_async(&mut conn)
            .await?;
        Ok(())
    }

    /// Up to `limit` names of the registry `key`, the most recently seen,
    /// in name order.
    pub(super) async fn registered(&self, key: &str, limit: usize) -> Result<Vec<String>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut conn = self.conn.clone();
        let mut names: Vec<String> =
            redis::cmd("ZRANGE").arg(key).arg(0).arg(limit - 1).arg("REV").query_async(&mut conn).await?;
        names.sort_unstable();
        Ok(names)
    }

    /// `ZREM key name`.
    pub(super) async fn unregister(&self, key: &str, name: &str) -> Result<()> {
        let mut conn = self.conn.clone();
        let _: i64 = redis::cmd("ZREM").arg(key).arg(name).query_async(&mut conn).await?;
        Ok(())
    }

    /// A worker's registration (PROTOCOL.md §2): `HSET` and `PEXPIRE` of its
    /// hash in one round trip, then `ZADD emq:workers`. Two keys in two
    /// slots, so two round trips, not one transaction: the hash first, so
    /// that a member is never noted before its hash.
    pub(super) async fn beat_worker(&self, registration: &Registration) -> Result<()> {
        let key = keyspace::worker(&registration.id);
        let mut conn = self.conn.clone();
        let mut hash = redis::pipe();
        let set = hash.cmd("HSET").arg(&key);
        for (field, value) in &registration.fields {
            set.arg(field.as_str()).arg(value);
        }
        hash.ignore().cmd("PEXPIRE").arg(&key).arg(ttl_ms(registration.ttl)).ignore();
        let () = hash.query_async(&mut conn).await?;
        let _: i64 = redis::cmd("ZADD")
            .arg(keyspace::WORKERS)
            .arg(registration.beat)
            .arg(&registration.id)
            .query_async(&mut conn)
            .await?;
        Ok(())
    }

    /// The worker registry's `limit` latest members with their scores, then
    /// each one's hash (one HGETALL each, sent together on the connection).
    pub(super) async fn noted_workers(&self, limit: usize) -> Result<Vec<Noted>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut conn = self.conn.clone();
        let members: Vec<(String, f64)> = redis::cmd("ZRANGE")
            .arg(keyspace::WORKERS)
            .arg(0)
            .arg(limit - 1)
            .arg("REV")
            .arg("WITHSCORES")
            .query_async(&mut conn)
            .await?;
        let hashes = members.iter().map(|(id, _)| {
            let mut conn = self.conn.clone();
            async move {
                redis::cmd("HGETALL")
                    .arg(keyspace::worker(id))
                    .query_async::<HashMap<String, String>>(&mut conn)
                    .await
            }
        });
        let hashes = futures_util::future::join_all(hashes).await;
        members
            .into_iter()
            .zip(hashes)
            .map(|((id, beat), fields)| {
                let fields = fields?;
                Ok(Noted { id, beat: beat as u64, fields: (!fields.is_empty()).then_some(fields) })
            })
            .collect()
    }

    /// `ZREM emq:workers ids…` and `ZREMRANGEBYSCORE emq:workers -inf (before`.
    pub(super) async fn forget_workers(&self, ids: &[String], before: u64) -> Result<()> {
        let mut conn = self.conn.clone();
        if !ids.is_empty() {
            let _: i64 = redis::cmd("ZREM").arg(keyspace::WORKERS).arg(ids).query_async(&mut conn).await?;
        }
        let _: i64 = redis::cmd("ZREMRANGEBYSCORE")
            .arg(keyspace::WORKERS)
            .arg("-inf")
            .arg(format!("({before}"))
            .query_async(&mut conn)
            .await?;
        Ok(())
    }

    /// `DEL emq:worker:<id>`, then `ZREM emq:workers <id>`.
    pub(super) async fn unregister_worker(&self, id: &str) -> Result<()> {
        let mut conn = self.conn.clone();
        let _: i64 = redis::cmd("DEL").arg(keyspace::worker(id)).query_async(&mut conn).await?;
        let _: i64 = redis::cmd("ZREM").arg(keyspace::WORKERS).arg(id).query_async(&mut conn).await?;
        Ok(())
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

    /// What each of `queues` has due (see [`Executor::upkeep_due`](super::Executor::upkeep_due)).
    pub(super) async fn upkeep_due(&self, queues: &[keyspace::Keyspace]) -> Option<Vec<super::UpkeepDue>> {
        super::due::read(&self.conn, queues, &self.due_refused).await
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

/// A TTL in whole ms for PEXPIRE: at least 1 (0 would delete the key).
pub(super) fn ttl_ms(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
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

/// [`Executor::server_run`] on `conn`: one `INFO server persistence`.
async fn server_run_on<C>(conn: &C) -> Option<ServerRun>
where
    C: redis::aio::ConnectionLike + Clone + Send,
{
    let info: String =
        redis::cmd("INFO").arg("server").arg("persistence").query_async(&mut conn.clone()).await.ok()?;
    let field =
        |name: &str| info.lines().find_map(|line| line.strip_prefix(name)?.strip_prefix(':').map(str::trim));
    Some(ServerRun { run_id: field("run_id")?.to_owned(), aof: field("aof_enabled")? == "1" })
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
