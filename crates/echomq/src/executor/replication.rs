//! Replicas that confirm writes: which calls a `WAIT` covers, and how a
//! shortfall becomes each call's own answer. Lua and Native share it through
//! their transport (`transport.rs`); Embedded has no replicas.

use std::time::Duration;

use redis::Value;

use super::{Call, Ran, Shortfall};
use crate::Result;

/// How many replicas must confirm each write before a call returns. Redis
/// replicates asynchronously: a master that acknowledges a write and dies
/// before any replica has it loses the write on failover. With this set, an
/// executor sends `WAIT <replicas> <timeout>` after its transitions that
/// write (but a heartbeat: see `confirms`), in the same round trip, and answers
/// [`ErrorKind::NotReplicated`](crate::ErrorKind::NotReplicated) when fewer confirm in time (the
/// write stands on the master; a call that was refused wrote nothing, and
/// answers its refusal; a claim answers its jobs). It narrows the window;
/// it does not make Redis a consensus store (see RELIABILITY.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replication {
    /// Replicas that must confirm each write.
    pub replicas: u64,
    /// How long to wait for them.
    pub timeout: Duration,
}

/// Whether a WAIT follows `calls` when the executor asks replicas to
/// confirm its writes: when any of them writes what a caller relies on, or
/// hands out tokens. A claim is confirmed before its jobs run, so that a
/// token a handler holds is one the replicas know: a claim a failover lost
/// would have the new master mint the same token again for another worker,
/// and the first holder's ack would then be taken for the second's. The
/// WAIT follows a blocking claim too, on its own connection. A claim that
/// fewer replicas confirmed in time still answers its jobs (see
/// [`unconfirmed_claim`]): answered with an error, they would be stranded
/// until their leases ran out, and a lagging replica would keep a worker
/// from running anything. A heartbeat (EXTEND) is not waited for: lost, a
/// lease is only shorter on the new master, and its job may run again;
/// waited for, a lagging replica would fail every heartbeat, and the worker
/// would give up its running jobs as lost.
pub(super) fn confirms(calls: &[Call]) -> bool {
    calls.iter().any(|call| {
        let described = call.name.describe();
        described.waits_for_replication || described.hands_out_tokens
    })
}

/// `WAIT <replicas> <ms>`: how many replicas have every write this
/// connection made so far, waiting up to the time-out for `replicas` of them.
pub(super) fn wait_for(replication: Replication) -> redis::Cmd {
    let mut wait = redis::cmd("WAIT");
    wait.arg(replication.replicas).arg(replication.timeout.as_millis() as u64);
    wait
}

/// The one reply of a claim's run, its shortfall said when it took jobs
/// (see [`unconfirmed_claim`]).
pub(super) fn claim_reply(ran: Ran) -> Result<echomq_core::Reply> {
    let reply = super::one(ran.replies);
    if let (Some(shortfall), true) = (ran.shortfall, took_jobs(&reply)) {
        unconfirmed_claim(shortfall);
    }
    reply
}

/// Say so when a blocking claim took jobs and the WAIT after it answered
/// fewer replicas than `replication` asks for (an error counts as none).
pub(super) fn short_of(
    replication: Replication,
    claimed: &Result<echomq_core::Reply>,
    confirmed: redis::RedisResult<Value>,
) {
    let confirmed = match confirmed {
        Ok(Value::Int(n)) => n.max(0) as u64,
        _ => 0,
    };
    if confirmed < replication.replicas && took_jobs(claimed) {
        unconfirmed_claim(Shortfall { confirmed, wanted: replication.replicas });
    }
}

/// Whether a claim's reply holds a job (not only the gate's number).
fn took_jobs(reply: &Result<echomq_core::Reply>) -> bool {
    matches!(reply, Ok(echomq_core::Reply::Array(entries)) if entries.iter().any(|e| !matches!(e, echomq_core::Reply::Int(_))))
}

/// Say that a claim's jobs run though fewer replicas than asked confirmed
/// the claim: after a failover now, their tokens could be handed out again.
pub(crate) fn unconfirmed_claim(shortfall: Shortfall) {
    let Shortfall { confirmed, wanted } = shortfall;
    tracing::warn!(
        confirmed,
        wanted,
        "a claim was confirmed by {confirmed} of {wanted} replicas in time; its jobs run, but a failover \
         now could hand their tokens to another worker as well (see RELIABILITY.md)"
    );
}

/// What a pipeline of calls answered: one reply per call, and when a WAIT
/// followed them, how many replicas confirmed the writes.
pub(super) struct Sent {
    pub(super) replies: Vec<Result<Value>>,
    pub(super) confirmed: Option<u64>,
}

impl Sent {
    /// The replies, typed, and the replicas' shortfall when fewer than
    /// `replication` asks for confirmed the writes: each call that applied
    /// a write the caller relies on (see [`confirms`]) answers it
    /// ([`Transition::replicated`](crate::transition::Transition::replicated));
    /// a refused call wrote nothing and answers its refusal, and a read or a
    /// claim answers its value.
    pub(super) fn ran(self, replication: Option<Replication>) -> Ran {
        let shortfall = match (replication, self.confirmed) {
            (Some(Replication { replicas, .. }), Some(confirmed)) if confirmed < replicas => {
                Some(Shortfall { confirmed, wanted: replicas })
            }
            _ => None,
        };
        let replies = self.replies.into_iter().map(|reply| reply.and_then(super::transport::reply)).collect();
        Ran { replies, shortfall }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Error, ErrorKind};
    use echomq_core::Name;

