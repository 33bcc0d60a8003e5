//! EXTEND: the lease holder renews its lease (the heartbeat). Fenced, as ACK is.

use std::time::Duration;

use echomq_core::Reply;
use echomq_core::{limits, Name};

use super::argument::{decimal, millis, token};
use super::reply::count_reply;
use super::Transition;
use crate::id::JobId;
use crate::Result;

/// The holder renews its lease: the heartbeat of a long job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extend {
    /// The job's id.
    pub id: JobId,
    /// The token its claim handed out.
    pub token: u64,
    /// The new lease, counted from the server's now.
    pub lease: Duration,
}

impl Transition for Extend {
    const NAME: Name = Name::Extend;
    /// The new deadline, server ms since the Unix epoch.
    type Output = u64;

    fn job(&self) -> Option<&JobId> {
        Some(&self.id)
    }

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        Ok(vec![
            self.id.as_str().into(),
            token(self.token)?,
            decimal(millis("lease", self.lease, limits::LEASE_MS)?),
        ])
    }

    fn parse(reply: Reply) -> Result<u64> {
        count_reply("the reply", reply)
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        use super::edges::id;
        let e = super::edges::Ends::new();
        Vec::from_iter([(e.token_min, e.lease_min), (e.token_max, e.lease_max)].map(|(token, lease)| Extend {
                id: id(1),
                token,
                lease,
            }))
    }
}
