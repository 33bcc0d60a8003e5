//! PROGRESS: the lease holder reports how far its job got. Fenced, as ACK is.

use crate::ErrorKind;
use echomq_core::Reply;
use echomq_core::{limits, Name};

use super::argument::token;
use super::reply::one_reply;
use super::Transition;
use crate::id::JobId;
use crate::{Error, Result};

/// The holder reports how far the job got: `value` is kept beside the record
/// in `emq:{q}:progress` (the record is untouched) until the job is purged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Progress {
    /// The job's id.
    pub id: JobId,
    /// The token its claim handed out.
    pub token: u64,
    /// Opaque bytes, at most [`limits::MAX_PROGRESS`]: a percentage, a JSON object.
    pub value: Vec<u8>,
}

impl Transition for Progress {
    const NAME: Name = Name::Progress;
    type Output = ();

    fn job(&self) -> Option<&JobId> {
        Some(&self.id)
    }

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        if self.value.len() > limits::MAX_PROGRESS {
            let limit = limits::MAX_PROGRESS;
            return Err(Error::new(ErrorKind::TooLarge, format!("progress exceeds {limit} bytes")));
        }
        Ok(vec![self.id.as_str().into(), token(self.token)?, self.value.clone()])
    }

    fn parse(reply: Reply) -> Result<()> {
        one_reply("the reply", reply)
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        use super::edges::id;
        let e = super::edges::Ends::new();
        Vec::from_iter([(e.token_min, Vec::new()), (e.token_max, vec![b'v'; limits::MAX_PROGRESS])]
                .map(|(token, value)| Progress { id: id(1), token, value }))
    }
}
