//! An operator's hand on a job: CANCEL takes it out of the flow, RETRY brings
//! a dead one back.

use redis::Value;

use super::{int_reply, one_reply, unexpected, Transition};
use crate::id::JobId;
use crate::keyspace::Keyspace;
use crate::Result;

/// Cancel a job in any state but done. Cancelling an active job ends its
/// lease: the holder's next call is fenced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cancel {
    /// The job's id.
    pub id: JobId,
}

impl Transition for Cancel {
    const NAME: &'static str = "cancel";
    const COMMAND: &'static str = "EMQ.CANCEL";
    /// `true` when cancelled now, `false` when it was cancelled already.
    type Output = bool;

    fn keys(&self, keys: &Keyspace) -> Vec<String> {
        vec![keys.job(&self.id), keys.pending(), keys.active(), keys.delayed(), keys.dead(), keys.cancelled()]
    }

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        Ok(vec![self.id.as_str().into()])
    }

    fn parse(reply: Value) -> Result<bool> {
        match int_reply("CANCEL", reply)? {
            1 => Ok(true),
            0 => Ok(false),
            n => Err(unexpected("CANCEL", &Value::Int(n))),
        }
    }
}

/// Send a dead job back to pending.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Retry {
    /// The job's id.
    pub id: JobId,
}

impl Transition for Retry {
    const NAME: &'static str = "retry";
    const COMMAND: &'static str = "EMQ.RETRY";
    type Output = ();

    fn keys(&self, keys: &Keyspace) -> Vec<String> {
        vec![keys.job(&self.id), keys.dead(), keys.pending(), keys.priority()]
    }

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        Ok(vec![self.id.as_str().into()])
    }

    fn parse(reply: Value) -> Result<()> {
        one_reply("RETRY", reply)
    }
}
