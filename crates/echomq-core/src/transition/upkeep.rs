//! Upkeep, safe from many workers at once: REAP, PROMOTE, PURGE; and an
//! operator's DRAIN and OBLITERATE, which delete jobs and queues (see the
//! `.lua` twins).

use super::control::retention;
use super::events::{emit, trailing, Events};
use super::{
    attempts_of, need, policy_of, present_here, priority_of, read_records, remove, to_pending, wake,
    wake_key, write_record,
};
use crate::description::{Description, Effect, Role};
use crate::limits::{AGE_MS, MAX_ATTEMPTS, SWEEP_LIMIT};
use crate::parse::{count, options, queue_prefix, record_key};
use crate::store::{KeyType, Store};
use crate::{Answer, Code, Refusal, Reply};

fn limit(args: &[&[u8]]) -> Result<usize, Refusal> {
    let [limit] = options(args, [("LIMIT", SWEEP_LIMIT)])?;
    Ok(limit.unwrap_or(*SWEEP_LIMIT.end()) as usize)
}

/// A parsed REAP.
#[derive(Debug)]
pub struct Reap<'a> {
    keys: &'a [&'a [u8]],
    prefix: &'a [u8],
    max_attempts: u64,
    limit: usize,
}

impl<'a> Reap<'a> {
    /// What REAP is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "reap",
        command: "EMQ.REAP",
        keys: &[
            Role::Active,
            Role::Pending,
            Role::Dead,
            Role::Errors,
            Role::Priority,
            Role::Policy,
            Role::Events,
            Role::Config,
            Role::Wake,
        ],
        forms: &[9],
        args: &["max_attempts"],
        options: &["LIMIT"],
        effect: Effect::Writes,
        wakes_claims: true,
    };

    /// KEYS: active, pending, dead, errors, priority, policy, events,
    /// config, wake. ARGV: max attempts (the reaper's, for a job with no policy
    /// of its own), LIMIT.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Reap<'a>, Refusal> {
        let prefix = queue_prefix(keys, Self::DESCRIPTION.form(keys.len())?, b"")?;
        let max_attempts = count(args.first().copied(), "max_attempts", MAX_ATTEMPTS)?;
        let limit = limit(args.get(1..).unwrap_or_default())?;
        Ok(Reap { keys, prefix, max_attempts, limit })
    }

    /// Expired leases to pending, or to dead at max attempts; reply [requeued, dead].
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let [active, pending, dead, errors, priority, policy] =
            [self.keys[0], self.keys[1], self.keys[2], self.keys[3], self.keys[4], self.keys[5]];
        let types =
            [KeyType::Zset, KeyType::Zset, KeyType::Zset, KeyType::Hash, KeyType::Hash, KeyType::Hash];
        for (key, want) in self.keys.iter().zip(types) {
            need(store, key, want)?;
        }
        let events = Events::open(store, trailing(self.keys, 8))?;
        let wakes = wake_key(store, self.keys, 8)?;
        let now = store.now_ms();
        let ids = store.zupto(active, now as f64, self.limit);
        if ids.is_empty() {
            return Ok(Reply::Array(vec![Reply::count(0), Reply::count(0)]));
        }
        let records = read_records(store, self.prefix, &ids, [b"attempts"])?;
        let policies = store.key_type(policy) == KeyType::Hash;
        // Every record's attempts, policy and priority, read and checked
        // before the first write.
        let mut reaped = Vec::with_capacity(ids.len());
        for (id, (key, [attempts])) in ids.iter().zip(records) {
            let Some(attempt) = attempts_of(&key, attempts.as_deref())? else { continue };
            let own = if policies { policy_of(store, policy, id)? } else { None };
            let max_attempts = own.unwrap_or_default().max_attempts(self.max_attempts);
            let dies = attempt >= max_attempts as i64;
            let score = if dies { 0.0 } else { priority_of(store, priority, id)? };
            reaped.push((id, key, attempt, dies, score));
        }
        remove(store, active, &ids);
        let (mut requeued, mut died) = (0, 0);
        for (id, key, attempt, dies, score) in reaped {
            let text = attempt.to_string();
            let said: [(&[u8], &[u8]); 2] = [(b"attempt", text.as_bytes()), (b"error", b"lease expired")];
            if dies {
                write_record(store, &key, &[(b"state", b"dead")], now);
                store.zadd(dead, now as f64, id);
                store.hset(errors, &[(id, b"lease expired")]);
                emit(&events, store, "dead", id, &said);
                died += 1;
            } else {
                to_pending(store, &key, pending, score, id, now);
                emit(&events, store, "failed", id, &said);
                requeued += 1;
            }
        }
        if requeued > 0 {
            wake(store, wakes);
        }
        Ok(Reply::Array(vec![Reply::count(requeued), Reply::count(died)]))
    }
}

