//! ENQUEUEMANY: admit many plain jobs, an id and a payload each, in one call.

use crate::ErrorKind;
use echomq_core::Reply;
use echomq_core::{limits, Name};

use super::argument::jobs_a_call;
use super::enqueue::Admission;
use super::flow::Link;
use super::reply::{array_reply, unexpected};
use super::Transition;
use crate::id::JobId;
use crate::{Error, Result};

/// Admit many plain jobs, an id and a payload each and no options, in one
/// call (ENQUEUEMANY): each is enqueued, or found a duplicate, on its own.
/// What [`Queue::enqueue_batch`](crate::Queue::enqueue_batch) sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnqueueMany {
    /// The jobs, 1 to [`limits::ENQUEUES`] of them.
    pub jobs: Vec<(JobId, Vec<u8>)>,
    /// The flow's parent every job it enqueues is a child of (protocol
    /// 1.6: `PARENT`, with the sixth key): one call for a flow's children.
    pub parent: Option<Link>,
    /// The group every job it enqueues joins (protocol 1.7: `GROUP`);
    /// `None`: the default group.
    pub group: Option<String>,
}

impl Transition for EnqueueMany {
    const NAME: Name = Name::EnqueueMany;
    /// One admission a job, in order: [`Admission::Enqueued`] or [`Admission::Duplicate`].
    type Output = Vec<Admission>;

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        jobs_a_call(Self::NAME, self.jobs.len(), limits::ENQUEUES)?;
        let mut args = Vec::with_capacity(self.jobs.len() * 2 + 2);
        if let Some(link) = &self.parent {
            args.extend([b"PARENT".to_vec(), link.text().into_bytes()]);
        }
        super::enqueue::group_args(self.group.as_deref(), &mut args)?;
        for (id, payload) in &self.jobs {
            if payload.len() > limits::MAX_PAYLOAD {
                return Err(Error::new(
                    ErrorKind::TooLarge,
                    format!("payload exceeds {} bytes", limits::MAX_PAYLOAD),
                ));
            }
            args.extend([id.as_str().into(), payload.clone()]);
        }
        Ok(args)
    }

    fn parse(reply: Reply) -> Result<Vec<Admission>> {
        let admissions = array_reply("the reply", reply)?.into_iter().map(|admitted| match admitted {
            Reply::Int(1) => Ok(Admission::Enqueued),
            Reply::Int(0) => Ok(Admission::Duplicate),
            other => Err(unexpected("a job's reply", &other)),
        });
        admissions.collect()
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        use super::edges::id;
        Vec::from_iter([
            EnqueueMany { jobs: vec![(id(1), Vec::new())], parent: None, group: None },
            EnqueueMany { jobs: vec![(id(1), vec![b'p'; limits::MAX_PAYLOAD])], parent: None, group: None },
            EnqueueMany {
                jobs: (0..*limits::ENQUEUES.end() as u32).map(|n| (id(n), b"p".to_vec())).collect(),
                parent: None,
                group: None,
            },
            EnqueueMany {
                jobs: vec![(id(1), b"p".to_vec())],
                parent: Some(super::flow::Link {
                    incarnation: *limits::INCARNATION.end(),
                    parent: super::flow::JobRef::new("up", id(9)).expect("a queue"),
                }),
                group: Some("x".repeat(limits::MAX_GROUP)),
            },
        ])
    }
}
