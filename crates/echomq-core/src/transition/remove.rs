//! REMOVE: delete chosen jobs of one state's set, an operator's choice
//! (PROTOCOL.md §7; `remove.lua`). PURGE, TRIM and DRAIN delete by age
//! or from a set's head; REMOVE deletes the ids it is given.

use super::delete::{delete_jobs, deleting_types, set_keys, Deleting};
use super::notice::Notify;
use crate::description::{keys, Description, Effect, Role};
use crate::limits::SWEEP_LIMIT;
use crate::parse::kind;
use crate::store::Store;
use crate::{Answer, Refusal};

keys! {
    /// REMOVE's KEYS.
    RemoveKeys {
        set: AnySet,
        priority: Priority,
        errors: Errors,
        progress: Progress,
        policy: Policy,
        results: Results,
        headers: Headers,
    }
    flow
    /// The flows\' keys (protocol 1.6, §7.8).
    RemoveTold { parents: Parents, notices: Notices }
}

/// The six sets REMOVE deletes from, by the last word of KEYS[1].
const SETS: [(&[u8], Role); 7] = [
    (b"pending", Role::Pending),
    (b"active", Role::Active),
    (b"delayed", Role::Delayed),
    (b"done", Role::Done),
    (b"dead", Role::Dead),
    (b"cancelled", Role::Cancelled),
    (b"waiting", Role::Waiting),
];

/// A parsed REMOVE.
#[derive(Debug)]
pub struct Remove<'a> {
    keys: RemoveKeys<'a>,
    prefix: &'a [u8],
    role: Role,
    ids: Vec<&'a [u8]>,
}

impl<'a> Remove<'a> {
    /// What REMOVE is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "remove",
        command: "EMQ.REMOVE",
        keys: RemoveKeys::ROLES,
        forms: RemoveKeys::FORMS,
        args: &["id"],
        options: &[],
        effect: Effect::Frees,
        wakes_claims: true,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: true,
    };

    /// KEYS: the set (pending, active, delayed, done, dead or cancelled);
    /// priority; errors; progress; policy; results; headers. ARGV: one to
    /// 1000 ids.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQARG`: `KEYS[1]` is none of the six sets; the keys are not this queue's, in their number and
    ///   roles; more than 1000 ids.
    /// - `EMQKIND`: an id (or the missing first one) is not `JOB`-namespaced.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Remove<'a>, Refusal> {
        let (keys, role, prefix) =
            set_keys(keys, &SETS, "pending, active, delayed, done, dead, cancelled or waiting")?;
        if args.len() as u64 > *SWEEP_LIMIT.end() {
            return Err(Refusal::arg(format!("at most {} jobs a call", SWEEP_LIMIT.end())));
        }
        let ids = if args.is_empty() {
            vec![kind(None)?]
        } else {
            args.iter().map(|id| kind(Some(id))).collect::<Result<_, _>>()?
        };
        Ok(Remove { keys, prefix, role, ids })
    }

    /// Delete the ids that are in the set, as PURGE deletes (the set entry,
    /// the side entries, the record); skip the others. How many it deleted.
    /// A deleted active job's holder is fenced: its next call gets
    /// `EMQNOJOB`.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: the set, a side hash or a record to delete holds another type.
    /// - `TRYAGAIN`: a record to delete is missing while the queue's slot moves between cluster nodes.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let RemoveKeys { set, priority, errors, progress, policy, results, headers, flow } = self.keys;
        let sides = [priority, errors, progress, policy, results, headers];
        deleting_types(store, set, sides)?;
        let notify = Notify::open(store, flow.map(|told| (told.parents, told.notices)), self.prefix)?;
        let mut ids: Vec<Vec<u8>> = Vec::with_capacity(self.ids.len());
        for id in &self.ids {
            if store.zscore(set, id).is_some() && !ids.iter().any(|seen| seen == id) {
                ids.push(id.to_vec());
            }
        }
        delete_jobs(store, self.prefix, &Deleting { set, role: self.role, sides, notify }, &ids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEYS: [&[u8]; 7] = [
        b"emq:{q}:dead",
        b"emq:{q}:priority",
        b"emq:{q}:errors",
        b"emq:{q}:progress",
        b"emq:{q}:policy",
        b"emq:{q}:results",
        b"emq:{q}:headers",
    ];

    #[test]
    fn at_most_a_thousand_ids_and_each_of_the_job_kind() {
        let id: &[u8] = b"JOB_00000000000000000000000001";
        let many = vec![id; 1001];
        let refused = Remove::parse(&KEYS, &many).unwrap_err().to_string();
        assert_eq!(refused, "EMQARG at most 1000 jobs a call");
        assert!(Remove::parse(&KEYS, &many[..1000]).is_ok());
        let odd: [&[u8]; 2] = [id, b"XYZ"];
        assert_eq!(
            Remove::parse(&KEYS, &odd).unwrap_err().to_string(),
            "EMQKIND job id must be JOB-namespaced"
        );
        let wake = [&b"emq:{q}:wake"[..], KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]];
        assert!(Remove::parse(&wake, &[id]).unwrap_err().to_string().starts_with("EMQARG KEYS[1] must be"));
    }
}
