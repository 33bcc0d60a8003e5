//! Upkeep, safe from many workers at once: REAP, PROMOTE, PURGE (see the `.lua` twins).

use super::{need, number, present_here, take, to_pending, write_record};
use crate::description::{Description, Effect, Role};
use crate::limits::{AGE_MS, MAX_ATTEMPTS, SWEEP_LIMIT};
use crate::parse::{count, options, queue_prefix, record_key};
use crate::policy::Policy;
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal, Reply};

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
        keys: &[Role::Active, Role::Pending, Role::Dead, Role::Errors, Role::Priority, Role::Policy],
        required_keys: 6,
        args: &["max_attempts"],
        options: &["LIMIT"],
        effect: Effect::Writes,
        wakes_claims: true,
    };

    /// KEYS: active, pending, dead, errors, priority, policy. ARGV: max
    /// attempts (the reaper's, for a job with no policy of its own), LIMIT.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Reap<'a>, Refusal> {
        let prefix = queue_prefix(keys, Self::DESCRIPTION.keys, b"")?;
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
        let now = store.now_ms();
        let ids = store.zupto(active, now as f64, self.limit);
        if ids.is_empty() {
            return Ok(Reply::Array(vec![Reply::count(0), Reply::count(0)]));
        }
        let records = take(store, active, self.prefix, &ids, b"attempts")?;
        let policies = store.key_type(policy) == KeyType::Hash;
        let (mut requeued, mut died) = (0, 0);
        for (id, (key, attempts)) in ids.iter().zip(records) {
            let Some(attempts) = attempts else { continue };
            let own = policies.then(|| store.hget(policy, id)).flatten().map(|text| Policy::read(&text));
            let max_attempts = own.unwrap_or_default().max_attempts(self.max_attempts);
            if number(Some(&attempts)).unwrap_or(0.0) >= max_attempts as f64 {
                write_record(store, &key, &[(b"state", b"dead")], now);
                store.zadd(dead, now as f64, id);
                store.hset(errors, &[(id, b"lease expired")]);
                died += 1;
            } else {
                to_pending(store, &key, pending, priority, id, now);
                requeued += 1;
            }
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
        keys: &[Role::Delayed, Role::Pending, Role::Priority],
        required_keys: 3,
        args: &[],
        options: &["LIMIT"],
        effect: Effect::Writes,
        wakes_claims: true,
    };

    /// KEYS: delayed, pending, priority. ARGV: LIMIT.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Promote<'a>, Refusal> {
        let prefix = queue_prefix(keys, Self::DESCRIPTION.keys, b"")?;
        Ok(Promote { keys, prefix, limit: limit(args)? })
    }

    /// Due delayed jobs to pending at their priority; reply how many.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let [delayed, pending, priority] = [self.keys[0], self.keys[1], self.keys[2]];
        need(store, delayed, KeyType::Zset)?;
        need(store, pending, KeyType::Zset)?;
        need(store, priority, KeyType::Hash)?;
        let now = store.now_ms();
        let ids = store.zupto(delayed, now as f64, self.limit);
        if ids.is_empty() {
            return Ok(Reply::count(0));
        }
        let records = take(store, delayed, self.prefix, &ids, b"state")?;
        let mut promoted = 0;
        for (id, (key, state)) in ids.iter().zip(records) {
            if state.is_some() {
                to_pending(store, &key, pending, priority, id, now);
                promoted += 1;
            }
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
        keys: &[Role::Finished, Role::Priority, Role::Errors, Role::Progress, Role::Policy],
        required_keys: 5,
        args: &["age"],
        options: &["LIMIT"],
        effect: Effect::Frees,
        wakes_claims: false,
    };

    /// KEYS: done, dead or cancelled; priority; errors; progress; policy. ARGV: age, LIMIT.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Purge<'a>, Refusal> {
        let finished = keys
            .first()
            .and_then(|key| key.rsplit(|b| *b == b':').next().filter(|_| key.contains(&b':')))
            .filter(|tail| !tail.is_empty() && tail.iter().all(u8::is_ascii_alphabetic));
        let finished = match finished {
            Some(b"done") => Role::Done,
            Some(b"dead") => Role::Dead,
            Some(b"cancelled") => Role::Cancelled,
            _ => return Err(Refusal::arg("KEYS[1] must be emq:{<queue>}:done, dead or cancelled")),
        };
        // KEYS[1] is the finished set it names, the other roles as described.
        let roles = [finished, Role::Priority, Role::Errors, Role::Progress, Role::Policy];
        debug_assert_eq!(roles[1..], Self::DESCRIPTION.keys[1..]);
        let prefix = queue_prefix(keys, &roles, b"")?;
        let age = count(args.first().copied(), "age", AGE_MS)?;
        let limit = limit(args.get(1..).unwrap_or_default())?;
        Ok(Purge { keys, prefix, age, limit })
    }

    /// Delete finished jobs past the age: records, set entries, priorities,
    /// errors, progress and policies.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let [finished, priority, errors, progress, policy] =
            [self.keys[0], self.keys[1], self.keys[2], self.keys[3], self.keys[4]];
        need(store, finished, KeyType::Zset)?;
        for side in [priority, errors, progress, policy] {
            need(store, side, KeyType::Hash)?;
        }
        let cutoff = store.now_ms() as f64 - self.age as f64;
        let ids = store.zupto(finished, cutoff, self.limit);
        if ids.is_empty() {
            return Ok(Reply::count(0));
        }
        for id in &ids {
            let record = record_key(self.prefix, id);
            need(store, &record, KeyType::Hash)?;
            present_here(store, &record)?;
        }

        // In the script's order (all removals, then the priorities, the
        // errors, the progress, the policies, the records), so the module
        // replicates and announces the same commands as Lua.
        for id in &ids {
            store.zrem(finished, id);
        }
        for side in [priority, errors, progress, policy] {
            for id in &ids {
                store.hdel(side, id);
            }
        }
        for id in &ids {
            store.del(&record_key(self.prefix, id));
        }
        Ok(Reply::count(ids.len() as u64))
    }
}
