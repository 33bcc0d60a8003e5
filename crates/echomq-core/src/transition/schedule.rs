//! Schedules (see the `.lua` twins): SCHEDULE and UNSCHEDULE keep a queue's
//! schedules, SCHEDULES hands them out with their next ticks, FIRE enqueues
//! one tick's job and moves the schedule's next tick on. The server stores
//! and hands out; the host reads a definition and computes its tick times
//! (PROTOCOL.md §11.6). A tick fires once however many workers try: FIRE
//! moves on only from the next tick it was given, and the tick's job id is
//! derived from (queue, schedule, tick), so ENQUEUE's duplicate rule holds too.

use super::events::{emit, trailing, Events};
use super::{need, wake, wake_key, write_record};
use crate::description::{Description, Effect, Role};
use crate::limits::{AT_MS, FLAG, MAX_DEFINITION, MAX_PAYLOAD, MAX_SCHEDULE_NAME, SWEEP_LIMIT};
use crate::parse::{count, kind, options, queue_prefix};
use crate::store::{KeyType, Store};
use crate::{Answer, Code, Refusal, Reply};

/// A schedule's name: 1 to [`MAX_SCHEDULE_NAME`] bytes.
fn schedule_name(value: Option<&[u8]>) -> Result<&[u8], Refusal> {
    match value {
        Some(name) if !name.is_empty() && name.len() <= MAX_SCHEDULE_NAME => Ok(name),
        _ => Err(Refusal::arg(format!("schedule name must be 1 to {MAX_SCHEDULE_NAME} bytes"))),
    }
}

/// A parsed SCHEDULE.
#[derive(Debug)]
pub struct Schedule<'a> {
    keys: &'a [&'a [u8]],
    name: &'a [u8],
    definition: &'a [u8],
    next: u64,
}

impl<'a> Schedule<'a> {
    /// What SCHEDULE is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "schedule",
        command: "EMQ.SCHEDULE",
        keys: &[Role::Schedules, Role::Ticks],
        forms: &[2],
        args: &["name", "definition", "next"],
        options: &[],
        effect: Effect::Writes,
        wakes_claims: false,
    };

    /// KEYS: schedules, ticks. ARGV: name, definition, next tick.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Schedule<'a>, Refusal> {
        queue_prefix(keys, Self::DESCRIPTION.keys, b"")?;
        let name = schedule_name(args.first().copied())?;
        let definition = *args.get(1).ok_or_else(|| Refusal::arg("definition is missing"))?;
        if definition.len() > MAX_DEFINITION {
            return Err(Refusal::new(Code::Size, format!("definition exceeds {MAX_DEFINITION} bytes")));
        }
        let next = count(args.get(2).copied(), "next", AT_MS)?;
        options(args.get(3..).unwrap_or_default(), [])?;
        Ok(Schedule { keys, name, definition, next })
    }

    /// Add or replace the schedule; reply 1 added, 0 replaced.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let [schedules, ticks] = [self.keys[0], self.keys[1]];
        need(store, schedules, KeyType::Hash)?;
        need(store, ticks, KeyType::Zset)?;
        let added = store.hget(schedules, self.name).is_none();
        store.hset(schedules, &[(self.name, self.definition)]);
        store.zadd(ticks, self.next as f64, self.name);
        Ok(Reply::Int(added.into()))
    }
}

/// A parsed UNSCHEDULE.
#[derive(Debug)]
pub struct Unschedule<'a> {
    keys: &'a [&'a [u8]],
    name: &'a [u8],
}

impl<'a> Unschedule<'a> {
    /// What UNSCHEDULE is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "unschedule",
        command: "EMQ.UNSCHEDULE",
        keys: &[Role::Schedules, Role::Ticks],
        forms: &[2],
        args: &["name"],
        options: &[],
        effect: Effect::Frees,
        wakes_claims: false,
    };

    /// KEYS: schedules, ticks. ARGV: name.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Unschedule<'a>, Refusal> {
        queue_prefix(keys, Self::DESCRIPTION.keys, b"")?;
        let name = schedule_name(args.first().copied())?;
        options(args.get(1..).unwrap_or_default(), [])?;
        Ok(Unschedule { keys, name })
    }

    /// Remove the schedule; reply 1 removed, 0 there was none.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let [schedules, ticks] = [self.keys[0], self.keys[1]];
        need(store, schedules, KeyType::Hash)?;
        need(store, ticks, KeyType::Zset)?;
        let existed = store.hget(schedules, self.name).is_some();
        store.hdel(schedules, self.name);
        store.zrem(ticks, self.name);
        Ok(Reply::Int(existed.into()))
    }
}

/// A parsed SCHEDULES.
#[derive(Debug)]
pub struct Schedules<'a> {
    keys: &'a [&'a [u8]],
    due: bool,
    limit: usize,
}

impl<'a> Schedules<'a> {
    /// What SCHEDULES is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "schedules",
        command: "EMQ.SCHEDULES",
        keys: &[Role::Schedules, Role::Ticks],
        forms: &[2],
        args: &[],
        options: &["DUE", "LIMIT"],
        effect: Effect::Reads,
        wakes_claims: false,
    };

    /// KEYS: schedules, ticks. ARGV: options DUE, LIMIT.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Schedules<'a>, Refusal> {
        queue_prefix(keys, Self::DESCRIPTION.keys, b"")?;
        let [due, limit] = options(args, [("DUE", FLAG), ("LIMIT", SWEEP_LIMIT)])?;
        let limit = limit.unwrap_or(*SWEEP_LIMIT.end()) as usize;
        Ok(Schedules { keys, due: due == Some(1), limit })
    }

    /// [now, [name, definition, next]…]: up to LIMIT schedules by next tick,
    /// only those due (next ≤ now) with DUE 1.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let [schedules, ticks] = [self.keys[0], self.keys[1]];
        need(store, schedules, KeyType::Hash)?;
        need(store, ticks, KeyType::Zset)?;
        let now = store.now_ms();
        let max = if self.due { now as f64 } else { f64::INFINITY };
        let mut reply = vec![Reply::count(now)];
        for name in store.zupto(ticks, max, self.limit) {
            let Some(definition) = store.hget(schedules, &name) else { continue };
            let next = store.zscore(ticks, &name).unwrap_or_default();
            reply.push(Reply::Array(vec![
                Reply::Bulk(name),
                Reply::Bulk(definition),
                Reply::count(next as u64),
            ]));
        }
        Ok(Reply::Array(reply))
    }
}

/// A parsed FIRE.
#[derive(Debug)]
pub struct Fire<'a> {
    keys: &'a [&'a [u8]],
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
        keys: &[Role::Job, Role::Pending, Role::Ticks, Role::Events, Role::Config, Role::Wake],
        forms: &[6],
        args: &["id", "payload", "name", "tick", "next"],
        options: &["SKIP"],
        effect: Effect::Writes,
        wakes_claims: true,
    };

    /// KEYS: job, pending, ticks, events, config, wake. ARGV: id, payload,
    /// name, tick, next, then SKIP.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Fire<'a>, Refusal> {
        let id = kind(args.first().copied())?;
        queue_prefix(keys, Self::DESCRIPTION.form(keys.len())?, id)?;
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
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let [record, pending, ticks] = [self.keys[0], self.keys[1], self.keys[2]];
        need(store, record, KeyType::Hash)?;
        need(store, pending, KeyType::Zset)?;
        need(store, ticks, KeyType::Zset)?;
        let events = Events::open(store, trailing(self.keys, 5))?;
        let wakes = wake_key(store, self.keys, 5)?;
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
