//! Upkeep: every so often a worker reaps its queue's expired leases,
//! promotes its due delayed jobs, trims its finished jobs to the queue's
//! retention, calls back its finished batches, and fires its schedules' due ticks. Each transition is atomic
//! and moves or deletes each job once, so any number of workers can run them
//! at once; each call moves at most [`STEP`] jobs, and a worker goes again
//! at once while there are more.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::options::Shared;
use crate::executor::{DueAsk, Keeping, LeaseAsk, Leased, UpkeepDue};
use crate::queue::{Queue, Upkeep, SWEEP_STEP};
use crate::record::State;
use crate::transition::{Promote, Reap, Trim};
use crate::Result;

/// The most jobs one REAP, PROMOTE, TRIM or SETTLE of the upkeep moves,
/// deletes or looks at (see [`SWEEP_STEP`]): a TRIM of a thousand was the
/// longest call of a busy queue's server, longer than any claim or ack of
/// the worker's. Going again at once while a call did a full step keeps up
/// with any throughput; for at most a period, so that a part never starves
/// the ones after it.
const STEP: u64 = SWEEP_STEP;

/// How often a worker notes its queue in the registry again: its last-seen
/// time needs no upkeep period's precision, and a round trip a period per
/// queue would cost a worker of a hundred queues hundreds a second.
const REGISTRY_REFRESH: Duration = Duration::from_secs(60);

/// How often a finished set is trimmed although its size did not change:
/// what its age bound lets go meanwhile (PROTOCOL.md §7.4; a day by default).
const AGE_RECHECK: Duration = Duration::from_secs(60);

/// The most queues whose due parts one round trip reads.
const DUE_READS: usize = 100;

/// One queue's upkeep, between ticks.
struct Kept {
    queue: Queue,
    /// The parts failing, each since when.
    failing: Vec<(&'static str, std::time::Instant)>,
    /// When the queue was last noted in the registry.
    noted: Option<Instant>,
    /// Each finished set's size after its last TRIM, when that TRIM left
    /// nothing behind: while the size stays, a TRIM would find nothing
    /// more but what the age bound lets go.
    trimmed: [Option<u64>; 3],
    trimmed_at: Instant,
    /// Its upkeep lease, for a queue kept by one worker at a time (a
    /// partitioned queue's, PROTOCOL.md §11.3): whether this worker kept
    /// it last period. `None` for a queue any worker keeps.
    held: Option<bool>,
    /// While the server refuses the lease (an ACL, memory, a replica), the
    /// queue is kept as any worker keeps an ordinary one, until this
    /// instant, when the lease is asked for again.
    refused_until: Option<Instant>,
}

/// How long a worker keeps a queue whose upkeep lease the server refused
/// as an ordinary one before it asks for the lease again (PROTOCOL.md §11.3).
const LEASE_RETRY: Duration = Duration::from_secs(60);

impl Kept {
    fn new(queue: Queue) -> Kept {
        // A partitioned queue's queues are kept by one of its workers at a time.
        let held = queue.coordinator().is_some().then_some(false);
        let trimmed_at = Instant::now();
        let (failing, trimmed, refused_until) = (Vec::new(), [None; 3], None);
        Kept { queue, failing, noted: None, trimmed, trimmed_at, held, refused_until }
    }

    /// This period's ask for its lease, as `keeper` holding it `ms`: none
    /// for a queue any worker keeps, and while the server refuses it.
    fn lease<'a>(&self, keeper: &'a str, ms: u64) -> Option<LeaseAsk<'a>> {
        let refused = self.refused_until.is_some_and(|until| Instant::now() < until);
        self.held.filter(|_| !refused).map(|held| LeaseAsk { keeper, ms, held })
    }

    /// Take in the lease as the period's ask found it. A refusal is said
    /// once, not at each minute's ask again, and its end once.
    fn leased(&mut self, leased: Option<Leased>) {
        let (held, refused) = match leased {
            None => return,
            Some(Leased::Held) => (true, None),
            Some(Leased::Theirs) => (false, None),
            Some(Leased::Refused(error)) => (false, Some(error)),
        };
        self.held = Some(held);
        let name = self.queue.name();
        match (refused, self.refused_until) {
            (Some(error), was) => {
                if was.is_none() {
                    tracing::warn!(
                        queue = name,
                        %error,
                        "the server refused the upkeep lease: this worker keeps the queue every period, and asks again each minute (the lease's selector, SECURITY.md)"
                    );
                }
                self.refused_until = Some(Instant::now() + LEASE_RETRY);
            }
            (None, Some(_)) => {
                tracing::info!(queue = name, "the server grants the upkeep lease again");
                self.refused_until = None;
            }
            (None, None) => {}
        }
    }
}

