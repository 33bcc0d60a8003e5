//! Every transition in plain Rust, over a [`Store`], one file each, named as
//! its script is (`claim.rs`, `claim.lua`). Each has the same shape: its
//! KEYS declared once by name and role (`keys!`, which makes the
//! description's `keys` and the struct its code reads: `keys.pending`, never
//! a position), `parse` reading KEYS and ARGV (pure, no storage: the part a
//! fuzzer hammers), `apply` checking the types and the record and then
//! writing, and a `DESCRIPTION` saying what it is. [`Name`] lists them all
//! and dispatches; what several share sits in files named as the Lua
//! includes are (`fenced`, `gate`, `delete`, `events`).
//!
//! The Lua scripts in `crates/echomq/lua` are the independent second
//! implementation: the same checks in the same order, the same replies, the
//! same error texts. This one also writes the record's two extra fields,
//! `enqueued_at` and `updated_at`, both at birth.

use crate::description::Description;
use crate::parse::{lossy, malformed, missing, stored};
use crate::policy::Policy;
use crate::store::{KeyType, Store};
use crate::version::{Version, PROTOCOL};
use crate::{Answer, Code, Refusal};

// One file a transition, named as its script is (`claim.rs`, `claim.lua`).
mod ack;
mod ackmany;
mod acknext;
mod adopt;
mod batch;
mod cancel;
mod children;
mod claim;
mod config;
mod counts;
mod defer;
mod drain;
mod enqueue;
mod enqueuemany;
mod extend;
mod fail;
mod fair;
mod fire;
mod flow;
mod group;
mod grouped;
mod grouping;
mod groups;
mod inspect;
mod obliterate;
mod permit;
mod progress;
mod promote;
mod purge;
mod reap;
mod release;
mod remove;
mod renew;
mod resolve;
mod retry;
mod schedule;
mod schedules;
mod settle;
mod stats;
mod trim;
mod unschedule;

// What several transitions share, named as the Lua includes are.
mod delete;
mod events;
mod fenced;
mod gate;
mod notice;

// Every transition's type.
pub use ack::*;
pub use ackmany::*;
pub use acknext::*;
pub use adopt::*;
pub use batch::*;
pub use cancel::*;
pub use children::*;
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
pub use flow::*;
pub use group::*;
pub use groups::*;
pub use inspect::*;
pub use obliterate::*;
pub use permit::*;
pub use progress::*;
pub use promote::*;
pub use purge::*;
pub use reap::*;
pub use release::*;
pub use remove::*;
pub use renew::*;
pub use resolve::*;
pub use retry::*;
pub use schedule::*;
pub use schedules::*;
pub use settle::*;
pub use stats::*;
pub use trim::*;
pub use unschedule::*;

/// Declares [`Name`] and its exhaustive dispatch from one list: each entry
/// is a variant and the core type of the same name, which has `parse`,
/// `apply` and a `DESCRIPTION`. A transition added here and not written
/// everywhere else does not compile.
macro_rules! transitions {
    ($($name:ident),* $(,)?) => {
        /// A transition of the protocol.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Name {
            $(
                #[doc = concat!("See [`", stringify!($name), "`].")]
                $name,
            )*
        }

        impl Name {
            /// Every transition, in the order `PROTOCOL.md` lists them.
            pub const ALL: &'static [Name] = &[$(Name::$name),*];

            /// What the transition is: keys, arguments, command, effect.
            pub const fn describe(self) -> &'static Description {
                match self {
                    $(Name::$name => &$name::DESCRIPTION,)*
                }
            }

            /// Parse and apply the transition to `store`: the executors' one
            /// entry (the module's commands, the embedded executor) and the
            /// run fuzzer's. A host calls a transition through its executor,
            /// not through this.
            ///
            /// # Errors
            ///
            /// The transition's refusal: its `parse`'s (`EMQARG`, `EMQKIND`,
            /// `EMQSIZE`), then its `apply`'s (`EMQTYPE`, `EMQNOJOB`,
            /// `EMQFENCE`, `EMQSTATE`, `EMQDATA`, `EMQVERSION`, `TRYAGAIN`),
            /// as each transition type's `# Errors` lists them. A refused call
            /// wrote nothing.
            pub fn run<S: Store>(self, store: &mut S, keys: &[&[u8]], args: &[&[u8]]) -> Answer {
                store.begin();
                match self {
                    $(Name::$name => $name::parse(keys, args)?.apply(store),)*
                }
            }

            /// Parse only: what the parse fuzzer calls, an internal kept
            /// public for it; an executor calls [`run`](Name::run). Never
            /// panics, never touches storage.
            ///
            /// # Errors
            ///
            /// The transition's `parse` refusal (`EMQARG`, `EMQKIND`,
            /// `EMQSIZE`), as each transition type's `# Errors` lists it.
            pub fn parse_only(self, keys: &[&[u8]], args: &[&[u8]]) -> Result<(), Refusal> {
                match self {
                    $(Name::$name => $name::parse(keys, args).map(drop),)*
                }
            }
        }
    };
}

