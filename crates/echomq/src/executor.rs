//! The `via`: who runs a transition. A host call carries its executor and
//! never inspects it.
//!
//! Every transition reaches an executor the same way: as a [`Call`] (its
//! [`Name`], KEYS and ARGV), through the one method [`Executor::run`]. The
//! typed side stays with the transition: [`execute`] builds the call from a
//! [`Transition`], runs it in a tracing span, and parses the reply with
//! `T::parse`; a refusal comes back naming the transition, the queue and the
//! job ([`Error::at`](crate::Error::at)).

use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;
use echomq_core::Name;
use redis::Value;
use tracing::Instrument;

use crate::keyspace::Keyspace;
use crate::transition::{Claim, Claims, Transition};
use crate::{Error, Result};

mod blocking;
mod embedded;
mod lua;
mod native;

pub use embedded::Embedded;
pub use lua::{script_source, Lua};
pub use native::{connect, connect_with, detect, silent_peer_settings, Native, SILENT_PEER};
#[cfg(feature = "cluster")]
pub use native::{connect_cluster, ByFirstKey};

/// One transition call as it travels: which transition, its KEYS and ARGV.
/// The same for every executor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// The transition.
    pub name: Name,
    /// KEYS, in the protocol's order.
    pub keys: Vec<String>,
    /// ARGV, in the protocol's order.
    pub args: Vec<Vec<u8>>,
}

impl Call {
    /// The call `transition` makes on the queue `keys`, its arguments checked.
    pub fn new<T: Transition>(keys: &Keyspace, transition: &T) -> Result<Call> {
        Ok(Call { name: T::NAME, keys: transition.keys(keys), args: transition.args()? })
    }
}

/// Runs the protocol's transitions.
#[async_trait]
pub trait Executor: Send + Sync + 'static {
    /// Run `calls`, each atomic on its own (not one transaction), in one
    /// round trip where the executor can (a pipeline). One reply per call,
    /// in order: the server's value, or its refusal. The outer error is the
    /// connection's: none of the replies is known.
    async fn run(&self, calls: &[Call]) -> Result<Vec<Result<Value>>>;

    /// Run a CLAIM, or wait up to `wait` for a job when none is pending (see
    /// [`Executor::waits`]). By default it claims at once.
    async fn claim_waiting(&self, claim: &Call, wait: Duration) -> Result<Value> {
        let _ = wait;
        one(self.run(std::slice::from_ref(claim)).await?)
    }

    /// Whether [`claim_waiting`](Executor::claim_waiting) waits without polling.
    fn waits(&self) -> bool {
        false
    }

    /// The replicas that must confirm this executor's writes, if any.
    fn replication(&self) -> Option<Replication> {
        None
    }

    /// Warnings about the server's set-up, for a worker to log at start
    /// (a `maxmemory-policy` that may evict jobs).
    async fn server_warnings(&self) -> Vec<String> {
        Vec::new()
    }

    /// Which run of the server answers (see [`ServerRun`]), for a worker to
    /// tell a restart after an outage; `None` when it will not say (INFO
    /// denied) or there is no server.
    async fn server_run(&self) -> Option<ServerRun> {
        None
    }

    /// Let every claim waiting for work in `claim_waiting` return now, empty
    /// unless a job came: a stopping worker asks, so that its shutdown does
    /// not sit out `idle_wait`. Claims that start later wait as usual.
    async fn interrupt_waits(&self) {}

    /// Up to `count` entries of the stream `key` after the entry id `after`
    /// (`0-0` for its start); when there are none yet, wait up to `wait` for
    /// the first (an empty list when none came). The queue's event log
    /// (`emq:{q}:events`) is read this way: [`QueueEvents`](crate::events::QueueEvents).
    async fn read_stream(
        &self,
        key: &str,
        after: &str,
        count: usize,
        wait: Duration,
    ) -> Result<Vec<StreamEntry>>;

    /// The id of the stream `key`'s newest entry, if it has one.
    async fn stream_last(&self, key: &str) -> Result<Option<String>>;
}

