//! RESOLVE: a parent hears how one of its children ended (PROTOCOL.md
//! §7.8; `resolve.lua`). The relay sends it for each notice; it applies a
//! notice once per (parent, incarnation, child), so a notice sent twice,
//! late, or after the parent was done or cancelled changes nothing. A dead
//! parent records its children's ends (1.11), for a retry of it; a child
//! that died and was retried, then done, is recorded done.

use super::events::{emit, error_text, Events};
use super::fenced::ack_result;
use super::grouped::Grouped;
use super::notice::{JobRef, Notify};
use super::{attempts_of, need, priority_of, read_fields, wake, wake_key, write_record};
use crate::description::{keys, Description, Effect};
use crate::limits::INCARNATION;
use crate::parse::{count, kind, lossy, malformed, named_keys, stored};
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal, Reply};

keys! {
    /// RESOLVE's KEYS.
    ResolveKeys {
        job: Job,
        children: Children,
        waiting: Waiting,
        pending: Pending,
        priority: Priority,
        dead: Dead,
        errors: Errors,
        parents: Parents,
        notices: Notices,
        events: Events,
        config: Config,
        wake: Wake,
        counts: Counts,
    }
}

/// How a child ended, as its notice says.
const OUTCOMES: [&[u8]; 4] = [b"done", b"dead", b"cancelled", b"gone"];

/// A parsed RESOLVE.
#[derive(Debug)]
pub struct Resolve<'a> {
    keys: ResolveKeys<'a>,
    prefix: &'a [u8],
    id: &'a [u8],
    incarnation: u64,
    child: &'a [u8],
    outcome: &'a [u8],
    result: Option<&'a [u8]>,
}

/// What a notice does to its waiting parent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Then {
    /// It waits on.
    Waits,
    /// It is pending: its last dependency resolved, or a child it
    /// continues after ended otherwise than done.
    Ready,
    /// It is dead: a child it fails with ended otherwise than done.
    Dies,
}

