//! A queue's claim loop, the first stop of a job's path: it gathers free
//! slots, claims as many jobs as they hold room for (one CLAIM, or a wait
//! for work on an idle queue), starts each job it claimed, and rides out
//! an outage, said once. The jobs an ACKNEXT claimed come back
//! to it, each with its slot, and start here as well.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use super::options::{Shared, WorkerOptions};
use super::runner::Runner;
use super::slots::{claim_floor, gather, RefillInbox};
use crate::queue::{Queue, RetryPolicy};
use crate::transition::{Claimed, Claims, Held};

/// After an outage: the server's run now, said when it is another than
/// `before` (the server restarted, or a replica took over; restarted
/// without an AOF, what it had not snapshotted is gone, and its jobs with
/// it: no worker will hear of them).
async fn said_restart(
    queue: &Queue,
    before: Option<crate::executor::ServerRun>,
) -> Option<crate::executor::ServerRun> {
    let now = crate::executor::server_run(&**queue.executor()).await;
    match (&before, &now) {
        (Some(before), Some(now)) if before.run_id == now.run_id => {}
        (Some(_), Some(now)) if now.aof => {
            tracing::info!(queue = queue.name(), "the server restarted during the outage (it keeps an AOF)");
        }
        (Some(_), Some(_)) => {
            tracing::warn!(
                queue = queue.name(),
                "the server restarted during the outage (or a replica took over) and keeps no AOF: after a restart, the jobs written since its last snapshot (all of them, with no snapshot) are gone, and no worker will run them (RELIABILITY.md)"
            );
        }
        _ => {}
    }
    now.or(before)
}

/// A claim loop's failures: said once an outage, each new kind once, its
/// end said, and the claims backed off meanwhile. The connection
/// reconnects by itself; the loop keeps asking, less often.
pub(super) struct Outage {
    since: Option<std::time::Instant>,
    /// The failures said in this outage (a few kinds at most: the
    /// connection broke, then the server refuses the password).
    said: Vec<String>,
    back_off: Duration,
    /// The server's run, to tell a restart when an outage ends.
    run: Option<crate::executor::ServerRun>,
}

impl Outage {
    pub(super) async fn new(queue: &Queue) -> Outage {
        let run = crate::executor::server_run(&**queue.executor()).await;
        Outage { since: None, said: Vec::new(), back_off: Duration::from_millis(50), run }
    }

    /// A claim worked: the end of the outage, if there was one.
    pub(super) async fn over(&mut self, queue: &Queue) {
        if let Some(since) = self.since.take() {
            tracing::info!(queue = queue.name(), "claims work again, after {:.1?}", since.elapsed());
            self.run = said_restart(queue, self.run.take()).await;
            self.said.clear();
            self.back_off = Duration::from_millis(50);
        }
    }

    /// A finishing call found a job's record gone since the last look (the
    /// worker's `records_gone` moved on from `seen`): say whether the server
    /// restarted, as the end of an outage does. A busy worker's claims may
    /// never have failed while it was down.
    pub(super) async fn records_gone(&mut self, queue: &Queue, shared: &Shared, seen: &mut u64) {
        let gone = shared.records_gone.load(std::sync::atomic::Ordering::Relaxed);
        if gone != *seen {
            *seen = gone;
            self.run = said_restart(queue, self.run.take()).await;
        }
    }

    /// A claim failed with `err`: how long to wait before the next try.
    pub(super) fn failed(&mut self, queue: &Queue, err: &crate::Error) -> Duration {
        let said = err.to_string();
        let new = !self.said.contains(&said) && self.said.len() < 4;
        if self.since.is_none() {
            tracing::warn!(queue = queue.name(), error = %err, "claim failed; retrying with back-off");
            self.since = Some(std::time::Instant::now());
        } else if new {
            tracing::warn!(queue = queue.name(), error = %err, "claims still fail, now with another error");
        } else {
            tracing::debug!(queue = queue.name(), error = %err, "claim failed; retrying in {:?}", self.back_off);
        }
        if new {
            self.said.push(said);
        }
        let back_off = self.back_off;
        self.back_off = (back_off * 2).min(Duration::from_secs(5));
        back_off
    }
}

/// A queue's claim loop: claim jobs while there is room, and start each
/// one; start the jobs an ACKNEXT claimed too, which come back to it through
/// `refilled` (a worker of one queue), each with its slot. When the worker
/// stops, the jobs that come back are given back to pending.
pub(super) async fn claim_loop(
    runner: Arc<Runner>,
    shared: Arc<Shared>,
    slots: Arc<Semaphore>,
    refilled: Option<RefillInbox>,
    queues: usize,
) {
    // The jobs an ACKNEXT claimed start in a task of the loop's own: each
    // start then polls nothing else (at concurrency 1, a job's every
    // start). Aborted with the loop, as a JoinSet's tasks are.
    let mut refilling = JoinSet::new();
    if let Some(inbox) = refilled {
        refilling.spawn(start_refilled(runner.clone(), shared.clone(), inbox));
    }
    claims(&runner, &shared, &slots, queues).await;
    while let Some(ended) = refilling.join_next().await {
        let Ok(mut inbox) = ended else { continue };
        inbox.close();
        while let Some((job, _slot)) = inbox.recv().await {
            give_back(runner.queue(), &shared.options.retry, &job).await;
        }
    }
}

