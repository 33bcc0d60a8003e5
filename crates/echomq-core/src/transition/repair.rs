//! An operator's hand: CANCEL and RETRY (see the `.lua` twins).

use super::events::{emit, trailing, Events};
use super::{need, priority_of, read_field, to_pending, wake, wake_key, write_record, STATES};
use crate::description::{Description, Effect, Role};
use crate::parse::{kind, malformed, options, queue_prefix};
use crate::store::{KeyType, Store};
use crate::{Answer, Code, Refusal, Reply};

/// A parsed CANCEL.
#[derive(Debug)]
pub struct Cancel<'a> {
    keys: &'a [&'a [u8]],
    id: &'a [u8],
}

impl<'a> Cancel<'a> {
    /// What CANCEL is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "cancel",
        command: "EMQ.CANCEL",
        keys: &[
            Role::Job,
            Role::Pending,
            Role::Active,
            Role::Delayed,
            Role::Dead,
            Role::Cancelled,
            Role::Events,
            Role::Config,
        ],
        forms: &[8],
        args: &["id"],
        options: &[],
        effect: Effect::Writes,
        wakes_claims: false,
    };

    /// KEYS: job, pending, active, delayed, dead, cancelled, events, config. ARGV: id.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Cancel<'a>, Refusal> {
        let id = kind(args.first().copied())?;
        queue_prefix(keys, Self::DESCRIPTION.form(keys.len())?, id)?;
        options(args.get(1..).unwrap_or_default(), [])?;
        Ok(Cancel { keys, id })
    }

    /// From pending, active, delayed or dead to cancelled; 0 when cancelled already.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        for key in &self.keys[1..6] {
            need(store, key, KeyType::Zset)?;
        }
        let from = match read_field(store, self.keys[0], b"state")?.as_deref() {
            None => return Err(Refusal::new(Code::NoJob, "no such job")),
            Some(b"cancelled") => return Ok(Reply::Int(0)),
            Some(b"pending") => self.keys[1],
            Some(b"active") => self.keys[2],
            Some(b"delayed") => self.keys[3],
            Some(b"dead") => self.keys[4],
            Some(state) if !STATES.contains(&state) => {
                return Err(malformed(self.keys[0], b"state", "a state"))
            }
            Some(state) => {
                let state = String::from_utf8_lossy(state);
                return Err(Refusal::new(Code::State, format!("cannot cancel a {state} job")));
            }
        };
        let events = Events::open(store, trailing(self.keys, 8))?;
        store.zrem(from, self.id);
        let now = store.now_ms();
        write_record(store, self.keys[0], &[(b"state", b"cancelled")], now);
        store.zadd(self.keys[5], now as f64, self.id);
        emit(&events, store, "cancelled", self.id, &[]);
        Ok(Reply::Int(1))
    }
}

/// A parsed RETRY.
#[derive(Debug)]
pub struct Retry<'a> {
    keys: &'a [&'a [u8]],
    id: &'a [u8],
}

impl<'a> Retry<'a> {
    /// What RETRY is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "retry",
        command: "EMQ.RETRY",
        keys: &[Role::Job, Role::Dead, Role::Pending, Role::Priority, Role::Events, Role::Config, Role::Wake],
        forms: &[7],
        args: &["id"],
        options: &[],
        effect: Effect::Writes,
        wakes_claims: true,
    };

    /// KEYS: job, dead, pending, priority, events, config, wake. ARGV: id.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Retry<'a>, Refusal> {
        let id = kind(args.first().copied())?;
        queue_prefix(keys, Self::DESCRIPTION.form(keys.len())?, id)?;
        options(args.get(1..).unwrap_or_default(), [])?;
        Ok(Retry { keys, id })
    }

    /// A dead job back to pending at its priority.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        need(store, self.keys[1], KeyType::Zset)?;
        need(store, self.keys[2], KeyType::Zset)?;
        need(store, self.keys[3], KeyType::Hash)?;
        match read_field(store, self.keys[0], b"state")?.as_deref() {
            None => return Err(Refusal::new(Code::NoJob, "no such job")),
            Some(b"dead") => {}
            Some(state) if !STATES.contains(&state) => {
                return Err(malformed(self.keys[0], b"state", "a state"))
            }
            Some(state) => {
                let state = String::from_utf8_lossy(state);
                return Err(Refusal::new(Code::State, format!("cannot retry a {state} job")));
            }
        }
        let events = Events::open(store, trailing(self.keys, 6))?;
        let wakes = wake_key(store, self.keys, 6)?;
        let score = priority_of(store, self.keys[3], self.id)?;
        store.zrem(self.keys[1], self.id);
        let now = store.now_ms();
        to_pending(store, self.keys[0], self.keys[2], score, self.id, now);
        wake(store, wakes);
        emit(&events, store, "retried", self.id, &[]);
        Ok(Reply::Int(1))
    }
}
