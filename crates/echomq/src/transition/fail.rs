//! FAIL: the lease holder reports a failure; the job retries after a
//! back-off or dies. Fenced, as ACK is.

use crate::ErrorKind;
use std::time::Duration;

use echomq_core::Reply;
use echomq_core::{limits, Name};

use super::argument::{checked, decimal, millis, token};
use super::reply::{bytes_reply, unexpected};
use super::Transition;
use crate::id::JobId;
use crate::{Error, Result};

/// The holder reports a failure: the job retries after a back-off, or dies
/// when its attempts reached `max_attempts`. The error text is kept in
/// `emq:{q}:errors` for operators.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fail {
    /// The job's id.
    pub id: JobId,
    /// The token its claim handed out.
    pub token: u64,
    /// The job dies when its attempts are at or past this.
    pub max_attempts: u64,
    /// How long until the retry is due.
    pub backoff: Duration,
    /// What went wrong, at most [`limits::MAX_ERROR_TEXT`] bytes.
    pub error: String,
}

/// Where a failed job went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failed {
    /// To delayed: it will be retried when its back-off is over.
    Delayed,
    /// To dead: out of attempts.
    Dead,
}

impl Transition for Fail {
    const NAME: Name = Name::Fail;
    type Output = Failed;

    fn job(&self) -> Option<&JobId> {
        Some(&self.id)
    }

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        if self.error.len() > limits::MAX_ERROR_TEXT {
            let limit = limits::MAX_ERROR_TEXT;
            return Err(Error::new(ErrorKind::TooLarge, format!("error text exceeds {limit} bytes")));
        }
        Ok(vec![
            self.id.as_str().into(),
            token(self.token)?,
            decimal(checked("max_attempts", self.max_attempts, limits::MAX_ATTEMPTS)?),
            decimal(millis("backoff", self.backoff, limits::DELAY_MS)?),
            self.error.as_bytes().to_vec(),
        ])
    }

    fn parse(reply: Reply) -> Result<Failed> {
        match bytes_reply("the reply", reply)?.as_slice() {
            b"delayed" => Ok(Failed::Delayed),
            b"dead" => Ok(Failed::Dead),
            other => Err(unexpected("the reply", &Reply::Bulk(other.to_vec()))),
        }
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        use super::edges::id;
        let e = super::edges::Ends::new();
        Vec::from_iter([e.token_min, e.token_max].into_iter().flat_map(|token| {
            [
                (e.attempts_min, e.delay_min, String::new()),
                (e.attempts_max, e.delay_max, "e".repeat(limits::MAX_ERROR_TEXT)),
            ]
            .map(|(max_attempts, backoff, error)| Fail {
                id: id(1),
                token,
                max_attempts,
                backoff,
                error,
            })
        }))
    }
}
