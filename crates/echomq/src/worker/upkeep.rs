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

pub(super) async fn run(queue: Queue, shared: Arc<Shared>) {
    let mut tick = tokio::time::interval(shared.options.upkeep);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let full = *echomq_core::limits::SWEEP_LIMIT.end();
    let mut failing_since: Option<std::time::Instant> = None;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = shared.stopping.cancelled() => return,
        }
        loop {
            let promoted = queue.promote().await;
            let reaped = queue.reap(shared.options.retry.max_attempts).await;
            if let (Ok(_), Ok(_), Some(since)) = (&promoted, &reaped, failing_since) {
                tracing::info!(queue = queue.name(), "upkeep works again, after {:.1?}", since.elapsed());
                failing_since = None;
            }
            match (&promoted, &reaped) {
                (Ok(promoted), Ok(reaped)) if *promoted < full && reaped.requeued + reaped.dead < full => {
                    break
                }
                (Ok(_), Ok(_)) => continue,
                _ => {
                    let err = promoted.err().or(reaped.err()).map(|e| e.to_string()).unwrap_or_default();
                    // Said once, not at every tick.
                    if failing_since.is_none() {
                        tracing::warn!(queue = queue.name(), error = %err, "upkeep failed; trying again each tick");
                        failing_since = Some(std::time::Instant::now());
                    } else {
                        tracing::debug!(queue = queue.name(), error = %err, "upkeep failed again");
                    }
                    break;
                }
            }
        }
        trim(&queue).await;
        settle(&queue).await;
        if let Err(err) = queue.fire_schedules().await {
            tracing::warn!(queue = queue.name(), error = %err, "firing schedules failed; trying again later");
        }
    }
}

/// Batches: call back each one whose jobs all finished, looking at up to a
/// thousand jobs a call, again at once while a call looks at that many.
async fn settle(queue: &Queue) {
    let full = *echomq_core::limits::SWEEP_LIMIT.end();
    loop {
        match queue.settle(full).await {
            Ok(settled) if settled.looked == full => continue,
            Ok(_) => break,
            Err(err) => {
                tracing::debug!(queue = queue.name(), error = %err, "settling batches failed");
                return;
            }
        }
    }
}

/// Bounded retention: each finished set trimmed to the queue's retention,
/// again at once while a call deletes a full LIMIT (as REAP and PROMOTE go),
/// so trimming keeps up with any throughput: a cap of a few calls a tick let
/// a native queue finishing 25,000 jobs/s outgrow its bound (`echomq-soak`).
async fn trim(queue: &Queue) {
    let full = *echomq_core::limits::SWEEP_LIMIT.end();
    for state in [State::Done, State::Dead, State::Cancelled] {
        loop {
            match queue.trim(state).await {
                Ok(deleted) if deleted == full => continue,
                Ok(_) => break,
                Err(err) => {
                    tracing::debug!(queue = queue.name(), error = %err, "trimming {state} jobs failed");
                    return;
                }
            }
        }
    }
}
