//! STATS: the sizes of a queue's six sets; writes nothing (PROTOCOL.md §7;
//! `stats.lua`).

use super::need;
use crate::description::{keys, Description, Effect};
use crate::parse::{named_keys, options};
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal, Reply};

keys! {
    /// STATS's KEYS.
    StatsKeys {
        pending: Pending,
        active: Active,
        delayed: Delayed,
        done: Done,
        dead: Dead,
        cancelled: Cancelled,
    }
    then waiting: Waiting
}

/// A parsed STATS.
#[derive(Debug)]
pub struct Stats<'a> {
    keys: StatsKeys<'a>,
}

impl<'a> Stats<'a> {
    /// What STATS is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "stats",
        command: "EMQ.STATS",
        keys: StatsKeys::ROLES,
        forms: StatsKeys::FORMS,
        args: &[],
        options: &[],
        effect: Effect::Reads,
        wakes_claims: false,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: false,
    };

    /// KEYS: pending, active, delayed, done, dead, cancelled. No ARGV.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQARG`: the keys are not this queue's, in their number and roles, or an argument is given.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Stats<'a>, Refusal> {
        let (keys, _) = named_keys::<StatsKeys>(keys, b"")?;
        options(args, [])?;
        Ok(Stats { keys })
    }

    /// Each state set's size.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: a set holds another type.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let mut counts = Vec::with_capacity(7);
        for key in self.keys.all().into_iter().chain(self.keys.waiting) {
            need(store, key, KeyType::Zset)?;
            counts.push(Reply::count(store.zcard(key)));
        }
        Ok(Reply::Array(counts))
    }
}
