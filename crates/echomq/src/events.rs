//! The queue's event log, read: every transition appends what it did to
//! `emq:{q}:events` in the same atomic step (PROTOCOL.md §7.5), and
//! [`QueueEvents`] follows it, resuming after the last entry it gave out.
//! [`Queue::wait`](crate::Queue::wait) is built on it.
//!
//! ```no_run
//! # async fn demo(queue: echomq::Queue) -> echomq::Result<()> {
//! let mut events = queue.events(echomq::EventsFrom::Now).await?;
//! loop {
//!     let event = events.next().await?;
//!     let job = event.job.as_ref().map_or("-", |id| id.as_str());
//!     println!("{} {job} {:?}", event.name, event.field("error"));
//! }
//! # }
//! ```

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::executor::{Executor, StreamEntry};
use crate::{JobId, Result};

/// How long one read of the log waits for an entry.
const READ_WAIT: Duration = Duration::from_secs(5);
/// How many entries one read takes.
const READ_COUNT: usize = 100;

/// One event of a queue's log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Its id in the log, `<ms>-<seq>`: [`QueueEvents::after`] resumes after it.
    pub id: String,
    /// What happened: `enqueued`, `active`, `progress`, `completed`,
    /// `failed`, `dead`, `deferred`, `released`, `promoted`, `cancelled`,
    /// `retried`, `paused` or `resumed` (PROTOCOL.md §7.5).
    pub name: String,
    /// The job it happened to; `None` for an event of the queue (`paused`, `resumed`).
    pub job: Option<JobId>,
    /// Its other fields, in order: `attempt`, `error`, `result_bytes`,
    /// `progress`, `state`, `delay`, `pause`, `schedule`, as the event has them.
    pub fields: Vec<(String, Vec<u8>)>,
}

impl Event {
    /// The field `name` as text, if the event has it.
    pub fn field(&self, name: &str) -> Option<std::borrow::Cow<'_, str>> {
        self.fields.iter().find(|(field, _)| field == name).map(|(_, value)| String::from_utf8_lossy(value))
    }

    /// When it happened, by the server's clock (the ms of its id).
    pub fn time(&self) -> SystemTime {
        let ms = self.id.split('-').next().and_then(|ms| ms.parse().ok()).unwrap_or(0);
        UNIX_EPOCH + Duration::from_millis(ms)
    }

    /// Whether it ends its job's run for good: `completed`, `dead` or `cancelled`.
    pub fn is_final(&self) -> bool {
        matches!(self.name.as_str(), "completed" | "dead" | "cancelled")
    }

    fn from_entry(entry: StreamEntry) -> Event {
        let (mut name, mut job, mut fields) = (String::new(), None, Vec::new());
        for (field, value) in entry.fields {
            match field.as_str() {
                "event" if name.is_empty() => name = String::from_utf8_lossy(&value).into_owned(),
                "id" if job.is_none() => job = JobId::try_from(value.as_slice()).ok(),
                _ => fields.push((field, value)),
            }
        }
        Event { id: entry.id, name, job, fields }
    }
}

/// A reader of one queue's event log: each [`next`](QueueEvents::next) gives
/// the entry after the last one given, waiting for it with a blocking read
/// (`XREAD … BLOCK` on a connection of its own; the embedded executor wakes
/// on its own writes). Entries trimmed before they were read are skipped:
/// the log keeps about the queue's `events` setting (10,000 by default).
pub struct QueueEvents {
    via: Arc<dyn Executor>,
    key: String,
    after: String,
    buffered: VecDeque<Event>,
}

impl std::fmt::Debug for QueueEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueEvents")
            .field("key", &self.key)
            .field("after", &self.after)
            .finish_non_exhaustive()
    }
}

impl QueueEvents {
    /// A reader of the log at `key`, from after the entry `after` (`0-0`:
    /// the oldest kept).
    pub fn new(via: Arc<dyn Executor>, key: String, after: impl Into<String>) -> QueueEvents {
        QueueEvents { via, key, after: after.into(), buffered: VecDeque::new() }
    }

    /// The id of the last entry given out (or the starting point): a new
    /// reader made with it resumes where this one stopped.
    pub fn after(&self) -> &str {
        &self.after
    }

    /// The next event, waiting for it as long as it takes.
    pub async fn next(&mut self) -> Result<Event> {
        loop {
            if let Some(event) = self.next_within(READ_WAIT).await? {
                return Ok(event);
            }
        }
    }

    /// The next event, or `None` when none came within `wait`.
    pub async fn next_within(&mut self, wait: Duration) -> Result<Option<Event>> {
        if self.buffered.is_empty() {
            let entries = self.via.read_stream(&self.key, &self.after, READ_COUNT, wait).await?;
            self.buffered.extend(entries.into_iter().map(Event::from_entry));
        }
        let event = self.buffered.pop_front();
        if let Some(event) = &event {
            self.after.clone_from(&event.id);
        }
        Ok(event)
    }
}
