//! ADOPT: a running job becomes a parent, of children it names, and waits
//! for them (PROTOCOL.md §7.8; `adopt.lua`). Fenced by the holder's token;
//! the children are enqueued after it, with a link to the incarnation it
//! answers, as FLOW's are.

use super::events::{emit, Events};
use super::fenced::Fenced;
use super::flow::{dependencies, write_dependencies, Dependency};
use super::grouped::Grouped;
use super::notice::child_ref;
use super::{policy_of, write_stamped};
use crate::description::{keys, Description, Effect};
use crate::limits::{FLOW_CHILDREN, MAX_ATTEMPTS};
use crate::parse::{count, lossy, malformed, missing, stored};
use crate::store::{KeyType, Store};
use crate::{Answer, Code, Refusal, Reply};

keys! {
    /// ADOPT's KEYS.
    AdoptKeys {
        job: Job,
        children: Children,
        active: Active,
        waiting: Waiting,
        policy: Policy,
        events: Events,
        config: Config,
    }
}

/// A parsed ADOPT.
#[derive(Debug)]
pub struct Adopt<'a> {
    fenced: Fenced<'a, AdoptKeys<'a>>,
    max_attempts: u64,
    children: Vec<Dependency<'a>>,
}

/// The parent's dependencies as ADOPT found them: `None` fields for a job
/// that is no parent yet.
struct Before {
    incarnation: Option<i64>,
    open: i64,
    children: i64,
    /// Each child given: its entry, `None` when it has none yet.
    entries: Vec<Option<Vec<u8>>>,
}

