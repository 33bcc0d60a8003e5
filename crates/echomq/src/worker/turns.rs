//! Claims for a worker of several queues on one server, taken in turns. A
//! claim loop per queue, sharing the worker's slots, claims one job a call
//! once there are as many queues as slots: each loop takes the first slot
//! that frees. Here one loop claims for every queue: each call takes as many
//! jobs as there are free slots from the next queue that has work, so a
//! hundred queues cost as few calls a job as one.
//!
//! The queues with no work wait together, with one `BZPOPMIN` over their
//! wake-up keys (PROTOCOL.md §9), and only while the worker has a slot to
//! claim with: a wake-up it takes is always followed by a claim on that
//! queue, which tells the next waiter when it leaves jobs (§9's chain).
//! While other queues keep the slots busy, the idle ones are looked at every
//! [`WATCH`]; and every `idle_wait` each is claimed from once more, as a
//! waiting claim's end would (a job whose arrival set no wake-up is not
//! left behind for longer).
//!
//! On a Cluster, where one pop cannot span the queues' slots (a
//! partitioned queue's partitions, queues spread over nodes), each idle
//! queue is waited for on a connection of its own ([`Waiters`]), the waits
//! running beside the claims. A server that refuses the pop (an ACL
//! without `+bzpopmin`) hands the queues back to a claim loop each.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::claims::{claim_loop, give_back, pause, Outage};
use super::options::Shared;
use super::runner::Runner;
use super::slots::{claim_floor, gather};
use crate::executor::Executor;
use crate::keyspace::Role;
use crate::transition::{Claims, Held};

/// How often a busy worker looks for arrivals on its idle queues.
const WATCH: Duration = Duration::from_millis(10);

/// How long that look waits: the least a `BZPOPMIN` waits.
const GLANCE: Duration = Duration::from_millis(1);

/// Where each queue stands between claims.
struct Turns {
    /// The queues that may have work, the next to claim from first.
    ready: VecDeque<usize>,
    /// The queues that had none, waiting for an arrival.
    idle: Vec<usize>,
    /// The queues held back until a time: a rate limit's next slot, a
    /// concurrency limit's nap, a failure's back-off.
    held: Vec<(Instant, usize)>,
    /// Each queue's nap while its concurrency limit is reached, doubling.
    naps: Vec<Duration>,
    /// Each queue's wake-up key.
    wakes: Vec<String>,
    /// When every idle queue was last claimed from again.
    rechecked: Instant,
    /// Where the next wait's keys start, so that no queue's key is always first.
    rotation: usize,
}

impl Turns {
    fn new(all: &[Arc<Runner>]) -> Turns {
        let wakes = all
            .iter()
            .map(|runner| runner.queue().keyspace().role(Role::Wake, None).expect("the wake-up key is fixed"))
            .collect();
        Turns {
            ready: (0..all.len()).collect(),
            idle: Vec::new(),
            held: Vec::new(),
            naps: vec![Duration::from_millis(1); all.len()],
            wakes,
            rechecked: Instant::now(),
            rotation: 0,
        }
    }

    /// Move the held queues whose time has come, and, every `recheck`, the
    /// idle ones, to the ready.
    fn due(&mut self, now: Instant, recheck: Duration) {
        let (due, held): (Vec<_>, Vec<_>) = self.held.drain(..).partition(|(at, _)| *at <= now);
        self.held = held;
        self.ready.extend(due.into_iter().map(|(_, queue)| queue));
        if now.duration_since(self.rechecked) >= recheck {
            self.rechecked = now;
            self.ready.extend(self.idle.drain(..));
        }
    }

    /// When something next comes due without an arrival.
    fn next_due(&self, recheck: Duration) -> Instant {
        let recheck = self.rechecked + recheck;
        self.held.iter().map(|(at, _)| *at).fold(recheck, Instant::min)
    }

    /// The idle queues' wake-up keys, and the queue of each.
    fn idle_wakes(&mut self) -> (Vec<String>, Vec<usize>) {
        let count = self.idle.len().max(1);
        self.rotation = (self.rotation + 1) % count;
        let order: Vec<usize> =
            self.idle.iter().cycle().skip(self.rotation).take(self.idle.len()).copied().collect();
        (order.iter().map(|&queue| self.wakes[queue].clone()).collect(), order)
    }

