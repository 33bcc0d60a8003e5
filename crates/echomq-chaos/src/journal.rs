//! The journal: what one worker process saw, one line per event, in order.
//! Each line is written with one `write` to a file opened for appending and
//! no buffer of our own, so it is in the kernel's hands before the worker
//! goes on: a SIGKILL can cut a worker short, never a line it wrote.
//!
//! ```text
//! claim JOB_01J… 2            a CLAIM handed the job out with token 2
//! start JOB_01J… 2            the handler began attempt 2
//! end JOB_01J… 2              the handler returned Ok (written before it returns)
//! ack JOB_01J… 2 ok           ACK with token 2 was accepted
//! ack JOB_01J… 1 fence        … or refused with EMQFENCE
//! extend JOB_01J… 1 fence     a heartbeat; also fail and release
//! ```
//!
//! An outcome is `ok`, `fence` (EMQFENCE), `nojob` (EMQNOJOB), `error` (the
//! connection failed: the call may or may not have happened) or `refused`
//! (any other refusal, which a well-formed call never gets).

use echomq::ErrorKind;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::str::FromStr;
use std::sync::Mutex;

use echomq::{Error, JobId};

/// What happened to a job in one worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    /// A claim handed the job out with this token.
    Claim,
    /// The handler began.
    Start,
    /// The handler finished and is about to return Ok.
    End,
    /// ACK, and what the server answered.
    Ack(Heard),
    /// FAIL (retry later or dead).
    Fail(Heard),
    /// EXTEND, the heartbeat.
    Extend(Heard),
    /// RELEASE (a worker shutting down gives the job back).
    Release(Heard),
    /// A call the worker sent that carries a token or hands one out, of a
    /// transition the witness has no event for (a new one, or DEFER and
    /// PROGRESS, which the chaos handler never sends): the verdict cannot
    /// judge it, so it counts as a violation until it has its event.
    Unjudged,
}

/// What the server answered a call that carried a token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Heard {
    /// Accepted.
    Ok,
    /// `EMQFENCE`: the token did not hold the lease; nothing changed.
    Fence,
    /// `EMQNOJOB`: no record.
    NoJob,
    /// No answer (the connection failed): it may or may not have happened.
    Error,
    /// Any other refusal.
    Refused,
}

impl Heard {
    /// The outcome of a call's result.
    pub fn of<T>(result: &echomq::Result<T>) -> Heard {
        match result {
            Ok(_) => Heard::Ok,
            Err(Error { kind: ErrorKind::Fence, .. }) => Heard::Fence,
            Err(Error { kind: ErrorKind::NoJob, .. }) => Heard::NoJob,
            // Applied on the master, no replica's word: it may or may not survive a failover.
            Err(Error {
                kind:
                    ErrorKind::Unavailable
                    | ErrorKind::MayHaveLanded
                    | ErrorKind::Server
                    | ErrorKind::NotReplicated { .. },
                ..
            }) => Heard::Error,
            Err(_) => Heard::Refused,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Heard::Ok => "ok",
            Heard::Fence => "fence",
            Heard::NoJob => "nojob",
            Heard::Error => "error",
            Heard::Refused => "refused",
        }
    }
}

/// One line of a journal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// What happened.
    pub event: Event,
    /// To which job.
    pub id: JobId,
    /// Under which token (attempt).
    pub token: u64,
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (name, outcome) = match self.event {
            Event::Claim => ("claim", None),
            Event::Start => ("start", None),
            Event::End => ("end", None),
            Event::Ack(o) => ("ack", Some(o)),
            Event::Fail(o) => ("fail", Some(o)),
            Event::Extend(o) => ("extend", Some(o)),
            Event::Release(o) => ("release", Some(o)),
            Event::Unjudged => ("unjudged", None),
        };
        write!(f, "{name} {} {}", self.id, self.token)?;
        match outcome {
            Some(outcome) => write!(f, " {}", outcome.as_str()),
            None => Ok(()),
        }
    }
}

impl FromStr for Entry {
    type Err = String;

