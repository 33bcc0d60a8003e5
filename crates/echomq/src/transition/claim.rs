//! CLAIM: hand out jobs from the head of pending, each under a new lease
//! whose token is the record's new `attempts`; the queue's gate (paused,
//! concurrency, rate) may hold some back.

use crate::ErrorKind;
use std::time::Duration;

use echomq_core::Reply;
use echomq_core::{limits, Name, Policy};

use super::argument::{checked, decimal, millis};
use super::headers::{decode_headers, Headers};
use super::reply::{array_reply, bytes_reply, count_reply, unexpected};
use super::Transition;
use crate::id::JobId;
use crate::executor::Shortfall;
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
    pub headers: Headers,
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

    fn parse(reply: Reply) -> Result<Claims> {
        let mut entries = array_reply("the reply", reply)?;
        let held = match entries.last() {
            Some(Reply::Int(-1)) => Some(Held::Paused),
            Some(Reply::Int(0)) => Some(Held::Busy),
            Some(Reply::Int(ms)) if *ms > 0 => Some(Held::Wait(Duration::from_millis(*ms as u64))),
            Some(other @ Reply::Int(_)) => return Err(unexpected("gate", other)),
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
                Err(err) if err.kind == ErrorKind::InvalidId => crate::worker::unhandled(err.text()),
                Err(err) => return Err(err),
            }
        }
        Ok(Claims { jobs, held })
    }

    /// Its jobs all the same (see `executor/replication.rs`), said when it took any.
    fn replicated(claims: Claims, shortfall: Shortfall) -> Result<Claims> {
        if !claims.jobs.is_empty() {
            crate::executor::unconfirmed_claim(shortfall);
        }
        Ok(claims)
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        let e = super::edges::Ends::new();
        Vec::from_iter([e.lease_min, e.lease_max]
                .into_iter()
                .flat_map(|lease| [e.count_min, e.count_max].map(|count| Claim { lease, count })))
    }
}

/// A [`Claim`] that takes nothing when it runs after the server ms
/// `until` (CLAIM's UNTIL, 1.8): a claim under a partitioned queue's
/// permits, which hold only until then (PROTOCOL.md §7.10).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ClaimUntil {
    pub(crate) claim: Claim,
    pub(crate) until: u64,
}

impl Transition for ClaimUntil {
    const NAME: Name = Name::Claim;
    type Output = Claims;

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        let mut args = self.claim.args()?;
        args.extend([b"UNTIL".to_vec(), decimal(checked("UNTIL", self.until, limits::AT_MS)?)]);
        Ok(args)
    }

    fn parse(reply: Reply) -> Result<Claims> {
        Claim::parse(reply)
    }

    fn replicated(claims: Claims, shortfall: Shortfall) -> Result<Claims> {
        Claim::replicated(claims, shortfall)
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        let claim = Claim { lease: Duration::from_secs(30), count: 1 };
        [*limits::AT_MS.start(), *limits::AT_MS.end()].map(|until| ClaimUntil { claim, until }).into()
    }
}

fn claimed(entry: Reply) -> Result<Claimed> {
    let entry = array_reply("entry", entry)?;
    if !(3..=5).contains(&entry.len()) {
        return Err(Error::new(ErrorKind::Reply, format!("entry: got {entry:?}")));
    }
    let mut entry = entry.into_iter();
    let mut next = || entry.next().unwrap_or(Reply::Nil);
    let (id, token, payload, policy, headers) = (next(), next(), next(), next(), next());
    Ok(Claimed {
        id: JobId::try_from(bytes_reply("id", id)?.as_slice())?,
        token: count_reply("token", token)?,
        payload: bytes_reply("payload", payload)?,
        policy: match policy {
            Reply::Nil => None,
            text => Some(Policy::read(&bytes_reply("policy", text)?)),
        },
        headers: match headers {
            Reply::Nil => Headers::new(),
            text => decode_headers(&bytes_reply("headers", text)?),
        },
    })
}
