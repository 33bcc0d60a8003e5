//! REAP: upkeep that takes expired leases back, to pending or to dead.

use crate::ErrorKind;
use echomq_core::Reply;
use echomq_core::{limits, Name};

use super::argument::{checked, decimal};
use super::reply::{array_reply, count_reply};
use super::Transition;
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

    fn parse(reply: Reply) -> Result<Reaped> {
        let counts = array_reply("the reply", reply)?;
        let [requeued, dead] = <[Reply; 2]>::try_from(counts)
            .map_err(|counts| Error::new(ErrorKind::Reply, format!("the reply: got {counts:?}")))?;
        Ok(Reaped { requeued: count_reply("the reply", requeued)?, dead: count_reply("the reply", dead)? })
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        let e = super::edges::Ends::new();
        Vec::from_iter([(e.attempts_min, e.limit_min), (e.attempts_max, e.limit_max)]
                .map(|(max_attempts, limit)| Reap { max_attempts, limit }))
    }
}
