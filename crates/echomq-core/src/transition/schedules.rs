//! SCHEDULES: a queue's schedules with their next ticks, for the hosts
//! that compute them; writes nothing (PROTOCOL.md §11.6; `schedules.lua`).

use super::need;
use crate::description::{keys, Description, Effect};
use crate::limits::{FLAG, SWEEP_LIMIT};
use crate::parse::{named_keys, options};
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal, Reply};

keys! {
    /// SCHEDULES's KEYS.
    SchedulesKeys {
        schedules: Schedules,
        ticks: Ticks,
    }
}

/// A parsed SCHEDULES.
#[derive(Debug)]
pub struct Schedules<'a> {
    keys: SchedulesKeys<'a>,
    due: bool,
    limit: usize,
}

impl<'a> Schedules<'a> {
    /// What SCHEDULES is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "schedules",
        command: "EMQ.SCHEDULES",
        keys: SchedulesKeys::ROLES,
        forms: SchedulesKeys::FORMS,
        args: &[],
        options: &["DUE", "LIMIT"],
        effect: Effect::Reads,
        wakes_claims: false,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: false,
    };

    /// KEYS: schedules, ticks. ARGV: options DUE, LIMIT.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQARG`: the keys are not this queue's, in their number and roles; an option is unknown, given
    ///   twice or out of range.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Schedules<'a>, Refusal> {
        let (keys, _) = named_keys::<SchedulesKeys>(keys, b"")?;
        let [due, limit] = options(args, [("DUE", FLAG), ("LIMIT", SWEEP_LIMIT)])?;
        let limit = limit.unwrap_or(*SWEEP_LIMIT.end()) as usize;
        Ok(Schedules { keys, due: due == Some(1), limit })
    }

    /// [now, [name, definition, next]…]: up to LIMIT schedules by next tick,
    /// only those due (next ≤ now) with DUE 1.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: schedules or ticks holds another type.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let SchedulesKeys { schedules, ticks } = self.keys;
        need(store, schedules, KeyType::Hash)?;
        need(store, ticks, KeyType::Zset)?;
        let now = store.now_ms();
        let max = if self.due { now as f64 } else { f64::INFINITY };
        let mut reply = vec![Reply::count(now)];
        for name in store.zupto(ticks, max, self.limit) {
            let Some(definition) = store.hget(schedules, &name) else { continue };
            let next = store.zscore(ticks, &name).unwrap_or_default();
            reply.push(Reply::Array(vec![
                Reply::Bulk(name),
                Reply::Bulk(definition),
                Reply::count(next as u64),
            ]));
        }
        Ok(Reply::Array(reply))
    }
}