/// The upkeep of `queues`, all on one executor's server (or one queue),
/// every period until the worker stops, as the worker `keeper`. Each period
/// first reads what each queue has due ([`upkeep_due`](crate::executor::upkeep_due),
/// one round trip for many queues) and calls only the parts that would find
/// something: a worker of a thousand idle queues made 28,000 calls a
/// second that found nothing. Where that cannot be read, every part runs.
/// A partitioned queue's queues are kept by one worker at a time, under
/// their upkeep leases, asked for in the same round trip and given back
/// when the worker stops.
pub(super) async fn run(queues: Vec<Queue>, shared: Arc<Shared>, keeper: Arc<str>) {
    let Some(first) = queues.first() else { return };
    let via = first.executor().clone();
    let keys: Vec<_> = queues.iter().map(|queue| queue.keyspace().clone()).collect();
    let mut kept: Vec<Kept> = queues.into_iter().map(Kept::new).collect();
    // Set once the server refused the reads: every part runs from then on.
    let refused = std::sync::atomic::AtomicBool::new(false);
    let period = shared.options.upkeep;
    let lease_ms = u64::try_from(3 * period.as_millis()).unwrap_or(u64::MAX);
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        // A stop first: its leases given back at once, not after another period.
        tokio::select! {
            biased;
            () = shared.stopping.cancelled() => return give_back(&*via, &keys, &kept, &keeper).await,
            _ = tick.tick() => {}
        }
        let until = Instant::now() + period;
        if kept.len() > DUE_READS {
            // Kept a round trip of queues at a time, the last ones' leases
            // would wait on the first ones' calls: renewed first, all at once.
            renew(&*via, &keys, &kept, lease_ms).await;
        }
        for (keys, kept) in keys.chunks(DUE_READS).zip(kept.chunks_mut(DUE_READS)) {
            let leases: Vec<_> = kept.iter().map(|kept| kept.lease(&keeper, lease_ms)).collect();
            let asks: Vec<_> = keys.iter().zip(leases).map(|(keys, lease)| DueAsk { keys, lease }).collect();
            let keeping = crate::executor::upkeep_due(&*via, &asks, &refused).await;
            for (kept, (keeping, leased)) in kept.iter_mut().zip(keeping) {
                kept.leased(leased);
                // A stop cuts the period short: the queues left wait for the next keeper.
                if let (Keeping::Keep(due), false) = (keeping, shared.stopping.is_cancelled()) {
                    keep(kept, due, &shared, until).await;
                }
            }
        }
    }
}

/// Renew every upkeep lease `kept` held at its last period, for `ms`, in
/// one round trip (PEXPIRE; each queue's own ask says who holds it).
async fn renew(via: &dyn crate::Executor, keys: &[crate::Keyspace], kept: &[Kept], ms: u64) {
    use crate::executor::Command;
    let held = keys.iter().zip(kept).filter(|(_, kept)| kept.held == Some(true));
    let renewals: Vec<_> = held.map(|(keys, _)| Command::PExpire(keys.upkeep(), ms)).collect();
    if !renewals.is_empty() {
        // One that fails is renewed again by its queue's own ask.
        let _ = via.plain().send(&renewals).await;
    }
}

