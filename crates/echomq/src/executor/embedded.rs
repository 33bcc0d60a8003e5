//! The embedded executor: the core's transitions run in-process on a
//! [`Memory`] store. No server, no set-up: the demo's default, and a fake
//! that is not a fake for a user's own unit tests, since it runs the very
//! code the native module runs.

use crate::ErrorKind;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use echomq_core::memory::{Clock, Dump, StreamId, SystemClock};
use echomq_core::store::{KeyType, Store};
use echomq_core::{Memory, Reply};

use super::{Answer, Call, Command, Executor, Interrupts, Plain, Ran, Setup, StreamEntry};
use crate::{Error, Result};

/// Runs transitions in this process. Cheap to clone; clones share the store.
#[derive(Clone)]
pub struct Embedded {
    store: Arc<Mutex<Memory>>,
    /// Told after every transition that may add to a pending set.
    arrivals: Arc<tokio::sync::Notify>,
    /// Told after every run that may have written (the event log grew).
    changes: Arc<tokio::sync::Notify>,
    interrupts: Arc<Interrupts>,
    /// When each key given a TTL (PEXPIRE) expires, as the store keeps
    /// none, ms on the store's clock; always locked after the store.
    deadlines: Arc<Mutex<HashMap<String, u64>>>,
}

impl std::fmt::Debug for Embedded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedded").finish_non_exhaustive()
    }
}

impl Default for Embedded {
    fn default() -> Self {
        Embedded::new()
    }
}

impl Embedded {
    /// An empty store on the machine's clock.
    #[must_use]
    pub fn new() -> Embedded {
        Embedded::with_clock(Arc::new(SystemClock))
    }

    /// An empty store on `clock`: a [`ManualClock`](echomq_core::memory::ManualClock)
    /// makes time a test's to move.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Embedded {
        Embedded {
            store: Arc::new(Mutex::new(Memory::new(clock))),
            arrivals: Arc::default(),
            changes: Arc::default(),
            interrupts: Arc::default(),
            deadlines: Arc::default(),
        }
    }

    /// Every key and its content, sorted by key.
    #[must_use]
    pub fn dump(&self) -> BTreeMap<Vec<u8>, Dump> {
        self.store().dump()
    }

    fn deadlines(&self) -> MutexGuard<'_, HashMap<String, u64>> {
        self.deadlines.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The store itself, for tests that arrange keys by hand.
    pub fn store(&self) -> MutexGuard<'_, Memory> {
        // A panic while holding the lock cannot leave a transition half done:
        // transitions check everything before their first write.
        self.store.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait]
impl Executor for Embedded {
    /// The calls one after another, under one lock; then waiting claims are
    /// woken if any call may have added to a pending set.
    async fn run(&self, calls: &[Call]) -> Result<Ran> {
        let replies = {
            let mut store = self.store();
            calls.iter().map(|call| run(&mut store, call)).collect()
        };
        if calls.iter().any(|call| call.name.describe().wakes_claims) {
            self.arrivals.notify_waiters();
        }
        if calls.iter().any(|call| !call.name.describe().reads_only()) {
            self.changes.notify_waiters();
        }
        Ok(Ran::replies(replies))
    }

    /// Claim; when nothing is pending, sleep until a transition may have
    /// added to a pending set, or the wait is over.
    async fn claim_waiting(&self, claim: &Call, wait: Duration) -> Result<Reply> {
        let attempt = || async { run(&mut self.store(), claim) };
        super::claim_on_arrival(&self.arrivals, &self.interrupts, wait, attempt).await
    }

    /// One store holds every queue, but there is no wake-up to pop: nap.
    async fn wait_on_many(&self, wakes: &[String], wait: Duration) -> Result<Option<usize>> {
        let _ = wakes;
        tokio::time::sleep(wait.min(super::BUSY_NAP)).await;
        Ok(None)
    }

    async fn interrupt_waits(&self) {
        self.interrupts.interrupt();
    }

    fn setup(&self) -> Setup {
        Setup { waits: true, waits_on_many: false, waits_each: false, replication: None }
    }

    fn plain(&self) -> &dyn Plain {
        self
    }
}

#[async_trait]
impl Plain for Embedded {
    /// The commands one after another under one lock, as Redis would answer
    /// them; `WRONGTYPE` as [`ErrorKind::Server`], as from Redis. A key past
    /// its PEXPIRE is deleted when next touched.
    async fn send(&self, commands: &[Command]) -> Result<Vec<Result<Answer>>> {
        let mut store = self.store();
        let mut deadlines = self.deadlines();
        // The store's `now` holds still within a call: a new one begins.
        store.begin();
        Ok(commands.iter().map(|command| answer(&mut store, &mut deadlines, command)).collect())
    }

