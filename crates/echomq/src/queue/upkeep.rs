//! Upkeep: what every worker runs for everyone on its upkeep period (reap,
//! promote, trim, settle, fire schedules, and a bounded purge); callable by
//! hand as well, through [`Upkeep::of`] a queue.

use std::time::Duration;

use super::Queue;
use crate::record::State;
use crate::schedule::Schedule;
use crate::transition::*;
use crate::Result;

/// A queue's upkeep calls ([`Upkeep::of`] the queue): each one bounded call, safe
/// from any number of workers at once. Each fails as any transition does:
/// a key of the wrong type, malformed stored state, a failure of the
/// connection or the server.
#[derive(Clone, Copy, Debug)]
pub struct Upkeep<'q> {
    queue: &'q Queue,
}

impl<'q> Upkeep<'q> {
    /// The upkeep of `queue`, for hosts and tools that run it themselves
    /// (a [`Worker`](crate::worker::Worker) runs it on its own).
    #[must_use]
    pub fn of(queue: &'q Queue) -> Upkeep<'q> {
        Upkeep { queue }
    }

    /// Run one transition on the queue.
    async fn run<T: Transition>(&self, transition: &T) -> Result<T::Output> {
        self.queue.run(transition).await
    }

    /// The queue's name.
    fn name(&self) -> &str {
        self.queue.name()
    }

    /// Take expired leases back: to pending, or to dead at `max_attempts`.
    ///
    /// # Errors
    /// As any transition (above).
    pub async fn reap(&self, max_attempts: u64) -> Result<Reaped> {
        let limit = *echomq_core::limits::SWEEP_LIMIT.end();
        self.run(&Reap { max_attempts, limit }).await
    }

    /// Move delayed jobs whose time has come to pending; how many moved.
    ///
    /// # Errors
    /// As any transition (above).
    pub async fn promote(&self) -> Result<u64> {
        let limit = *echomq_core::limits::SWEEP_LIMIT.end();
        self.run(&Promote { limit }).await
    }

    /// Apply the queue's retention to its finished jobs in `state`, up to
    /// 1000 of them: how many were deleted. Every worker runs it as upkeep.
    ///
    /// # Errors
    /// As any transition; [`ErrorKind::Argument`](crate::ErrorKind::Argument)
    /// for a state that is not finished.
    pub async fn trim(&self, state: State) -> Result<u64> {
        let limit = *echomq_core::limits::SWEEP_LIMIT.end();
        self.run(&Trim { state, limit }).await
    }

    /// Settle the queue's open batches (see [`Settle`]): what every
    /// worker's upkeep runs.
    ///
    /// # Errors
    /// As any transition (above).
    pub async fn settle(&self, limit: u64) -> Result<Settled> {
        self.run(&Settle { limit }).await
    }

    /// Carry up to 100 of the queue's notices (what its flows' children
    /// tell their parents, protocol 1.6) to their parents: how many were
    /// read. A worker runs this on its upkeep period; a notice whose
    /// parent could not be told stays, for the next call.
    ///
    /// # Errors
    /// A key of the wrong type, a failure of the connection or the server
    /// reading or deleting notices.
    pub async fn relay(&self) -> Result<u64> {
        super::relay(self.queue, "0-0").await.map(|(read, _)| read)
    }

    /// Look at up to 10 of the queue's flows' parents that have waited
    /// longer than `grace` (since they began to wait, or were last looked
    /// at): a child that never came to be (its producer died between the
    /// parent and it) is resolved `gone`, one that ended unheard as it
    /// ended. How many children it resolved. A worker runs this on its
    /// upkeep period with [`SWEEP_GRACE`](crate::SWEEP_GRACE).
    ///
    /// # Errors
    /// A key of the wrong type, a failure of the connection or the server.
    pub async fn sweep_flows(&self, grace: Duration) -> Result<u64> {
        super::sweep(self.queue, grace).await
    }

    /// Fire the ticks of the queue's due schedules (up to 100 schedules a
    /// call), as each one's [`Missed`](crate::schedule::Missed) policy says;
    /// how many jobs were enqueued. Safe from any number of workers at once:
    /// each tick fires once. A worker runs this on its upkeep period.
    ///
    /// # Errors
    /// As any transition (above); a schedule this host cannot read is
    /// skipped and logged, not an error.
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

    /// Delete up to 1000 finished jobs in `state` that finished at least
    /// `age` ago: how many. [`Queue::purge`] deletes them all, in steps.
    ///
    /// # Errors
    /// As any transition; [`ErrorKind::Argument`](crate::ErrorKind::Argument)
    /// for a state that is not finished.
    pub async fn purge(&self, state: State, age: Duration) -> Result<u64> {
        let limit = *echomq_core::limits::SWEEP_LIMIT.end();
        self.run(&Purge { state, age, limit }).await
    }
}