/// Start each job an ACKNEXT claimed, in the slot it came with, as it comes
/// back, until the worker stops: then the inbox, for [`claim_loop`] to
/// give back what still comes.
async fn start_refilled(runner: Arc<Runner>, shared: Arc<Shared>, mut inbox: RefillInbox) -> RefillInbox {
    loop {
        let next = tokio::select! {
            biased;
            next = inbox.recv() => next,
            () = shared.stopping.cancelled() => None,
        };
        match next {
            Some((job, slot)) if !shared.stopping.is_cancelled() => runner.start(job, slot),
            Some((job, _slot)) => give_back(runner.queue(), &shared.options.retry, &job).await,
            None => return inbox,
        }
    }
}

/// Claim jobs while there is room, and start each one, until the worker
/// stops.
async fn claims(runner: &Arc<Runner>, shared: &Shared, slots: &Arc<Semaphore>, queues: usize) {
    let queue = runner.queue();
    let options = &shared.options;
    let floor = claim_floor(options.concurrency, queues) as u32;
    let mut nap = Duration::from_millis(1);
    let mut outage = Outage::new(queue).await;
    let mut gone = 0;
    while !shared.stopping.is_cancelled() {
        let Some(mut permits) = gather(slots, shared, floor).await else { break };
        outage.records_gone(queue, shared, &mut gone).await;
        // Asked each time: Lua's wake-ups stop while their subscription is
        // down, and its claims then return at once, so the loop must nap.
        let waits = queue.executor().setup().waits;
        let Claims { jobs: claimed, held } = match claim(queue, options, waits, &mut permits).await {
            Ok(claimed) => {
                outage.over(queue).await;
                claimed
            }
            Err(err) => {
                drop(permits);
                pause(shared, outage.failed(queue, &err)).await;
                continue;
            }
        };
        let idle = claimed.is_empty();
        if !start(runner, shared, claimed, permits).await {
            break;
        }
        // A rate (the queue's, or a group's) said when its next slot opens.
        if let (true, Some(Held::Wait(next))) = (idle, held) {
            wait_held(shared, next).await;
        } else if idle && (!waits || held == Some(Held::Busy)) {
            // At the queue's concurrency limit no arrival frees a slot, so even
            // a worker that can wait naps, as a polling one does (Lua that
            // cannot wait on the server polls, backing off up to `idle_poll`).
            pause(shared, nap).await;
            nap = (nap * 2).min(options.idle_poll);
        } else if !idle {
            nap = Duration::from_millis(1);
        }
    }
}

/// Start each job `claimed`, each in one of `permits` (the others freed);
/// `false` when the worker stops claiming: the jobs claimed meanwhile are
/// given straight back.
async fn start(
    runner: &Arc<Runner>,
    shared: &Shared,
    claimed: Vec<Claimed>,
    permits: Vec<OwnedSemaphorePermit>,
) -> bool {
    if shared.stopping.is_cancelled() {
        for job in &claimed {
            give_back(runner.queue(), &shared.options.retry, job).await;
        }
        return false;
    }
    for (job, permit) in claimed.into_iter().zip(permits) {
        runner.start(job, permit);
    }
    true
}

/// After a claim that took nothing and was told to come back in `next`:
/// wait that long, but at most `idle_wait` (a group's window may be a
/// day, and another group's job, or an ungrouped one, may come meanwhile:
/// PROTOCOL.md §9). Not a wait on the wake-up key: under the queue's own
/// rate an arrival is not claimable either, and each would wake a worker
/// to a claim held back again.
async fn wait_held(shared: &Shared, next: Duration) {
    pause(shared, next.min(shared.options.idle_wait)).await;
}

/// Wait `how_long`, or until the worker stops.
pub(super) async fn pause(shared: &Shared, how_long: Duration) {
    tokio::select! {
        () = tokio::time::sleep(how_long) => {}
        () = shared.stopping.cancelled() => {}
    }
}

/// Give a job claimed while the worker stopped back to pending (RELEASE);
/// when that fails, its lease runs out and it is reaped. Under a
/// partitioned queue's exact concurrency its running permit goes back too,
/// once the release landed (else it lapses after the lease).
pub(super) async fn give_back(queue: &Queue, retry: &RetryPolicy, job: &Claimed) {
    let released = queue.release(job, retry).await;
    if let Some(coordinator) = queue.coordinator() {
        let landed = released.as_ref().map_or_else(crate::Error::is_lost_lease, |()| true);
        coordinator.ended(queue, &job.id, landed);
    }
    if let Err(err) = released {
        tracing::warn!(
            id = %job.id,
            error = %err,
            "a job claimed while the worker stopped could not be given back; it is reaped when its lease ends"
        );
    }
}

/// Claim as many jobs as `permits` has room for. An executor that can wait
/// claims at once, and when the queue is empty waits for one job holding one
/// permit, the rest given back: a worker's idle queue must not hold the
/// slots its busy queues need while it waits.
async fn claim(
    queue: &Queue,
    options: &WorkerOptions,
    waits: bool,
    permits: &mut Vec<OwnedSemaphorePermit>,
) -> crate::Result<Claims> {
    let wanted = (permits.len() as u64).min(1000);
    if !waits {
        return queue.claims(options.lease, wanted, None).await;
    }
    if wanted > 1 {
        let claimed = queue.claims(options.lease, wanted, None).await?;
        // Held back by a limit, not by an empty or paused queue: no arrival helps.
        if !claimed.jobs.is_empty() || matches!(claimed.held, Some(Held::Busy | Held::Wait(_))) {
            return Ok(claimed);
        }
        permits.truncate(1);
    }
    queue.claims(options.lease, 1, Some(options.idle_wait)).await
}