    /// Read the store's stream; when it has nothing new, sleep until a
    /// write, or the wait is over.
    async fn read_stream(
        &self,
        key: &str,
        after: &str,
        count: usize,
        wait: Duration,
    ) -> Result<Vec<StreamEntry>> {
        let after: StreamId = after
            .parse()
            .map_err(|()| Error::new(ErrorKind::Argument, format!("{after:?} is not a stream entry id")))?;
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            // Listening starts before the read, so a write in between is not missed.
            let changed = self.changes.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let entries = self.store().xread(key.as_bytes(), after, count.max(1));
            if !entries.is_empty() || wait.is_zero() {
                return Ok(entries.into_iter().map(entry).collect());
            }
            tokio::select! {
                () = &mut changed => {}
                () = tokio::time::sleep_until(deadline) => return Ok(Vec::new()),
            }
        }
    }
}

/// One plain command on the store (see [`Plain::send`]).
fn answer(store: &mut Memory, deadlines: &mut HashMap<String, u64>, command: &Command) -> Result<Answer> {
    let count = |n: usize| Answer::Int(i64::try_from(n).unwrap_or(i64::MAX));
    Ok(match command {
        Command::Time => Answer::Int(i64::try_from(store.now_ms()).unwrap_or(i64::MAX)),
        Command::ZAdd { .. }
        | Command::ZRange { .. }
        | Command::ZCard(_)
        | Command::ZRem(..)
        | Command::ZRemBelow(..) => {
            return sorted_set(store, deadlines, command);
        }
        Command::Exists(key) => {
            touch(store, deadlines, key, KeyType::None)?;
            count(usize::from(store.key_type(key.as_bytes()) != KeyType::None))
        }
        Command::HSet(..) | Command::HSetNx(..) | Command::HGetAll(_) | Command::HGet(..) => {
            return hash(store, deadlines, command)
        }
        Command::PExpire(key, ms) => {
            touch(store, deadlines, key, KeyType::None)?;
            if store.key_type(key.as_bytes()) == KeyType::None {
                return Ok(count(0));
            }
            deadlines.insert(key.clone(), store.now_ms().saturating_add((*ms).max(1)));
            count(1)
        }
        Command::Del(key) => {
            touch(store, deadlines, key, KeyType::None)?;
            deadlines.remove(key);
            let existed = store.key_type(key.as_bytes()) != KeyType::None;
            store.del(key.as_bytes());
            count(usize::from(existed))
        }
        Command::Get(_) | Command::SetIfAbsent { .. } => return string(store, deadlines, command),
        Command::StreamLast(key) => {
            touch(store, deadlines, key, KeyType::Stream)?;
            Answer::Text(store.xlast(key.as_bytes()).map(|id| id.to_string()))
        }
        Command::StreamLen(key) => {
            touch(store, deadlines, key, KeyType::Stream)?;
            count(store.xlen(key.as_bytes()) as usize)
        }
        Command::StreamDelete(key, ids) => {
            touch(store, deadlines, key, KeyType::Stream)?;
            let ids: Vec<StreamId> = ids.iter().filter_map(|id| id.parse().ok()).collect();
            count(store.xdel(key.as_bytes(), &ids))
        }
        Command::Info(_) | Command::ConfigGet(_) => Answer::Text(None),
    })
}

/// The type of a string, as the store names it (only plain commands write one).
const STRING: KeyType = KeyType::Other("string");

/// A string command on the store (see [`answer`]): GET, and the upkeep
/// lease's `SET … NX PX … GET`, which answer what the key holds.
fn string(store: &mut Memory, deadlines: &mut HashMap<String, u64>, command: &Command) -> Result<Answer> {
    let (Command::Get(key) | Command::SetIfAbsent { key, .. }) = command else {
        return Err(Error::new(ErrorKind::Reply, format!("{command:?} is no string command")));
    };
    touch(store, deadlines, key, STRING)?;
    let held = store.string(key.as_bytes()).map(|value| String::from_utf8_lossy(value).into_owned());
    if let (None, Command::SetIfAbsent { value, ms, .. }) = (&held, command) {
        store.set_string(key.as_bytes(), value.as_bytes());
        deadlines.insert(key.clone(), store.now_ms().saturating_add((*ms).max(1)));
    }
    Ok(Answer::Text(held))
}

