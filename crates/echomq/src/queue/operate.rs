//! Operating: pausing and limiting the queue, keeping and deleting finished
//! jobs, cancelling and retrying one, draining or deleting the whole queue,
//! counting and inspecting jobs, and the door to its schedules.

use std::time::Duration;

use super::{Queue, Schedules, SWEEP_STEP};
use crate::id::JobId;
use crate::record::State;
use crate::transition::*;
use crate::Result;

/// Which jobs [`Queue::drain`] deletes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Drain {
    /// Those waiting to run: pending and delayed, and flows' parents
    /// waiting for their children (each tells its own parent it is gone).
    Waiting,
    /// Those, and the running ones, whose holders are fenced.
    WithActive,
}

/// Whether [`Queue::delete`] deletes a queue with running jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Delete {
    /// Only when no job is active: refused otherwise, nothing deleted.
    IfIdle,
    /// Whatever runs: its holders are fenced.
    Force,
}

impl Queue {
    /// Pause the queue: every claim hands out nothing until [`resume`](Queue::resume),
    /// for every worker of every process. Enqueue, ack and the rest go on.
    ///
    /// # Errors
    /// As [`configure`](Queue::configure).
    pub async fn pause(&self) -> Result<Settings> {
        self.configure(Config { paused: Some(true), ..Config::default() }).await
    }

    /// Resume a paused queue; claims waiting for work wake at once.
    ///
    /// # Errors
    /// As [`configure`](Queue::configure).
    pub async fn resume(&self) -> Result<Settings> {
        self.configure(Config { paused: Some(false), ..Config::default() }).await
    }

    /// The queue's settings.
    ///
    /// # Errors
    /// As [`configure`](Queue::configure).
    pub async fn settings(&self) -> Result<Settings> {
        self.configure(Config::default()).await
    }

    /// Change the settings `config` names, in one transition; the settings after.
    ///
    /// # Errors
    /// [`ErrorKind::Argument`](crate::ErrorKind::Argument), nothing changed,
    /// for a setting outside its limits; a key of the wrong type, malformed
    /// stored state, a failure of the connection or the server.
    pub async fn configure(&self, config: Config) -> Result<Settings> {
        self.run(&config).await
    }

    /// Delete every finished job in `state` that finished at least `age`
    /// ago, in calls of [`SWEEP_STEP`] jobs: how many. The jobs there when
    /// it begins: under a steady stream of new ones it still ends.
    ///
    /// # Errors
    /// [`ErrorKind::Argument`](crate::ErrorKind::Argument) for a state that
    /// is not finished; a key of the wrong type, a failure of the
    /// connection or the server (the calls before it stand).
    pub async fn purge(&self, state: State, age: Duration) -> Result<u64> {
        let there = self.stats().await?.of(state);
        self.sweep(there, |limit| Purge { state, age, limit }).await
    }

    /// Delete these jobs, those of them in `state`'s set (any of the six),
    /// with everything kept beside them, in calls of 1000 (REMOVE): how
    /// many were deleted. An id in another state is left alone; a removed
    /// active job's worker loses its lease.
    ///
    /// # Errors
    /// A key or a record of the wrong type, a failure of the connection or
    /// the server (the calls before it stand).
    pub async fn remove(&self, state: State, ids: &[JobId]) -> Result<u64> {
        let mut removed = 0;
        for chunk in ids.chunks(*echomq_core::limits::SWEEP_LIMIT.end() as usize) {
            removed += self.run(&Remove { state, ids: chunk.to_vec() }).await?;
        }
        Ok(removed)
    }

    /// Calls of `call(SWEEP_STEP)` while each moves a full step, at most as
    /// many as `there` jobs take and one more (a set a producer keeps
    /// filling would keep a sweep going for ever): how many it moved.
    async fn sweep<T: Transition<Output = u64>>(&self, there: u64, call: impl Fn(u64) -> T) -> Result<u64> {
        let mut total = 0;
        for _ in 0..=there / SWEEP_STEP {
            let moved = self.run(&call(SWEEP_STEP)).await?;
            total += moved;
            if moved < SWEEP_STEP {
                break;
            }
        }
        Ok(total)
    }

