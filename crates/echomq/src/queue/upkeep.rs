//! Upkeep: what every worker runs for everyone on its upkeep period (reap,
//! promote, trim, settle, fire schedules); callable by hand as well.

use super::Queue;
use crate::record::State;
use crate::schedule::Schedule;
use crate::transition::*;
use crate::Result;

impl Queue {
    /// Take expired leases back: to pending, or to dead at `max_attempts`.
    pub async fn reap(&self, max_attempts: u64) -> Result<Reaped> {
        let limit = *echomq_core::limits::SWEEP_LIMIT.end();
        self.run(&Reap { max_attempts, limit }).await
    }

    /// Move delayed jobs whose time has come to pending; how many moved.
    pub async fn promote(&self) -> Result<u64> {
        let limit = *echomq_core::limits::SWEEP_LIMIT.end();
        self.run(&Promote { limit }).await
    }

    /// Apply the queue's retention to its finished jobs in `state`, up to
    /// 1000 of them: how many were deleted. Every worker runs it as upkeep.
    pub async fn trim(&self, state: State) -> Result<u64> {
        let limit = *echomq_core::limits::SWEEP_LIMIT.end();
        self.run(&Trim { state, limit }).await
    }

    /// Settle the queue's open batches (see [`Settle`]): what every
    /// worker's upkeep runs.
    pub async fn settle(&self, limit: u64) -> Result<Settled> {
        self.run(&Settle { limit }).await
    }

    /// Fire the ticks of the queue's due schedules (up to 100 schedules a
    /// call), as each one's [`Missed`](crate::schedule::Missed) policy says;
    /// how many jobs were enqueued. Safe from any number of workers at once:
    /// each tick fires once. A worker runs this on its upkeep period.
    pub async fn fire_schedules(&self) -> Result<u64> {
        let due = self.run(&Schedules { due: true, limit: 100 }).await?;
        let mut enqueued = 0;
        for stored in due.schedules {
            let schedule = match Schedule::from_definition(&stored.name, &stored.definition) {
                Ok(schedule) => schedule,
                Err(err) => {
                    tracing::warn!(queue = self.name(), error = %err, "a schedule this host cannot read");
                    continue;
                }
            };
            for fire in schedule.plan(self.name(), stored.next, due.now) {
                match self.run(&fire).await? {
                    Fired::Enqueued => enqueued += 1,
                    Fired::MovedOn => {}
                    Fired::Stale => break,
                }
            }
        }
        Ok(enqueued)
    }
}
