//! The lease: CLAIM hands jobs out and mints their tokens; ACK, FAIL, EXTEND
//! and RELEASE carry the token and are fenced by it, and so is PROGRESS, the
//! holder's report of how far it got (see the `.lua` twins).

use super::control::{claim_settings, gate, paused_until, spend};
use super::events::{emit, error_text, trailing, Events};
use super::{
    attempts_of, fence, need, number, policy_of, present_here, priority_of, read_records, remove, to_pending,
    wake, wake_key, write_record, write_stamped, Stamped, Taken,
};
use crate::description::{Description, Effect, Role};
use crate::limits::{
    ACKS, CLAIM_COUNT, DELAY_MS, FLAG, LEASE_MS, MAX_ATTEMPTS, MAX_ERROR_TEXT, MAX_PROGRESS, MAX_RESULT,
    TOKEN,
};
use crate::parse::{count, kind, lossy, options, queue_prefix, record_key};
use crate::policy::Policy;
use crate::store::{KeyType, Store};
use crate::{Answer, Code, Refusal, Reply};

/// A parsed CLAIM.
#[derive(Debug)]
pub struct Claim<'a> {
    keys: &'a [&'a [u8]],
    prefix: &'a [u8],
    lease: u64,
    count: u64,
    /// `BLOCK <ms>`: the native command's wait for a job (0: no limit). The
    /// core claims at once; the caller does the waiting.
    pub block: Option<u64>,
}

