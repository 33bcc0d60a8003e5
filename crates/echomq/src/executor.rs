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
//! - `embedded`: [`Embedded`], the core on an in-process store, and the
//!   plain commands answered on that store.
//! - `transport`: what Lua and Native share: the connection, the blocking
//!   pool (`blocking`), replication (`replication`), the event log
//!   (`stream`), and the plain commands sent to Redis.
//! - `plain`: [`Plain`], the plain commands beside the transitions, and
//!   what is written once over them: `due` ([`upkeep_due`]) and `server`
//!   ([`server_run`], [`server_warnings`]). The registries are their
//!   callers': `queue/registry.rs` and `workers.rs`.
//! - `connect`: [`connect`] and [`detect`], which pick Native or Lua.

use crate::ErrorKind;
use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;
use echomq_core::Name;
use tracing::Instrument;

use crate::keyspace::Keyspace;
use crate::transition::{Claim, Claims, Transition};
use crate::{Error, Result};

mod blocking;
mod connect;
mod due;
mod embedded;
mod lua;
mod native;
mod plain;
mod replication;
mod server;
mod stream;
mod transport;

#[cfg(feature = "cluster")]
pub use connect::connect_cluster;
pub use connect::{connect, connect_with, detect, silent_peer_settings, SILENT_PEER};
pub use due::{upkeep_due, UpkeepDue};
pub use echomq_core::{Refusal, Reply};
pub use embedded::Embedded;
pub use lua::{script_source, Lua};
#[cfg(feature = "cluster")]
pub use native::ByFirstKey;
pub use native::Native;
pub use plain::{Answer, Command, Plain};
pub use replication::Replication;
pub use server::{server_run, server_warnings, ServerRun};
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

/// Runs the protocol's transitions: the one door every call goes through.
///
/// A transition goes in as a [`Call`], the core's typed [`Reply`] comes out
/// (with replication's outcome beside it, [`Ran`]); a claim may wait for
/// work. The plain commands beside the transitions (the event log, the
/// registries, the reads that tell upkeep what is due) go through
/// [`plain`](Executor::plain), which Lua and Native share and Embedded
/// implements once. Every method is required: a wrapper (the chaos witness,
/// a test double) forwards each, so it drives the path production takes.
#[async_trait]
pub trait Executor: Send + Sync + 'static {
    /// Run `calls`, each atomic on its own (not one transaction), in one
    /// round trip where the executor can (a pipeline). One reply per call,
    /// in order: the transition's reply, or its refusal; and whether the
    /// replicas confirmed the writes ([`Ran::shortfall`]). The outer error
    /// is the connection's: none of the replies is known.
    async fn run(&self, calls: &[Call]) -> Result<Ran>;

    /// Run a CLAIM, waiting up to `wait` for a job when none is pending,
    /// where the executor can ([`Setup::waits`]); else it claims at once.
    async fn claim_waiting(&self, claim: &Call, wait: Duration) -> Result<Reply>;

    /// Wait up to `wait` for an arrival on any of the queues whose wake-up
    /// keys are `wakes` (PROTOCOL.md §9), with one `BZPOPMIN` over them all:
    /// `Some(i)` when it took the wake-up of `wakes[i]`, whose queue the
    /// caller then claims from at once (a claim that leaves jobs pending sets
    /// the key again, for the next waiter: §9's chain); `None` when the wait
    /// ran out, was interrupted ([`interrupt_waits`](Executor::interrupt_waits)),
    /// or cannot be made ([`Setup::waits_on_many`]: it naps instead).
    async fn wait_on_many(&self, wakes: &[String], wait: Duration) -> Result<Option<usize>>;

    /// Let every claim waiting for work in `claim_waiting` return now, empty
    /// unless a job came: a stopping worker asks, so that its shutdown does
    /// not sit out `idle_wait`. Claims that start later wait as usual.
    async fn interrupt_waits(&self);

    /// How this executor waits and replicates, as of now (a server that
    /// refused a blocking command turns its waits off).
    fn setup(&self) -> Setup;

    /// The plain commands beside the transitions, on the same server.
    fn plain(&self) -> &dyn Plain;
}

/// What a run of calls answered (see [`Executor::run`]).
#[derive(Debug)]
pub struct Ran {
    /// One reply per call, in order: its value or its refusal.
    pub replies: Vec<Result<Reply>>,
    /// When the executor asks replicas to confirm its writes and fewer did
    /// in time: each call that applied a write the caller relies on answers
    /// [`ErrorKind::NotReplicated`] (see [`Transition::replicated`]).
    pub shortfall: Option<Shortfall>,
}

impl Ran {
    /// Replies that need no replica's word.
    #[must_use]
    pub fn replies(replies: Vec<Result<Reply>>) -> Ran {
        Ran { replies, shortfall: None }
    }
}

/// Fewer replicas confirmed a run's writes than asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shortfall {
    /// Replicas that confirmed.
    pub confirmed: u64,
    /// Replicas asked for.
    pub wanted: u64,
}

/// How an executor waits for work and replicates (see [`Executor::setup`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Setup {
    /// [`Executor::claim_waiting`] waits without polling.
    pub waits: bool,
    /// [`Executor::wait_on_many`] waits for several queues at once: one
    /// server holds every queue (not a Cluster, whose queues' keys are in
    /// slots of their own), and it lets this user block.
    pub waits_on_many: bool,
    /// The replicas that must confirm its writes, if any.
    pub replication: Option<Replication>,
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
        let Ran { replies, shortfall } = via.run(std::slice::from_ref(&call)).await?;
        parse_reply::<T>(one(replies), shortfall)
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
    let Ran { replies, shortfall } =
        if calls.is_empty() { Ran::replies(Vec::new()) } else { via.run(&calls).instrument(span).await? };
    let mut replies = replies.into_iter();
    Ok(refusals
        .into_iter()
        .zip(transitions)
        .map(|(refused, transition)| {
            let reply = match refused {
                Some(refused) => Err(refused),
                None => replies.next().expect("a reply per call sent"),
            };
            parse_reply::<T>(reply, shortfall).map_err(|err| err.at(name, keys.queue(), transition.job()))
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

/// A call's reply read as `T`'s output; when replicas fell short, what
/// that means for a call of `T` that applied (see [`Transition::replicated`]).
pub(crate) fn parse_reply<T: Transition>(
    reply: Result<Reply>,
    shortfall: Option<Shortfall>,
) -> Result<T::Output> {
    let output = T::parse(reply?)?;
    match shortfall {
        Some(shortfall) if T::NAME.describe().waits_for_replication => T::replicated(output, shortfall),
        _ => Ok(output),
    }
}

/// The one reply of a run of one call.
fn one(replies: Vec<Result<Reply>>) -> Result<Reply> {
    replies.into_iter().next().unwrap_or_else(|| Err(Error::new(ErrorKind::Reply, "no reply to the call")))
}

/// Whether a CLAIM's reply holds no job, and waiting for an arrival may
/// change that: nothing was pending, or the queue is paused (resuming wakes
/// waiting claims as an arrival does). A claim held back by the concurrency
/// limit is not worth a wait for an arrival: the worker naps instead.
fn claimed_nothing(reply: &Result<Reply>) -> bool {
    matches!(reply, Ok(Reply::Array(jobs)) if jobs.is_empty() || matches!(jobs[..], [Reply::Int(-1)]))
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
) -> Result<Reply>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<Reply>>,
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