    /// Delete the queue's waiting jobs, pending and delayed (and, with
    /// [`Drain::WithActive`], its running ones, whose holders are fenced):
    /// how many. Calls of DRAIN of [`SWEEP_STEP`] jobs, for the jobs there
    /// when it begins (new ones may stay: a producer that goes on is not
    /// outrun for ever).
    ///
    /// # Errors
    /// A key of the wrong type, a failure of the connection or the server
    /// (the calls before it stand).
    pub async fn drain(&self, which: Drain) -> Result<u64> {
        let states: &[State] = match which {
            Drain::Waiting => &[State::Pending, State::Delayed, State::Waiting],
            Drain::WithActive => &[State::Pending, State::Delayed, State::Active, State::Waiting],
        };
        let stats = self.stats().await?;
        let mut total = 0;
        for &state in states {
            total += self.sweep(stats.of(state), |limit| crate::transition::Drain { state, limit }).await?;
        }
        Ok(total)
    }

    /// Delete the whole queue: every job and every key it owns (settings,
    /// schedules, dedup keys). How many jobs were deleted. A job enqueued
    /// while this runs is deleted with the rest.
    ///
    /// # Errors
    /// [`ErrorKind::State`](crate::ErrorKind::State), nothing deleted, while
    /// jobs are active and `how` is [`Delete::IfIdle`] (with
    /// [`Delete::Force`] they go too, and their holders are fenced); a job
    /// claimed while it runs stops it with the same, which then says how
    /// many jobs it had deleted; a failure of the connection or the server.
    pub async fn delete(&self, how: Delete) -> Result<u64> {
        let refuse_active = || async {
            let active = self.stats().await?.active;
            if active > 0 && how == Delete::IfIdle {
                return Err(crate::Error::new(
                    crate::ErrorKind::State,
                    format!(
                        "{active} jobs of {} are active: let them finish, or force their deletion",
                        self.name()
                    ),
                ));
            }
            Ok(())
        };
        refuse_active().await?;
        let mut total = 0;
        // Jobs may arrive meanwhile; a few rounds see the queue empty.
        for _ in 0..5 {
            let drain = if how == Delete::Force { Drain::WithActive } else { Drain::Waiting };
            total += self.drain(drain).await?;
            for state in [State::Done, State::Dead, State::Cancelled] {
                total += self.purge(state, Duration::ZERO).await?;
            }
            // What its children owe their parents goes first (OBLITERATE
            // refuses while a notice is left).
            let mut after = "0-0".to_owned();
            loop {
                let (read, last) = super::relay(self, &after).await?;
                if read < super::RELAY_STEP as u64 {
                    break;
                }
                after = last;
            }
            match self.run(&Obliterate).await {
                Ok(_) => {
                    self.unregister().await?;
                    return Ok(total);
                }
                // A claim that came meanwhile, or new jobs: see which.
                Err(crate::Error { kind: crate::ErrorKind::State, .. }) => refuse_active().await.map_err(|err| {
                    if err.kind != crate::ErrorKind::State {
                        return err;
                    }
                    let why = err.text().to_owned();
                    err.saying(format!(
                        "{why}; {total} of its jobs were deleted before one was claimed, and its keys are kept"
                    ))
                })?,
                Err(err) => return Err(err),
            }
        }
        Err(crate::Error::new(
            crate::ErrorKind::State,
            format!("{} still gets jobs while it is deleted: stop its producers", self.name()),
        ))
    }

    /// Cancel a job; `false` when it was cancelled already. A flow's
    /// parent takes its open children with it (each cancelled in its
    /// queue, a nested parent's own too): their ends would change nothing.
    ///
    /// # Errors
    /// [`ErrorKind::NoJob`](crate::ErrorKind::NoJob) when there is no such
    /// job; [`ErrorKind::State`](crate::ErrorKind::State) for a done job; a key
    /// of the wrong type, malformed stored state, a failure of the connection or
    /// the server (the parent is cancelled then, and the children before
    /// the failure: cancelling it again cancels the rest).
    pub async fn cancel(&self, id: &JobId) -> Result<bool> {
        let cancelled = self.run(&Cancel { id: id.clone() }).await?;
        super::relay::cancel_children(self, id).await?;
        Ok(cancelled)
    }