/// A run of a Redis server: its `run_id`, new at every start, and whether it
/// keeps an append-only file (without one, a restart loses what was written
/// since the last snapshot, if it takes any).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerRun {
    /// `INFO server`'s `run_id`.
    pub run_id: String,
    /// `INFO persistence`'s `aof_enabled`.
    pub aof: bool,
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

/// One entry of a stream: its id (`<ms>-<seq>`) and its fields, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamEntry {
    /// The entry's id.
    pub id: String,
    /// Its fields and values.
    pub fields: Vec<(String, Vec<u8>)>,
}

/// How long a stream read naps between polls when it has no connection of
/// its own to block on.
const STREAM_POLL: Duration = Duration::from_millis(50);

/// [`Executor::read_stream`] on Redis: `XREAD … BLOCK` on a connection of
/// its own from `blocking`; without one free, a plain `XREAD` on `conn` and
/// a nap when it found nothing.
async fn read_stream_on<C>(
    conn: &C,
    blocking: Option<&blocking::Blocking<C>>,
    key: &str,
    after: &str,
    count: usize,
    wait: Duration,
) -> Result<Vec<StreamEntry>>
where
    C: redis::aio::ConnectionLike + Clone + Send,
{
    let mut read = redis::cmd("XREAD");
    read.arg("COUNT").arg(count.max(1));
    if wait.is_zero() {
        read.arg("STREAMS").arg(key).arg(after);
        return stream_entries(read.query_async(&mut conn.clone()).await?);
    }
    let mut blocked = read.clone();
    // BLOCK 0 would wait without limit: wait at least a millisecond instead.
    blocked.arg("BLOCK").arg(wait.as_millis().max(1) as u64).arg("STREAMS").arg(key).arg(after);
    if let Some(blocking) = blocking {
        if let Some(reply) = blocking.query(&blocked).await? {
            return stream_entries(reply?);
        }
    }
    read.arg("STREAMS").arg(key).arg(after);
    let entries = stream_entries(read.query_async(&mut conn.clone()).await?)?;
    if entries.is_empty() {
        tokio::time::sleep(wait.min(STREAM_POLL)).await;
    }
    Ok(entries)
}

/// [`Executor::stream_last`] on Redis: `XREVRANGE key + - COUNT 1`.
async fn stream_last_on<C>(conn: &C, key: &str) -> Result<Option<String>>
where
    C: redis::aio::ConnectionLike + Clone + Send,
{
    let reply: Value = redis::cmd("XREVRANGE")
        .arg(key)
        .arg("+")
        .arg("-")
        .arg("COUNT")
        .arg(1)
        .query_async(&mut conn.clone())
        .await?;
    Ok(entries_of(reply)?.into_iter().next().map(|entry| entry.id))
}

/// XREAD's reply, `[[key, entries]]` or nil, as entries.
fn stream_entries(reply: Value) -> Result<Vec<StreamEntry>> {
    match reply {
        Value::Nil => Ok(Vec::new()),
        Value::Array(streams) => match streams.into_iter().next() {
            Some(Value::Array(stream)) => entries_of(stream.into_iter().nth(1).unwrap_or(Value::Nil)),
            Some(Value::Map(mut stream)) if !stream.is_empty() => entries_of(stream.swap_remove(0).1),
            _ => Ok(Vec::new()),
        },
        Value::Map(mut streams) if !streams.is_empty() => entries_of(streams.swap_remove(0).1),
        other => Err(Error::Reply(format!("XREAD answered {other:?}"))),
    }
}

