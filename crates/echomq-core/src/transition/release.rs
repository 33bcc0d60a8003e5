//! RELEASE: the holder hands its job back to pending (PROTOCOL.md §7;
//! `release.lua`).

use super::events::{emit, Events};
use super::fenced::Fenced;
use super::grouped::Grouped;
use super::{need, policy_of, priority_of, to_pending, wake, wake_key};
use crate::description::{keys, Description, Effect};
use crate::limits::MAX_ATTEMPTS;
use crate::parse::options;
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal, Reply};

keys! {
    /// RELEASE's KEYS: seven, and the policy key with REFUND.
    ReleaseKeys {
        job: Job,
        active: Active,
        pending: Pending,
        priority: Priority,
        events: Events,
        config: Config,
        wake: Wake,
    }
    more
    /// The key RELEASE takes with REFUND.
    ReleaseRefund { policy: Policy }
}

/// A parsed RELEASE.
#[derive(Debug)]
pub struct Release<'a> {
    fenced: Fenced<'a, ReleaseKeys<'a>>,
    /// `REFUND <max_attempts>` (with the policy key): the attempt is given
    /// back; the caller's maximum, for a job with no ATTEMPTS of its own.
    refund: Option<(&'a [u8], u64)>,
}

impl<'a> Release<'a> {
    /// What RELEASE is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "release",
        command: "EMQ.RELEASE",
        keys: ReleaseKeys::ROLES,
        forms: ReleaseKeys::FORMS,
        args: &["id", "token"],
        options: &["REFUND"],
        effect: Effect::Writes,
        wakes_claims: true,
        fenced: true,
        hands_out_tokens: false,
        waits_for_replication: true,
    };

    /// KEYS: job, active, pending, priority, events, config, wake, and
    /// policy with REFUND. ARGV: id, token, then `REFUND <max_attempts>`.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQKIND`: the id (`ARGV[1]`) is not `JOB`-namespaced.
    /// - `EMQARG`: the keys are not this queue's, in their number and roles; the token is missing or out of
    ///   range; an option is unknown, given twice or out of range; `REFUND` comes without the policy key, or
    ///   the policy key without `REFUND`.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Release<'a>, Refusal> {
        let fenced = Fenced::<ReleaseKeys>::parse(keys, args)?;
        let [refund] = options(args.get(2..).unwrap_or_default(), [("REFUND", MAX_ATTEMPTS)])?;
        let refund = match (refund, fenced.keys.more) {
            (Some(_), None) => return Err(Refusal::arg("REFUND needs the policy key: takes 8 keys")),
            (None, Some(_)) => {
                return Err(Refusal::arg("the policy key goes with REFUND: takes 7 keys without it"))
            }
            (Some(max_attempts), Some(ReleaseRefund { policy })) => Some((policy, max_attempts)),
            (None, None) => None,
        };
        Ok(Release { fenced, refund })
    }

    /// Back to pending at its priority, the token kept. With REFUND the
    /// attempt is not spent: the job's own ATTEMPTS grow by one, as DEFER's do.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: a key or the record holds another type.
    /// - `TRYAGAIN`: the record is missing while the queue's slot moves between cluster nodes.
    /// - `EMQNOJOB`: there is no record.
    /// - `EMQDATA`: the record's `state` or `attempts`, the job's own policy (with `REFUND`) or its priority
    ///   is malformed, or `<q>config`'s `events` is not an integer.
    /// - `EMQFENCE`: the job is not active, or `token` is not its `attempts` (PROTOCOL.md §6).
    /// - `EMQVERSION`: `<q>config`'s `protocol` is another major, or malformed.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let Fenced {
            keys: ReleaseKeys { job, active, pending, priority, events, config, wake: wakes, .. },
            id,
            prefix,
            ..
        } = self.fenced;
        let typed = [(active, KeyType::Zset), (pending, KeyType::Zset), (priority, KeyType::Hash)];
        self.fenced.check(store, job, &typed)?;
        let events = Events::open(store, Some((events, config)))?;
        let wakes = wake_key(store, Some(wakes))?;
        let refunded = match self.refund {
            Some((policies, max_attempts)) => {
                need(store, policies, KeyType::Hash)?;
                let mut policy = policy_of(store, policies, id)?.unwrap_or_default();
                policy.attempts = Some((policy.max_attempts(max_attempts) + 1).min(*MAX_ATTEMPTS.end()));
                Some((policies, policy))
            }
            None => None,
        };
        let score = priority_of(store, priority, id)?;
        let grouped = Grouped::read(store, prefix, id)?;
        store.zrem(active, id);
        grouped.off_active(store, id, true);
        let now = store.now_ms();
        to_pending(store, job, pending, (score, grouped.name()), id, now);
        if let Some((policies, policy)) = refunded {
            store.hset(policies, &[(id, &policy.text())]);
        }
        wake(store, wakes);
        emit(&events, store, "released", id, &[]);
        Ok(Reply::Int(1))
    }
}