impl<'a> Claim<'a> {
    /// What CLAIM is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "claim",
        command: "EMQ.CLAIM",
        keys: &[
            Role::Pending,
            Role::Active,
            Role::Config,
            Role::Rate,
            Role::Policy,
            Role::Events,
            Role::Headers,
            Role::Wake,
        ],
        forms: &[8],
        args: &["lease"],
        options: &["COUNT", "BLOCK"],
        effect: Effect::Writes,
        wakes_claims: false,
    };

    /// KEYS: pending, active, config, rate, policy, events, headers, wake.
    /// ARGV: lease, then COUNT (and BLOCK, native only).
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Claim<'a>, Refusal> {
        let prefix = queue_prefix(keys, Self::DESCRIPTION.form(keys.len())?, b"")?;
        let lease = count(args.first().copied(), "lease", LEASE_MS)?;
        let [count, block] = options(
            args.get(1..).unwrap_or_default(),
            [("COUNT", CLAIM_COUNT), ("BLOCK", LEASE_MS_OR_FOREVER)],
        )?;
        Ok(Claim { keys, prefix, lease, count: count.unwrap_or(1), block })
    }

    /// The pending key, for a caller that blocks on it.
    pub fn pending_key(&self) -> &'a [u8] {
        self.keys[0]
    }

    /// The wake-up key, when the call passed it: a caller that blocks
    /// watches it too, since a resume sets it (PROTOCOL.md §9).
    pub fn wake_key(&self) -> Option<&'a [u8]> {
        self.keys.get(7).copied()
    }

    /// Take up to COUNT ids from the head of pending, each under a new lease,
    /// as many as the queue's gate lets through; when it held back jobs
    /// that pending still holds, or the queue is paused, its reason follows
    /// the jobs (PROTOCOL.md §7, CLAIM).
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        self.apply_to(store, None)
    }

    /// [`apply`](Claim::apply), with the head of pending and its records
    /// already read and checked (ACKNEXT's, before its ack): not read again.
    fn apply_to<S: Store>(&self, store: &mut S, head: Option<Head>) -> Answer {
        let [pending, active, config, rate, policy] =
            [self.keys[0], self.keys[1], self.keys[2], self.keys[3], self.keys[4]];
        need(store, pending, KeyType::Zset)?;
        need(store, active, KeyType::Zset)?;
        // Only a queue with jobs of their own policy (or headers) has the
        // key: one lookup each. Types first, then the gate's settings.
        let policies = side_hash(store, Some(policy))?;
        let headers = side_hash(store, self.keys.get(6).copied())?;
        let gate = gate(store, config, active, rate, self.count)?;
        let events = Events::open(store, self.keys.get(5).map(|events| (*events, config)))?;
        let wakes = wake_key(store, self.keys, 7)?;
        let sides = Sides { policies, headers };
        let (mut claimed, logged) = self.take(store, gate.room, gate.now(), sides, &events, head)?;
        spend(store, rate, &gate, &logged);
        // Jobs left that the gate would let through: the next waiting claim
        // takes them (a chain, one claimer woken at a time).
        if !claimed.is_empty() && gate.held.is_none() && store.zcard(pending) > 0 {
            wake(store, wakes);
        }
        // The trailer says a limit held back jobs pending still holds, or a pause.
        if let Some(held) = gate.held.filter(|&held| held == -1 || store.zcard(pending) > 0) {
            claimed.push(Reply::Int(held));
        }
        Ok(Reply::Array(claimed))
    }

    /// Claim up to `room` jobs from the head of pending: their replies, and
    /// each as the rate log names it, `<id>:<token>`. `now` is the gate's
    /// clock reading when it read one: the records' stamps and the rate log
    /// then show the same moment. A job with a policy gets it as a fourth
    /// element; one with headers gets them as a fifth (after its policy,
    /// or nil).
    fn take<S: Store>(
        &self,
        store: &mut S,
        room: u64,
        now: Option<u64>,
        sides: Sides<'_>,
        events: &Option<Events<'_>>,
        head: Option<Head>,
    ) -> Result<(Vec<Reply>, Vec<Vec<u8>>), Refusal> {
        let [pending, active] = [self.keys[0], self.keys[1]];
        if room == 0 {
            return Ok((Vec::new(), Vec::new()));
        }
        // The first `room` of a head read before, else read now.
        let (ids, records) = match head {
            Some((mut ids, mut records)) => {
                ids.truncate(room as usize);
                records.truncate(room as usize);
                remove(store, pending, &ids);
                (ids, records)
            }
            None => {
                let ids = store.zhead(pending, room as usize);
                let records = read_claimed(store, self.prefix, &ids)?;
                remove(store, pending, &ids);
                (ids, records)
            }
        };
        if ids.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let now = now.unwrap_or_else(|| store.now_ms());
        let deadline = (now + self.lease) as f64;
        let mut claimed = Vec::with_capacity(ids.len());
        let mut logged = Vec::with_capacity(ids.len());
        for (id, (key, [attempts, payload, enqueued_at])) in ids.iter().zip(records) {
            let Some(attempts) = attempts else { continue };
            let token = number(Some(&attempts)).unwrap_or(0.0) as u64 + 1;
            let attempt = token.to_string();
            let fields: [(&[u8], &[u8]); 2] = [(b"state", b"active"), (b"attempts", attempt.as_bytes())];
            write_stamped(store, &key, &fields, now, Stamped(enqueued_at.is_some()));
            store.zadd(active, deadline, id);
            let payload = payload.map_or(Reply::Nil, Reply::Bulk);
            let mut job = vec![Reply::Bulk(id.clone()), Reply::count(token), payload];
            let policy = sides.policies.and_then(|policies| store.hget(policies, id));
            let headers = sides.headers.and_then(|headers| store.hget(headers, id));
            match (policy, headers) {
                (policy, Some(headers)) => {
                    job.extend([policy.map_or(Reply::Nil, Reply::Bulk), Reply::Bulk(headers)])
                }
                (Some(policy), None) => job.push(Reply::Bulk(policy)),
                (None, None) => {}
            }
            claimed.push(Reply::Array(job));
            emit(events, store, "active", id, &[(b"attempt", attempt.as_bytes())]);
            logged.push([id.as_slice(), b":", attempt.as_bytes()].concat());
        }
        Ok((claimed, logged))
    }
}

/// The first ids of pending and their records' fields a claim reads
/// ([`CLAIMED`]), read and checked.
type Head = (Vec<Vec<u8>>, Vec<Taken<3>>);

/// What a claim reads of each record it takes: the attempts (a missing
/// record has none), the payload it hands out, and whether it stamps
/// `updated_at`.
const CLAIMED: [&[u8]; 3] = [b"attempts", b"payload", b"enqueued_at"];