/// A hash command on the store (see [`answer`]).
fn hash(store: &mut Memory, deadlines: &mut HashMap<String, u64>, command: &Command) -> Result<Answer> {
    let count = |n: usize| Answer::Int(i64::try_from(n).unwrap_or(i64::MAX));
    let (Command::HSet(key, _) | Command::HSetNx(key, ..) | Command::HGetAll(key) | Command::HGet(key, _)) =
        command
    else {
        return Err(Error::new(ErrorKind::Reply, format!("{command:?} is no hash command")));
    };
    touch(store, deadlines, key, KeyType::Hash)?;
    Ok(match command {
        Command::HSet(_, fields) => {
            let fields: Vec<(&[u8], &[u8])> =
                fields.iter().map(|(field, value)| (field.as_bytes(), value.as_bytes())).collect();
            store.hset(key.as_bytes(), &fields);
            count(fields.len())
        }
        Command::HSetNx(_, field, value) => {
            let fresh = store.hget(key.as_bytes(), field.as_bytes()).is_none();
            if fresh {
                store.hset(key.as_bytes(), &[(field.as_bytes(), value.as_bytes())]);
            }
            count(usize::from(fresh))
        }
        Command::HGet(_, field) => Answer::Text(
            store
                .hget(key.as_bytes(), field.as_bytes())
                .map(|value| String::from_utf8_lossy(&value).into_owned()),
        ),
        _ => {
            let text = |bytes: Vec<u8>| String::from_utf8_lossy(&bytes).into_owned();
            let fields =
                store.hgetall(key.as_bytes()).into_iter().map(|(field, value)| (text(field), text(value)));
            Answer::Fields(fields.collect())
        }
    })
}

/// A sorted-set command on the store (see [`answer`]).
fn sorted_set(store: &mut Memory, deadlines: &mut HashMap<String, u64>, command: &Command) -> Result<Answer> {
    let count = |n: usize| Answer::Int(i64::try_from(n).unwrap_or(i64::MAX));
    let (Command::ZAdd { key, .. }
    | Command::ZRange { key, .. }
    | Command::ZCard(key)
    | Command::ZRem(key, _)
    | Command::ZRemBelow(key, _)) = command
    else {
        unreachable!("answer sends only sorted-set commands here")
    };
    touch(store, deadlines, key, KeyType::Zset)?;
    let key = key.as_bytes();
    Ok(match command {
        Command::ZAdd { score, member, raise_only, existing_only, .. } => {
            let score = score.unwrap_or_else(|| store.now_ms()) as f64;
            let seen = store.zscore(key, member.as_bytes());
            let may = !existing_only || seen.is_some();
            if may && (!raise_only || seen.is_none_or(|seen| seen < score)) {
                store.zadd(key, score, member.as_bytes());
            }
            count(usize::from(seen.is_none()))
        }
        Command::ZRange { count: wanted, latest, .. } => {
            let all = store.zhead(key, usize::MAX);
            let members: Vec<Vec<u8>> = if *latest {
                all.into_iter().rev().take(*wanted).collect()
            } else {
                all.into_iter().take(*wanted).collect()
            };
            let scored = members.into_iter().map(|member| {
                let score = store.zscore(key, &member).unwrap_or_default();
                (String::from_utf8_lossy(&member).into_owned(), score)
            });
            Answer::Scored(scored.collect())
        }
        Command::ZCard(_) => count(usize::try_from(store.zcard(key)).unwrap_or(usize::MAX)),
        Command::ZRem(_, members) => {
            let present: Vec<&String> =
                members.iter().filter(|member| store.zscore(key, member.as_bytes()).is_some()).collect();
            for member in &present {
                store.zrem(key, member.as_bytes());
            }
            count(present.len())
        }
        Command::ZRemBelow(_, below) => {
            // Scores below `below`: those up to the largest float under it.
            let gone = store.zupto(key, (*below as f64).next_down(), usize::MAX);
            for member in &gone {
                store.zrem(key, member);
            }
            count(gone.len())
        }
        other => unreachable!("answer sends only sorted-set commands here, not {other:?}"),
    })
}

/// Before a command on `key`: delete it when past its PEXPIRE, then check
/// it holds `wanted` (any type for [`KeyType::None`]) or nothing, as Redis
/// answers `WRONGTYPE`.
fn touch(store: &mut Memory, deadlines: &mut HashMap<String, u64>, key: &str, wanted: KeyType) -> Result<()> {
    if deadlines.get(key).is_some_and(|deadline| *deadline <= store.now_ms()) {
        deadlines.remove(key);
        store.del(key.as_bytes());
    }
    match store.key_type(key.as_bytes()) {
        found if found == KeyType::None || found == wanted || wanted == KeyType::None => Ok(()),
        _ => Err(Error::new(ErrorKind::Server, format!("WRONGTYPE {key} holds another type"))),
    }
}

/// A stream entry of the store as Redis would have answered it.
fn entry((id, fields): echomq_core::memory::Entry) -> StreamEntry {
    let fields =
        fields.into_iter().map(|(field, value)| (String::from_utf8_lossy(&field).into_owned(), value));
    StreamEntry { id: id.to_string(), fields: fields.collect() }
}

/// Run one call on the store: the core's reply, or its refusal.
fn run(store: &mut Memory, call: &Call) -> Result<Reply> {
    let keys: Vec<&[u8]> = call.keys.iter().map(|key| key.as_bytes()).collect();
    let args: Vec<&[u8]> = call.args.iter().map(Vec::as_slice).collect();
    call.name.run(store, &keys, &args).map_err(|refusal| Error::from_code(refusal.code, refusal.text))
}
