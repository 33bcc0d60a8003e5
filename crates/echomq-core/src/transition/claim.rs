//! CLAIM: hand out jobs from the head of pending, each under a new lease
//! with a newly minted token, as many as the queue's gate lets through
//! (PROTOCOL.md §7; `claim.lua`).

use super::events::{emit, Events};
use super::gate::{gate, spend, Logged};
use super::{attempts_of, need, number, read_records, remove, wake, wake_key, write_stamped, Stamped, Taken};
use crate::description::{keys, Description, Effect};
use crate::limits::{CLAIM_COUNT, LEASE_MS};
use crate::parse::{count, named_keys, options};
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal, Reply};

keys! {
    /// CLAIM's KEYS.
    ClaimKeys {
        pending: Pending,
        active: Active,
        config: Config,
        rate: Rate,
        policy: Policy,
        events: Events,
        headers: Headers,
        wake: Wake,
    }
}

/// A parsed CLAIM.
#[derive(Debug)]
pub struct Claim<'a> {
    pub(super) keys: ClaimKeys<'a>,
    pub(super) prefix: &'a [u8],
    pub(super) lease: u64,
    pub(super) count: u64,
    /// `BLOCK <ms>`: the native command's wait for a job (0: no limit). The
    /// core claims at once; the caller does the waiting.
    pub block: Option<u64>,
}

