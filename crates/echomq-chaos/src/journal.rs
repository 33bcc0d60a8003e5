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
//! children JOB_01J… 1 {flows}JOB_01K…=6869 {chaos}JOB_01M…=
//!                             a flow's parent's handler (attempt 1) read its
//!                             children's results (hex; here one empty)
//! resolve JOB_01K… 1750… applied
//!                             the relay's RESOLVE of the notice of child
//!                             JOB_01K…, to its parent's incarnation 1750…,
//!                             was applied (or `unchanged`, `error`, `refused`)
//! abort JOB_01K… 1750… applied
//!                             … and the worker kills itself now, before the
//!                             relay's XDEL (`witness.rs`)
//! ```
//!
//! An outcome is `ok`, `fence` (EMQFENCE), `nojob` (EMQNOJOB), `error` (the
//! connection failed: the call may or may not have happened) or `refused`
//! (any other refusal, which a well-formed call never gets). A `resolve` or
//! `abort` line's number is the parent's incarnation, not a token.

use echomq::ErrorKind;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::str::FromStr;
use std::sync::Mutex;

use echomq::{Error, JobId, JobRef};

/// What happened to a job in one worker.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
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
    /// A flow's parent's handler read its children's results
    /// (`JobContext::children_results`): each child, and its bytes.
    Children(Vec<(JobRef, Vec<u8>)>),
    /// The relay's RESOLVE of a child's notice (the line's id is the
    /// child's, its number the parent's incarnation), and its answer.
    Resolve(Relayed),
    /// The witness kills its own process right after this RESOLVE
    /// answered, before the relay deletes the notice.
    Abort(Relayed),
}

/// What a RESOLVE was answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Relayed {
    /// `1`: the parent heard of the child now.
    Applied,
    /// `0`: nothing changed (the parent had heard, or ended).
    Unchanged,
    /// No answer (the connection failed): it may or may not have happened.
    Lost,
    /// Refused: a RESOLVE the relay sends is never refused.
    Refused,
}

impl Relayed {
    fn as_str(self) -> &'static str {
        match self {
            Relayed::Applied => "applied",
            Relayed::Unchanged => "unchanged",
            Relayed::Lost => "error",
            Relayed::Refused => "refused",
        }
    }

    fn parse(word: &str) -> Option<Relayed> {
        [Relayed::Applied, Relayed::Unchanged, Relayed::Lost, Relayed::Refused]
            .into_iter()
            .find(|relayed| relayed.as_str() == word)
    }
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
        let (name, outcome) = match &self.event {
            Event::Claim => ("claim", None),
            Event::Start => ("start", None),
            Event::End => ("end", None),
            Event::Ack(o) => ("ack", Some(o.as_str())),
            Event::Fail(o) => ("fail", Some(o.as_str())),
            Event::Extend(o) => ("extend", Some(o.as_str())),
            Event::Release(o) => ("release", Some(o.as_str())),
            Event::Unjudged => ("unjudged", None),
            Event::Children(_) => ("children", None),
            Event::Resolve(o) => ("resolve", Some(o.as_str())),
            Event::Abort(o) => ("abort", Some(o.as_str())),
        };
        write!(f, "{name} {} {}", self.id, self.token)?;
        if let Some(outcome) = outcome {
            write!(f, " {outcome}")?;
        }
        if let Event::Children(results) = &self.event {
            for (child, result) in results {
                write!(f, " {child}={}", hex(result))?;
            }
        }
        Ok(())
    }
}

/// Bytes as lower-case hex, two digits a byte.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Hex back to bytes; `None` for anything but pairs of hex digits.
fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|at| u8::from_str_radix(text.get(at..at + 2)?, 16).ok()).collect()
}

impl FromStr for Entry {
    type Err = String;

    fn from_str(line: &str) -> Result<Entry, String> {
        let bad = || format!("not a journal line: {line:?}");
        let words: Vec<&str> = line.split(' ').collect();
        if let ["children", id, token, ref results @ ..] = words[..] {
            let results = results
                .iter()
                .map(|word| {
                    let (child, result) = word.split_once('=')?;
                    Some((child.parse().ok()?, unhex(result)?))
                })
                .collect::<Option<Vec<(JobRef, Vec<u8>)>>>()
                .ok_or_else(bad)?;
            let id = JobId::branded(id).map_err(|_| bad())?;
            let token = token.parse().map_err(|_| bad())?;
            return Ok(Entry { event: Event::Children(results), id, token });
        }
        if let [name @ ("resolve" | "abort"), id, incarnation, relayed] = words[..] {
            let relayed = Relayed::parse(relayed).ok_or_else(bad)?;
            let event = if name == "resolve" { Event::Resolve(relayed) } else { Event::Abort(relayed) };
            let id = JobId::branded(id).map_err(|_| bad())?;
            let token = incarnation.parse().map_err(|_| bad())?;
            return Ok(Entry { event, id, token });
        }
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

/// Every journal's entries, in order; a line that does not parse is a violation.
pub(crate) fn read_all(
    paths: &[std::path::PathBuf],
    violations: &mut Vec<String>,
) -> Result<Vec<Vec<Entry>>, String> {
    let mut journals = Vec::new();
    for path in paths {
        let lines = read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut entries = Vec::with_capacity(lines.len());
        for line in lines {
            match line {
                Ok(entry) => entries.push(entry),
                Err(bad) => violations.push(format!("{}: {bad}", path.display())),
            }
        }
        journals.push(entries);
    }
    Ok(journals)
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
        for o in [Relayed::Applied, Relayed::Unchanged, Relayed::Lost, Relayed::Refused] {
            events.extend([Event::Resolve(o), Event::Abort(o)]);
        }
        let child = |queue: &str| JobRef::new(queue, JobId::mint()).unwrap();
        events.push(Event::Children(Vec::new()));
        events.push(Event::Children(vec![
            (child("flows"), vec![0, 255, b' ', b'=', b'\n', b'}']),
            (child("chaos"), Vec::new()),
        ]));
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
            format!("children {id} 1 {{flows}}{id}=0"),
            format!("children {id} 1 {{flows}}{id}=zz"),
            format!("children {id} 1 flows{id}=00"),
            format!("children {id} 1 {{flows}}{id}"),
            format!("resolve {id} 17"),
            format!("resolve {id} 17 ok"),
            format!("abort {id} x applied"),
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
