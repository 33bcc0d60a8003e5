//! CLAIM: hand out jobs from the head of pending, each under a new lease
//! with a newly minted token, as many as the queue's gate lets through
//! (PROTOCOL.md §7; `claim.lua`).

use super::events::{emit, Events};
use super::fair::Plan;
use super::gate::{gate, spend, Gate, Logged};
use super::grouping::{Grouping, UNGROUPED_MAX};
use super::{attempts_of, need, number, read_records, remove, wake, wake_key, write_stamped, Stamped, Taken};
use crate::description::{keys, Description, Effect};
use crate::limits::{AT_MS, CLAIM_COUNT, LEASE_MS};
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
    /// `UNTIL <ms>` (1.8): a claim that runs after this server ms takes
    /// nothing (a partitioned queue's permits, §7.10).
    pub(super) until: Option<u64>,
}

impl<'a> Claim<'a> {
    /// What CLAIM is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "claim",
        command: "EMQ.CLAIM",
        keys: ClaimKeys::ROLES,
        forms: ClaimKeys::FORMS,
        args: &["lease"],
        options: &["COUNT", "UNTIL", "BLOCK"],
        effect: Effect::Writes,
        wakes_claims: false,
        fenced: false,
        hands_out_tokens: true,
        waits_for_replication: false,
    };

    /// KEYS: pending, active, config, rate, policy, events, headers, wake.
    /// ARGV: lease, then COUNT, UNTIL (and BLOCK, native only).
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQARG`: the keys are not this queue's, in their number and roles; the lease is missing or out of
    ///   range; an option is unknown, given twice or out of range; UNTIL with BLOCK.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Claim<'a>, Refusal> {
        let (keys, prefix) = named_keys::<ClaimKeys>(keys, b"")?;
        let lease = count(args.first().copied(), "lease", LEASE_MS)?;
        let [count, until, block] = options(
            args.get(1..).unwrap_or_default(),
            [("COUNT", CLAIM_COUNT), ("UNTIL", AT_MS), ("BLOCK", LEASE_MS_OR_FOREVER)],
        )?;
        if until.is_some() && block.is_some() {
            return Err(Refusal::arg("UNTIL takes no BLOCK: a permit's claim runs at once"));
        }
        Ok(Claim { keys, prefix, lease, count: count.unwrap_or(1), block, until })
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
        // Past its UNTIL, a claim takes nothing and reads nothing.
        if self.until.is_some_and(|until| store.now_ms() > until) {
            return Ok(Reply::Array(Vec::new()));
        }
        let opened = self.open(store, None)?;
        self.write(store, opened)
    }

    /// Everything the claim reads and checks, before any write: the keys'
    /// types, the gate, the jobs it will take (fairly among the groups,
    /// when the queue has some) and their records. `ending` is the job
    /// whose lease the same call ends first (ACKNEXT's): one fewer active,
    /// and its group one fewer running.
    pub(super) fn open<S: Store>(&self, store: &mut S, ending: Option<&[u8]>) -> Result<Opened<'a>, Refusal> {
        let ClaimKeys { pending, active, config, rate, policy, events, headers, wake: wakes } = self.keys;
        need(store, pending, KeyType::Zset)?;
        // The head of pending, read right after its check (a store that
        // opens keys opens it once), one more than the claim may take.
        let head = store.zhead_scored(pending, self.count as usize + 1);
        need(store, active, KeyType::Zset)?;
        // Only a queue with jobs of their own policy (or headers) has the
        // key: one lookup each. Types first, then the gate's settings.
        let policies = side_hash(store, policy)?;
        let headers = side_hash(store, headers)?;
        let gate = gate(store, config, active, rate, self.count, u64::from(ending.is_some()))?;
        let events = Events::open(store, Some((events, config)))?;
        let wakes = wake_key(store, Some(wakes))?;
        let grouping = Grouping::open(store, self.prefix)?;
        let (ids, plan) = match &grouping {
            None => (head.into_iter().take(gate.room as usize).map(|(id, _)| id).collect(), None),
            Some(grouping) => {
                let now = gate.now().unwrap_or_else(|| store.now_ms());
                let group = ending.and_then(|id| grouping.group_of(store, id));
                // The default group's: the head below the grouped jobs.
                let default = head.into_iter().take_while(|(_, score)| *score <= UNGROUPED_MAX);
                let default = default.map(|(id, _)| id).collect();
                let plan = Plan::make(store, grouping, (pending, default), gate.room, now, group.as_deref())?;
                (plan.taken_ids(), Some(plan))
            }
        };
        let records = read_claimed(store, self.prefix, &ids)?;
        Ok(Opened { gate, sides: Sides { policies, headers }, events, wakes, grouping, ids, records, plan })
    }

    /// Claim what [`open`](Claim::open) planned: the reply.
    pub(super) fn write<S: Store>(&self, store: &mut S, opened: Opened<'a>) -> Answer {
        let ClaimKeys { pending, rate, .. } = self.keys;
        let Opened { gate, sides, events, wakes, grouping, ids, records, plan } = opened;
        let now = gate.now();
        let (mut claimed, logged, deadline) = self.take(store, now, sides, &events, (ids, records))?;
        spend(store, rate, &gate, &logged);
        if let (Some(grouping), Some(plan)) = (&grouping, &plan) {
            plan.write(store, grouping, deadline, &logged);
        }
        // Jobs left that the gate would let through: the next waiting claim
        // takes them (a chain, one claimer woken at a time).
        if !claimed.is_empty() && gate.held.is_none() && more(store, pending, plan.as_ref()) {
            wake(store, wakes);
        }
        // A group's rate that held back jobs says when it frees, as the queue's does.
        let held = match (gate.held, &grouping, &plan) {
            (None, Some(grouping), Some(plan)) if (claimed.len() as u64) < gate.room => {
                plan.group_held(store, grouping)
            }
            (held, ..) => held,
        };
        // The trailer says a limit held back jobs pending still holds, or a pause.
        if let Some(held) = held.filter(|&held| held == -1 || store.zcard(pending) > 0) {
            claimed.push(Reply::Int(held));
        }
        Ok(Reply::Array(claimed))
    }

    /// Claim the jobs `head` names: their replies, and each as the rate
    /// log names it, `<id>:<token>`, with the time of its `active` event
    /// (the gate's now when no event was written), and the leases'
    /// deadline. `now` is the gate's clock reading when it read one: the
    /// records' stamps and the rate log then show the same moment. A job
    /// with a policy gets it as a fourth element; one with headers gets
    /// them as a fifth (after its policy, or nil).
    fn take<S: Store>(
        &self,
        store: &mut S,
        now: Option<u64>,
        sides: Sides<'_>,
        events: &Option<Events<'_>>,
        head: Head,
    ) -> Result<(Vec<Reply>, Vec<Logged>, f64), Refusal> {
        let ClaimKeys { pending, active, .. } = self.keys;
        let (ids, records) = head;
        remove(store, pending, &ids);
        if ids.is_empty() {
            return Ok((Vec::new(), Vec::new(), 0.0));
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
        Ok((claimed, logged, deadline))
    }
}

/// What a claim read and checked before its first write.
pub(super) struct Opened<'k> {
    gate: Gate,
    sides: Sides<'k>,
    events: Option<Events<'k>>,
    wakes: Option<&'k [u8]>,
    grouping: Option<Grouping<'k>>,
    ids: Vec<Vec<u8>>,
    records: Vec<Taken<4>>,
    plan: Option<Plan>,
}

/// Whether pending holds a job a claim could take now: any, for a queue
/// without groups; else, as the plan found, one of the default group, or a
/// group ready.
fn more<S: Store>(store: &mut S, pending: &[u8], plan: Option<&Plan>) -> bool {
    match plan {
        None => store.zcard(pending) > 0,
        Some(plan) => plan.more,
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
