//! PERMIT: up to COUNT claims' worth of a partitioned queue's exact rate
//! and exact concurrency (PROTOCOL.md §7.10; `permit.lua`). The coordinator
//! lives on the definition's slot: a worker asks it before each claim from
//! a partition, claims at most what it was granted, before the grant's
//! deadline (CLAIM's UNTIL), and gives back what it did not use.
//!
//! A permit counts against the rate while it is younger than PER plus its
//! hold (PER / 10, PER being 100 ms or more): a claim runs at most the hold after its
//! permit, so the claims of any PER ms come from permits of one window of
//! PER + hold ms, which never holds more than RATE.
//!
//! Under an exact concurrency a permit also runs (`<p>running`) until the
//! hold, the claims' LEASE and a slack of [`RUNNING_HOLD_MS`] have passed,
//! renewed before its job's lease (RENEW) and given back at its job's end:
//! a job's lease never outlasts its permit, so never more than CONCURRENCY
//! jobs hold leases at once.

use super::need;
use crate::description::{keys, Description, Effect};
use crate::limits::{
    CLAIM_COUNT, EXACT_CONCURRENCY, EXACT_PERIOD_MS, LEASE_MS, RATE, RUNNING_HOLD_MS, SWEEP_LIMIT,
};
use crate::parse::{malformed, named_keys, options, stored};
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal, Reply};

keys! {
    /// PERMIT's KEYS.
    PermitKeys { partitions: Partitions, permits: Permits }
    then running: Running
}

/// A parsed PERMIT.
#[derive(Debug)]
pub struct Permit<'a> {
    keys: PermitKeys<'a>,
    count: u64,
    lease: Option<u64>,
}

/// How long after its grant a permit may still be used, in ms: a tenth of
/// the period.
#[must_use]
pub const fn permit_hold_ms(per: u64) -> u64 {
    per / 10
}

/// What the definition holds of its exact limits, each checked.
struct Exact {
    /// `rate` claims in any `per` ms, when set.
    rate: Option<(u64, u64)>,
    /// At most this many jobs running at once, when set.
    concurrency: Option<u64>,
    /// The last permit's number, 0 for none yet.
    issued: u64,
}

impl Exact {
    /// The permits' hold: a tenth of the rate's period, or without a rate
    /// [`RUNNING_HOLD_MS`].
    fn hold(&self) -> u64 {
        self.rate.map_or(RUNNING_HOLD_MS, |(_, per)| permit_hold_ms(per))
    }
}

impl<'a> Permit<'a> {
    /// What PERMIT is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "permit",
        command: "EMQ.PERMIT",
        keys: PermitKeys::ROLES,
        forms: PermitKeys::FORMS,
        args: &[],
        options: &["COUNT", "LEASE"],
        effect: Effect::Grows,
        wakes_claims: false,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: false,
    };

    /// KEYS: partitions, permits[, running]. ARGV: `COUNT <1..=1000>` (1
    /// when not given), `LEASE <ms>` (the claims' lease).
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQARG`: the keys are not one queue's, in their number and roles; an option is unknown, given
    ///   twice, without its value or out of range.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Permit<'a>, Refusal> {
        let (keys, _) = named_keys::<PermitKeys>(keys, b"")?;
        let [count, lease] = options(args, [("COUNT", CLAIM_COUNT), ("LEASE", LEASE_MS)])?;
        Ok(Permit { keys, count: count.unwrap_or(1), lease })
    }

    /// `[granted, first, until, wait]`: with no exact limit set, `[COUNT, 0,
    /// 0, 0]` (claim freely); else the permits granted now, at most COUNT and
    /// at most the rate's and the concurrency's room, numbered `first` up,
    /// logged at now and running until the hold, LEASE and the slack have passed, and
    /// `until`, the server ms their claims must run by; or, none granted,
    /// `wait`, the ms until a permit leaves the window or stops running.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: a key holds another type.
    /// - `EMQDATA`: the definition's `rate`, `per`, `permits` or `concurrency` is not an integer in its
    ///   range, or one of `rate` and `per` is set without the other.
    /// - `EMQARG`: the definition holds an exact concurrency and the call passed no `running` key or
    ///   no LEASE.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let PermitKeys { partitions, permits, running } = self.keys;
        need(store, partitions, KeyType::Hash)?;
        need(store, permits, KeyType::Zset)?;
        if let Some(running) = running {
            need(store, running, KeyType::Zset)?;
        }
        let exact = exact_limits(store, partitions)?;
        let running = match (exact.concurrency, running, self.lease) {
            (None, ..) => None,
            (Some(concurrency), Some(running), Some(lease)) => Some((concurrency, running, lease)),
            (Some(_), ..) => {
                return Err(Refusal::arg(
                    "the queue has an exact concurrency: PERMIT takes its running key and LEASE",
                ))
            }
        };
        if exact.rate.is_none() && running.is_none() {
            return Ok(reply([self.count, 0, 0, 0]));
        }
        let now = store.now_ms();
        let hold = exact.hold();
        let rate = exact.rate.map(|(rate, per)| Room::of_rate(store, permits, now, rate, per + hold));
        let cap = running.map(|(concurrency, running, _)| Room::of_running(store, running, now, concurrency));
        let granted =
            [&rate, &cap].into_iter().flatten().fold(self.count, |granted, room| granted.min(room.left));
        if granted == 0 {
            let wait =
                [&rate, &cap].into_iter().flatten().filter(|room| room.left == 0).map(|room| room.wait);
            return Ok(reply([0, 0, 0, wait.max().unwrap_or(1).max(1)]));
        }
        // Numbered on from the value read (a stored `07` is 7, §2), written whole.
        let (first, last) = (exact.issued + 1, exact.issued + granted);
        store.hset(partitions, &[(b"permits", last.to_string().as_bytes())]);
        let names: Vec<String> = (first..=last).map(|n| n.to_string()).collect();
        if let Some(room) = rate {
            room.grant(store, permits, &names, now);
        }
        if let (Some(room), Some((_, running, lease))) = (cap, running) {
            room.grant(store, running, &names, now + hold + lease + RUNNING_HOLD_MS);
        }
        Ok(reply([granted, first, now + hold, 0]))
    }
}

