//! ACK: the lease holder finishes its job, keeping its result. Fenced: a
//! token that is not the record's current `attempts` is refused with `EMQFENCE`.

use crate::ErrorKind;
use echomq_core::Reply;
use echomq_core::{limits, Name};

use super::argument::token;
use super::claim::Claimed;
use super::reply::one_reply;
use super::Transition;
use crate::id::JobId;
use crate::{Error, Result};

/// The holder finishes the job: it moves to done, and what its handler
/// returned, if anything, is kept as its result (`emq:{q}:results`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ack {
    /// The job's id.
    pub id: JobId,
    /// The token its claim handed out.
    pub token: u64,
    /// The result to keep: at most [`MAX_RESULT`](echomq_core::limits::MAX_RESULT) bytes.
    pub result: Option<Vec<u8>>,
}

impl Ack {
    /// Ack `job` with no result.
    #[must_use]
    pub fn of(job: &Claimed) -> Ack {
        Ack { id: job.id.clone(), token: job.token, result: None }
    }
}

impl Transition for Ack {
    const NAME: Name = Name::Ack;
    type Output = ();

    fn job(&self) -> Option<&JobId> {
        Some(&self.id)
    }

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        let mut args = vec![self.id.as_str().into(), token(self.token)?];
        if let Some(result) = &self.result {
            if result.len() > limits::MAX_RESULT {
                return Err(Error::new(
                    ErrorKind::TooLarge,
                    format!("result exceeds {} bytes", limits::MAX_RESULT),
                ));
            }
            args.extend([b"RESULT".to_vec(), result.clone()]);
        }
        Ok(args)
    }

    fn parse(reply: Reply) -> Result<()> {
        one_reply("the reply", reply)
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        let e = super::edges::Ends::new();
        Vec::from_iter(e.acks())
    }
}
