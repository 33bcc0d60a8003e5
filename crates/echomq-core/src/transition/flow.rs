//! FLOW: a parent job that waits for its children (PROTOCOL.md §7.8;
//! `flow.lua`). The parent is written first, `waiting`, with its open
//! dependencies and an incarnation; its children are then enqueued, each
//! in its own queue, with a link to it (ENQUEUE's or FLOW's `PARENT`).

use super::enqueue::Given;
use super::events::{emit, Events};
use super::grouping::Grouping;
use super::notice::{child_ref, JobRef};
use super::{need, write_record};
use crate::description::{keys, Description, Effect};
use crate::limits::{FLOW_CHILDREN, MAX_PAYLOAD};
use crate::parse::{count, kind, lossy, named_keys};
use crate::policy::Policy;
use crate::store::{KeyType, Store};
use crate::{Answer, Code, Refusal, Reply};

keys! {
    /// FLOW's KEYS.
    FlowKeys {
        job: Job,
        children: Children,
        waiting: Waiting,
        priority: Priority,
        policy: Policy,
        headers: Headers,
        parents: Parents,
        events: Events,
        config: Config,
        counts: Counts,
    }
}

/// What a parent does when a child ends other than done (dead, cancelled
/// or gone), declared per child.
pub(crate) const ON_FAILURE: [&[u8]; 3] = [b"fail", b"ignore", b"continue"];

/// A child and what its end other than done does to its parent, as a call
/// names them: `{<queue>}<id>` and `fail`, `ignore` or `continue`.
pub(crate) type Dependency<'a> = (&'a [u8], &'a [u8]);

/// HSET a parent's dependencies `key`: its `incarnation`, `open` and
/// `children` (`counts`, the two), and `added`'s entries, each `open
/// <on_failure>` (FLOW's and ADOPT's writes).
pub(crate) fn write_dependencies<S: Store>(
    store: &mut S,
    key: &[u8],
    incarnation: &str,
    counts: (i64, i64),
    added: &[Dependency<'_>],
) {
    let (open, children) = (counts.0.to_string(), counts.1.to_string());
    let entries: Vec<Vec<u8>> =
        added.iter().map(|(_, on_failure)| [b"open ", *on_failure].concat()).collect();
    let mut written: Vec<(&[u8], &[u8])> = vec![
        (b"incarnation", incarnation.as_bytes()),
        (b"open", open.as_bytes()),
        (b"children", children.as_bytes()),
    ];
    written.extend(added.iter().zip(&entries).map(|((child, _), entry)| (*child, entry.as_slice())));
    store.hset(key, &written);
}

/// The `n` pairs `{<queue>}<id> fail|ignore|continue` at the head of
/// `args` (FLOW's and ADOPT's), checked in order: each child's reference,
/// its id's kind, its on-failure, named once, and not `own`, the parent.
pub(crate) fn dependencies<'a>(
    args: &[&'a [u8]],
    n: usize,
    own: &[u8],
) -> Result<Vec<Dependency<'a>>, Refusal> {
    let mut children: Vec<Dependency<'a>> = Vec::with_capacity(n);
    for at in 0..n {
        let child = *args.get(2 * at).ok_or_else(|| Refusal::arg("a child is missing"))?;
        let Some(named) = JobRef::split(child) else {
            return Err(Refusal::arg(format!("child must be {{<queue>}}<id>, not {}", lossy(child))));
        };
        kind(Some(named.id))?;
        let on_failure = args.get(2 * at + 1).copied().filter(|word| ON_FAILURE.contains(word));
        let on_failure = on_failure
            .ok_or_else(|| Refusal::arg(format!("child {} needs fail, ignore or continue", lossy(child))))?;
        if children.iter().any(|(seen, _)| *seen == child) {
            return Err(Refusal::arg(format!("child {} given twice", lossy(child))));
        }
        if child == own {
            return Err(Refusal::arg(format!("{} cannot be its own child", lossy(child))));
        }
        children.push((child, on_failure));
    }
    Ok(children)
}

/// A parsed FLOW.
#[derive(Debug)]
pub struct Flow<'a> {
    keys: FlowKeys<'a>,
    id: &'a [u8],
    payload: &'a [u8],
    children: Vec<Dependency<'a>>,
    priority: i64,
    policy: Option<Policy>,
    headers: Option<&'a [u8]>,
    parent: Option<&'a [u8]>,
    /// The parent's group (1.7, §7.9): it joins it when its children end.
    group: Option<&'a [u8]>,
    prefix: &'a [u8],
}

