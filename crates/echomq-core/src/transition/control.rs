//! Flow control: the queue's settings (CONFIG) and the gate every claim
//! passes (see `config-3.lua` and `includes/gate.lua`, the Lua twins).
//!
//! The settings are the fields of one hash, `emq:{q}:config`: `paused` (`1`
//! while paused) and `concurrency` (at most that many jobs active at once).
//! [`gate`] is the one place a claim reads them; a transition that hands out
//! jobs asks it how many it may take.

use super::{need, number};
use crate::description::{Description, Effect, Role};
use crate::limits::{CONCURRENCY, SWITCH};
use crate::parse::{options, queue_prefix};
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal, Reply};

/// What the gate lets a claim take now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Gate {
    /// How many jobs the claim may take, at most the COUNT it asked for.
    pub(crate) room: u64,
    /// Why it may take fewer than it asked, as the reply's trailing element
    /// says it: `-1` paused (until resumed), `0` the concurrency limit is
    /// reached (until an active job ends). `None`: the gate held nothing back.
    pub(crate) held: Option<i64>,
}

/// The claim gate: paused? room under the concurrency limit? The caller has
/// checked the types of `active`; `config` is checked here. With no settings
/// (no config key) it costs one type lookup.
pub(crate) fn gate<S: Store>(store: &mut S, config: &[u8], active: &[u8], count: u64) -> Result<Gate, Refusal> {
    let open = Gate { room: count, held: None };
    match store.key_type(config) {
        KeyType::None => return Ok(open),
        KeyType::Hash => {}
        _ => need(store, config, KeyType::Hash)?,
    }
    if number(store.hget(config, b"paused").as_deref()) == Some(1.0) {
        return Ok(Gate { room: 0, held: Some(-1) });
    }
    match number(store.hget(config, b"concurrency").as_deref()) {
        Some(limit) if limit >= 1.0 => {
            let room = (limit as u64).saturating_sub(store.zcard(active));
            if room < count {
                return Ok(Gate { room, held: Some(0) });
            }
            Ok(open)
        }
        _ => Ok(open),
    }
}

/// A parsed CONFIG.
#[derive(Debug)]
pub struct Config<'a> {
    keys: &'a [&'a [u8]],
    paused: Option<u64>,
    concurrency: Option<u64>,
}

impl<'a> Config<'a> {
    /// What CONFIG is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "config",
        command: "EMQ.CONFIG",
        keys: &[Role::Config, Role::Pending, Role::Priority],
        required_keys: 3,
        args: &[],
        options: &["PAUSED", "CONCURRENCY"],
        effect: Effect::Writes,
        wakes_claims: true,
    };

    /// KEYS: config, pending, priority. ARGV: options `PAUSED 0|1`,
    /// `CONCURRENCY <n>` (0: no limit).
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Config<'a>, Refusal> {
        queue_prefix(keys, Self::DESCRIPTION.keys, b"")?;
        let [paused, concurrency] = options(args, [("PAUSED", SWITCH), ("CONCURRENCY", CONCURRENCY)])?;
        Ok(Config { keys, paused, concurrency })
    }

    /// Change the settings given, then reply them all: `[paused, concurrency]`
    /// (0: no limit). Resuming a paused queue re-adds the head of pending at
    /// its own score, so waiting claims wake as on an arrival.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let [config, pending, priority] = [self.keys[0], self.keys[1], self.keys[2]];
        need(store, config, KeyType::Hash)?;
        need(store, pending, KeyType::Zset)?;
        need(store, priority, KeyType::Hash)?;
        let was_paused = number(store.hget(config, b"paused").as_deref()) == Some(1.0);
        match self.paused {
            Some(1) => store.hset(config, &[(b"paused", b"1")]),
            Some(_) => store.hdel(config, b"paused"),
            None => {}
        }
        match self.concurrency {
            Some(0) => store.hdel(config, b"concurrency"),
            Some(n) => store.hset(config, &[(b"concurrency", n.to_string().as_bytes())]),
            None => {}
        }
        if was_paused && self.paused == Some(0) {
            if let Some(head) = store.zhead(pending, 1).pop() {
                let score = number(store.hget(priority, &head).as_deref()).unwrap_or(0.0);
                store.zrem(pending, &head);
                store.zadd(pending, score, &head);
            }
        }
        let paused = u64::from(number(store.hget(config, b"paused").as_deref()) == Some(1.0));
        let concurrency = number(store.hget(config, b"concurrency").as_deref()).unwrap_or(0.0) as u64;
        Ok(Reply::Array(vec![Reply::count(paused), Reply::count(concurrency)]))
    }
}
