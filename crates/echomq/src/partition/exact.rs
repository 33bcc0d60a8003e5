//! A partitioned queue's exact limits (PROTOCOL.md §7.10): at most `rate`
//! claims in any `per` ms, and at most `concurrency` jobs running at once,
//! across every partition. Before each claim from one of its queues, a
//! worker asks the coordinator on the definition's slot for permits
//! (PERMIT), claims at most what it was granted, by the grant's deadline
//! (CLAIM's UNTIL, so a claim that runs late takes nothing), and gives
//! back what it did not use. Under an exact concurrency each claimed job
//! keeps its permit: renewed before its lease (RENEW), given back at its end.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::executor::Command;
use crate::keyspace;
use crate::transition::{Claim, ClaimUntil, Claims, Held, Permit, Permits, Renew};
use crate::{ErrorKind, JobId, Queue, Result};

/// How long a worker trusts what it last read of the definition's limits.
const RECHECK: Duration = Duration::from_secs(1);

/// How long an idle queue's waiting claim naps under an exact limit: a
/// claim that holds permits cannot wait on the server.
const IDLE_NAP: Duration = Duration::from_millis(50);

/// How long a claim refused permits naps under an exact concurrency: any
/// job's end, in any worker, may free a place before the first running
/// permit's hold ends, which is all PERMIT's wait can say.
const BUSY_NAP: Duration = Duration::from_millis(25);

/// Which exact limits the definition held when last read.
#[derive(Clone, Copy, Debug, Default)]
struct Set {
    rate: bool,
    concurrency: bool,
}

/// The coordinator of one partitioned queue, as its queues' claims ask it.
#[derive(Debug)]
pub(crate) struct Coordinator {
    /// The ordinary queue of the partitioned queue's name: its keyspace,
    /// `emq:{p}:`, holds the definition, the permit log and the running permits.
    home: Queue,
    /// The exact limits set when last read, and when that was.
    read: Mutex<Option<(Instant, Set)>>,
    /// The running permit of each job this process claimed under an exact
    /// concurrency, by its queue and id, until the job ends.
    running: Mutex<HashMap<String, HashMap<JobId, u64>>>,
    /// Running permits whose jobs ended, to be given back in one call.
    ended: Arc<Mutex<Vec<u64>>>,
    /// Whether a task is giving back `ended` now.
    giving_back: Arc<AtomicBool>,
}

impl Coordinator {
    pub(crate) fn new(home: Queue) -> Coordinator {
        Coordinator {
            home,
            read: Mutex::new(None),
            running: Mutex::default(),
            ended: Arc::default(),
            giving_back: Arc::default(),
        }
    }

    /// Which exact limits the definition holds: read at most every
    /// [`RECHECK`], so that one set while workers run binds them soon.
    async fn set(&self) -> Result<Set> {
        let known = *self.read.lock().expect("never poisoned");
        if let Some((_, set)) = known.filter(|(at, _)| at.elapsed() < RECHECK) {
            return Ok(set);
        }
        let key = keyspace::partitions(self.home.name());
        let fields = ["rate", "concurrency"].map(|field| Command::HGet(key.clone(), field.into()));
        let mut answers = self.home.executor().plain().send(&fields).await?.into_iter();
        let mut nonzero = || -> Result<bool> {
            let answer = answers.next().unwrap_or_else(|| Ok(crate::executor::Answer::Text(None)))?;
            Ok(answer.text()?.is_some_and(|value| value != "0"))
        };
        let set = Set { rate: nonzero()?, concurrency: nonzero()? };
        self.remember(set);
        Ok(set)
    }

    fn remember(&self, set: Set) {
        *self.read.lock().expect("never poisoned") = Some((Instant::now(), set));
    }

    /// Claim up to `count` jobs from `queue` under the exact limits, when
    /// any is set; else as [`Queue::claims_freely`]. A claim that was to wait
    /// for work (`wait`) and found none naps instead: its permits hold
    /// only a moment.
    pub(crate) async fn claims(
        &self,
        queue: &Queue,
        lease: Duration,
        count: u64,
        wait: Option<Duration>,
    ) -> Result<Claims> {
        let mut set = self.set().await?;
        if !set.rate && !set.concurrency {
            return queue.claims_freely(lease, count, wait).await;
        }
        let permits = match self.permit(set, count, lease).await {
            // A concurrency set since the last read: the coordinator says so; read it now.
            Err(err) if err.kind == ErrorKind::Argument && !set.concurrency => {
                self.forget();
                set = self.set().await?;
                self.permit(set, count, lease).await?
            }
            permits => permits?,
        };
        let (granted, first, until) = match permits {
            Permits::Free => {
                self.remember(Set::default());
                return queue.claims_freely(lease, count, wait).await;
            }
            // Asked again within a second at most: a lifted limit binds no longer.
            Permits::Wait(next) => {
                let nap = next.min(if set.concurrency { BUSY_NAP } else { RECHECK });
                return Ok(Claims { jobs: Vec::new(), held: Some(Held::Wait(nap)) });
            }
            Permits::Granted { count, first, until } => (count, first, until),
        };
        // A claim that failed may have landed: its permits are kept (they lapse), never given back.
        let mut claims = queue.run(&ClaimUntil { claim: Claim { lease, count: granted }, until }).await?;
        let used = claims.jobs.len() as u64;
        if set.concurrency {
            let mut running = self.running.lock().expect("never poisoned");
            let held = running.entry(queue.name().to_owned()).or_default();
            held.extend(claims.jobs.iter().map(|job| job.id.clone()).zip(first..));
        }
        if used < granted {
            self.give_back(first + used..first + granted).await;
        }
        if claims.jobs.is_empty() && claims.held.is_none() {
            if let Some(wait) = wait {
                claims.held = Some(Held::Wait(IDLE_NAP.min(wait)));
            }
        }
        Ok(claims)
    }