/// [`CLAIMED`] of each id's record, each checked: a record's `attempts`
/// must be an integer (`EMQDATA`), before the claim's first write.
fn read_claimed<S: Store>(store: &mut S, prefix: &[u8], ids: &[Vec<u8>]) -> Result<Vec<Taken<3>>, Refusal> {
    let records = read_records(store, prefix, ids, CLAIMED)?;
    for (key, [attempts, _, _]) in &records {
        attempts_of(key, attempts.as_deref())?;
    }
    Ok(records)
}

/// The side hashes whose entries a claimed job carries, when the queue has them.
#[derive(Clone, Copy)]
struct Sides<'k> {
    policies: Option<&'k [u8]>,
    headers: Option<&'k [u8]>,
}

/// `key`, when the call passed it and it exists: it must be a hash.
fn side_hash<'k, S: Store>(store: &mut S, key: Option<&'k [u8]>) -> Result<Option<&'k [u8]>, Refusal> {
    match key.map(|key| (key, store.key_type(key))) {
        None | Some((_, KeyType::None)) => Ok(None),
        Some((key, _)) => {
            need(store, key, KeyType::Hash)?;
            Ok(Some(key))
        }
    }
}

/// BLOCK's range: up to the longest lease; 0 waits without a limit.
const LEASE_MS_OR_FOREVER: std::ops::RangeInclusive<u64> = 0..=*LEASE_MS.end();

/// The part every fenced transition shares: its keys, id and token.
#[derive(Debug)]
struct Fenced<'a> {
    keys: &'a [&'a [u8]],
    id: &'a [u8],
    token: u64,
}

impl<'a> Fenced<'a> {
    fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]], roles: &[Role]) -> Result<Fenced<'a>, Refusal> {
        let id = kind(args.first().copied())?;
        queue_prefix(keys, roles, id)?;
        let token = count(args.get(1).copied(), "token", TOKEN)?;
        Ok(Fenced { keys, id, token })
    }

    /// Check the declared sets' types (KEYS[2..] as `types` says), then the
    /// fence: the record's stamp, for its write.
    fn check<S: Store>(&self, store: &mut S, types: &[KeyType]) -> Result<Stamped, Refusal> {
        for (key, want) in self.keys[1..].iter().zip(types) {
            need(store, key, *want)?;
        }
        fence(store, self.keys[0], self.token)
    }
}

/// A parsed ACK.
#[derive(Debug)]
pub struct Ack<'a> {
    fenced: Fenced<'a>,
    result: Option<&'a [u8]>,
}

impl<'a> Ack<'a> {
    /// What ACK is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "ack",
        command: "EMQ.ACK",
        keys: &[Role::Job, Role::Active, Role::Done, Role::Results, Role::Events, Role::Config],
        forms: &[6],
        args: &["id", "token"],
        options: &["RESULT"],
        effect: Effect::Writes,
        wakes_claims: false,
    };

    /// KEYS: job, active, done, results, events, config. ARGV: id,
    /// token, then `RESULT <bytes>`.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Ack<'a>, Refusal> {
        let fenced = Fenced::parse(keys, args, Self::DESCRIPTION.form(keys.len())?)?;
        let mut result = None;
        let mut rest = args.get(2..).unwrap_or_default();
        while let Some((&name, tail)) = rest.split_first() {
            if !name.eq_ignore_ascii_case(b"RESULT") {
                return Err(Refusal::arg(format!("unknown option {}", lossy(name))));
            }
            result = Some(ack_result(result, tail.first().copied())?);
            rest = &tail[1..];
        }
        Ok(Ack { fenced, result })
    }

    /// The holder finishes the job: to done, its result (if any) kept in results.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let Fenced { keys, id, .. } = self.fenced;
        let stamped = self.fenced.check(store, &[KeyType::Zset, KeyType::Zset, KeyType::Hash])?;
        let events = Events::open(store, trailing(keys, 6))?;
        let sets = Finish { active: keys[1], done: keys[2], results: keys.get(3).copied(), events: &events };
        sets.finish(store, keys[0], stamped, id, self.result);
        Ok(Reply::Int(1))
    }
}

