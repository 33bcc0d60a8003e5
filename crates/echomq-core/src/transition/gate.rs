//! The gate every claim passes (PROTOCOL.md §7.1; `includes/gate.lua`):
//! pause, the concurrency limit, and the rate.
//!
//! The settings are fields of one hash, `emq:{q}:config` (CONFIG writes
//! them): `paused` (`1` while paused), `concurrency` (at most that many jobs
//! active at once), and `rate` and `per` (at most `rate` claims in any `per`
//! ms). A rate-limited queue logs each claim in `emq:{q}:rate`, scored by
//! the server's clock. [`gate`] is the one place a claim reads them and
//! [`spend`] the one place it logs; a transition that hands out jobs asks
//! the first how many it may take, and tells the second what it took.

use super::{need, protocol};
use crate::limits::SWEEP_LIMIT;
use crate::parse::{malformed, stored};
use crate::store::{KeyType, Store};
use crate::Refusal;

/// What the gate lets a claim take now.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Gate {
    /// How many jobs the claim may take, at most the COUNT it asked for.
    pub(crate) room: u64,
    /// Why it may take fewer than it asked, as the reply's trailing element
    /// says it: `-1` paused, `0` at the concurrency limit (until an active job
    /// ends), `n > 0` ms until the rate limit's next slot. `None`: the gate
    /// held nothing back.
    pub(crate) held: Option<i64>,
    /// The rate log to bring up to date after the claim, when a rate is set.
    log: Option<Log>,
}

impl Gate {
    /// The server's clock as the gate read it (only a rate-limited gate reads it).
    pub(crate) fn now(&self) -> Option<u64> {
        self.log.as_ref().map(|log| log.now)
    }
}

/// The settings a claim reads (PROTOCOL.md §7.1), a limit below 1 as none.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ClaimSettings {
    paused: bool,
    concurrency: Option<f64>,
    limit: Option<f64>,
    per: Option<f64>,
    until: Option<f64>,
}

/// The settings a claim reads, in one read with the queue's `protocol` and
/// the event log's length, each checked before the gate decides anything
/// (`EMQTYPE`, `EMQVERSION`, then `EMQDATA` in the order of the fields):
/// `None` when the queue has no settings. ACKNEXT calls it before its ack.
pub(crate) fn claim_settings<S: Store>(
    store: &mut S,
    config: &[u8],
) -> Result<Option<ClaimSettings>, Refusal> {
    match store.key_type(config) {
        KeyType::None => return Ok(None),
        KeyType::Hash => {}
        _ => need(store, config, KeyType::Hash)?,
    }
    // One read (the module opens the key once).
    let fields = store.hmget(
        config,
        &[b"protocol", b"paused", b"concurrency", b"rate", b"per", b"paused_until", b"events"],
    );
    protocol(config, fields[0].as_deref())?;
    let paused = switch(config, b"paused", fields[1].as_deref())?;
    let mut limits = [None; 5];
    let names: [&[u8]; 5] = [b"concurrency", b"rate", b"per", b"paused_until", b"events"];
    for (at, (field, value)) in names.into_iter().zip(&fields[2..]).enumerate() {
        // A setting below 1 is no limit.
        limits[at] = stored(value.as_deref(), config, field)?.filter(|n| *n >= 1).map(|n| n as f64);
    }
    let [concurrency, limit, per, until, _] = limits;
    Ok(Some(ClaimSettings { paused, concurrency, limit, per, until }))
}

/// A timed pause as DEFER reads it before its first write: `paused_until`,
/// read with the queue's `protocol`, both checked.
pub(crate) fn paused_until<S: Store>(store: &mut S, config: &[u8]) -> Result<Option<i64>, Refusal> {
    let [version, until] =
        <[Option<Vec<u8>>; 2]>::try_from(store.hmget(config, &[b"protocol", b"paused_until"]))
            .expect("a value a field");
    protocol(config, version.as_deref())?;
    stored(until.as_deref(), config, b"paused_until")
}

/// A rate-limited claim's view of the log: the server's now, and the
/// entries that fell out of the window (trimmed once nothing can refuse).
#[derive(Clone, Debug, PartialEq)]
struct Log {
    now: u64,
    /// The window's edge: an entry scored at or before it no longer counts.
    edge: f64,
    expired: Vec<Vec<u8>>,
}

