//! RENEW (protocol 1.8): keep the running permits of a worker's jobs under
//! a partitioned queue's exact concurrency, as their leases are renewed
//! (PROTOCOL.md §7.10).

use std::time::Duration;

use echomq_core::{limits, Name, Reply};

use super::argument::{checked, decimal, millis};
use super::reply::{array_reply, count_reply};
use super::Transition;
use crate::{Error, ErrorKind, Result};

/// Renew the running permits `permits` for another `lease` from the
/// coordinator's now (and its hold). Answers, for each in order, whether
/// it still ran and was renewed: one given back, or lapsed, is gone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Renew {
    /// The lease the permits' jobs were renewed for.
    pub lease: Duration,
    /// The permits' numbers, 1 to 1000 of them.
    pub permits: Vec<u64>,
}

impl Transition for Renew {
    const NAME: Name = Name::Renew;
    type Output = Vec<bool>;

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        if self.permits.is_empty() || self.permits.len() as u64 > *limits::RENEWS.end() {
            return Err(Error::new(
                ErrorKind::Argument,
                format!("RENEW takes 1 to {} permits, not {}", limits::RENEWS.end(), self.permits.len()),
            ));
        }
        let mut args = vec![decimal(millis("lease", self.lease, limits::LEASE_MS)?)];
        for &permit in &self.permits {
            args.push(decimal(checked("permit", permit, limits::TOKEN)?));
        }
        Ok(args)
    }

    fn parse(reply: Reply) -> Result<Vec<bool>> {
        let items = array_reply("the reply", reply)?;
        items.into_iter().map(|item| Ok(count_reply("a permit's", item)? == 1)).collect()
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        let e = super::edges::Ends::new();
        let most = *limits::RENEWS.end() as usize;
        vec![
            Renew { lease: e.lease_min, permits: vec![e.token_min] },
            Renew { lease: e.lease_max, permits: vec![e.token_max; most] },
        ]
    }
}
