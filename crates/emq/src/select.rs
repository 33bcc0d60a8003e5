//! Selecting jobs in bulk: what `emq find`, `emq retry --all-dead`, `emq
//! cancel --all` and the dashboard share.
//!
//! A [`Selection`] is one state's set of a queue, and optionally a text the
//! job's payload or last error must contain. Every call here is bounded:
//! a read or a change is at most a page ([`PAGE`]) of jobs per round trip,
//! and a walk stops after its budget, saying where it stopped. Nothing here
//! is a transition: reads are plain commands on the queue's keys
//! (`PROTOCOL.md` §2), changes are RETRY and CANCEL, one per job, a page of
//! them pipelined, and REMOVE (protocol 1.4), one call a page of ids.
//!
//! Orders: [`walk`] goes newest first (highest score first: for pending,
//! the last to be served first); [`apply_all`] goes oldest first (lowest
//! score first: for pending, the order of service), from an anchor that
//! survives the jobs it changes leaving the set.

use std::fmt;
use std::sync::Arc;

use echomq::executor::execute_batch;
use echomq::transition::{Cancel, Remove, Retry};
use echomq::{Executor, JobId, Keyspace, State};

use crate::connect::{Conn, Error};

mod anchor;
mod applied;

pub use applied::Applied;

use anchor::{after, range, Position};

/// How many jobs one round trip reads or changes at most.
pub const PAGE: usize = 100;

/// Which jobs of one queue: a state's set, and optionally a text that the
/// job's payload or last error must contain (a byte substring, taken
/// literally: `*` is a star).
#[derive(Clone, Debug)]
pub struct Selection {
    /// The queue's name.
    pub queue: String,
    /// The state whose set is walked.
    pub state: State,
    /// The text a selected job's payload or last error contains; `None`: every job of the set.
    pub matching: Option<String>,
}

impl Selection {
    /// The queue's keys, once the selection is checked: a valid queue name,
    /// and no empty text (which would match every job: leave it out).
    fn checked(&self) -> Result<Keyspace, Error> {
        let keys = Keyspace::new(&self.queue)?;
        if self.matching.as_deref() == Some("") {
            return Err(Refused::EmptyText.into());
        }
        Ok(keys)
    }

    /// Whether a job whose payload is `payload` and last error `error` is selected.
    fn keeps(&self, payload: Option<&[u8]>, error: Option<&[u8]>) -> bool {
        match &self.matching {
            None => true,
            Some(text) => {
                [payload, error].into_iter().flatten().any(|bytes| contains(bytes, text.as_bytes()))
            }
        }
    }

    /// The selection in words: `dead jobs of q whose payload or error contains "x"`.
    pub fn describe(&self) -> String {
        let matched = self
            .matching
            .as_ref()
            .map_or(String::new(), |t| format!(" whose payload or error contains {t:?}"));
        format!("{} jobs of {}{matched}", self.state, self.queue)
    }
}

/// One bounded step of a walk over a selection, newest first.
#[derive(Debug)]
pub struct Step {
    /// The selected jobs among those examined, newest first.
    pub ids: Vec<JobId>,
    /// How many jobs of the set this step looked at.
    pub examined: u64,
    /// The rank to resume from; `None`: the set's end was reached.
    pub next: Option<u64>,
    /// The set's size when read.
    pub total: u64,
}

/// What can be done to a selection's jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// RETRY: a dead job back to pending (a flow parent with open children to waiting).
    Retry,
    /// CANCEL: a pending, active, delayed or dead job to cancelled (an
    /// active job's worker loses its lease).
    Cancel,
    /// REMOVE: a job of any state deleted, with all kept beside it (an
    /// active job's worker loses its lease).
    Delete,
}

impl Action {
    /// Whether the action takes jobs of `state`.
    pub fn takes(self, state: State) -> bool {
        match self {
            Action::Retry => state == State::Dead,
            Action::Cancel => matches!(
                state,
                State::Pending | State::Active | State::Delayed | State::Dead | State::Waiting
            ),
            Action::Delete => true,
        }
    }

