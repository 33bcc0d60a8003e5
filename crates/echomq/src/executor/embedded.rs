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
use redis::Value;

use super::{Call, Executor, Interrupts, StreamEntry};
use crate::keyspace;
use crate::workers::{Noted, Registration};
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
    /// When each worker registration's hash expires (the store keeps no
    /// TTLs), ms on the store's clock; always locked after the store.
    worker_deadlines: Arc<Mutex<HashMap<String, u64>>>,
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
            worker_deadlines: Arc::default(),
        }
    }

    /// Every key and its content, sorted by key.
    #[must_use]
    pub fn dump(&self) -> BTreeMap<Vec<u8>, Dump> {
        self.store().dump()
    }

    fn worker_deadlines(&self) -> MutexGuard<'_, HashMap<String, u64>> {
        self.worker_deadlines.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
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
    async fn run(&self, calls: &[Call]) -> Result<Vec<Result<Value>>> {
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
        Ok(replies)
    }

    /// Claim; when nothing is pending, sleep until a transition may have
    /// added to a pending set, or the wait is over.
    async fn claim_waiting(&self, claim: &Call, wait: Duration) -> Result<Value> {
        let attempt = || async { run(&mut self.store(), claim) };
        super::claim_on_arrival(&self.arrivals, &self.interrupts, wait, attempt).await
    }

    fn waits(&self) -> bool {
        true
    }

    async fn interrupt_waits(&self) {
        self.interrupts.interrupt();
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

    async fn stream_last(&self, key: &str) -> Result<Option<String>> {
        Ok(self.store().xlast(key.as_bytes()).map(|id| id.to_string()))
    }

    async fn register(&self, key: &str, name: &str) -> Result<()> {
        let mut store = self.store();
        registry_type(&mut store, key)?;
        // The store's `now` holds still within a call: a new one begins.
        store.begin();
        let now = store.now_ms() as f64;
        // GT: a clock that went back leaves the later time.
        if store.zscore(key.as_bytes(), name.as_bytes()).is_none_or(|seen| seen < now) {
            store.zadd(key.as_bytes(), now, name.as_bytes());
        }
        Ok(())
    }

    async fn registered(&self, key: &str, limit: usize) -> Result<Vec<String>> {
        let mut store = self.store();
        registry_type(&mut store, key)?;
        let all = store.zhead(key.as_bytes(), usize::MAX);
        // The most recently seen: the last of zhead's score order.
        let mut names: Vec<String> =
            all.iter().rev().take(limit).map(|name| String::from_utf8_lossy(name).into_owned()).collect();
        names.sort_unstable();
        Ok(names)
    }

    async fn unregister(&self, key: &str, name: &str) -> Result<()> {
        let mut store = self.store();
        registry_type(&mut store, key)?;
        store.zrem(key.as_bytes(), name.as_bytes());
        Ok(())
    }

    /// As on Redis; the hash's deadline is kept beside the store, on its
    /// clock, and a hash past it is deleted when next looked at.
    async fn beat_worker(&self, registration: &Registration) -> Result<()> {
        let key = keyspace::worker(&registration.id);
        let mut store = self.store();
        let mut deadlines = self.worker_deadlines();
        expire_worker(&mut store, &mut deadlines, &key);
        hash_type(&mut store, &key)?;
        registry_type(&mut store, keyspace::WORKERS)?;
        store.begin();
        let fields: Vec<(&[u8], &[u8])> = registration
            .fields
            .iter()
            .map(|(field, value)| (field.as_str().as_bytes(), value.as_bytes()))
            .collect();
        store.hset(key.as_bytes(), &fields);
        let ttl = u64::try_from(registration.ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        deadlines.insert(key, store.now_ms().saturating_add(ttl));
        store.zadd(keyspace::WORKERS.as_bytes(), registration.beat as f64, registration.id.as_bytes());
        Ok(())
    }

    async fn noted_workers(&self, limit: usize) -> Result<Vec<Noted>> {
        let mut store = self.store();
        let mut deadlines = self.worker_deadlines();
        registry_type(&mut store, keyspace::WORKERS)?;
        let all = store.zhead(keyspace::WORKERS.as_bytes(), usize::MAX);
        let mut noted = Vec::new();
        for member in all.iter().rev().take(limit) {
            let id = String::from_utf8_lossy(member).into_owned();
            let key = keyspace::worker(&id);
            expire_worker(&mut store, &mut deadlines, &key);
            hash_type(&mut store, &key)?;
            let beat = store.zscore(keyspace::WORKERS.as_bytes(), member).unwrap_or_default() as u64;
            let fields: HashMap<String, String> = store
                .hgetall(key.as_bytes())
                .into_iter()
                .map(|(field, value)| {
                    (
                        String::from_utf8_lossy(&field).into_owned(),
                        String::from_utf8_lossy(&value).into_owned(),
                    )
                })
                .collect();
            noted.push(Noted { id, beat, fields: (!fields.is_empty()).then_some(fields) });
        }
        Ok(noted)
    }

    async fn forget_workers(&self, ids: &[String], before: u64) -> Result<()> {
        let mut store = self.store();
        registry_type(&mut store, keyspace::WORKERS)?;
        let key = keyspace::WORKERS.as_bytes();
        for id in ids {
            store.zrem(key, id.as_bytes());
        }
        // Scores below `before`: those up to the largest float under it.
        for member in store.zupto(key, (before as f64).next_down(), usize::MAX) {
            store.zrem(key, &member);
        }
        Ok(())
    }

    async fn unregister_worker(&self, id: &str) -> Result<()> {
        let key = keyspace::worker(id);
        let mut store = self.store();
        registry_type(&mut store, keyspace::WORKERS)?;
        self.worker_deadlines().remove(&key);
        store.del(key.as_bytes());
        store.zrem(keyspace::WORKERS.as_bytes(), id.as_bytes());
        Ok(())
    }
}

/// Delete the worker hash `key` when its deadline has passed on the store's clock.
fn expire_worker(store: &mut Memory, deadlines: &mut HashMap<String, u64>, key: &str) {
    // The store's `now` holds still within a call: a new one begins.
    store.begin();
    if deadlines.get(key).is_some_and(|deadline| *deadline <= store.now_ms()) {
        deadlines.remove(key);
        store.del(key.as_bytes());
    }
}

/// A worker's key holds a hash, or nothing: as Redis answers WRONGTYPE.
fn hash_type(store: &mut Memory, key: &str) -> Result<()> {
    match store.key_type(key.as_bytes()) {
        KeyType::None | KeyType::Hash => Ok(()),
        _ => Err(Error::new(ErrorKind::Server, format!("WRONGTYPE {key} is not a hash"))),
    }
}

/// The queue registry's key holds a sorted set, or nothing: as Redis
/// answers WRONGTYPE, [`ErrorKind::Server`].
fn registry_type(store: &mut Memory, key: &str) -> Result<()> {
    match store.key_type(key.as_bytes()) {
        KeyType::None | KeyType::Zset => Ok(()),
        _ => Err(Error::new(ErrorKind::Server, format!("WRONGTYPE {key} is not a sorted set"))),
    }
}

/// A stream entry of the store as Redis would have answered it.
fn entry((id, fields): echomq_core::memory::Entry) -> StreamEntry {
    let fields =
        fields.into_iter().map(|(field, value)| (String::from_utf8_lossy(&field).into_owned(), value));
    StreamEntry { id: id.to_string(), fields: fields.collect() }
}

/// Run one call on the store, its reply as the `redis` crate would have read it.
fn run(store: &mut Memory, call: &Call) -> Result<Value> {
    let keys: Vec<&[u8]> = call.keys.iter().map(|key| key.as_bytes()).collect();
    let args: Vec<&[u8]> = call.args.iter().map(Vec::as_slice).collect();
    match call.name.run(store, &keys, &args) {
        Ok(reply) => Ok(value(reply)),
        Err(refusal) => Err(Error::from_code(refusal.code, refusal.text)),
    }
}

/// The core's reply as the `redis` crate would have read it off the wire.
fn value(reply: Reply) -> Value {
    match reply {
        Reply::Int(n) => Value::Int(n),
        Reply::Bulk(bytes) => Value::BulkString(bytes),
        Reply::Nil => Value::Nil,
        Reply::Array(items) => Value::Array(items.into_iter().map(value).collect()),
        Reply::Error(refusal) => {
            let error = redis::make_extension_error(refusal.code.to_string(), Some(refusal.text));
            Value::ServerError(
                redis::ServerError::try_from(error).expect("an extension error is a server error"),
            )
        }
    }
}