impl<'a> Resolve<'a> {
    /// What RESOLVE is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "resolve",
        command: "EMQ.RESOLVE",
        keys: ResolveKeys::ROLES,
        forms: ResolveKeys::FORMS,
        args: &["id", "incarnation", "child", "outcome"],
        options: &["RESULT"],
        effect: Effect::Grows,
        wakes_claims: true,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: true,
    };

    /// KEYS: job, children, waiting, pending, priority, dead, errors,
    /// parents, notices, events, config, wake, counts. ARGV: the parent's
    /// id, its incarnation, the child `{<queue>}<id>`, its outcome (`done`,
    /// `dead`, `cancelled` or `gone`), then `RESULT <bytes>`.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQKIND`: the id, or the child's, is not `JOB`-namespaced.
    /// - `EMQARG`: the keys are not this queue's; the incarnation, child or outcome is missing or
    ///   malformed; an option is unknown or given twice.
    /// - `EMQSIZE`: the result is over `MAX_RESULT` bytes.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Resolve<'a>, Refusal> {
        let id = kind(args.first().copied())?;
        let (keys, prefix) = named_keys::<ResolveKeys>(keys, id)?;
        let incarnation = count(args.get(1).copied(), "incarnation", INCARNATION)?;
        let child = args.get(2).copied().unwrap_or_default();
        let Some(named) = JobRef::split(child) else {
            return Err(Refusal::arg(format!("child must be {{<queue>}}<id>, not {}", lossy(child))));
        };
        kind(Some(named.id))?;
        let outcome = args.get(3).copied().filter(|word| OUTCOMES.contains(word));
        let outcome = outcome.ok_or_else(|| Refusal::arg("outcome must be done, dead, cancelled or gone"))?;
        let mut result = None;
        let mut rest = args.get(4..).unwrap_or_default();
        while let Some((&name, tail)) = rest.split_first() {
            if !name.eq_ignore_ascii_case(b"RESULT") {
                return Err(Refusal::arg(format!("unknown option {}", lossy(name))));
            }
            result = Some(ack_result(result, tail.first().copied())?);
            rest = &tail[1..];
        }
        Ok(Resolve { keys, prefix, id, incarnation, child, outcome, result })
    }

    /// Record the child's end in its parent's dependencies, once: `1`; and
    /// the parent, while it waits, pending when none is left open (or at
    /// once, for a child it continues after), dead for a child it fails
    /// with. A child recorded dead whose notice says `done` (it was
    /// retried) is recorded done, the open count as it was (1.11). `0` and
    /// no change for a parent that is gone, done or cancelled, of another
    /// incarnation, or told of this child already.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: a key or the record holds another type.
    /// - `EMQDATA`: the record, the dependencies' `open` or the child's entry, the parent's own link,
    ///   its priority, or `<q>config`'s `events` is malformed.
    /// - `EMQVERSION`: `<q>config`'s `protocol` is another major, or malformed.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let Some(heard) = self.read(store)? else { return Ok(Reply::Int(0)) };
        let ResolveKeys { priority, parents, notices, events, config, wake: wakes, counts, .. } = self.keys;
        let score = if heard.then == Then::Ready { priority_of(store, priority, self.id)? } else { 0.0 };
        let events = Events::open_counted(store, Some((events, config)), Some(counts), &["dead"])?;
        let wakes = wake_key(store, Some(wakes))?;
        let notify = Notify::open(store, Some((parents, notices)), self.prefix)?;
        let link = if heard.then == Then::Dies { notify.link(store, self.id)? } else { None };
        let grouped = Grouped::read(store, self.prefix, self.id)?;
        let after = self.write(store, &heard, (score, &grouped), wakes);
        let open = heard.open.to_string();
        let said: [(&[u8], &[u8]); 4] = [
            (b"child", self.child),
            (b"outcome", self.outcome),
            (b"open", open.as_bytes()),
            (b"state", after),
        ];
        emit(&events, store, "resolved", self.id, &said);
        if heard.then == Then::Dies {
            let error = self.error();
            let attempt = heard.attempts.to_string();
            emit(
                &events,
                store,
                "dead",
                self.id,
                &[(b"attempt", attempt.as_bytes()), (b"error", error_text(&error))],
            );
            if let Some(link) = link {
                notify.tell_died(store, self.id, &link);
            }
        }
        Ok(Reply::Int(1))
    }

    /// What the notice does to its parent, read and checked before any
    /// write: `None` when it changes nothing (no parent, one done or
    /// cancelled, another incarnation, a child heard of already).
    fn read<S: Store>(&self, store: &mut S) -> Result<Option<Heard>, Refusal> {
        let ResolveKeys { job, children, waiting, pending, priority, dead, errors, .. } = self.keys;
        let typed = [
            (children, KeyType::Hash),
            (waiting, KeyType::Zset),
            (pending, KeyType::Zset),
            (priority, KeyType::Hash),
            (dead, KeyType::Zset),
            (errors, KeyType::Hash),
        ];
        for (key, want) in typed {
            need(store, key, want)?;
        }
        let [state, attempts] = read_fields(store, job, [b"state", b"attempts"])?;
        let attempts = attempts_of(job, attempts.as_deref())?.unwrap_or(0);
        let waits = match state.as_deref() {
            Some(b"waiting") => true,
            // Running already (a child it continued after ended, or it was
            // retried), or dead (a retry may run it again): it records.
            Some(b"pending" | b"active" | b"delayed" | b"dead") => false,
            _ => return Ok(None),
        };
        let fields: [&[u8]; 3] = [b"incarnation", b"open", self.child];
        let [incarnation, open, dependency] =
            <[Option<Vec<u8>>; 3]>::try_from(store.hmget(children, &fields)).expect("a value a field");
        if stored(incarnation.as_deref(), children, b"incarnation")? != Some(self.incarnation as i64) {
            return Ok(None);
        }
        let Some(dependency) = dependency else { return Ok(None) };
        let on_failure = match self.entry(&dependency)? {
            Entry::Open(on_failure) => on_failure,
            // Retried after it died, and done: it was counted as ended.
            Entry::Dead if self.outcome == b"done" => {
                let open = match stored(open.as_deref(), children, b"open")? {
                    Some(n) if n >= 0 => n,
                    _ => return Err(malformed(children, b"open", "an integer of 0 or more")),
                };
                let state = state.unwrap_or_default();
                return Ok(Some(Heard { state, attempts, open, then: Then::Waits }));
            }
            Entry::Dead | Entry::Ended => return Ok(None),
        };
        let open = match stored(open.as_deref(), children, b"open")? {
            Some(n) if n >= 1 => n - 1,
            _ => return Err(malformed(children, b"open", "an integer of 1 or more")),
        };
        let failed = self.outcome != b"done";
        let then = match (waits, failed, on_failure.as_slice()) {
            (false, _, _) => Then::Waits,
            (true, true, b"fail") => Then::Dies,
            (true, true, b"continue") => Then::Ready,
            (true, _, _) if open == 0 => Then::Ready,
            (true, _, _) => Then::Waits,
        };
        let state = state.unwrap_or_default();
        Ok(Some(Heard { state, attempts, open, then }))
    }

    /// The child's entry: its on-failure while it is open, or the outcome
    /// it holds once heard of; `EMQDATA` for anything else.
    fn entry(&self, dependency: &[u8]) -> Result<Entry, Refusal> {
        let children = self.keys.children;
        match dependency.strip_prefix(b"open ") {
            Some(on_failure) if super::flow::ON_FAILURE.contains(&on_failure) => {
                Ok(Entry::Open(on_failure.to_vec()))
            }
            None if dependency == b"dead" => Ok(Entry::Dead),
            None if OUTCOMES.contains(&dependency) => Ok(Entry::Ended),
            _ => Err(malformed(children, self.child, "a dependency")),
        }
    }

    /// The writes, after every check: the child's outcome (and result) and
    /// the open count, then the parent to pending or dead when `heard`
    /// says so. The parent's state after.
    fn write<'h, S: Store>(
        &self,
        store: &mut S,
        heard: &'h Heard,
        (score, grouped): (f64, &Grouped<'_>),
        wakes: Option<&[u8]>,
    ) -> &'h [u8] {
        let ResolveKeys { job, children, waiting, pending, dead, errors, .. } = self.keys;
        let open = heard.open.to_string();
        let mut recorded: Vec<(&[u8], &[u8])> = vec![(self.child, self.outcome), (b"open", open.as_bytes())];
        let result_field = [b"result:", self.child].concat();
        if let (Some(result), b"done") = (self.result, self.outcome) {
            recorded.push((&result_field, result));
        }
        store.hset(children, &recorded);
        let now = store.now_ms();
        match heard.then {
            Then::Waits => &heard.state,
            Then::Ready => {
                store.zrem(waiting, self.id);
                write_record(store, job, &[(b"state", b"pending")], now);
                grouped.enter_pending(store, pending, self.id, score);
                wake(store, wakes);
                b"pending"
            }
            Then::Dies => {
                store.zrem(waiting, self.id);
                write_record(store, job, &[(b"state", b"dead")], now);
                store.zadd(dead, now as f64, self.id);
                store.hset(errors, &[(self.id, &self.error())]);
                b"dead"
            }
        }
    }

    /// A parent's error when a child fails it: `child <child> <outcome>`.
    fn error(&self) -> Vec<u8> {
        [b"child ", self.child, b" ", self.outcome].concat()
    }
}

/// A child's entry in its parent's dependencies.
enum Entry {
    /// Open, with what its parent does if it ends otherwise than done.
    Open(Vec<u8>),
    /// It died: a retry may run it again, and a later `done` replaces it.
    Dead,
    /// Done, cancelled or gone: final.
    Ended,
}

/// What a notice does to its parent, as [`Resolve::read`] found it.
#[derive(Debug)]
struct Heard {
    /// The parent's state before.
    state: Vec<u8>,
    /// Its attempts, for a `dead` event.
    attempts: i64,
    /// How many children stay open once this one is heard of.
    open: i64,
    /// What becomes of it.
    then: Then,
}
