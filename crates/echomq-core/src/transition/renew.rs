//! RENEW: a worker keeps the running permits of its jobs under a
//! partitioned queue's exact concurrency (PROTOCOL.md §7.10;
//! `renew.lua`), as it renews their leases: each permit named that still
//! runs (scored after now) runs until LEASE and a slack of
//! [`RUNNING_HOLD_MS`] have passed from now. A worker renews a job's permit
//! before its lease, and renews the lease only when the permit's renewal
//! came back within half the slack, so that the lease never outlasts it.

use super::need;
use crate::description::{keys, Description, Effect};
use crate::limits::{LEASE_MS, RENEWS, RUNNING_HOLD_MS, TOKEN};
use crate::parse::count;
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal, Reply};

keys! {
    /// RENEW's KEYS.
    RenewKeys { running: Running }
}

/// A parsed RENEW.
#[derive(Debug)]
pub struct Renew<'a> {
    keys: RenewKeys<'a>,
    lease: u64,
    /// The permits' numbers.
    numbers: Vec<u64>,
}

impl<'a> Renew<'a> {
    /// What RENEW is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "renew",
        command: "EMQ.RENEW",
        keys: RenewKeys::ROLES,
        forms: RenewKeys::FORMS,
        args: &["lease", "permit"],
        options: &[],
        effect: Effect::Writes,
        wakes_claims: false,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: false,
    };

    /// KEYS: running. ARGV: lease, then 1 to 1000 permit numbers.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQARG`: the keys are not one queue's, in their number and roles; the lease is missing or out
    ///   of range; no permit is named, more than 1000 are, or one is not a number from 1 up.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Renew<'a>, Refusal> {
        let (keys, _) = crate::parse::named_keys::<RenewKeys>(keys, b"")?;
        let lease = count(args.first().copied(), "lease", LEASE_MS)?;
        let named = args.get(1..).unwrap_or_default();
        if named.len() as u64 > *RENEWS.end() {
            return Err(Refusal::arg(format!("at most {} permits a call", RENEWS.end())));
        }
        let mut numbers = vec![count(named.first().copied(), "permit", TOKEN)?];
        for &number in named.get(1..).unwrap_or_default() {
            numbers.push(count(Some(number), "permit", TOKEN)?);
        }
        Ok(Renew { keys, lease, numbers })
    }

    /// Each named permit that still runs (scored after now) runs until
    /// LEASE and the slack have passed from now, never shortened; one not
    /// there or scored at or before now (given back, or lapsed) is gone,
    /// and not written back.
    /// Replies, for each named permit in order, 1 when it runs on or 0 when
    /// it is gone.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: `running` holds another type.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let RenewKeys { running } = self.keys;
        need(store, running, KeyType::Zset)?;
        let now = store.now_ms();
        let until = now + RUNNING_HOLD_MS + self.lease;
        let mut renewed = Vec::with_capacity(self.numbers.len());
        for &number in &self.numbers {
            // Members are written in decimal by PERMIT: a number spelt `07` is member `7`.
            let member = number.to_string();
            let runs = match store.zscore(running, member.as_bytes()) {
                Some(held) if held <= now as f64 => false,
                Some(held) if held < until as f64 => {
                    store.zadd(running, until as f64, member.as_bytes());
                    true
                }
                Some(_) => true,
                None => false,
            };
            renewed.push(Reply::count(u64::from(runs)));
        }
        Ok(Reply::Array(renewed))
    }
}
