//! STATS: count a queue's jobs in each state. It writes nothing.

use crate::ErrorKind;
use echomq_core::Name;
use echomq_core::Reply;

use super::reply::{array_reply, count_reply};
use super::Transition;
use crate::record::State;
use crate::{Error, Result};

/// Count the jobs in each state of a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stats;

/// How many jobs a queue holds in each state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatsReply {
    /// Waiting to be claimed.
    pub pending: u64,
    /// Under a lease.
    pub active: u64,
    /// Waiting for their due time.
    pub delayed: u64,
    /// Finished.
    pub done: u64,
    /// Out of attempts.
    pub dead: u64,
    /// Cancelled.
    pub cancelled: u64,
    /// Parents waiting for their children (protocol 1.6).
    pub waiting: u64,
}

impl StatsReply {
    /// How many jobs are in `state`.
    #[must_use]
    pub fn of(&self, state: State) -> u64 {
        match state {
            State::Pending => self.pending,
            State::Active => self.active,
            State::Delayed => self.delayed,
            State::Done => self.done,
            State::Dead => self.dead,
            State::Cancelled => self.cancelled,
            State::Waiting => self.waiting,
        }
    }
}

/// Two queues' counts, state by state: a partitioned queue's, say.
impl std::ops::Add for StatsReply {
    type Output = StatsReply;

    fn add(self, other: StatsReply) -> StatsReply {
        StatsReply {
            pending: self.pending + other.pending,
            active: self.active + other.active,
            delayed: self.delayed + other.delayed,
            done: self.done + other.done,
            dead: self.dead + other.dead,
            cancelled: self.cancelled + other.cancelled,
            waiting: self.waiting + other.waiting,
        }
    }
}

impl Transition for Stats {
    const NAME: Name = Name::Stats;
    type Output = StatsReply;

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        Ok(vec![])
    }

    fn parse(reply: Reply) -> Result<StatsReply> {
        let counts = array_reply("the reply", reply)?
            .into_iter()
            .map(|count| count_reply("the reply", count))
            .collect::<Result<Vec<_>>>()?;
        let [pending, active, delayed, done, dead, cancelled, waiting] = <[u64; 7]>::try_from(counts)
            .map_err(|counts| Error::new(ErrorKind::Reply, format!("the reply: got {counts:?}")))?;
        Ok(StatsReply { pending, active, delayed, done, dead, cancelled, waiting })
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        Vec::from_iter([Stats])
    }
}
