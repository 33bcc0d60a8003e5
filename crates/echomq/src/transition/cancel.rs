//! CANCEL: an operator takes a job out of the flow.

use echomq_core::Name;
use echomq_core::Reply;

use super::reply::{int_reply, unexpected};
use super::Transition;
use crate::id::JobId;
use crate::Result;

/// Cancel a job in any state but done. Cancelling an active job ends its
/// lease: the holder's next call is fenced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cancel {
    /// The job's id.
    pub id: JobId,
}

impl Transition for Cancel {
    const NAME: Name = Name::Cancel;
    /// `true` when cancelled now, `false` when it was cancelled already.
    type Output = bool;

    fn job(&self) -> Option<&JobId> {
        Some(&self.id)
    }

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        Ok(vec![self.id.as_str().into()])
    }

    fn parse(reply: Reply) -> Result<bool> {
        match int_reply("the reply", reply)? {
            1 => Ok(true),
            0 => Ok(false),
            n => Err(unexpected("the reply", &Reply::Int(n))),
        }
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        use super::edges::id;
        Vec::from_iter([Cancel { id: id(1) }])
    }
}
