//! Upkeep, run by every worker now and then and safe to run from many at once:
//! REAP takes expired leases back, PROMOTE moves due delayed jobs to pending,
//! PURGE deletes finished jobs past an age.

use std::time::Duration;

use echomq_core::{limits, Name, Role};
use redis::Value;

use super::{array_reply, checked, count_reply, decimal, millis, Transition};
use crate::keyspace::Keyspace;
use crate::record::State;
use crate::{Error, Result};

/// Expired leases go back to pending, or to dead when attempts are used up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reap {
    /// A job whose attempts are at or past this dies instead of going back.
    pub max_attempts: u64,
    /// How many jobs at most, 1..=1000.
    pub limit: u64,
}

/// What one REAP did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reaped {
    /// Jobs sent back to pending.
    pub requeued: u64,
    /// Jobs sent to dead.
    pub dead: u64,
}

impl Transition for Reap {
    const NAME: Name = Name::Reap;
    type Output = Reaped;

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        Ok(vec![
            decimal(checked("max_attempts", self.max_attempts, limits::MAX_ATTEMPTS)?),
            b"LIMIT".to_vec(),
            decimal(checked("LIMIT", self.limit, limits::SWEEP_LIMIT)?),
        ])
    }

    fn parse(reply: Value) -> Result<Reaped> {
        let counts = array_reply("the reply", reply)?;
        let [requeued, dead] = <[Value; 2]>::try_from(counts)
            .map_err(|counts| Error::Reply(format!("the reply: got {counts:?}")))?;
        Ok(Reaped { requeued: count_reply("the reply", requeued)?, dead: count_reply("the reply", dead)? })
    }
}

/// Delayed jobs whose due time has come move to pending.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Promote {
    /// How many jobs at most, 1..=1000.
    pub limit: u64,
}

impl Transition for Promote {
    const NAME: Name = Name::Promote;
    /// How many jobs moved.
    type Output = u64;

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        Ok(vec![b"LIMIT".to_vec(), decimal(checked("LIMIT", self.limit, limits::SWEEP_LIMIT)?)])
    }

    fn parse(reply: Value) -> Result<u64> {
        count_reply("the reply", reply)
    }
}

/// Delete finished jobs (done, dead or cancelled) that finished at least `age` ago.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Purge {
    /// Which finished jobs: [`State::Done`], [`State::Dead`] or [`State::Cancelled`].
    pub state: State,
    /// Only jobs that finished at least this long ago.
    pub age: Duration,
    /// How many jobs at most, 1..=1000.
    pub limit: u64,
}

impl Transition for Purge {
    const NAME: Name = Name::Purge;
    /// How many jobs were deleted.
    type Output = u64;

    /// `KEYS[1]` is the set of the finished state it purges.
    fn key(&self, keys: &Keyspace, role: Role) -> String {
        match role {
            Role::Finished => keys.state(self.state),
            other => keys.role(other, None).expect("a call on the whole queue names no job"),
        }
    }

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        if !matches!(self.state, State::Done | State::Dead | State::Cancelled) {
            let state = self.state;
            return Err(Error::Argument(format!("cannot purge {state} jobs, only finished ones")));
        }
        Ok(vec![
            decimal(millis("age", self.age, limits::AGE_MS)?),
            b"LIMIT".to_vec(),
            decimal(checked("LIMIT", self.limit, limits::SWEEP_LIMIT)?),
        ])
    }

    fn parse(reply: Value) -> Result<u64> {
        count_reply("the reply", reply)
    }
}

/// Delete unfinished jobs (pending, delayed, or, when forced, active), head
/// first: an operator emptying a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Drain {
    /// Which jobs: [`State::Pending`], [`State::Delayed`] or [`State::Active`].
    pub state: State,
    /// How many jobs at most, 1..=1000.
    pub limit: u64,
}

impl Transition for Drain {
    const NAME: Name = Name::Drain;
    /// How many jobs were deleted.
    type Output = u64;

    /// `KEYS[1]` is the set of the unfinished state it drains.
    fn key(&self, keys: &Keyspace, role: Role) -> String {
        match role {
            Role::Unfinished => keys.state(self.state),
            other => keys.role(other, None).expect("a call on the whole queue names no job"),
        }
    }

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        if !matches!(self.state, State::Pending | State::Delayed | State::Active) {
            let state = self.state;
            return Err(Error::Argument(format!("cannot drain {state} jobs, only unfinished ones")));
        }
        Ok(vec![b"LIMIT".to_vec(), decimal(checked("LIMIT", self.limit, limits::SWEEP_LIMIT)?)])
    }

    fn parse(reply: Value) -> Result<u64> {
        count_reply("the reply", reply)
    }
}

/// The last step of deleting a queue: refused (`EMQSTATE`) while any of its
/// sets holds a job; then every other key of the queue goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Obliterate;

impl Transition for Obliterate {
    const NAME: Name = Name::Obliterate;
    /// How many keys (besides the empty sets) were deleted.
    type Output = u64;

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        Ok(Vec::new())
    }

    fn parse(reply: Value) -> Result<u64> {
        count_reply("the reply", reply)
    }
}
