//! ENQUEUE: admit one job (PROTOCOL.md §7; `enqueue.lua`).

use super::events::{emit, Events};
use super::grouping::{full, group_name, Grouping, Settings};
use super::notice::parent_option;
use super::{need, wake, wake_key, whole, write_record};
use crate::description::{keys, Description, Effect};
use crate::limits::{
    AT_MS, DELAY_MS, FLAG, MAX_HEADERS, MAX_PAYLOAD, MAX_UNIQUE_KEY, PRIORITY, UNIQUE_MS, UNIQUE_SWEEP,
};
use crate::parse::{count, integer, kind, lossy, malformed, named_keys, record_key};
use crate::policy::{self, Policy};
use crate::store::{KeyType, Store};
use crate::{Answer, Code, Refusal, Reply};

keys! {
    /// ENQUEUE's KEYS: the seed's two, then the nine its options need.
    EnqueueKeys { job: Job, pending: Pending }
    more
    /// ENQUEUE's keys beyond the seed's two.
    EnqueueMore {
        delayed: Delayed,
        priority: Priority,
        policy: Policy,
        unique: Unique,
        unique_until: UniqueUntil,
        events: Events,
        config: Config,
        headers: Headers,
        wake: Wake,
    }
    then counts: Counts
    flow
    /// The child's link key (protocol 1.6, §7.8), for `PARENT`.
    EnqueueFlow { parents: Parents }
}

/// A parsed ENQUEUE.
#[derive(Debug)]
pub struct Enqueue<'a> {
    keys: EnqueueKeys<'a>,
    id: &'a [u8],
    payload: &'a [u8],
    priority: i64,
    delay: Option<u64>,
    at: Option<u64>,
    policy: Option<Policy>,
    unique: Option<Unique<'a>>,
    headers: Option<&'a [u8]>,
    parent: Option<&'a [u8]>,
    group: Option<&'a [u8]>,
    prefix: &'a [u8],
}

/// ENQUEUE's dedup: the key, how long it holds, and whether it frees as soon
/// as its job finishes.
#[derive(Debug)]
struct Unique<'a> {
    key: &'a [u8],
    hold: u64,
    until_finished: bool,
}

impl<'a> Enqueue<'a> {
    /// What ENQUEUE is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "enqueue",
        command: "EMQ.ENQUEUE",
        keys: EnqueueKeys::ROLES,
        forms: EnqueueKeys::FORMS,
        args: &["id", "payload"],
        options: &[
            "PRIORITY",
            "DELAY",
            "AT",
            "ATTEMPTS",
            "BACKOFF",
            "BACKOFF_EXP",
            "TIMEOUT",
            "UNIQUE",
            "UNIQUE_FOR",
            "UNIQUE_DONE",
            "HEADERS",
            "PARENT",
            "GROUP",
        ],
        effect: Effect::Grows,
        wakes_claims: true,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: true,
    };

    /// KEYS: job, pending, and with all eleven: delayed, priority, policy,
    /// unique, unique_until, events, config, headers, wake. The seed's two
    /// take no option that needs another key. ARGV: id, payload, options.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQKIND`: the id (`ARGV[1]`) is not `JOB`-namespaced.
    /// - `EMQARG`: the keys are not this queue's, in their number and roles; the payload is missing; an
    ///   option is unknown, given twice or out of range; options exclude each other (`DELAY` and `AT`,
    ///   `BACKOFF` and `BACKOFF_EXP`) or lack their partner (`UNIQUE` and `UNIQUE_FOR`); an option needs all
    ///   eleven keys.
    /// - `EMQSIZE`: the payload is over `MAX_PAYLOAD` bytes.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Enqueue<'a>, Refusal> {
        let id = kind(args.first().copied())?;
        let (keys, prefix) = named_keys::<EnqueueKeys>(keys, id)?;
        let payload = *args.get(1).ok_or_else(|| Refusal::arg("payload is missing"))?;
        if payload.len() > MAX_PAYLOAD {
            return Err(Refusal::new(Code::Size, format!("payload exceeds {MAX_PAYLOAD} bytes")));
        }
        let given = Given::read(&args[2..])?;
        if given.delay.is_some() && given.at.is_some() {
            return Err(Refusal::arg("DELAY and AT exclude each other"));
        }
        let policy = Policy::from_options(given.policy)?;
        let unique = given.unique()?;
        let Given { priority, delay, at, headers, parent, group, .. } = given;
        if parent.is_some() && unique.is_some() {
            return Err(Refusal::arg("PARENT and UNIQUE exclude each other"));
        }
        let priority = priority.unwrap_or(0);
        let enqueue = Enqueue {
            keys,
            id,
            payload,
            priority,
            delay,
            at,
            policy,
            unique,
            headers,
            parent,
            group,
            prefix,
        };
        enqueue.within_keys()?;
        Ok(enqueue)
    }

    /// Write the record and put the id in pending, or in delayed when due later.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: the record or a key the call's options use holds another type.
    /// - `EMQVERSION`: `<q>config`'s `protocol` is another major, or malformed.
    /// - `EMQDATA`: `<q>config`'s `events` is not an integer; `UNIQUE`'s entry is not `<0|1>:<id>`, or its
    ///   holder's `state` is none of the six.
    pub fn apply<S: Store>(self, store: &mut S) -> Answer {
        let now = store.now_ms();
        // Only a call with all eleven keys has options (parse refuses them
        // without): the seed's two keys enqueue now, at priority 0.
        let more = self.keys.more;
        let due = self.at.or(self.delay.map(|delay| now + delay)).filter(|due| *due > now);
        let delayed = more.zip(due);
        match store.key_type(self.keys.job) {
            KeyType::None => {}
            KeyType::Hash => return Ok(Reply::Int(0)),
            _ => need(store, self.keys.job, KeyType::Hash)?,
        }
        self.need_types(store, due)?;
        let settings = self.group_settings(store)?;
        // Every type (and the settings read with the events key) before a
        // held key answers: a refusal outranks a duplicate.
        let events = Events::open_counted(
            store,
            more.map(|more| (more.events, more.config)),
            self.keys.counts,
            &["enqueued"],
        )?;
        let wakes = wake_key(store, more.map(|more| more.wake))?;
        if let (Some(unique), Some(more)) = (&self.unique, more) {
            if let Some(holder) = self.holder(store, more, unique, now)? {
                return Ok(Reply::Bulk(holder));
            }
        }
        if due.is_none() {
            self.room_in_group(store, settings)?;
        }

        let state: &[u8] = if delayed.is_some() { b"delayed" } else { b"pending" };
        self.write(store, state, now);
        match delayed {
            Some((more, due)) => store.zadd(more.delayed, due as f64, self.id),
            None => {
                match self.group {
                    None => store.zadd(self.keys.pending, self.priority as f64, self.id),
                    Some(group) => Grouping::of(self.prefix).enter_pending(
                        store,
                        self.keys.pending,
                        self.id,
                        group,
                        self.priority as f64,
                    ),
                }
                wake(store, wakes);
            }
        }
        emit(&events, store, "enqueued", self.id, &[(b"state", state)]);
        Ok(Reply::Int(1))
    }
}