/// Give back the upkeep leases `keeper` holds of `kept`'s queues, so that
/// another worker takes them at its next period rather than when they run
/// out: `GET`, then `DEL` of those still its own (PROTOCOL.md §11.3).
async fn give_back(via: &dyn crate::Executor, keys: &[crate::Keyspace], kept: &[Kept], keeper: &str) {
    use crate::executor::{Answer, Command};
    let held: Vec<String> = keys
        .iter()
        .zip(kept)
        .filter(|(_, kept)| kept.held == Some(true))
        .map(|(keys, _)| keys.upkeep())
        .collect();
    if held.is_empty() {
        return;
    }
    let reads: Vec<_> = held.iter().map(|key| Command::Get(key.clone())).collect();
    let Ok(holders) = via.plain().send(&reads).await else { return };
    let ours = |holder: &crate::Result<Answer>| matches!(holder, Ok(Answer::Text(Some(id))) if id == keeper);
    let dels: Vec<_> = held
        .into_iter()
        .zip(&holders)
        .filter(|(_, holder)| ours(holder))
        .map(|(key, _)| Command::Del(key))
        .collect();
    if !dels.is_empty() {
        // A lease not given back runs out by itself, three periods on.
        let _ = via.plain().send(&dels).await;
    }
}

/// One queue's upkeep for one period: the parts `due` names, or all of them.
async fn keep(kept: &mut Kept, due: Option<UpkeepDue>, shared: &Shared, until: Instant) {
    let queue = &kept.queue;
    // A worked queue stays in the registry (PROTOCOL.md §11.3).
    if kept.noted.is_none_or(|at| at.elapsed() >= REGISTRY_REFRESH) {
        queue.register(true).await;
        kept.noted = Some(Instant::now());
    }
    let part = |wanted: fn(&UpkeepDue) -> bool| due.as_ref().is_none_or(wanted);
    let (promoting, reaping, settling, firing) =
        (part(|d| d.promote), part(|d| d.reap), part(|d| d.settle), part(|d| d.fire));
    let (relaying, sweeping) = (part(|d| d.relay), part(|d| d.sweep));
    // Each part runs although another failed (a user may be refused one
    // alone, or a key of one be of the wrong type).
    let outcomes = [
        ("promote", if promoting { promote(queue, until).await } else { Ok(()) }),
        ("reap", if reaping { reap(queue, shared, until).await } else { Ok(()) }),
        // The relay before the trim: a notice is on its way while its
        // child's record is trimmed (it carries all the parent needs).
        ("relay notices", if relaying { relay(&kept.queue, until).await } else { Ok(()) }),
        ("trim", trim(kept, due.map(|d| d.finished), until).await),
        ("settle", if settling { settle(&kept.queue, until).await } else { Ok(()) }),
        (
            "fire schedules",
            if firing { Upkeep::of(&kept.queue).fire_schedules().await.map(drop) } else { Ok(()) },
        ),
        (
            "sweep flows",
            if sweeping {
                Upkeep::of(&kept.queue).sweep_flows(crate::SWEEP_GRACE).await.map(drop)
            } else {
                Ok(())
            },
        ),
    ];
    kept.failing = said_once(&kept.queue, std::mem::take(&mut kept.failing), outcomes);
}

