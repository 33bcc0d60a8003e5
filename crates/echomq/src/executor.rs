//! The `via`: who runs a transition. A host call carries its executor and
//! never inspects it.
//!
//! Every transition reaches an executor the same way: as a [`Call`] (its
//! [`Name`], KEYS and ARGV), through the one method [`Executor::run`]. The
//! typed side stays with the transition: [`execute`] builds the call from a
//! [`Transition`], runs it in a tracing span, and parses the reply with
//! `T::parse`; a refusal comes back naming the transition, the queue and the
//! job ([`Error::at`](crate::Error::at)).
//!
//! # Layout
//! - `lua`: [`Lua`], EVALSHA of each transition's script, idle claims on
//!   the wake-up key; `lua/scripts`: the scripts, expanded ([`script_source`]).
//! - `native`: [`Native`], the module's `EMQ.<NAME>` commands, and
//!   `ByFirstKey` for a cluster.
//! - `embedded`: [`Embedded`], the core on an in-process store.
//! - `transport`: what Lua and Native share: the connection, the blocking
//!   pool (`blocking`), replication (`replication`), the event log (`stream`).
//! - `connect`: [`connect`] and [`detect`], which pick Native or Lua.

use crate::ErrorKind;
use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;
use echomq_core::Name;
use redis::Value;
use tracing::Instrument;

use crate::keyspace::Keyspace;
use crate::transition::{Claim, Claims, Transition};
use crate::workers::{Noted, Registration};
use crate::{Error, Result};

mod blocking;
mod connect;
mod due;
mod embedded;
mod lua;
mod native;
mod replication;
mod stream;
mod transport;

#[cfg(feature = "cluster")]
pub use connect::connect_cluster;
pub use connect::{connect, connect_with, detect, silent_peer_settings, SILENT_PEER};
pub use embedded::Embedded;
pub use lua::{script_source, Lua};
#[cfg(feature = "cluster")]
pub use native::ByFirstKey;
pub use native::Native;
pub(crate) use replication::shortfall;
pub use replication::Replication;
pub use stream::StreamEntry;

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
    ///
    /// # Errors
    /// [`ErrorKind::Argument`] or [`ErrorKind::TooLarge`] for an argument
    /// outside the protocol's limits (see [`Transition::args`]).
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

    /// Whether [`wait_on_many`](Executor::wait_on_many) waits for several
    /// queues at once: one server holds every queue (not a Cluster, whose
    /// queues' keys are in slots of their own), and it lets this user block.
    fn waits_on_many(&self) -> bool {
        false
    }

    /// Wait up to `wait` for an arrival on any of the queues whose wake-up
    /// keys are `wakes` (PROTOCOL.md §9), with one `BZPOPMIN` over them all:
    /// `Some(i)` when it took the wake-up of `wakes[i]`, whose queue the
    /// caller then claims from at once (a claim that leaves jobs pending sets
    /// the key again, for the next waiter: §9's chain); `None` when the wait
    /// ran out, was interrupted ([`interrupt_waits`](Executor::interrupt_waits)),
    /// or cannot be made (see [`waits_on_many`](Executor::waits_on_many)).
    async fn wait_on_many(&self, wakes: &[String], wait: Duration) -> Result<Option<usize>> {
        let _ = wakes;
        tokio::time::sleep(wait.min(BUSY_NAP)).await;
        Ok(None)
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

    /// What each of `queues`' upkeep has to do now, read with plain
    /// commands in one round trip (PROTOCOL.md §11.3); `None` when it
    /// cannot be known, and every part is then run. Every queue on this
    /// executor's one server, or one queue (its keys share a slot).
    async fn upkeep_due(&self, queues: &[Keyspace]) -> Option<Vec<UpkeepDue>> {
        let _ = queues;
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

    /// Note the queue `name` in the queue registry at `key` as seen now:
    /// `ZADD key GT <now ms> name` (PROTOCOL.md §2, `emq:queues`).
    async fn register(&self, key: &str, name: &str) -> Result<()>;

    /// The queue registry at `key`: up to `limit` names, the most recently
    /// seen, in name order.
    async fn registered(&self, key: &str, limit: usize) -> Result<Vec<String>>;

    /// Take the queue `name` out of the registry at `key` (a deleted queue).
    async fn unregister(&self, key: &str, name: &str) -> Result<()>;

    /// Write a worker's registration (PROTOCOL.md §2, `emq:workers`): its
    /// hash `emq:worker:<id>` with every field, expiring after its TTL
    /// (`HSET`, `PEXPIRE`), then `ZADD emq:workers <beat> <id>`.
    async fn beat_worker(&self, registration: &Registration) -> Result<()>;

    /// The worker registry's `limit` members of the latest beats, each with
    /// its hash's fields (`None` once the hash is gone).
    async fn noted_workers(&self, limit: usize) -> Result<Vec<Noted>>;

    /// Take the workers `ids` out of the worker registry, and every member
    /// whose beat is older than `before` (ms): `ZREM`, `ZREMRANGEBYSCORE`.
    async fn forget_workers(&self, ids: &[String], before: u64) -> Result<()>;

    /// A stopping worker's: delete its hash and take it out of the registry.
    async fn unregister_worker(&self, id: &str) -> Result<()>;
}

/// What a queue's upkeep has to do now (see [`Executor::upkeep_due`]).
/// A part whose read failed (a key of the wrong type) counts as due, so
/// that its transition runs and says what is wrong.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpkeepDue {
    /// A delayed job is due: PROMOTE.
    pub promote: bool,
    /// A lease ran out: REAP.
    pub reap: bool,
    /// A schedule's tick is due: SCHEDULES `DUE 1`, then FIRE.
    pub fire: bool,
    /// A batch is open: SETTLE.
    pub settle: bool,
    /// The sizes of done, dead and cancelled, when read: TRIM when one
    /// changed since its last TRIM.
    pub finished: [Option<u64>; 3],
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

/// Run `transition` on the queue `keys` through `via`, and read its reply.
///
/// # Errors
/// As [`Call::new`], before anything is sent; the server's refusal
/// (`EMQ<NAME>`: its [`ErrorKind`]); [`ErrorKind::Reply`] or
/// [`ErrorKind::Record`] for a reply the protocol does not give; a failure
/// of the connection or the server. Each carries the transition, the queue
/// and the job ([`Error::at`]).
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
///
/// # Errors
/// A failure of the connection or the server, when no reply is known;
/// each call's own error is in its result, as [`execute`]'s.
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
///
/// # Errors
/// As [`execute`] for CLAIM.
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
    replies.into_iter().next().unwrap_or_else(|| Err(Error::new(ErrorKind::Reply, "no reply to the call")))
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

/// How long a waiting claim naps when every blocking connection is busy.
const BUSY_NAP: Duration = Duration::from_millis(20);
