//! Reading: a job's result, the queue's event log, and waiting for a job to finish.

use std::time::Duration;

use super::Queue;
use crate::events::{QueueEvents, StreamId};
use crate::executor::Command;
use crate::id::JobId;
use crate::record::State;
use crate::Result;

/// How a job ended, as [`Queue::wait`] saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Finished {
    /// Done, with its result if its handler returned one (and it was not
    /// trimmed or purged since).
    Done(Option<Vec<u8>>),
    /// Dead: out of attempts, with its last error.
    Dead(Option<String>),
    /// Cancelled by hand.
    Cancelled,
}

/// Where a reader of the event log ([`Queue::events`]) starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventsFrom {
    /// The events of transitions after the call.
    Now,
    /// The oldest entry the log keeps.
    Oldest,
    /// After the entry of this id (an [`Event`](crate::Event)'s `id` or
    /// [`QueueEvents::after`]), to resume where a reader stopped.
    After(StreamId),
}

impl Queue {
    /// What the job's handler returned, kept by its ACK: `None` when the job
    /// is not done, finished with no result, or is gone (trimmed, purged).
    ///
    /// # Errors
    /// As [`inspect`](Queue::inspect).
    pub async fn result(&self, id: &JobId) -> Result<Option<Vec<u8>>> {
        Ok(self.inspect(id).await?.and_then(|job| job.result))
    }

    /// A reader of the queue's event log (see [`QueueEvents`]), from
    /// where `from` says.
    ///
    /// # Errors
    /// With [`EventsFrom::Now`], which reads the log's last id: a key of the
    /// wrong type, a failure of the connection or the server.
    pub async fn events(&self, from: EventsFrom) -> Result<QueueEvents> {
        let key = self.keys.events();
        let after = match from {
            EventsFrom::Now => match self.via.plain().one(Command::StreamLast(key.clone())).await?.text()? {
                Some(last) => last.parse()?,
                None => StreamId::ZERO,
            },
            EventsFrom::Oldest => StreamId::ZERO,
            EventsFrom::After(id) => id,
        };
        Ok(QueueEvents::new(self.via.clone(), key, after))
    }

    /// Wait until the job has finished (done, dead or cancelled), as long as
    /// `timeout`; `None` when it had not by then. It follows the queue's
    /// event log, so it does not poll; on a queue whose log is off
    /// (`events` 0) it looks at the job every 100 ms to 1 s instead.
    ///
    /// # Errors
    /// [`ErrorKind::NoJob`](crate::ErrorKind::NoJob) when there is no such
    /// job (or it was deleted while waited for); as [`inspect`](Queue::inspect)
    /// and [`events`](Queue::events) otherwise.
    pub async fn wait(&self, id: &JobId, timeout: Duration) -> Result<Option<Finished>> {
        let deadline = tokio::time::Instant::now() + timeout;
        // Follow the log from before the first look, so that a finish
        // between the look and the first read is still seen.
        let mut events = self.events(EventsFrom::Now).await?;
        // A user who may not run CONFIG (a read-only monitor) follows the
        // log as if it were on: at worst its re-reads of the job find the end.
        let logged = self.settings().await.map_or(true, |settings| settings.events != crate::EventLog::Off);
        let mut nap = Duration::from_millis(100);
        loop {
            if let Some(finished) = self.finished(id).await? {
                return Ok(Some(finished));
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            if !logged {
                tokio::time::sleep(nap.min(left)).await;
                nap = (nap * 2).min(Duration::from_secs(1));
                continue;
            }
            // Until this job's final event, or a while: then look again, in
            // case its event was trimmed away before it was read.
            let until = tokio::time::Instant::now() + left.min(Duration::from_secs(5));
            while let Some(event) =
                events.next_within(until.saturating_duration_since(tokio::time::Instant::now())).await?
            {
                if event.is_final() && event.job.as_ref() == Some(id) {
                    break;
                }
            }
        }
    }

    /// How the job ended, if it has; [`ErrorKind::NoJob`](crate::ErrorKind::NoJob) when there is no such job.
    async fn finished(&self, id: &JobId) -> Result<Option<Finished>> {
        let Some(job) = self.inspect(id).await? else {
            return Err(crate::Error::new(
                crate::ErrorKind::NoJob,
                format!("no job {id} in queue {}", self.name()),
            ));
        };
        Ok(match job.record.state {
            State::Done => Some(Finished::Done(job.result)),
            State::Dead => Some(Finished::Dead(job.error)),
            State::Cancelled => Some(Finished::Cancelled),
            State::Pending | State::Active | State::Delayed | State::Waiting => None,
        })
    }
}
