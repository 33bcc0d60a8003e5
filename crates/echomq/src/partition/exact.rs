//! A partitioned queue's exact rate (PROTOCOL.md §7.10): at most `rate`
//! claims in any `per` ms across every partition. Before each claim from
//! one of its queues, a worker asks the coordinator on the definition's
//! slot for permits (PERMIT), claims at most what it was granted, by the
//! grant's deadline (CLAIM's UNTIL, so a claim that runs late takes
//! nothing), and gives back what it did not use.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::executor::Command;
use crate::keyspace;
use crate::transition::{Claim, ClaimUntil, Claims, Held, Permit, Permits};
use crate::{Queue, Result};

/// How long a worker trusts what it last read of the definition's `rate`.
const RECHECK: Duration = Duration::from_secs(1);

/// How long an idle queue's waiting claim naps under an exact rate: a
/// claim that holds permits cannot wait on the server.
const IDLE_NAP: Duration = Duration::from_millis(50);

/// The coordinator of one partitioned queue, as its queues' claims ask it.
#[derive(Debug)]
pub(crate) struct Coordinator {
    /// The ordinary queue of the partitioned queue's name: its keyspace,
    /// `emq:{p}:`, holds the definition and the permit log.
    home: Queue,
    /// Whether an exact rate was set when last read, and when that was.
    read: Mutex<Option<(Instant, bool)>>,
}

impl Coordinator {
    pub(crate) fn new(home: Queue) -> Coordinator {
        Coordinator { home, read: Mutex::new(None) }
    }

    /// Whether the definition holds an exact rate: read at most every
    /// [`RECHECK`], so that one set while workers run binds them soon.
    async fn exact(&self) -> Result<bool> {
        let known = *self.read.lock().expect("never poisoned");
        if let Some((_, exact)) = known.filter(|(at, _)| at.elapsed() < RECHECK) {
            return Ok(exact);
        }
        let key = keyspace::partitions(self.home.name());
        let rate = self.home.executor().plain().one(Command::HGet(key, "rate".into())).await?.text()?;
        let exact = rate.is_some_and(|rate| rate != "0");
        self.remember(exact);
        Ok(exact)
    }

    fn remember(&self, exact: bool) {
        *self.read.lock().expect("never poisoned") = Some((Instant::now(), exact));
    }

    /// Claim up to `count` jobs from `queue` under the exact rate, when one
    /// is set; else as [`Queue::claims_freely`]. A claim that was to wait
    /// for work (`wait`) and found none naps instead: its permits hold
    /// only a moment.
    pub(crate) async fn claims(
        &self,
        queue: &Queue,
        lease: Duration,
        count: u64,
        wait: Option<Duration>,
    ) -> Result<Claims> {
        if !self.exact().await? {
            return queue.claims_freely(lease, count, wait).await;
        }
        let (granted, first, until) = match self.home.run(&Permit { count }).await? {
            Permits::Free => {
                self.remember(false);
                return queue.claims_freely(lease, count, wait).await;
            }
            // Asked again within a second at most: a lifted rate binds no longer.
            Permits::Wait(next) => {
                return Ok(Claims { jobs: Vec::new(), held: Some(Held::Wait(next.min(RECHECK))) })
            }
            Permits::Granted { count, first, until } => (count, first, until),
        };
        // A claim that failed may have landed: its permits are kept (they lapse), never given back.
        let mut claims = queue.run(&ClaimUntil { claim: Claim { lease, count: granted }, until }).await?;
        let used = claims.jobs.len() as u64;
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

    /// Give back the permits numbered `unused`: a claim took fewer jobs.
    /// One that cannot be given back only lowers the rate until it leaves
    /// the window.
    async fn give_back(&self, unused: std::ops::Range<u64>) {
        let key = keyspace::permits(self.home.name());
        let numbers = unused.map(|n| n.to_string()).collect();
        if let Err(err) = self.home.executor().plain().one(Command::ZRem(key, numbers)).await {
            tracing::debug!(queue = self.home.name(), error = %err, "unused permits not given back; they lapse");
        }
    }
}
