//! DEFER: the lease holder was told to come back later; the job waits
//! without spending its attempt. Fenced, as ACK is.

use std::time::Duration;

use echomq_core::Reply;
use echomq_core::{limits, Name};

use super::argument::{checked, decimal, millis};
use super::reply::one_reply;
use super::Transition;
use crate::id::JobId;
use crate::Result;

/// The holder was told to come back later (an HTTP 429): the job goes to
/// delayed for `delay` without spending its attempt, and with `pause_queue`
/// no claim of the queue takes a job until then either.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Defer {
    /// The job's id.
    pub id: JobId,
    /// The token its claim handed out.
    pub token: u64,
    /// How long until the job, and the queue with `pause_queue`, go on.
    pub delay: Duration,
    /// The caller's maximum attempts, for a job with none of its own: the
    /// job's own maximum becomes this plus one.
    pub max_attempts: u64,
    /// Pause the queue's claims for `delay` too.
    pub pause_queue: bool,
}

impl Transition for Defer {
    const NAME: Name = Name::Defer;
    type Output = ();

    fn job(&self) -> Option<&JobId> {
        Some(&self.id)
    }

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        Ok(vec![
            self.id.as_str().into(),
            decimal(checked("token", self.token, limits::TOKEN)?),
            decimal(millis("delay", self.delay, limits::DELAY_MS)?),
            decimal(checked("max_attempts", self.max_attempts, limits::MAX_ATTEMPTS)?),
            b"PAUSE".to_vec(),
            decimal(u8::from(self.pause_queue)),
        ])
    }

    fn parse(reply: Reply) -> Result<()> {
        one_reply("the reply", reply)
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        use super::edges::id;
        let e = super::edges::Ends::new();
        Vec::from_iter([false, true].into_iter().flat_map(|pause_queue| {
            [(e.token_min, e.delay_min, e.attempts_min), (e.token_max, e.delay_max, e.attempts_max)].map(
                |(token, delay, max_attempts)| Defer { id: id(1), token, delay, max_attempts, pause_queue },
            )
        }))
    }
}
