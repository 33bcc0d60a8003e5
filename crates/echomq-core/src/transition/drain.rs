//! DRAIN: an operator deletes the jobs of an unfinished set (PROTOCOL.md §7;
//! `drain.lua`).

use super::delete::{delete_jobs, deleting_types, limit, set_keys, Deleting};
use super::notice::Notify;
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
    flow
    /// The flows\' keys (protocol 1.6, §7.8).
    DrainTold { parents: Parents, notices: Notices }
}

/// A parsed DRAIN.
#[derive(Debug)]
pub struct Drain<'a> {
    keys: DrainKeys<'a>,
    prefix: &'a [u8],
    role: Role,
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
        wakes_claims: true,
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
        let sets = [
            (b"pending".as_slice(), Role::Pending),
            (b"delayed", Role::Delayed),
            (b"active", Role::Active),
            (b"waiting", Role::Waiting),
        ];
        let (keys, role, prefix) = set_keys(keys, &sets, "pending, delayed, active or waiting")?;
        let limit = limit(args)?;
        Ok(Drain { keys, prefix, role, limit })
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
        let DrainKeys { set, priority, errors, progress, policy, results, headers, flow } = self.keys;
        let sides = [priority, errors, progress, policy, results, headers];
        deleting_types(store, set, sides)?;
        let notify = Notify::open(store, flow.map(|told| (told.parents, told.notices)), self.prefix)?;
        let ids = store.zhead(set, self.limit);
        delete_jobs(store, self.prefix, &Deleting { set, role: self.role, sides, notify }, &ids)
    }
}
