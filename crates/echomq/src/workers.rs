//! The worker registry (PROTOCOL.md §2 and §11.3, `emq:workers`): every
//! running worker notes itself, its queues and the jobs it runs now, under a
//! TTL, so that an operator sees who works what and a killed worker
//! disappears by itself. [`workers`] reads it (and tidies it),
//! [`workers_read_only`] only reads it; the
//! [`Worker`](crate::worker::Worker) writes it.
//!
//! ```no_run
//! # async fn demo(executor: std::sync::Arc<dyn echomq::Executor>) -> echomq::Result<()> {
//! for worker in echomq::workers(&*executor).await? {
//!     println!("{} on {} runs {} jobs of {:?}", worker.id, worker.host, worker.running.len(), worker.queues);
//! }
//! # Ok(()) }
//! ```
//!
//! Two keys, both outside every queue's hashtag, as `emq:queues`:
//! [`WORKERS`], a sorted set of worker id → its last beat (the worker's
//! clock, ms), and [`worker`](crate::keyspace::worker)`(id)`, a hash of the
//! worker's [`Field`]s written again at every beat with a PEXPIRE of its
//! TTL. Like the queue registry it is advisory: a worker that cannot write
//! it says so once and works on.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::executor::{Answer, Command, Executor};
use crate::keyspace;
pub use crate::keyspace::WORKERS;
use crate::{Error, ErrorKind, JobId, Result};

/// How often a worker writes its registration by default
/// ([`WorkerOptions::registry_beat`](crate::worker::WorkerOptions::registry_beat)).
pub const DEFAULT_BEAT: Duration = Duration::from_secs(5);

/// The longest beat a worker takes (a longer one is shortened to it), so
/// that a reader knows how stale a live worker's beat can be.
pub const MAX_BEAT: Duration = Duration::from_secs(60);

/// The shortest beat a worker takes (a shorter one is lengthened to it).
pub const MIN_BEAT: Duration = Duration::from_millis(10);

/// A registration's TTL, in beats: it outlives two missed beats.
pub const TTL_BEATS: u32 = 3;

/// How many workers one read looks at: the most recent beats.
pub const READ_LIMIT: usize = 1000;

/// A reader takes out of [`WORKERS`] every member whose last beat is older
/// than this: ten times the longest TTL ([`MAX_BEAT`] × [`TTL_BEATS`]), so
/// never a live worker's.
pub const FORGET_AFTER: Duration = Duration::from_secs(10 * 3 * 60);

/// A registration's fields (PROTOCOL.md §2, `emq:worker:<id>`), each a
/// string in the hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Field {
    /// The machine's name.
    Host,
    /// The process id, decimal.
    Pid,
    /// The queues it works: a JSON array of names.
    Queues,
    /// How many jobs it runs at once, decimal.
    Concurrency,
    /// The speaker's name and version, `echomq-rust 0.1.0`.
    Version,
    /// The protocol's `major.minor` it speaks.
    Protocol,
    /// When it started, ms since the Unix epoch on its clock.
    Started,
    /// When it wrote this registration, ms since the Unix epoch on its clock.
    Beat,
    /// The registration's TTL in ms: beats further apart mean it is dead.
    Ttl,
    /// The jobs it runs now: a JSON array of [`RunningJob`]s.
    Running,
}

impl Field {
    /// The field's name in the hash.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Field::Host => "host",
            Field::Pid => "pid",
            Field::Queues => "queues",
            Field::Concurrency => "concurrency",
            Field::Version => "version",
            Field::Protocol => "protocol",
            Field::Started => "started",
            Field::Beat => "beat",
            Field::Ttl => "ttl",
            Field::Running => "running",
        }
    }
}

/// A job a worker runs now, as its registration lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunningJob {
    /// The job's queue.
    pub queue: String,
    /// The job's id.
    pub id: JobId,
    /// The claim's fencing token: which attempt this is.
    pub token: u64,
    /// When the lease runs out unless renewed, ms since the Unix epoch on
    /// the worker's clock (the server's own deadline is `emq:{q}:active`'s score).
    pub lease_until: u64,
}

