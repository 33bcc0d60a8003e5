//! RETRY: an operator sends a dead job back to pending, or a flow's parent
//! whose children have not all ended back to waiting for them (PROTOCOL.md
//! §7; `retry.lua`).

use super::events::{emit, Events};
use super::grouped::Grouped;
use super::{need, priority_of, read_state, to_pending, wake, wake_key, write_record};
use crate::description::{keys, Description, Effect};
use crate::parse::{children_key, kind, lossy, malformed, named_keys, options, stored};
use crate::store::{KeyType, Store};
use crate::{Answer, Code, Refusal, Reply};

keys! {
    /// RETRY's KEYS.
    RetryKeys {
        job: Job,
        dead: Dead,
        pending: Pending,
        priority: Priority,
        events: Events,
        config: Config,
        wake: Wake,
    }
    more
    /// A flow's parent's keys (protocol 1.11, §7.8): its dependencies, and
    /// the set it waits in while some are open.
    RetryFlow { children: Children, waiting: Waiting }
}

/// A parsed RETRY.
#[derive(Debug)]
pub struct Retry<'a> {
    keys: RetryKeys<'a>,
    prefix: &'a [u8],
    id: &'a [u8],
}

impl<'a> Retry<'a> {
    /// What RETRY is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "retry",
        command: "EMQ.RETRY",
        keys: RetryKeys::ROLES,
        forms: RetryKeys::FORMS,
        args: &["id"],
        options: &[],
        effect: Effect::Writes,
        wakes_claims: true,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: true,
    };

    /// KEYS: job, dead, pending, priority, events, config, wake, then
    /// children and waiting (1.11). ARGV: id.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQKIND`: the id (`ARGV[1]`) is not `JOB`-namespaced.
    /// - `EMQARG`: the keys are not this queue's, in their number and roles, or an argument follows the id.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Retry<'a>, Refusal> {
        let id = kind(args.first().copied())?;
        let (keys, prefix) = named_keys::<RetryKeys>(keys, id)?;
        options(args.get(1..).unwrap_or_default(), [])?;
        Ok(Retry { keys, prefix, id })
    }

    /// A dead job back to pending at its priority; a flow's parent with
    /// children still open back to waiting for them (1.11).
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: a key or the record holds another type.
    /// - `TRYAGAIN`: the record is missing while the queue's slot moves between cluster nodes.
    /// - `EMQNOJOB`: there is no record.
    /// - `EMQDATA`: the record's `state` is none of the six or it lacks its state or attempts, the job's
    ///   priority is not an integer, its dependencies' `open` is not an integer of 0 or more, or
    ///   `<q>config`'s `events` is not an integer.
    /// - `EMQARG`: the job is a flow's parent with children open, and the call lacks its flow keys.
    /// - `EMQSTATE`: the job is not dead (`cannot retry a <state> job`).
    /// - `EMQVERSION`: `<q>config`'s `protocol` is another major, or malformed.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        need(store, self.keys.dead, KeyType::Zset)?;
        need(store, self.keys.pending, KeyType::Zset)?;
        need(store, self.keys.priority, KeyType::Hash)?;
        if let Some(flow) = self.keys.more {
            need(store, flow.children, KeyType::Hash)?;
            need(store, flow.waiting, KeyType::Zset)?;
        }
        match read_state(store, self.keys.job)?.as_deref() {
            None => return Err(Refusal::new(Code::NoJob, "no such job")),
            Some(b"dead") => {}
            // One of the six: read_state refuses any other.
            Some(state) => {
                let state = String::from_utf8_lossy(state);
                return Err(Refusal::new(Code::State, format!("cannot retry a {state} job")));
            }
        }
        let open = self.open_children(store)?;
        let events = Events::open(store, Some((self.keys.events, self.keys.config)))?;
        let wakes = wake_key(store, Some(self.keys.wake))?;
        let score = priority_of(store, self.keys.priority, self.id)?;
        let grouped = Grouped::read(store, self.prefix, self.id)?;
        store.zrem(self.keys.dead, self.id);
        let now = store.now_ms();
        match (open, self.keys.more) {
            // It runs once its children have ended, as when it was made.
            (true, Some(flow)) => {
                write_record(store, self.keys.job, &[(b"state", b"waiting")], now);
                store.zadd(flow.waiting, now as f64, self.id);
            }
            _ => {
                to_pending(store, self.keys.job, self.keys.pending, (score, grouped.name()), self.id, now);
                wake(store, wakes);
            }
        }
        emit(&events, store, "retried", self.id, &[]);
        Ok(Reply::Int(1))
    }

    /// Whether the job is a flow's parent with children open (its
    /// dependencies' `open` 1 or more), read before any write. Without the
    /// flow's keys, such a parent is refused: made pending, it would run
    /// before its children.
    fn open_children<S: Store>(&self, store: &mut S) -> Result<bool, Refusal> {
        let flow = self.keys.more;
        let children = match flow {
            Some(flow) => flow.children.to_vec(),
            None => {
                let children = children_key(self.prefix, self.id);
                need(store, &children, KeyType::Hash)?;
                children
            }
        };
        let open = match stored(store.hget(&children, b"open").as_deref(), &children, b"open")? {
            None => 0,
            Some(open) if open >= 0 => open,
            Some(_) => return Err(malformed(&children, b"open", "an integer of 0 or more")),
        };
        if open > 0 && flow.is_none() {
            let p = lossy(self.prefix);
            return Err(Refusal::arg(format!(
                "{} waits for {open} children: the call needs {p}children:{} and {p}waiting",
                lossy(self.id),
                lossy(self.id)
            )));
        }
        Ok(open > 0)
    }
}
