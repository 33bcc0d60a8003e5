//! ENQUEUE: admit one job (PROTOCOL.md §7; `enqueue-12.lua`).

use super::events::{emit, Events};
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
        ],
        effect: Effect::Writes,
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
        let (mut priority, mut delay, mut at) = (None, None, None);
        let mut found = [None; 4];
        let (mut unique, mut hold, mut until_finished) = (None, None, None);
        let mut headers = None;
        let mut rest = &args[2..];
        while let Some((&name, tail)) = rest.split_first() {
            let value = tail.first().copied();
            let upper = name.to_ascii_uppercase();
            let of_policy =
                policy::OPTIONS.iter().position(|(known, _)| known.as_bytes() == upper.as_slice());
            match (upper.as_slice(), of_policy) {
                (b"PRIORITY", _) if priority.is_none() => {
                    priority = Some(integer(value, "PRIORITY", PRIORITY)?)
                }
                (b"DELAY", _) if delay.is_none() => delay = Some(count(value, "DELAY", DELAY_MS)?),
                (b"AT", _) if at.is_none() => at = Some(count(value, "AT", AT_MS)?),
                (b"UNIQUE", _) if unique.is_none() => match value {
                    Some(key) if !key.is_empty() && key.len() <= MAX_UNIQUE_KEY => unique = Some(key),
                    _ => return Err(Refusal::arg(format!("UNIQUE must be 1 to {MAX_UNIQUE_KEY} bytes"))),
                },
                (b"UNIQUE_FOR", _) if hold.is_none() => hold = Some(count(value, "UNIQUE_FOR", UNIQUE_MS)?),
                (b"HEADERS", _) if headers.is_none() => match value {
                    Some(text) if !text.is_empty() && text.len() <= MAX_HEADERS => headers = Some(text),
                    _ => return Err(Refusal::arg(format!("HEADERS must be 1 to {MAX_HEADERS} bytes"))),
                },
                (b"UNIQUE_DONE", _) if until_finished.is_none() => {
                    until_finished = Some(count(value, "UNIQUE_DONE", FLAG)? == 1)
                }
                (_, Some(at)) if found[at].is_none() => {
                    let (label, range) = &policy::OPTIONS[at];
                    found[at] = Some(count(value, label, range.clone())?);
                }
                (
                    b"PRIORITY" | b"DELAY" | b"AT" | b"UNIQUE" | b"UNIQUE_FOR" | b"UNIQUE_DONE" | b"HEADERS",
                    _,
                )
                | (_, Some(_)) => {
                    return Err(Refusal::arg(format!("{} given twice", lossy(&upper))));
                }
                _ => return Err(Refusal::arg(format!("unknown option {}", lossy(name)))),
            }
            rest = tail.get(1..).unwrap_or_default();
        }
        if delay.is_some() && at.is_some() {
            return Err(Refusal::arg("DELAY and AT exclude each other"));
        }
        let policy = Policy::from_options(found)?;
        let unique = match (unique, hold) {
            (Some(key), Some(hold)) => {
                Some(Unique { key, hold, until_finished: until_finished.unwrap_or(false) })
            }
            (Some(_), None) => return Err(Refusal::arg("UNIQUE needs UNIQUE_FOR")),
            (None, _) if hold.is_some() || until_finished.is_some() => {
                return Err(Refusal::arg("UNIQUE_FOR and UNIQUE_DONE need UNIQUE"));
            }
            (None, _) => None,
        };
        let priority = priority.unwrap_or(0);
        if headers.is_some() && keys.more.is_none() {
            return Err(Refusal::arg("HEADERS needs all eleven keys"));
        }
        if unique.is_some() && keys.more.is_none() {
            return Err(Refusal::arg("UNIQUE needs all eleven keys"));
        }
        if policy.is_some() && keys.more.is_none() {
            return Err(Refusal::arg("ATTEMPTS, BACKOFF, BACKOFF_EXP and TIMEOUT need all eleven keys"));
        }
        if (delay.is_some() || at.is_some() || priority != 0) && keys.more.is_none() {
            return Err(Refusal::arg("PRIORITY, DELAY and AT need all eleven keys"));
        }
        Ok(Enqueue { keys, id, payload, priority, delay, at, policy, unique, headers, prefix })
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
        let record = self.keys.job;
        match store.key_type(record) {
            KeyType::None => {}
            KeyType::Hash => return Ok(Reply::Int(0)),
            _ => need(store, record, KeyType::Hash)?,
        }
        need(store, self.keys.pending, KeyType::Zset)?;
        if let Some(more) = more {
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
        }
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

        let state: &[u8] = if delayed.is_some() { b"delayed" } else { b"pending" };
        let enqueued_at = now.to_string();
        let fields: [(&[u8], &[u8]); 4] = [
            (b"state", state),
            (b"attempts", b"0"),
            (b"payload", self.payload),
            (b"enqueued_at", enqueued_at.as_bytes()),
        ];
        write_record(store, record, &fields, now);
        if let Some(more) = more {
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
        }
        match delayed {
            Some((more, due)) => store.zadd(more.delayed, due as f64, self.id),
            None => {
                store.zadd(self.keys.pending, self.priority as f64, self.id);
                wake(store, wakes);
            }
        }
        emit(&events, store, "enqueued", self.id, &[(b"state", state)]);
        Ok(Reply::Int(1))
    }
}

impl Enqueue<'_> {
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
            if !matches!(state.as_deref(), Some(b"pending" | b"delayed" | b"active")) {
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