/// A live worker, as its registration says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerInfo {
    /// Its id: `<host>:<pid>:<ULID>`, new at every start of a process.
    pub id: String,
    /// The machine it runs on.
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// The queues it works.
    pub queues: Vec<String>,
    /// How many jobs it runs at once.
    pub concurrency: u64,
    /// Its speaker's name and version, `echomq-rust 0.1.0`.
    pub version: String,
    /// The protocol version it speaks, `major.minor`.
    pub protocol: String,
    /// When it started, ms since the Unix epoch (its clock).
    pub started: u64,
    /// When it last wrote its registration, ms since the Unix epoch (its clock).
    pub beat: u64,
    /// How long its registration lives without another beat.
    pub ttl: Duration,
    /// The jobs it runs now, as of its last beat.
    pub running: Vec<RunningJob>,
}

impl WorkerInfo {
    /// Whether it works `queue`.
    #[must_use]
    pub fn works(&self, queue: &str) -> bool {
        self.queues.iter().any(|name| name == queue)
    }
}

/// A registration as a worker writes it (at every beat).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registration {
    /// The worker's id.
    pub id: String,
    /// This beat's time, ms since the Unix epoch: the score in [`WORKERS`].
    pub beat: u64,
    /// How long the hash lives (its PEXPIRE).
    pub ttl: Duration,
    /// Every [`Field`] and its value.
    pub fields: Vec<(Field, String)>,
}

impl Registration {
    /// The registration of `info`, its [`WorkerInfo::beat`] the score.
    ///
    /// # Errors
    /// [`ErrorKind::Json`] should a field not be written as JSON (it cannot happen for these types).
    pub fn of(info: &WorkerInfo) -> Result<Registration> {
        let fields = vec![
            (Field::Host, info.host.clone()),
            (Field::Pid, info.pid.to_string()),
            (Field::Queues, serde_json::to_string(&info.queues)?),
            (Field::Concurrency, info.concurrency.to_string()),
            (Field::Version, info.version.clone()),
            (Field::Protocol, info.protocol.clone()),
            (Field::Started, info.started.to_string()),
            (Field::Beat, info.beat.to_string()),
            (Field::Ttl, ms(info.ttl).to_string()),
            (Field::Running, serde_json::to_string(&info.running)?),
        ];
        Ok(Registration { id: info.id.clone(), beat: info.beat, ttl: info.ttl, fields })
    }
}

/// Write a worker's registration (PROTOCOL.md §2, `emq:workers`): `HSET`
/// and `PEXPIRE` of its hash in one round trip, then `ZADD emq:workers
/// <beat> <id>`. Two keys in two slots, so two round trips, not one
/// transaction: the hash first, so that a member is never noted before its hash.
///
/// # Errors
/// A failure of the connection or the server (`WRONGTYPE`, `NOPERM`).
pub(crate) async fn beat(via: &dyn Executor, registration: &Registration) -> Result<()> {
    let key = keyspace::worker(&registration.id);
    let fields = registration.fields.iter().map(|(field, value)| (field.as_str().to_owned(), value.clone()));
    let hash = [Command::HSet(key.clone(), fields.collect()), Command::PExpire(key, ms(registration.ttl))];
    for written in via.plain().send(&hash).await? {
        written?;
    }
    let member = registration.id.clone();
    let noted = Command::ZAdd {
        key: WORKERS.into(),
        score: Some(registration.beat),
        member,
        raise_only: false,
        existing_only: false,
    };
    via.plain().one(noted).await?;
    Ok(())
}

/// A stopping worker's: delete its hash, then take it out of the registry.
///
/// # Errors
/// As [`beat`].
pub(crate) async fn unregister(via: &dyn Executor, id: &str) -> Result<()> {
    via.plain().one(Command::Del(keyspace::worker(id))).await?;
    via.plain().one(Command::ZRem(WORKERS.into(), vec![id.to_owned()])).await?;
    Ok(())
}

