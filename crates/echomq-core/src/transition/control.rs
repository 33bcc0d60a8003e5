//! Flow control: the queue's settings (CONFIG) and the gate every claim
//! passes (see CONFIG's script and `includes/gate.lua`, the Lua twins).
//!
//! The settings are the fields of one hash, `emq:{q}:config`: `paused` (`1`
//! while paused), `concurrency` (at most that many jobs active at once), and
//! `rate` and `per` (at most `rate` claims in any `per` ms). A rate-limited
//! queue logs each claim in `emq:{q}:rate`, scored by the server's clock.
//! [`gate`] is the one place a claim reads them and [`spend`] the one place
//! it logs; a transition that hands out jobs asks the first how many it may
//! take, and tells the second what it took.

use super::events::events_setting;
use super::events::{emit, Events};
use super::{need, priority_of, protocol, wake, wake_key};
use crate::description::{Description, Effect, Role};
use crate::limits::{
    CONCURRENCY, EVENTS, KEEP_CANCELLED_COUNT, KEEP_CANCELLED_MS, KEEP_COUNT, KEEP_DEAD_COUNT, KEEP_DEAD_MS,
    KEEP_DONE_COUNT, KEEP_DONE_MS, KEEP_MS, RATE, RATE_PERIOD_MS, SWEEP_LIMIT, SWITCH,
};
use crate::parse::{malformed, options, queue_prefix, stored};
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal, Reply};

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
    expired: Vec<Vec<u8>>,
}

/// The claim gate: paused? room under the concurrency limit? a rate slot?
/// The caller has checked `active`'s type; `config` is checked here, and
/// `rate` only when a rate is set (only then is it read). With no settings
/// (no config key) it costs one type lookup. It writes nothing.
pub(crate) fn gate<S: Store>(
    store: &mut S,
    config: &[u8],
    active: &[u8],
    rate: &[u8],
    count: u64,
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
        let room = (concurrency as u64).saturating_sub(store.zcard(active));
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
        gate.log = Some(Log { now, expired });
    }
    Ok(gate)
}

/// Bring the rate log up to date after a claim took `claimed` (each
/// `<id>:<token>`): drop what left the window (at most 1000 entries, the
/// oldest), log each claim at the gate's now. Nothing without a rate set,
/// nor when the claim took nothing.
pub(crate) fn spend<S: Store>(store: &mut S, rate: &[u8], gate: &Gate, claimed: &[Vec<u8>]) {
    let Some(log) = &gate.log else { return };
    // A claim that took nothing writes nothing, not even the trim.
    if claimed.is_empty() {
        return;
    }
    for member in &log.expired {
        store.zrem(rate, member);
    }
    for member in claimed {
        store.zadd(rate, log.now as f64, member);
    }
}

/// The retention of each finished state: its settings' fields in `config`
/// (age in ms, count) and their defaults.
pub(crate) const RETENTION: [(Role, [&str; 2], [u64; 2]); 3] = [
    (Role::Done, ["done_age", "done_count"], [KEEP_DONE_MS, KEEP_DONE_COUNT]),
    (Role::Dead, ["dead_age", "dead_count"], [KEEP_DEAD_MS, KEEP_DEAD_COUNT]),
    (Role::Cancelled, ["cancelled_age", "cancelled_count"], [KEEP_CANCELLED_MS, KEEP_CANCELLED_COUNT]),
];

/// How long and how many jobs of finished `state` the queue keeps: its
/// settings in `config`, else the defaults (0: no bound; a setting below 0
/// counts as unset). A setting that is not an integer is `EMQDATA`: the
/// caller reads it before its first write.
pub(crate) fn retention<S: Store>(store: &mut S, config: &[u8], state: Role) -> Result<[u64; 2], Refusal> {
    let (_, fields, defaults) =
        RETENTION.iter().find(|(role, _, _)| *role == state).expect("a finished state");
    let [version, set @ ..] = <[Option<Vec<u8>>; 3]>::try_from(
        store.hmget(config, &[b"protocol", fields[0].as_bytes(), fields[1].as_bytes()]),
    )
    .expect("a value a field");
    protocol(config, version.as_deref())?;
    let mut kept = *defaults;
    for ((value, found), field) in kept.iter_mut().zip(set).zip(fields) {
        if let Some(n) = stored(found.as_deref(), config, field.as_bytes())?.filter(|n| *n >= 0) {
            *value = n as u64;
        }
    }
    Ok(kept)
}