/// Where ACK, ACKNEXT and ACKMANY put a finished job.
struct Finish<'k, 'e> {
    active: &'k [u8],
    done: &'k [u8],
    results: Option<&'k [u8]>,
    events: &'e Option<Events<'k>>,
}

impl Finish<'_, '_> {
    /// The job `id`, whose record is at `record` (`stamped` as the fence
    /// read it), to done, its result (if any) kept in results, with its
    /// `completed` event. After every check.
    fn finish<S: Store>(
        &self,
        store: &mut S,
        record: &[u8],
        stamped: Stamped,
        id: &[u8],
        result: Option<&[u8]>,
    ) {
        store.zrem(self.active, id);
        let now = store.now_ms();
        write_stamped(store, record, &[(b"state", b"done")], now, stamped);
        store.zadd(self.done, now as f64, id);
        match (result, self.results) {
            (Some(result), Some(results)) => {
                store.hset(results, &[(id, result)]);
                let bytes = result.len().to_string();
                emit(self.events, store, "completed", id, &[(b"result_bytes", bytes.as_bytes())]);
            }
            _ => emit(self.events, store, "completed", id, &[]),
        }
    }
}

/// A parsed ACKNEXT: ACK, then CLAIM for the same holder, in one atomic step.
#[derive(Debug)]
pub struct AckNext<'a> {
    ack: Ack<'a>,
    /// CLAIM's keys, in CLAIM's order, picked out of ACKNEXT's.
    claim_keys: [&'a [u8]; 8],
    prefix: &'a [u8],
    lease: u64,
    count: u64,
}

impl<'a> AckNext<'a> {
    /// What ACKNEXT is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "acknext",
        command: "EMQ.ACKNEXT",
        keys: &[
            Role::Job,
            Role::Active,
            Role::Done,
            Role::Results,
            Role::Events,
            Role::Config,
            Role::Pending,
            Role::Rate,
            Role::Policy,
            Role::Headers,
            Role::Wake,
        ],
        forms: &[11],
        args: &["id", "token", "lease"],
        options: &["RESULT", "COUNT"],
        effect: Effect::Writes,
        wakes_claims: false,
    };

    /// KEYS: job, active, done, results, events, config, pending, rate,
    /// policy, headers, wake. ARGV: id, token, the next claims' lease, then
    /// `RESULT <bytes>` and `COUNT <n>` (default 1), in any order.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<AckNext<'a>, Refusal> {
        let fenced = Fenced::parse(keys, args, Self::DESCRIPTION.form(keys.len())?)?;
        let prefix = &keys[1][..keys[1].len() - b"active".len()];
        let lease = count(args.get(2).copied(), "lease", LEASE_MS)?;
        let (mut result, mut claims) = (None, None);
        let mut rest = args.get(3..).unwrap_or_default();
        while let Some((&name, tail)) = rest.split_first() {
            let value = tail.first().copied();
            if name.eq_ignore_ascii_case(b"RESULT") {
                result = Some(ack_result(result, value)?);
            } else if name.eq_ignore_ascii_case(b"COUNT") {
                if claims.is_some() {
                    return Err(Refusal::arg("COUNT given twice"));
                }
                claims = Some(count(value, "COUNT", CLAIM_COUNT)?);
            } else {
                return Err(Refusal::arg(format!("unknown option {}", lossy(name))));
            }
            rest = &tail[1..];
        }
        let claim_keys = [keys[6], keys[1], keys[5], keys[7], keys[8], keys[4], keys[9], keys[10]];
        // ACK's own six keys, its events with them.
        let ack = Ack { fenced: Fenced { keys: &keys[..6], ..fenced }, result };
        Ok(AckNext { ack, claim_keys, prefix, lease, count: claims.unwrap_or(1) })
    }

    /// ACK the job, then CLAIM up to COUNT jobs under a new lease: CLAIM's
    /// reply. Every key's type, the fence, and the records at the head of
    /// pending that the claim may take are checked before the first write,
    /// so a refusal changes nothing (and claims nothing).
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        self.ack.fenced.check(store, &[KeyType::Zset, KeyType::Zset, KeyType::Hash])?;
        let [pending, _, _, rate, policy, _, headers, wakes] = self.claim_keys;
        need(store, pending, KeyType::Zset)?;
        need(store, rate, KeyType::Zset)?;
        need(store, policy, KeyType::Hash)?;
        need(store, headers, KeyType::Hash)?;
        need(store, wakes, KeyType::Zset)?;
        // The records the claim may take, read and checked once, here, before
        // the ack's writes: the ack changes none of what the claim reads.
        let ids = store.zhead(pending, self.count as usize);
        let records = read_claimed(store, self.prefix, &ids)?;
        // The claim's settings too, checked before the ack's writes, with
        // the events key that the ack checks first.
        if let Some(events) = self.ack.fenced.keys.get(4) {
            need(store, events, KeyType::Stream)?;
        }
        claim_settings(store, self.claim_keys[2])?;
        self.ack.apply(store)?;
        let claim = Claim {
            keys: &self.claim_keys,
            prefix: self.prefix,
            lease: self.lease,
            count: self.count,
            block: None,
        };
        claim.apply_to(store, Some((ids, records)))
    }
}

