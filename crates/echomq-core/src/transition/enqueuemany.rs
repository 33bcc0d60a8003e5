//! ENQUEUEMANY: many plain jobs admitted in one call, each on its own
//! (PROTOCOL.md §7; `enqueuemany.lua`).

use super::events::{emit, flush, hold, Events};
use super::grouping::{full, group_name, Grouping};
use super::notice::parent_option;
use super::{need, present_here, wake, wake_key, write_record};
use crate::description::{keys, Description, Effect};
use crate::limits::{ENQUEUES, MAX_PAYLOAD};
use crate::parse::{kind, named_keys, record_key};
use crate::store::{KeyType, Store};
use crate::{Answer, Code, Refusal, Reply};

keys! {
    /// ENQUEUEMANY's KEYS.
    EnqueueManyKeys { pending: Pending, events: Events, config: Config, wake: Wake }
    then counts: Counts
    flow
    /// The children's link key (protocol 1.6), for `PARENT`.
    EnqueueManyFlow { parents: Parents }
}

/// A parsed ENQUEUEMANY: many plain jobs (an id and a payload each, no
/// options) admitted in one call, each on its own.
#[derive(Debug)]
pub struct EnqueueMany<'a> {
    keys: EnqueueManyKeys<'a>,
    prefix: &'a [u8],
    jobs: Vec<(&'a [u8], &'a [u8])>,
    /// With the parents key, the link every job it enqueues gets: a flow's children.
    parent: Option<&'a [u8]>,
    /// `GROUP <g>` (1.7): the group of every job it enqueues.
    group: Option<&'a [u8]>,
}

impl<'a> EnqueueMany<'a> {
    /// What ENQUEUEMANY is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "enqueuemany",
        command: "EMQ.ENQUEUEMANY",
        keys: EnqueueManyKeys::ROLES,
        forms: EnqueueManyKeys::FORMS,
        args: &["id", "payload"],
        options: &["PARENT", "GROUP"],
        effect: Effect::Grows,
        wakes_claims: true,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: true,
    };

    /// KEYS: pending, events, config, wake. ARGV: one or more jobs, each
    /// `id payload`, at most [`ENQUEUES`] of them.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQKIND`: an id is not `JOB`-namespaced.
    /// - `EMQARG`: the keys are not this queue's, in their number and roles; a job's payload is missing;
    ///   more than `ENQUEUES` jobs.
    /// - `EMQSIZE`: a payload is over `MAX_PAYLOAD` bytes.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<EnqueueMany<'a>, Refusal> {
        let (keys, prefix) = named_keys::<EnqueueManyKeys>(keys, b"")?;
        let mut jobs = Vec::with_capacity(args.len() / 2);
        let mut rest = args;
        // With its sixth key (1.6), `PARENT <link>` may come first.
        let mut parent = None;
        if let (Some(_), Some(first)) = (keys.flow, rest.first()) {
            if first.eq_ignore_ascii_case(b"PARENT") {
                parent = Some(parent_option(rest.get(1).copied())?);
                rest = rest.get(2..).unwrap_or_default();
            }
        }
        // Then `GROUP <g>` (1.7): every job of the call in that group.
        let mut group = None;
        if rest.first().is_some_and(|first| first.eq_ignore_ascii_case(b"GROUP")) {
            group = Some(group_name(rest.get(1).copied())?);
            rest = rest.get(2..).unwrap_or_default();
        }
        loop {
            if jobs.len() as u64 == *ENQUEUES.end() {
                return Err(Refusal::arg(format!("at most {} jobs a call", ENQUEUES.end())));
            }
            let id = kind(rest.first().copied())?;
            let payload = *rest.get(1).ok_or_else(|| Refusal::arg("payload is missing"))?;
            if payload.len() > MAX_PAYLOAD {
                return Err(Refusal::new(Code::Size, format!("payload exceeds {MAX_PAYLOAD} bytes")));
            }
            jobs.push((id, payload));
            rest = &rest[2..];
            if rest.is_empty() {
                return Ok(EnqueueMany { keys, prefix, jobs, parent, group });
            }
        }
    }

    /// Each job as ENQUEUE admits one with no options: `1` enqueued, or `0`
    /// when a record with its id exists (nothing changed; a job named twice
    /// is enqueued once). The keys' types, every record's (a hash or
    /// nothing), and, when a record is missing, whether the queue's slot is
    /// moving (`TRYAGAIN`) are checked before the first write. One wake-up
    /// when any job was enqueued.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: pending, a record, events, config or wake holds another type.
    /// - `TRYAGAIN`: a record is missing while the queue's slot moves between cluster nodes.
    /// - `EMQVERSION`: `<q>config`'s `protocol` is another major, or malformed.
    /// - `EMQDATA`: `<q>config`'s `events` is not an integer.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let EnqueueManyKeys { pending, events, config, wake: wakes, counts, flow } = self.keys;
        need(store, pending, KeyType::Zset)?;
        let records: Vec<Vec<u8>> = self.jobs.iter().map(|(id, _)| record_key(self.prefix, id)).collect();
        let mut missing = None;
        for record in &records {
            match store.key_type(record) {
                KeyType::None => missing = missing.or(Some(record)),
                _ => need(store, record, KeyType::Hash)?,
            }
        }
        // Every record is in the queue's slot: one look tells for them all.
        if let Some(record) = missing {
            present_here(store, record)?;
        }
        let events = Events::open_counted(store, Some((events, config)), counts, &["enqueued"])?;
        hold(&events);
        let wakes = wake_key(store, Some(wakes))?;
        if let (Some(_), Some(flow)) = (self.parent, flow) {
            need(store, flow.parents, KeyType::Hash)?;
        }
        let grouping = Grouping::of(self.prefix);
        if let Some(group) = self.group {
            self.room_in(store, &grouping, group, &records)?;
        }
        let replies = self.write_jobs(store, &records, &events);
        if let (Some(link), Some(flow)) = (self.parent, flow) {
            let linked: Vec<(&[u8], &[u8])> = self
                .jobs
                .iter()
                .zip(&replies)
                .filter(|(_, reply)| **reply == Reply::Int(1))
                .map(|((id, _), _)| (*id, link))
                .collect();
            if !linked.is_empty() {
                store.hset(flow.parents, &linked);
            }
        }
        if let (Some(group), true) = (self.group, replies.contains(&Reply::Int(1))) {
            grouping.reindex(store, group);
        }
        if replies.contains(&Reply::Int(1)) {
            wake(store, wakes);
        }
        flush(&events, store);
        Ok(Reply::Array(replies))
    }
}