    /// `queue` had an arrival: claim from it next.
    fn woke(&mut self, queue: usize) {
        if let Some(at) = self.idle.iter().position(|&idle| idle == queue) {
            self.idle.swap_remove(at);
            self.ready.push_front(queue);
        }
    }

    /// After a claim from `queue` at `now` that wanted `wanted` jobs and
    /// got `got`: where it goes next (held at most `recheck` when told to
    /// wait; a limit's nap backing off up to `idle_poll`).
    fn claimed(
        &mut self,
        queue: usize,
        (wanted, got): (usize, usize),
        held: Option<Held>,
        now: Instant,
        (idle_poll, recheck): (Duration, Duration),
    ) {
        if got > 0 {
            self.naps[queue] = Duration::from_millis(1);
        }
        match held {
            // At most `recheck` (a group's window may be a day, and another
            // group's job may come meanwhile: claim again then).
            Some(Held::Wait(next)) => self.held.push((now + next.min(recheck), queue)),
            // Nothing announces a freed slot: nap, backing off.
            Some(Held::Busy) => {
                let nap = self.naps[queue];
                self.naps[queue] = (nap * 2).min(idle_poll);
                self.held.push((now + nap, queue));
            }
            // A resume sets the wake-up key, as an arrival does.
            Some(Held::Paused) => self.idle.push(queue),
            None if got == wanted => self.ready.push_back(queue),
            None => self.idle.push(queue),
        }
    }
}

/// Claim for every queue of `all` (one executor's, on one server) while the
/// worker runs, and start each job.
pub(super) async fn run(all: Vec<Arc<Runner>>, shared: Arc<Shared>, slots: Arc<Semaphore>) {
    let via: Arc<dyn Executor> = all[0].queue().executor().clone();
    let options = &shared.options;
    let mut turns = Turns::new(&all);
    let mut outage = Outage::new(all[0].queue()).await;
    let floor = claim_floor(options.concurrency, 1) as u32;
    let (mut watched, mut waiters, mut gone) = (Instant::now(), Waiters::default(), 0);
    while !shared.stopping.is_cancelled() {
        outage.records_gone(all[0].queue(), &shared, &mut gone).await;
        let setup = via.setup();
        if !setup.waits_on_many && !setup.waits_each {
            return claim_each(all, shared, slots).await;
        }
        waiters.woken(&mut turns);
        turns.due(Instant::now(), options.idle_wait);
        if !setup.waits_on_many {
            waiters.watch(&via, &turns, options.idle_wait);
        }
        if turns.ready.is_empty() {
            let waited = if setup.waits_on_many {
                wait_for_arrival(&all, &shared, &slots, &mut turns, &mut outage).await
            } else {
                waiters.wait(&shared, &slots, &mut turns).await
            };
            if !waited {
                break;
            }
            continue;
        }
        let Some(mut permits) = gather(&slots, &shared, floor).await else { break };
        // While the slots are busy, glance at the idle queues now and then,
        // beside the claims: a busy queue must not hide another's arrival.
        let glancing = setup.waits_on_many && !turns.idle.is_empty() && watched.elapsed() >= WATCH;
        let glance = glancing.then(|| {
            watched = Instant::now();
            let (wakes, queues) = turns.idle_wakes();
            let via = via.clone();
            async move { via.wait_on_many(&wakes, GLANCE).await.ok().flatten().map(|at| queues[at]) }
        });
        let glanced = async {
            match glance {
                Some(glance) => glance.await,
                None => None,
            }
        };
        let (woke, more) =
            tokio::join!(glanced, claim_round(&all, &shared, &mut turns, &mut outage, &mut permits));
        if let Some(queue) = woke {
            turns.woke(queue);
        }
        drop(permits);
        if !more {
            break;
        }
    }
}

/// Where one pop cannot wait for several queues (a Cluster): a wait of its
/// own for each idle queue, on a connection of its own, beside the claims.
/// A wait that took a queue's wake-up puts the queue first (its claim tells
/// the next waiter, §9); one that ran out leaves it to the recheck.
#[derive(Default)]
struct Waiters {
    /// The queues being waited for.
    waiting: HashSet<usize>,
    /// Each wait: its queue, and whether an arrival ended it.
    waits: JoinSet<(usize, bool)>,
}

