//! DRAIN: an operator deletes the jobs of an unfinished set (PROTOCOL.md §7;
//! `drain.lua`).

use super::delete::{delete_jobs, deleting_types, limit, set_keys};
use crate::description::{keys, Description, Effect, Role};
use crate::store::Store;
use crate::{Answer, Refusal};

keys! {
    /// DRAIN's KEYS.
    DrainKeys {
        set: Unfinished,
        priority: Priority,
        errors: Errors,
        progress: Progress,
        policy: Policy,
        results: Results,
        headers: Headers,
    }
}

/// A parsed DRAIN.
#[derive(Debug)]
pub struct Drain<'a> {
    keys: DrainKeys<'a>,
    prefix: &'a [u8],
    limit: usize,
}

impl<'a> Drain<'a> {
    /// What DRAIN is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "drain",
        command: "EMQ.DRAIN",
        keys: DrainKeys::ROLES,
        forms: DrainKeys::FORMS,
        args: &[],
        options: &["LIMIT"],
        effect: Effect::Frees,
        wakes_claims: false,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: true,
    };

    /// KEYS: pending, delayed or active; priority; errors; progress; policy;
    /// results; headers. ARGV: LIMIT.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQARG`: `KEYS[1]` is not pending, delayed or active; the keys are not this queue's, in their
    ///   number and roles; `LIMIT` is unknown, given twice or out of range.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Drain<'a>, Refusal> {
        let sets =
            [(b"pending".as_slice(), Role::Pending), (b"delayed", Role::Delayed), (b"active", Role::Active)];
        let (keys, _, prefix) = set_keys(keys, &sets, "pending, delayed or active")?;
        let limit = limit(args)?;
        Ok(Drain { keys, prefix, limit })
    }

    /// Delete up to LIMIT jobs of the set, head first, whatever their state
    /// of progress: a drained active job's holder is fenced (its record is gone).
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: the set, a side hash or a record to delete holds another type.
    /// - `TRYAGAIN`: a record to delete is missing while the queue's slot moves between cluster nodes.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let DrainKeys { set, priority, errors, progress, policy, results, headers } = self.keys;
        let sides = [priority, errors, progress, policy, results, headers];
        deleting_types(store, set, sides)?;
        let ids = store.zhead(set, self.limit);
        delete_jobs(store, self.prefix, set, sides, &ids)
    }
}