    /// Send a dead job back to pending; a flow's parent whose children have
    /// not all ended goes back to waiting for them. A parent with a child it
    /// heard died that was retried since and has not told it its end is
    /// refused: RETRY counts a child recorded dead as ended, so retried now
    /// the parent would run before that child's second end and read it dead
    /// (PROTOCOL.md §7, RETRY; [`Flows::running_again`](crate::Flows::running_again)).
    /// [`Flows::retry_now`](crate::Flows::retry_now) sends it all the same.
    /// A read of the job's children first, and one a child it heard died.
    ///
    /// # Errors
    /// [`ErrorKind::State`](crate::ErrorKind::State) for such a parent,
    /// naming those children, nothing changed; as [`Flows::retry_now`](crate::Flows::retry_now).
    pub async fn retry(&self, id: &JobId) -> Result<()> {
        let flows = crate::Flows::of(self);
        if let Some(children) = flows.children(id).await? {
            let again = flows.running_again(&children).await?;
            // Only a dead parent: RETRY refuses any other as it is.
            let dead =
                || async { Ok::<_, crate::Error>(self.inspect(id).await?.map(|job| job.record.state)) };
            if !again.is_empty() && dead().await? == Some(State::Dead) {
                let named: Vec<String> =
                    again.iter().map(|(child, state)| format!("{child} {state}")).collect();
                return Err(crate::Error::new(
                    crate::ErrorKind::State,
                    format!(
                        "{id} is a flow's parent whose children that died were retried and have not told it their \
                         end ({}): retried now it would run first and read them dead; retry it once they have",
                        named.join(", ")
                    ),
                ));
            }
        }
        flows.retry_now(id).await
    }

    /// A job's record, last error and last progress; `None` when there is no such job.
    ///
    /// # Errors
    /// [`ErrorKind::Record`](crate::ErrorKind::Record) for a record that
    /// breaks the protocol; a key of the wrong type, a failure of the connection
    /// or the server.
    pub async fn inspect(&self, id: &JobId) -> Result<Option<Inspection>> {
        self.run(&Inspect { id: id.clone() }).await
    }

    /// How many jobs the queue holds in each state.
    ///
    /// # Errors
    /// A key of the wrong type, a failure of the connection or the server.
    pub async fn stats(&self) -> Result<StatsReply> {
        self.run(&Stats).await
    }

    /// The queue's counters: jobs enqueued, completed, failed and dead, in
    /// all and per minute over the last hour ([`Span::Minutes`]) or per
    /// hour over the last week ([`Span::Hours`]). Kept by the server inside
    /// the transitions, so every reader sees the same figures whatever the
    /// retention trims (protocol 1.4; speakers before it do not count).
    ///
    /// # Errors
    /// A key of the wrong type, a counter that is not a number, a failure
    /// of the connection or the server.
    pub async fn counts(&self, span: Span) -> Result<CountsReply> {
        self.run(&Counts { span }).await
    }

    /// The queue's schedules: add, list, trigger, pause, resume and
    /// remove them ([`Schedules`]).
    #[must_use]
    pub fn schedules(&self) -> Schedules<'_> {
        Schedules::of(self)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// Sweeps in steps go on past a step: every job, in a few calls.
    #[tokio::test]
    async fn drain_and_purge_all_go_past_a_step() {
        let queue = Queue::new(Arc::new(crate::Embedded::new()), "sweeps").unwrap();
        let jobs = 2 * SWEEP_STEP + SWEEP_STEP / 2;
        let payloads = || (0..jobs).map(|n| n.to_string());
        queue.enqueue_batch(payloads()).await.unwrap();
        assert_eq!(queue.drain(Drain::Waiting).await.unwrap(), jobs);
        queue.enqueue_batch(payloads()).await.unwrap();
        for job in queue.claim_many(Duration::from_secs(60), jobs, None).await.unwrap().jobs {
            job.ack().await.unwrap();
        }
        assert_eq!(queue.purge(State::Done, Duration::ZERO).await.unwrap(), jobs);
        assert_eq!(queue.stats().await.unwrap(), crate::transition::StatsReply::default());
    }
}