impl<'a> Adopt<'a> {
    /// What ADOPT is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "adopt",
        command: "EMQ.ADOPT",
        keys: AdoptKeys::ROLES,
        forms: AdoptKeys::FORMS,
        args: &["id", "token", "max_attempts", "children", "child", "on_failure"],
        options: &[],
        effect: Effect::Grows,
        wakes_claims: true,
        fenced: true,
        hands_out_tokens: false,
        waits_for_replication: true,
    };

    /// KEYS: job, children, active, waiting, policy, events, config. ARGV:
    /// id, token, max attempts (the caller's, for a job with no ATTEMPTS of
    /// its own), the number of children n, then n pairs `{<queue>}<id>
    /// fail|ignore|continue`.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQKIND`: the id, or a child's id, is not `JOB`-namespaced.
    /// - `EMQARG`: the keys are not this queue's; the token, max attempts, the number of children, a
    ///   child or its on-failure is missing or malformed; a child is named twice, or is the job
    ///   itself; anything follows the children.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Adopt<'a>, Refusal> {
        let fenced = Fenced::<AdoptKeys>::parse(keys, args)?;
        let max_attempts = count(args.get(2).copied(), "max_attempts", MAX_ATTEMPTS)?;
        let n = count(args.get(3).copied(), "children", FLOW_CHILDREN)? as usize;
        let children = dependencies(&args[4..], n, &child_ref(fenced.prefix, fenced.id))?;
        if args.len() > 4 + 2 * n {
            return Err(Refusal::arg("ADOPT takes no option after its children"));
        }
        Ok(Adopt { fenced, max_attempts, children })
    }

    /// The holder's job waits for its children: those given that it has no
    /// entry for are added, `open`, to its dependencies (an incarnation
    /// minted, the server's now, when it had none), and it moves from
    /// active to `waiting` without spending its attempt (its own ATTEMPTS
    /// grow by one): `[1, incarnation, [child…]]`, the children given that
    /// are open, in the order given. A job none of whose children is open
    /// once these are added (each was given before, and has ended) changes
    /// nothing and goes on: `[0, incarnation, []]`.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: a key or the record holds another type.
    /// - `TRYAGAIN`: the record is missing while the queue's slot moves between cluster nodes.
    /// - `EMQNOJOB`: there is no record.
    /// - `EMQFENCE`: the job is not active, or `token` is not its `attempts` (PROTOCOL.md §6).
    /// - `EMQDATA`: the record, the job's own policy, its dependencies' `incarnation`, `open` or
    ///   `children`, or `<q>config`'s `events` is malformed.
    /// - `EMQSIZE`: the job would have more than `FLOW_CHILDREN` children.
    /// - `EMQVERSION`: `<q>config`'s `protocol` is another major, or malformed.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let Fenced {
            keys: AdoptKeys { job, children, active, waiting, policy: policies, events, config },
            id,
            prefix,
            ..
        } = self.fenced;
        let typed = [
            (children, KeyType::Hash),
            (active, KeyType::Zset),
            (waiting, KeyType::Zset),
            (policies, KeyType::Hash),
        ];
        let stamped = self.fenced.check(store, job, &typed)?;
        let mut policy = policy_of(store, policies, id)?.unwrap_or_default();
        let before = self.before(store)?;
        let added = before.entries.iter().filter(|entry| entry.is_none()).count() as i64;
        let total = before.children + added;
        let most = *FLOW_CHILDREN.end() as i64;
        if total > most {
            let has = format!("{} has {}, {added} more given", lossy(id), before.children);
            return Err(Refusal::new(Code::Size, format!("a parent has at most {most} children: {has}")));
        }
        let open = before.open + added;
        let now = store.now_ms();
        let incarnation = before.incarnation.map_or_else(|| now.to_string(), |known| known.to_string());
        if open == 0 {
            let none = Reply::Array(Vec::new());
            return Ok(Reply::Array(vec![Reply::Int(0), Reply::Bulk(incarnation.into_bytes()), none]));
        }
        let events = Events::open(store, Some((events, config)))?;
        let open_children = self.open_children(&before);
        let added: Vec<Dependency> = self
            .children
            .iter()
            .zip(&before.entries)
            .filter(|(_, had)| had.is_none())
            .map(|(given, _)| *given)
            .collect();
        let grouped = Grouped::read(store, prefix, id)?;
        write_dependencies(store, children, &incarnation, (open, total), &added);
        store.zrem(active, id);
        grouped.off_active(store, id, false);
        write_stamped(store, job, &[(b"state", b"waiting")], now, stamped);
        store.zadd(waiting, now as f64, id);
        // The attempt is given back, as DEFER gives it: the job's own maximum grows by one.
        policy.attempts = Some((policy.max_attempts(self.max_attempts) + 1).min(*MAX_ATTEMPTS.end()));
        store.hset(policies, &[(id, &policy.text())]);
        let (added, open) = (added.len().to_string(), open.to_string());
        emit(&events, store, "adopted", id, &[(b"children", added.as_bytes()), (b"open", open.as_bytes())]);
        Ok(Reply::Array(vec![
            Reply::Int(1),
            Reply::Bulk(incarnation.into_bytes()),
            Reply::Array(open_children),
        ]))
    }

    /// The children given that are open once the call is applied, for the
    /// holder to enqueue: those added, and those added before that have
    /// not ended (one whose enqueue an earlier run never made).
    fn open_children(&self, before: &Before) -> Vec<Reply> {
        self.children
            .iter()
            .zip(&before.entries)
            .filter(|(_, entry)| entry.as_ref().is_none_or(|entry| entry.starts_with(b"open ")))
            .map(|((child, _), _)| Reply::Bulk(child.to_vec()))
            .collect()
    }

    /// The job's dependencies before this call, and which children given
    /// are new to them.
    fn before<S: Store>(&self, store: &mut S) -> Result<Before, Refusal> {
        let key = self.fenced.keys.children;
        let mut fields: Vec<&[u8]> = vec![b"incarnation", b"open", b"children"];
        fields.extend(self.children.iter().map(|(child, _)| *child));
        let mut read = store.hmget(key, &fields).into_iter();
        let mut next = || read.next().expect("a value a field");
        let (incarnation, open, children) = (next(), next(), next());
        let entries = self.children.iter().map(|_| next()).collect();
        if incarnation.is_none() && open.is_none() && children.is_none() {
            return Ok(Before { incarnation: None, open: 0, children: 0, entries });
        }
        let number = |value: Option<Vec<u8>>, field: &[u8]| match stored(value.as_deref(), key, field)? {
            Some(n) if n >= 0 => Ok(n),
            Some(_) => Err(malformed(key, field, "an integer of 0 or more")),
            None => Err(missing(key, field)),
        };
        Ok(Before {
            incarnation: Some(number(incarnation, b"incarnation")?),
            open: number(open, b"open")?,
            children: number(children, b"children")?,
            entries,
        })
    }
}