    /// Its verb: `retry`, `cancel`.
    pub fn verb(self) -> &'static str {
        match self {
            Action::Retry => "retry",
            Action::Cancel => "cancel",
            Action::Delete => "delete",
        }
    }

    /// What it did: `retried`, `cancelled`.
    pub fn done(self) -> &'static str {
        match self {
            Action::Retry => "retried",
            Action::Cancel => "cancelled",
            Action::Delete => "deleted",
        }
    }

    /// `Ok` when it takes jobs of `state`, else the refusal.
    pub fn check(self, state: State) -> Result<(), Refused> {
        if self.takes(state) {
            Ok(())
        } else {
            Err(Refused::State { action: self, state })
        }
    }
}

/// Bad input to a selection: refused before anything is sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// The action does not take jobs of this state.
    State {
        /// What was asked.
        action: Action,
        /// The selection's state.
        state: State,
    },
    /// An empty text: it would match every job (leave it out instead).
    EmptyText,
    /// An id prefix no job id starts with (every id starts with `JOB`).
    Prefix(String),
    /// A budget or a limit of 0: nothing would be examined or kept.
    Zero(&'static str),
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::State { action: Action::Retry, state } => {
                write!(f, "cannot retry {state} jobs: retry takes dead jobs")
            }
            Refused::State { action: Action::Cancel, state } => {
                write!(f, "cannot cancel {state} jobs: cancel takes pending, active, delayed or dead jobs")
            }
            Refused::State { action: Action::Delete, state } => write!(f, "cannot delete {state} jobs"),
            Refused::EmptyText => {
                f.write_str("the text to match is empty (leave it out to select every job)")
            }
            Refused::Prefix(prefix) => {
                write!(f, "no job id starts with {prefix:?}: ids start with {:?}", echomq::id::KIND)
            }
            Refused::Zero(what) => write!(f, "a {what} of 0 selects nothing"),
        }
    }
}

impl std::error::Error for Refused {}

/// How many jobs a selection holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Count {
    /// The jobs selected (among those examined, when not exact).
    pub n: u64,
    /// Whether `n` is the whole set's: no text, or a walk that reached the end.
    pub exact: bool,
    /// How many jobs were examined (the set's size, with no text).
    pub examined: u64,
    /// The set's size when read.
    pub total: u64,
}

impl Count {
    /// Nothing counted yet: what summing starts from.
    pub const NONE: Count = Count { n: 0, exact: true, examined: 0, total: 0 };

    /// This count and another set's (another partition's), summed.
    #[must_use]
    pub fn and(self, other: Count) -> Count {
        Count {
            n: self.n + other.n,
            exact: self.exact && other.exact,
            examined: self.examined + other.examined,
            total: self.total + other.total,
        }
    }
}

/// Examine at most `budget` jobs of the selection's set, newest first, from
/// rank `from` (0: the newest), keeping at most `limit` matches; a page of
/// jobs per round trip. Ranks shift as the set changes: a step resumed from
/// `next` may see a job twice or miss one that moved, as a page of a list does.
///
/// # Errors
/// [`Refused`] or an invalid queue name, before anything is sent; a set
/// holding a member that is not a job id; a failure of the connection or the server.
pub async fn walk(
    conn: &mut Conn,
    selection: &Selection,
    from: u64,
    budget: u64,
    limit: usize,
) -> Result<Step, Error> {
    let keys = selection.checked()?;
    nonzero(budget, "budget")?;
    nonzero(limit as u64, "limit")?;
    let set = keys.state(selection.state);
    let total: u64 = redis::cmd("ZCARD").arg(&set).query_async(conn).await?;
    let (mut ids, mut examined, mut rank) = (Vec::new(), 0u64, from);
    while examined < budget && ids.len() < limit {
        let want = (budget - examined).min(PAGE as u64);
        let page: Vec<String> = redis::cmd("ZRANGE")
            .arg(&set)
            .arg(rank)
            .arg(rank + want - 1)
            .arg("REV")
            .query_async(conn)
            .await?;
        let fetched = page.len() as u64;
        let page = job_ids(&set, page)?;
        let texts = texts(conn, &keys, selection, &page).await?;
        let mut consumed = 0;
        for (id, (payload, error)) in page.into_iter().zip(texts) {
            (examined, rank, consumed) = (examined + 1, rank + 1, consumed + 1);
            if selection.keeps(payload.as_deref(), error.as_deref()) {
                ids.push(id);
                if ids.len() >= limit {
                    break;
                }
            }
        }
        if fetched < want && consumed == fetched {
            return Ok(Step { ids, examined, next: None, total });
        }
    }
    let next = (rank < total).then_some(rank);
    Ok(Step { ids, examined, next, total })
}