/// A parsed ACKMANY: many ACKs in one call, each job fenced by its own
/// token and answered on its own.
#[derive(Debug)]
pub struct AckMany<'a> {
    /// active, done, results, events, config.
    keys: &'a [&'a [u8]],
    prefix: &'a [u8],
    acks: Vec<Acked<'a>>,
}

/// One job of an ACKMANY: its id, token and result.
#[derive(Debug)]
struct Acked<'a> {
    id: &'a [u8],
    token: u64,
    result: Option<&'a [u8]>,
}

impl<'a> AckMany<'a> {
    /// What ACKMANY is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "ackmany",
        command: "EMQ.ACKMANY",
        keys: &[Role::Active, Role::Done, Role::Results, Role::Events, Role::Config],
        forms: &[5],
        args: &["id", "token"],
        options: &["RESULT"],
        effect: Effect::Writes,
        wakes_claims: false,
    };

    /// KEYS: active, done, results, events, config. ARGV: one or more jobs,
    /// each `id token [RESULT <bytes>]`, at most [`ACKS`] of them.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<AckMany<'a>, Refusal> {
        let prefix = queue_prefix(keys, Self::DESCRIPTION.form(keys.len())?, b"")?;
        let mut acks = Vec::new();
        let mut rest = args;
        loop {
            if acks.len() as u64 == *ACKS.end() {
                return Err(Refusal::arg(format!("at most {} jobs a call", ACKS.end())));
            }
            let id = kind(rest.first().copied())?;
            let token = count(rest.get(1).copied(), "token", TOKEN)?;
            rest = rest.get(2..).unwrap_or_default();
            let mut result = None;
            while rest.first().is_some_and(|word| word.eq_ignore_ascii_case(b"RESULT")) {
                result = Some(ack_result(result, rest.get(1).copied())?);
                rest = rest.get(2..).unwrap_or_default();
            }
            acks.push(Acked { id, token, result });
            if rest.is_empty() {
                return Ok(AckMany { keys, prefix, acks });
            }
        }
    }

    /// Each job to done, as ACK, when its token holds its lease: an array
    /// with one reply a job, in order: `1`, or its own refusal (`EMQNOJOB`,
    /// `EMQFENCE`), which changed nothing of it. The keys' types and every
    /// record's (a hash or nothing, `TRYAGAIN` while a resharding may have
    /// moved one) are checked before the first write: a refusal of the call
    /// changes nothing. A job named twice is acked once; its second entry
    /// is refused (`EMQFENCE`: it is done).
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let [active, done, results, events, config] =
            [self.keys[0], self.keys[1], self.keys[2], self.keys[3], self.keys[4]];
        need(store, active, KeyType::Zset)?;
        need(store, done, KeyType::Zset)?;
        need(store, results, KeyType::Hash)?;
        let records: Vec<Vec<u8>> = self.acks.iter().map(|ack| record_key(self.prefix, ack.id)).collect();
        for record in &records {
            need(store, record, KeyType::Hash)?;
            present_here(store, record)?;
        }
        let events = Events::open(store, Some((events, config)))?;
        let sets = Finish { active, done, results: Some(results), events: &events };
        let replies =
            self.acks.iter().zip(&records).map(|(ack, record)| match fence(store, record, ack.token) {
                Ok(stamped) => {
                    sets.finish(store, record, stamped, ack.id, ack.result);
                    Reply::Int(1)
                }
                Err(refusal) => Reply::Error(refusal),
            });
        Ok(Reply::Array(replies.collect()))
    }
}

