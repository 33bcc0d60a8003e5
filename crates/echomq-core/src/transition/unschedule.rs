//! UNSCHEDULE: forget a schedule (PROTOCOL.md §7; `unschedule.lua`).

use super::need;
use super::schedule::schedule_name;
use crate::description::{keys, Description, Effect};
use crate::parse::{named_keys, options};
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal, Reply};

keys! {
    /// UNSCHEDULE's KEYS.
    UnscheduleKeys {
        schedules: Schedules,
        ticks: Ticks,
    }
}

/// A parsed UNSCHEDULE.
#[derive(Debug)]
pub struct Unschedule<'a> {
    keys: UnscheduleKeys<'a>,
    name: &'a [u8],
}

impl<'a> Unschedule<'a> {
    /// What UNSCHEDULE is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "unschedule",
        command: "EMQ.UNSCHEDULE",
        keys: UnscheduleKeys::ROLES,
        forms: UnscheduleKeys::FORMS,
        args: &["name"],
        options: &[],
        effect: Effect::Frees,
        wakes_claims: false,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: true,
    };

    /// KEYS: schedules, ticks. ARGV: name.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQARG`: the keys are not this queue's, in their number and roles; the name is not 1 to
    ///   `MAX_SCHEDULE_NAME` bytes; an argument follows it.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Unschedule<'a>, Refusal> {
        let (keys, _) = named_keys::<UnscheduleKeys>(keys, b"")?;
        let name = schedule_name(args.first().copied())?;
        options(args.get(1..).unwrap_or_default(), [])?;
        Ok(Unschedule { keys, name })
    }

    /// Remove the schedule; reply 1 removed, 0 there was none.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: schedules or ticks holds another type.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let UnscheduleKeys { schedules, ticks } = self.keys;
        need(store, schedules, KeyType::Hash)?;
        need(store, ticks, KeyType::Zset)?;
        let existed = store.hget(schedules, self.name).is_some();
        store.hdel(schedules, self.name);
        store.zrem(ticks, self.name);
        Ok(Reply::Int(existed.into()))
    }
}