impl<'a> Claim<'a> {
    /// What CLAIM is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "claim",
        command: "EMQ.CLAIM",
        keys: ClaimKeys::ROLES,
        forms: ClaimKeys::FORMS,
        args: &["lease"],
        options: &["COUNT", "BLOCK"],
        effect: Effect::Writes,
        wakes_claims: false,
        fenced: false,
        hands_out_tokens: true,
        waits_for_replication: false,
    };

    /// KEYS: pending, active, config, rate, policy, events, headers, wake.
    /// ARGV: lease, then COUNT (and BLOCK, native only).
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQARG`: the keys are not this queue's, in their number and roles; the lease is missing or out of
    ///   range; an option is unknown, given twice or out of range.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Claim<'a>, Refusal> {
        let (keys, prefix) = named_keys::<ClaimKeys>(keys, b"")?;
        let lease = count(args.first().copied(), "lease", LEASE_MS)?;
        let [count, block] = options(
            args.get(1..).unwrap_or_default(),
            [("COUNT", CLAIM_COUNT), ("BLOCK", LEASE_MS_OR_FOREVER)],
        )?;
        Ok(Claim { keys, prefix, lease, count: count.unwrap_or(1), block })
    }

    /// The pending key, for a caller that blocks on it.
    #[must_use]
    pub fn pending_key(&self) -> &'a [u8] {
        self.keys.pending
    }

    /// The wake-up key: a caller that blocks watches it too, since a
    /// resume sets it (PROTOCOL.md §9).
    #[must_use]
    pub fn wake_key(&self) -> &'a [u8] {
        self.keys.wake
    }

    /// Take up to COUNT ids from the head of pending, each under a new lease,
    /// as many as the queue's gate lets through; when it held back jobs
    /// that pending still holds, or the queue is paused, its reason follows
    /// the jobs (PROTOCOL.md §7, CLAIM).
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: a key holds another type, or a claimed record is not a hash.
    /// - `TRYAGAIN`: a claimed record is missing while the queue's slot moves between cluster nodes.
    /// - `EMQVERSION`: `<q>config`'s `protocol` is another major, or malformed.
    /// - `EMQDATA`: a setting of `<q>config` is malformed (`paused` not 0 or 1, a limit not an integer), or
    ///   a claimed record's `attempts` is not an integer of 0 or more, its `state` none of the six, or it
    ///   lacks its state, attempts or payload.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        self.apply_to(store, None)
    }

    /// [`apply`](Claim::apply), with the head of pending and its records
    /// already read and checked (ACKNEXT's, before its ack): not read again.
    pub(super) fn apply_to<S: Store>(&self, store: &mut S, head: Option<Head>) -> Answer {
        let ClaimKeys { pending, active, config, rate, policy, events, headers, wake: wakes } = self.keys;
        need(store, pending, KeyType::Zset)?;
        need(store, active, KeyType::Zset)?;
        // Only a queue with jobs of their own policy (or headers) has the
        // key: one lookup each. Types first, then the gate's settings.
        let policies = side_hash(store, policy)?;
        let headers = side_hash(store, headers)?;
        let gate = gate(store, config, active, rate, self.count)?;
        let events = Events::open(store, Some((events, config)))?;
        let wakes = wake_key(store, Some(wakes))?;
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
    /// each as the rate log names it, `<id>:<token>`, with the time of its
    /// `active` event (the gate's now when no event was written). `now` is the gate's
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
    ) -> Result<(Vec<Reply>, Vec<Logged>), Refusal> {
        let ClaimKeys { pending, active, .. } = self.keys;
        if room == 0 {
            return Ok((Vec::new(), Vec::new()));
        }
        let (ids, records) = self.head(store, room, head)?;
        remove(store, pending, &ids);
        if ids.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let now = now.unwrap_or_else(|| store.now_ms());
        let deadline = (now + self.lease) as f64;
        let mut claimed = Vec::with_capacity(ids.len());
        let mut logged = Vec::with_capacity(ids.len());
        // Every job taken goes into active in one ZADD, after the loop, the
        // last first: a small sorted set (a listpack) inserts a member past
        // every one of its score that sorts before it, so in claim order
        // each would walk past all the claim's others (`scored_last_first`
        // in includes/common.lua).
        let mut leases: Vec<(f64, &[u8])> = Vec::with_capacity(ids.len());
        for (id, (key, [_, attempts, payload, enqueued_at])) in ids.iter().zip(records) {
            let Some(attempts) = attempts else { continue };
            let token = number(Some(&attempts)).unwrap_or(0.0) as u64 + 1;
            let attempt = token.to_string();
            let fields: [(&[u8], &[u8]); 2] = [(b"state", b"active"), (b"attempts", attempt.as_bytes())];
            write_stamped(store, &key, &fields, now, Stamped(enqueued_at.is_some()));
            leases.push((deadline, id));
            claimed.push(sides.reply(store, id, token, payload));
            // The rate log names the claim at its event's time, so that the
            // two logs agree on when it happened (PROTOCOL.md §7.1).
            let at = emit(events, store, "active", id, &[(b"attempt", attempt.as_bytes())]);
            logged.push(([id.as_slice(), b":", attempt.as_bytes()].concat(), at.unwrap_or(now)));
        }
        if !leases.is_empty() {
            leases.reverse();
            store.zadd_many(active, &leases);
        }
        Ok((claimed, logged))
    }

    /// The first `room` ids of pending and their records, each checked: of
    /// a head read before, else read now. Writes nothing.
    fn head<S: Store>(&self, store: &mut S, room: u64, head: Option<Head>) -> Result<Head, Refusal> {
        match head {
            Some((mut ids, mut records)) => {
                ids.truncate(room as usize);
                records.truncate(room as usize);
                Ok((ids, records))
            }
            None => {
                let ids = store.zhead(self.keys.pending, room as usize);
                let records = read_claimed(store, self.prefix, &ids)?;
                Ok((ids, records))
            }
        }
    }
}

/// The first ids of pending and their records' fields a claim reads
/// ([`CLAIMED`]), read and checked.
pub(super) type Head = (Vec<Vec<u8>>, Vec<Taken<4>>);

/// What a claim reads of each record it takes: the state and attempts (a
/// missing record has neither; a record that lacks one is refused), the
/// payload it hands out, and whether it stamps `updated_at`.
const CLAIMED: [&[u8]; 4] = [b"state", b"attempts", b"payload", b"enqueued_at"];

/// [`CLAIMED`] of each id's record, each checked: a record's `attempts`
/// must be an integer (`EMQDATA`), before the claim's first write.
pub(super) fn read_claimed<S: Store>(
    store: &mut S,
    prefix: &[u8],
    ids: &[Vec<u8>],
) -> Result<Vec<Taken<4>>, Refusal> {
    let records = read_records(store, prefix, ids, CLAIMED)?;
    for (key, [_, attempts, _, _]) in &records {
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

impl Sides<'_> {
    /// A claimed job's reply: its id, token and payload, then its policy
    /// when it has one, then its headers when it has them (after its
    /// policy, or nil).
    fn reply<S: Store>(&self, store: &mut S, id: &[u8], token: u64, payload: Option<Vec<u8>>) -> Reply {
        let payload = payload.map_or(Reply::Nil, Reply::Bulk);
        let mut job = vec![Reply::Bulk(id.to_vec()), Reply::count(token), payload];
        let policy = self.policies.and_then(|policies| store.hget(policies, id));
        let headers = self.headers.and_then(|headers| store.hget(headers, id));
        match (policy, headers) {
            (policy, Some(headers)) => {
                job.extend([policy.map_or(Reply::Nil, Reply::Bulk), Reply::Bulk(headers)])
            }
            (Some(policy), None) => job.push(Reply::Bulk(policy)),
            (None, None) => {}
        }
        Reply::Array(job)
    }
}

/// `key`, when it exists: it must be a hash.
fn side_hash<'k, S: Store>(store: &mut S, key: &'k [u8]) -> Result<Option<&'k [u8]>, Refusal> {
    match store.key_type(key) {
        KeyType::None => Ok(None),
        _ => {
            need(store, key, KeyType::Hash)?;
            Ok(Some(key))
        }
    }
}

/// BLOCK's range: up to the longest lease; 0 waits without a limit.
const LEASE_MS_OR_FOREVER: std::ops::RangeInclusive<u64> = 0..=*LEASE_MS.end();
