//! The `via`: who runs a transition. A host call carries its executor and
//! never inspects it.
//!
//! Every transition reaches an executor the same way: as a [`Call`] (its
//! [`Name`](crate::Name), KEYS and ARGV), through [`Executor::run`], and
//! comes back as the core's typed [`Reply`]. The typed side stays with the
//! transition: [`execute`] builds the call from a
//! [`Transition`](crate::transition::Transition), runs it in a tracing
//! span, and parses the reply with `T::parse`; a refusal comes back naming
//! the transition, the queue and the job ([`Error::at`](crate::Error::at)).
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

use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;

use crate::Result;

/// The raw protocol layer's items: public with the `protocol` feature, the
/// crate's own without it.
macro_rules! raw {
    ($($path:tt)*) => {
        #[cfg(feature = "protocol")]
        pub use $($path)*;
        #[cfg(not(feature = "protocol"))]
        #[allow(unused_imports)]
        pub(crate) use $($path)*;
    };
}

mod blocking;
#[cfg_attr(not(feature = "protocol"), allow(unreachable_pub))]
mod call;
mod connect;
#[cfg_attr(not(feature = "protocol"), allow(unreachable_pub))]
mod due;
mod embedded;
mod lua;
mod native;
#[cfg_attr(not(feature = "protocol"), allow(unreachable_pub))]
mod plain;
mod replication;
#[cfg_attr(not(feature = "protocol"), allow(unreachable_pub))]
mod server;
#[cfg_attr(not(feature = "protocol"), allow(unreachable_pub))]
mod stream;
mod transport;

#[cfg(feature = "cluster")]
pub use connect::connect_cluster;
pub use connect::{connect, connect_with, detect, silent_peer_settings, SILENT_PEER};
pub use embedded::Embedded;
pub use lua::Lua;
#[cfg(feature = "cluster")]
pub use native::ByFirstKey;
pub use native::Native;
pub(crate) use replication::unconfirmed_claim;
pub use replication::Replication;
raw!(call::{claim_waiting, execute, execute_batch, Call, Ran, Shortfall});
use call::one;
#[cfg(test)]
pub(crate) use call::parse_reply;
raw!(due::{upkeep_due, DueAsk, Keeping, LeaseAsk, Leased, UpkeepDue});
raw!(echomq_core::{Refusal, Reply});
raw!(lua::script_source);
raw!(plain::{Answer, Command, Plain});
raw!(server::{server_run, server_warnings, ServerRun});
raw!(stream::StreamEntry);

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

/// How an executor waits for work and replicates (see [`Executor::setup`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Setup {
    /// [`Executor::claim_waiting`] waits without polling.
    pub waits: bool,
    /// [`Executor::wait_on_many`] waits for several queues at once: one
    /// server holds every queue (not a Cluster, whose queues' keys are in
    /// slots of their own), and it lets this user block.
    pub waits_on_many: bool,
    /// [`Executor::wait_on_many`] waits for one queue at a time where it
    /// cannot wait for several (a Cluster, whose queues' keys are in slots
    /// of their own): a worker of several queues then waits for each idle
    /// one on a connection of its own.
    pub waits_each: bool,
    /// The replicas that must confirm its writes, if any.
    pub replication: Option<Replication>,
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
