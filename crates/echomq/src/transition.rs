//! One type per transition: its keys, its arguments and its reply parser.
//!
//! What a transition is (its name, its KEYS by role, its command) is the
//! core's [`Description`](echomq_core::Description); a host type adds what
//! only the host knows: the values of its arguments and how to read its
//! reply. A transition's KEYS and ARGV are the same for every executor: the
//! Lua executor sends them to `<name>-<keys>.lua` with EVALSHA, the native
//! one as `EMQ.<NAME> <keys…> <args…>`, the embedded one hands them to the
//! core. The host checks every argument against [`echomq_core::limits`]
//! before it sends, with the same words the server would use.
//!
//! # Layout
//! One file per transition, named as its Lua script's stem and the core's
//! file (`claim.rs` for `claim-8.lua`); beside them `argument` (encoding and
//! checking ARGV), `reply` (reading replies) and `headers` (a job's headers).

use echomq_core::{Name, Reply, Role};

use crate::executor::Shortfall;
use crate::id::JobId;
use crate::keyspace::Keyspace;
use crate::Result;

mod ack;
mod ackmany;
mod acknext;
mod argument;
mod batch;
mod cancel;
mod claim;
mod config;
mod counts;
mod defer;
mod drain;
mod enqueue;
mod enqueuemany;
mod extend;
mod fail;
mod fire;
mod headers;
mod inspect;
mod obliterate;
mod progress;
mod promote;
mod purge;
mod reap;
mod release;
mod remove;
mod reply;
mod retry;
#[cfg(test)]
mod round_trip;
mod schedule;
mod schedules;
mod settle;
mod stats;
mod trim;
mod unschedule;

// Every transition's type, and the types of its reply.
pub use ack::*;
pub use ackmany::*;
pub use acknext::*;
pub use batch::*;
pub use cancel::*;
pub use claim::*;
pub use config::*;
pub use counts::*;
pub use defer::*;
pub use drain::*;
pub use enqueue::*;
pub use enqueuemany::*;
pub use extend::*;
pub use fail::*;
pub use fire::*;
pub use headers::*;
pub use inspect::*;
pub use obliterate::*;
pub use progress::*;
pub use promote::*;
pub use purge::*;
pub use reap::*;
pub use release::*;
pub use remove::*;
pub use retry::*;
pub use schedule::*;
pub use schedules::*;
pub use settle::*;
pub use stats::*;
pub use trim::*;
pub use unschedule::*;

/// A transition of the protocol, as the host calls it.
pub trait Transition: Send + Sync {
    /// Which one: its [`Description`](echomq_core::Description) is `NAME.describe()`.
    const NAME: Name;
    /// What the caller gets back.
    type Output: Send;
    /// The job the call names, for a transition with a [`Role::Job`] key.
    fn job(&self) -> Option<&JobId> {
        None
    }
    /// The key that plays `role` in this call.
    fn key(&self, keys: &Keyspace, role: Role) -> String {
        keys.role(role, self.job()).expect("a transition names the job its record key needs")
    }
    /// KEYS, in the protocol's order: each role of the description.
    fn keys(&self, keys: &Keyspace) -> Vec<String> {
        Self::NAME.describe().keys.iter().map(|role| self.key(keys, *role)).collect()
    }
    /// ARGV, in the protocol's order, checked against the protocol's limits.
    ///
    /// # Errors
    /// [`ErrorKind::Argument`](crate::ErrorKind::Argument) or
    /// [`ErrorKind::TooLarge`](crate::ErrorKind::TooLarge) for a value
    /// outside its limit, in the server's own words; nothing is sent then.
    fn args(&self) -> Result<Vec<Vec<u8>>>;
    /// The reply, read into the output.
    ///
    /// # Errors
    /// [`ErrorKind::Reply`](crate::ErrorKind::Reply) for a reply of a shape
    /// the protocol does not give; [`ErrorKind::Record`](crate::ErrorKind::Record)
    /// for a record in it that breaks the protocol; [`ErrorKind::InvalidId`](crate::ErrorKind::InvalidId)
    /// for a job id in it that the kind gate would refuse.
    fn parse(reply: Reply) -> Result<Self::Output>;
    /// What a call that applied answers when fewer replicas than asked for
    /// confirmed its writes (for a transition whose description waits for
    /// replication): [`ErrorKind::NotReplicated`](crate::ErrorKind::NotReplicated),
    /// its write standing on the master. A transition that answers for
    /// several jobs (ACKMANY) answers for each.
    ///
    /// # Errors
    /// [`ErrorKind::NotReplicated`](crate::ErrorKind::NotReplicated).
    fn replicated(output: Self::Output, shortfall: Shortfall) -> Result<Self::Output> {
        let _ = output;
        Err(crate::Error::not_replicated(shortfall.confirmed, shortfall.wanted))
    }
}

/// The host's type of each transition, by name: the `NAME` of the type that
/// mirrors `name`. An exhaustive match on [`Name`], with no `_` arm, so a
/// transition added to the core without its host type here does not
/// compile; and the constant below checks at compile time that each type
/// answers for its own name, not another's.
pub(crate) const fn mirror(name: Name) -> Name {
    match name {
        Name::Enqueue => Enqueue::NAME,
        Name::EnqueueMany => EnqueueMany::NAME,
        Name::Claim => Claim::NAME,
        Name::Ack => Ack::NAME,
        Name::AckNext => AckNext::NAME,
        Name::AckMany => AckMany::NAME,
        Name::Fail => Fail::NAME,
        Name::Extend => Extend::NAME,
        Name::Release => Release::NAME,
        Name::Reap => Reap::NAME,
        Name::Promote => Promote::NAME,
        Name::Purge => Purge::NAME,
        Name::Cancel => Cancel::NAME,
        Name::Retry => Retry::NAME,
        Name::Inspect => Inspect::NAME,
        Name::Stats => Stats::NAME,
        Name::Counts => Counts::NAME,
        Name::Config => Config::NAME,
        Name::Progress => Progress::NAME,
        Name::Schedule => Schedule::NAME,
        Name::Unschedule => Unschedule::NAME,
        Name::Schedules => Schedules::NAME,
        Name::Fire => Fire::NAME,
        Name::Drain => Drain::NAME,
        Name::Remove => Remove::NAME,
        Name::Obliterate => Obliterate::NAME,
        Name::Trim => Trim::NAME,
        Name::Defer => Defer::NAME,
        Name::Batch => Batch::NAME,
        Name::Settle => Settle::NAME,
    }
}

// Evaluated by the compiler: for every `Name`, its host type's `NAME` is
// that name (see `mirror`). A type copied from another and left with the
// other's `NAME` fails the build.
const _: () = {
    let mut at = 0;
    while at < Name::ALL.len() {
        let name = Name::ALL[at];
        assert!(mirror(name) as usize == name as usize, "a host type answers for another transition's name");
        at += 1;
    }
};
