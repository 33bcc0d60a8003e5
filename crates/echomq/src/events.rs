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
//!     println!("{} {job} {:?}", event.kind, event.field("error"));
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

/// An entry's id in a stream, `<ms>-<seq>`: the server's ms when it was
/// written, and its place among that ms's entries. Ids order the log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    /// The server's clock when the entry was written, in ms since the epoch.
    pub ms: u64,
    /// Its place among the entries of that ms.
    pub seq: u64,
}

impl StreamId {
    /// Before every entry: a reader after it starts at the oldest kept.
    pub const ZERO: StreamId = StreamId { ms: 0, seq: 0 };
}

impl std::fmt::Display for StreamId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

impl std::str::FromStr for StreamId {
    type Err = crate::Error;

    /// `<ms>-<seq>`, both decimal (`<ms>` alone is `<ms>-0`), as Redis writes them.
    fn from_str(text: &str) -> Result<StreamId> {
        let bad = || crate::Error::new(crate::ErrorKind::Argument, format!("{text:?} is not a stream id"));
        let (ms, seq) = text.split_once('-').unwrap_or((text, "0"));
        let number = |part: &str| -> Result<u64> {
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            part.parse().map_err(|_| bad())
        };
        Ok(StreamId { ms: number(ms)?, seq: number(seq)? })
    }
}

/// What an event says happened (PROTOCOL.md §7.5).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventKind {
    /// A job was enqueued (pending or delayed), by a producer, a schedule or a batch's callback.
    Enqueued,
    /// A job was claimed; `attempt` is its token.
    Active,
    /// A job's holder reported progress.
    Progress,
    /// A job was acked.
    Completed,
    /// A job failed and will be retried.
    Failed,
    /// A job died: out of attempts.
    Dead,
    /// A job was deferred without spending its attempt.
    Deferred,
    /// A job was given back to pending.
    Released,
    /// A delayed job became pending.
    Promoted,
    /// A job was cancelled.
    Cancelled,
    /// A dead job was sent back to pending.
    Retried,
    /// The queue was paused.
    Paused,
    /// The queue was resumed.
    Resumed,
    /// A flow's parent heard how one of its children ended (protocol 1.6):
    /// the event's `child`, `outcome`, `open` and `state` fields say what.
    Resolved,
    /// A running job named children and waits for them (protocol 1.6,
    /// ADOPT): the event's `children` (added) and `open` fields say how many.
    Adopted,
    /// An event this host does not know (a later minor's): its name.
    Other(String),
}

impl EventKind {
    /// Its name in the log.
    #[must_use]
    pub fn as_str(&self) -> &str {
        match self {
            EventKind::Enqueued => "enqueued",
            EventKind::Active => "active",
            EventKind::Progress => "progress",
            EventKind::Completed => "completed",
            EventKind::Failed => "failed",
            EventKind::Dead => "dead",
            EventKind::Deferred => "deferred",
            EventKind::Released => "released",
            EventKind::Promoted => "promoted",
            EventKind::Cancelled => "cancelled",
            EventKind::Retried => "retried",
            EventKind::Paused => "paused",
            EventKind::Resumed => "resumed",
            EventKind::Resolved => "resolved",
            EventKind::Adopted => "adopted",
            EventKind::Other(name) => name,
        }
    }

    /// The kind the log's name says.
    #[must_use]
    pub fn from_name(name: &str) -> EventKind {
        const KNOWN: [EventKind; 15] = [
            EventKind::Enqueued,
            EventKind::Active,
            EventKind::Progress,
            EventKind::Completed,
            EventKind::Failed,
            EventKind::Dead,
            EventKind::Deferred,
            EventKind::Released,
            EventKind::Promoted,
            EventKind::Cancelled,
            EventKind::Retried,
            EventKind::Paused,
            EventKind::Resumed,
            EventKind::Resolved,
            EventKind::Adopted,
        ];
        KNOWN
            .into_iter()
            .find(|kind| kind.as_str() == name)
            .unwrap_or_else(|| EventKind::Other(name.to_owned()))
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One event of a queue's log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Its id in the log: [`QueueEvents::after`] resumes after it.
    pub id: StreamId,
    /// What happened.
    pub kind: EventKind,
    /// The job it happened to; `None` for an event of the queue (`paused`, `resumed`).
    pub job: Option<JobId>,
    /// Its other fields, in order: `attempt`, `error`, `result_bytes`,
    /// `progress`, `state`, `delay`, `pause`, `schedule`, as the event has them.
    pub fields: Vec<(String, Vec<u8>)>,
}

impl Event {
    /// The field `name` as text, if the event has it.
    #[must_use]
    pub fn field(&self, name: &str) -> Option<std::borrow::Cow<'_, str>> {
        self.fields.iter().find(|(field, _)| field == name).map(|(_, value)| String::from_utf8_lossy(value))
    }

