//! CONFIG: the queue's settings, read and written (PROTOCOL.md §7.1;
//! `config.lua`), and the retention TRIM reads from them.

use super::events::{emit, events_setting, Events};
use super::gate::switch;
use super::{need, priority_of, protocol, wake, wake_key};
use crate::description::{keys, Description, Effect, Role};
use crate::limits::{
    CONCURRENCY, EVENTS, KEEP_CANCELLED_COUNT, KEEP_CANCELLED_MS, KEEP_COUNT, KEEP_DEAD_COUNT, KEEP_DEAD_MS,
    KEEP_DONE_COUNT, KEEP_DONE_MS, KEEP_MS, RATE, RATE_PERIOD_MS, SWITCH,
};
use crate::parse::{named_keys, options, stored};
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal, Reply};

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
        // As the gate applies it: a number below 1 is no limit, 0.
        limits[at] = stored(value.as_deref(), config, field)?.map_or(0, |n| n.max(0) as u64);
    }
    // A rate is a limit only with its period: each 0 without the other.
    if limits[1] == 0 || limits[2] == 0 {
        limits[1..].fill(0);
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

keys! {
    /// CONFIG's KEYS.
    ConfigKeys {
        config: Config,
        pending: Pending,
        priority: Priority,
        rate: Rate,
        events: Events,
        wake: Wake,
    }
}

/// A parsed CONFIG.
#[derive(Debug)]
pub struct Config<'a> {
    keys: ConfigKeys<'a>,
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
        keys: ConfigKeys::ROLES,
        forms: ConfigKeys::FORMS,
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
        effect: Effect::Grows,
        wakes_claims: true,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: true,
    };

    /// KEYS: config, pending, priority, rate, events, wake. ARGV: options
    /// `PAUSED 0|1`, `CONCURRENCY <n>` (0: no limit), `RATE <n>` (0: no
    /// limit) with `PER <ms>`, retention, `EVENTS <n>` (0: off).
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQARG`: the keys are not this queue's, in their number and roles; an option is unknown, given
    ///   twice or out of range; `RATE` comes without `PER`, or `PER` without `RATE`.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Config<'a>, Refusal> {
        let (keys, _) = named_keys::<ConfigKeys>(keys, b"")?;
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
    /// rate, per]` as the gate applies them (0: no limit; `rate` and `per`
    /// both 0 unless both are 1 or more), then each finished state's retention, age
    /// and count, as TRIM applies it (the default where none is set), then
    /// the event log's length (the default where none is set; 0: off).
    /// Resuming a paused queue re-adds the head of pending at its own score,
    /// so waiting claims wake as on an arrival. Removing the rate deletes
    /// its claim log. With the events key, pausing and resuming are events.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: a key holds another type.
    /// - `EMQVERSION`: `<q>config`'s `protocol` is another major, or malformed.
    /// - `EMQDATA`: a setting of `<q>config` is malformed (`paused` not 0 or 1, a limit not an integer), or,
    ///   on a resume, the head of pending's priority is not an integer.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let checked = self.check(store)?;
        self.write_settings(store);
        if let Some(head) = checked.resumed_head {
            resume(store, self.keys.pending, head, checked.wakes);
        }
        // After the change: an EVENTS of this call already applies.
        let events = Events::open(store, Some((self.keys.events, self.keys.config)))?;
        if let Some(change) = self.change(checked.was_paused) {
            emit(&events, store, change, b"", &[]);
        }
        // After the writes, which only wrote integers in the form read back.
        let now = read_settings(store, self.keys.config)?;
        Ok(settings_reply(now))
    }

    /// Everything the reply shows, read and checked before any write: the
    /// keys' types, the stored settings and, on a resume, the head of
    /// pending with its score.
    fn check<S: Store>(&self, store: &mut S) -> Result<Checked<'a>, Refusal> {
        let ConfigKeys { config, pending, priority, rate, .. } = self.keys;
        need(store, config, KeyType::Hash)?;
        need(store, pending, KeyType::Zset)?;
        need(store, priority, KeyType::Hash)?;
        need(store, rate, KeyType::Zset)?;
        need(store, self.keys.events, KeyType::Stream)?;
        let wakes = wake_key(store, Some(self.keys.wake))?;
        let was_paused = read_settings(store, config)?.paused;
        let resumed_head = match (was_paused, self.paused) {
            (true, Some(0)) => match store.zhead(pending, 1).pop() {
                // Its priority checked; a grouped head is scored past it (§7.9).
                Some(head) => {
                    let priority = priority_of(store, priority, &head)?;
                    Some((store.zscore(pending, &head).unwrap_or(priority), head))
                }
                None => None,
            },
            _ => None,
        };
        Ok(Checked { wakes, was_paused, resumed_head })
    }

    /// Write the settings given: one HSET of what is set, then one HDEL of
    /// what is removed, the writes the script makes, so replication and
    /// keyspace events match; removing the rate deletes its claim log.
    fn write_settings<S: Store>(&self, store: &mut S) {
        let Changes { set, removed } = self.changes();
        if !set.is_empty() {
            let fields: Vec<(&[u8], &[u8])> = set.iter().map(|(f, v)| (*f, v.as_bytes())).collect();
            store.hset(self.keys.config, &fields);
        }
        for field in removed {
            store.hdel(self.keys.config, field);
        }
        if matches!(self.rate, Some((0, _))) {
            store.del(self.keys.rate);
        }
    }

    /// What this call changes in `<q>config`.
    fn changes(&self) -> Changes {
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
        Changes { set, removed }
    }

    /// The event this call is, if it pauses a running queue or resumes a
    /// paused one.
    fn change(&self, was_paused: bool) -> Option<&'static str> {
        match self.paused {
            Some(1) if !was_paused => Some("paused"),
            Some(0) if was_paused => Some("resumed"),
            _ => None,
        }
    }
}

/// What a CONFIG call changes in `<q>config`, in the order the script
/// writes it.
struct Changes {
    /// The fields it sets, with their values.
    set: Vec<(&'static [u8], String)>,
    /// The fields it removes.
    removed: Vec<&'static [u8]>,
}

/// What CONFIG's checks hand its writes.
struct Checked<'k> {
    /// The wake-up key, checked to be a sorted set.
    wakes: Option<&'k [u8]>,
    /// Whether the queue was paused before this call.
    was_paused: bool,
    /// On a resume, the head of pending and its score.
    resumed_head: Option<(f64, Vec<u8>)>,
}

/// Re-add the head of pending at its own score, so that claims waiting on
/// the queue wake as on an arrival.
fn resume<S: Store>(store: &mut S, pending: &[u8], (score, head): (f64, Vec<u8>), wakes: Option<&[u8]>) {
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

/// The reply: `[paused, concurrency, rate, per]`, the retention, the event
/// log's length, then the protocol version when one is stored.
fn settings_reply(settings: Settings) -> Reply {
    let mut reply: Vec<Reply> =
        [u64::from(settings.paused), settings.concurrency, settings.rate, settings.per]
            .into_iter()
            .chain(settings.retention)
            .chain([settings.events])
            .map(Reply::count)
            .collect();
    if let Some(version) = settings.protocol {
        reply.push(Reply::Bulk(version));
    }
    Reply::Array(reply)
}