/// `paused`, read as it must be stored: `1` (paused), `0` or nothing (not);
/// anything else is `EMQDATA <key> paused is not 0 or 1`.
fn switch(config: &[u8], field: &[u8], value: Option<&[u8]>) -> Result<bool, Refusal> {
    match value {
        None | Some(b"0") => Ok(false),
        Some(b"1") => Ok(true),
        Some(_) => Err(malformed(config, field, "0 or 1")),
    }
}

/// The settings CONFIG reads and answers, each checked as it must be stored
/// (`EMQVERSION`, then `EMQDATA`, in this order of fields): `protocol`,
/// `paused`, `concurrency`, `rate`, `per`, the retention, `events`.
struct Settings {
    protocol: Option<Vec<u8>>,
    paused: bool,
    concurrency: u64,
    rate: u64,
    per: u64,
    retention: [u64; 6],
    events: u64,
}

fn read_settings<S: Store>(store: &mut S, config: &[u8]) -> Result<Settings, Refusal> {
    let [version, paused, concurrency, rate, per] = <[Option<Vec<u8>>; 5]>::try_from(
        store.hmget(config, &[b"protocol", b"paused", b"concurrency", b"rate", b"per"]),
    )
    .expect("a value a field");
    protocol(config, version.as_deref())?;
    let paused = switch(config, b"paused", paused.as_deref())?;
    let mut limits = [0; 3];
    for (at, (field, value)) in
        [(b"concurrency".as_slice(), concurrency), (b"rate", rate), (b"per", per)].into_iter().enumerate()
    {
        limits[at] = stored(value.as_deref(), config, field)?.map_or(0, |n| n.max(0) as u64);
    }
    let mut retention_read = [0; 6];
    for (at, (state, _, _)) in RETENTION.iter().enumerate() {
        let [age, count] = retention(store, config, *state)?;
        retention_read[2 * at] = age;
        retention_read[2 * at + 1] = count;
    }
    let events = events_setting(store, config)?;
    let [concurrency, rate, per] = limits;
    Ok(Settings { protocol: version, paused, concurrency, rate, per, retention: retention_read, events })
}

/// A parsed CONFIG.
#[derive(Debug)]
pub struct Config<'a> {
    keys: &'a [&'a [u8]],
    paused: Option<u64>,
    concurrency: Option<u64>,
    rate: Option<(u64, Option<u64>)>,
    /// Retention, in [`RETENTION`]'s order: done age and count, dead…, cancelled….
    keep: [Option<u64>; 6],
    /// The event log's length (0: off).
    events: Option<u64>,
}

