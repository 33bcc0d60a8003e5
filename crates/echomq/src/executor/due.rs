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

/// One queue the upkeep reads (see [`upkeep_due`]).
#[derive(Clone, Copy, Debug)]
pub struct DueAsk<'a> {
    /// The queue's keys.
    pub keys: &'a Keyspace,
    /// Its upkeep lease, for a queue kept by one worker at a time (a
    /// partitioned queue's, PROTOCOL.md §11.3); `None` for a queue any
    /// worker keeps.
    pub lease: Option<LeaseAsk<'a>>,
}

/// An upkeep lease as a worker asks for it (PROTOCOL.md §11.3).
#[derive(Clone, Copy, Debug)]
pub struct LeaseAsk<'a> {
    /// The worker's id: the lease's value.
    pub keeper: &'a str,
    /// How long the lease lives once taken or renewed, ms: three periods.
    pub ms: u64,
    /// The worker kept the queue last period: it renews the lease, and reads the queue.
    pub held: bool,
}

/// What a queue's upkeep does this period (see [`upkeep_due`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keeping {
    /// Keep the queue: the parts [`UpkeepDue`] names, or every part when
    /// they could not be read.
    Keep(Option<UpkeepDue>),
    /// Keep nothing this period: another worker holds the queue's lease,
    /// or this one took it just now and reads the queue from the next period.
    Skip,
}

/// A queue's upkeep lease after a period's ask (see [`upkeep_due`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Leased {
    /// The worker holds it: it keeps the queue, renewing the lease.
    Held,
    /// Another worker does.
    Theirs,
    /// The server refused the lease's `SET` (an older server, an ACL
    /// without `+set`, a key of another type, memory, a replica): the
    /// worker keeps the queue as any worker keeps an ordinary queue for a
    /// while, then asks again.
    Refused(String),
}