    /// PERMIT for `count` claims of `lease`: with the running key and LEASE
    /// when the definition held an exact concurrency when last read, so
    /// that a concurrency set since is refused (`EMQARG`), never run past.
    async fn permit(&self, set: Set, count: u64, lease: Duration) -> Result<Permits> {
        self.home.run(&Permit { count, lease: set.concurrency.then_some(lease) }).await
    }

    /// Read the definition again at the next claim.
    fn forget(&self) {
        *self.read.lock().expect("never poisoned") = None;
    }

    /// Give back the permits numbered `unused`: a claim took fewer jobs.
    /// One that cannot be given back only lowers the limits until it
    /// leaves the window or stops running.
    async fn give_back(&self, unused: std::ops::Range<u64>) {
        let numbers: Vec<String> = unused.map(|n| n.to_string()).collect();
        let name = self.home.name();
        let both =
            [keyspace::permits(name), keyspace::running(name)].map(|key| Command::ZRem(key, numbers.clone()));
        if let Err(err) = self.home.executor().plain().send(&both).await {
            tracing::debug!(queue = name, error = %err, "unused permits not given back; they lapse");
        }
    }

    /// Renew the running permits of `jobs` of `queue` for another `lease`,
    /// before their leases are: for each, whether its lease may be renewed
    /// (its permit runs on, or it holds none), or `false` when its permit
    /// is gone, so that the job's lease may not outlast it.
    ///
    /// # Errors
    /// A failure to reach the coordinator: renew none of them.
    pub(crate) async fn renew(&self, queue: &Queue, jobs: &[&JobId], lease: Duration) -> Result<Vec<bool>> {
        let numbers: Vec<Option<u64>> = {
            let running = self.running.lock().expect("never poisoned");
            // No lookup, nor a call, for a queue whose jobs hold no permit (no exact concurrency).
            let Some(held) = running.get(queue.name()).filter(|held| !held.is_empty()) else {
                return Ok(vec![true; jobs.len()]);
            };
            jobs.iter().map(|id| held.get(*id).copied()).collect()
        };
        let held: Vec<u64> = numbers.iter().flatten().copied().collect();
        let mut runs = HashMap::with_capacity(held.len());
        for chunk in held.chunks(*echomq_core::limits::RENEWS.end() as usize) {
            let renewed = self.home.run(&Renew { lease, permits: chunk.to_vec() }).await?;
            runs.extend(chunk.iter().copied().zip(renewed));
        }
        if runs.values().any(|runs| !runs) {
            // A concurrency lifted since: its permits no longer bind, and none is kept.
            self.forget();
            if !self.set().await?.concurrency {
                self.running.lock().expect("never poisoned").clear();
                return Ok(vec![true; jobs.len()]);
            }
        }
        Ok(numbers
            .iter()
            .map(|number| number.is_none_or(|n| runs.get(&n).copied().unwrap_or(false)))
            .collect())
    }

    /// The job `id` of `queue` no longer runs here. When `landed`, the
    /// call that ended it answered or its lease was found lost: its running
    /// permit, if it holds one, is given back soon, in one call with the
    /// others that ended meanwhile. Else (the call failed, and may not have
    /// landed) the permit is kept until it lapses, at its hold's end, after
    /// the job's lease.
    pub(crate) fn ended(&self, queue: &Queue, id: &JobId, landed: bool) {
        let number = self
            .running
            .lock()
            .expect("never poisoned")
            .get_mut(queue.name())
            .and_then(|held| held.remove(id));
        let Some(number) = number else { return };
        if !landed {
            return;
        }
        self.ended.lock().expect("never poisoned").push(number);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return; // No runtime: the permit lapses at the end of its hold.
        };
        if self.giving_back.swap(true, Ordering::AcqRel) {
            return;
        }
        let (ended, giving_back) = (self.ended.clone(), self.giving_back.clone());
        let (via, key) = (self.home.executor().clone(), keyspace::running(self.home.name()));
        runtime.spawn(async move {
            loop {
                let numbers: Vec<String> = std::mem::take(&mut *ended.lock().expect("never poisoned"))
                    .into_iter()
                    .map(|n| n.to_string())
                    .collect();
                if numbers.is_empty() {
                    giving_back.store(false, Ordering::Release);
                    // One that ended between the take and the store: given back here, or by the task it started.
                    if ended.lock().expect("never poisoned").is_empty()
                        || giving_back.swap(true, Ordering::AcqRel)
                    {
                        return;
                    }
                    continue;
                }
                if let Err(err) = via.plain().one(Command::ZRem(key.clone(), numbers)).await {
                    tracing::debug!(error = %err, "ended jobs' permits not given back; they lapse");
                }
            }
        });
    }
}