/// How many jobs the selection holds: exactly with no text (the set's
/// size), else from a walk of at most `budget` jobs, exact when it reached the end.
///
/// # Errors
/// As [`walk`].
pub async fn count(conn: &mut Conn, selection: &Selection, budget: u64) -> Result<Count, Error> {
    let keys = selection.checked()?;
    if selection.matching.is_none() {
        let total: u64 = redis::cmd("ZCARD").arg(keys.state(selection.state)).query_async(conn).await?;
        return Ok(Count { n: total, exact: true, examined: total, total });
    }
    let step = walk(conn, selection, 0, budget, usize::MAX).await?;
    Ok(Count {
        n: step.ids.len() as u64,
        exact: step.next.is_none(),
        examined: step.examined,
        total: step.total,
    })
}

/// Ids of queue `queue` that start with `prefix` (taken literally: `*` is
/// a star), in any of its six sets: a bounded search. A whole id is first
/// looked up by its record; then each set that is not empty is scanned
/// (ZSCAN MATCH), about `budget` members in all (ZSCAN's COUNT, a hint:
/// a small set is read whole in one call), until `limit` are found. The
/// flag says whether every set was scanned to its end.
///
/// # Errors
/// [`Refused`] or an invalid queue name, before anything is sent; a failure
/// of the connection or the server.
pub async fn by_prefix(
    conn: &mut Conn,
    queue: &str,
    prefix: &str,
    budget: u64,
    limit: usize,
) -> Result<(Vec<(JobId, State)>, bool), Error> {
    let keys = Keyspace::new(queue)?;
    check_prefix(prefix)?;
    nonzero(budget, "budget")?;
    nonzero(limit as u64, "limit")?;
    let mut found: Vec<(JobId, State)> = Vec::new();
    if let Ok(id) = prefix.parse::<JobId>() {
        let state: Option<String> =
            redis::cmd("HGET").arg(keys.job(&id)).arg("state").query_async(conn).await?;
        if let Some(state) = state.and_then(|state| state.parse().ok()) {
            found.push((id, state));
        }
    }
    let pattern = format!("{}*", glob_escape(prefix));
    // Each set's size, so that an empty one costs nothing and a call is
    // charged at most the set's size.
    let mut sizes = redis::pipe();
    for state in State::ALL {
        sizes.cmd("ZCARD").arg(keys.state(state));
    }
    let sizes: Vec<u64> = sizes.query_async(conn).await?;
    let mut spent = 0u64;
    for (state, size) in State::ALL.into_iter().zip(sizes).filter(|(_, size)| *size > 0) {
        let mut cursor = 0u64;
        loop {
            if spent >= budget || found.len() >= limit {
                return Ok((found, false));
            }
            let hint = (budget - spent).min(PAGE as u64);
            spent += hint.min(size);
            let (next, members): (u64, Vec<String>) = redis::cmd("ZSCAN")
                .arg(keys.state(state))
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(hint)
                .query_async(conn)
                .await?;
            // WITHSCORES is ZSCAN's only form: members and scores alternate.
            for member in members.into_iter().step_by(2) {
                let Ok(id) = member.parse::<JobId>() else { continue };
                if found.len() < limit && !found.iter().any(|(seen, _)| *seen == id) {
                    found.push((id, state));
                }
            }
            if next == 0 {
                break;
            }
            cursor = next;
        }
    }
    Ok((found, true))
}