/// What each of `asks`' upkeep does this period, with its lease when it
/// has one (`None` when its state could not be read: as it was), asked and
/// read with plain commands in one round trip (PROTOCOL.md §11.3): every
/// queue on `via`'s one server, or one queue (its keys share a slot). A
/// kept queue's parts are `None` when they cannot be known: the round trip
/// failed, or the user may not read (an ACL without these commands: said
/// once, through `refused`, and not asked again); every part is then run.
pub async fn upkeep_due(
    via: &dyn Executor,
    asks: &[DueAsk<'_>],
    refused: &AtomicBool,
) -> Vec<(Keeping, Option<Leased>)> {
    let reading = !refused.load(Ordering::SeqCst);
    let commands = asked(asks, reading);
    if commands.len() == 1 {
        // Only TIME: nothing worth a round trip (reads refused, no lease).
        return asks.iter().map(|_| (Keeping::Keep(None), None)).collect();
    }
    let Ok(answers) = via.plain().send(&commands).await else {
        // Nothing known, not even who holds a lease: every part of every
        // queue runs, as any worker may keep any queue.
        return asks.iter().map(|_| (Keeping::Keep(None), None)).collect();
    };
    let mut answers = answers.into_iter();
    let now = answers.next().and_then(|time| time.ok()?.int().ok()).map(|ms| ms as f64);
    let mut denied = false;
    let mut kept: Vec<_> = asks
        .iter()
        .map(|ask| {
            let leased = ask.lease.map(|lease| {
                if lease.held {
                    answers.next(); // PEXPIRE's: the SET after it says who holds the lease.
                }
                leased(answers.next(), lease.keeper)
            });
            if !ask.reads() || leased == Some(Leased::Theirs) {
                if reading && ask.reads() {
                    answers.by_ref().take(READS).for_each(drop);
                }
                return (Keeping::Skip, leased);
            }
            let due = reading.then(|| answers.by_ref().take(READS).collect::<Vec<_>>()).and_then(|reads| {
                denied |= reads.iter().any(is_denied);
                now.map(|now| due(&reads, now))
            });
            (Keeping::Keep(due), leased)
        })
        .collect();
    if denied {
        if !refused.swap(true, Ordering::SeqCst) {
            tracing::info!(
                "the server refused the upkeep's reads: every upkeep call is made each period (grant +time +zrange +exists +zcard to skip those with nothing to do, SECURITY.md)"
            );
        }
        for (keeping, _) in &mut kept {
            if let Keeping::Keep(due) = keeping {
                *due = None;
            }
        }
    }
    kept
}

/// The round trip's commands: TIME, then each queue's lease (renewed,
/// asked for) and, when `reading` and it is read, its reads.
fn asked(asks: &[DueAsk<'_>], reading: bool) -> Vec<Command> {
    let mut commands = vec![Command::Time];
    for ask in asks {
        if let Some(lease) = ask.lease {
            let key = ask.keys.upkeep();
            if lease.held {
                commands.push(Command::PExpire(key.clone(), lease.ms));
            }
            commands.push(Command::SetIfAbsent { key, value: lease.keeper.to_owned(), ms: lease.ms });
        }
        if reading && ask.reads() {
            commands.extend(reads(ask.keys));
        }
    }
    commands
}

impl DueAsk<'_> {
    /// Whether the queue is read this period: one any worker keeps, or
    /// whose lease this worker held last period.
    fn reads(&self) -> bool {
        self.lease.is_none_or(|lease| lease.held)
    }
}

/// The reads of one queue's due parts, in the order [`due`] reads them.
fn reads(keys: &Keyspace) -> Vec<Command> {
    let mut reads = Vec::with_capacity(READS);
    for set in [keys.delayed(), keys.active(), keys.ticks()] {
        reads.push(Command::ZRange { key: set, count: 1, latest: false });
    }
    reads.push(Command::Exists(keys.role(Role::BatchOpen, None).unwrap_or_default()));
    for state in [State::Done, State::Dead, State::Cancelled] {
        reads.push(Command::ZCard(keys.state(state)));
    }
    reads.push(Command::StreamLen(keys.notices()));
    reads.push(Command::ZRange { key: keys.state(State::Waiting), count: 1, latest: false });
    reads
}

/// A read the server refused for want of a permission (`NOPERM`).
fn is_denied(answer: &Result<Answer>) -> bool {
    answer.as_ref().is_err_and(|err| err.redis_error().is_some_and(|err| err.code() == Some("NOPERM")))
}

/// The lease as the `SET … NX … GET`'s `answer` tells it: none (this
/// worker took it) or `keeper`'s own id, held; another's, theirs.
fn leased(answer: Option<Result<Answer>>, keeper: &str) -> Leased {
    match answer.map(|answer| answer.and_then(Answer::text)) {
        Some(Ok(None)) => Leased::Held,
        Some(Ok(Some(holder))) if holder == keeper => Leased::Held,
        Some(Ok(Some(_))) => Leased::Theirs,
        Some(Err(err)) => Leased::Refused(err.to_string()),
        None => Leased::Refused("no answer".into()),
    }
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

    /// A keeper's lease lives three periods from its last renewal: renewed
    /// at two, another worker asking at four is told it is theirs (unrenewed
    /// it would have run out at three), and at six, a period after it ran
    /// out, that worker takes it. On the embedded executor's clock.
    #[tokio::test]
    async fn a_renewed_lease_outlives_its_first_three_periods() {
        use echomq_core::memory::ManualClock;
        use std::sync::Arc;
        let clock = Arc::new(ManualClock::new(1_000_000));
        let via = crate::Embedded::with_clock(clock.clone());
        let keys = Keyspace::new("leased").unwrap();
        let refused = AtomicBool::new(false);
        let period = 100;
        let ask =
            |keeper, held| [DueAsk { keys: &keys, lease: Some(LeaseAsk { keeper, ms: 3 * period, held }) }];
        let first = upkeep_due(&via, &ask("a", false), &refused).await;
        assert_eq!(first, [(Keeping::Skip, Some(Leased::Held))], "taken, kept from the next period");
        clock.advance(2 * period);
        let renewed = upkeep_due(&via, &ask("a", true), &refused).await;
        assert!(matches!(renewed[0], (Keeping::Keep(Some(_)), Some(Leased::Held))), "{renewed:?}");
        clock.advance(2 * period);
        let other = upkeep_due(&via, &ask("b", false), &refused).await;
        assert_eq!(other, [(Keeping::Skip, Some(Leased::Theirs))], "renewed, a's until five periods");
        clock.advance(2 * period);
        let taken = upkeep_due(&via, &ask("b", false), &refused).await;
        assert_eq!(taken, [(Keeping::Skip, Some(Leased::Held))], "run out, b's");
    }

    /// The lease's `SET … NX … GET` answers none when it took the lease,
    /// the holder's id when it was there: the worker's own is held, another's
    /// is theirs; a refusal (an ACL, an older server) is said.
    #[test]
    fn the_lease_is_read_from_its_set() {
        let text = |id: Option<&str>| Some(Ok(Answer::Text(id.map(str::to_owned))));
        assert_eq!(leased(text(None), "w1"), Leased::Held);
        assert_eq!(leased(text(Some("w1")), "w1"), Leased::Held);
        assert_eq!(leased(text(Some("w2")), "w1"), Leased::Theirs);
        let refused = leased(Some(Err(Error::new(ErrorKind::Server, "NOPERM no +set"))), "w1");
        assert!(matches!(&refused, Leased::Refused(why) if why.contains("NOPERM")), "{refused:?}");
        assert!(matches!(leased(None, "w1"), Leased::Refused(_)));
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