/// A list of stream entries, `[[id, [field, value, …]], …]`.
fn entries_of(reply: Value) -> Result<Vec<StreamEntry>> {
    let bad = |what: &Value| Error::Reply(format!("a stream entry: got {what:?}"));
    let text = |value: Value| match value {
        Value::BulkString(bytes) => Ok(bytes),
        Value::SimpleString(text) => Ok(text.into_bytes()),
        other => Err(bad(&other)),
    };
    let Value::Array(entries) = reply else {
        return if reply == Value::Nil { Ok(Vec::new()) } else { Err(bad(&reply)) };
    };
    entries
        .into_iter()
        .map(|entry| {
            let Value::Array(parts) = entry else { return Err(bad(&entry)) };
            let mut parts = parts.into_iter();
            let id = String::from_utf8_lossy(&text(parts.next().unwrap_or(Value::Nil))?).into_owned();
            let words = match parts.next() {
                Some(Value::Array(words)) => words,
                other => return Err(bad(&other.unwrap_or(Value::Nil))),
            };
            let mut words = words.into_iter();
            let mut fields = Vec::new();
            while let (Some(field), Some(value)) = (words.next(), words.next()) {
                fields.push((String::from_utf8_lossy(&text(field)?).into_owned(), text(value)?));
            }
            Ok(StreamEntry { id, fields })
        })
        .collect()
}

