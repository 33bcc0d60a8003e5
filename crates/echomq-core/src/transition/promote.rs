//! PROMOTE: due delayed jobs to pending; upkeep (PROTOCOL.md §7; `promote.lua`).

use super::delete::limit;
use super::events::{emit, Events};
use super::grouped::{group_at, groups_of};
use super::{need, priority_of, read_records, remove, to_pending, wake, wake_key};
use crate::description::{keys, Description, Effect};
use crate::parse::named_keys;
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal, Reply};

keys! {
    /// PROMOTE's KEYS.
    PromoteKeys {
        delayed: Delayed,
        pending: Pending,
        priority: Priority,
        events: Events,
        config: Config,
        wake: Wake,
    }
}

/// A parsed PROMOTE.
#[derive(Debug)]
pub struct Promote<'a> {
    keys: PromoteKeys<'a>,
    prefix: &'a [u8],
    limit: usize,
}

impl<'a> Promote<'a> {
    /// What PROMOTE is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "promote",
        command: "EMQ.PROMOTE",
        keys: PromoteKeys::ROLES,
        forms: PromoteKeys::FORMS,
        args: &[],
        options: &["LIMIT"],
        effect: Effect::Writes,
        wakes_claims: true,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: true,
    };

    /// KEYS: delayed, pending, priority, events, config, wake. ARGV: LIMIT.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQARG`: the keys are not this queue's, in their number and roles; `LIMIT` is unknown, given twice
    ///   or out of range.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Promote<'a>, Refusal> {
        let (keys, prefix) = named_keys::<PromoteKeys>(keys, b"")?;
        Ok(Promote { keys, prefix, limit: limit(args)? })
    }

    /// Due delayed jobs to pending at their priority; reply how many.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: a key or a due record holds another type.
    /// - `TRYAGAIN`: a due record is missing while the queue's slot moves between cluster nodes.
    /// - `EMQVERSION`: `<q>config`'s `protocol` is another major, or malformed.
    /// - `EMQDATA`: `<q>config`'s `events` is not an integer, or a due job's priority is not an integer,
    ///   or its record's `state` is none of the six, or it lacks its state or attempts.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let PromoteKeys { delayed, pending, priority, .. } = self.keys;
        need(store, delayed, KeyType::Zset)?;
        need(store, pending, KeyType::Zset)?;
        need(store, priority, KeyType::Hash)?;
        let events = Events::open(store, Some((self.keys.events, self.keys.config)))?;
        let wakes = wake_key(store, Some(self.keys.wake))?;
        let now = store.now_ms();
        let ids = store.zupto(delayed, now as f64, self.limit);
        if ids.is_empty() {
            return Ok(Reply::count(0));
        }
        let records = read_records(store, self.prefix, &ids, [b"state", b"attempts"])?;
        // Each priority read before the first write (an `abc` refuses them all).
        let mut scores = Vec::with_capacity(ids.len());
        for (id, (_, [state, _])) in ids.iter().zip(&records) {
            scores.push(if state.is_some() { priority_of(store, priority, id)? } else { 0.0 });
        }
        let grouped = groups_of(store, self.prefix, &ids)?;
        remove(store, delayed, &ids);
        let mut promoted = 0;
        for (at, ((id, (key, [state, _])), score)) in ids.iter().zip(records).zip(scores).enumerate() {
            if state.is_some() {
                to_pending(store, &key, pending, (score, group_at(&grouped, at)), id, now);
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
