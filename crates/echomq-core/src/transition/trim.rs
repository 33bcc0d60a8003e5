//! TRIM: bounded retention of the finished sets, upkeep (PROTOCOL.md §7.4;
//! `trim.lua`).

use super::config::retention;
use super::delete::{delete_jobs, limit, set_keys, Deleting, FINISHED};
use super::need;
use super::notice::Notify;
use crate::description::{keys, Description, Effect, Role};
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal, Reply};

keys! {
    /// TRIM's KEYS.
    TrimKeys {
        set: Finished,
        priority: Priority,
        errors: Errors,
        progress: Progress,
        policy: Policy,
        results: Results,
        headers: Headers,
        config: Config,
    }
    flow
    /// The flows\' keys (protocol 1.6, §7.8).
    TrimTold { parents: Parents, notices: Notices }
}

/// A parsed TRIM.
#[derive(Debug)]
pub struct Trim<'a> {
    keys: TrimKeys<'a>,
    prefix: &'a [u8],
    state: Role,
    limit: usize,
}

impl<'a> Trim<'a> {
    /// What TRIM is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "trim",
        command: "EMQ.TRIM",
        keys: TrimKeys::ROLES,
        forms: TrimKeys::FORMS,
        args: &[],
        options: &["LIMIT"],
        effect: Effect::Frees,
        wakes_claims: false,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: true,
    };

    /// KEYS: done, dead or cancelled; priority; errors; progress; policy;
    /// results; headers; config. ARGV: LIMIT.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQARG`: `KEYS[1]` is not done, dead or cancelled; the keys are not this queue's, in their number
    ///   and roles; `LIMIT` is unknown, given twice or out of range.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Trim<'a>, Refusal> {
        let (keys, state, prefix) = set_keys(keys, &FINISHED, "done, dead or cancelled")?;
        let limit = limit(args)?;
        Ok(Trim { keys, prefix, state, limit })
    }

    /// Bounded retention: delete up to LIMIT of the oldest jobs of the set
    /// that are past the queue's age for it, or beyond its count (each 0:
    /// no bound; unset: the defaults).
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: the set, a side hash, config or a record to delete holds another type.
    /// - `EMQVERSION`: `<q>config`'s `protocol` is another major, or malformed.
    /// - `EMQDATA`: the set's retention setting in `<q>config` is not an integer.
    /// - `TRYAGAIN`: a record to delete is missing while the queue's slot moves between cluster nodes.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let TrimKeys { set, priority, errors, progress, policy, results, headers, config, flow } = self.keys;
        let sides = [priority, errors, progress, policy, results, headers];
        need(store, set, KeyType::Zset)?;
        for hash in sides.iter().chain([&config]) {
            need(store, hash, KeyType::Hash)?;
        }
        let notify = Notify::open(store, flow.map(|told| (told.parents, told.notices)), self.prefix)?;
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
        delete_jobs(store, self.prefix, &Deleting { set, role: self.state, sides, notify }, &ids)
    }
}