transitions!(
    Enqueue,
    EnqueueMany,
    Claim,
    Ack,
    AckNext,
    AckMany,
    Fail,
    Extend,
    Release,
    Reap,
    Promote,
    Purge,
    Cancel,
    Retry,
    Inspect,
    Stats,
    Counts,
    Config,
    Progress,
    Schedule,
    Unschedule,
    Schedules,
    Fire,
    Drain,
    Remove,
    Obliterate,
    Trim,
    Defer,
    Batch,
    Settle,
    Flow,
    Resolve,
    Children,
    Adopt,
    Group,
    Groups,
    Permit,
    Renew,
);

impl Name {
    /// The protocol's name, lower case: `claim`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        self.describe().name
    }

    /// The transition whose module command is `command`, in any case
    /// (`EMQ.CLAIM`, `emq.claim`).
    #[must_use]
    pub fn from_command(command: &[u8]) -> Option<Name> {
        Name::ALL
            .iter()
            .copied()
            .find(|name| name.describe().command.as_bytes().eq_ignore_ascii_case(command))
    }
}

impl std::fmt::Display for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `key` must hold `want` or nothing.
fn need<S: Store>(store: &mut S, key: &[u8], want: KeyType) -> Result<(), Refusal> {
    found(store, key, want).map(|_| ())
}

/// [`need`], answering whether the key exists.
fn found<S: Store>(store: &mut S, key: &[u8], want: KeyType) -> Result<bool, Refusal> {
    match store.key_type(key) {
        KeyType::None => Ok(false),
        found if found == want => Ok(true),
        found => Err(Refusal::new(
            Code::Type,
            format!("{} holds a {}, not a {}", lossy(key), found.name(), want.name()),
        )),
    }
}

/// The queue's wake-up key (PROTOCOL.md §9), when the call passed one. It
/// must hold a sorted set or nothing; checked with the other keys, before
/// the first write.
fn wake_key<'k, S: Store>(store: &mut S, key: Option<&'k [u8]>) -> Result<Option<&'k [u8]>, Refusal> {
    let Some(key) = key else { return Ok(None) };
    need(store, key, KeyType::Zset)?;
    Ok(Some(key))
}

/// Tell one claim waiting on the queue that a job may be pending: the
/// wake-up key's one member, `1`, which a `BZPOPMIN` takes.
fn wake<S: Store>(store: &mut S, key: Option<&[u8]>) {
    if let Some(key) = key {
        store.wake(key);
    }
}

/// A record's `state` (`None`: no record), read with its `attempts` as every
/// read of a record is ([`read_fields`]), after checking it is a hash (or
/// missing, and not on its way to or from another cluster node).
fn read_state<S: Store>(store: &mut S, key: &[u8]) -> Result<Option<Vec<u8>>, Refusal> {
    let [state, _] = read_fields(store, key, [b"state", b"attempts"])?;
    Ok(state)
}