/// Say each part's failure once, not at every tick, and its end once: the
/// parts that fail now and did not (an outage fails them all at once: one
/// line), and those that failed and work again. The parts failing now.
fn said_once(
    queue: &Queue,
    failing: Vec<(&'static str, std::time::Instant)>,
    outcomes: [(&'static str, Result<()>); 7],
) -> Vec<(&'static str, std::time::Instant)> {
    let was = |part: &str| failing.iter().find(|(failed, _)| *failed == part).map(|(_, since)| *since);
    let (mut started, mut ended, mut still) = (Vec::new(), Vec::new(), Vec::new());
    let mut first_error = None;
    for (part, outcome) in outcomes {
        match (outcome, was(part)) {
            (Ok(()), Some(since)) => ended.push((part, since)),
            (Ok(()), None) => {}
            (Err(err), None) => {
                started.push((part, std::time::Instant::now()));
                first_error.get_or_insert(err);
            }
            (Err(err), Some(since)) => {
                tracing::debug!(queue = queue.name(), error = %err, "upkeep failed again ({part})");
                still.push((part, since));
            }
        }
    }
    let parts = |list: &[(&str, std::time::Instant)]| {
        list.iter().map(|(part, _)| *part).collect::<Vec<_>>().join(", ")
    };
    if let Some(err) = first_error {
        tracing::warn!(queue = queue.name(), error = %err, "upkeep failed ({}); trying again each tick", parts(&started));
    }
    if let Some((_, since)) = ended.iter().min_by_key(|(_, since)| *since) {
        tracing::info!(
            queue = queue.name(),
            "upkeep works again ({}), after {:.1?}",
            parts(&ended),
            since.elapsed()
        );
    }
    still.extend(started);
    still
}

/// Call `step` (a call of at most [`STEP`] jobs: how many it moved,
/// deleted or looked at) again at once while it did a full step, until
/// `until`: the next tick goes on from there. How many the steps did in
/// all, and whether the last was full (`until` stopped them, with more left).
async fn in_steps<F, Fut>(until: Instant, mut step: F) -> Result<(u64, bool)>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<u64>>,
{
    let mut all = 0;
    loop {
        let did = step().await?;
        all += did;
        if did < STEP || Instant::now() >= until {
            return Ok((all, did == STEP));
        }
    }
}

/// Due delayed jobs promoted.
async fn promote(queue: &Queue, until: Instant) -> Result<()> {
    in_steps(until, || queue.run(&Promote { limit: STEP })).await.map(drop)
}

/// Expired leases reaped.
async fn reap(queue: &Queue, shared: &Shared, until: Instant) -> Result<()> {
    let reap = Reap { max_attempts: shared.options.retry.max_attempts, limit: STEP };
    in_steps(until, || async { queue.run(&reap).await.map(|reaped| reaped.requeued + reaped.dead) })
        .await
        .map(drop)
}

/// Flows: carry the queue's children's notices to their parents.
async fn relay(queue: &Queue, until: Instant) -> Result<()> {
    let mut after = "0-0".to_owned();
    loop {
        let (read, last) = crate::queue::relay(queue, &after).await?;
        if read < crate::queue::RELAY_STEP as u64 || Instant::now() >= until {
            return Ok(());
        }
        after = last;
    }
}

/// Batches: call back each one whose jobs all finished.
async fn settle(queue: &Queue, until: Instant) -> Result<()> {
    in_steps(until, || async { Upkeep::of(queue).settle(STEP).await.map(|settled| settled.looked) })
        .await
        .map(drop)
}

/// Bounded retention: each finished set trimmed to the queue's retention,
/// in steps (as REAP and PROMOTE go), so trimming keeps up with any
/// throughput: a cap of a few calls a tick let a native queue finishing
/// 25,000 jobs/s outgrow its bound (`echomq-soak`). A set whose size
/// (`sizes`, read this period) is what its last TRIM left is skipped, but
/// every [`AGE_RECHECK`], for what its age bound lets go.
async fn trim(kept: &mut Kept, sizes: Option<[Option<u64>; 3]>, until: Instant) -> Result<()> {
    let recheck = kept.trimmed_at.elapsed() >= AGE_RECHECK;
    if recheck {
        kept.trimmed_at = Instant::now();
    }
    for (at, state) in [State::Done, State::Dead, State::Cancelled].into_iter().enumerate() {
        let size = sizes.and_then(|sizes| sizes[at]);
        if size == Some(0) || (size.is_some() && size == kept.trimmed[at] && !recheck) {
            continue;
        }
        let trim = Trim { state, limit: STEP };
        let (deleted, left_more) = in_steps(until, || kept.queue.run(&trim)).await?;
        // One stopped by the period's end left more: trim again next period.
        kept.trimmed[at] = size.filter(|_| !left_more).map(|size| size.saturating_sub(deleted));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transition::{Config, Retention};
    use crate::ErrorKind;
    use crate::{Embedded, Error};

    /// A call does at most a step; the upkeep goes again at once while a
    /// call did a full one, so one round trims any backlog, here 2.5 steps.
    #[tokio::test]
    async fn one_round_trims_past_its_step() {
        let queue = Queue::new(Arc::new(Embedded::new()), "steps").unwrap();
        let jobs = 2 * STEP + STEP / 2;
        queue.enqueue_batch((0..jobs).map(|n| n.to_string())).await.unwrap();
        let lease = std::time::Duration::from_secs(60);
        for job in queue.claim_many(lease, jobs, None).await.unwrap().jobs {
            job.ack().await.unwrap();
        }
        let keep = Retention { age: None, count: Some(7) };
        queue.configure(Config { keep_done: Some(keep), ..Config::default() }).await.unwrap();
        let mut kept = Kept::new(queue.clone());
        trim(&mut kept, None, Instant::now() + std::time::Duration::from_secs(60)).await.unwrap();
        assert_eq!(queue.stats().await.unwrap().done, 7);
    }

    /// A finished set whose size is what its last TRIM left is not trimmed
    /// again (nothing came in), but when its size changes, or once an
    /// [`AGE_RECHECK`] has passed, for what its age bound lets go.
    #[tokio::test]
    async fn a_set_its_last_trim_left_alone_is_skipped() {
        let queue = Queue::new(Arc::new(Embedded::new()), "skips").unwrap();
        queue.enqueue_batch((0..10).map(|n| n.to_string())).await.unwrap();
        let lease = std::time::Duration::from_secs(60);
        for job in queue.claim_many(lease, 10, None).await.unwrap().jobs {
            job.ack().await.unwrap();
        }
        let keep = |count| Config {
            keep_done: Some(Retention { age: None, count: Some(count) }),
            ..Config::default()
        };
        let until = || Instant::now() + std::time::Duration::from_secs(60);
        let done = || async { queue.stats().await.unwrap().done };
        queue.configure(keep(7)).await.unwrap();
        let mut kept = Kept::new(queue.clone());
        trim(&mut kept, Some([Some(10), Some(0), Some(0)]), until()).await.unwrap();
        assert_eq!((done().await, kept.trimmed[0]), (7, Some(7)));
        // The bound tightens, the size stays: skipped, nothing deleted.
        queue.configure(keep(5)).await.unwrap();
        trim(&mut kept, Some([Some(7), Some(0), Some(0)]), until()).await.unwrap();
        assert_eq!(done().await, 7, "skipped");
        // A size that changed is trimmed.
        trim(&mut kept, Some([Some(8), Some(0), Some(0)]), until()).await.unwrap();
        assert_eq!(done().await, 5);
        // So is one an age recheck comes to.
        queue.configure(keep(3)).await.unwrap();
        kept.trimmed_at -= AGE_RECHECK;
        trim(&mut kept, Some([Some(5), Some(0), Some(0)]), until()).await.unwrap();
        assert_eq!(done().await, 3);
        // Sizes not read: every set is trimmed.
        queue.configure(keep(2)).await.unwrap();
        trim(&mut kept, None, until()).await.unwrap();
        assert_eq!(done().await, 2);
    }

    /// A stopping worker deletes the leases it holds, and only those: one
    /// another worker took meanwhile (its last period said held) stays.
    #[tokio::test]
    async fn a_lease_is_given_back_only_by_its_holder() {
        use crate::executor::{Answer, Command};
        let via: Arc<dyn crate::Executor> = Arc::new(Embedded::new());
        let p = crate::Partitioned::create(via.clone(), "given", 2).await.unwrap();
        let kept: Vec<Kept> = p.partitions().iter().cloned().map(Kept::new).collect();
        let keys: Vec<_> = p.partitions().iter().map(|queue| queue.keyspace().clone()).collect();
        let kept: Vec<Kept> = kept.into_iter().map(|kept| Kept { held: Some(true), ..kept }).collect();
        for (keys, holder) in keys.iter().zip(["me", "another"]) {
            let lease = Command::SetIfAbsent { key: keys.upkeep(), value: holder.into(), ms: 60_000 };
            via.plain().one(lease).await.unwrap();
        }
        give_back(&*via, &keys, &kept, "me").await;
        let holder = |keys: &crate::Keyspace| via.plain().one(Command::Get(keys.upkeep()));
        assert_eq!(holder(&keys[0]).await.unwrap(), Answer::Text(None), "its own, given back");
        assert_eq!(holder(&keys[1]).await.unwrap(), Answer::Text(Some("another".into())), "another's, kept");
    }

    /// A worker of more queues than one round trip reads renews every lease
    /// it holds first: the last queues' leases outlive their three periods
    /// while the first queues are kept (on the embedded executor's clock).
    #[tokio::test]
    async fn a_worker_of_many_queues_renews_every_lease_first() {
        use crate::executor::{Answer, Command};
        let clock = Arc::new(echomq_core::memory::ManualClock::new(1_000_000));
        let via: Arc<dyn crate::Executor> = Arc::new(Embedded::with_clock(clock.clone()));
        let p = crate::Partitioned::create(via.clone(), "many", DUE_READS + 1).await.unwrap();
        let keys: Vec<_> = p.partitions().iter().map(|queue| queue.keyspace().clone()).collect();
        let kept: Vec<Kept> = p
            .partitions()
            .iter()
            .cloned()
            .map(|queue| Kept { held: Some(true), ..Kept::new(queue) })
            .collect();
        for keys in &keys {
            let lease = Command::SetIfAbsent { key: keys.upkeep(), value: "me".into(), ms: 300 };
            via.plain().one(lease).await.unwrap();
        }
        clock.advance(200);
        renew(&*via, &keys, &kept, 300).await;
        clock.advance(200);
        let last = via.plain().one(Command::Get(keys[DUE_READS].upkeep())).await.unwrap();
        assert_eq!(last, Answer::Text(Some("me".into())), "renewed at 200 ms, alive at 400");
    }

    /// A refused lease keeps the queue as an ordinary one (no lease asked)
    /// for a minute, then is asked for again; the lease's answers after
    /// end the refusal.
    #[tokio::test]
    async fn a_refused_lease_is_asked_for_again_after_a_minute() {
        let via: Arc<dyn crate::Executor> = Arc::new(Embedded::new());
        let p = crate::Partitioned::create(via, "refused", 1).await.unwrap();
        let mut kept = Kept::new(p.partitions()[0].clone());
        assert!(kept.lease("me", 750).is_some_and(|ask| !ask.held), "a partition's lease is asked for");
        kept.leased(Some(Leased::Refused("NOPERM".into())));
        assert!(kept.lease("me", 750).is_none(), "kept as an ordinary queue meanwhile");
        kept.refused_until = kept.refused_until.map(|until| until - LEASE_RETRY);
        assert!(kept.lease("me", 750).is_some(), "asked for again a minute on");
        kept.leased(Some(Leased::Held));
        assert_eq!((kept.held, kept.refused_until), (Some(true), None));
        let ordinary = Kept::new(Queue::new(Arc::new(Embedded::new()), "ordinary").unwrap());
        assert!(ordinary.lease("me", 750).is_none(), "an ordinary queue has no lease");
    }

    fn outcomes(failed: &[&'static str]) -> [(&'static str, Result<()>); 7] {
        ["promote", "reap", "trim", "settle", "fire schedules", "relay notices", "sweep flows"].map(|part| {
            let outcome =
                if failed.contains(&part) { Err(Error::new(ErrorKind::Argument, "refused")) } else { Ok(()) };
            (part, outcome)
        })
    }

    fn parts(failing: &[(&'static str, Instant)]) -> Vec<&'static str> {
        failing.iter().map(|(part, _)| *part).collect()
    }

    /// A part refused for good (an ACL without EMQ.FIRE) does not hide an
    /// outage of the others, nor its end: each part is followed on its own.
    #[test]
    fn each_part_is_followed_on_its_own() {
        let queue = Queue::new(Arc::new(Embedded::new()), "upkeep").unwrap();
        let failing = said_once(&queue, Vec::new(), outcomes(&["fire schedules"]));
        assert_eq!(parts(&failing), ["fire schedules"]);
        let since = failing[0].1;
        let failing = said_once(&queue, failing, outcomes(&["promote", "reap", "fire schedules"]));
        assert_eq!(parts(&failing), ["fire schedules", "promote", "reap"]);
        assert_eq!(failing[0].1, since, "still failing since its first failure");
        let failing = said_once(&queue, failing, outcomes(&["fire schedules"]));
        assert_eq!(parts(&failing), ["fire schedules"]);
        assert!(said_once(&queue, failing, outcomes(&[])).is_empty());
    }
}
