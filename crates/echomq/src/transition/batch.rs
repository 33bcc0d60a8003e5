//! BATCH: open a batch over jobs already enqueued, with a callback job
//! (PROTOCOL.md §7.7).

use crate::ErrorKind;
use echomq_core::Reply;
use echomq_core::{limits, Name};

use super::reply::unexpected;
use super::Transition;
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
            return Err(Error::new(
                ErrorKind::Argument,
                format!(
                "batch id must be 1 to {} bytes of letters, digits, _, -, . and :, and not end in :callback",
                limits::MAX_BATCH_ID
            ),
            ));
        }
        if self.payload.len() > limits::MAX_PAYLOAD {
            return Err(Error::new(
                ErrorKind::TooLarge,
                format!("payload exceeds {} bytes", limits::MAX_PAYLOAD),
            ));
        }
        let (least, most) = (limits::BATCH_SIZE.start(), limits::BATCH_SIZE.end());
        if !limits::BATCH_SIZE.contains(&(self.jobs.len() as u64)) {
            return Err(Error::new(ErrorKind::Argument, format!("a batch has {least} to {most} jobs")));
        }
        let mut args =
            vec![self.id.clone().into_bytes(), self.callback.as_str().into(), self.payload.clone()];
        args.extend(self.jobs.iter().map(|job| job.as_str().as_bytes().to_vec()));
        Ok(args)
    }

    fn parse(reply: Reply) -> Result<bool> {
        match reply {
            Reply::Int(1) => Ok(true),
            Reply::Int(0) => Ok(false),
            other => Err(unexpected("the reply", &other)),
        }
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        use super::edges::id;
        Vec::from_iter([
            Batch { id: "b".into(), callback: id(0), payload: Vec::new(), jobs: vec![id(1)] },
            Batch {
                id: "b_-.:".repeat(limits::MAX_BATCH_ID / 5),
                callback: id(0),
                payload: vec![b'p'; limits::MAX_PAYLOAD],
                jobs: (1..=*limits::BATCH_SIZE.end() as u32).map(id).collect(),
            },
        ])
    }
}