    fn from_str(line: &str) -> Result<Entry, String> {
        let bad = || format!("not a journal line: {line:?}");
        let words: Vec<&str> = line.split(' ').collect();
        let (name, id, token, outcome) = match words[..] {
            [name, id, token] => (name, id, token, None),
            [name, id, token, outcome] => (name, id, token, Some(outcome)),
            _ => return Err(bad()),
        };
        let outcome = match outcome {
            None => None,
            Some("ok") => Some(Heard::Ok),
            Some("fence") => Some(Heard::Fence),
            Some("nojob") => Some(Heard::NoJob),
            Some("error") => Some(Heard::Error),
            Some("refused") => Some(Heard::Refused),
            Some(_) => return Err(bad()),
        };
        let event = match (name, outcome) {
            ("claim", None) => Event::Claim,
            ("start", None) => Event::Start,
            ("end", None) => Event::End,
            ("ack", Some(o)) => Event::Ack(o),
            ("fail", Some(o)) => Event::Fail(o),
            ("extend", Some(o)) => Event::Extend(o),
            ("release", Some(o)) => Event::Release(o),
            ("unjudged", None) => Event::Unjudged,
            _ => return Err(bad()),
        };
        let id = JobId::branded(id).map_err(|_| bad())?;
        let token = token.parse().map_err(|_| bad())?;
        Ok(Entry { event, id, token })
    }
}

/// A journal being written by one worker process; shared by its tasks.
pub struct Journal {
    file: Mutex<File>,
}

impl Journal {
    /// Open `path` for appending, creating it.
    pub fn create(path: &Path) -> std::io::Result<Journal> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Journal { file: Mutex::new(file) })
    }

    /// Write one line, in one `write`. A journal that cannot be written
    /// proves nothing, so the worker stops then (and the run counts a crash).
    pub fn record(&self, event: Event, id: &JobId, token: u64) {
        let line = format!("{}\n", Entry { event, id: id.clone(), token });
        let mut file = self.file.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        file.write_all(line.as_bytes()).expect("the journal cannot be written");
    }
}

/// Every line of the journal at `path`.
pub fn read(path: &Path) -> std::io::Result<Vec<Result<Entry, String>>> {
    let text = std::fs::read_to_string(path)?;
    Ok(text.lines().map(str::parse).collect())
}

/// The lines of the last `bytes` bytes of the journal at `path` (the first,
/// likely cut, is skipped unless the tail is the whole file). Lines that do
/// not parse are dropped: this is for watching a run, not for judging it.
pub fn tail(path: &Path, bytes: u64) -> std::io::Result<Vec<Entry>> {
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    let from = len.saturating_sub(bytes);
    file.seek(SeekFrom::Start(from))?;
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    let lines = text.lines().skip(usize::from(from > 0));
    Ok(lines.filter_map(|line| line.parse().ok()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_round_trips_through_its_line() {
        let id = JobId::mint();
        let outcomes = [Heard::Ok, Heard::Fence, Heard::NoJob, Heard::Error, Heard::Refused];
        let mut events = vec![Event::Claim, Event::Start, Event::End, Event::Unjudged];
        for o in outcomes {
            events.extend([Event::Ack(o), Event::Fail(o), Event::Extend(o), Event::Release(o)]);
        }
        for (token, event) in events.into_iter().enumerate() {
            let entry = Entry { event, id: id.clone(), token: token as u64 + 1 };
            assert_eq!(entry.to_string().parse::<Entry>(), Ok(entry));
        }
    }

    #[test]
    fn malformed_lines_are_refused() {
        let id = JobId::mint();
        for bad in [
            String::new(),
            format!("claim {id}"),
            format!("claim {id} 1 ok"),
            format!("ack {id} 1"),
            format!("ack {id} 1 maybe"),
            "ack JOB_nope 1 ok".to_string(),
            format!("ack {id} -1 ok"),
            format!("poke {id} 1"),
        ] {
            assert!(bad.parse::<Entry>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_tail_skips_a_cut_first_line() {
        let dir = std::env::temp_dir().join(format!("echomq-chaos-journal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tail.log");
        let _ = std::fs::remove_file(&path);
        let journal = Journal::create(&path).unwrap();
        let ids: Vec<JobId> = (0..3).map(|_| JobId::mint()).collect();
        for id in &ids {
            journal.record(Event::Claim, id, 1);
        }
        assert_eq!(tail(&path, 1 << 20).unwrap().len(), 3, "the whole file");
        let last_two = (ids[1].as_str().len() + "claim  1\n".len()) as u64 * 2 + 3;
        let seen: Vec<JobId> = tail(&path, last_two).unwrap().into_iter().map(|e| e.id).collect();
        assert_eq!(seen, ids[1..].to_vec());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