impl EnqueueMany<'_> {
    /// Each job whose record is missing, written and in pending (in its
    /// group's sets, with GROUP), with its event: `1`; a duplicate: `0`.
    fn write_jobs<S: Store>(
        &self,
        store: &mut S,
        records: &[Vec<u8>],
        events: &Option<Events<'_>>,
    ) -> Vec<Reply> {
        let grouping = Grouping::of(self.prefix);
        let now = store.now_ms();
        let enqueued_at = now.to_string();
        let mut replies = Vec::with_capacity(self.jobs.len());
        for (&(id, payload), record) in self.jobs.iter().zip(records) {
            if store.key_type(record) == KeyType::Hash {
                replies.push(Reply::Int(0));
                continue;
            }
            let fields: [(&[u8], &[u8]); 4] = [
                (b"state", b"pending"),
                (b"attempts", b"0"),
                (b"payload", payload),
                (b"enqueued_at", enqueued_at.as_bytes()),
            ];
            write_record(store, record, &fields, now);
            match self.group {
                None => store.zadd(self.keys.pending, 0.0, id),
                Some(group) => {
                    store.hset(&grouping.keys.membership(), &[(id, group)]);
                    grouping.join(store, self.keys.pending, id, group, 0.0);
                }
            }
            emit(events, store, "enqueued", id, &[(b"state", b"pending")]);
            replies.push(Reply::Int(1));
        }
        replies
    }

    /// The group's keys' types and settings, and room under its most for
    /// the jobs the call would add (those without a record, each once):
    /// `EMQFULL` for the whole call otherwise.
    fn room_in<S: Store>(
        &self,
        store: &mut S,
        grouping: &Grouping<'_>,
        group: &[u8],
        records: &[Vec<u8>],
    ) -> Result<(), Refusal> {
        grouping.check(store)?;
        let Some(max) = grouping.settings(store, group)?.max else { return Ok(()) };
        let mut new: Vec<&[u8]> = Vec::new();
        for record in records {
            if store.key_type(record) == KeyType::None && !new.contains(&record.as_slice()) {
                new.push(record);
            }
        }
        if store.zcard(&grouping.keys.pending(group)) + new.len() as u64 > max {
            return Err(full(group, max));
        }
        Ok(())
    }
}