    fn call(name: Name) -> Call {
        Call { name, keys: Vec::new(), args: Vec::new() }
    }

    #[test]
    fn writes_a_caller_relies_on_and_claims_are_waited_for_but_heartbeats() {
        assert!(confirms(&[call(Name::Ack)]) && confirms(&[call(Name::Enqueue)]));
        assert!(confirms(&[call(Name::Claim)]) && confirms(&[call(Name::AckNext)]));
        assert!(!confirms(&[call(Name::Extend)]));
        assert!(!confirms(&[call(Name::Stats)]), "a read");
        assert!(confirms(&[call(Name::Extend), call(Name::Fail)]), "one that is makes the WAIT");
    }

    #[test]
    fn a_shortfall_is_said_beside_the_replies() {
        let replication = Replication { replicas: 1, timeout: Duration::from_millis(10) };
        let sent = Sent { replies: vec![Ok(Value::Int(1))], confirmed: Some(0) };
        let ran = sent.ran(Some(replication));
        assert_eq!(ran.shortfall, Some(Shortfall { confirmed: 0, wanted: 1 }));
        assert!(matches!(ran.replies[..], [Ok(echomq_core::Reply::Int(1))]));
        let sent = Sent { replies: vec![Ok(Value::Int(1))], confirmed: Some(1) };
        assert_eq!(sent.ran(Some(replication)).shortfall, None);
    }

    /// An ACKMANY's jobs answer each on their own: the acked one the
    /// shortfall, the fenced one its refusal (not "applied").
    #[test]
    fn an_ackmany_short_of_replicas_answers_for_each_job() {
        use crate::executor::parse_reply;
        use crate::transition::AckMany;
        use echomq_core::{Code, Refusal, Reply};
        let fenced =
            Reply::Error(Refusal { code: Code::Fence, text: "token does not hold the lease".into() });
        let reply = || Ok(Reply::Array(vec![Reply::Int(1), fenced.clone()]));
        let short = Some(Shortfall { confirmed: 1, wanted: 2 });
        let outcomes = parse_reply::<AckMany>(reply(), short).unwrap();
        assert!(
            matches!(
                outcomes[0],
                Err(Error { kind: ErrorKind::NotReplicated { confirmed: 1, wanted: 2 }, .. })
            ),
            "{outcomes:?}"
        );
        assert!(outcomes[1].as_ref().is_err_and(Error::is_lost_lease), "{outcomes:?}");
        let outcomes = parse_reply::<AckMany>(reply(), None).unwrap();
        assert!(outcomes[0].is_ok() && outcomes[1].as_ref().is_err_and(Error::is_lost_lease), "{outcomes:?}");
    }

    /// A write answers the shortfall; a refusal stays a refusal (it wrote
    /// nothing); a heartbeat is not waited for.
    #[test]
    fn a_shortfall_is_each_writing_calls_own_and_a_refusal_stays_a_refusal() {
        use crate::executor::parse_reply;
        use crate::transition::{Ack, Extend};
        let short = Some(Shortfall { confirmed: 0, wanted: 1 });
        let acked = parse_reply::<Ack>(Ok(echomq_core::Reply::Int(1)), short);
        assert!(matches!(
            acked,
            Err(Error { kind: ErrorKind::NotReplicated { confirmed: 0, wanted: 1 }, .. })
        ));
        let fenced = parse_reply::<Ack>(Err(Error::new(ErrorKind::Fence, "stale")), short);
        assert!(matches!(fenced, Err(Error { kind: ErrorKind::Fence, .. })), "it wrote nothing");
        assert!(parse_reply::<Extend>(Ok(echomq_core::Reply::Int(7)), short).is_ok(), "not waited for");
    }

    /// A claim is waited for, but fewer replicas than asked still leave
    /// its jobs to run: an error would strand them until their leases end.
    #[test]
    fn a_claim_short_of_replicas_answers_its_jobs() {
        use crate::executor::parse_reply;
        use crate::transition::Claim;
        let short = Some(Shortfall { confirmed: 0, wanted: 1 });
        let busy = echomq_core::Reply::Array(vec![echomq_core::Reply::Int(0)]);
        let claimed = parse_reply::<Claim>(Ok(busy), short).expect("the claim's answer, not the shortfall");
        assert!(claimed.jobs.is_empty() && claimed.held.is_some());
    }

    /// A claim is said to be short of replicas only when it took jobs: an
    /// idle worker's empty claims, or the gate's number alone, say nothing.
    #[test]
    fn only_a_claim_that_took_jobs_is_said_short() {
        use echomq_core::Reply;
        let job = Reply::Array(vec![Reply::Bulk(b"JOB_1".to_vec()), Reply::Int(1), Reply::Bulk(Vec::new())]);
        assert!(took_jobs(&Ok(Reply::Array(vec![job.clone()]))));
        assert!(took_jobs(&Ok(Reply::Array(vec![job, Reply::Int(0)]))));
        assert!(!took_jobs(&Ok(Reply::Array(Vec::new()))));
        assert!(!took_jobs(&Ok(Reply::Array(vec![Reply::Int(-1)]))));
        assert!(!took_jobs(&Err(Error::new(ErrorKind::Fence, "refused"))));
    }
}
