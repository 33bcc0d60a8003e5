//! INSPECT: a record and its entries beside it; writes nothing
//! (PROTOCOL.md §7; `inspect.lua`).

use super::need;
use crate::description::{keys, Description, Effect};
use crate::parse::{kind, named_keys, options};
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal, Reply};

keys! {
    /// INSPECT's KEYS.
    InspectKeys {
        job: Job,
        errors: Errors,
        progress: Progress,
        results: Results,
        policy: Policy,
        headers: Headers,
    }
    then group: Group
}

/// A parsed INSPECT.
#[derive(Debug)]
pub struct Inspect<'a> {
    keys: InspectKeys<'a>,
    id: &'a [u8],
}

impl<'a> Inspect<'a> {
    /// What INSPECT is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "inspect",
        command: "EMQ.INSPECT",
        keys: InspectKeys::ROLES,
        forms: InspectKeys::FORMS,
        args: &["id"],
        options: &[],
        effect: Effect::Reads,
        wakes_claims: false,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: false,
    };

    /// KEYS: job, errors, progress, results, policy, headers, and (1.7, a
    /// call may leave it off) group. ARGV: id.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQKIND`: the id (`ARGV[1]`) is not `JOB`-namespaced.
    /// - `EMQARG`: the keys are not this queue's, in their number and roles, or an argument follows the id.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Inspect<'a>, Refusal> {
        let id = kind(args.first().copied())?;
        let (keys, _) = named_keys::<InspectKeys>(keys, id)?;
        options(args.get(1..).unwrap_or_default(), [])?;
        Ok(Inspect { keys, id })
    }

    /// [the record as a flat field/value array, then the id's entry in each
    /// other key or nil: its last error, last progress, result, own policy,
    /// headers, and with the seventh key its group]: as many elements as keys.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: the record or a side hash is not a hash.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        for key in self.keys.all().into_iter().chain(self.keys.group) {
            need(store, key, KeyType::Hash)?;
        }
        let fields = store
            .hgetall(self.keys.job)
            .into_iter()
            .flat_map(|(field, value)| [Reply::Bulk(field), Reply::Bulk(value)])
            .collect();
        let mut reply = vec![Reply::Array(fields)];
        let InspectKeys { errors, progress, results, policy, headers, .. } = self.keys;
        for key in [errors, progress, results, policy, headers].into_iter().chain(self.keys.group) {
            reply.push(store.hget(key, self.id).map_or(Reply::Nil, Reply::Bulk));
        }
        Ok(Reply::Array(reply))
    }
}
