//! PERMIT (protocol 1.8): up to `count` claims' worth of a partitioned
//! queue's exact rate and exact concurrency, from the coordinator on its
//! definition's slot (PROTOCOL.md §7.10).

use std::time::Duration;

use echomq_core::{limits, Name, Reply};

use super::argument::{checked, decimal, millis};
use super::reply::{array_reply, count_reply, unexpected};
use super::Transition;
use crate::{Keyspace, Result};

/// Ask a partitioned queue's coordinator for up to `count` permits, for
/// claims of `lease`: under an exact concurrency each permit runs until
/// that lease would end, and is renewed with its job's ([`Renew`](super::Renew)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Permit {
    /// How many claims' worth, 1..=1000.
    pub count: u64,
    /// The lease the claims will take, sent with the running key as an
    /// exact concurrency needs; `None` for the call of a worker that read
    /// no exact concurrency (refused, `EMQARG`, when the queue has one).
    pub lease: Option<Duration>,
}

/// What the coordinator granted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Permits {
    /// The queue has no exact limit: claim freely.
    Free,
    /// `count` permits, numbered `first` up: claim at most that many jobs,
    /// by the server ms `until` (CLAIM's UNTIL), and give back the rest.
    Granted {
        /// How many.
        count: u64,
        /// The first one's number.
        first: u64,
        /// When their claims must have run by, server ms.
        until: u64,
    },
    /// None now: the rate's next permit, or the first running one, frees
    /// after this long (or sooner, when a running job's permit is given back).
    Wait(Duration),
}

impl Transition for Permit {
    const NAME: Name = Name::Permit;
    type Output = Permits;

    /// The running key only with LEASE: PERMIT's two forms.
    fn keys(&self, keys: &Keyspace) -> Vec<String> {
        let roles = Self::NAME.describe().keys;
        let form = if self.lease.is_some() { roles.len() } else { roles.len() - 1 };
        roles[..form].iter().map(|role| self.key(keys, *role)).collect()
    }

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        let mut args = vec![b"COUNT".to_vec(), decimal(checked("COUNT", self.count, limits::CLAIM_COUNT)?)];
        if let Some(lease) = self.lease {
            args.extend([b"LEASE".to_vec(), decimal(millis("LEASE", lease, limits::LEASE_MS)?)]);
        }
        Ok(args)
    }

    fn parse(reply: Reply) -> Result<Permits> {
        let items = array_reply("the reply", reply)?;
        let [granted, first, until, wait] = <[Reply; 4]>::try_from(items)
            .map_err(|items| unexpected("the reply", &Reply::Array(items)))?;
        let granted = count_reply("granted", granted)?;
        let (first, until, wait) =
            (count_reply("first", first)?, count_reply("until", until)?, count_reply("wait", wait)?);
        Ok(match (granted, until) {
            (0, _) => Permits::Wait(Duration::from_millis(wait.max(1))),
            (_, 0) => Permits::Free,
            (count, until) => Permits::Granted { count, first, until },
        })
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        let e = super::edges::Ends::new();
        vec![
            Permit { count: *limits::CLAIM_COUNT.start(), lease: None },
            Permit { count: *limits::CLAIM_COUNT.start(), lease: Some(e.lease_min) },
            Permit { count: *limits::CLAIM_COUNT.end(), lease: Some(e.lease_max) },
        ]
    }
}