impl<'a> Flow<'a> {
    /// What FLOW is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "flow",
        command: "EMQ.FLOW",
        keys: FlowKeys::ROLES,
        forms: FlowKeys::FORMS,
        args: &["id", "payload", "children", "child", "on_failure"],
        options: &["PRIORITY", "ATTEMPTS", "BACKOFF", "BACKOFF_EXP", "TIMEOUT", "HEADERS", "PARENT", "GROUP"],
        effect: Effect::Grows,
        wakes_claims: false,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: true,
    };

    /// KEYS: job, children, waiting, priority, policy, headers, parents,
    /// events, config, counts. ARGV: id, payload, the number of children n,
    /// then n pairs `{<queue>}<id> fail|ignore|continue`, then options.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQKIND`: the id, or a child's id, is not `JOB`-namespaced.
    /// - `EMQARG`: the keys are not this queue's; the payload, the number of children, a child or its
    ///   policy is missing or malformed; a child is named twice; an option is unknown (DELAY, AT and
    ///   UNIQUE's are ENQUEUE's alone), given twice or out of range.
    /// - `EMQSIZE`: the payload is over `MAX_PAYLOAD` bytes.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Flow<'a>, Refusal> {
        let id = kind(args.first().copied())?;
        let (keys, prefix) = named_keys::<FlowKeys>(keys, id)?;
        let payload = *args.get(1).ok_or_else(|| Refusal::arg("payload is missing"))?;
        if payload.len() > MAX_PAYLOAD {
            return Err(Refusal::new(Code::Size, format!("payload exceeds {MAX_PAYLOAD} bytes")));
        }
        let n = count(args.get(2).copied(), "children", FLOW_CHILDREN)? as usize;
        let children = dependencies(&args[3..], n, &child_ref(prefix, id))?;
        let given = Given::read(&args[3 + 2 * n..])?;
        let enqueue_only = given.delay.is_some()
            || given.at.is_some()
            || given.unique.is_some()
            || given.hold.is_some()
            || given.until_finished.is_some();
        if enqueue_only {
            return Err(Refusal::arg("FLOW takes no DELAY, AT, UNIQUE, UNIQUE_FOR or UNIQUE_DONE"));
        }
        let policy = Policy::from_options(given.policy)?;
        let Given { priority, headers, parent, group, .. } = given;
        let priority = priority.unwrap_or(0);
        Ok(Flow { keys, id, payload, children, priority, policy, headers, parent, group, prefix })
    }

    /// The parent, `waiting`, with its open dependencies and an
    /// incarnation (the server's now): `[1, incarnation]`. A record that
    /// exists changes nothing: `[0, incarnation]` when it is a parent,
    /// `[0]` when it is not.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: a key holds another type.
    /// - `EMQDATA`: `<q>config`'s `events` or a counter is malformed.
    /// - `EMQVERSION`: `<q>config`'s `protocol` is another major, or malformed.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let FlowKeys { job, children, waiting, priority, policy, headers, parents, events, config, counts } =
            self.keys;
        need(store, job, KeyType::Hash)?;
        if store.key_type(job) == KeyType::Hash {
            need(store, children, KeyType::Hash)?;
            let incarnation = store.hget(children, b"incarnation");
            return Ok(Reply::Array(match incarnation {
                Some(incarnation) => vec![Reply::Int(0), Reply::Bulk(incarnation)],
                None => vec![Reply::Int(0)],
            }));
        }
        for (key, want) in [
            (children, KeyType::Hash),
            (waiting, KeyType::Zset),
            (priority, KeyType::Hash),
            (policy, KeyType::Hash),
            (headers, KeyType::Hash),
            (parents, KeyType::Hash),
        ] {
            need(store, key, want)?;
        }
        let grouping = Grouping::of(self.prefix);
        if let Some(group) = self.group {
            grouping.check(store)?;
            grouping.settings(store, group)?;
        }
        let events = Events::open_counted(store, Some((events, config)), Some(counts), &["enqueued"])?;
        let now = store.now_ms();
        let incarnation = now.to_string();
        let fields: [(&[u8], &[u8]); 4] = [
            (b"state", b"waiting"),
            (b"attempts", b"0"),
            (b"payload", self.payload),
            (b"enqueued_at", incarnation.as_bytes()),
        ];
        write_record(store, job, &fields, now);
        if let Some(group) = self.group {
            store.hset(&grouping.keys.membership(), &[(self.id, group)]);
        }
        let n = self.children.len() as i64;
        write_dependencies(store, children, &incarnation, (n, n), &self.children);
        store.zadd(waiting, now as f64, self.id);
        if self.priority != 0 {
            store.hset(priority, &[(self.id, self.priority.to_string().as_bytes())]);
        }
        if let Some(own) = &self.policy {
            store.hset(policy, &[(self.id, &own.text())]);
        }
        if let Some(text) = self.headers {
            store.hset(headers, &[(self.id, text)]);
        }
        if let Some(link) = self.parent {
            store.hset(parents, &[(self.id, link)]);
        }
        emit(&events, store, "enqueued", self.id, &[(b"state", b"waiting")]);
        Ok(Reply::Array(vec![Reply::Int(1), Reply::Bulk(incarnation.into_bytes())]))
    }
}