/// A parsed PROMOTE.
#[derive(Debug)]
pub struct Promote<'a> {
    keys: &'a [&'a [u8]],
    prefix: &'a [u8],
    limit: usize,
}

impl<'a> Promote<'a> {
    /// What PROMOTE is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "promote",
        command: "EMQ.PROMOTE",
        keys: &[Role::Delayed, Role::Pending, Role::Priority, Role::Events, Role::Config, Role::Wake],
        forms: &[6],
        args: &[],
        options: &["LIMIT"],
        effect: Effect::Writes,
        wakes_claims: true,
    };

    /// KEYS: delayed, pending, priority, events, config, wake. ARGV: LIMIT.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Promote<'a>, Refusal> {
        let prefix = queue_prefix(keys, Self::DESCRIPTION.form(keys.len())?, b"")?;
        Ok(Promote { keys, prefix, limit: limit(args)? })
    }

    /// Due delayed jobs to pending at their priority; reply how many.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let [delayed, pending, priority] = [self.keys[0], self.keys[1], self.keys[2]];
        need(store, delayed, KeyType::Zset)?;
        need(store, pending, KeyType::Zset)?;
        need(store, priority, KeyType::Hash)?;
        let events = Events::open(store, trailing(self.keys, 5))?;
        let wakes = wake_key(store, self.keys, 5)?;
        let now = store.now_ms();
        let ids = store.zupto(delayed, now as f64, self.limit);
        if ids.is_empty() {
            return Ok(Reply::count(0));
        }
        let records = read_records(store, self.prefix, &ids, [b"state"])?;
        // Each priority read before the first write (an `abc` refuses them all).
        let mut scores = Vec::with_capacity(ids.len());
        for (id, (_, [state])) in ids.iter().zip(&records) {
            scores.push(if state.is_some() { priority_of(store, priority, id)? } else { 0.0 });
        }
        remove(store, delayed, &ids);
        let mut promoted = 0;
        for ((id, (key, [state])), score) in ids.iter().zip(records).zip(scores) {
            if state.is_some() {
                to_pending(store, &key, pending, score, id, now);
                emit(&events, store, "promoted", id, &[]);
                promoted += 1;
            }
        }
        if promoted > 0 {
            wake(store, wakes);
        }
        Ok(Reply::count(promoted))
    }
}

/// A parsed PURGE.
#[derive(Debug)]
pub struct Purge<'a> {
    keys: &'a [&'a [u8]],
    prefix: &'a [u8],
    age: u64,
    limit: usize,
}

impl<'a> Purge<'a> {
    /// What PURGE is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "purge",
        command: "EMQ.PURGE",
        keys: &[
            Role::Finished,
            Role::Priority,
            Role::Errors,
            Role::Progress,
            Role::Policy,
            Role::Results,
            Role::Headers,
        ],
        forms: &[7],
        args: &["age"],
        options: &["LIMIT"],
        effect: Effect::Frees,
        wakes_claims: false,
    };

    /// KEYS: done, dead or cancelled; priority; errors; progress; policy;
    /// results; headers. ARGV: age, LIMIT.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Purge<'a>, Refusal> {
        let sets = [(b"done".as_slice(), Role::Done), (b"dead", Role::Dead), (b"cancelled", Role::Cancelled)];
        let finished = named_set(keys, &sets, "done, dead or cancelled")?;
        // KEYS[1] is the finished set it names, the other roles as described.
        let mut roles = Self::DESCRIPTION.keys.to_vec();
        roles[0] = finished;
        let prefix = queue_prefix(keys, &roles, b"")?;
        let age = count(args.first().copied(), "age", AGE_MS)?;
        let limit = limit(args.get(1..).unwrap_or_default())?;
        Ok(Purge { keys, prefix, age, limit })
    }

    /// Delete finished jobs past the age: records, set entries, and their
    /// entries in the side hashes.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let (finished, sides) = (self.keys[0], side_hashes(&self.keys[1..]));
        need(store, finished, KeyType::Zset)?;
        for side in sides {
            need(store, side, KeyType::Hash)?;
        }
        let cutoff = store.now_ms() as f64 - self.age as f64;
        let ids = store.zupto(finished, cutoff, self.limit);
        delete_jobs(store, self.prefix, finished, sides, &ids)
    }
}