    /// When it happened, by the server's clock (the ms of its id).
    #[must_use]
    pub fn time(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.id.ms)
    }

    /// Whether it ends its job's run for good: completed, dead or cancelled.
    #[must_use]
    pub fn is_final(&self) -> bool {
        matches!(self.kind, EventKind::Completed | EventKind::Dead | EventKind::Cancelled)
    }

    /// The event of a log entry; an entry whose id is not a stream id (no
    /// server writes one) reads as [`StreamId::ZERO`].
    fn from_entry(entry: StreamEntry) -> Event {
        let (mut name, mut job, mut fields) = (None, None, Vec::new());
        for (field, value) in entry.fields {
            match field.as_str() {
                "event" if name.is_none() => name = Some(String::from_utf8_lossy(&value).into_owned()),
                "id" if job.is_none() => job = JobId::try_from(value.as_slice()).ok(),
                _ => fields.push((field, value)),
            }
        }
        let kind = EventKind::from_name(name.as_deref().unwrap_or_default());
        Event { id: entry.id.parse().unwrap_or_default(), kind, job, fields }
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
    after: StreamId,
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
    /// A reader of the log at `key`, from after the entry `after`
    /// ([`StreamId::ZERO`]: the oldest kept).
    #[must_use]
    pub fn new(via: Arc<dyn Executor>, key: String, after: StreamId) -> QueueEvents {
        QueueEvents { via, key, after, buffered: VecDeque::new() }
    }

    /// The id of the last entry given out (or the starting point): a new
    /// reader made with it resumes where this one stopped.
    #[must_use]
    pub fn after(&self) -> StreamId {
        self.after
    }

    /// The next event, waiting for it as long as it takes.
    ///
    /// # Errors
    /// As [`next_within`](QueueEvents::next_within).
    pub async fn next(&mut self) -> Result<Event> {
        loop {
            if let Some(event) = self.next_within(READ_WAIT).await? {
                return Ok(event);
            }
        }
    }

    /// The next event, or `None` when none came within `wait`.
    ///
    /// # Errors
    /// A failure of the connection or the server ([`ErrorKind::Server`](crate::ErrorKind::Server)
    /// for a log key of another type). The reader stays where it was: the
    /// next call reads the same entries.
    pub async fn next_within(&mut self, wait: Duration) -> Result<Option<Event>> {
        if self.buffered.is_empty() {
            let entries =
                self.via.plain().read_stream(&self.key, &self.after.to_string(), READ_COUNT, wait).await?;
            self.buffered.extend(entries.into_iter().map(Event::from_entry));
        }
        let event = self.buffered.pop_front();
        if let Some(event) = &event {
            self.after = event.id;
        }
        Ok(event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_id_reads_as_redis_writes_it_and_orders_the_log() {
        let id: StreamId = "1750000000000-3".parse().unwrap();
        assert_eq!(id, StreamId { ms: 1_750_000_000_000, seq: 3 });
        assert_eq!(id.to_string(), "1750000000000-3");
        assert_eq!("42".parse::<StreamId>().unwrap(), StreamId { ms: 42, seq: 0 });
        assert!(StreamId { ms: 1, seq: 9 } < StreamId { ms: 2, seq: 0 });
        for bad in ["", "-", "1-", "-1", "a-1", "1-2-3", "+1-0", "18446744073709551616-0"] {
            let err = bad.parse::<StreamId>().unwrap_err();
            assert_eq!(err.kind, crate::ErrorKind::Argument, "{bad:?}");
        }
    }

    #[test]
    fn every_event_name_reads_as_its_kind_and_back() {
        for name in ["enqueued", "active", "progress", "completed", "failed", "dead", "deferred", "released"]
            .into_iter()
            .chain(["promoted", "cancelled", "retried", "paused", "resumed"])
        {
            let kind = EventKind::from_name(name);
            assert!(!matches!(kind, EventKind::Other(_)), "{name}");
            assert_eq!(kind.as_str(), name);
        }
        assert_eq!(EventKind::from_name("stalled"), EventKind::Other("stalled".into()), "a later minor's");
    }
}
