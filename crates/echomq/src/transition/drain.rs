//! DRAIN: delete unfinished jobs, head first: an operator emptying a queue.

use crate::ErrorKind;
use echomq_core::Reply;
use echomq_core::{limits, Name, Role};

use super::argument::{checked, decimal};
use super::reply::count_reply;
use super::Transition;
use crate::keyspace::Keyspace;
use crate::record::State;
use crate::{Error, Result};

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
        if !matches!(self.state, State::Pending | State::Delayed | State::Active | State::Waiting) {
            let state = self.state;
            return Err(Error::new(
                ErrorKind::Argument,
                format!("cannot drain {state} jobs, only unfinished ones"),
            ));
        }
        Ok(vec![b"LIMIT".to_vec(), decimal(checked("LIMIT", self.limit, limits::SWEEP_LIMIT)?)])
    }

    fn parse(reply: Reply) -> Result<u64> {
        count_reply("the reply", reply)
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        let e = super::edges::Ends::new();
        Vec::from_iter(e.unfinished
                .into_iter()
                .flat_map(|state| [e.limit_min, e.limit_max].map(|limit| Drain { state, limit })))
    }
}