/// Apply `action` to these ids of queue `queue`, jobs of `state` (a
/// selection the operator ticked): RETRY or CANCEL each, a page of calls
/// per round trip, or REMOVE a page of them a call.
///
/// # Errors
/// An invalid queue name, before anything is sent; a failure of the
/// connection or the server (the pages before it were applied). A job's
/// own refusal is in [`Applied::failed`].
pub async fn apply_ids(
    executor: &Arc<dyn Executor>,
    queue: &str,
    state: State,
    ids: &[JobId],
    action: Action,
) -> Result<Applied, Error> {
    let keys = Keyspace::new(queue)?;
    let mut applied = Applied { examined: ids.len() as u64, ..Applied::default() };
    for page in ids.chunks(PAGE) {
        match action {
            Action::Retry => {
                let page = crate::change::retriable(executor, &keys, page, &mut applied).await?;
                let calls: Vec<Retry> = page.iter().map(|id| Retry { id: id.clone() }).collect();
                for (id, reply) in page.iter().zip(execute_batch(&**executor, &keys, &calls).await?) {
                    applied.note(id, reply.map(|()| true));
                }
            }
            Action::Cancel => {
                let calls: Vec<Cancel> = page.iter().map(|id| Cancel { id: id.clone() }).collect();
                for (id, reply) in page.iter().zip(execute_batch(&**executor, &keys, &calls).await?) {
                    applied.note(id, reply);
                }
            }
            Action::Delete => {
                // One REMOVE a page: those no longer in the set were skipped.
                let call = [Remove { state, ids: page.to_vec() }];
                let removed = match execute_batch(&**executor, &keys, &call).await?.pop() {
                    Some(Ok(n)) => n,
                    Some(Err(err)) => return Err(err.into()),
                    None => 0,
                };
                applied.changed += removed;
                applied.skipped += page.len() as u64 - removed;
            }
        }
    }
    Ok(applied)
}

/// Apply `action` to every job the selection matches now, oldest first, a
/// page at a time: read a page, keep its matches, apply them, go on after
/// the page's last job still in the set. Jobs that enter the set after the
/// newest one there when it began are left; none is examined twice.
/// Confirm first with [`count`].
///
/// # Errors
/// As [`walk`], and [`Refused::State`] for an action that does not take the
/// selection's state; a failure of the connection or the server stops it
/// (the pages before it were applied).
pub async fn apply_all(
    executor: &Arc<dyn Executor>,
    conn: &mut Conn,
    selection: &Selection,
    action: Action,
) -> Result<Applied, Error> {
    let keys = selection.checked()?;
    action.check(selection.state)?;
    let mut applied = Applied::default();
    match apply_pages(executor, conn, selection, action, &keys, &mut applied).await {
        Ok(()) => Ok(applied),
        Err(err) if applied.changed + applied.skipped + applied.examined > 0 => {
            // Cut short: say how far it got, and that the rest is as it was.
            let message = format!(
                "{}; stopped there, after {} {} ({} looked at): the same command again takes what \
                 is left (of a page on its way when it stopped, some may have gone in)",
                crate::failure::explain(err.as_ref()),
                applied.changed,
                action.done(),
                applied.examined,
            );
            Err(Box::new(crate::failure::Exit::new(crate::failure::Failure::of(err.as_ref()), message)))
        }
        Err(err) => Err(err),
    }
}