/// RESULT's bytes, the first time it is given and within its limit.
fn ack_result<'a>(given: Option<&'a [u8]>, value: Option<&'a [u8]>) -> Result<&'a [u8], Refusal> {
    if given.is_some() {
        return Err(Refusal::arg("RESULT given twice"));
    }
    let value = value.ok_or_else(|| Refusal::arg("RESULT is missing its bytes"))?;
    if value.len() > MAX_RESULT {
        return Err(Refusal::new(Code::Size, format!("result exceeds {MAX_RESULT} bytes")));
    }
    Ok(value)
}

/// A parsed FAIL.
#[derive(Debug)]
pub struct Fail<'a> {
    fenced: Fenced<'a>,
    max_attempts: u64,
    backoff: u64,
    error: &'a [u8],
}

impl<'a> Fail<'a> {
    /// What FAIL is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "fail",
        command: "EMQ.FAIL",
        keys: &[
            Role::Job,
            Role::Active,
            Role::Delayed,
            Role::Dead,
            Role::Errors,
            Role::Policy,
            Role::Events,
            Role::Config,
        ],
        forms: &[8],
        args: &["id", "token", "max_attempts", "backoff", "error"],
        options: &[],
        effect: Effect::Writes,
        wakes_claims: false,
    };

    /// KEYS: job, active, delayed, dead, errors, policy, events, config.
    /// ARGV: id, token, max attempts, back-off, error: the caller's, for a
    /// job with no policy of its own.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Fail<'a>, Refusal> {
        let fenced = Fenced::parse(keys, args, Self::DESCRIPTION.form(keys.len())?)?;
        let max_attempts = count(args.get(2).copied(), "max_attempts", MAX_ATTEMPTS)?;
        let backoff = count(args.get(3).copied(), "backoff", DELAY_MS)?;
        let error = *args.get(4).ok_or_else(|| Refusal::arg("error text is missing"))?;
        if error.len() > MAX_ERROR_TEXT {
            return Err(Refusal::new(Code::Size, format!("error text exceeds {MAX_ERROR_TEXT} bytes")));
        }
        options(args.get(5..).unwrap_or_default(), [])?;
        Ok(Fail { fenced, max_attempts, backoff, error })
    }

    /// To delayed for a retry after the back-off, or to dead at max attempts,
    /// by the job's own policy where it has one.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let Fenced { keys, id, token } = self.fenced;
        let types = [KeyType::Zset, KeyType::Zset, KeyType::Zset, KeyType::Hash, KeyType::Hash];
        self.fenced.check(store, &types[..types.len().min(keys.len() - 1)])?;
        let events = Events::open(store, trailing(keys, 8))?;
        let policy = match keys.get(5) {
            Some(policies) => policy_of(store, policies, id)?.unwrap_or_default(),
            None => Policy::default(),
        };
        let now = store.now_ms();
        let dead = token >= policy.max_attempts(self.max_attempts);
        let state: &[u8] = if dead { b"dead" } else { b"delayed" };
        store.zrem(keys[1], id);
        write_record(store, keys[0], &[(b"state", state)], now);
        if dead {
            store.zadd(keys[3], now as f64, id);
        } else {
            store.zadd(keys[2], (now + policy.backoff_ms(self.backoff, token)) as f64, id);
        }
        store.hset(keys[4], &[(id, self.error)]);
        let event = if dead { "dead" } else { "failed" };
        let attempt = token.to_string();
        emit(
            &events,
            store,
            event,
            id,
            &[(b"attempt", attempt.as_bytes()), (b"error", error_text(self.error))],
        );
        Ok(Reply::Bulk(state.to_vec()))
    }
}

