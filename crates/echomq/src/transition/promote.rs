//! PROMOTE: upkeep that moves due delayed jobs to pending.

use echomq_core::Reply;
use echomq_core::{limits, Name};

use super::argument::{checked, decimal};
use super::reply::count_reply;
use super::Transition;
use crate::Result;

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

    fn parse(reply: Reply) -> Result<u64> {
        count_reply("the reply", reply)
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        let e = super::edges::Ends::new();
        Vec::from_iter([e.limit_min, e.limit_max].map(|limit| Promote { limit }))
    }
}
