//! Batches: BATCH opens one over jobs already enqueued, with a callback job;
//! SETTLE, every worker's upkeep, enqueues the callback once they have all
//! finished (PROTOCOL.md §7.7).

use echomq_core::{limits, Name};
use redis::Value;

use super::{array_reply, checked, count_reply, decimal, unexpected, Transition};
use crate::id::JobId;
use crate::{Error, Result};

/// Open a batch over `jobs` (enqueued already), whose `callback` job is
/// enqueued with `payload` once every one of them has finished.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    /// The batch's id: 1 to 200 bytes of letters, digits, `_`, `-`, `.`, `:`.
    pub id: String,
    /// The callback job's id.
    pub callback: JobId,
    /// The callback's payload.
    pub payload: Vec<u8>,
    /// The batch's jobs, 1 to 1000.
    pub jobs: Vec<JobId>,
}

impl Transition for Batch {
    const NAME: Name = Name::Batch;
    /// `true` opened; `false` a batch of this id was open already (nothing changed).
    type Output = bool;

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        let allowed = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':');
        let id_ok = !self.id.is_empty()
            && self.id.len() <= limits::MAX_BATCH_ID
            && self.id.bytes().all(allowed)
            && !self.id.ends_with(":callback");
        if !id_ok {
            return Err(Error::Argument(format!(
                "batch id must be 1 to {} bytes of letters, digits, _, -, . and :, and not end in :callback",
                limits::MAX_BATCH_ID
            )));
        }
        if self.payload.len() > limits::MAX_PAYLOAD {
            return Err(Error::TooLarge(format!("payload exceeds {} bytes", limits::MAX_PAYLOAD)));
        }
        let (least, most) = (limits::BATCH_SIZE.start(), limits::BATCH_SIZE.end());
        if !limits::BATCH_SIZE.contains(&(self.jobs.len() as u64)) {
            return Err(Error::Argument(format!("a batch has {least} to {most} jobs")));
        }
        let mut args =
            vec![self.id.clone().into_bytes(), self.callback.as_str().into(), self.payload.clone()];
        args.extend(self.jobs.iter().map(|job| job.as_str().as_bytes().to_vec()));
        Ok(args)
    }

    fn parse(reply: Value) -> Result<bool> {
        match reply {
            Value::Int(1) => Ok(true),
            Value::Int(0) => Ok(false),
            other => Err(unexpected("the reply", &other)),
        }
    }
}

/// Settle the queue's open batches: follow each one's jobs as far as they
/// have finished (looking at up to `limit` jobs), and call back each batch
/// whose jobs all finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settle {
    /// How many jobs it looks at, at most, 1..=1000.
    pub limit: u64,
}

/// What a SETTLE did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Settled {
    /// Batches closed, their callbacks enqueued.
    pub closed: u64,
    /// Jobs looked at: call again while it is the limit.
    pub looked: u64,
}

impl Transition for Settle {
    const NAME: Name = Name::Settle;
    type Output = Settled;

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        Ok(vec![b"LIMIT".to_vec(), decimal(checked("LIMIT", self.limit, limits::SWEEP_LIMIT)?)])
    }

    fn parse(reply: Value) -> Result<Settled> {
        let counts = array_reply("the reply", reply)?
            .into_iter()
            .map(|count| count_reply("the reply", count))
            .collect::<Result<Vec<_>>>()?;
        match counts[..] {
            [closed, looked] => Ok(Settled { closed, looked }),
            _ => Err(Error::Reply(format!("the reply: got {counts:?}"))),
        }
    }
}