/// ENQUEUE's options as given, each once and in its range, before parse
/// checks how they combine. FLOW shares them (but DELAY, AT and UNIQUE's three).
#[derive(Default)]
pub(super) struct Given<'a> {
    pub(super) priority: Option<i64>,
    pub(super) delay: Option<u64>,
    pub(super) at: Option<u64>,
    /// The policy's options, in [`policy::OPTIONS`]' order.
    pub(super) policy: [Option<u64>; 4],
    pub(super) unique: Option<&'a [u8]>,
    pub(super) hold: Option<u64>,
    pub(super) until_finished: Option<bool>,
    pub(super) headers: Option<&'a [u8]>,
    /// The child's link (protocol 1.6, §7.8).
    pub(super) parent: Option<&'a [u8]>,
    /// The job's group (protocol 1.7, §7.9).
    pub(super) group: Option<&'a [u8]>,
}

impl<'a> Given<'a> {
    /// The options of `args`, names and values from ARGV[3] on.
    pub(super) fn read(args: &'a [&'a [u8]]) -> Result<Given<'a>, Refusal> {
        let mut given = Given::default();
        let mut rest = args;
        while let Some((&name, tail)) = rest.split_first() {
            given.take(name, tail.first().copied())?;
            rest = tail.get(1..).unwrap_or_default();
        }
        Ok(given)
    }

    /// Take the option `name` with its `value`: refused when it is
    /// unknown, given twice or out of range.
    fn take(&mut self, name: &[u8], value: Option<&'a [u8]>) -> Result<(), Refusal> {
        let upper = name.to_ascii_uppercase();
        let of_policy = policy::OPTIONS.iter().position(|(known, _)| known.as_bytes() == upper.as_slice());
        match (upper.as_slice(), of_policy) {
            (b"PRIORITY", _) if self.priority.is_none() => {
                self.priority = Some(integer(value, "PRIORITY", PRIORITY)?)
            }
            (b"DELAY", _) if self.delay.is_none() => self.delay = Some(count(value, "DELAY", DELAY_MS)?),
            (b"AT", _) if self.at.is_none() => self.at = Some(count(value, "AT", AT_MS)?),
            (b"UNIQUE", _) if self.unique.is_none() => match value {
                Some(key) if !key.is_empty() && key.len() <= MAX_UNIQUE_KEY => self.unique = Some(key),
                _ => return Err(Refusal::arg(format!("UNIQUE must be 1 to {MAX_UNIQUE_KEY} bytes"))),
            },
            (b"UNIQUE_FOR", _) if self.hold.is_none() => {
                self.hold = Some(count(value, "UNIQUE_FOR", UNIQUE_MS)?)
            }
            (b"HEADERS", _) if self.headers.is_none() => match value {
                Some(text) if !text.is_empty() && text.len() <= MAX_HEADERS => self.headers = Some(text),
                _ => return Err(Refusal::arg(format!("HEADERS must be 1 to {MAX_HEADERS} bytes"))),
            },
            (b"UNIQUE_DONE", _) if self.until_finished.is_none() => {
                self.until_finished = Some(count(value, "UNIQUE_DONE", FLAG)? == 1)
            }
            (b"PARENT", _) if self.parent.is_none() => self.parent = Some(parent_option(value)?),
            (b"GROUP", _) if self.group.is_none() => self.group = Some(group_name(value)?),
            (_, Some(at)) if self.policy[at].is_none() => {
                let (label, range) = &policy::OPTIONS[at];
                self.policy[at] = Some(count(value, label, range.clone())?);
            }
            (
                b"PRIORITY" | b"DELAY" | b"AT" | b"UNIQUE" | b"UNIQUE_FOR" | b"UNIQUE_DONE" | b"HEADERS"
                | b"PARENT" | b"GROUP",
                _,
            )
            | (_, Some(_)) => {
                return Err(Refusal::arg(format!("{} given twice", lossy(&upper))));
            }
            _ => return Err(Refusal::arg(format!("unknown option {}", lossy(name)))),
        }
        Ok(())
    }

    /// The dedup `UNIQUE` asks for: refused when `UNIQUE` comes without
    /// `UNIQUE_FOR`, or its partners without it.
    fn unique(&self) -> Result<Option<Unique<'a>>, Refusal> {
        match (self.unique, self.hold) {
            (Some(key), Some(hold)) => {
                Ok(Some(Unique { key, hold, until_finished: self.until_finished.unwrap_or(false) }))
            }
            (Some(_), None) => Err(Refusal::arg("UNIQUE needs UNIQUE_FOR")),
            (None, _) if self.hold.is_some() || self.until_finished.is_some() => {
                Err(Refusal::arg("UNIQUE_FOR and UNIQUE_DONE need UNIQUE"))
            }
            (None, _) => Ok(None),
        }
    }
}