/// A command that starts with `head`, with room for `call`'s key count,
/// keys and arguments after it: built at its size, a pipeline of
/// enqueues no longer grows each command's buffer a few times over
/// (callgrind, BENCHMARKS.md).
fn sized_command(call: &Call, head: &[&str]) -> redis::Cmd {
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

/// One command's reply: an error reply is the command's error, and an array
/// keeps the error replies inside it (ACKMANY's per-job refusals), where
/// `query_async` would make the first of them the whole reply's.
async fn query_one<C>(conn: &C, command: &redis::Cmd) -> redis::RedisResult<Value>
where
    C: redis::aio::ConnectionLike + Clone + Send,
{
    match conn.clone().req_packed_command(command).await? {
        Value::ServerError(err) => Err(err.into()),
        value => Ok(value),
    }
}

/// Run `transition` on the queue `keys` through `via`, and read its reply.
pub async fn execute<T: Transition>(
    via: &dyn Executor,
    keys: &Keyspace,
    transition: &T,
) -> Result<T::Output> {
    let name = T::NAME;
    let span = tracing::debug_span!("emq.transition", transition = name.as_str(), queue = keys.queue());
    let replied = async {
        let call = Call::new(keys, transition)?;
        one(via.run(std::slice::from_ref(&call)).await?).and_then(T::parse)
    };
    replied.instrument(span).await.map_err(|err| err.at(name, keys.queue(), transition.job()))
}

/// Run many calls of one transition in one round trip where `via` can. Each
/// gets its own result; the outer error is the connection's. A call the
/// host's checks refuse is never sent.
pub async fn execute_batch<T: Transition>(
    via: &dyn Executor,
    keys: &Keyspace,
    transitions: &[T],
) -> Result<Vec<Result<T::Output>>> {
    let name = T::NAME;
    let span = tracing::debug_span!(
        "emq.batch",
        transition = name.as_str(),
        queue = keys.queue(),
        calls = transitions.len()
    );
    // The calls the host's checks let through, and for each transition its
    // refusal or `None` (its reply comes from the run, in order).
    let mut calls = Vec::with_capacity(transitions.len());
    let refusals: Vec<Option<Error>> = transitions
        .iter()
        .map(|transition| match Call::new(keys, transition) {
            Ok(call) => {
                calls.push(call);
                None
            }
            Err(refused) => Some(refused),
        })
        .collect();
    let mut replies =
        if calls.is_empty() { Vec::new() } else { via.run(&calls).instrument(span).await? }.into_iter();
    Ok(refusals
        .into_iter()
        .zip(transitions)
        .map(|(refused, transition)| {
            let reply = match refused {
                Some(refused) => Err(refused),
                None => replies.next().expect("a reply per call sent"),
            };
            reply.and_then(T::parse).map_err(|err| err.at(name, keys.queue(), transition.job()))
        })
        .collect())
}

/// CLAIM, waiting up to `wait` for a job when none is pending, where `via` can.
pub async fn claim_waiting(
    via: &dyn Executor,
    keys: &Keyspace,
    claim: &Claim,
    wait: Duration,
) -> Result<Claims> {
    let span =
        tracing::debug_span!("emq.transition", transition = Name::Claim.as_str(), queue = keys.queue());
    let replied = async { via.claim_waiting(&Call::new(keys, claim)?, wait).await.and_then(Claim::parse) };
    replied.instrument(span).await.map_err(|err| err.at(Name::Claim, keys.queue(), None))
}

/// The one reply of a run of one call.
fn one(replies: Vec<Result<Value>>) -> Result<Value> {
    replies.into_iter().next().unwrap_or_else(|| Err(Error::Reply("no reply to the call".into())))
}

/// Whether a CLAIM's reply holds no job, and waiting for an arrival may
/// change that: nothing was pending, or the queue is paused (resuming wakes
/// waiting claims as an arrival does). A claim held back by the concurrency
/// limit is not worth a wait for an arrival: the worker naps instead.
fn claimed_nothing(reply: &Result<Value>) -> bool {
    matches!(reply, Ok(Value::Array(jobs)) if jobs.is_empty() || matches!(jobs[..], [Value::Int(-1)]))
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
/// executor sends `WAIT <replicas> <timeout>` after its transitions that
/// write (but a claim: see `confirms`), in the same round trip, and answers
/// [`Error::NotReplicated`](crate::Error) when fewer confirm in time (the
/// write stands on the master; a call that was refused wrote nothing, and
/// answers its refusal). It narrows the window; it does not make Redis a
/// consensus store (see RELIABILITY.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replication {
    /// Replicas that must confirm each write.
    pub replicas: u64,
    /// How long to wait for them.
    pub timeout: Duration,
}

/// Whether a WAIT follows `calls` when the executor asks replicas to
/// confirm its writes: when any of them writes what a caller relies on. A
/// claim's write is not (nor is it waited for on a blocking claim): lost in a
/// failover, its jobs are pending again on the new master and run again, as
/// at-least-once allows, and the WAIT after the job's ack covers the claim's
/// write as well. Waited for, a replica's lag would strand the claimed jobs
/// until their leases ran out: a shortfall answers
/// [`Error::NotReplicated`], not the jobs. Nor is a heartbeat's (EXTEND):
/// lost, a lease is only shorter on the new master, and its job may run
/// again; waited for, a lagging replica would fail every heartbeat, and the
/// worker would give up its running jobs as lost.
fn confirms(calls: &[Call]) -> bool {
    calls.iter().any(|call| call.name.describe().waits_for_replication)
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
) -> Result<Value>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<Value>>,
{
    let deadline = tokio::time::Instant::now() + wait;
    let since = interrupts.count();
    loop {
        let arrival = arrivals.notified();
        let interrupted = interrupts.told.notified();
        tokio::pin!(arrival, interrupted);
        arrival.as_mut().enable();
        interrupted.as_mut().enable();
        let claimed = claim().await;
        if !claimed_nothing(&claimed) || interrupts.count() != since {
            return claimed;
        }
        tokio::select! {
            () = &mut arrival => {}
            () = &mut interrupted => return claimed,
            () = tokio::time::sleep_until(deadline) => return claimed,
        }
    }
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
    blocking: &blocking::Blocking<C>,
    interrupts: &Interrupts,
    refused: &std::sync::atomic::AtomicBool,
    wake: &str,
    wait: Duration,
    claim: F,
    pending: P,
) -> Result<Value>
where
    C: redis::aio::ConnectionLike + Send,
    F: Fn() -> Fut,
    Fut: Future<Output = Result<Value>>,
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
        if matches!(&claimed, Ok(Value::Array(jobs)) if jobs.is_empty()) {
            let now = pending().await;
            if now > 0 && pending_before.is_none_or(|before| now < before) {
                pending_before = Some(now);
                continue;
            }
        }
        // Seconds, to the millisecond (a float timeout: Redis ≥ 6); at least one.
        let seconds = format!("{:.3}", left.as_secs_f64().max(0.001));
        let mut pop = redis::cmd("BZPOPMIN");
        pop.arg(wake).arg(seconds);
        match blocking.query(&pop).await? {
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

/// How long a waiting claim naps when every blocking connection is busy.
const BUSY_NAP: Duration = Duration::from_millis(20);

/// End every wait on `blocking`'s connections now (`CLIENT UNBLOCK`, sent on
/// `conn`): a stopping worker's. A user who may not send it waits its time out.
async fn unblock_waits<C>(conn: &C, blocking: &blocking::Blocking<C>)
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

/// What a pipeline of calls answered: one reply per call, and when a WAIT
/// followed them, how many replicas confirmed the writes.
struct Sent {
    replies: Vec<Result<Value>>,
    confirmed: Option<u64>,
}

impl Sent {
    /// The replies, each call's own: when fewer replicas than `replication`
    /// asks for confirmed the writes, each call that applied a write the
    /// caller relies on (see [`confirms`]) answers [`Error::NotReplicated`]
    /// instead of its value; a refused call wrote nothing and answers its
    /// refusal, and a read or a claim answers its value. An ACKMANY answers
    /// for each job: its reply is marked (see [`shortfall`]), so that a job
    /// it acked hears the shortfall and one it refused its refusal.
    fn replicated(self, calls: &[Call], replication: Option<Replication>) -> Vec<Result<Value>> {
        let (Some(Replication { replicas, .. }), Some(confirmed)) = (replication, self.confirmed) else {
            return self.replies;
        };
        if confirmed >= replicas {
            return self.replies;
        }
        self.replies
            .into_iter()
            .zip(calls)
            .map(|(reply, call)| match reply {
                Ok(Value::Array(jobs)) if call.name == Name::AckMany => {
                    let shortfall = [confirmed, replicas].map(|n| Value::Int(n as i64));
                    Ok(Value::Attribute {
                        data: Box::new(Value::Array(jobs)),
                        attributes: vec![(
                            Value::SimpleString(SHORTFALL.into()),
                            Value::Array(shortfall.into()),
                        )],
                    })
                }
                Ok(_) if confirms(std::slice::from_ref(call)) => {
                    Err(Error::NotReplicated { confirmed, wanted: replicas })
                }
                reply => reply,
            })
            .collect()
    }
}

/// The name of the mark an ACKMANY's reply carries when fewer replicas
/// than asked for confirmed it: an attribute (RESP3's place for what a reply
/// carries beside its data), put there by the executor, never by a server.
const SHORTFALL: &str = "emq-shortfall";

/// A reply and, when [`Sent::replicated`] marked it, the replicas' shortfall:
/// [`Error::NotReplicated`] for each of its writes that applied.
pub(crate) fn shortfall(reply: Value) -> (Value, Option<(u64, u64)>) {
    match reply {
        Value::Attribute { data, attributes } => {
            let marked = attributes.iter().find_map(|(name, numbers)| match (name, numbers) {
                (Value::SimpleString(name), Value::Array(numbers)) if name == SHORTFALL => {
                    match numbers[..] {
                        [Value::Int(confirmed), Value::Int(wanted)] => {
                            Some((confirmed as u64, wanted as u64))
                        }
                        _ => None,
                    }
                }
                _ => None,
            });
            (*data, marked)
        }
        reply => (reply, None),
    }
}

/// Send `calls` as one pipeline of the commands `command` builds, then a
/// WAIT when `replication` asks for one. One reply per call.
async fn pipelined<'c, C>(
    conn: &C,
    calls: impl IntoIterator<Item = &'c Call>,
    command: impl Fn(&Call) -> redis::Cmd,
    replication: Option<Replication>,
) -> Result<Sent>
where
    C: redis::aio::ConnectionLike + Clone + Send,
{
    let mut pipe = redis::pipe();
    for call in calls {
        pipe.add_command(command(call));
    }
    if let Some(replication) = replication {
        pipe.cmd("WAIT").arg(replication.replicas).arg(replication.timeout.as_millis() as u64);
    }
    let mut sent =
        pipe.ignore_errors().query_async::<Vec<redis::RedisResult<Value>>>(&mut conn.clone()).await?;
    let mut confirmed = None;
    if replication.is_some() {
        confirmed = match sent.pop() {
            Some(Ok(Value::Int(n))) => Some(n as u64),
            other => return Err(Error::Reply(format!("WAIT answered {other:?}"))),
        };
    }
    let replies = sent.into_iter().map(|reply| reply.map_err(Error::from)).collect();
    Ok(Sent { replies, confirmed })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: Name) -> Call {
        Call { name, keys: Vec::new(), args: Vec::new() }
    }

    #[test]
    fn writes_a_caller_relies_on_are_waited_for_but_claims_and_heartbeats() {
        assert!(confirms(&[call(Name::Ack)]) && confirms(&[call(Name::Enqueue)]));
        assert!(!confirms(&[call(Name::Claim)]) && !confirms(&[call(Name::Extend)]));
        assert!(!confirms(&[call(Name::Stats)]), "a read");
        assert!(confirms(&[call(Name::Extend), call(Name::Fail)]), "one that is makes the WAIT");
    }

    #[test]
    fn a_shortfall_is_each_writing_calls_own_and_a_refusal_stays_a_refusal() {
        let calls = [call(Name::Ack), call(Name::Ack), call(Name::Extend)];
        let replies = vec![Ok(Value::Int(1)), Err(Error::Fence("stale".into())), Ok(Value::Int(7))];
        let replication = Replication { replicas: 1, timeout: Duration::from_millis(10) };
        let sent = Sent { replies, confirmed: Some(0) };
        let replies = sent.replicated(&calls, Some(replication));
        assert!(matches!(replies[0], Err(Error::NotReplicated { confirmed: 0, wanted: 1 })));
        assert!(matches!(replies[1], Err(Error::Fence(_))), "it wrote nothing");
        assert!(matches!(replies[2], Ok(Value::Int(7))), "a heartbeat is not waited for");
        let confirmed = Sent { replies: vec![Ok(Value::Int(1))], confirmed: Some(1) };
        assert!(matches!(confirmed.replicated(&calls[..1], Some(replication))[0], Ok(Value::Int(1))));
    }

    /// An ACKMANY's jobs answer each on their own: the acked one the
    /// shortfall, the fenced one its refusal (not "applied").
    #[test]
    fn an_ackmany_short_of_replicas_answers_for_each_job() {
        use crate::transition::{AckMany, Transition};
        let fenced =
            redis::make_extension_error("EMQFENCE".into(), Some("token does not hold the lease".into()));
        let fenced = Value::ServerError(redis::ServerError::try_from(fenced).unwrap());
        let reply = || Ok(Value::Array(vec![Value::Int(1), fenced.clone()]));
        let replication = Replication { replicas: 2, timeout: Duration::from_millis(10) };
        let sent = Sent { replies: vec![reply()], confirmed: Some(1) };
        let [marked] = &sent.replicated(&[call(Name::AckMany)], Some(replication))[..] else { panic!() };
        let outcomes = AckMany::parse(marked.as_ref().unwrap().clone()).unwrap();
        assert!(matches!(outcomes[0], Err(Error::NotReplicated { confirmed: 1, wanted: 2 })), "{outcomes:?}");
        assert!(outcomes[1].as_ref().is_err_and(Error::is_lost_lease), "{outcomes:?}");
        let sent = Sent { replies: vec![reply()], confirmed: Some(2) };
        let [enough] = &sent.replicated(&[call(Name::AckMany)], Some(replication))[..] else { panic!() };
        let outcomes = AckMany::parse(enough.as_ref().unwrap().clone()).unwrap();
        assert!(outcomes[0].is_ok() && outcomes[1].as_ref().is_err_and(Error::is_lost_lease), "{outcomes:?}");
    }
}
