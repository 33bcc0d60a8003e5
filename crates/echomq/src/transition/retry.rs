//! RETRY: an operator brings a dead job back to pending.

use echomq_core::Name;
use echomq_core::Reply;

use super::reply::one_reply;
use super::Transition;
use crate::id::JobId;
use crate::Result;

/// Send a dead job back to pending.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Retry {
    /// The job's id.
    pub id: JobId,
}

impl Transition for Retry {
    const NAME: Name = Name::Retry;
    type Output = ();

    fn job(&self) -> Option<&JobId> {
        Some(&self.id)
    }

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        Ok(vec![self.id.as_str().into()])
    }

    fn parse(reply: Reply) -> Result<()> {
        one_reply("the reply", reply)
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        use super::edges::id;
        Vec::from_iter([Retry { id: id(1) }])
    }
}