/// The claim gate: paused? room under the concurrency limit? a rate slot?
/// The caller has checked `active`'s type; `config` is checked here, and
/// `rate` only when a rate is set (only then is it read). With no settings
/// (no config key) it costs one type lookup. It writes nothing. `ending`
/// leases of `active` end in the same call first (ACKNEXT's one): not counted.
pub(crate) fn gate<S: Store>(
    store: &mut S,
    config: &[u8],
    active: &[u8],
    rate: &[u8],
    count: u64,
    ending: u64,
) -> Result<Gate, Refusal> {
    let mut gate = Gate { room: count, held: None, log: None };
    let Some(ClaimSettings { paused, concurrency, limit, per, until }) = claim_settings(store, config)?
    else {
        return Ok(gate);
    };
    if paused {
        return Ok(Gate { room: 0, held: Some(-1), log: None });
    }
    // A timed pause (DEFER's): nothing until the server's clock reaches it.
    let mut clock = None;
    if let Some(until) = until {
        let now = store.now_ms();
        if until as u64 > now {
            return Ok(Gate { room: 0, held: Some((until as u64 - now) as i64), log: None });
        }
        clock = Some(now);
    }
    if let Some(concurrency) = concurrency {
        let room = (concurrency as u64).saturating_sub(store.zcard(active).saturating_sub(ending));
        if room < gate.room {
            gate.room = room;
            gate.held = Some(0);
        }
    }
    if let (Some(limit), Some(per)) = (limit, per) {
        need(store, rate, KeyType::Zset)?;
        let now = clock.unwrap_or_else(|| store.now_ms());
        let edge = now.saturating_sub(per as u64) as f64;
        let mut expired = store.zupto(rate, edge, usize::MAX);
        let live = store.zcard(rate) - expired.len() as u64;
        // Bounded work: trim at most a sweep's worth per claim.
        expired.truncate(*SWEEP_LIMIT.end() as usize);
        let room = (limit as u64).saturating_sub(live);
        if room <= gate.room && room < count {
            gate.room = room;
            // The next slot: when the oldest claim still in the window leaves it.
            let oldest = store.zfirst_above(rate, edge).unwrap_or(now as f64) as u64;
            gate.held = Some((oldest + per as u64 - now).max(1) as i64);
        }
        gate.log = Some(Log { now, edge, expired });
    }
    Ok(gate)
}

/// A claim as the rate log names it, `<id>:<token>`, and the time of its
/// `active` event (the gate's now when the call wrote none).
pub(crate) type Logged = (Vec<u8>, u64);

/// Bring the rate log up to date after a claim took `claimed` (each
/// `<id>:<token>` and the time of its `active` event): drop what left the
/// window (at most 1000 entries, the oldest), log each claim at its event's
/// time, never before the gate's now. Nothing without a rate set, nor when
/// the claim took nothing.
///
/// Why the event's time: a server stamps an entry with its own reading of
/// the clock, which may fall in a later millisecond than the gate's (and is
/// never earlier, PROTOCOL.md §7.1). Logged at the gate's now, a claim
/// whose event came a millisecond later would leave the window a
/// millisecond early in the gate's count, and the event log would show one
/// interval of PER ms with more than RATE claims. Logged at a time at or
/// after the gate's, every claim of an interval is still counted by the
/// last claim of that interval: no interval of either log holds more.
///
/// An id enqueued again after its record was deleted is a new job whose
/// tokens start again at 1, so its claim's `<id>:<token>` may still be in
/// the window from the earlier life: that claim is logged as `<id>:<token>:<n>`, the
/// least n ≥ 2 not in the window, so that every claim counts (1.2).
pub(crate) fn spend<S: Store>(store: &mut S, rate: &[u8], gate: &Gate, claimed: &[Logged]) {
    let Some(log) = &gate.log else { return };
    // A claim that took nothing writes nothing, not even the trim.
    if claimed.is_empty() {
        return;
    }
    for member in &log.expired {
        store.zrem(rate, member);
    }
    for (member, at) in claimed {
        log_claim(store, rate, log.edge, member, (*at).max(log.now));
    }
}

/// Log one claim `member` (`<id>:<token>`) in the rate log `rate` at `at`:
/// as `<id>:<token>:<n>`, the least n ≥ 2 not in the window (whose edge is
/// `edge`), when the plain name is (a job enqueued again after its record
/// was deleted starts its tokens again at 1). The queue's log and a group's.
pub(crate) fn log_claim<S: Store>(store: &mut S, rate: &[u8], edge: f64, member: &[u8], at: u64) {
    let mut logged = member.to_vec();
    let mut n = 1;
    while store.zscore(rate, &logged).is_some_and(|score| score > edge) {
        n += 1;
        logged = [member, b":", n.to_string().as_bytes()].concat();
    }
    store.zadd(rate, at as f64, &logged);
}

/// `paused`, read as it must be stored: `1` (paused), `0` or nothing (not);
/// anything else is `EMQDATA <key> paused is not 0 or 1`.
pub(super) fn switch(config: &[u8], field: &[u8], value: Option<&[u8]>) -> Result<bool, Refusal> {
    match value {
        None | Some(b"0") => Ok(false),
        Some(b"1") => Ok(true),
        Some(_) => Err(malformed(config, field, "0 or 1")),
    }
}
