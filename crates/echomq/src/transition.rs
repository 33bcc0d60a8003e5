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

use std::ops::RangeInclusive;
use std::time::Duration;

use echomq_core::{Name, Role};
use redis::Value;

use crate::id::JobId;
use crate::keyspace::Keyspace;
use crate::{Error, Result};

mod batch;
mod control;
mod enqueue;
mod lease;
mod read;
mod repair;
mod schedule;
mod upkeep;

// Every type of each group: its transitions and their replies.
pub use batch::*;
pub use control::*;
pub use enqueue::*;
pub use lease::*;
pub use read::*;
pub use repair::*;
pub use schedule::*;
pub use upkeep::*;

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

/// An integer argument as it travels: decimal text.
fn decimal(n: impl ToString) -> Vec<u8> {
    n.to_string().into_bytes()
}

/// A number checked against its range, failing with the server's own words.
fn checked<T>(name: &str, value: T, range: RangeInclusive<T>) -> Result<T>
where
    T: PartialOrd + std::fmt::Display + Copy,
{
    if range.contains(&value) {
        Ok(value)
    } else {
        Err(Error::Argument(format!("{name} must be an integer in {}..={}", range.start(), range.end())))
    }
}

/// The number of jobs one call of a many-jobs transition (ACKMANY,
/// ENQUEUEMANY) carries: past `range`'s end in the server's words; none at
/// all is the host's own mistake, never sent.
fn jobs_a_call(name: Name, jobs: usize, range: RangeInclusive<u64>) -> Result<()> {
    match jobs as u64 {
        0 => Err(Error::Argument(format!("{} needs at least one job", name.describe().command))),
        n if n > *range.end() => Err(Error::Argument(format!("at most {} jobs a call", range.end()))),
        _ => Ok(()),
    }
}

/// A duration in whole milliseconds, checked against its range.
fn millis(name: &str, duration: Duration, range: RangeInclusive<u64>) -> Result<u64> {
    let ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    checked(name, ms, range)
}

fn unexpected(what: &str, reply: &Value) -> Error {
    Error::Reply(format!("{what}: got {reply:?}"))
}

fn int_reply(what: &str, reply: Value) -> Result<i64> {
    match reply {
        Value::Int(n) => Ok(n),
        other => Err(unexpected(what, &other)),
    }
}

fn count_reply(what: &str, reply: Value) -> Result<u64> {
    let n = int_reply(what, reply)?;
    u64::try_from(n).map_err(|_| Error::Reply(format!("{what}: negative count {n}")))
}

fn bytes_reply(what: &str, reply: Value) -> Result<Vec<u8>> {
    match reply {
        Value::BulkString(bytes) => Ok(bytes),
        Value::SimpleString(text) => Ok(text.into_bytes()),
        other => Err(unexpected(what, &other)),
    }
}

fn array_reply(what: &str, reply: Value) -> Result<Vec<Value>> {
    match reply {
        Value::Array(items) => Ok(items),
        other => Err(unexpected(what, &other)),
    }
}

/// A reply that must be exactly `1`.
fn one_reply(what: &str, reply: Value) -> Result<()> {
    match reply {
        Value::Int(1) => Ok(()),
        other => Err(unexpected(what, &other)),
    }
}