/// A parsed EXTEND.
#[derive(Debug)]
pub struct Extend<'a> {
    fenced: Fenced<'a>,
    lease: u64,
}

impl<'a> Extend<'a> {
    /// What EXTEND is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "extend",
        command: "EMQ.EXTEND",
        keys: &[Role::Job, Role::Active],
        forms: &[2],
        args: &["id", "token", "lease"],
        options: &[],
        effect: Effect::Writes,
        wakes_claims: false,
    };

    /// KEYS: job, active. ARGV: id, token, lease.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Extend<'a>, Refusal> {
        let fenced = Fenced::parse(keys, args, Self::DESCRIPTION.keys)?;
        let lease = count(args.get(2).copied(), "lease", LEASE_MS)?;
        options(args.get(3..).unwrap_or_default(), [])?;
        Ok(Extend { fenced, lease })
    }

    /// Move the lease deadline to now + lease; reply the deadline.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let Fenced { keys, id, .. } = self.fenced;
        self.fenced.check(store, &[KeyType::Zset])?;
        let deadline = store.now_ms() + self.lease;
        store.zadd(keys[1], deadline as f64, id);
        Ok(Reply::count(deadline))
    }
}

/// A parsed RELEASE.
#[derive(Debug)]
pub struct Release<'a> {
    fenced: Fenced<'a>,
    /// `REFUND <max_attempts>` (with the policy key): the attempt is given
    /// back; the caller's maximum, for a job with no ATTEMPTS of its own.
    refund: Option<u64>,
}

impl<'a> Release<'a> {
    /// What RELEASE is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "release",
        command: "EMQ.RELEASE",
        keys: &[
            Role::Job,
            Role::Active,
            Role::Pending,
            Role::Priority,
            Role::Events,
            Role::Config,
            Role::Wake,
            Role::Policy,
        ],
        forms: &[7, 8],
        args: &["id", "token"],
        options: &["REFUND"],
        effect: Effect::Writes,
        wakes_claims: true,
    };

    /// KEYS: job, active, pending, priority, events, config, wake, and
    /// policy with REFUND. ARGV: id, token, then `REFUND <max_attempts>`.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Release<'a>, Refusal> {
        let fenced = Fenced::parse(keys, args, Self::DESCRIPTION.form(keys.len())?)?;
        let [refund] = options(args.get(2..).unwrap_or_default(), [("REFUND", MAX_ATTEMPTS)])?;
        match (refund, keys.len()) {
            (Some(_), 7) => Err(Refusal::arg("REFUND needs the policy key: takes 8 keys")),
            (None, 8) => Err(Refusal::arg("the policy key goes with REFUND: takes 7 keys without it")),
            _ => Ok(Release { fenced, refund }),
        }
    }

    /// Back to pending at its priority, the token kept. With REFUND the
    /// attempt is not spent: the job's own ATTEMPTS grow by one, as DEFER's do.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let Fenced { keys, id, .. } = self.fenced;
        self.fenced.check(store, &[KeyType::Zset, KeyType::Zset, KeyType::Hash])?;
        let events = Events::open(store, trailing(keys, 6))?;
        let wakes = wake_key(store, keys, 6)?;
        let refunded = match self.refund {
            Some(max_attempts) => {
                need(store, keys[7], KeyType::Hash)?;
                let mut policy = policy_of(store, keys[7], id)?.unwrap_or_default();
                policy.attempts = Some((policy.max_attempts(max_attempts) + 1).min(*MAX_ATTEMPTS.end()));
                Some(policy)
            }
            None => None,
        };
        let score = priority_of(store, keys[3], id)?;
        store.zrem(keys[1], id);
        let now = store.now_ms();
        to_pending(store, keys[0], keys[2], score, id, now);
        if let Some(policy) = refunded {
            store.hset(keys[7], &[(id, &policy.text())]);
        }
        wake(store, wakes);
        emit(&events, store, "released", id, &[]);
        Ok(Reply::Int(1))
    }
}

