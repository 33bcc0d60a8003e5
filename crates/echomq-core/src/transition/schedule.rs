//! SCHEDULE (`schedule.lua`), and what the schedules share. SCHEDULE and UNSCHEDULE keep a queue's
//! schedules, SCHEDULES hands them out with their next ticks, FIRE enqueues
//! one tick's job and moves the schedule's next tick on. The server stores
//! and hands out; the host reads a definition and computes its tick times
//! (PROTOCOL.md §11.6). A tick fires once however many workers try: FIRE
//! moves on only from the next tick it was given, and the tick's job id is
//! derived from (queue, schedule, tick), so ENQUEUE's duplicate rule holds too.

use super::need;
use crate::description::{keys, Description, Effect};
use crate::limits::{AT_MS, MAX_DEFINITION, MAX_SCHEDULE_NAME};
use crate::parse::{count, named_keys, options};
use crate::store::{KeyType, Store};
use crate::{Answer, Code, Refusal, Reply};

/// A schedule's name: 1 to [`MAX_SCHEDULE_NAME`] bytes.
pub(super) fn schedule_name(value: Option<&[u8]>) -> Result<&[u8], Refusal> {
    match value {
        Some(name) if !name.is_empty() && name.len() <= MAX_SCHEDULE_NAME => Ok(name),
        _ => Err(Refusal::arg(format!("schedule name must be 1 to {MAX_SCHEDULE_NAME} bytes"))),
    }
}

keys! {
    /// SCHEDULE's KEYS.
    ScheduleKeys {
        schedules: Schedules,
        ticks: Ticks,
    }
}

/// A parsed SCHEDULE.
#[derive(Debug)]
pub struct Schedule<'a> {
    keys: ScheduleKeys<'a>,
    name: &'a [u8],
    definition: &'a [u8],
    next: u64,
}

impl<'a> Schedule<'a> {
    /// What SCHEDULE is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "schedule",
        command: "EMQ.SCHEDULE",
        keys: ScheduleKeys::ROLES,
        forms: ScheduleKeys::FORMS,
        args: &["name", "definition", "next"],
        options: &[],
        effect: Effect::Grows,
        wakes_claims: false,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: true,
    };

    /// KEYS: schedules, ticks. ARGV: name, definition, next tick.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQARG`: the keys are not this queue's, in their number and roles; the name is not 1 to
    ///   `MAX_SCHEDULE_NAME` bytes; the definition is missing; next is missing or out of range; an argument
    ///   follows it.
    /// - `EMQSIZE`: the definition is over `MAX_DEFINITION` bytes.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Schedule<'a>, Refusal> {
        let (keys, _) = named_keys::<ScheduleKeys>(keys, b"")?;
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
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: schedules or ticks holds another type.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let ScheduleKeys { schedules, ticks } = self.keys;
        need(store, schedules, KeyType::Hash)?;
        need(store, ticks, KeyType::Zset)?;
        let added = store.hget(schedules, self.name).is_none();
        store.hset(schedules, &[(self.name, self.definition)]);
        store.zadd(ticks, self.next as f64, self.name);
        Ok(Reply::Int(added.into()))
    }
}