impl Enqueue<'_> {
    /// The seed's two keys take no option that needs another key: refuse
    /// one given with them.
    fn within_keys(&self) -> Result<(), Refusal> {
        if self.parent.is_some() && self.keys.flow.is_none() {
            return Err(Refusal::arg("PARENT needs all thirteen keys"));
        }
        if self.keys.more.is_some() {
            return Ok(());
        }
        if self.headers.is_some() {
            return Err(Refusal::arg("HEADERS needs all eleven keys"));
        }
        if self.unique.is_some() {
            return Err(Refusal::arg("UNIQUE needs all eleven keys"));
        }
        if self.policy.is_some() {
            return Err(Refusal::arg("ATTEMPTS, BACKOFF, BACKOFF_EXP and TIMEOUT need all eleven keys"));
        }
        if self.delay.is_some() || self.at.is_some() || self.priority != 0 {
            return Err(Refusal::arg("PRIORITY, DELAY and AT need all eleven keys"));
        }
        Ok(())
    }

    /// The group's keys' types and its settings (with the other types).
    fn group_settings<S: Store>(&self, store: &mut S) -> Result<Option<Settings>, Refusal> {
        let Some(group) = self.group else { return Ok(None) };
        let grouping = Grouping::of(self.prefix);
        grouping.check(store)?;
        grouping.settings(store, group).map(Some)
    }

    /// A group at its most pending refuses a job due now that would join
    /// them (`EMQFULL`), after every other check.
    fn room_in_group<S: Store>(&self, store: &mut S, settings: Option<Settings>) -> Result<(), Refusal> {
        let (Some(group), Some(Settings { max: Some(max), .. })) = (self.group, settings) else {
            return Ok(());
        };
        if store.zcard(&Grouping::of(self.prefix).keys.pending(group)) >= max {
            return Err(full(group, max));
        }
        Ok(())
    }

    /// The types of pending and of each key the call's options use
    /// (delayed only when the job is `due` later).
    fn need_types<S: Store>(&self, store: &mut S, due: Option<u64>) -> Result<(), Refusal> {
        need(store, self.keys.pending, KeyType::Zset)?;
        let Some(more) = self.keys.more else { return Ok(()) };
        if due.is_some() {
            need(store, more.delayed, KeyType::Zset)?;
        }
        if self.priority != 0 {
            need(store, more.priority, KeyType::Hash)?;
        }
        if self.policy.is_some() {
            need(store, more.policy, KeyType::Hash)?;
        }
        if self.headers.is_some() {
            need(store, more.headers, KeyType::Hash)?;
        }
        if self.unique.is_some() {
            need(store, more.unique, KeyType::Hash)?;
            need(store, more.unique_until, KeyType::Zset)?;
        }
        if let (Some(_), Some(flow)) = (self.parent, self.keys.flow) {
            need(store, flow.parents, KeyType::Hash)?;
        }
        Ok(())
    }

    /// Write the record, in `state`, and the job's entries in the hashes its
    /// options use (priority, policy, headers), and hold its unique key.
    fn write<S: Store>(&self, store: &mut S, state: &[u8], now: u64) {
        let enqueued_at = now.to_string();
        let fields: [(&[u8], &[u8]); 4] = [
            (b"state", state),
            (b"attempts", b"0"),
            (b"payload", self.payload),
            (b"enqueued_at", enqueued_at.as_bytes()),
        ];
        write_record(store, self.keys.job, &fields, now);
        if let Some(group) = self.group {
            store.hset(&Grouping::of(self.prefix).keys.membership(), &[(self.id, group)]);
        }
        let Some(more) = self.keys.more else { return };
        if self.priority != 0 {
            store.hset(more.priority, &[(self.id, self.priority.to_string().as_bytes())]);
        }
        if let Some(policy) = &self.policy {
            store.hset(more.policy, &[(self.id, &policy.text())]);
        }
        if let Some(headers) = self.headers {
            store.hset(more.headers, &[(self.id, headers)]);
        }
        if let Some(unique) = &self.unique {
            self.hold(store, more, unique, now);
        }
        if let (Some(link), Some(flow)) = (self.parent, self.keys.flow) {
            store.hset(flow.parents, &[(self.id, link)]);
        }
    }

    /// The job that holds `unique`'s key now, if one does: its hold has not
    /// ended, and (for a key that frees when its job finishes) that job is
    /// still pending, delayed or active.
    fn holder<S: Store>(
        &self,
        store: &mut S,
        keys: EnqueueMore<'_>,
        unique: &Unique,
        now: u64,
    ) -> Result<Option<Vec<u8>>, Refusal> {
        let (held, until) = (keys.unique, keys.unique_until);
        let Some(value) = store.hget(held, unique.key) else { return Ok(None) };
        // `<0|1>:<id>`: whether it frees when its job finishes, and the job,
        // a job id (PROTOCOL.md §1: ENQUEUE answers it as the holder's); a
        // value of another shape is malformed, held or not.
        let (mode, holder) = match value.as_slice() {
            [mode @ (b'0' | b'1'), b':', holder @ ..] if holder.starts_with(b"JOB") => {
                (*mode, holder.to_vec())
            }
            _ => return Err(malformed(held, unique.key, "<0|1>:<id>")),
        };
        if store.zscore(until, unique.key).is_none_or(|ends| ends <= now as f64) {
            return Ok(None);
        }
        if mode == b'1' {
            let record = record_key(self.prefix, &holder);
            need(store, &record, KeyType::Hash)?;
            // Read as every record is (its state, one of the six, and its
            // attempts), but with no look at a moving slot: a holder missing
            // here frees the key.
            let fields: [&[u8]; 2] = [b"state", b"attempts"];
            let read = store.hmget(&record, &fields);
            whole(store, &record, &fields, &read)?;
            let state = read.into_iter().next().flatten();
            if !matches!(state.as_deref(), Some(b"pending" | b"delayed" | b"active" | b"waiting")) {
                return Ok(None);
            }
        }
        Ok(Some(holder))
    }

    /// Hold `unique`'s key for this job until now + its hold, forgetting up
    /// to [`UNIQUE_SWEEP`] keys whose hold has ended (bounded work per call).
    fn hold<S: Store>(&self, store: &mut S, keys: EnqueueMore<'_>, unique: &Unique, now: u64) {
        let (held, until) = (keys.unique, keys.unique_until);
        let ended = store.zupto(until, now as f64, UNIQUE_SWEEP);
        for key in &ended {
            store.hdel(held, key);
        }
        for key in &ended {
            store.zrem(until, key);
        }
        let mode = if unique.until_finished { b"1:".as_slice() } else { b"0:" };
        store.hset(held, &[(unique.key, &[mode, self.id].concat())]);
        store.zadd(until, (now + unique.hold) as f64, unique.key);
    }
}