/// A parsed PROGRESS.
#[derive(Debug)]
pub struct Progress<'a> {
    fenced: Fenced<'a>,
    value: &'a [u8],
}

impl<'a> Progress<'a> {
    /// What PROGRESS is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "progress",
        command: "EMQ.PROGRESS",
        keys: &[Role::Job, Role::Progress, Role::Events, Role::Config],
        forms: &[4],
        args: &["id", "token", "value"],
        options: &[],
        effect: Effect::Writes,
        wakes_claims: false,
    };

    /// KEYS: job, progress, events, config. ARGV: id, token, value.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Progress<'a>, Refusal> {
        let fenced = Fenced::parse(keys, args, Self::DESCRIPTION.form(keys.len())?)?;
        let value = *args.get(2).ok_or_else(|| Refusal::arg("progress value is missing"))?;
        if value.len() > MAX_PROGRESS {
            return Err(Refusal::new(Code::Size, format!("progress exceeds {MAX_PROGRESS} bytes")));
        }
        options(args.get(3..).unwrap_or_default(), [])?;
        Ok(Progress { fenced, value })
    }

    /// Keep the holder's progress value beside the record; the record is untouched.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let Fenced { keys, id, .. } = self.fenced;
        self.fenced.check(store, &[KeyType::Hash])?;
        let events = Events::open(store, trailing(keys, 4))?;
        store.hset(keys[1], &[(id, self.value)]);
        emit(&events, store, "progress", id, &[(b"progress", self.value)]);
        Ok(Reply::Int(1))
    }
}

/// A parsed DEFER.
#[derive(Debug)]
pub struct Defer<'a> {
    fenced: Fenced<'a>,
    delay: u64,
    max_attempts: u64,
    pause: bool,
}

impl<'a> Defer<'a> {
    /// What DEFER is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "defer",
        command: "EMQ.DEFER",
        keys: &[Role::Job, Role::Active, Role::Delayed, Role::Policy, Role::Config, Role::Events],
        forms: &[6],
        args: &["id", "token", "delay", "max_attempts"],
        options: &["PAUSE"],
        effect: Effect::Writes,
        wakes_claims: false,
    };

    /// KEYS: job, active, delayed, policy, config, events. ARGV: id, token, delay,
    /// max attempts (the caller's, for a job with no ATTEMPTS of its own),
    /// then `PAUSE 0|1`.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Defer<'a>, Refusal> {
        let fenced = Fenced::parse(keys, args, Self::DESCRIPTION.form(keys.len())?)?;
        let delay = count(args.get(2).copied(), "delay", DELAY_MS)?;
        let max_attempts = count(args.get(3).copied(), "max_attempts", MAX_ATTEMPTS)?;
        let [pause] = options(args.get(4..).unwrap_or_default(), [("PAUSE", FLAG)])?;
        Ok(Defer { fenced, delay, max_attempts, pause: pause == Some(1) })
    }

    /// The holder was told to come back later (an HTTP 429): the job waits in
    /// delayed for the delay without spending the attempt (its own ATTEMPTS
    /// grow by one), and with PAUSE 1 the queue's claims stop until then too.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let Fenced { keys, id, token: _ } = self.fenced;
        self.fenced.check(store, &[KeyType::Zset, KeyType::Zset, KeyType::Hash, KeyType::Hash])?;
        let [active, delayed, policies, config] = [keys[1], keys[2], keys[3], keys[4]];
        let mut policy = policy_of(store, policies, id)?.unwrap_or_default();
        let paused_until = if self.pause { paused_until(store, config)? } else { None };
        let events = Events::open(store, keys.get(5).map(|events| (*events, config)))?;
        let now = store.now_ms();
        let due = now + self.delay;
        store.zrem(active, id);
        write_record(store, keys[0], &[(b"state", b"delayed")], now);
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
