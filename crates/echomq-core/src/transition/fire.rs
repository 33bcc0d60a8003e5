//! FIRE: enqueue one tick's job and move its schedule's next tick on,
//! once however many workers try (PROTOCOL.md §11.6; `fire.lua`).

use super::events::{emit, Events};
use super::schedule::schedule_name;
use super::{need, wake, wake_key, write_record};
use crate::description::{keys, Description, Effect};
use crate::limits::{AT_MS, FLAG, MAX_PAYLOAD};
use crate::parse::{count, kind, named_keys, options};
use crate::store::{KeyType, Store};
use crate::{Answer, Code, Refusal, Reply};

keys! {
    /// FIRE's KEYS.
    FireKeys {
        job: Job,
        pending: Pending,
        ticks: Ticks,
        events: Events,
        config: Config,
        wake: Wake,
    }
    then counts: Counts
}

/// A parsed FIRE.
#[derive(Debug)]
pub struct Fire<'a> {
    keys: FireKeys<'a>,
    id: &'a [u8],
    payload: &'a [u8],
    name: &'a [u8],
    tick: u64,
    next: u64,
    skip: bool,
}

impl<'a> Fire<'a> {
    /// What FIRE is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "fire",
        command: "EMQ.FIRE",
        keys: FireKeys::ROLES,
        forms: FireKeys::FORMS,
        args: &["id", "payload", "name", "tick", "next"],
        options: &["SKIP"],
        effect: Effect::Grows,
        wakes_claims: true,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: true,
    };

    /// KEYS: job, pending, ticks, events, config, wake. ARGV: id, payload,
    /// name, tick, next, then SKIP.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQKIND`: the id (`ARGV[1]`) is not `JOB`-namespaced.
    /// - `EMQARG`: the keys are not this queue's, in their number and roles; the payload is missing; the
    ///   schedule name is not 1 to `MAX_SCHEDULE_NAME` bytes; tick or next is missing or out of range, or
    ///   next is not after tick; an option is unknown, given twice or out of range.
    /// - `EMQSIZE`: the payload is over `MAX_PAYLOAD` bytes.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Fire<'a>, Refusal> {
        let id = kind(args.first().copied())?;
        let (keys, _) = named_keys::<FireKeys>(keys, id)?;
        let payload = *args.get(1).ok_or_else(|| Refusal::arg("payload is missing"))?;
        if payload.len() > MAX_PAYLOAD {
            return Err(Refusal::new(Code::Size, format!("payload exceeds {MAX_PAYLOAD} bytes")));
        }
        let name = schedule_name(args.get(2).copied())?;
        let tick = count(args.get(3).copied(), "tick", AT_MS)?;
        let next = count(args.get(4).copied(), "next", AT_MS)?;
        if next <= tick {
            return Err(Refusal::arg("next must be after tick"));
        }
        let [skip] = options(args.get(5..).unwrap_or_default(), [("SKIP", FLAG)])?;
        Ok(Fire { keys, id, payload, name, tick, next, skip: skip == Some(1) })
    }

    /// When the schedule's next tick is `tick`: move it to `next`, and
    /// enqueue the job (unless SKIP, or its record exists). Reply 1 enqueued,
    /// 0 moved on without a job, -1 the next tick was not `tick` (nothing changed).
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: the record, pending, ticks, events, config or wake holds another type.
    /// - `EMQVERSION`: `<q>config`'s `protocol` is another major, or malformed.
    /// - `EMQDATA`: `<q>config`'s `events` is not an integer.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let FireKeys { job: record, pending, ticks, .. } = self.keys;
        need(store, record, KeyType::Hash)?;
        need(store, pending, KeyType::Zset)?;
        need(store, ticks, KeyType::Zset)?;
        let events = Events::open_counted(
            store,
            Some((self.keys.events, self.keys.config)),
            self.keys.counts,
            &["enqueued"],
        )?;
        let wakes = wake_key(store, Some(self.keys.wake))?;
        if store.zscore(ticks, self.name) != Some(self.tick as f64) {
            return Ok(Reply::Int(-1));
        }
        store.zadd(ticks, self.next as f64, self.name);
        if self.skip || store.key_type(record) != KeyType::None {
            return Ok(Reply::Int(0));
        }
        let now = store.now_ms();
        let enqueued_at = now.to_string();
        let fields: [(&[u8], &[u8]); 4] = [
            (b"state", b"pending"),
            (b"attempts", b"0"),
            (b"payload", self.payload),
            (b"enqueued_at", enqueued_at.as_bytes()),
        ];
        write_record(store, record, &fields, now);
        store.zadd(pending, 0.0, self.id);
        wake(store, wakes);
        emit(&events, store, "enqueued", self.id, &[(b"state", b"pending"), (b"schedule", self.name)]);
        Ok(Reply::Int(1))
    }
}