/// What a limit leaves room for now: how many permits, or, none, how long
/// until one frees; and the permits past it, to trim when one is granted.
struct Room {
    left: u64,
    wait: u64,
    past: Vec<Vec<u8>>,
}

impl Room {
    /// The rate's room: `rate` less the permits logged within `window` ms
    /// (PER and the hold) of now; none, the oldest of those leaves then.
    fn of_rate<S: Store>(store: &mut S, permits: &[u8], now: u64, rate: u64, window: u64) -> Room {
        let edge = now.saturating_sub(window) as f64;
        let past = store.zupto(permits, edge, usize::MAX);
        let left = rate.saturating_sub(store.zcard(permits) - past.len() as u64);
        // Read only when it is full: the wait is said only then.
        let wait = match left {
            0 => {
                (store.zfirst_above(permits, edge).unwrap_or(now as f64) as u64 + window).saturating_sub(now)
            }
            _ => 0,
        };
        Room { left, wait, past }
    }

    /// The concurrency's room: `concurrency` less the permits running now
    /// (scored after now); none, the first of those stops then.
    fn of_running<S: Store>(store: &mut S, running: &[u8], now: u64, concurrency: u64) -> Room {
        let past = store.zupto(running, now as f64, usize::MAX);
        let left = concurrency.saturating_sub(store.zcard(running) - past.len() as u64);
        let wait = match left {
            0 => (store.zfirst_above(running, now as f64).unwrap_or(now as f64) as u64).saturating_sub(now),
            _ => 0,
        };
        Room { left, wait, past }
    }

    /// Trim what is past (at most a sweep's worth, bounded work) and add
    /// the permits `names`, each scored `score`.
    fn grant<S: Store>(mut self, store: &mut S, key: &[u8], names: &[String], score: u64) {
        self.past.truncate(*SWEEP_LIMIT.end() as usize);
        for member in &self.past {
            store.zrem(key, member);
        }
        let added: Vec<(f64, &[u8])> = names.iter().map(|name| (score as f64, name.as_bytes())).collect();
        store.zadd_many(key, &added);
    }
}

fn reply(values: [u64; 4]) -> Reply {
    Reply::Array(values.into_iter().map(Reply::count).collect())
}

/// The definition's exact limits: its rate, `rate` claims in any `per` ms
/// (a `rate` missing or 0 is none), its concurrency (missing or 0, none),
/// and the last permit's number; each checked before any write, as
/// PROTOCOL.md §7.10 orders them.
fn exact_limits<S: Store>(store: &mut S, partitions: &[u8]) -> Result<Exact, Refusal> {
    let fields: [&[u8]; 4] = [b"rate", b"per", b"permits", b"concurrency"];
    let read = store.hmget(partitions, &fields);
    let mut values = [None; 4];
    for (at, (field, value)) in fields.into_iter().zip(&read).enumerate() {
        values[at] = stored(value.as_deref(), partitions, field)?;
    }
    let [rate, per, issued, concurrency] = values;
    if issued.is_some_and(|issued| issued < 0) {
        return Err(malformed(partitions, b"permits", "0 or more"));
    }
    let issued = issued.unwrap_or(0) as u64;
    let rate = match rate.map(u64::try_from) {
        None | Some(Ok(0)) => None,
        Some(Ok(rate)) if RATE.contains(&rate) => Some(rate),
        Some(_) => return Err(malformed(partitions, b"rate", "0 to 100000")),
    };
    let rate = match (rate, per.map(u64::try_from)) {
        (None, _) => None,
        (Some(_), None) => return Err(malformed(partitions, b"per", "set beside rate")),
        (Some(rate), Some(Ok(per))) if EXACT_PERIOD_MS.contains(&per) => Some((rate, per)),
        (Some(_), Some(_)) => return Err(malformed(partitions, b"per", "100 to 86400000 ms")),
    };
    let concurrency = match concurrency.map(u64::try_from) {
        None | Some(Ok(0)) => None,
        Some(Ok(n)) if EXACT_CONCURRENCY.contains(&n) => Some(n),
        Some(_) => return Err(malformed(partitions, b"concurrency", "0 to 100000")),
    };
    Ok(Exact { rate, concurrency, issued })
}
