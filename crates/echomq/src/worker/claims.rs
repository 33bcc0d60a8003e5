//! A queue's claim loop: it gathers free slots, claims as many jobs as they
//! hold room for (one CLAIM, or a wait for work on an idle queue), sends
//! each job's run to the worker, and rides out an outage, said once.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use super::options::{Shared, WorkerOptions};
use super::{job, JobRun};
use crate::queue::Queue;
use crate::transition::{Claims, Held};

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

/// How long a claim loop waits for more free slots before it claims with fewer.
const GATHER: Duration = Duration::from_millis(5);

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

/// Claim jobs while there is room, and send each one's run to the worker.
pub(super) async fn claim_loop(
    hands: Arc<job::Hands>,
    shared: Arc<Shared>,
    slots: Arc<Semaphore>,
    jobs: tokio::sync::mpsc::UnboundedSender<JobRun>,
    queues: usize,
) {
    let queue = &hands.queue;
    let options = &shared.options;
    let mut nap = Duration::from_millis(1);
    let mut outage = Outage::new(queue).await;
    while !shared.stopping.is_cancelled() {
        let Some(mut permits) =
            gather(&slots, &shared, claim_floor(options.concurrency, queues) as u32).await
        else {
            break;
        };
        // Asked each time: Lua's wake-ups stop while their subscription is
        // down, and its claims then return at once, so the loop must nap.
        let waits = queue.executor().setup().waits;
        let claimed = claim(queue, options, waits, &mut permits).await;
        let Claims { jobs: claimed, held } = match claimed {
            Ok(claimed) => {
                outage.over(queue).await;
                claimed
            }
            Err(err) => {
                let back_off = outage.failed(queue, &err);
                drop(permits);
                tokio::select! {
                    () = tokio::time::sleep(back_off) => {}
                    () = shared.stopping.cancelled() => {}
                }
                continue;
            }
        };
        if shared.stopping.is_cancelled() {
            // Claimed while shutting down: give them straight back.
            for job in &claimed {
                let _ = queue.release(job, &options.retry).await;
            }
            break;
        }
        let idle = claimed.is_empty();
        for (job, permit) in claimed.into_iter().zip(permits.drain(..)) {
            let run = job::run(hands.clone(), shared.clone(), job, permit);
            if jobs.send(Box::pin(run)).is_err() {
                return;
            }
        }
        drop(permits);
        // The queue's rate limit said when its next slot opens: wait that long.
        if let (true, Some(Held::Wait(next))) = (idle, held) {
            tokio::select! {
                () = tokio::time::sleep(next) => {}
                () = shared.stopping.cancelled() => {}
            }
            continue;
        }
        // At the queue's concurrency limit no arrival frees a slot, so even a
        // worker that can wait naps, as a polling one does.
        if idle && (!waits || held == Some(Held::Busy)) {
            // Lua cannot wait on the server: poll, backing off up to `idle_poll`.
            tokio::select! {
                () = tokio::time::sleep(nap) => {}
                () = shared.stopping.cancelled() => {}
            }
            nap = (nap * 2).min(options.idle_poll);
        } else if !idle {
            nap = Duration::from_millis(1);
        }
    }
}

/// A slot, then within [`GATHER`] enough for `floor` jobs if they free up
/// (under load slots free up together: one claim then serves many; long
/// jobs lose at most that moment), then any others free; one permit a job.
/// `None` when the worker stops.
pub(super) async fn gather(
    slots: &Arc<Semaphore>,
    shared: &Shared,
    floor: u32,
) -> Option<Vec<tokio::sync::OwnedSemaphorePermit>> {
    let first = tokio::select! {
        permit = slots.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
        () = shared.stopping.cancelled() => return None,
    };
    let mut permits = vec![first];
    if floor > 1 {
        if let Ok(Ok(more)) = tokio::time::timeout(GATHER, slots.clone().acquire_many_owned(floor - 1)).await
        {
            permits.push(more);
        }
    }
    let mut held: usize = permits.iter().map(|p| p.num_permits()).sum();
    while held < shared.options.concurrency {
        match slots.clone().try_acquire_owned() {
            Ok(permit) => {
                permits.push(permit);
                held += 1;
            }
            Err(_) => break,
        }
    }
    Some(split(permits))
}

/// Claim as many jobs as `permits` has room for. An executor that can wait
/// claims at once, and when the queue is empty waits for one job holding one
/// permit, the rest given back: a worker's idle queue must not hold the
/// slots its busy queues need while it waits.
async fn claim(
    queue: &Queue,
    options: &WorkerOptions,
    waits: bool,
    permits: &mut Vec<tokio::sync::OwnedSemaphorePermit>,
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

/// The fewest slots a claim under load is for: a quarter of the worker's
/// concurrency (1 to 250), so that one claim's cost serves many jobs, as
/// a share of each of its `queues`' claim loops. The slots are one
/// semaphore, first come first served: a loop waiting for more than its
/// share holds every other queue's claim behind it.
pub(super) fn claim_floor(concurrency: usize, queues: usize) -> usize {
    (concurrency / 4 / queues.max(1)).clamp(1, 250)
}

/// One permit per job: the batch's first permit split into singles.
fn split(mut permits: Vec<tokio::sync::OwnedSemaphorePermit>) -> Vec<tokio::sync::OwnedSemaphorePermit> {
    let mut singles = Vec::with_capacity(permits.len());
    for mut permit in permits.drain(..) {
        while permit.num_permits() > 1 {
            singles.push(permit.split(1).expect("more than one permit"));
        }
        singles.push(permit);
    }
    singles
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_loop_waits_for_its_queues_share_of_the_slots() {
        assert_eq!(claim_floor(100, 1), 25, "one queue: a quarter");
        assert_eq!(claim_floor(100, 5), 5, "five queues: a fifth of that each");
        assert_eq!(claim_floor(100, 100), 1, "a hundred: no wait for more");
        assert_eq!(claim_floor(10_000, 1), 250, "at most 250");
        assert_eq!(claim_floor(0, 0), 1, "at least 1");
    }
}