impl<'a> Config<'a> {
    /// What CONFIG is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "config",
        command: "EMQ.CONFIG",
        keys: &[Role::Config, Role::Pending, Role::Priority, Role::Rate, Role::Events, Role::Wake],
        forms: &[6],
        args: &[],
        options: &[
            "PAUSED",
            "CONCURRENCY",
            "RATE",
            "PER",
            "DONE_AGE",
            "DONE_COUNT",
            "DEAD_AGE",
            "DEAD_COUNT",
            "CANCELLED_AGE",
            "CANCELLED_COUNT",
            "EVENTS",
        ],
        effect: Effect::Writes,
        wakes_claims: true,
    };

    /// KEYS: config, pending, priority, rate, events, wake. ARGV: options
    /// `PAUSED 0|1`, `CONCURRENCY <n>` (0: no limit), `RATE <n>` (0: no
    /// limit) with `PER <ms>`, retention, `EVENTS <n>` (0: off).
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Config<'a>, Refusal> {
        queue_prefix(keys, Self::DESCRIPTION.form(keys.len())?, b"")?;
        let [paused, concurrency, rate, per, done_age, done_count, dead_age, dead_count, cancelled_age, cancelled_count, events] =
            options(
                args,
                [
                    ("PAUSED", SWITCH),
                    ("CONCURRENCY", CONCURRENCY),
                    ("RATE", RATE),
                    ("PER", RATE_PERIOD_MS),
                    ("DONE_AGE", KEEP_MS),
                    ("DONE_COUNT", KEEP_COUNT),
                    ("DEAD_AGE", KEEP_MS),
                    ("DEAD_COUNT", KEEP_COUNT),
                    ("CANCELLED_AGE", KEEP_MS),
                    ("CANCELLED_COUNT", KEEP_COUNT),
                    ("EVENTS", EVENTS),
                ],
            )?;
        let keep = [done_age, done_count, dead_age, dead_count, cancelled_age, cancelled_count];
        let rate = match (rate, per) {
            (None, None) => None,
            (None, Some(_)) => return Err(Refusal::arg("PER needs RATE")),
            (Some(0), _) => Some((0, None)),
            (Some(_), None) => return Err(Refusal::arg("RATE needs PER")),
            (Some(n), per) => Some((n, per)),
        };
        Ok(Config { keys, paused, concurrency, rate, keep, events })
    }

    /// Change the settings given, then reply them all: `[paused, concurrency,
    /// rate, per]` (0: no limit), then each finished state's retention, age
    /// and count, as TRIM applies it (the default where none is set), then
    /// the event log's length (the default where none is set; 0: off).
    /// Resuming a paused queue re-adds the head of pending at its own score,
    /// so waiting claims wake as on an arrival. Removing the rate deletes
    /// its claim log. With the events key, pausing and resuming are events.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let [config, pending, priority, rate] = [self.keys[0], self.keys[1], self.keys[2], self.keys[3]];
        need(store, config, KeyType::Hash)?;
        need(store, pending, KeyType::Zset)?;
        need(store, priority, KeyType::Hash)?;
        need(store, rate, KeyType::Zset)?;
        if let Some(events) = self.keys.get(4) {
            need(store, events, KeyType::Stream)?;
        }
        let wakes = wake_key(store, self.keys, 5)?;
        // Everything the reply shows, read and checked before any write.
        let stored_settings = read_settings(store, config)?;
        let was_paused = stored_settings.paused;
        let resumed_head = match (was_paused, self.paused) {
            (true, Some(0)) => match store.zhead(pending, 1).pop() {
                Some(head) => Some((priority_of(store, priority, &head)?, head)),
                None => None,
            },
            _ => None,
        };
        // One HSET of what is set, then one HDEL of what is removed: the
        // writes the script makes, so replication and keyspace events match.
        let mut set: Vec<(&[u8], String)> = Vec::new();
        let mut removed: Vec<&[u8]> = Vec::new();
        match self.paused {
            Some(1) => set.push((b"paused", "1".into())),
            // Resuming also ends a timed pause (DEFER's).
            Some(_) => removed.extend([b"paused".as_slice(), b"paused_until"]),
            None => {}
        }
        match self.concurrency {
            Some(0) => removed.push(b"concurrency"),
            Some(n) => set.push((b"concurrency", n.to_string())),
            None => {}
        }
        match self.rate {
            Some((n, Some(per))) if n > 0 => {
                set.push((b"rate", n.to_string()));
                set.push((b"per", per.to_string()));
            }
            Some(_) => removed.extend([b"rate".as_slice(), b"per"]),
            None => {}
        }
        let fields = RETENTION.iter().flat_map(|(_, fields, _)| fields);
        for (field, value) in fields.zip(self.keep) {
            if let Some(n) = value {
                set.push((field.as_bytes(), n.to_string()));
            }
        }
        if let Some(n) = self.events {
            set.push((b"events", n.to_string()));
        }
        if !set.is_empty() {
            let fields: Vec<(&[u8], &[u8])> = set.iter().map(|(f, v)| (*f, v.as_bytes())).collect();
            store.hset(config, &fields);
        }
        for field in removed {
            store.hdel(config, field);
        }
        if matches!(self.rate, Some((0, _))) {
            store.del(rate);
        }
        if let Some((score, head)) = resumed_head {
            store.zrem(pending, &head);
            store.zadd(pending, score, &head);
            // Set anew (DEL, then ZADD), so that the server signals the key
            // to every claim blocked on it, native ones too, even over a
            // stale member (a ZADD to a key that exists signals nothing).
            if let Some(key) = wakes {
                store.del(key);
            }
            wake(store, wakes);
        }
        // After the change: an EVENTS of this call already applies.
        let events = Events::open(store, self.keys.get(4).map(|events| (*events, config)))?;
        match self.paused {
            Some(1) if !was_paused => emit(&events, store, "paused", b"", &[]),
            Some(0) if was_paused => emit(&events, store, "resumed", b"", &[]),
            _ => {}
        }
        // After the writes, which only wrote integers in the form read back.
        let now = read_settings(store, config)?;
        let mut reply: Vec<Reply> = [u64::from(now.paused), now.concurrency, now.rate, now.per]
            .into_iter()
            .chain(now.retention)
            .chain([now.events])
            .map(Reply::count)
            .collect();
        if let Some(version) = now.protocol {
            reply.push(Reply::Bulk(version));
        }
        Ok(Reply::Array(reply))
    }
}