impl Waiters {
    /// A wait, up to `wait`, for each idle queue that has none.
    fn watch(&mut self, via: &Arc<dyn Executor>, turns: &Turns, wait: Duration) {
        for &queue in &turns.idle {
            if self.waiting.insert(queue) {
                let (via, wake) = (via.clone(), turns.wakes[queue].clone());
                self.waits.spawn(async move {
                    let popped = via.wait_on_many(std::slice::from_ref(&wake), wait).await;
                    (queue, matches!(popped, Ok(Some(_))))
                });
            }
        }
    }

    /// The waits that have ended.
    fn woken(&mut self, turns: &mut Turns) {
        while let Some(ended) = self.waits.try_join_next() {
            if let Ok((queue, woke)) = ended {
                self.ended(turns, queue, woke);
            }
        }
    }

    fn ended(&mut self, turns: &mut Turns, queue: usize, woke: bool) {
        self.waiting.remove(&queue);
        if woke {
            turns.woke(queue);
        }
    }

    /// No queue ready: wait, holding a slot to claim with, for a wait to
    /// end or a queue held back to come due. `false` when the worker stopped.
    async fn wait(&mut self, shared: &Shared, slots: &Arc<Semaphore>, turns: &mut Turns) -> bool {
        let _slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
            () = shared.stopping.cancelled() => return false,
        };
        let until = turns.next_due(shared.options.idle_wait);
        tokio::select! {
            Some(Ok((queue, woke))) = self.waits.join_next() => self.ended(turns, queue, woke),
            () = tokio::time::sleep_until(until) => {}
            () = shared.stopping.cancelled() => return false,
        }
        true
    }
}

/// Nothing to claim from: wait for an arrival on an idle queue, holding a
/// slot to claim it with, or for a queue held back to come due. `false`
/// when the worker stopped before a slot was free.
async fn wait_for_arrival(
    all: &[Arc<Runner>],
    shared: &Shared,
    slots: &Arc<Semaphore>,
    turns: &mut Turns,
    outage: &mut Outage,
) -> bool {
    let _slot = tokio::select! {
        slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
        () = shared.stopping.cancelled() => return false,
    };
    let wait = turns.next_due(shared.options.idle_wait).saturating_duration_since(Instant::now());
    if turns.idle.is_empty() || wait.is_zero() {
        pause(shared, wait).await;
        return true;
    }
    let (wakes, queues) = turns.idle_wakes();
    // Not raced with the stop: a pop that happened must be claimed.
    // A stopping worker ends the wait (CLIENT UNBLOCK), or it runs out.
    match all[0].queue().executor().wait_on_many(&wakes, wait).await {
        Ok(Some(at)) => turns.woke(queues[at]),
        Ok(None) => {}
        Err(err) => pause(shared, outage.failed(all[queues[0]].queue(), &err)).await,
    }
    true
}

/// Claim from the ready queues, in turn, until `permits` are used or none
/// is ready; start each job. `false` when the worker stopped meanwhile.
async fn claim_round(
    all: &[Arc<Runner>],
    shared: &Arc<Shared>,
    turns: &mut Turns,
    outage: &mut Outage,
    permits: &mut Vec<OwnedSemaphorePermit>,
) -> bool {
    let options = &shared.options;
    while !permits.is_empty() {
        let Some(at) = turns.ready.pop_front() else { break };
        let (runner, wanted) = (&all[at], permits.len().min(1000));
        let queue = runner.queue();
        let Claims { jobs: claimed, held } = match queue.claims(options.lease, wanted as u64, None).await {
            Ok(claims) => {
                outage.over(queue).await;
                claims
            }
            Err(err) => {
                let back_off = outage.failed(queue, &err);
                turns.held.push((Instant::now() + back_off, at));
                continue;
            }
        };
        if shared.stopping.is_cancelled() {
            // Claimed while shutting down: give them straight back.
            for job in &claimed {
                give_back(queue, &options.retry, job).await;
            }
            return false;
        }
        let waits = (options.idle_poll, options.idle_wait);
        turns.claimed(at, (wanted, claimed.len()), held, Instant::now(), waits);
        for job in claimed {
            let permit = permits.pop().expect("a permit for each job claimed");
            runner.start(job, permit);
        }
    }
    true
}

