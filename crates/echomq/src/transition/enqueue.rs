//! ENQUEUE: admit one job, now, later or at a time, with a priority, its
//! own policy, a UNIQUE key and headers.

use crate::ErrorKind;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use echomq_core::Reply;
use echomq_core::{limits, Backoff, Name, Policy};

use super::argument::{checked, decimal, millis};
use super::flow::Link;
use super::headers::{encode_headers, Headers};
use super::reply::unexpected;
use super::Transition;
use crate::id::JobId;
use crate::{Error, Result};

/// When an enqueued job becomes claimable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Due {
    /// At once: straight to pending.
    #[default]
    Now,
    /// That long after the server's now: to delayed until then.
    After(Duration),
    /// At that time on the server's clock: to delayed until then.
    At(SystemTime),
}

/// Admit a job: write its record and put it in pending, or in delayed when it
/// is due later. Idempotent: an id that exists already is a duplicate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Enqueue {
    /// The job's id; a producer that retries re-sends the same one.
    pub id: JobId,
    /// The job's bytes, at most [`limits::MAX_PAYLOAD`].
    pub payload: Vec<u8>,
    /// Lower is claimed first; 0 by default.
    pub priority: i64,
    /// When the job becomes claimable.
    pub due: Due,
    /// The job's own policy, kept beside its record; `None` leaves every
    /// part to the workers' defaults.
    pub policy: Option<Policy>,
    /// Dedup by a key of the producer's choosing.
    pub unique: Option<Unique>,
    /// A small string map beside the record (trace context, tenant,
    /// correlation id), handed to the job's handler; empty: none.
    pub headers: Headers,
    /// The flow's parent this job is a child of (protocol 1.6): its end
    /// is told to the parent, whatever the way it ends.
    pub parent: Option<Link>,
    /// The job's group (protocol 1.7): a tenant, a customer, a key, 1 to
    /// [`limits::MAX_GROUP`] bytes; claims take turns between groups.
    /// `None`: the default group.
    pub group: Option<String>,
}

/// A dedup key: while a job holds it, an enqueue with the same key changes
/// nothing and answers that job's id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unique {
    /// The key, 1 to [`limits::MAX_UNIQUE_KEY`] bytes (`user:42`).
    pub key: String,
    /// How long the new job holds it.
    pub hold: Duration,
    /// Free the key as soon as its job finishes (done, dead or cancelled),
    /// before its hold ends.
    pub until_finished: bool,
}

/// What an ENQUEUE did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Admission {
    /// The job was admitted.
    Enqueued,
    /// A job with this id exists already: nothing changed.
    Duplicate,
    /// This job holds the UNIQUE key: nothing changed.
    HeldBy(JobId),
}

impl Transition for Enqueue {
    const NAME: Name = Name::Enqueue;
    /// Admitted, or why not (nothing changed then).
    type Output = Admission;

    fn job(&self) -> Option<&JobId> {
        Some(&self.id)
    }

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        if self.payload.len() > limits::MAX_PAYLOAD {
            return Err(Error::new(
                ErrorKind::TooLarge,
                format!("payload exceeds {} bytes", limits::MAX_PAYLOAD),
            ));
        }
        let mut args = vec![self.id.as_str().into(), self.payload.clone()];
        if self.priority != 0 {
            args.push(b"PRIORITY".to_vec());
            args.push(decimal(checked("PRIORITY", self.priority, limits::PRIORITY)?));
        }
        match self.due {
            Due::Now => {}
            Due::After(delay) => {
                args.push(b"DELAY".to_vec());
                args.push(decimal(millis("DELAY", delay, limits::DELAY_MS)?));
            }
            Due::At(at) => {
                let since_epoch = at.duration_since(UNIX_EPOCH).unwrap_or_default();
                args.push(b"AT".to_vec());
                args.push(decimal(millis("AT", since_epoch, limits::AT_MS)?));
            }
        }
        if let Some(policy) = &self.policy {
            policy_args(policy, &mut args)?;
        }
        if let Some(unique) = &self.unique {
            if unique.key.is_empty() || unique.key.len() > limits::MAX_UNIQUE_KEY {
                return Err(Error::new(
                    ErrorKind::Argument,
                    format!("UNIQUE must be 1 to {} bytes", limits::MAX_UNIQUE_KEY),
                ));
            }
            args.extend([b"UNIQUE".to_vec(), unique.key.clone().into_bytes(), b"UNIQUE_FOR".to_vec()]);
            args.push(decimal(millis("UNIQUE_FOR", unique.hold, limits::UNIQUE_MS)?));
            if unique.until_finished {
                args.extend([b"UNIQUE_DONE".to_vec(), b"1".to_vec()]);
            }
        }
        if !self.headers.is_empty() {
            args.extend([b"HEADERS".to_vec(), encode_headers(&self.headers)?]);
        }
        if let Some(link) = &self.parent {
            args.extend([b"PARENT".to_vec(), link.text().into_bytes()]);
        }
        group_args(self.group.as_deref(), &mut args)?;
        Ok(args)
    }

    fn parse(reply: Reply) -> Result<Admission> {
        match reply {
            Reply::Int(1) => Ok(Admission::Enqueued),
            Reply::Int(0) => Ok(Admission::Duplicate),
            Reply::Bulk(holder) => Ok(Admission::HeldBy(JobId::try_from(holder.as_slice())?)),
            other => Err(unexpected("the reply", &other)),
        }
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        super::edges::enqueues()
    }
}

/// `GROUP <g>` when a group is given (ENQUEUE's, ENQUEUEMANY's, FLOW's),
/// its name checked first.
pub(super) fn group_args(group: Option<&str>, args: &mut Vec<Vec<u8>>) -> Result<()> {
    if let Some(group) = group {
        super::group::group_name(group)?;
        args.extend([b"GROUP".to_vec(), group.as_bytes().to_vec()]);
    }
    Ok(())
}

/// A policy's options, each checked against its range.
pub(super) fn policy_args(policy: &Policy, args: &mut Vec<Vec<u8>>) -> Result<()> {
    let mut push = |name: &str, value: u64| {
        args.push(name.as_bytes().to_vec());
        args.push(decimal(value));
    };
    if let Some(n) = policy.attempts {
        push("ATTEMPTS", checked("ATTEMPTS", n, limits::MAX_ATTEMPTS)?);
    }
    match policy.backoff {
        Some(Backoff::Fixed(ms)) => push("BACKOFF", checked("BACKOFF", ms, limits::DELAY_MS)?),
        Some(Backoff::Exponential(ms)) => push("BACKOFF_EXP", checked("BACKOFF_EXP", ms, limits::DELAY_MS)?),
        None => {}
    }
    if let Some(ms) = policy.timeout {
        push("TIMEOUT", checked("TIMEOUT", ms, limits::TIMEOUT_MS)?);
    }
    Ok(())
}
