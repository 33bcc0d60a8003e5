//! What each queue's upkeep has to do now, read before it is done: a
//! REAP, PROMOTE, TRIM, SETTLE and SCHEDULES that find nothing cost a
//! Lua server 30-50 µs each, a worker of a thousand queues runs them four
//! times a second, and the server had no time left for jobs. Seven plain
//! reads a queue (its sets' heads and sizes, PROTOCOL.md §2), a few µs in
//! all, in one round trip for many queues, say which of them would find
//! anything (§11.3).

use std::sync::atomic::{AtomicBool, Ordering};

use super::{Answer, Command, Executor};
use crate::keyspace::{Keyspace, Role};
use crate::record::State;
use crate::Result;

/// What a queue's upkeep has to do now (see [`upkeep_due`]). A part whose
/// read failed (a key of the wrong type) counts as due, so that its
/// transition runs and says what is wrong.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpkeepDue {
    /// A delayed job is due: PROMOTE.
    pub promote: bool,
    /// A lease ran out: REAP.
    pub reap: bool,
    /// A schedule's tick is due: SCHEDULES `DUE 1`, then FIRE.
    pub fire: bool,
    /// A batch is open: SETTLE.
    pub settle: bool,
    /// A child's notice waits for the relay (protocol 1.6).
    pub relay: bool,
    /// A flow's parent has waited longer than [`SWEEP_GRACE`](crate::SWEEP_GRACE): the sweep.
    pub sweep: bool,
    /// The sizes of done, dead and cancelled, when read: TRIM when one
    /// changed since its last TRIM.
    pub finished: [Option<u64>; 3],
}

/// The reads for one queue, in the order [`due`] reads them.
const READS: usize = 9;

/// What each of `queues`' upkeep has to do now, read with plain commands in
/// one round trip (PROTOCOL.md §11.3): every queue on `via`'s one server, or
/// one queue (its keys share a slot). `None` when it cannot be known: the
/// round trip failed, or the user may not read (an ACL without these
/// commands: said once, through `refused`, and not asked again); every
/// part is then run.
pub async fn upkeep_due(
    via: &dyn Executor,
    queues: &[Keyspace],
    refused: &AtomicBool,
) -> Option<Vec<UpkeepDue>> {
    if refused.load(Ordering::SeqCst) {
        return None;
    }
    let mut reads = vec![Command::Time];
    for keys in queues {
        for set in [keys.delayed(), keys.active(), keys.ticks()] {
            reads.push(Command::ZRange { key: set, count: 1, latest: false });
        }
        reads.push(Command::Exists(keys.role(Role::BatchOpen, None)?));
        for state in [State::Done, State::Dead, State::Cancelled] {
            reads.push(Command::ZCard(keys.state(state)));
        }
        reads.push(Command::StreamLen(keys.notices()));
        reads.push(Command::ZRange { key: keys.state(State::Waiting), count: 1, latest: false });
    }
    let answers = via.plain().send(&reads).await.ok()?;
    let denied = |answer: &Result<Answer>| {
        answer.as_ref().is_err_and(|err| err.redis_error().is_some_and(|err| err.code() == Some("NOPERM")))
    };
    if answers.iter().any(denied) {
        if !refused.swap(true, Ordering::SeqCst) {
            tracing::info!(
                "the server refused the upkeep's reads: every upkeep call is made each period (grant +time +zrange +exists +zcard to skip those with nothing to do, SECURITY.md)"
            );
        }
        return None;
    }
    let mut answers = answers.into_iter();
    let now = answers.next()?.ok()?.int().ok()? as f64;
    let answers: Vec<Result<Answer>> = answers.collect();
    Some(answers.chunks(READS).map(|reads| due(reads, now)).collect())
}

/// One queue's [`UpkeepDue`] from its nine reads; a read that failed (a key of
/// the wrong type) leaves its part due, so that the transition says what is wrong.
fn due(reads: &[Result<Answer>], now: f64) -> UpkeepDue {
    let head_by = |at: usize, by: f64| match reads.get(at) {
        Some(Ok(Answer::Scored(head))) => head.first().is_some_and(|(_, score)| *score <= by),
        _ => true,
    };
    let head_due = |at: usize| head_by(at, now);
    let size = |at: usize| match reads.get(at) {
        Some(Ok(Answer::Int(n))) => u64::try_from(*n).ok(),
        _ => None,
    };
    UpkeepDue {
        promote: head_due(0),
        reap: head_due(1),
        fire: head_due(2),
        settle: !matches!(reads.get(3), Some(Ok(Answer::Int(0)))),
        finished: [size(4), size(5), size(6)],
        relay: !matches!(reads.get(7), Some(Ok(Answer::Int(0)))),
        sweep: head_by(8, now - crate::SWEEP_GRACE.as_millis() as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Error, ErrorKind};

    fn head(score: Option<f64>) -> Result<Answer> {
        Ok(Answer::Scored(score.map(|score| ("JOB_1".to_owned(), score)).into_iter().collect()))
    }

    /// A set's head is due at or before now; an empty set has nothing
    /// due; a failed read (a key of the wrong type) counts as due, so the
    /// transition runs and says what is wrong.
    #[test]
    fn each_part_is_due_by_its_sets_head() {
        let wrong = Err(Error::new(ErrorKind::Server, "WRONGTYPE"));
        let reads = [
            head(Some(1000.0)),
            head(Some(1001.0)),
            head(None),
            Ok(Answer::Int(1)),
            Ok(Answer::Int(7)),
            wrong,
            Ok(Answer::Int(0)),
            Ok(Answer::Int(2)),
            head(Some(1000.0)),
        ];
        let due = due(&reads, 1000.0);
        assert_eq!(
            due,
            UpkeepDue {
                promote: true,
                reap: false,
                fire: false,
                settle: true,
                finished: [Some(7), None, Some(0)],
                relay: true,
                sweep: false,
            }
        );
        let idle = [
            head(None),
            head(None),
            head(None),
            Ok(Answer::Int(0)),
            Ok(Answer::Int(0)),
            Ok(Answer::Int(0)),
            Ok(Answer::Int(0)),
            Ok(Answer::Int(0)),
            head(None),
        ];
        assert_eq!(super::due(&idle, 1000.0), UpkeepDue { finished: [Some(0); 3], ..UpkeepDue::default() });
    }
}