/// The queues back to a claim loop each (the server refused the wait over
/// all of them), until they end.
async fn claim_each(all: Vec<Arc<Runner>>, shared: Arc<Shared>, slots: Arc<Semaphore>) {
    let queues = all.len();
    let mut loops = JoinSet::new();
    for runner in all {
        loops.spawn(claim_loop(runner, shared.clone(), slots.clone(), None, queues));
    }
    while loops.join_next().await.is_some() {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turns(queues: usize) -> Turns {
        Turns {
            ready: (0..queues).collect(),
            idle: Vec::new(),
            held: Vec::new(),
            naps: vec![Duration::from_millis(1); queues],
            wakes: (0..queues).map(|q| format!("emq:{{q{q}}}:wake")).collect(),
            rechecked: Instant::now(),
            rotation: 0,
        }
    }

    /// A queue that filled its claim goes to the back; one that came up
    /// short waits for an arrival; a paused one too; limits hold one back.
    #[test]
    fn each_claim_says_where_its_queue_goes() {
        let poll = Duration::from_millis(20);
        let (mut t, now) = (turns(4), Instant::now());
        t.ready.clear();
        t.claimed(0, (25, 25), None, now, (poll, Duration::from_secs(1)));
        t.claimed(1, (25, 3), None, now, (poll, Duration::from_secs(1)));
        t.claimed(2, (25, 0), Some(Held::Paused), now, (poll, Duration::from_secs(1)));
        t.claimed(
            3,
            (25, 0),
            Some(Held::Wait(Duration::from_millis(300))),
            now,
            (poll, Duration::from_secs(1)),
        );
        assert_eq!(t.ready, [0]);
        assert_eq!(t.idle, [1, 2]);
        assert_eq!(t.held.iter().map(|(_, q)| *q).collect::<Vec<_>>(), [3]);
        // The held one comes due at its time, not before.
        t.due(now + Duration::from_millis(299), Duration::from_secs(1));
        assert_eq!(t.ready, [0]);
        t.due(now + Duration::from_millis(300), Duration::from_secs(1));
        assert_eq!(t.ready, [0, 3]);
        // An arrival puts its queue first.
        t.woke(2);
        assert_eq!((t.ready.front(), t.idle.clone()), (Some(&2), vec![1]));
        // A woken queue that is not idle stays where it is.
        t.woke(0);
        assert_eq!(t.ready, [2, 0, 3]);
    }

    /// At a concurrency limit a queue naps, doubling to the poll's, and a
    /// claim that got jobs starts the naps again.
    #[test]
    fn a_busy_queue_naps_longer_each_time() {
        let poll = Duration::from_millis(4);
        let (mut t, now) = (turns(1), Instant::now());
        t.ready.clear();
        let naps: Vec<Duration> = (0..4)
            .map(|_| {
                t.claimed(0, (10, 0), Some(Held::Busy), now, (poll, Duration::from_secs(1)));
                let (at, _) = t.held.pop().unwrap();
                at - now
            })
            .collect();
        let ms = Duration::from_millis;
        assert_eq!(naps, [ms(1), ms(2), ms(4), ms(4)]);
        t.claimed(0, (10, 2), Some(Held::Busy), now, (poll, Duration::from_secs(1)));
        assert_eq!(t.held.pop().unwrap().0 - now, ms(1));
    }

    /// Every `recheck`, the idle queues are claimed from again; the next
    /// time anything comes due is the sooner of that and a held queue's.
    #[test]
    fn idle_queues_are_rechecked_in_time() {
        let recheck = Duration::from_secs(1);
        let mut t = turns(3);
        t.ready.clear();
        t.idle = vec![0, 1];
        let start = t.rechecked;
        assert_eq!(t.next_due(recheck), start + recheck);
        t.held.push((start + Duration::from_millis(200), 2));
        assert_eq!(t.next_due(recheck), start + Duration::from_millis(200));
        t.due(start + Duration::from_millis(999), recheck);
        assert_eq!(t.ready, [2]);
        t.due(start + recheck, recheck);
        assert_eq!(t.ready, [2, 0, 1]);
        assert!(t.idle.is_empty());
    }

    /// Each wait's keys start at another idle queue, and name each one once.
    #[test]
    fn the_wait_rotates_its_keys() {
        let mut t = turns(3);
        t.idle = vec![0, 1, 2];
        let (first_keys, first) = t.idle_wakes();
        let (_, second) = t.idle_wakes();
        assert_ne!(first[0], second[0]);
        for order in [&first, &second] {
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, [0, 1, 2]);
        }
        assert_eq!(first_keys[0], format!("emq:{{q{}}}:wake", first[0]));
    }
}
