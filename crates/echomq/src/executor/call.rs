//! A transition as it travels, and the typed way to run one: [`Call`],
//! what [`Executor::run`](super::Executor::run) answers ([`Ran`]), and
//! [`execute`], which builds the call from a [`Transition`], runs it in a
//! tracing span and reads its reply. The raw protocol layer: public with the
//! `protocol` feature.

use std::time::Duration;

use echomq_core::{Name, Reply};
use tracing::Instrument;

use super::Executor;
use crate::keyspace::Keyspace;
use crate::transition::{Claim, Claims, Transition};
use crate::{Error, ErrorKind, Result};

/// One transition call as it travels: which transition, its KEYS and ARGV.
/// The same for every executor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// The transition.
    pub name: Name,
    /// KEYS, in the protocol's order.
    pub keys: Vec<String>,
    /// ARGV, in the protocol's order.
    pub args: Vec<Vec<u8>>,
}

impl Call {
    /// The call `transition` makes on the queue `keys`, its arguments checked.
    ///
    /// # Errors
    /// [`ErrorKind::Argument`] or [`ErrorKind::TooLarge`] for an argument
    /// outside the protocol's limits (see [`Transition::args`]).
    pub fn new<T: Transition>(keys: &Keyspace, transition: &T) -> Result<Call> {
        Ok(Call { name: T::NAME, keys: transition.keys(keys), args: transition.args()? })
    }
}

/// What a run of calls answered (see [`Executor::run`]).
#[derive(Debug)]
pub struct Ran {
    /// One reply per call, in order: its value or its refusal.
    pub replies: Vec<Result<Reply>>,
    /// When the executor asks replicas to confirm its writes and fewer did
    /// in time: each call that applied a write the caller relies on answers
    /// [`ErrorKind::NotReplicated`] (see [`Transition::replicated`]).
    pub shortfall: Option<Shortfall>,
}

impl Ran {
    /// Replies that need no replica's word.
    #[must_use]
    pub fn replies(replies: Vec<Result<Reply>>) -> Ran {
        Ran { replies, shortfall: None }
    }
}

/// Fewer replicas confirmed a run's writes than asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shortfall {
    /// Replicas that confirmed.
    pub confirmed: u64,
    /// Replicas asked for.
    pub wanted: u64,
}

/// Run `transition` on the queue `keys` through `via`, and read its reply.
///
/// # Errors
/// As [`Call::new`], before anything is sent; the server's refusal
/// (`EMQ<NAME>`: its [`ErrorKind`]); [`ErrorKind::Reply`] or
/// [`ErrorKind::Record`] for a reply the protocol does not give; a failure
/// of the connection or the server. Each carries the transition, the queue
/// and the job ([`Error::at`]).
pub async fn execute<T: Transition>(
    via: &dyn Executor,
    keys: &Keyspace,
    transition: &T,
) -> Result<T::Output> {
    let name = T::NAME;
    let span = tracing::debug_span!("emq.transition", transition = name.as_str(), queue = keys.queue());
    let replied = async {
        let call = Call::new(keys, transition)?;
        let Ran { replies, shortfall } = via.run(std::slice::from_ref(&call)).await?;
        parse_reply::<T>(one(replies), shortfall)
    };
    replied.instrument(span).await.map_err(|err| err.at(name, keys.queue(), transition.job()))
}

/// Run many calls of one transition in one round trip where `via` can. Each
/// gets its own result; the outer error is the connection's. A call the
/// host's checks refuse is never sent.
///
/// # Errors
/// A failure of the connection or the server, when no reply is known;
/// each call's own error is in its result, as [`execute`]'s.
pub async fn execute_batch<T: Transition>(
    via: &dyn Executor,
    keys: &Keyspace,
    transitions: &[T],
) -> Result<Vec<Result<T::Output>>> {
    let name = T::NAME;
    let span = tracing::debug_span!(
        "emq.batch",
        transition = name.as_str(),
        queue = keys.queue(),
        calls = transitions.len()
    );
    // The calls the host's checks let through, and for each transition its
    // refusal or `None` (its reply comes from the run, in order).
    let mut calls = Vec::with_capacity(transitions.len());
    let refusals: Vec<Option<Error>> = transitions
        .iter()
        .map(|transition| match Call::new(keys, transition) {
            Ok(call) => {
                calls.push(call);
                None
            }
            Err(refused) => Some(refused),
        })
        .collect();
    let Ran { replies, shortfall } =
        if calls.is_empty() { Ran::replies(Vec::new()) } else { via.run(&calls).instrument(span).await? };
    let mut replies = replies.into_iter();
    Ok(refusals
        .into_iter()
        .zip(transitions)
        .map(|(refused, transition)| {
            let reply = match refused {
                Some(refused) => Err(refused),
                None => replies.next().expect("a reply per call sent"),
            };
            parse_reply::<T>(reply, shortfall).map_err(|err| err.at(name, keys.queue(), transition.job()))
        })
        .collect())
}

/// CLAIM, waiting up to `wait` for a job when none is pending, where `via` can.
///
/// # Errors
/// As [`execute`] for CLAIM.
pub async fn claim_waiting(
    via: &dyn Executor,
    keys: &Keyspace,
    claim: &Claim,
    wait: Duration,
) -> Result<Claims> {
    let span =
        tracing::debug_span!("emq.transition", transition = Name::Claim.as_str(), queue = keys.queue());
    let replied = async { via.claim_waiting(&Call::new(keys, claim)?, wait).await.and_then(Claim::parse) };
    replied.instrument(span).await.map_err(|err| err.at(Name::Claim, keys.queue(), None))
}

/// A call's reply read as `T`'s output; when replicas fell short, what
/// that means for a call of `T` that applied (see [`Transition::replicated`]).
pub(crate) fn parse_reply<T: Transition>(
    reply: Result<Reply>,
    shortfall: Option<Shortfall>,
) -> Result<T::Output> {
    let output = T::parse(reply?)?;
    let described = T::NAME.describe();
    match shortfall {
        Some(shortfall) if described.waits_for_replication || described.hands_out_tokens => {
            T::replicated(output, shortfall)
        }
        _ => Ok(output),
    }
}

/// The one reply of a run of one call.
pub(super) fn one(replies: Vec<Result<Reply>>) -> Result<Reply> {
    replies.into_iter().next().unwrap_or_else(|| Err(Error::new(ErrorKind::Reply, "no reply to the call")))
}
