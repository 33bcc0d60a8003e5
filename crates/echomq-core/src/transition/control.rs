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

use super::events::{emit, Events};
use super::{need, number, wake, wake_key};
use crate::description::{Description, Effect, Role};
use crate::limits::{
    CONCURRENCY, EVENTS, EVENTS_KEEP, KEEP_CANCELLED_COUNT, KEEP_CANCELLED_MS, KEEP_COUNT, KEEP_DEAD_COUNT,
    KEEP_DEAD_MS, KEEP_DONE_COUNT, KEEP_DONE_MS, KEEP_MS, RATE, RATE_PERIOD_MS, SWEEP_LIMIT, SWITCH,
};
use crate::parse::{options, queue_prefix};
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
    match store.key_type(config) {
        KeyType::None => return Ok(gate),
        KeyType::Hash => {}
        _ => need(store, config, KeyType::Hash)?,
    }
    // One read of the five fields (the module opens the key once).
    let fields = store.hmget(config, &[b"paused", b"concurrency", b"rate", b"per", b"paused_until"]);
    let setting = |at: usize| number(fields[at].as_deref()).filter(|n| *n >= 1.0);
    let (paused, concurrency, limit, per, until) =
        (setting(0), setting(1), setting(2), setting(3), setting(4));
    if paused == Some(1.0) {
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
/// oldest), log each claim at the gate's now. Nothing without a rate set.
pub(crate) fn spend<S: Store>(store: &mut S, rate: &[u8], gate: &Gate, claimed: &[Vec<u8>]) {
    let Some(log) = &gate.log else { return };
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
/// settings in `config`, else the defaults (0: no bound).
pub(crate) fn retention<S: Store>(store: &mut S, config: &[u8], state: Role) -> [u64; 2] {
    let (_, fields, defaults) =
        RETENTION.iter().find(|(role, _, _)| *role == state).expect("a finished state");
    let set = store.hmget(config, &[fields[0].as_bytes(), fields[1].as_bytes()]);
    let mut kept = *defaults;
    for (value, found) in kept.iter_mut().zip(set) {
        if let Some(n) = number(found.as_deref()).filter(|n| *n >= 0.0) {
            *value = n as u64;
        }
    }
    kept
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
        let was_paused = number(store.hget(config, b"paused").as_deref()) == Some(1.0);
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
        if was_paused && self.paused == Some(0) {
            if let Some(head) = store.zhead(pending, 1).pop() {
                let score = number(store.hget(priority, &head).as_deref()).unwrap_or(0.0);
                store.zrem(pending, &head);
                store.zadd(pending, score, &head);
                wake(store, wakes);
            }
        }
        // After the change: an EVENTS of this call already applies.
        let events = Events::open(store, self.keys.get(4).map(|events| (*events, config)))?;
        match self.paused {
            Some(1) if !was_paused => emit(&events, store, "paused", b"", &[]),
            Some(0) if was_paused => emit(&events, store, "resumed", b"", &[]),
            _ => {}
        }
        let mut setting =
            |field: &[u8]| Reply::count(number(store.hget(config, field).as_deref()).unwrap_or(0.0) as u64);
        let mut reply = vec![setting(b"paused"), setting(b"concurrency"), setting(b"rate"), setting(b"per")];
        for (state, _, _) in RETENTION {
            reply.extend(retention(store, config, state).map(Reply::count));
        }
        let length = number(store.hget(config, b"events").as_deref()).map_or(EVENTS_KEEP, |n| n as u64);
        reply.push(Reply::count(length));
        Ok(Reply::Array(reply))
    }
}
