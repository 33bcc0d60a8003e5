//! ACKNEXT: ACK a job and CLAIM the next ones, in one atomic step.

use std::time::Duration;

use echomq_core::Reply;
use echomq_core::{limits, Name};

use super::ack::Ack;
use super::argument::{checked, decimal, millis};
use super::claim::{Claim, Claims};
use super::Transition;
use crate::id::JobId;
use crate::Result;

/// ACK a job and CLAIM the next ones for the same holder, in one atomic
/// step and one round trip: what a worker sends when a job ends and its slot
/// is free again. A refusal (the lease was lost) acks nothing and claims nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AckNext {
    /// The job to finish, with its token and result.
    pub ack: Ack,
    /// The lease of the jobs claimed.
    pub lease: Duration,
    /// How many jobs to claim at most, 1..=1000.
    pub count: u64,
}

impl Transition for AckNext {
    const NAME: Name = Name::AckNext;
    /// The jobs claimed after the ack, as CLAIM answers.
    type Output = Claims;

    fn job(&self) -> Option<&JobId> {
        Some(&self.ack.id)
    }

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        let mut args = self.ack.args()?;
        args.insert(2, decimal(millis("lease", self.lease, limits::LEASE_MS)?));
        args.extend([b"COUNT".to_vec(), decimal(checked("COUNT", self.count, limits::CLAIM_COUNT)?)]);
        Ok(args)
    }

    fn parse(reply: Reply) -> Result<Claims> {
        Claim::parse(reply)
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        let e = super::edges::Ends::new();
        Vec::from_iter(e.acks().flat_map(|ack| {
            [(e.lease_min, e.count_min), (e.lease_max, e.count_max)].map(|(lease, count)| AckNext {
                ack: ack.clone(),
                lease,
                count,
            })
        }))
    }
}
