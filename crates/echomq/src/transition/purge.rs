//! PURGE: delete finished jobs past an age.

use crate::ErrorKind;
use std::time::Duration;

use echomq_core::Reply;
use echomq_core::{limits, Name, Role};

use super::argument::{checked, decimal, millis};
use super::reply::count_reply;
use super::Transition;
use crate::keyspace::Keyspace;
use crate::record::State;
use crate::{Error, Result};

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
            return Err(Error::new(
                ErrorKind::Argument,
                format!("cannot purge {state} jobs, only finished ones"),
            ));
        }
        Ok(vec![
            decimal(millis("age", self.age, limits::AGE_MS)?),
            b"LIMIT".to_vec(),
            decimal(checked("LIMIT", self.limit, limits::SWEEP_LIMIT)?),
        ])
    }

    fn parse(reply: Reply) -> Result<u64> {
        count_reply("the reply", reply)
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        use super::edges::{ends, ms};
        let e = super::edges::Ends::new();
        Vec::from_iter(e.finished.into_iter().flat_map(|state| {
            let [age_min, age_max] = ends(limits::AGE_MS).map(ms);
            [(age_min, e.limit_min), (age_max, e.limit_max)].map(|(age, limit)| Purge { state, age, limit })
        }))
    }
}
