//! REAP: expired leases back to pending, or to dead at max attempts; upkeep
//! safe from many workers at once (PROTOCOL.md §7; `reap.lua`).

use super::delete::limit;
use super::events::{emit, flush, hold, Events};
use super::grouped::{group_at, groups_of};
use super::notice::Notify;
use super::{
    attempts_of, need, policy_of, priority_of, read_records, remove, to_pending, wake, wake_key, write_record,
};
use crate::description::{keys, Description, Effect};
use crate::limits::MAX_ATTEMPTS;
use crate::parse::{count, named_keys};
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal, Reply};

keys! {
    /// REAP's KEYS.
    ReapKeys {
        active: Active,
        pending: Pending,
        dead: Dead,
        errors: Errors,
        priority: Priority,
        policy: Policy,
        events: Events,
        config: Config,
        wake: Wake,
    }
    then counts: Counts
    flow
    /// The flows' keys (protocol 1.6, §7.8).
    ReapTold { parents: Parents, notices: Notices }
}

/// A parsed REAP.
#[derive(Debug)]
pub struct Reap<'a> {
    keys: ReapKeys<'a>,
    prefix: &'a [u8],
    max_attempts: u64,
    limit: usize,
}

impl<'a> Reap<'a> {
    /// What REAP is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "reap",
        command: "EMQ.REAP",
        keys: ReapKeys::ROLES,
        forms: ReapKeys::FORMS,
        args: &["max_attempts"],
        options: &["LIMIT"],
        effect: Effect::Writes,
        wakes_claims: true,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: true,
    };

    /// KEYS: active, pending, dead, errors, priority, policy, events,
    /// config, wake. ARGV: max attempts (the reaper's, for a job with no policy
    /// of its own), LIMIT.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQARG`: the keys are not this queue's, in their number and roles; max_attempts is missing or out
    ///   of range; `LIMIT` is unknown, given twice or out of range.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Reap<'a>, Refusal> {
        let (keys, prefix) = named_keys::<ReapKeys>(keys, b"")?;
        let max_attempts = count(args.first().copied(), "max_attempts", MAX_ATTEMPTS)?;
        let limit = limit(args.get(1..).unwrap_or_default())?;
        Ok(Reap { keys, prefix, max_attempts, limit })
    }

    /// Expired leases to pending, or to dead at max attempts; reply [requeued, dead].
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: a key or an expired record holds another type.
    /// - `TRYAGAIN`: an expired record is missing while the queue's slot moves between cluster nodes.
    /// - `EMQVERSION`: `<q>config`'s `protocol` is another major, or malformed.
    /// - `EMQDATA`: `<q>config`'s `events` is not an integer, or an expired job's `attempts`, own policy or
    ///   priority is malformed, or its record's `state` is none of the six, or it lacks its state or
    ///   attempts.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let ReapKeys { active, pending, dead, errors, events, config, wake: wakes, counts, flow, .. } =
            self.keys;
        self.need_types(store)?;
        let events = Events::open_counted(store, Some((events, config)), counts, &["failed", "dead"])?;
        hold(&events);
        let wakes = wake_key(store, Some(wakes))?;
        let notify = Notify::open(store, flow.map(|told| (told.parents, told.notices)), self.prefix)?;
        let now = store.now_ms();
        let ids = store.zupto(active, now as f64, self.limit);
        if ids.is_empty() {
            return Ok(Reply::Array(vec![Reply::count(0), Reply::count(0)]));
        }
        let reaped = self.read(store, &ids, &notify)?;
        let expired: Vec<Vec<u8>> = reaped.iter().map(|reaped| reaped.0.clone()).collect();
        let grouped = groups_of(store, self.prefix, &expired)?;
        remove(store, active, &ids);
        let (mut requeued, mut died) = (0, 0);
        for (at, (id, key, attempt, dies, score, link)) in reaped.into_iter().enumerate() {
            let group = group_at(&grouped, at);
            let text = attempt.to_string();
            let said: [(&[u8], &[u8]); 2] = [(b"attempt", text.as_bytes()), (b"error", b"lease expired")];
            if dies {
                write_record(store, &key, &[(b"state", b"dead")], now);
                store.zadd(dead, now as f64, id);
                store.hset(errors, &[(id, b"lease expired")]);
                emit(&events, store, "dead", id, &said);
                if let Some((grouping, group)) = group {
                    grouping.off_active(store, id, group);
                }
                if let Some(link) = link {
                    notify.tell_died(store, id, &link);
                }
                died += 1;
            } else {
                if let Some((grouping, group)) = group {
                    store.zrem(&grouping.keys.active(group), id);
                }
                to_pending(store, &key, pending, (score, group), id, now);
                emit(&events, store, "failed", id, &said);
                requeued += 1;
            }
        }
        if requeued > 0 {
            wake(store, wakes);
        }
        flush(&events, store);
        Ok(Reply::Array(vec![Reply::count(requeued), Reply::count(died)]))
    }
}

/// An expired job as REAP read it: its id, record key, attempts, whether
/// it dies, its priority (when it goes back to pending) and its link.
type Reaped<'i> = (&'i Vec<u8>, Vec<u8>, i64, bool, f64, Option<Vec<u8>>);

impl Reap<'_> {
    /// Every expired record's attempts, policy, priority and link, read and
    /// checked before the first write.
    fn need_types<S: Store>(&self, store: &mut S) -> Result<(), Refusal> {
        let ReapKeys { active, pending, dead, errors, priority, policy, .. } = self.keys;
        for set in [active, pending, dead] {
            need(store, set, KeyType::Zset)?;
        }
        [errors, priority, policy].into_iter().try_for_each(|hash| need(store, hash, KeyType::Hash))
    }

    fn read<'i, S: Store>(
        &self,
        store: &mut S,
        ids: &'i [Vec<u8>],
        notify: &Notify<'_>,
    ) -> Result<Vec<Reaped<'i>>, Refusal> {
        let ReapKeys { priority, policy, .. } = self.keys;
        let records = read_records(store, self.prefix, ids, [b"state", b"attempts"])?;
        let policies = store.key_type(policy) == KeyType::Hash;
        let mut reaped = Vec::with_capacity(ids.len());
        for (id, (key, [_, attempts])) in ids.iter().zip(records) {
            let Some(attempt) = attempts_of(&key, attempts.as_deref())? else { continue };
            let own = if policies { policy_of(store, policy, id)? } else { None };
            let max_attempts = own.unwrap_or_default().max_attempts(self.max_attempts);
            let dies = attempt >= max_attempts as i64;
            let score = if dies { 0.0 } else { priority_of(store, priority, id)? };
            let link = if dies { notify.link(store, id)? } else { None };
            reaped.push((id, key, attempt, dies, score, link));
        }
        Ok(reaped)
    }
}
