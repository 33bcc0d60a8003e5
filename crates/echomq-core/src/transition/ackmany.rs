//! ACKMANY: many ACKs in one call, each fenced by its own token
//! (PROTOCOL.md §7; `ackmany.lua`).

use super::events::{flush, hold, Events};
use super::fenced::{ack_result, Finish, Finished};
use super::grouped::{group_at, groups_of};
use super::notice::Notify;
use super::{fence, need, present_here};
use crate::description::{keys, Description, Effect};
use crate::limits::{ACKS, TOKEN};
use crate::parse::{count, kind, named_keys, record_key};
use crate::store::{KeyType, Store};
use crate::{Answer, Code, Refusal, Reply};

keys! {
    /// ACKMANY's KEYS.
    AckManyKeys {
        active: Active,
        done: Done,
        results: Results,
        events: Events,
        config: Config,
    }
    then counts: Counts
    flow
    /// The flows' keys (protocol 1.6, §7.8).
    AckManyTold { parents: Parents, notices: Notices }
}

/// A parsed ACKMANY: many ACKs in one call, each job fenced by its own
/// token and answered on its own.
#[derive(Debug)]
pub struct AckMany<'a> {
    keys: AckManyKeys<'a>,
    prefix: &'a [u8],
    acks: Vec<Acked<'a>>,
}

/// One job of an ACKMANY: its id, token and result.
#[derive(Debug)]
struct Acked<'a> {
    id: &'a [u8],
    token: u64,
    result: Option<&'a [u8]>,
}

impl<'a> AckMany<'a> {
    /// What ACKMANY is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "ackmany",
        command: "EMQ.ACKMANY",
        keys: AckManyKeys::ROLES,
        forms: AckManyKeys::FORMS,
        args: &["id", "token"],
        options: &["RESULT"],
        effect: Effect::Writes,
        wakes_claims: true,
        fenced: true,
        hands_out_tokens: false,
        waits_for_replication: true,
    };

    /// KEYS: active, done, results, events, config. ARGV: one or more jobs,
    /// each `id token [RESULT <bytes>]`, at most [`ACKS`] of them.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQKIND`: an id is not `JOB`-namespaced.
    /// - `EMQARG`: the keys are not this queue's, in their number and roles; no job, or more than `ACKS`; a
    ///   token is missing or out of range; `RESULT` is given twice for a job or without its bytes.
    /// - `EMQSIZE`: a result is over `MAX_RESULT` bytes.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<AckMany<'a>, Refusal> {
        let (keys, prefix) = named_keys::<AckManyKeys>(keys, b"")?;
        let mut acks = Vec::new();
        let mut rest = args;
        loop {
            if acks.len() as u64 == *ACKS.end() {
                return Err(Refusal::arg(format!("at most {} jobs a call", ACKS.end())));
            }
            let id = kind(rest.first().copied())?;
            let token = count(rest.get(1).copied(), "token", TOKEN)?;
            rest = rest.get(2..).unwrap_or_default();
            let mut result = None;
            while rest.first().is_some_and(|word| word.eq_ignore_ascii_case(b"RESULT")) {
                result = Some(ack_result(result, rest.get(1).copied())?);
                rest = rest.get(2..).unwrap_or_default();
            }
            acks.push(Acked { id, token, result });
            if rest.is_empty() {
                return Ok(AckMany { keys, prefix, acks });
            }
        }
    }

    /// Each job to done, as ACK, when its token holds its lease: an array
    /// with one reply a job, in order: `1`, or its own refusal (`EMQNOJOB`,
    /// `EMQFENCE`), which changed nothing of it. The keys' types and every
    /// record's (a hash or nothing, `TRYAGAIN` while a resharding may have
    /// moved one) are checked before the first write: a refusal of the call
    /// changes nothing. A job named twice is acked once; its second entry
    /// is refused (`EMQFENCE`: it is done).
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: active, done, results, a record, events or config holds another type.
    /// - `TRYAGAIN`: a record is missing while the queue's slot moves between cluster nodes.
    /// - `EMQVERSION`: `<q>config`'s `protocol` is another major, or malformed.
    /// - `EMQDATA`: `<q>config`'s `events` is not an integer.
    /// - A job's own `EMQNOJOB`, `EMQFENCE` or `EMQDATA` is not an `Err`: it is that job's item of the
    ///   reply.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let AckManyKeys { active, done, results, events, config, counts, flow } = self.keys;
        need(store, active, KeyType::Zset)?;
        need(store, done, KeyType::Zset)?;
        need(store, results, KeyType::Hash)?;
        let records: Vec<Vec<u8>> = self.acks.iter().map(|ack| record_key(self.prefix, ack.id)).collect();
        for record in &records {
            need(store, record, KeyType::Hash)?;
            present_here(store, record)?;
        }
        let events = Events::open_counted(store, Some((events, config)), counts, &["completed"])?;
        hold(&events);
        let sets = Finish { active, done, results, events: &events };
        // Each ack fenced first; an id acked earlier in the call no longer
        // holds its lease. Then the acked ones finished together.
        let mut acked: Vec<Finished<'_>> = Vec::with_capacity(self.acks.len());
        let mut ids = std::collections::HashSet::with_capacity(self.acks.len());
        let mut replies = Vec::with_capacity(self.acks.len());
        for (ack, record) in self.acks.iter().zip(&records) {
            let fenced = if ids.contains(ack.id) {
                Err(Refusal::new(Code::Fence, "token does not hold the lease"))
            } else {
                fence(store, record, ack.token)
            };
            match fenced {
                Ok(stamped) => {
                    ids.insert(ack.id);
                    acked.push((record, stamped, ack.id, ack.result));
                    replies.push(Reply::Int(1));
                }
                Err(refusal) => replies.push(Reply::Error(refusal)),
            }
        }
        // The acked jobs' links, last of the reads: a linked job in a call
        // without the flows' keys refuses the whole call.
        let notify = Notify::open(store, flow.map(|told| (told.parents, told.notices)), self.prefix)?;
        let mut links = Vec::new();
        for &(_, _, id, result) in &acked {
            if let Some(link) = notify.link(store, id)? {
                links.push((id, link, result));
            }
        }
        let finished: Vec<Vec<u8>> = acked.iter().map(|&(_, _, id, _)| id.to_vec()).collect();
        let grouped = groups_of(store, self.prefix, &finished)?;
        sets.finish_many(store, &acked);
        for (at, id) in finished.iter().enumerate() {
            if let Some((grouping, group)) = group_at(&grouped, at) {
                grouping.off_active(store, id, group);
            }
        }
        for (id, link, result) in links {
            notify.tell(store, id, &link, "done", result);
        }
        flush(&events, store);
        Ok(Reply::Array(replies))
    }
}
