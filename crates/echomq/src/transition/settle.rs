//! SETTLE: every worker's upkeep for batches: enqueue each callback once
//! its batch's jobs have all finished (PROTOCOL.md §7.7).

use crate::ErrorKind;
use echomq_core::Reply;
use echomq_core::{limits, Name};

use super::argument::{checked, decimal};
use super::reply::{array_reply, count_reply};
use super::Transition;
use crate::{Error, Result};

/// Settle the queue's open batches: follow each one's jobs as far as they
/// have finished (looking at up to `limit` jobs), and call back each batch
/// whose jobs all finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settle {
    /// How many jobs it looks at, at most, 1..=1000.
    pub limit: u64,
}

/// What a SETTLE did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Settled {
    /// Batches closed, their callbacks enqueued.
    pub closed: u64,
    /// Jobs looked at: call again while it is the limit.
    pub looked: u64,
}

impl Transition for Settle {
    const NAME: Name = Name::Settle;
    type Output = Settled;

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        Ok(vec![b"LIMIT".to_vec(), decimal(checked("LIMIT", self.limit, limits::SWEEP_LIMIT)?)])
    }

    fn parse(reply: Reply) -> Result<Settled> {
        let counts = array_reply("the reply", reply)?
            .into_iter()
            .map(|count| count_reply("the reply", count))
            .collect::<Result<Vec<_>>>()?;
        match counts[..] {
            [closed, looked] => Ok(Settled { closed, looked }),
            _ => Err(Error::new(ErrorKind::Reply, format!("the reply: got {counts:?}"))),
        }
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        let e = super::edges::Ends::new();
        Vec::from_iter([e.limit_min, e.limit_max].map(|limit| Settle { limit }))
    }
}
