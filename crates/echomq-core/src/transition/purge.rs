//! PURGE: delete finished jobs past an age, an operator's choice
//! (PROTOCOL.md §7; `purge.lua`).

use super::delete::{delete_jobs, deleting_types, limit, set_keys, Deleting, FINISHED};
use super::notice::Notify;
use crate::description::{keys, Description, Effect, Role};
use crate::limits::AGE_MS;
use crate::parse::count;
use crate::store::Store;
use crate::{Answer, Refusal};

keys! {
    /// PURGE's KEYS.
    PurgeKeys {
        set: Finished,
        priority: Priority,
        errors: Errors,
        progress: Progress,
        policy: Policy,
        results: Results,
        headers: Headers,
    }
    flow
    /// The flows\' keys (protocol 1.6, §7.8).
    PurgeTold { parents: Parents, notices: Notices }
}

/// A parsed PURGE.
#[derive(Debug)]
pub struct Purge<'a> {
    keys: PurgeKeys<'a>,
    prefix: &'a [u8],
    role: Role,
    age: u64,
    limit: usize,
}

impl<'a> Purge<'a> {
    /// What PURGE is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "purge",
        command: "EMQ.PURGE",
        keys: PurgeKeys::ROLES,
        forms: PurgeKeys::FORMS,
        args: &["age"],
        options: &["LIMIT"],
        effect: Effect::Frees,
        wakes_claims: false,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: true,
    };

    /// KEYS: done, dead or cancelled; priority; errors; progress; policy;
    /// results; headers. ARGV: age, LIMIT.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQARG`: `KEYS[1]` is not done, dead or cancelled; the keys are not this queue's, in their number
    ///   and roles; the age is missing or out of range; `LIMIT` is unknown, given twice or out of range.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Purge<'a>, Refusal> {
        let (keys, role, prefix) = set_keys(keys, &FINISHED, "done, dead or cancelled")?;
        let age = count(args.first().copied(), "age", AGE_MS)?;
        let limit = limit(args.get(1..).unwrap_or_default())?;
        Ok(Purge { keys, prefix, role, age, limit })
    }

    /// Delete finished jobs past the age: records, set entries, and their
    /// entries in the side hashes.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: the set, a side hash or a record to delete holds another type.
    /// - `TRYAGAIN`: a record to delete is missing while the queue's slot moves between cluster nodes.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let PurgeKeys { set, priority, errors, progress, policy, results, headers, flow } = self.keys;
        let sides = [priority, errors, progress, policy, results, headers];
        deleting_types(store, set, sides)?;
        let notify = Notify::open(store, flow.map(|told| (told.parents, told.notices)), self.prefix)?;
        let cutoff = store.now_ms() as f64 - self.age as f64;
        let ids = store.zupto(set, cutoff, self.limit);
        delete_jobs(store, self.prefix, &Deleting { set, role: self.role, sides, notify }, &ids)
    }
}
