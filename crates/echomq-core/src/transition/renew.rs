//! RENEW: a worker keeps the running permits of its jobs under a
//! partitioned queue's exact concurrency (PROTOCOL.md §7.10;
//! `renew.lua`), as it renews their leases: each permit named that still
//! runs now runs until the hold (at least [`RUNNING_HOLD_MS`]) and LEASE
//! have passed from now. A worker renews a job's permit before its lease,
//! so that the lease never outlasts the permit.

use super::need;
use super::permit::exact_limits;
use crate::description::{keys, Description, Effect};
use crate::limits::{LEASE_MS, RENEWS, RUNNING_HOLD_MS, TOKEN};
use crate::parse::count;
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal, Reply};

keys! {
    /// RENEW's KEYS.
    RenewKeys { partitions: Partitions, running: Running }
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

    /// KEYS: partitions, running. ARGV: lease, then 1 to 1000 permit numbers.
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

    /// Each named permit still in `running` runs until now + hold + LEASE,
    /// never shortened; one not there (given back, or lapsed and trimmed)
    /// is not written back. Replies, for each named permit in order, 1 when
    /// it runs on or 0 when it is gone.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: a key holds another type.
    /// - `EMQDATA`: the definition's `rate`, `per`, `permits` or `concurrency` is malformed, as PERMIT
    ///   reads them.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let RenewKeys { partitions, running } = self.keys;
        need(store, partitions, KeyType::Hash)?;
        need(store, running, KeyType::Zset)?;
        let until =
            store.now_ms() + exact_limits(store, partitions)?.hold().max(RUNNING_HOLD_MS) + self.lease;
        let mut renewed = Vec::with_capacity(self.numbers.len());
        for &number in &self.numbers {
            // Members are written in decimal by PERMIT: a number spelt `07` is member `7`.
            let member = number.to_string();
            let runs = match store.zscore(running, member.as_bytes()) {
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
