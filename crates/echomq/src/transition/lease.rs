//! The lease: CLAIM hands a job out under a lease and mints its token; the
//! holder then ends it with ACK, FAIL or RELEASE, or renews it with EXTEND.
//! Each of those four carries the token, and a token that is not the record's
//! current `attempts` (or a job no longer active) is refused with `EMQFENCE`.

use std::time::Duration;

use echomq_core::{limits, Name, Policy};
use redis::Value;

use super::Transition;
use super::{array_reply, bytes_reply, checked, count_reply, decimal, millis, one_reply, unexpected};
use crate::id::JobId;
use crate::{Error, Result};

/// Take up to `count` jobs from the head of pending, each under a new lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claim {
    /// How long the claimer holds each job before REAP may take it back.
    pub lease: Duration,
    /// How many jobs at most, 1..=1000.
    pub count: u64,
}

/// A job handed out by CLAIM: what the worker needs to run it and to end it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claimed {
    /// The job's id.
    pub id: JobId,
    /// The fencing token: the record's `attempts` after this claim, so also the attempt number.
    pub token: u64,
    /// The job's bytes.
    pub payload: Vec<u8>,
    /// The job's own policy, when its producer gave it one: the worker
    /// enforces its timeout; FAIL and REAP apply the rest on the server.
    pub policy: Option<Policy>,
    /// The job's headers, as its producer set them (empty: none).
    pub headers: super::Headers,
}

/// What a CLAIM got: its jobs, and what held it back, if anything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Claims {
    /// The claimed jobs in pending order; empty when nothing is pending.
    pub jobs: Vec<Claimed>,
    /// Set when the queue's gate let fewer jobs through than were asked for.
    pub held: Option<Held>,
}

/// Why the queue's gate let a claim take fewer jobs than it asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Held {
    /// The queue is paused: nothing until it is resumed.
    Paused,
    /// The queue's concurrency limit is reached: nothing more until an active job ends.
    Busy,
    /// Come back after this long: the queue's rate limit is reached and its
    /// next slot opens then, or the queue is paused until then (DEFER).
    Wait(Duration),
}

impl Transition for Claim {
    const NAME: Name = Name::Claim;
    /// The claimed jobs in pending order, and whether the gate held some back.
    type Output = Claims;

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        Ok(vec![
            decimal(millis("lease", self.lease, limits::LEASE_MS)?),
            b"COUNT".to_vec(),
            decimal(checked("COUNT", self.count, limits::CLAIM_COUNT)?),
        ])
    }

    fn parse(reply: Value) -> Result<Claims> {
        let mut entries = array_reply("the reply", reply)?;
        let held = match entries.last() {
            Some(Value::Int(-1)) => Some(Held::Paused),
            Some(Value::Int(0)) => Some(Held::Busy),
            Some(Value::Int(ms)) if *ms > 0 => Some(Held::Wait(Duration::from_millis(*ms as u64))),
            Some(other @ Value::Int(_)) => return Err(unexpected("gate", other)),
            _ => None,
        };
        if held.is_some() {
            entries.pop();
        }
        let mut jobs = Vec::new();
        for entry in entries {
            match claimed(entry) {
                Ok(job) => jobs.push(job),
                // An id this host cannot hold (not UTF-8): said and counted, and the rest still run.
                Err(Error::InvalidId(why)) => crate::worker::unhandled(&why),
                Err(err) => return Err(err),
            }
        }
        Ok(Claims { jobs, held })
    }
}

fn claimed(entry: Value) -> Result<Claimed> {
    let entry = array_reply("entry", entry)?;
    if !(3..=5).contains(&entry.len()) {
        return Err(Error::Reply(format!("entry: got {entry:?}")));
    }
    let mut entry = entry.into_iter();
    let mut next = || entry.next().unwrap_or(Value::Nil);
    let (id, token, payload, policy, headers) = (next(), next(), next(), next(), next());
    Ok(Claimed {
        id: JobId::try_from(bytes_reply("id", id)?.as_slice())?,
        token: count_reply("token", token)?,
        payload: bytes_reply("payload", payload)?,
        policy: match policy {
            Value::Nil => None,
            text => Some(Policy::read(&bytes_reply("policy", text)?)),
        },
        headers: match headers {
            Value::Nil => super::Headers::new(),
            text => super::decode_headers(&bytes_reply("headers", text)?),
        },
    })
}

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
                return Err(Error::TooLarge(format!("result exceeds {} bytes", limits::MAX_RESULT)));
            }
            args.extend([b"RESULT".to_vec(), result.clone()]);
        }
        Ok(args)
    }

    fn parse(reply: Value) -> Result<()> {
        one_reply("the reply", reply)
    }
}

/// ACK a job and CLAIM the next ones for the same holder, in one atomic
/// step and one round trip: what a worker sends when a job ends and its slot
/// is free again. A refusal (the lease was lost) acks nothing and claims nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AckNext {
    /// The job to finish, with its token and result.
    pub ack: Ack,
    /// The lease of the jobs claimed.
    pub lease: Duration,
    /// How many jobs to claim at most, 1..=1000.
    pub count: u64,
}

