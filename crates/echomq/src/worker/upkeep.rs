//! Upkeep: every so often a worker reaps its queue's expired leases,
//! promotes its due delayed jobs, trims its finished jobs to the queue's
//! retention, calls back its finished batches, and fires its schedules' due ticks. Each transition is atomic
//! and moves or deletes each job once, so any number of workers can run them
//! at once; each call moves at most a thousand jobs, and a worker goes again
//! at once while there are more.

use std::sync::Arc;

use super::Shared;
use crate::queue::Queue;
use crate::record::State;
use crate::Result;

pub(super) async fn run(queue: Queue, shared: Arc<Shared>) {
    let mut tick = tokio::time::interval(shared.options.upkeep);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing_since: Option<std::time::Instant> = None;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = shared.stopping.cancelled() => return,
        }
        // Each part runs although another failed (a user may be refused one
        // alone); a failure is said once, not at every tick, and so is its end.
        let failed = [
            promote_and_reap(&queue, &shared).await.err().map(|err| ("promote and reap", err)),
            trim(&queue).await.err().map(|err| ("trim finished jobs", err)),
            settle(&queue).await.err().map(|err| ("settle batches", err)),
            queue.fire_schedules().await.err().map(|err| ("fire schedules", err)),
        ]
        .into_iter()
        .flatten()
        .next();
        match (failed, failing_since) {
            (None, Some(since)) => {
                tracing::info!(queue = queue.name(), "upkeep works again, after {:.1?}", since.elapsed());
                failing_since = None;
            }
            (Some((part, err)), None) => {
                tracing::warn!(queue = queue.name(), error = %err, "upkeep failed ({part}); trying again each tick");
                failing_since = Some(std::time::Instant::now());
            }
            (Some((part, err)), Some(_)) => {
                tracing::debug!(queue = queue.name(), error = %err, "upkeep failed again ({part})");
            }
            (None, None) => {}
        }
    }
}

/// Due delayed jobs promoted and expired leases reaped, again at once while
/// a call moves a full LIMIT.
async fn promote_and_reap(queue: &Queue, shared: &Shared) -> Result<()> {
    let full = *echomq_core::limits::SWEEP_LIMIT.end();
    loop {
        let promoted = queue.promote().await?;
        let reaped = queue.reap(shared.options.retry.max_attempts).await?;
        if promoted < full && reaped.requeued + reaped.dead < full {
            return Ok(());
        }
    }
}

/// Batches: call back each one whose jobs all finished, looking at up to a
/// thousand jobs a call, again at once while a call looks at that many.
async fn settle(queue: &Queue) -> Result<()> {
    let full = *echomq_core::limits::SWEEP_LIMIT.end();
    while queue.settle(full).await?.looked == full {}
    Ok(())
}

/// Bounded retention: each finished set trimmed to the queue's retention,
/// again at once while a call deletes a full LIMIT (as REAP and PROMOTE go),
/// so trimming keeps up with any throughput: a cap of a few calls a tick let
/// a native queue finishing 25,000 jobs/s outgrow its bound (`echomq-soak`).
async fn trim(queue: &Queue) -> Result<()> {
    let full = *echomq_core::limits::SWEEP_LIMIT.end();
    for state in [State::Done, State::Dead, State::Cancelled] {
        while queue.trim(state).await? == full {}
    }
    Ok(())
}
