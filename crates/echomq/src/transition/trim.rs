//! TRIM: bounded retention, as every worker's upkeep runs it.

use crate::ErrorKind;
use echomq_core::Reply;
use echomq_core::{limits, Name, Role};

use super::argument::{checked, decimal};
use super::reply::count_reply;
use super::Transition;
use crate::keyspace::Keyspace;
use crate::record::State;
use crate::{Error, Result};

/// Bounded retention, as every worker's upkeep runs it: delete up to `limit`
/// of the oldest finished jobs in `state` that are past the queue's
/// retention for it (see [`Retention`](super::Retention)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trim {
    /// Which finished jobs: [`State::Done`], [`State::Dead`] or [`State::Cancelled`].
    pub state: State,
    /// How many jobs at most, 1..=1000.
    pub limit: u64,
}

impl Transition for Trim {
    const NAME: Name = Name::Trim;
    /// How many jobs were deleted.
    type Output = u64;

    /// `KEYS[1]` is the set of the finished state it trims.
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
                format!("cannot trim {state} jobs, only finished ones"),
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
        let trims = |state| [e.limit_min, e.limit_max].map(|limit| Trim { state, limit });
        Vec::from_iter(e.finished.into_iter().flat_map(trims))
    }
}
