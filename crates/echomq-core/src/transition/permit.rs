//! PERMIT: up to COUNT claims' worth of a partitioned queue's exact rate
//! (PROTOCOL.md §7.10; `permit.lua`). The coordinator lives on the
//! definition's slot: a worker asks it before each claim from a partition,
//! claims at most what it was granted, before the grant's deadline (CLAIM's
//! UNTIL), and gives back what it did not use.
//!
//! A permit counts against the rate while it is younger than PER plus its
//! hold (PER / 10, PER being 100 ms or more): a claim runs at most the hold after its
//! permit, so the claims of any PER ms come from permits of one window of
//! PER + hold ms, which never holds more than RATE.

use super::need;
use crate::description::{keys, Description, Effect};
use crate::limits::{CLAIM_COUNT, EXACT_PERIOD_MS, RATE, SWEEP_LIMIT};
use crate::parse::{malformed, named_keys, options, stored};
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal, Reply};

keys! {
    /// PERMIT's KEYS.
    PermitKeys { partitions: Partitions, permits: Permits }
}

/// A parsed PERMIT.
#[derive(Debug)]
pub struct Permit<'a> {
    keys: PermitKeys<'a>,
    count: u64,
}

/// How long after its grant a permit may still be used, in ms: a tenth of
/// the period.
#[must_use]
pub const fn permit_hold_ms(per: u64) -> u64 {
    per / 10
}

impl<'a> Permit<'a> {
    /// What PERMIT is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "permit",
        command: "EMQ.PERMIT",
        keys: PermitKeys::ROLES,
        forms: PermitKeys::FORMS,
        args: &[],
        options: &["COUNT"],
        effect: Effect::Writes,
        wakes_claims: false,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: false,
    };

    /// KEYS: partitions, permits. ARGV: `COUNT <1..=1000>` (1 when not given).
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQARG`: the keys are not one queue's, in their number and roles; an option is unknown, given
    ///   twice, without its value or out of range.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Permit<'a>, Refusal> {
        let (keys, _) = named_keys::<PermitKeys>(keys, b"")?;
        let [count] = options(args, [("COUNT", CLAIM_COUNT)])?;
        Ok(Permit { keys, count: count.unwrap_or(1) })
    }

    /// `[granted, first, until, wait]`: with no exact rate set, `[COUNT, 0,
    /// 0, 0]` (claim freely); else the permits granted now, at most COUNT and
    /// at most the rate's room, numbered `first` up and logged at now, and
    /// `until`, the server ms their claims must run by; or, none granted,
    /// `wait`, the ms until the oldest permit leaves the window.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: a key holds another type.
    /// - `EMQDATA`: the definition's `rate`, `per` or `permits` is not an integer in its range, or one of
    ///   `rate` and `per` is set without the other.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let PermitKeys { partitions, permits } = self.keys;
        need(store, partitions, KeyType::Hash)?;
        need(store, permits, KeyType::Zset)?;
        let Some((rate, per, issued)) = exact_rate(store, partitions)? else {
            return Ok(reply([self.count, 0, 0, 0]));
        };
        let now = store.now_ms();
        let hold = permit_hold_ms(per);
        let edge = now.saturating_sub(per + hold) as f64;
        let mut expired = store.zupto(permits, edge, usize::MAX);
        let live = store.zcard(permits) - expired.len() as u64;
        let granted = rate.saturating_sub(live).min(self.count);
        if granted == 0 {
            // The oldest permit in the window leaves it at its grant + PER + hold.
            let oldest = store.zfirst_above(permits, edge).unwrap_or(now as f64) as u64;
            return Ok(reply([0, 0, 0, (oldest + per + hold).saturating_sub(now).max(1)]));
        }
        // Bounded work: trim at most a sweep's worth per grant.
        expired.truncate(*SWEEP_LIMIT.end() as usize);
        for member in &expired {
            store.zrem(permits, member);
        }
        // Numbered on from the value read (a stored `07` is 7, §2), written whole.
        let first = issued + 1;
        let last = issued + granted;
        store.hset(partitions, &[(b"permits", last.to_string().as_bytes())]);
        let names: Vec<String> = (first..=last).map(|n| n.to_string()).collect();
        let logged: Vec<(f64, &[u8])> = names.iter().map(|name| (now as f64, name.as_bytes())).collect();
        store.zadd_many(permits, &logged);
        Ok(reply([granted, first, now + hold, 0]))
    }
}

fn reply(values: [u64; 4]) -> Reply {
    Reply::Array(values.into_iter().map(Reply::count).collect())
}

/// The definition's exact rate, `rate` claims in any `per` ms, when one is
/// set (a `rate` missing or 0 is none), and the last permit's number (0 for
/// none yet); each checked before any write, as PROTOCOL.md §7.10 orders them.
fn exact_rate<S: Store>(store: &mut S, partitions: &[u8]) -> Result<Option<(u64, u64, u64)>, Refusal> {
    let fields: [&[u8]; 3] = [b"rate", b"per", b"permits"];
    let read = store.hmget(partitions, &fields);
    let mut values = [None; 3];
    for (at, (field, value)) in fields.into_iter().zip(&read).enumerate() {
        values[at] = stored(value.as_deref(), partitions, field)?;
    }
    let [rate, per, issued] = values;
    if issued.is_some_and(|issued| issued < 0) {
        return Err(malformed(partitions, b"permits", "0 or more"));
    }
    let rate = match rate.map(u64::try_from) {
        None | Some(Ok(0)) => return Ok(None),
        Some(Ok(rate)) if RATE.contains(&rate) => rate,
        Some(_) => return Err(malformed(partitions, b"rate", "0 to 100000")),
    };
    match per.map(u64::try_from) {
        None => Err(malformed(partitions, b"per", "set beside rate")),
        Some(Ok(per)) if EXACT_PERIOD_MS.contains(&per) => Ok(Some((rate, per, issued.unwrap_or(0) as u64))),
        Some(_) => Err(malformed(partitions, b"per", "100 to 86400000 ms")),
    }
}
