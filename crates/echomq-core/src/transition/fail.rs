//! FAIL: the holder gives up this attempt: a retry after the back-off, or
//! dead at max attempts (PROTOCOL.md §7; `fail.lua`).

use super::events::{emit, error_text, Events};
use super::fenced::Fenced;
use super::grouped::Grouped;
use super::notice::Notify;
use super::{policy_of, write_record};
use crate::description::{keys, Description, Effect};
use crate::limits::{DELAY_MS, MAX_ATTEMPTS, MAX_ERROR_TEXT};
use crate::parse::{count, options};
use crate::store::{KeyType, Store};
use crate::{Answer, Code, Refusal, Reply};

keys! {
    /// FAIL's KEYS.
    FailKeys {
        job: Job,
        active: Active,
        delayed: Delayed,
        dead: Dead,
        errors: Errors,
        policy: Policy,
        events: Events,
        config: Config,
    }
    then counts: Counts
    flow
    /// The flows' keys (protocol 1.6, §7.8).
    FailTold { parents: Parents, notices: Notices }
}

/// A parsed FAIL.
#[derive(Debug)]
pub struct Fail<'a> {
    fenced: Fenced<'a, FailKeys<'a>>,
    max_attempts: u64,
    backoff: u64,
    error: &'a [u8],
}

impl<'a> Fail<'a> {
    /// What FAIL is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "fail",
        command: "EMQ.FAIL",
        keys: FailKeys::ROLES,
        forms: FailKeys::FORMS,
        args: &["id", "token", "max_attempts", "backoff", "error"],
        options: &[],
        effect: Effect::Writes,
        wakes_claims: true,
        fenced: true,
        hands_out_tokens: false,
        waits_for_replication: true,
    };

    /// KEYS: job, active, delayed, dead, errors, policy, events, config.
    /// ARGV: id, token, max attempts, back-off, error: the caller's, for a
    /// job with no policy of its own.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQKIND`: the id (`ARGV[1]`) is not `JOB`-namespaced.
    /// - `EMQARG`: the keys are not this queue's, in their number and roles; the token, max_attempts or
    ///   backoff is missing or out of range; the error text is missing; an argument follows it.
    /// - `EMQSIZE`: the error text is over `MAX_ERROR_TEXT` bytes.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Fail<'a>, Refusal> {
        let fenced = Fenced::parse(keys, args)?;
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
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: a key or the record holds another type.
    /// - `TRYAGAIN`: the record is missing while the queue's slot moves between cluster nodes.
    /// - `EMQNOJOB`: there is no record.
    /// - `EMQDATA`: the record's `state` or `attempts`, the job's own policy, or `<q>config`'s `events` is
    ///   not an integer.
    /// - `EMQFENCE`: the job is not active, or `token` is not its `attempts` (PROTOCOL.md §6).
    /// - `EMQVERSION`: `<q>config`'s `protocol` is another major, or malformed.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let Fenced {
            keys: FailKeys { job, active, delayed, dead, errors, policy, events, config, counts, flow },
            id,
            token,
            prefix,
        } = self.fenced;
        let typed = [
            (active, KeyType::Zset),
            (delayed, KeyType::Zset),
            (dead, KeyType::Zset),
            (errors, KeyType::Hash),
            (policy, KeyType::Hash),
        ];
        self.fenced.check(store, job, &typed)?;
        let events = Events::open_counted(store, Some((events, config)), counts, &["failed", "dead"])?;
        let policy = policy_of(store, policy, id)?.unwrap_or_default();
        let now = store.now_ms();
        let dies = token >= policy.max_attempts(self.max_attempts);
        let notify = Notify::open(store, flow.map(|told| (told.parents, told.notices)), prefix)?;
        let link = if dies { notify.link(store, id)? } else { None };
        let state: &[u8] = if dies { b"dead" } else { b"delayed" };
        let grouped = Grouped::read(store, prefix, id)?;
        store.zrem(active, id);
        grouped.off_active(store, id, false);
        write_record(store, job, &[(b"state", state)], now);
        if dies {
            store.zadd(dead, now as f64, id);
        } else {
            store.zadd(delayed, (now + policy.backoff_ms(self.backoff, token)) as f64, id);
        }
        store.hset(errors, &[(id, self.error)]);
        let event = if dies { "dead" } else { "failed" };
        let attempt = token.to_string();
        emit(
            &events,
            store,
            event,
            id,
            &[(b"attempt", attempt.as_bytes()), (b"error", error_text(self.error))],
        );
        if let Some(link) = link {
            notify.tell_died(store, id, &link);
        }
        Ok(Reply::Bulk(state.to_vec()))
    }
}