/// A parsed TRIM.
#[derive(Debug)]
pub struct Trim<'a> {
    keys: &'a [&'a [u8]],
    prefix: &'a [u8],
    state: Role,
    limit: usize,
}

impl<'a> Trim<'a> {
    /// What TRIM is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "trim",
        command: "EMQ.TRIM",
        keys: &[
            Role::Finished,
            Role::Priority,
            Role::Errors,
            Role::Progress,
            Role::Policy,
            Role::Results,
            Role::Headers,
            Role::Config,
        ],
        forms: &[8],
        args: &[],
        options: &["LIMIT"],
        effect: Effect::Frees,
        wakes_claims: false,
    };

    /// KEYS: done, dead or cancelled; priority; errors; progress; policy;
    /// results; headers; config. ARGV: LIMIT.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Trim<'a>, Refusal> {
        let sets = [(b"done".as_slice(), Role::Done), (b"dead", Role::Dead), (b"cancelled", Role::Cancelled)];
        let state = named_set(keys, &sets, "done, dead or cancelled")?;
        let mut roles = Self::DESCRIPTION.keys.to_vec();
        roles[0] = state;
        let prefix = queue_prefix(keys, &roles, b"")?;
        let limit = limit(args)?;
        Ok(Trim { keys, prefix, state, limit })
    }

    /// Bounded retention: delete up to LIMIT of the oldest jobs of the set
    /// that are past the queue's age for it, or beyond its count (each 0:
    /// no bound; unset: the defaults).
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let (set, sides, config) = (self.keys[0], side_hashes(&self.keys[1..]), self.keys[SIDES + 1]);
        need(store, set, KeyType::Zset)?;
        for hash in sides.iter().chain([&config]) {
            need(store, hash, KeyType::Hash)?;
        }
        let [age, count] = retention(store, config, self.state)?;
        // The set is in finish order, so each bound cuts a prefix of it: the
        // longer prefix is what goes.
        let past_age = if age > 0 {
            let cutoff = store.now_ms() as f64 - age as f64;
            store.zupto(set, cutoff, self.limit).len()
        } else {
            0
        };
        let past_count = if count > 0 { store.zcard(set).saturating_sub(count) as usize } else { 0 };
        let going = past_age.max(past_count).min(self.limit);
        if going == 0 {
            return Ok(Reply::count(0));
        }
        let ids = store.zhead(set, going);
        delete_jobs(store, self.prefix, set, sides, &ids)
    }
}

/// The side hashes a deleted job has entries in, in KEYS order: priority,
/// errors, progress, policy, results, headers (PROTOCOL.md §2).
const SIDES: usize = 6;

/// The side hashes, the first [`SIDES`] of `keys`.
fn side_hashes<'k>(keys: &[&'k [u8]]) -> [&'k [u8]; SIDES] {
    std::array::from_fn(|i| keys[i])
}

/// Delete the jobs `ids` of `set`: their set entries, their entries in the
/// side hashes and their records; reply how many. Every record is checked
/// first (a hash, and on this node), so a refusal writes nothing. PURGE's,
/// TRIM's and DRAIN's common end.
fn delete_jobs<S: Store>(
    store: &mut S,
    prefix: &[u8],
    set: &[u8],
    sides: [&[u8]; SIDES],
    ids: &[Vec<u8>],
) -> Answer {
    if ids.is_empty() {
        return Ok(Reply::count(0));
    }
    for id in ids {
        let record = record_key(prefix, id);
        need(store, &record, KeyType::Hash)?;
        present_here(store, &record)?;
    }
    // In the scripts' order (all removals, then each side hash, then the
    // records), so the module replicates and announces the same commands as Lua.
    for id in ids {
        store.zrem(set, id);
    }
    for side in sides {
        for id in ids {
            store.hdel(side, id);
        }
    }
    for id in ids {
        store.del(&record_key(prefix, id));
    }
    Ok(Reply::count(ids.len() as u64))
}

