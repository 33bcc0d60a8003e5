//! The reads: INSPECT (a record and its entries beside it) and STATS (see the `.lua` twins). They write nothing.

use super::need;
use crate::description::{Description, Effect, Role};
use crate::parse::{kind, options, queue_prefix};
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal, Reply};

/// A parsed INSPECT.
#[derive(Debug)]
pub struct Inspect<'a> {
    keys: &'a [&'a [u8]],
    id: &'a [u8],
}

impl<'a> Inspect<'a> {
    /// What INSPECT is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "inspect",
        command: "EMQ.INSPECT",
        keys: &[Role::Job, Role::Errors, Role::Progress, Role::Results, Role::Policy, Role::Headers],
        forms: &[6],
        args: &["id"],
        options: &[],
        effect: Effect::Reads,
        wakes_claims: false,
    };

    /// KEYS: job, errors, progress, results, policy, headers. ARGV: id.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Inspect<'a>, Refusal> {
        let id = kind(args.first().copied())?;
        queue_prefix(keys, Self::DESCRIPTION.form(keys.len())?, id)?;
        options(args.get(1..).unwrap_or_default(), [])?;
        Ok(Inspect { keys, id })
    }

    /// [the record as a flat field/value array, then the id's entry in each
    /// other key or nil: its last error, last progress, result, own policy,
    /// headers].
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        for key in self.keys {
            need(store, key, KeyType::Hash)?;
        }
        let fields = store
            .hgetall(self.keys[0])
            .into_iter()
            .flat_map(|(field, value)| [Reply::Bulk(field), Reply::Bulk(value)])
            .collect();
        let mut reply = vec![Reply::Array(fields)];
        for key in &self.keys[1..] {
            reply.push(store.hget(key, self.id).map_or(Reply::Nil, Reply::Bulk));
        }
        Ok(Reply::Array(reply))
    }
}

/// A parsed STATS.
#[derive(Debug)]
pub struct Stats<'a> {
    keys: &'a [&'a [u8]],
}

impl<'a> Stats<'a> {
    /// What STATS is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "stats",
        command: "EMQ.STATS",
        keys: &[Role::Pending, Role::Active, Role::Delayed, Role::Done, Role::Dead, Role::Cancelled],
        forms: &[6],
        args: &[],
        options: &[],
        effect: Effect::Reads,
        wakes_claims: false,
    };

    /// KEYS: pending, active, delayed, done, dead, cancelled. No ARGV.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Stats<'a>, Refusal> {
        queue_prefix(keys, Self::DESCRIPTION.keys, b"")?;
        options(args, [])?;
        Ok(Stats { keys })
    }

    /// Each state set's size.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let mut counts = Vec::with_capacity(6);
        for key in self.keys {
            need(store, key, KeyType::Zset)?;
            counts.push(Reply::count(store.zcard(key)));
        }
        Ok(Reply::Array(counts))
    }
}
