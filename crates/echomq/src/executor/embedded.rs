//! The embedded executor: the core's transitions run in-process on a
//! [`Memory`] store. No server, no set-up: the demo's default, and a fake
//! that is not a fake for a user's own unit tests, since it runs the very
//! code the native module runs.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use echomq_core::memory::{Clock, Dump, SystemClock};
use echomq_core::{Memory, Reply};
use redis::Value;

use super::{Dispatch, Interrupts};
use crate::keyspace::Keyspace;
use crate::transition::{Claim, Claimed, Transition};
use crate::{Error, Result};

/// Runs transitions in this process. Cheap to clone; clones share the store.
#[derive(Clone)]
pub struct Embedded {
    store: Arc<Mutex<Memory>>,
    /// Told after every transition that may add to a pending set.
    arrivals: Arc<tokio::sync::Notify>,
    interrupts: Arc<Interrupts>,
}

impl Default for Embedded {
    fn default() -> Self {
        Embedded::new()
    }
}

impl Embedded {
    /// An empty store on the machine's clock.
    pub fn new() -> Embedded {
        Embedded::with_clock(Arc::new(SystemClock))
    }

    /// An empty store on `clock`: a [`ManualClock`](echomq_core::memory::ManualClock)
    /// makes time a test's to move.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Embedded {
        Embedded {
            store: Arc::new(Mutex::new(Memory::new(clock))),
            arrivals: Arc::default(),
            interrupts: Arc::default(),
        }
    }

    /// Every key and its content, sorted by key.
    pub fn dump(&self) -> BTreeMap<Vec<u8>, Dump> {
        self.store().dump()
    }

    /// The store itself, for tests that arrange keys by hand.
    pub fn store(&self) -> MutexGuard<'_, Memory> {
        // A panic while holding the lock cannot leave a transition half done:
        // transitions check everything before their first write.
        self.store.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Dispatch for Embedded {
    async fn dispatch<T: Transition>(&self, keys: &Keyspace, call: &T) -> Result<T::Output> {
        let outcome = run(&mut self.store(), keys, call);
        self.announce::<T>();
        outcome
    }

    /// The calls one after another, under one lock.
    async fn dispatch_batch<T: Transition>(
        &self,
        keys: &Keyspace,
        calls: &[T],
    ) -> Result<Vec<Result<T::Output>>> {
        let outcomes = {
            let mut store = self.store();
            calls.iter().map(|call| run(&mut store, keys, call)).collect()
        };
        self.announce::<T>();
        Ok(outcomes)
    }

    /// Claim; when nothing is pending, sleep until a transition may have
    /// added to a pending set, or the wait is over.
    async fn claim_waiting(&self, keys: &Keyspace, call: &Claim, wait: Duration) -> Result<Vec<Claimed>> {
        let claim = || async { run(&mut self.store(), keys, call) };
        super::claim_on_arrival(&self.arrivals, &self.interrupts, wait, claim).await
    }

    fn waits(&self) -> bool {
        true
    }

    async fn interrupt_waits(&self) {
        self.interrupts.interrupt();
    }
}

impl Embedded {
    /// Wake waiting claims after a transition that may add to a pending set.
    fn announce<T: Transition>(&self) {
        if matches!(T::NAME, "enqueue" | "release" | "reap" | "promote" | "retry") {
            self.arrivals.notify_waiters();
        }
    }
}

fn run<T: Transition>(store: &mut Memory, keys: &Keyspace, call: &T) -> Result<T::Output> {
    let keys = call.keys(keys);
    let args = call.args()?;
    let keys: Vec<&[u8]> = keys.iter().map(|key| key.as_bytes()).collect();
    let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    match echomq_core::run(store, T::NAME, &keys, &args) {
        Ok(reply) => T::parse(value(reply)),
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
    }
}