/// The set KEYS[1] names, by the last word of its name, as `roles` allow:
/// its role, or the refusal that says which it must be.
fn named_set(keys: &[&[u8]], roles: &[(&[u8], Role)], must: &str) -> Result<Role, Refusal> {
    let tail = keys
        .first()
        .and_then(|key| key.rsplit(|b| *b == b':').next().filter(|_| key.contains(&b':')))
        .filter(|tail| !tail.is_empty() && tail.iter().all(u8::is_ascii_alphabetic));
    match roles.iter().find(|(name, _)| Some(*name) == tail) {
        Some((_, role)) => Ok(*role),
        None => Err(Refusal::arg(format!("KEYS[1] must be emq:{{<queue>}}:{must}"))),
    }
}

/// A parsed DRAIN.
#[derive(Debug)]
pub struct Drain<'a> {
    keys: &'a [&'a [u8]],
    prefix: &'a [u8],
    limit: usize,
}

impl<'a> Drain<'a> {
    /// What DRAIN is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "drain",
        command: "EMQ.DRAIN",
        keys: &[
            Role::Unfinished,
            Role::Priority,
            Role::Errors,
            Role::Progress,
            Role::Policy,
            Role::Results,
            Role::Headers,
        ],
        forms: &[7],
        args: &[],
        options: &["LIMIT"],
        effect: Effect::Frees,
        wakes_claims: false,
    };

    /// KEYS: pending, delayed or active; priority; errors; progress; policy;
    /// results; headers. ARGV: LIMIT.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Drain<'a>, Refusal> {
        let sets =
            [(b"pending".as_slice(), Role::Pending), (b"delayed", Role::Delayed), (b"active", Role::Active)];
        let set = named_set(keys, &sets, "pending, delayed or active")?;
        let mut roles = Self::DESCRIPTION.keys.to_vec();
        roles[0] = set;
        let prefix = queue_prefix(keys, &roles, b"")?;
        let limit = limit(args)?;
        Ok(Drain { keys, prefix, limit })
    }

    /// Delete up to LIMIT jobs of the set, head first, whatever their state
    /// of progress: a drained active job's holder is fenced (its record is gone).
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let (set, sides) = (self.keys[0], side_hashes(&self.keys[1..]));
        need(store, set, KeyType::Zset)?;
        for side in sides {
            need(store, side, KeyType::Hash)?;
        }
        let ids = store.zhead(set, self.limit);
        delete_jobs(store, self.prefix, set, sides, &ids)
    }
}

/// A parsed OBLITERATE.
#[derive(Debug)]
pub struct Obliterate<'a> {
    keys: &'a [&'a [u8]],
}

impl<'a> Obliterate<'a> {
    /// What OBLITERATE is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "obliterate",
        command: "EMQ.OBLITERATE",
        keys: &[
            Role::Pending,
            Role::Active,
            Role::Delayed,
            Role::Done,
            Role::Dead,
            Role::Cancelled,
            Role::Priority,
            Role::Errors,
            Role::Progress,
            Role::Policy,
            Role::Config,
            Role::Rate,
            Role::Schedules,
            Role::Ticks,
            Role::Unique,
            Role::UniqueUntil,
            Role::Results,
            Role::Events,
            Role::Headers,
            Role::Batches,
            Role::BatchJobs,
            Role::BatchOpen,
            Role::Wake,
        ],
        forms: &[23],
        args: &[],
        options: &[],
        effect: Effect::Frees,
        wakes_claims: false,
    };

    /// KEYS: the six sets, then every other key of the queue. No ARGV.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Obliterate<'a>, Refusal> {
        queue_prefix(keys, Self::DESCRIPTION.form(keys.len())?, b"")?;
        options(args, [])?;
        Ok(Obliterate { keys })
    }

    /// The last step of deleting a queue: refused while any of its six sets
    /// holds a job; else delete every other key it owns. Reply how many
    /// keys were deleted. Every key must hold its protocol type (or nothing).
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        for (key, role) in self.keys.iter().zip(Self::DESCRIPTION.keys) {
            need(store, key, role.key_type())?;
        }
        let (sets, rest) = self.keys.split_at(6);
        let jobs: u64 = sets.iter().map(|set| store.zcard(set)).sum();
        if jobs > 0 {
            return Err(Refusal::new(Code::State, format!("the queue still holds {jobs} jobs")));
        }
        let mut deleted = 0;
        for key in rest {
            if store.key_type(key) != KeyType::None {
                store.del(key);
                deleted += 1;
            }
        }
        Ok(Reply::count(deleted))
    }
}
