//! Replicas that confirm writes: which calls a `WAIT` covers, and how a
//! shortfall becomes each call's own answer. Lua and Native share it through
//! their transport (`transport.rs`); Embedded has no replicas.

use std::time::Duration;

use echomq_core::Name;
use redis::Value;

use super::Call;
use crate::{Error, Result};

/// How many replicas must confirm each write before a call returns. Redis
/// replicates asynchronously: a master that acknowledges a write and dies
/// before any replica has it loses the write on failover. With this set, an
/// executor sends `WAIT <replicas> <timeout>` after its transitions that
/// write (but a claim: see `confirms`), in the same round trip, and answers
/// [`ErrorKind::NotReplicated`](crate::ErrorKind::NotReplicated) when fewer confirm in time (the
/// write stands on the master; a call that was refused wrote nothing, and
/// answers its refusal). It narrows the window; it does not make Redis a
/// consensus store (see RELIABILITY.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replication {
    /// Replicas that must confirm each write.
    pub replicas: u64,
    /// How long to wait for them.
    pub timeout: Duration,
}

/// Whether a WAIT follows `calls` when the executor asks replicas to
/// confirm its writes: when any of them writes what a caller relies on. A
/// claim's write is not (nor is it waited for on a blocking claim): lost in a
/// failover, its jobs are pending again on the new master and run again, as
/// at-least-once allows, and the WAIT after the job's ack covers the claim's
/// write as well. Waited for, a replica's lag would strand the claimed jobs
/// until their leases ran out: a shortfall answers
/// [`ErrorKind::NotReplicated`](crate::ErrorKind::NotReplicated), not the jobs. Nor is a heartbeat's (EXTEND):
/// lost, a lease is only shorter on the new master, and its job may run
/// again; waited for, a lagging replica would fail every heartbeat, and the
/// worker would give up its running jobs as lost.
pub(super) fn confirms(calls: &[Call]) -> bool {
    calls.iter().any(|call| call.name.describe().waits_for_replication)
}

/// What a pipeline of calls answered: one reply per call, and when a WAIT
/// followed them, how many replicas confirmed the writes.
pub(super) struct Sent {
    pub(super) replies: Vec<Result<Value>>,
    pub(super) confirmed: Option<u64>,
}

impl Sent {
    /// The replies, each call's own: when fewer replicas than `replication`
    /// asks for confirmed the writes, each call that applied a write the
    /// caller relies on (see [`confirms`]) answers [`ErrorKind::NotReplicated`](crate::ErrorKind::NotReplicated)
    /// instead of its value; a refused call wrote nothing and answers its
    /// refusal, and a read or a claim answers its value. An ACKMANY answers
    /// for each job: its reply is marked (see [`shortfall`]), so that a job
    /// it acked hears the shortfall and one it refused its refusal.
    pub(super) fn replicated(self, calls: &[Call], replication: Option<Replication>) -> Vec<Result<Value>> {
        let (Some(Replication { replicas, .. }), Some(confirmed)) = (replication, self.confirmed) else {
            return self.replies;
        };
        if confirmed >= replicas {
            return self.replies;
        }
        self.replies
            .into_iter()
            .zip(calls)
            .map(|(reply, call)| match reply {
                Ok(Value::Array(jobs)) if call.name == Name::AckMany => {
                    let shortfall = [confirmed, replicas].map(|n| Value::Int(n as i64));
                    Ok(Value::Attribute {
                        data: Box::new(Value::Array(jobs)),
                        attributes: vec![(
                            Value::SimpleString(SHORTFALL.into()),
                            Value::Array(shortfall.into()),
                        )],
                    })
                }
                Ok(_) if confirms(std::slice::from_ref(call)) => {
                    Err(Error::not_replicated(confirmed, replicas))
                }
                reply => reply,
            })
            .collect()
    }
}

/// The name of the mark an ACKMANY's reply carries when fewer replicas
/// than asked for confirmed it: an attribute (RESP3's place for what a reply
/// carries beside its data), put there by the executor, never by a server.
const SHORTFALL: &str = "emq-shortfall";

