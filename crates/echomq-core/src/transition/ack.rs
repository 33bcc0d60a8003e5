//! ACK: the holder finishes its job (PROTOCOL.md §7; `ack.lua`).

use super::events::Events;
use super::fenced::{ack_result, Fenced, Finish};
use super::grouped::Grouped;
use super::notice::Notify;
use super::Stamped;
use crate::description::{keys, Description, Effect};
use crate::parse::lossy;
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal, Reply};

keys! {
    /// ACK's KEYS.
    AckKeys { job: Job, active: Active, done: Done, results: Results, events: Events, config: Config }
    then counts: Counts
    flow
    /// The flows' keys of a transition that ends jobs (protocol 1.6, §7.8).
    Told { parents: Parents, notices: Notices }
}

/// A parsed ACK.
#[derive(Debug)]
pub struct Ack<'a> {
    pub(super) fenced: Fenced<'a, AckKeys<'a>>,
    pub(super) result: Option<&'a [u8]>,
}

impl<'a> Ack<'a> {
    /// What ACK is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "ack",
        command: "EMQ.ACK",
        keys: AckKeys::ROLES,
        forms: AckKeys::FORMS,
        args: &["id", "token"],
        options: &["RESULT"],
        effect: Effect::Writes,
        wakes_claims: true,
        fenced: true,
        hands_out_tokens: false,
        waits_for_replication: true,
    };

    /// KEYS: job, active, done, results, events, config. ARGV: id,
    /// token, then `RESULT <bytes>`.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQKIND`: the id (`ARGV[1]`) is not `JOB`-namespaced.
    /// - `EMQARG`: the keys are not this queue's, in their number and roles; the token is missing or out of
    ///   range; an option is unknown; `RESULT` is given twice or without its bytes.
    /// - `EMQSIZE`: the result is over `MAX_RESULT` bytes.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Ack<'a>, Refusal> {
        let fenced = Fenced::parse(keys, args)?;
        let mut result = None;
        let mut rest = args.get(2..).unwrap_or_default();
        while let Some((&name, tail)) = rest.split_first() {
            if !name.eq_ignore_ascii_case(b"RESULT") {
                return Err(Refusal::arg(format!("unknown option {}", lossy(name))));
            }
            result = Some(ack_result(result, tail.first().copied())?);
            rest = &tail[1..];
        }
        Ok(Ack { fenced, result })
    }

    /// The fence, after the types of active, done and results: the
    /// record's stamp. ACKNEXT checks it first, before its claim's keys.
    pub(super) fn check<S: Store>(&self, store: &mut S) -> Result<Stamped, Refusal> {
        let AckKeys { job, active, done, results, .. } = self.fenced.keys;
        let typed = [(active, KeyType::Zset), (done, KeyType::Zset), (results, KeyType::Hash)];
        self.fenced.check(store, job, &typed)
    }

    /// The holder finishes the job: to done, its result (if any) kept in results.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: active, done, results, the record, events or config holds another type.
    /// - `TRYAGAIN`: the record is missing while the queue's slot moves between cluster nodes.
    /// - `EMQNOJOB`: there is no record.
    /// - `EMQDATA`: the record's `state` or `attempts` is malformed, or `<q>config`'s `events` is not an
    ///   integer.
    /// - `EMQFENCE`: the job is not active, or `token` is not its `attempts` (PROTOCOL.md §6).
    /// - `EMQVERSION`: `<q>config`'s `protocol` is another major, or malformed.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        self.finish(store, false)
    }

    /// [`apply`](Ack::apply); `claims` when a claim in the same call
    /// follows (ACKNEXT's), which puts the job's group where it stands.
    pub(super) fn finish<S: Store>(&self, store: &mut S, claims: bool) -> Answer {
        let Fenced {
            keys: AckKeys { job, active, done, results, events, config, counts, flow },
            id,
            prefix,
            ..
        } = self.fenced;
        let stamped = self.check(store)?;
        let events = Events::open_counted(store, Some((events, config)), counts, &["completed"])?;
        let notify = Notify::open(store, flow.map(|told| (told.parents, told.notices)), prefix)?;
        let link = notify.link(store, id)?;
        // ACKNEXT's claim read the job's group (and checked what it touches).
        let grouped =
            if claims { Grouped::named(store, prefix, id)? } else { Grouped::read(store, prefix, id)? };
        let sets = Finish { active, done, results, events: &events };
        sets.finish(store, job, stamped, id, self.result);
        grouped.off_active(store, id, claims);
        if let Some(link) = link {
            notify.tell(store, id, &link, "done", self.result);
        }
        Ok(Reply::Int(1))
    }
}
