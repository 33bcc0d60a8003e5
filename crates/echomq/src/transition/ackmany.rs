//! ACKMANY: ACK many jobs in one call, each fenced and answered on its own.

use echomq_core::Reply;
use echomq_core::{limits, Name};

use super::ack::Ack;
use super::argument::jobs_a_call;
use super::reply::{array_reply, one_reply};
use super::Transition;
use crate::executor::Shortfall;
use crate::{Error, Result};

/// Finish many jobs in one call (ACKMANY): each is fenced by its own token
/// and answered on its own, as its ACK would be. What a worker sends for the
/// jobs that finished while its last acks were on their way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AckMany {
    /// The jobs, 1 to [`limits::ACKS`] of them, each with its token and result.
    pub acks: Vec<Ack>,
}

impl Transition for AckMany {
    const NAME: Name = Name::AckMany;
    /// One outcome a job, in order: `Ok`, or its own refusal
    /// ([`ErrorKind::Fence`](crate::ErrorKind::Fence), [`ErrorKind::NoJob`](crate::ErrorKind::NoJob)), which changed nothing of it;
    /// [`ErrorKind::NotReplicated`](crate::ErrorKind::NotReplicated) for a job acked when fewer replicas than
    /// asked for confirmed the call.
    type Output = Vec<Result<()>>;

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        jobs_a_call(Self::NAME, self.acks.len(), limits::ACKS)?;
        let mut args = Vec::with_capacity(self.acks.len() * 2);
        for ack in &self.acks {
            args.extend(ack.args()?);
        }
        Ok(args)
    }

    fn parse(reply: Reply) -> Result<Vec<Result<()>>> {
        let outcomes = array_reply("the reply", reply)?.into_iter().map(|outcome| match outcome {
            Reply::Error(refusal) => Ok(Err(Error::from_code(refusal.code, refusal.text))),
            other => one_reply("a job's reply", other).map(Ok),
        });
        outcomes.collect()
    }

    /// Each job acked answers the shortfall; each refused keeps its refusal.
    fn replicated(acked: Vec<Result<()>>, shortfall: Shortfall) -> Result<Vec<Result<()>>> {
        let Shortfall { confirmed, wanted } = shortfall;
        Ok(acked
            .into_iter()
            .map(|outcome| outcome.and(Err(Error::not_replicated(confirmed, wanted))))
            .collect())
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        let e = super::edges::Ends::new();
        Vec::from_iter([
            AckMany { acks: e.acks().collect() },
            AckMany { acks: vec![e.ack(e.token_min, None); *limits::ACKS.end() as usize] },
        ])
    }
}