/// [`read_field`] of several fields in one read. Every transition that
/// reads a record reads its `state` and `attempts` (and `payload` where it
/// hands it out): a record that exists without one of them is malformed
/// (`EMQDATA <key> <field> is missing`, the first in `fields`), refused
/// before any write rather than taken for a missing record and dropped.
fn read_fields<S: Store, const N: usize>(
    store: &mut S,
    key: &[u8],
    fields: [&[u8]; N],
) -> Result<[Option<Vec<u8>>; N], Refusal> {
    need(store, key, KeyType::Hash)?;
    let values: [Option<Vec<u8>>; N] = store.hmget(key, &fields).try_into().expect("a value a field");
    if !whole(store, key, &fields, &values)? {
        present_here(store, key)?;
    }
    Ok(values)
}

/// The fields every record is born with (PROTOCOL.md §3).
const BIRTH: [&[u8]; 3] = [b"state", b"attempts", b"payload"];

/// Whether the record read as `values` (of `fields`, among them a birth
/// field) is here: `EMQDATA` when it exists without a birth field it was
/// read for, or with a `state` (when read) that is none of the six. Its
/// existence is asked only when a field is missing. So no transition takes
/// a job whose state it cannot name: not from a set, as if the set named
/// it, nor as a batch's unfinished job.
fn whole<S: Store>(
    store: &mut S,
    key: &[u8],
    fields: &[&[u8]],
    values: &[Option<Vec<u8>>],
) -> Result<bool, Refusal> {
    let absent = fields.iter().zip(values).find(|(field, value)| value.is_none() && BIRTH.contains(field));
    if let Some((field, _)) = absent {
        if values.iter().all(Option::is_none) && store.key_type(key) == KeyType::None {
            return Ok(false);
        }
        return Err(missing(key, field));
    }
    let state = fields.iter().zip(values).find(|(field, _)| **field == b"state");
    if let Some((_, Some(state))) = state {
        if !STATES.contains(&state.as_slice()) {
            return Err(malformed(key, b"state", "a state"));
        }
    }
    Ok(true)
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

/// The fence: the record must exist, be active, and hold `token` as its
/// attempts. Its stamp, read with them, for the write that follows. A
/// `state` that is none of the six, `attempts` that is not an integer, or
/// a record without either, is malformed (`EMQDATA`).
fn fence<S: Store>(store: &mut S, key: &[u8], token: u64) -> Result<Stamped, Refusal> {
    let [state, attempts, enqueued_at] = read_fields(store, key, [b"state", b"attempts", b"enqueued_at"])?;
    // A state none of the six was refused with the read.
    let Some(state) = state else { return Err(Refusal::new(Code::NoJob, "no such job")) };
    let attempts = attempts_of(key, attempts.as_deref())?;
    if state != b"active" || attempts != Some(token as i64) {
        return Err(Refusal::new(Code::Fence, "token does not hold the lease"));
    }
    Ok(Stamped(enqueued_at.is_some()))
}

/// A record read by [`read_records`]: its key, and the fields read.
type Taken<const N: usize> = (Vec<u8>, [Option<Vec<u8>>; N]);

/// `fields` of each id's record (each must be a hash or missing), read
/// before a call takes ids out of a set (CLAIM, REAP, PROMOTE).
fn read_records<S: Store, const N: usize>(
    store: &mut S,
    prefix: &[u8],
    ids: &[Vec<u8>],
    fields: [&[u8]; N],
) -> Result<Vec<Taken<N>>, Refusal> {
    ids.iter()
        .map(|id| {
            let key = crate::parse::record_key(prefix, id);
            let values = read_fields(store, &key, fields)?;
            Ok((key, values))
        })
        .collect()
}

/// The ids out of `set`, once everything the call reads was checked.
fn remove<S: Store>(store: &mut S, set: &[u8], ids: &[Vec<u8>]) {
    for id in ids {
        store.zrem(set, id);
    }
}

/// A stored number, as Lua's `tonumber` reads it (decimal integers here).
fn number(value: Option<&[u8]>) -> Option<f64> {
    std::str::from_utf8(value?).ok()?.trim().parse().ok()
}

/// Write record fields, stamping `updated_at` on a record born here, at its
/// birth and every write after (PROTOCOL.md §3): a birth brings
/// `enqueued_at`, and `updated_at` equal to it, the seed's five fields; one
/// born on Lua gets neither stamp, then or later.
fn write_record<S: Store>(store: &mut S, key: &[u8], fields: &[(&[u8], &[u8])], now: u64) {
    if let Some((_, born)) = fields.iter().find(|(field, _)| *field == b"enqueued_at") {
        let mut all = fields.to_vec();
        all.push((b"updated_at", born));
        store.hset(key, &all);
        return;
    }
    let stamped = Stamped(store.hget(key, b"enqueued_at").is_some());
    write_stamped(store, key, fields, now, stamped);
}

/// Whether a record's writes stamp `updated_at` (it has `enqueued_at`), as
/// read with its other fields by a transition that reads them anyway.
#[derive(Clone, Copy, Debug)]
struct Stamped(bool);

/// [`write_record`] to a record whose stamp was read before.
fn write_stamped<S: Store>(store: &mut S, key: &[u8], fields: &[(&[u8], &[u8])], now: u64, stamped: Stamped) {
    let now = now.to_string();
    let mut all = fields.to_vec();
    if stamped.0 {
        all.push((b"updated_at", now.as_bytes()));
    }
    store.hset(key, &all);
}

/// Back to pending at `score`, the job's own priority as [`priority_of`]
/// read it before the call's first write, in its group's sets when it has
/// one (`group`: the queue's groups and its group's name).
fn to_pending<S: Store>(
    store: &mut S,
    record: &[u8],
    pending: &[u8],
    (score, group): (f64, Option<(&grouping::Grouping<'_>, &[u8])>),
    id: &[u8],
    now: u64,
) {
    write_record(store, record, &[(b"state", b"pending")], now);
    match group {
        None => store.zadd(pending, score, id),
        Some((grouping, group)) => grouping.enter_pending(store, pending, id, group, score),
    }
}

/// A job's priority, its entry in `<q>priority` (0 when it has none), read
/// before any write: an entry that is not an integer is `EMQDATA`.
fn priority_of<S: Store>(store: &mut S, priority: &[u8], id: &[u8]) -> Result<f64, Refusal> {
    let entry = store.hget(priority, id);
    Ok(stored(entry.as_deref(), priority, id)?.unwrap_or(0) as f64)
}

/// A job's own policy, its entry in `<q>policy` (none when it has none),
/// read before any write: an entry that does not read as a policy (§7.2)
/// is `EMQDATA`.
fn policy_of<S: Store>(store: &mut S, policies: &[u8], id: &[u8]) -> Result<Option<Policy>, Refusal> {
    match store.hget(policies, id) {
        None => Ok(None),
        Some(text) => Policy::parse(&text).map(Some).ok_or_else(|| malformed(policies, id, "a policy")),
    }
}

/// The queue's protocol, `<q>config`'s `protocol` as read with the other
/// settings (PROTOCOL.md §2): absent, or `major.minor` of this speaker's
/// major; another major, or a malformed one, is `EMQVERSION`, before any write.
fn protocol(config: &[u8], value: Option<&[u8]>) -> Result<(), Refusal> {
    let Some(value) = value else { return Ok(()) };
    match std::str::from_utf8(value).ok().and_then(Version::parse) {
        Some(found) if PROTOCOL.compatible(found) => Ok(()),
        Some(found) => Err(Refusal::new(
            Code::Version,
            format!("queue written by protocol {found}; this speaker is {PROTOCOL}"),
        )),
        None => Err(Refusal::new(
            Code::Version,
            format!("{} protocol is not <major>.<minor>; this speaker is {PROTOCOL}", lossy(config)),
        )),
    }
}

/// The seven states a record's `state` may hold (PROTOCOL.md §3):
/// `waiting`, a parent's while it waits for its children, since 1.6.
const STATES: [&[u8]; 7] = [b"pending", b"active", b"delayed", b"done", b"dead", b"cancelled", b"waiting"];

/// A record's `attempts` as read before a write: `EMQDATA` unless it is an
/// integer of 0 or more (a missing record has none). The tokens a claim
/// mints from a negative one would differ by executor.
fn attempts_of(key: &[u8], attempts: Option<&[u8]>) -> Result<Option<i64>, Refusal> {
    match stored(attempts, key, b"attempts")? {
        Some(n) if n < 0 => Err(malformed(key, b"attempts", "an integer of 0 or more")),
        n => Ok(n),
    }
}
