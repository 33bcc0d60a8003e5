//! One type per transition: its keys, its arguments and its reply parser.
//!
//! What a transition is (its name, its KEYS by role, its command) is the
//! core's [`Description`](echomq_core::Description); a host type adds what
//! only the host knows: the values of its arguments and how to read its
//! reply. A transition's KEYS and ARGV are the same for every executor: the
//! Lua executor sends them to `<name>.lua` with EVALSHA, the native
//! one as `EMQ.<NAME> <keys…> <args…>`, the embedded one hands them to the
//! core. The host checks every argument against [`echomq_core::limits`]
//! before it sends, with the same words the server would use.
//!
//! # Layout
//! One file per transition, named as its Lua script's stem and the core's
//! file (`claim.rs` for `claim.lua`); beside them `argument` (encoding and
//! checking ARGV), `reply` (reading replies) and `headers` (a job's headers).

use echomq_core::{Name, Reply, Role};

use crate::executor::Shortfall;
use crate::id::JobId;
use crate::keyspace::Keyspace;
use crate::Result;

mod argument;
#[cfg(test)]
mod edges;
mod headers;
mod reply;
#[cfg(test)]
mod round_trip;

pub use headers::*;

/// Every transition's host type, once: `file => Name` (the type is named
/// as its [`Name`]). It declares each file and re-exports its types, and
/// writes the exhaustive matches on [`Name`] that tie each name to its
/// type: [`mirror`], and in tests `edges`. A transition added to the core
/// without its line here does not compile.
macro_rules! hosts {
    ($($file:ident => $name:ident),* $(,)?) => {
        $(
            mod $file;
            pub use $file::*;
        )*

        /// The host's type of each transition, by name: the `NAME` of the
        /// type that mirrors `name`. The constant below checks at compile
        /// time that each type answers for its own name, not another's.
        pub(crate) const fn mirror(name: Name) -> Name {
            match name {
                $(Name::$name => $name::NAME,)*
            }
        }

        /// Transition `name`'s edge values ([`Transition::edges`]) as the
        /// host sends them on the queue `keys`.
        #[cfg(test)]
        pub(crate) fn edges(name: Name, keys: &Keyspace) -> Vec<crate::executor::Call> {
            match name {
                $(Name::$name => edges::encoded::<$name>(keys),)*
            }
        }
    };
}

hosts! {
    enqueue => Enqueue,
    enqueuemany => EnqueueMany,
    claim => Claim,
    ack => Ack,
    acknext => AckNext,
    ackmany => AckMany,
    fail => Fail,
    extend => Extend,
    release => Release,
    reap => Reap,
    promote => Promote,
    purge => Purge,
    cancel => Cancel,
    retry => Retry,
    inspect => Inspect,
    stats => Stats,
    counts => Counts,
    config => Config,
    progress => Progress,
    schedule => Schedule,
    unschedule => Unschedule,
    schedules => Schedules,
    fire => Fire,
    drain => Drain,
    remove => Remove,
    obliterate => Obliterate,
    trim => Trim,
    defer => Defer,
    batch => Batch,
    settle => Settle,
    flow => Flow,
    resolve => Resolve,
    children => Children,
    adopt => Adopt,
    group => Group,
    groups => Groups,
    permit => Permit,
    renew => Renew,
}

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
    /// Values at the ends of every range it takes, with every option, which
    /// the core's `parse` must accept as the host encodes them
    /// (`round_trip.rs`; the ends are `edges.rs`'s).
    #[cfg(test)]
    fn edges() -> Vec<Self>
    where
        Self: Sized;
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
