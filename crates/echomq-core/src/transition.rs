//! Every transition in plain Rust, over a [`Store`]. Each one has the same
//! shape: `parse` reads KEYS and ARGV (pure, no storage: the part a fuzzer
//! hammers), `apply` checks the types and the record and then writes.
//! [`run`] picks the transition by name.
//!
//! The Lua scripts in `crates/echomq/lua` are the independent second
//! implementation: the same checks in the same order, the same replies, the
//! same error texts. This one also writes the record's two extra fields,
//! `enqueued_at` and `updated_at`.

use crate::parse::lossy;
use crate::store::{KeyType, Store};
use crate::{Code, Outcome, Refusal, Reply};

mod enqueue;
mod lease;
mod read;
mod repair;
mod upkeep;

pub use enqueue::Enqueue;
pub use lease::{Ack, Claim, Extend, Fail, Release};
pub use read::{Inspect, Stats};
pub use repair::{Cancel, Retry};
pub use upkeep::{Promote, Purge, Reap};

/// The transitions, by their protocol names.
pub const NAMES: [&str; 13] = [
    "enqueue", "claim", "ack", "fail", "extend", "release", "reap", "promote", "purge", "cancel", "retry",
    "inspect", "stats",
];

/// Parse and apply the transition `name` (lower case) to `store`.
pub fn run<S: Store>(store: &mut S, name: &str, keys: &[&[u8]], args: &[&[u8]]) -> Outcome {
    match name {
        "enqueue" => Enqueue::parse(keys, args)?.apply(store),
        "claim" => Claim::parse(keys, args)?.apply(store),
        "ack" => Ack::parse(keys, args)?.apply(store),
        "fail" => Fail::parse(keys, args)?.apply(store),
        "extend" => Extend::parse(keys, args)?.apply(store),
        "release" => Release::parse(keys, args)?.apply(store),
        "reap" => Reap::parse(keys, args)?.apply(store),
        "promote" => Promote::parse(keys, args)?.apply(store),
        "purge" => Purge::parse(keys, args)?.apply(store),
        "cancel" => Cancel::parse(keys, args)?.apply(store),
        "retry" => Retry::parse(keys, args)?.apply(store),
        "inspect" => Inspect::parse(keys, args)?.apply(store),
        "stats" => Stats::parse(keys, args)?.apply(store),
        other => Err(Refusal::arg(format!("unknown transition {other}"))),
    }
}

/// Parse only: what a fuzzer calls. Never panics, never touches storage.
pub fn parse_only(name: &str, keys: &[&[u8]], args: &[&[u8]]) -> Result<(), Refusal> {
    match name {
        "enqueue" => Enqueue::parse(keys, args).map(drop),
        "claim" => Claim::parse(keys, args).map(drop),
        "ack" => Ack::parse(keys, args).map(drop),
        "fail" => Fail::parse(keys, args).map(drop),
        "extend" => Extend::parse(keys, args).map(drop),
        "release" => Release::parse(keys, args).map(drop),
        "reap" => Reap::parse(keys, args).map(drop),
        "promote" => Promote::parse(keys, args).map(drop),
        "purge" => Purge::parse(keys, args).map(drop),
        "cancel" => Cancel::parse(keys, args).map(drop),
        "retry" => Retry::parse(keys, args).map(drop),
        "inspect" => Inspect::parse(keys, args).map(drop),
        "stats" => Stats::parse(keys, args).map(drop),
        other => Err(Refusal::arg(format!("unknown transition {other}"))),
    }
}

/// `key` must hold `want` or nothing.
fn need<S: Store>(store: &mut S, key: &[u8], want: KeyType) -> Result<(), Refusal> {
    match store.key_type(key) {
        KeyType::None => Ok(()),
        found if found == want => Ok(()),
        found => Err(Refusal::new(
            Code::Type,
            format!("{} holds a {}, not a {}", lossy(key), found.name(), want.name()),
        )),
    }
}

/// Read one field of a record after checking the record is a hash (or
/// missing, and not on its way to or from another cluster node).
fn read_field<S: Store>(store: &mut S, key: &[u8], field: &[u8]) -> Result<Option<Vec<u8>>, Refusal> {
    need(store, key, KeyType::Hash)?;
    match store.hget(key, field) {
        None => {
            present_here(store, key)?;
            Ok(None)
        }
        found => Ok(found),
    }
}

/// A record missing here is missing, unless the queue's slot is moving
/// between cluster nodes: then it may be on the other node, and the
/// transition answers TRYAGAIN before its first write rather than drop a job.
fn present_here<S: Store>(store: &mut S, key: &[u8]) -> Result<(), Refusal> {
    if store.key_type(key) == KeyType::None && store.slot_moving(key) {
        return Err(Refusal::new(
            Code::TryAgain,
            format!("{} may be on another node while its slot moves", lossy(key)),
        ));
    }
    Ok(())
}

/// The fence: the record must exist, be active, and hold `token` as its attempts.
fn fence<S: Store>(store: &mut S, key: &[u8], token: u64) -> Result<(), Refusal> {
    let state = read_field(store, key, b"state")?;
    let attempts = store.hget(key, b"attempts");
    match state {
        None => Err(Refusal::new(Code::NoJob, "no such job")),
        Some(state) if state != b"active" || number(attempts.as_deref()) != Some(token as f64) => {
            Err(Refusal::new(Code::Fence, "token does not hold the lease"))
        }
        Some(_) => Ok(()),
    }
}

/// A record taken by [`take`]: its key, and the field read before the take.
type Taken = (Vec<u8>, Option<Vec<u8>>);

/// Take `ids` out of `set`, as CLAIM, REAP and PROMOTE move jobs: first read
/// `field` of each id's record (each must be a hash or missing: the last check
/// before any write), then remove them all. Each record's key and field.
fn take<S: Store>(
    store: &mut S,
    set: &[u8],
    prefix: &[u8],
    ids: &[Vec<u8>],
    field: &[u8],
) -> Result<Vec<Taken>, Refusal> {
    let mut records = Vec::with_capacity(ids.len());
    for id in ids {
        let key = crate::parse::record_key(prefix, id);
        let value = read_field(store, &key, field)?;
        records.push((key, value));
    }
    for id in ids {
        store.zrem(set, id);
    }
    Ok(records)
}

/// A stored number, as Lua's `tonumber` reads it (decimal integers here).
fn number(value: Option<&[u8]>) -> Option<f64> {
    std::str::from_utf8(value?).ok()?.trim().parse().ok()
}

/// Write record fields, stamping `updated_at`.
fn write_record<S: Store>(store: &mut S, key: &[u8], fields: &[(&[u8], &[u8])], now: u64) {
    let now = now.to_string();
    let mut all = fields.to_vec();
    all.push((b"updated_at", now.as_bytes()));
    store.hset(key, &all);
}

/// Back to pending at the job's own priority (0 when it has none).
fn to_pending<S: Store>(store: &mut S, record: &[u8], pending: &[u8], priority: &[u8], id: &[u8], now: u64) {
    write_record(store, record, &[(b"state", b"pending")], now);
    let score = number(store.hget(priority, id).as_deref()).unwrap_or(0.0);
    store.zadd(pending, score, id);
}

fn int(n: u64) -> Reply {
    Reply::Int(n as i64)
}