impl Transition for AckNext {
    const NAME: Name = Name::AckNext;
    /// The jobs claimed after the ack, as CLAIM answers.
    type Output = Claims;

    fn job(&self) -> Option<&JobId> {
        Some(&self.ack.id)
    }

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        let mut args = self.ack.args()?;
        args.insert(2, decimal(millis("lease", self.lease, limits::LEASE_MS)?));
        args.extend([b"COUNT".to_vec(), decimal(checked("COUNT", self.count, limits::CLAIM_COUNT)?)]);
        Ok(args)
    }

    fn parse(reply: Value) -> Result<Claims> {
        Claim::parse(reply)
    }
}

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
    /// ([`Error::Fence`], [`Error::NoJob`]), which changed nothing of it;
    /// [`Error::NotReplicated`] for a job acked when fewer replicas than
    /// asked for confirmed the call.
    type Output = Vec<Result<()>>;

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        super::jobs_a_call(Self::NAME, self.acks.len(), limits::ACKS)?;
        let mut args = Vec::with_capacity(self.acks.len() * 2);
        for ack in &self.acks {
            args.extend(ack.args()?);
        }
        Ok(args)
    }

    fn parse(reply: Value) -> Result<Vec<Result<()>>> {
        let (reply, shortfall) = crate::executor::shortfall(reply);
        let acked = || match shortfall {
            Some((confirmed, wanted)) => Err(Error::NotReplicated { confirmed, wanted }),
            None => Ok(()),
        };
        let outcomes = array_reply("the reply", reply)?.into_iter().map(|outcome| match outcome {
            Value::ServerError(refusal) => Ok(Err(Error::from(redis::RedisError::from(refusal)))),
            other => one_reply("a job's reply", other).map(|()| acked()),
        });
        outcomes.collect()
    }
}

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
            return Err(Error::TooLarge(format!("error text exceeds {limit} bytes")));
        }
        Ok(vec![
            self.id.as_str().into(),
            token(self.token)?,
            decimal(checked("max_attempts", self.max_attempts, limits::MAX_ATTEMPTS)?),
            decimal(millis("backoff", self.backoff, limits::DELAY_MS)?),
            self.error.as_bytes().to_vec(),
        ])
    }

    fn parse(reply: Value) -> Result<Failed> {
        match bytes_reply("the reply", reply)?.as_slice() {
            b"delayed" => Ok(Failed::Delayed),
            b"dead" => Ok(Failed::Dead),
            other => Err(unexpected("the reply", &Value::BulkString(other.to_vec()))),
        }
    }
}

/// The holder renews its lease: the heartbeat of a long job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extend {
    /// The job's id.
    pub id: JobId,
    /// The token its claim handed out.
    pub token: u64,
    /// The new lease, counted from the server's now.
    pub lease: Duration,
}

impl Transition for Extend {
    const NAME: Name = Name::Extend;
    /// The new deadline, server ms since the Unix epoch.
    type Output = u64;

    fn job(&self) -> Option<&JobId> {
        Some(&self.id)
    }

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        Ok(vec![
            self.id.as_str().into(),
            token(self.token)?,
            decimal(millis("lease", self.lease, limits::LEASE_MS)?),
        ])
    }

    fn parse(reply: Value) -> Result<u64> {
        count_reply("the reply", reply)
    }
}

/// The holder gives the job back to pending without blame (a shutting-down
/// worker), always with REFUND: the token stays (it never goes down) and the
/// attempt is not spent, the job's own maximum growing by one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Release {
    /// The job's id.
    pub id: JobId,
    /// The token its claim handed out.
    pub token: u64,
    /// The caller's maximum attempts, for a job with none of its own: the
    /// job's own maximum becomes this plus one.
    pub max_attempts: u64,
}

impl Transition for Release {
    const NAME: Name = Name::Release;
    type Output = ();

    fn job(&self) -> Option<&JobId> {
        Some(&self.id)
    }

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        Ok(vec![
            self.id.as_str().into(),
            token(self.token)?,
            b"REFUND".to_vec(),
            decimal(checked("max_attempts", self.max_attempts, limits::MAX_ATTEMPTS)?),
        ])
    }

    fn parse(reply: Value) -> Result<()> {
        one_reply("the reply", reply)
    }
}

fn token(token: u64) -> Result<Vec<u8>> {
    Ok(decimal(checked("token", token, limits::TOKEN)?))
}

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
            return Err(Error::TooLarge(format!("progress exceeds {limit} bytes")));
        }
        Ok(vec![self.id.as_str().into(), token(self.token)?, self.value.clone()])
    }

    fn parse(reply: Value) -> Result<()> {
        one_reply("the reply", reply)
    }
}

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

    fn parse(reply: Value) -> Result<()> {
        one_reply("the reply", reply)
    }
}