/// [`apply_all`]'s pages, what they did added to `applied` as they go.
async fn apply_pages(
    executor: &Arc<dyn Executor>,
    conn: &mut Conn,
    selection: &Selection,
    action: Action,
    keys: &Keyspace,
    applied: &mut Applied,
) -> Result<(), Error> {
    let set = keys.state(selection.state);
    let Some(end) = range(conn, &set, -1, 1).await?.pop() else { return Ok(()) };
    let mut anchor: Option<Position> = None;
    loop {
        let (page, last) = after(conn, &set, anchor.as_ref()).await?;
        let reached = last || page.iter().any(|p| !p.before(&end));
        let page: Vec<Position> = page.into_iter().filter(|p| !end.before(p)).collect();
        if page.is_empty() {
            break;
        }
        let ids = job_ids(&set, page.iter().map(|p| p.id.clone()).collect())?;
        let texts = texts(conn, keys, selection, &ids).await?;
        let chosen: Vec<JobId> = ids
            .iter()
            .zip(texts)
            .filter(|(_, (payload, error))| selection.keeps(payload.as_deref(), error.as_deref()))
            .map(|(id, _)| id.clone())
            .collect();
        applied.add(apply_ids(executor, &selection.queue, selection.state, &chosen, action).await?);
        applied.examined += (ids.len() - chosen.len()) as u64;
        // The next page starts after the last of this one still in the set.
        let mut zmscore = redis::cmd("ZMSCORE");
        zmscore.arg(&set);
        for p in &page {
            zmscore.arg(&p.id);
        }
        let scores: Vec<Option<f64>> = zmscore.query_async(conn).await?;
        if let Some((p, score)) = page.iter().zip(scores).rev().find_map(|(p, s)| s.map(|s| (p, s))) {
            anchor = Some(Position { score, id: p.id.clone() });
        }
        if reached {
            break;
        }
    }
    Ok(())
}

/// A page of a set's members as job ids; a member that is not one is
/// damage, said with the set it is in.
fn job_ids(set: &str, members: Vec<String>) -> Result<Vec<JobId>, Error> {
    members
        .into_iter()
        .map(|member| {
            member.parse().map_err(|_| format!("{set} holds {member:?}, which is not a job id").into())
        })
        .collect()
}

/// Each job's payload and last error, in one round trip; none read when
/// the selection has no text.
async fn texts(
    conn: &mut Conn,
    keys: &Keyspace,
    selection: &Selection,
    ids: &[JobId],
) -> Result<Vec<(Option<Vec<u8>>, Option<Vec<u8>>)>, Error> {
    if selection.matching.is_none() || ids.is_empty() {
        return Ok(vec![(None, None); ids.len()]);
    }
    let mut pipe = redis::pipe();
    for id in ids {
        pipe.cmd("HGET").arg(keys.job(id)).arg("payload");
    }
    let mut hmget = redis::cmd("HMGET");
    hmget.arg(keys.errors());
    for id in ids {
        hmget.arg(id.as_str());
    }
    pipe.add_command(hmget);
    let mut replies: Vec<redis::Value> = pipe.query_async(conn).await?;
    let errors: Vec<Option<Vec<u8>>> = redis::from_redis_value(replies.pop().unwrap_or(redis::Value::Nil))?;
    let payloads: Vec<Option<Vec<u8>>> =
        replies.into_iter().map(redis::from_redis_value).collect::<Result<_, _>>()?;
    Ok(payloads.into_iter().zip(errors).collect())
}

/// Whether `haystack` holds `needle`, byte for byte.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|window| window == needle)
}

/// `text` as a glob pattern (ZSCAN MATCH) that matches only itself.
fn glob_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\' | '^' | '-') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `Ok` for a prefix some job id may start with: not empty, and agreeing
/// with the kind (`JOB`) as far as either goes.
fn check_prefix(prefix: &str) -> Result<(), Refused> {
    let kind = echomq::id::KIND;
    if !prefix.is_empty() && (prefix.starts_with(kind) || kind.starts_with(prefix)) {
        Ok(())
    } else {
        Err(Refused::Prefix(prefix.to_owned()))
    }
}

fn nonzero(n: u64, what: &'static str) -> Result<(), Refused> {
    if n == 0 {
        Err(Refused::Zero(what))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests;
