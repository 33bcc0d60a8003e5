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

use echomq_core::{Name, Role};
use redis::Value;

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
mod reply;
mod retry;
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
    fn args(&self) -> Result<Vec<Vec<u8>>>;
    /// The reply, read into the output.
    fn parse(reply: Value) -> Result<Self::Output>;
}
