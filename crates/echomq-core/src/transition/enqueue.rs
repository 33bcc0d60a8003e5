//! ENQUEUE: admit one job (see `enqueue-5.lua`).

use super::{need, write_record};
use crate::description::{Description, Effect, Role};
use crate::limits::{AT_MS, DELAY_MS, MAX_PAYLOAD, PRIORITY};
use crate::parse::{count, integer, kind, lossy, queue_prefix};
use crate::policy::{self, Policy};
use crate::store::{KeyType, Store};
use crate::{Answer, Code, Refusal, Reply};

/// A parsed ENQUEUE.
#[derive(Debug)]
pub struct Enqueue<'a> {
    keys: &'a [&'a [u8]],
    id: &'a [u8],
    payload: &'a [u8],
    priority: i64,
    delay: Option<u64>,
    at: Option<u64>,
    policy: Option<Policy>,
}

impl<'a> Enqueue<'a> {
    /// What ENQUEUE is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "enqueue",
        command: "EMQ.ENQUEUE",
        keys: &[Role::Job, Role::Pending, Role::Delayed, Role::Priority, Role::Policy],
        required_keys: 2,
        args: &["id", "payload"],
        options: &["PRIORITY", "DELAY", "AT", "ATTEMPTS", "BACKOFF", "BACKOFF_EXP", "TIMEOUT"],
        effect: Effect::Writes,
        wakes_claims: true,
    };

    /// KEYS: job, pending[, delayed, priority[, policy]]. ARGV: id, payload, options.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Enqueue<'a>, Refusal> {
        let id = kind(args.first().copied())?;
        if ![2, 4, 5].contains(&keys.len()) {
            return Err(Refusal::arg("wrong number of keys"));
        }
        queue_prefix(keys, &Self::DESCRIPTION.keys[..keys.len()], id)?;
        let payload = *args.get(1).ok_or_else(|| Refusal::arg("payload is missing"))?;
        if payload.len() > MAX_PAYLOAD {
            return Err(Refusal::new(Code::Size, format!("payload exceeds {MAX_PAYLOAD} bytes")));
        }
        let (mut priority, mut delay, mut at) = (None, None, None);
        let mut found = [None; 4];
        let mut rest = &args[2..];
        while let Some((&name, tail)) = rest.split_first() {
            let value = tail.first().copied();
            let upper = name.to_ascii_uppercase();
            let of_policy =
                policy::OPTIONS.iter().position(|(known, _)| known.as_bytes() == upper.as_slice());
            match (upper.as_slice(), of_policy) {
                (b"PRIORITY", _) if priority.is_none() => {
                    priority = Some(integer(value, "PRIORITY", PRIORITY)?)
                }
                (b"DELAY", _) if delay.is_none() => delay = Some(count(value, "DELAY", DELAY_MS)?),
                (b"AT", _) if at.is_none() => at = Some(count(value, "AT", AT_MS)?),
                (_, Some(at)) if found[at].is_none() => {
                    let (label, range) = &policy::OPTIONS[at];
                    found[at] = Some(count(value, label, range.clone())?);
                }
                (b"PRIORITY" | b"DELAY" | b"AT", _) | (_, Some(_)) => {
                    return Err(Refusal::arg(format!("{} given twice", lossy(&upper))));
                }
                _ => return Err(Refusal::arg(format!("unknown option {}", lossy(name)))),
            }
            rest = tail.get(1..).unwrap_or_default();
        }
        if delay.is_some() && at.is_some() {
            return Err(Refusal::arg("DELAY and AT exclude each other"));
        }
        let policy = Policy::from_options(found)?;
        let priority = priority.unwrap_or(0);
        if policy.is_some() && keys.len() != 5 {
            return Err(Refusal::arg("ATTEMPTS, BACKOFF, BACKOFF_EXP and TIMEOUT need all five keys"));
        }
        if (delay.is_some() || at.is_some() || priority != 0) && keys.len() < 4 {
            return Err(Refusal::arg("PRIORITY, DELAY and AT need all four keys"));
        }
        Ok(Enqueue { keys, id, payload, priority, delay, at, policy })
    }

    /// Write the record and put the id in pending, or in delayed when due later.
    pub fn apply<S: Store>(self, store: &mut S) -> Answer {
        let now = store.now_ms();
        let due = self.at.or(self.delay.map(|delay| now + delay)).filter(|due| *due > now);
        let record = self.keys[0];
        match store.key_type(record) {
            KeyType::None => {}
            KeyType::Hash => return Ok(Reply::Int(0)),
            _ => need(store, record, KeyType::Hash)?,
        }
        need(store, self.keys[1], KeyType::Zset)?;
        if due.is_some() {
            need(store, self.keys[2], KeyType::Zset)?;
        }
        if self.priority != 0 {
            need(store, self.keys[3], KeyType::Hash)?;
        }
        if self.policy.is_some() {
            need(store, self.keys[4], KeyType::Hash)?;
        }

        let state: &[u8] = if due.is_some() { b"delayed" } else { b"pending" };
        let enqueued_at = now.to_string();
        let fields: [(&[u8], &[u8]); 4] = [
            (b"state", state),
            (b"attempts", b"0"),
            (b"payload", self.payload),
            (b"enqueued_at", enqueued_at.as_bytes()),
        ];
        write_record(store, record, &fields, now);
        if self.priority != 0 {
            store.hset(self.keys[3], &[(self.id, self.priority.to_string().as_bytes())]);
        }
        if let Some(policy) = &self.policy {
            store.hset(self.keys[4], &[(self.id, &policy.text())]);
        }
        match due {
            Some(due) => store.zadd(self.keys[2], due as f64, self.id),
            None => store.zadd(self.keys[1], self.priority as f64, self.id),
        }
        Ok(Reply::Int(1))
    }
}
