//! RELEASE: the lease holder gives its job back to pending without blame.
//! Fenced, as ACK is.

use echomq_core::Reply;
use echomq_core::{limits, Name};

use super::argument::{checked, decimal, token};
use super::reply::one_reply;
use super::Transition;
use crate::id::JobId;
use crate::Result;

/// The holder gives the job back to pending without blame (a shutting-down
/// worker), always with REFUND: the token stays (it never goes down) and the
/// attempt is not spent, the job's own maximum growing by one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Release {
    /// The job's id.
    pub id: JobId,
    /// The token its claim handed out.
    pub token: u64,
    /// The caller's maximum attempts, for a job with none of its own: the
    /// job's own maximum becomes this plus one.
    pub max_attempts: u64,
}

impl Transition for Release {
    const NAME: Name = Name::Release;
    type Output = ();

    fn job(&self) -> Option<&JobId> {
        Some(&self.id)
    }

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        Ok(vec![
            self.id.as_str().into(),
            token(self.token)?,
            b"REFUND".to_vec(),
            decimal(checked("max_attempts", self.max_attempts, limits::MAX_ATTEMPTS)?),
        ])
    }

    fn parse(reply: Reply) -> Result<()> {
        one_reply("the reply", reply)
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        use super::edges::id;
        let e = super::edges::Ends::new();
        let ends = [(e.token_min, e.attempts_min), (e.token_max, e.attempts_max)];
        Vec::from_iter(ends.map(|(token, max_attempts)| Release { id: id(1), token, max_attempts }))
    }
}
