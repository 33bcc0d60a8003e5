//! FIRE: fire one tick of a schedule, once, whoever else tries.

use crate::ErrorKind;
use echomq_core::Reply;
use echomq_core::{limits, Name};

use super::argument::{checked, decimal};
use super::reply::{int_reply, unexpected};
use super::schedule::name_arg;
use super::Transition;
use crate::id::JobId;
use crate::{Error, Result};

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
            return Err(Error::new(
                ErrorKind::TooLarge,
                format!("payload exceeds {} bytes", limits::MAX_PAYLOAD),
            ));
        }
        let tick = checked("tick", self.tick, limits::AT_MS)?;
        let next = checked("next", self.next, limits::AT_MS)?;
        if next <= tick {
            return Err(Error::new(ErrorKind::Argument, "next must be after tick"));
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

    fn parse(reply: Reply) -> Result<Fired> {
        match int_reply("the reply", reply)? {
            1 => Ok(Fired::Enqueued),
            0 => Ok(Fired::MovedOn),
            -1 => Ok(Fired::Stale),
            other => Err(unexpected("the reply", &Reply::Int(other))),
        }
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        use super::edges::id;
        let e = super::edges::Ends::new();
        Vec::from_iter(e.schedule_names.iter().flat_map(|name| {
            [(Vec::new(), e.at_min, false), (vec![b'p'; limits::MAX_PAYLOAD], e.at_max - 1, true)].map(
                |(payload, tick, skip)| Fire {
                    id: id(1),
                    payload,
                    name: name.clone(),
                    tick,
                    next: e.at_max,
                    skip,
                },
            )
        }))
    }
}