/// A member of [`WORKERS`] as read: its id, its score (the last beat), and
/// its hash's fields, `None` once the hash expired or was deleted.
struct Noted {
    id: String,
    beat: u64,
    fields: Option<HashMap<String, String>>,
}

/// The registry's `limit` members of the latest beats, then each one's hash
/// (every HGETALL in one round trip).
async fn noted(via: &dyn Executor, limit: usize) -> Result<Vec<Noted>> {
    let latest = Command::ZRange { key: WORKERS.into(), count: limit, latest: true };
    let members = if limit == 0 { Vec::new() } else { via.plain().one(latest).await?.scored()? };
    let reads: Vec<Command> = members.iter().map(|(id, _)| Command::HGetAll(keyspace::worker(id))).collect();
    let hashes = if reads.is_empty() { Vec::new() } else { via.plain().send(&reads).await? };
    members
        .into_iter()
        .zip(hashes)
        .map(|((id, beat), fields)| {
            let fields: HashMap<String, String> = fields.and_then(Answer::fields)?.into_iter().collect();
            Ok(Noted { id, beat: beat as u64, fields: (!fields.is_empty()).then_some(fields) })
        })
        .collect()
}

/// `ZREM emq:workers ids…` and `ZREMRANGEBYSCORE emq:workers -inf (before`.
async fn forget(via: &dyn Executor, ids: &[String], before: u64) -> Result<()> {
    let mut forget = vec![Command::ZRemBelow(WORKERS.into(), before)];
    if !ids.is_empty() {
        forget.insert(0, Command::ZRem(WORKERS.into(), ids.to_vec()));
    }
    for forgotten in via.plain().send(&forget).await? {
        forgotten?;
    }
    Ok(())
}

/// The live workers, from the worker registry: at most 1,000,
/// those that beat last, sorted by id. A worker whose hash is gone (its TTL
/// ran out: killed, or cut off) is left out and taken out of [`WORKERS`];
/// one whose beat is older than its TTL on this process's clock is left out
/// (a hash expires on the server's clock); any member whose beat is older
/// than half an hour (ten times the longest TTL) is taken out too. The taking out is a courtesy:
/// should it fail (an ACL), the list is still returned.
///
/// # Errors
/// A failure of the connection or the server; [`ErrorKind::Server`] when
/// [`WORKERS`] or a worker's hash holds another type (`WRONGTYPE`);
/// [`ErrorKind::Malformed`] for a registration whose fields do not read
/// (PROTOCOL.md §2), naming the worker and the field.
pub async fn workers(executor: &dyn Executor) -> Result<Vec<WorkerInfo>> {
    let Listed { live, gone, now } = list(executor).await?;
    let before = now.saturating_sub(ms(FORGET_AFTER));
    if let Err(err) = forget(executor, &gone, before).await {
        tracing::debug!(error = %err, "cannot take dead workers out of {WORKERS}");
    }
    Ok(live)
}

/// The live workers, as [`workers`] lists them, but writing nothing: a dead
/// member stays in [`WORKERS`] (left out of the list all the same). For a
/// reader that must not change the server, such as `emq dashboard --read-only`.
///
/// # Errors
/// As [`workers`].
pub async fn workers_read_only(executor: &dyn Executor) -> Result<Vec<WorkerInfo>> {
    Ok(list(executor).await?.live)
}

/// One read of the registry: the live workers sorted by id, the members
/// whose hash is gone, and this process's clock when it judged them.
struct Listed {
    live: Vec<WorkerInfo>,
    gone: Vec<String>,
    now: u64,
}

async fn list(executor: &dyn Executor) -> Result<Listed> {
    let noted = noted(executor, READ_LIMIT)
        .await
        .map_err(|err| Error::new(err.kind, format!("reading the worker registry {WORKERS}: {err}")))?;
    let now = now_ms();
    let mut gone = Vec::new();
    let mut live = Vec::new();
    for Noted { id, beat, fields } in noted {
        let Some(fields) = fields else {
            gone.push(id);
            continue;
        };
        let info = read(id, beat, &fields)?;
        if info.beat.saturating_add(ms(info.ttl)) >= now {
            live.push(info);
        }
    }
    live.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(Listed { live, gone, now })
}

