//! Schedules: SCHEDULE and UNSCHEDULE keep them, SCHEDULES hands them out
//! with their next ticks and the server's now, FIRE fires one tick. What a
//! definition means and when its ticks fall is the host's
//! ([`crate::schedule`]); the server stores and hands out.

use echomq_core::{limits, Name};
use redis::Value;

use super::{array_reply, bytes_reply, checked, count_reply, decimal, int_reply, unexpected, Transition};
use crate::id::JobId;
use crate::{Error, Result};

/// A schedule's name, checked as the server checks it.
fn name_arg(name: &str) -> Result<Vec<u8>> {
    if name.is_empty() || name.len() > limits::MAX_SCHEDULE_NAME {
        let max = limits::MAX_SCHEDULE_NAME;
        return Err(Error::Argument(format!("schedule name must be 1 to {max} bytes")));
    }
    Ok(name.as_bytes().to_vec())
}

/// Add a schedule, or replace the one of that name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// Its name, 1 to 200 bytes.
    pub name: String,
    /// Its definition, as [`crate::schedule::Schedule::definition`] writes it.
    pub definition: Vec<u8>,
    /// Its first tick, server ms.
    pub next: u64,
}

impl Transition for Schedule {
    const NAME: Name = Name::Schedule;
    /// `true` when added, `false` when it replaced one.
    type Output = bool;

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        if self.definition.len() > limits::MAX_DEFINITION {
            let max = limits::MAX_DEFINITION;
            return Err(Error::TooLarge(format!("definition exceeds {max} bytes")));
        }
        Ok(vec![
            name_arg(&self.name)?,
            self.definition.clone(),
            decimal(checked("next", self.next, limits::AT_MS)?),
        ])
    }

    fn parse(reply: Value) -> Result<bool> {
        Ok(count_reply("the reply", reply)? == 1)
    }
}

/// Remove a schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unschedule {
    /// Its name.
    pub name: String,
}

impl Transition for Unschedule {
    const NAME: Name = Name::Unschedule;
    /// `true` when removed, `false` when there was none.
    type Output = bool;

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        Ok(vec![name_arg(&self.name)?])
    }

    fn parse(reply: Value) -> Result<bool> {
        Ok(count_reply("the reply", reply)? == 1)
    }
}

/// Read the queue's schedules (or only the due ones) and the server's now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedules {
    /// Only those whose next tick is at or before the server's now.
    pub due: bool,
    /// At most this many, 1..=1000.
    pub limit: u64,
}

/// One schedule as the server holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored {
    /// Its name.
    pub name: String,
    /// Its definition's bytes.
    pub definition: Vec<u8>,
    /// Its next tick, server ms.
    pub next: u64,
}

/// What SCHEDULES read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    /// The server's now, ms: tick times are computed against it.
    pub now: u64,
    /// The schedules, by next tick, then name.
    pub schedules: Vec<Stored>,
}

impl Transition for Schedules {
    const NAME: Name = Name::Schedules;
    type Output = Listed;

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        let mut args = vec![b"LIMIT".to_vec(), decimal(checked("LIMIT", self.limit, limits::SWEEP_LIMIT)?)];
        if self.due {
            args.extend([b"DUE".to_vec(), b"1".to_vec()]);
        }
        Ok(args)
    }

    fn parse(reply: Value) -> Result<Listed> {
        let mut items = array_reply("the reply", reply)?.into_iter();
        let now = count_reply("now", items.next().unwrap_or(Value::Nil))?;
        let schedules = items
            .map(|item| {
                let [name, definition, next] = <[Value; 3]>::try_from(array_reply("entry", item)?)
                    .map_err(|entry| Error::Reply(format!("entry: got {entry:?}")))?;
                Ok(Stored {
                    name: String::from_utf8_lossy(&bytes_reply("name", name)?).into_owned(),
                    definition: bytes_reply("definition", definition)?,
                    next: count_reply("next", next)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Listed { now, schedules })
    }
}

/// Fire one tick: when the schedule's next tick is `tick`, move it to
/// `next` and enqueue the tick's job (`id`, pending at priority 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fire {
    /// The tick's job id, derived by [`crate::schedule::tick_id`].
    pub id: JobId,
    /// The job's bytes.
    pub payload: Vec<u8>,
    /// The schedule's name.
    pub name: String,
    /// The schedule's next tick as SCHEDULES handed it out.
    pub tick: u64,
    /// The tick after the one fired.
    pub next: u64,
    /// Move on without a job: the ticks up to `next` are skipped.
    pub skip: bool,
}

/// What a FIRE did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fired {
    /// The tick's job was enqueued, and the schedule moved on.
    Enqueued,
    /// The schedule moved on without a job: the job existed, or SKIP.
    MovedOn,
    /// The schedule's next tick was another: some other worker fired this
    /// one, or the schedule was removed or replaced. Nothing changed.
    Stale,
}

impl Transition for Fire {
    const NAME: Name = Name::Fire;
    type Output = Fired;

    fn job(&self) -> Option<&JobId> {
        Some(&self.id)
    }

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        if self.payload.len() > limits::MAX_PAYLOAD {
            return Err(Error::TooLarge(format!("payload exceeds {} bytes", limits::MAX_PAYLOAD)));
        }
        let tick = checked("tick", self.tick, limits::AT_MS)?;
        let next = checked("next", self.next, limits::AT_MS)?;
        if next <= tick {
            return Err(Error::Argument("next must be after tick".into()));
        }
        let mut args = vec![
            self.id.as_str().into(),
            self.payload.clone(),
            name_arg(&self.name)?,
            decimal(tick),
            decimal(next),
        ];
        if self.skip {
            args.extend([b"SKIP".to_vec(), b"1".to_vec()]);
        }
        Ok(args)
    }

    fn parse(reply: Value) -> Result<Fired> {
        match int_reply("the reply", reply)? {
            1 => Ok(Fired::Enqueued),
            0 => Ok(Fired::MovedOn),
            -1 => Ok(Fired::Stale),
            other => Err(unexpected("the reply", &Value::Int(other))),
        }
    }
}
