//! A queue's schedules, through [`Queue::schedules`]: added, listed,
//! triggered, paused, resumed and removed. The workers of the queue fire
//! their ticks ([`Upkeep::fire_schedules`](super::Upkeep::fire_schedules)).

use super::Queue;
use crate::id::JobId;
use crate::schedule::{Schedule, Scheduled};
use crate::transition::{Stored, Unschedule};
use crate::Result;

/// A queue's schedules ([`Queue::schedules`]), kept in Redis beside the
/// queue: the calls of `emq schedule` and the dashboard's schedules, one
/// transition each but [`trigger`](Schedules::trigger), [`pause`](Schedules::pause)
/// and [`resume`](Schedules::resume), which read the schedule first.
///
/// ```no_run
/// # async fn demo(q: &echomq::Queue) -> echomq::Result<()> {
/// use std::time::Duration;
/// let beat = echomq::Schedule::every("beat", Duration::from_secs(60), "ping")?;
/// let next = q.schedules().add(&beat).await?.next; // server ms of its first tick
/// q.schedules().pause("beat").await?;
/// q.schedules().remove("beat").await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Schedules<'q> {
    queue: &'q Queue,
}

impl<'q> Schedules<'q> {
    pub(super) fn of(queue: &'q Queue) -> Schedules<'q> {
        Schedules { queue }
    }

    /// Add `schedule` to the queue, or replace the one of its name; its first
    /// tick is the first after the server's now. The workers of the queue
    /// fire its ticks, each once.
    ///
    /// # Errors
    /// [`ErrorKind::Argument`](crate::ErrorKind::Argument), nothing stored,
    /// for a schedule that never ticks after the server's now;
    /// [`ErrorKind::TooLarge`](crate::ErrorKind::TooLarge) for a definition over
    /// its limit; a key of the wrong type, a failure of the connection or the server.
    pub async fn add(&self, schedule: &Schedule) -> Result<Scheduled> {
        let now = self.queue.run(&crate::transition::Schedules { due: false, limit: 1 }).await?.now;
        let next = schedule
            .next_after(now)
            .filter(|next| echomq_core::limits::AT_MS.contains(next))
            .ok_or_else(|| {
                crate::Error::new(
                    crate::ErrorKind::Argument,
                    format!("schedule {:?} never ticks", schedule.name),
                )
            })?;
        let call = crate::transition::Schedule {
            name: schedule.name.clone(),
            definition: schedule.definition(),
            next,
        };
        self.queue.run(&call).await?;
        self.queue.register(false).await;
        Ok(Scheduled { schedule: schedule.clone(), next })
    }

    /// The queue's schedules (up to 1000), by next tick.
    ///
    /// # Errors
    /// [`ErrorKind::Record`](crate::ErrorKind::Record) for a stored schedule
    /// this host cannot read; a key of the wrong type, a failure of the
    /// connection or the server.
    pub async fn list(&self) -> Result<Vec<Scheduled>> {
        self.stored().await?.into_iter().map(read_stored).collect()
    }

    /// Remove the schedule `name`; `false` when there was none. Jobs it fired stay.
    ///
    /// # Errors
    /// [`ErrorKind::Argument`](crate::ErrorKind::Argument) for a name that
    /// is empty or over 200 bytes; a key of the wrong type, a failure of the
    /// connection or the server.
    pub async fn remove(&self, name: &str) -> Result<bool> {
        self.queue.run(&Unschedule { name: name.to_owned() }).await
    }

    /// Enqueue the job of schedule `name` now, outside its ticks: a job of
    /// the schedule's payload, at priority 0, due now, under a new id (not
    /// a tick id, so no tick's job is taken for it and a tick still fires
    /// its own). The schedule's next tick does not move. `None`, nothing
    /// enqueued, when the queue has no schedule `name` among the first 1000
    /// by next tick (those [`list`](Schedules::list) gives).
    ///
    /// # Errors
    /// [`ErrorKind::Argument`](crate::ErrorKind::Argument), nothing
    /// enqueued, for a name that is empty, over 200 bytes or holds LF;
    /// [`ErrorKind::Record`](crate::ErrorKind::Record) when the schedule's
    /// stored definition does not read; as [`Queue::enqueue`].
    pub async fn trigger(&self, name: &str) -> Result<Option<JobId>> {
        let Some(stored) = self.named(name).await? else { return Ok(None) };
        self.queue.enqueue(stored.schedule.payload).await.map(Some)
    }

    /// Pause schedule `name`: its due ticks fire no job, they only move on,
    /// until [`resume`](Schedules::resume). The schedule as it is now; one
    /// paused already is left as it is. `None`, nothing written, when the
    /// queue has no schedule `name` among the first 1000 by next tick (those
    /// [`list`](Schedules::list) gives). A host that does not know pausing
    /// (before protocol 1.4) leaves a paused schedule alone, so it stays
    /// paused.
    ///
    /// # Errors
    /// [`ErrorKind::Argument`](crate::ErrorKind::Argument), nothing
    /// written, for a name that is empty, over 200 bytes or holds LF;
    /// [`ErrorKind::Record`](crate::ErrorKind::Record) when the schedule's
    /// stored definition does not read; as [`add`](Schedules::add).
    pub async fn pause(&self, name: &str) -> Result<Option<Scheduled>> {
        self.set_paused(name, true).await
    }

    /// Resume paused schedule `name`: its definition is written again
    /// ([`add`](Schedules::add)), so its ticks start again from the first
    /// after the server's now, and it fires no tick missed while it was
    /// paused, whatever its [`Missed`](crate::Missed) policy. One not paused
    /// is left as it is, its next tick too; `None` as for
    /// [`pause`](Schedules::pause). A remove of the same schedule that lands
    /// between this read and its write is undone (SCHEDULE replaces
    /// whatever is there).
    ///
    /// # Errors
    /// As [`pause`](Schedules::pause).
    pub async fn resume(&self, name: &str) -> Result<Option<Scheduled>> {
        self.set_paused(name, false).await
    }

    /// Pause or resume schedule `name`, as [`pause`](Schedules::pause) and
    /// [`resume`](Schedules::resume) say.
    async fn set_paused(&self, name: &str, paused: bool) -> Result<Option<Scheduled>> {
        let Some(stored) = self.named(name).await? else { return Ok(None) };
        if stored.schedule.paused == paused {
            return Ok(Some(stored));
        }
        self.add(&stored.schedule.paused(paused)).await.map(Some)
    }

    /// Schedule `name` as stored, read, if it is among the first 1000 by
    /// next tick; the name is checked before anything is sent.
    async fn named(&self, name: &str) -> Result<Option<Scheduled>> {
        crate::schedule::check_name(name)?;
        let stored = self.stored().await?;
        stored.into_iter().find(|stored| stored.name == name).map(read_stored).transpose()
    }

    /// The first 1000 schedules by next tick, as SCHEDULES hands them out.
    async fn stored(&self) -> Result<Vec<Stored>> {
        let limit = *echomq_core::limits::SWEEP_LIMIT.end();
        Ok(self.queue.run(&crate::transition::Schedules { due: false, limit }).await?.schedules)
    }
}

/// A schedule as SCHEDULES handed it out, its definition read.
fn read_stored(stored: Stored) -> Result<Scheduled> {
    let schedule = Schedule::from_definition(&stored.name, &stored.definition)?;
    Ok(Scheduled { schedule, next: stored.next })
}
