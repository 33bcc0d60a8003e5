//! DEFER: the holder was told to come back later; the job waits without
//! spending the attempt (PROTOCOL.md §7; `defer.lua`).

use super::events::{emit, Events};
use super::fenced::Fenced;
use super::gate::paused_until;
use super::grouped::Grouped;
use super::{policy_of, write_record};
use crate::description::{keys, Description, Effect};
use crate::limits::{DELAY_MS, FLAG, MAX_ATTEMPTS};
use crate::parse::{count, options};
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal, Reply};

keys! {
    /// DEFER's KEYS.
    DeferKeys { job: Job, active: Active, delayed: Delayed, policy: Policy, config: Config, events: Events }
}

/// A parsed DEFER.
#[derive(Debug)]
pub struct Defer<'a> {
    fenced: Fenced<'a, DeferKeys<'a>>,
    delay: u64,
    max_attempts: u64,
    pause: bool,
}

impl<'a> Defer<'a> {
    /// What DEFER is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "defer",
        command: "EMQ.DEFER",
        keys: DeferKeys::ROLES,
        forms: DeferKeys::FORMS,
        args: &["id", "token", "delay", "max_attempts"],
        options: &["PAUSE"],
        effect: Effect::Writes,
        wakes_claims: true,
        fenced: true,
        hands_out_tokens: false,
        waits_for_replication: true,
    };

    /// KEYS: job, active, delayed, policy, config, events. ARGV: id, token, delay,
    /// max attempts (the caller's, for a job with no ATTEMPTS of its own),
    /// then `PAUSE 0|1`.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQKIND`: the id (`ARGV[1]`) is not `JOB`-namespaced.
    /// - `EMQARG`: the keys are not this queue's, in their number and roles; the token, delay or
    ///   max_attempts is missing or out of range; an option is unknown, given twice or out of range.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Defer<'a>, Refusal> {
        let fenced = Fenced::parse(keys, args)?;
        let delay = count(args.get(2).copied(), "delay", DELAY_MS)?;
        let max_attempts = count(args.get(3).copied(), "max_attempts", MAX_ATTEMPTS)?;
        let [pause] = options(args.get(4..).unwrap_or_default(), [("PAUSE", FLAG)])?;
        Ok(Defer { fenced, delay, max_attempts, pause: pause == Some(1) })
    }

    /// The holder was told to come back later (an HTTP 429): the job waits in
    /// delayed for the delay without spending the attempt (its own ATTEMPTS
    /// grow by one), and with PAUSE 1 the queue's claims stop until then too.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: a key or the record holds another type.
    /// - `TRYAGAIN`: the record is missing while the queue's slot moves between cluster nodes.
    /// - `EMQNOJOB`: there is no record.
    /// - `EMQDATA`: the record's `state` or `attempts`, the job's own policy, `<q>config`'s `paused_until`
    ///   (with `PAUSE`) or `events` is malformed.
    /// - `EMQFENCE`: the job is not active, or `token` is not its `attempts` (PROTOCOL.md §6).
    /// - `EMQVERSION`: `<q>config`'s `protocol` is another major, or malformed.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let Fenced {
            keys: DeferKeys { job, active, delayed, policy: policies, config, events },
            id,
            prefix,
            ..
        } = self.fenced;
        let typed = [
            (active, KeyType::Zset),
            (delayed, KeyType::Zset),
            (policies, KeyType::Hash),
            (config, KeyType::Hash),
        ];
        self.fenced.check(store, job, &typed)?;
        let mut policy = policy_of(store, policies, id)?.unwrap_or_default();
        let paused_until = if self.pause { paused_until(store, config)? } else { None };
        let events = Events::open(store, Some((events, config)))?;
        let now = store.now_ms();
        let due = now + self.delay;
        let grouped = Grouped::read(store, prefix, id)?;
        store.zrem(active, id);
        grouped.off_active(store, id, false);
        write_record(store, job, &[(b"state", b"delayed")], now);
        store.zadd(delayed, due as f64, id);
        let refunded = (policy.max_attempts(self.max_attempts) + 1).min(*MAX_ATTEMPTS.end());
        policy.attempts = Some(refunded);
        store.hset(policies, &[(id, &policy.text())]);
        if self.pause && paused_until.is_none_or(|at| at < due as i64) {
            store.hset(config, &[(b"paused_until", due.to_string().as_bytes())]);
        }
        let delay = self.delay.to_string();
        let pause: &[u8] = if self.pause { b"1" } else { b"0" };
        emit(&events, store, "deferred", id, &[(b"delay", delay.as_bytes()), (b"pause", pause)]);
        Ok(Reply::Int(1))
    }
}