/// A reply and, when [`Sent::replicated`] marked it, the replicas' shortfall:
/// [`ErrorKind::NotReplicated`](crate::ErrorKind::NotReplicated) for each of its writes that applied.
pub(crate) fn shortfall(reply: Value) -> (Value, Option<(u64, u64)>) {
    match reply {
        Value::Attribute { data, attributes } => {
            let marked = attributes.iter().find_map(|(name, numbers)| match (name, numbers) {
                (Value::SimpleString(name), Value::Array(numbers)) if name == SHORTFALL => {
                    match numbers[..] {
                        [Value::Int(confirmed), Value::Int(wanted)] => {
                            Some((confirmed as u64, wanted as u64))
                        }
                        _ => None,
                    }
                }
                _ => None,
            });
            (*data, marked)
        }
        reply => (reply, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    fn call(name: Name) -> Call {
        Call { name, keys: Vec::new(), args: Vec::new() }
    }

    #[test]
    fn writes_a_caller_relies_on_are_waited_for_but_claims_and_heartbeats() {
        assert!(confirms(&[call(Name::Ack)]) && confirms(&[call(Name::Enqueue)]));
        assert!(!confirms(&[call(Name::Claim)]) && !confirms(&[call(Name::Extend)]));
        assert!(!confirms(&[call(Name::Stats)]), "a read");
        assert!(confirms(&[call(Name::Extend), call(Name::Fail)]), "one that is makes the WAIT");
    }

    #[test]
    fn a_shortfall_is_each_writing_calls_own_and_a_refusal_stays_a_refusal() {
        let calls = [call(Name::Ack), call(Name::Ack), call(Name::Extend)];
        let replies = vec![Ok(Value::Int(1)), Err(Error::new(ErrorKind::Fence, "stale")), Ok(Value::Int(7))];
        let replication = Replication { replicas: 1, timeout: Duration::from_millis(10) };
        let sent = Sent { replies, confirmed: Some(0) };
        let replies = sent.replicated(&calls, Some(replication));
        assert!(matches!(
            replies[0],
            Err(Error { kind: ErrorKind::NotReplicated { confirmed: 0, wanted: 1 }, .. })
        ));
        assert!(matches!(replies[1], Err(Error { kind: ErrorKind::Fence, .. })), "it wrote nothing");
        assert!(matches!(replies[2], Ok(Value::Int(7))), "a heartbeat is not waited for");
        let confirmed = Sent { replies: vec![Ok(Value::Int(1))], confirmed: Some(1) };
        assert!(matches!(confirmed.replicated(&calls[..1], Some(replication))[0], Ok(Value::Int(1))));
    }

    /// An ACKMANY's jobs answer each on their own: the acked one the
    /// shortfall, the fenced one its refusal (not "applied").
    #[test]
    fn an_ackmany_short_of_replicas_answers_for_each_job() {
        use crate::transition::{AckMany, Transition};
        let fenced =
            redis::make_extension_error("EMQFENCE".into(), Some("token does not hold the lease".into()));
        let fenced = Value::ServerError(redis::ServerError::try_from(fenced).unwrap());
        let reply = || Ok(Value::Array(vec![Value::Int(1), fenced.clone()]));
        let replication = Replication { replicas: 2, timeout: Duration::from_millis(10) };
        let sent = Sent { replies: vec![reply()], confirmed: Some(1) };
        let [marked] = &sent.replicated(&[call(Name::AckMany)], Some(replication))[..] else { panic!() };
        let outcomes = AckMany::parse(marked.as_ref().unwrap().clone()).unwrap();
        assert!(
            matches!(
                outcomes[0],
                Err(Error { kind: ErrorKind::NotReplicated { confirmed: 1, wanted: 2 }, .. })
            ),
            "{outcomes:?}"
        );
        assert!(outcomes[1].as_ref().is_err_and(Error::is_lost_lease), "{outcomes:?}");
        let sent = Sent { replies: vec![reply()], confirmed: Some(2) };
        let [enough] = &sent.replicated(&[call(Name::AckMany)], Some(replication))[..] else { panic!() };
        let outcomes = AckMany::parse(enough.as_ref().unwrap().clone()).unwrap();
        assert!(outcomes[0].is_ok() && outcomes[1].as_ref().is_err_and(Error::is_lost_lease), "{outcomes:?}");
    }
}