/// A registration's fields read as a [`WorkerInfo`]; `beat` is its score,
/// used when the hash has no `beat` of its own.
fn read(id: String, beat: u64, fields: &HashMap<String, String>) -> Result<WorkerInfo> {
    let malformed = |field: Field, why: String| {
        Error::new(
            ErrorKind::Malformed,
            format!(
                "the registration of worker {id:?} ({}): {} {why}",
                crate::keyspace::worker(&id),
                field.as_str()
            ),
        )
    };
    let text = |field: Field| fields.get(field.as_str()).cloned().unwrap_or_default();
    let number = |field: Field| -> Result<u64> {
        let value = text(field);
        value.parse().map_err(|_| malformed(field, format!("is {value:?}, not a whole number")))
    };
    let queues = serde_json::from_str(&text(Field::Queues))
        .map_err(|err| malformed(Field::Queues, format!("is not a JSON array of names: {err}")))?;
    let running = serde_json::from_str(&text(Field::Running))
        .map_err(|err| malformed(Field::Running, format!("is not a JSON array of running jobs: {err}")))?;
    let pid = number(Field::Pid)?;
    Ok(WorkerInfo {
        host: text(Field::Host),
        pid: u32::try_from(pid).map_err(|_| malformed(Field::Pid, format!("{pid} is out of range")))?,
        queues,
        concurrency: number(Field::Concurrency)?,
        version: text(Field::Version),
        protocol: text(Field::Protocol),
        started: number(Field::Started)?,
        beat: if fields.contains_key(Field::Beat.as_str()) { number(Field::Beat)? } else { beat },
        ttl: Duration::from_millis(number(Field::Ttl)?),
        running,
        id,
    })
}

/// Now, ms since the Unix epoch, on this process's clock.
#[must_use]
pub fn now_ms() -> u64 {
    ms(SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default())
}

/// A duration in whole ms, saturating.
fn ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> WorkerInfo {
        WorkerInfo {
            id: "box:42:01JDQ3H6Z8M4W0T9XK2B7C5N1R".into(),
            host: "box".into(),
            pid: 42,
            queues: vec!["emails".into(), "thumbs".into()],
            concurrency: 8,
            version: "echomq-rust 0.1.0".into(),
            protocol: "1.6".into(),
            started: 1_000,
            beat: 2_000,
            ttl: Duration::from_secs(15),
            running: vec![RunningJob {
                queue: "emails".into(),
                id: "JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1R".parse().unwrap(),
                token: 2,
                lease_until: 32_000,
            }],
        }
    }

    fn fields(info: &WorkerInfo) -> HashMap<String, String> {
        let written = Registration::of(info).unwrap();
        written.fields.into_iter().map(|(field, value)| (field.as_str().to_owned(), value)).collect()
    }

    #[test]
    fn a_registration_reads_back_as_written() {
        let info = info();
        let written = fields(&info);
        assert_eq!(written["queues"], r#"["emails","thumbs"]"#);
        assert_eq!(
            written["running"],
            r#"[{"queue":"emails","id":"JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1R","token":2,"lease_until":32000}]"#
        );
        assert_eq!(written["ttl"], "15000");
        assert_eq!(read(info.id.clone(), 2_000, &written).unwrap(), info);
    }

    #[test]
    fn a_malformed_registration_names_the_worker_and_the_field() {
        for (field, value) in [("pid", "x"), ("queues", "emails"), ("running", "[{}]"), ("ttl", "-1")] {
            let mut written = fields(&info());
            written.insert(field.into(), value.into());
            let err = read("w".into(), 0, &written).unwrap_err();
            assert_eq!(err.kind, ErrorKind::Malformed, "{field}");
            assert!(err.to_string().contains(&format!("emq:worker:w): {field}")), "{field}: {err}");
        }
    }
}
