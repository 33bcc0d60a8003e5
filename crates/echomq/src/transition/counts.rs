//! COUNTS: a queue's counters, in all and per minute or hour (protocol
//! 1.4). It writes nothing; the transitions that enqueue, complete and fail
//! jobs keep them.

use crate::ErrorKind;
use echomq_core::Name;
use echomq_core::Reply;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::reply::{array_reply, count_reply};
use super::Transition;
use crate::{Error, Result};

/// Read a queue's counters over the last hour by minute, or the last week by hour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    /// Which ring: the last 60 minutes or the last 168 hours.
    pub span: Span,
}

/// The span of [`Counts`]: one slot a minute or an hour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Span {
    /// The last 60 minutes, one slot a minute.
    Minutes,
    /// The last 168 hours (a week), one slot an hour.
    Hours,
}

impl Span {
    /// How long one slot is.
    #[must_use]
    pub fn slot(self) -> Duration {
        match self {
            Span::Minutes => Duration::from_secs(60),
            Span::Hours => Duration::from_secs(3600),
        }
    }
}

/// How many jobs of a queue were enqueued, completed, failed (with another
/// attempt to come) and went dead: a failure counts once, as failed or dead.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Enqueued (ENQUEUE, ENQUEUEMANY, a schedule's tick, a batch's callback).
    pub enqueued: u64,
    /// Completed (acked).
    pub completed: u64,
    /// Failed, with another attempt to come (FAIL to delayed, REAP to pending).
    pub failed: u64,
    /// Out of attempts (FAIL or REAP to dead).
    pub dead: u64,
}

/// A queue's counters: totals since the queue began counting, and the slots
/// of the span, oldest first, the last one holding the server's now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CountsReply {
    /// The server's clock when it answered.
    pub now: SystemTime,
    /// Every job counted since the queue's counters began.
    pub totals: Tally,
    /// One tally a minute (or hour), oldest first; the last is now's, still filling.
    pub slots: Vec<Tally>,
    /// How long each slot is.
    pub slot: Duration,
}

impl CountsReply {
    /// When slot `i` began.
    #[must_use]
    pub fn start(&self, i: usize) -> SystemTime {
        let ms = |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as u64;
        let slot = self.slot.as_millis() as u64;
        let current = ms(self.now) / slot * slot;
        let back = (self.slots.len() - 1 - i.min(self.slots.len() - 1)) as u64 * slot;
        UNIX_EPOCH + Duration::from_millis(current.saturating_sub(back))
    }
}

impl Transition for Counts {
    const NAME: Name = Name::Counts;
    type Output = CountsReply;

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        let unit: &[u8] = match self.span {
            Span::Minutes => b"minute",
            Span::Hours => b"hour",
        };
        Ok(vec![unit.to_vec()])
    }

    fn parse(reply: Reply) -> Result<CountsReply> {
        let shape = |what: String| Error::new(ErrorKind::Reply, format!("the reply: {what}"));
        let [now, totals, slots] = <[Reply; 3]>::try_from(array_reply("the reply", reply)?)
            .map_err(|parts| shape(format!("{} parts, not 3", parts.len())))?;
        let tally = |value: Reply| -> Result<Tally> {
            let four = array_reply("a tally", value)?
                .into_iter()
                .map(|n| count_reply("a tally", n))
                .collect::<Result<Vec<_>>>()?;
            let [enqueued, completed, failed, dead] =
                <[u64; 4]>::try_from(four).map_err(|four| shape(format!("a tally of {four:?}")))?;
            Ok(Tally { enqueued, completed, failed, dead })
        };
        let slots = array_reply("the slots", slots)?.into_iter().map(tally).collect::<Result<Vec<_>>>()?;
        let slot = match slots.len() {
            60 => Span::Minutes,
            168 => Span::Hours,
            // Only near the epoch is a ring shorter than its span.
            n if n < 60 => Span::Minutes,
            n => return Err(shape(format!("{n} slots"))),
        }
        .slot();
        let now = UNIX_EPOCH + Duration::from_millis(count_reply("the server's time", now)?);
        Ok(CountsReply { now, totals: tally(totals)?, slots, slot })
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        Vec::from_iter([Span::Minutes, Span::Hours].map(|span| Counts { span }))
    }
}
