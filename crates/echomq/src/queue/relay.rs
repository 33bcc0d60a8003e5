//! The flows' upkeep (PROTOCOL.md §11.3): the relay that carries a queue's
//! notices to their parents as RESOLVEs, the sweep of parents whose
//! children never came, and the walk that cancels a parent's open children.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{Flows, Queue};
use crate::executor::{execute_batch, Answer, Command};
use crate::id::JobId;
use crate::keyspace::Keyspace;
use crate::transition::{JobRef, Outcome, Resolve};
use crate::{Error, ErrorKind, Result, State};

/// The most notices one relay call reads, and so the most RESOLVEs it sends.
pub(crate) const RELAY_STEP: usize = 100;

/// Carry up to [`RELAY_STEP`] of `queue`'s notices after entry `after`
/// (`0-0`: from the first) to their parents: a RESOLVE each, in one round
/// trip per parent queue, then the notices that were answered deleted. How
/// many notices it read, and the last one's id: the upkeep reads on from
/// there while a read was full, so notices that stay never hide the ones
/// behind them. A notice whose RESOLVE failed stays for the next period
/// (said in the log); one that does not read as a notice stays too, said
/// each time: it is an operator's to mend.
///
/// # Errors
/// A failure of the connection or the server reading or deleting notices.
pub(crate) async fn relay(queue: &Queue, after: &str) -> Result<(u64, String)> {
    let notices = queue.keyspace().notices();
    let via = queue.executor();
    let entries = via.plain().read_stream(&notices, after, RELAY_STEP, std::time::Duration::ZERO).await?;
    let read = entries.len() as u64;
    let last = entries.last().map_or_else(|| after.to_owned(), |entry| entry.id.clone());
    let mut by_queue: BTreeMap<String, Vec<(String, Resolve)>> = BTreeMap::new();
    for entry in entries {
        match notice(&entry.fields) {
            Some((parent_queue, resolve)) => {
                by_queue.entry(parent_queue).or_default().push((entry.id, resolve))
            }
            None => tracing::warn!(
                queue = queue.name(),
                entry = %entry.id,
                "a notice that does not read as one stays in {notices}: delete it by hand once its parent is mended"
            ),
        }
    }
    let mut applied = Vec::new();
    for (parent_queue, notices) in by_queue {
        let keys = Keyspace::new(&parent_queue)?;
        let calls: Vec<Resolve> = notices.iter().map(|(_, resolve)| resolve.clone()).collect();
        let outcomes = execute_batch(&**via, &keys, &calls).await?;
        for ((id, resolve), outcome) in notices.into_iter().zip(outcomes) {
            match outcome {
                Ok(_) => applied.push(id),
                Err(err) => tracing::warn!(
                    queue = queue.name(),
                    parent = %resolve.parent,
                    child = %resolve.child,
                    error = %err,
                    "a child's notice could not reach its parent; it stays, and is tried again"
                ),
            }
        }
    }
    if !applied.is_empty() {
        for answer in via.plain().send(&[Command::StreamDelete(notices, applied)]).await? {
            answer?;
        }
    }
    Ok((read, last))
}

/// Cancel the open children of parent `id` of `queue`, each in its own
/// queue, and a nested parent's open children in turn: none for a job that
/// is no parent. A child the parent heard died, but that runs again (it was
/// retried), is cancelled too; one that ended meanwhile (done, or gone), or
/// is still dead, is left as it is. Each job is visited once, however the
/// flows name one another.
pub(crate) async fn cancel_children(queue: &Queue, id: &JobId) -> Result<()> {
    let mut visited = std::collections::BTreeSet::from([JobRef::new(queue.name(), id.clone())?]);
    let mut parents = vec![(queue.clone(), id.clone())];
    while let Some((queue, id)) = parents.pop() {
        let Some(children) = Flows::of(&queue).children(&id).await? else { continue };
        let living =
            children.children.into_iter().filter(|child| matches!(child.outcome, None | Some(Outcome::Dead)));
        for child in living {
            if !visited.insert(child.child.clone()) {
                continue;
            }
            let in_queue = Queue::new(queue.executor().clone(), &child.child.queue)?;
            if child.outcome.is_some() && !runs_again(&in_queue, &child.child.id).await? {
                continue;
            }
            match in_queue.run(&crate::transition::Cancel { id: child.child.id.clone() }).await {
                Ok(_) => parents.push((in_queue, child.child.id)),
                Err(err) if matches!(err.kind, ErrorKind::NoJob | ErrorKind::State) => {}
                Err(err) => return Err(err),
            }
        }
    }
    Ok(())
}

/// Whether job `id`, which its parent heard died, runs again (retried:
/// pending, active, delayed or waiting in its queue).
async fn runs_again(queue: &Queue, id: &JobId) -> Result<bool> {
    let state = queue.inspect(id).await?.map(|job| job.record.state);
    Ok(state.is_some_and(|state| !matches!(state, State::Done | State::Dead | State::Cancelled)))
}

/// How long a parent waits before the sweep looks for children of its
/// that never came to be (a producer that died between its FLOW and its
/// children's ENQUEUEs), and how long before it looks again.
pub const SWEEP_GRACE: Duration = Duration::from_secs(60);

/// The most parents one sweep looks at.
const SWEEP_PARENTS: usize = 10;

/// Look at up to [`SWEEP_PARENTS`] of `queue`'s parents that have waited
/// longer than `grace` since they began to wait (or were last looked at):
/// each open child with no record in its queue is resolved `gone`, and
/// one that ended but whose parent never heard (its notice lost, or a
/// speaker before 1.6 ended it) as it ended; then the parent's score in
/// `<q>waiting` moves to now, so the next sweep looks at others. How many
/// children it resolved.
///
/// # Errors
/// A key of the wrong type, a failure of the connection or the server.
pub(crate) async fn sweep(queue: &Queue, grace: Duration) -> Result<u64> {
    let waiting = queue.keyspace().state(crate::State::Waiting);
    let via = queue.executor();
    let reads =
        [Command::Time, Command::ZRange { key: waiting.clone(), count: SWEEP_PARENTS, latest: false }];
    let mut answers = via.plain().send(&reads).await?.into_iter();
    let now = answers.next().expect("TIME's answer")?.int()? as u64;
    let Answer::Scored(head) = answers.next().expect("ZRANGE's answer")? else {
        return Err(Error::new(ErrorKind::Reply, "ZRANGE answered no members"));
    };
    let due = now.saturating_sub(grace.as_millis() as u64) as f64;
    let mut resolved = 0;
    for (member, _) in head.into_iter().filter(|(_, score)| *score <= due) {
        let parent: JobId = member.parse()?;
        resolved += sweep_one(queue, &parent).await?;
        let bump = Command::ZAdd {
            key: waiting.clone(),
            score: Some(now),
            member,
            raise_only: true,
            existing_only: true,
        };
        for answer in via.plain().send(&[bump]).await? {
            answer?;
        }
    }
    Ok(resolved)
}

/// The sweep of one parent: its open children that are gone, or ended
/// unheard, resolved. Their queues' notices are relayed first: a child
/// done, its notice on its way and its record already trimmed by
/// retention, is told as done (with its result), never taken for gone.
async fn sweep_one(queue: &Queue, parent: &JobId) -> Result<u64> {
    let Some(children) = Flows::of(queue).children(parent).await? else { return Ok(0) };
    let queues: std::collections::BTreeSet<&str> = children
        .children
        .iter()
        .filter(|child| child.outcome.is_none())
        .map(|child| child.child.queue.as_str())
        .collect();
    for name in queues {
        let in_queue = Queue::new(queue.executor().clone(), name)?;
        let mut after = "0-0".to_owned();
        loop {
            let (read, last) = relay(&in_queue, &after).await?;
            if read < RELAY_STEP as u64 {
                break;
            }
            after = last;
        }
    }
    let Some(children) = Flows::of(queue).children(parent).await? else { return Ok(0) };
    let mut resolved = 0;
    for child in children.children.into_iter().filter(|child| child.outcome.is_none()) {
        let in_queue = Queue::new(queue.executor().clone(), &child.child.queue)?;
        let (outcome, result) = match in_queue.inspect(&child.child.id).await? {
            None => (Outcome::Gone, None),
            Some(job) => match job.record.state {
                crate::State::Done => (Outcome::Done, job.result),
                crate::State::Dead => (Outcome::Dead, None),
                crate::State::Cancelled => (Outcome::Cancelled, None),
                _ => continue,
            },
        };
        let resolve = Resolve {
            parent: parent.clone(),
            incarnation: children.incarnation,
            child: child.child,
            outcome,
            result,
        };
        if queue.run(&resolve).await? {
            tracing::info!(queue = queue.name(), %parent, child = %resolve.child, outcome = outcome.as_str(),
                "the sweep told a parent of a child it had not heard of");
            resolved += 1;
        }
    }
    Ok(resolved)
}

/// A notice's RESOLVE, and the parent's queue: `None` when its fields do
/// not read as a notice (PROTOCOL.md §7.8).
fn notice(fields: &[(String, Vec<u8>)]) -> Option<(String, Resolve)> {
    let field =
        |name: &str| fields.iter().find(|(field, _)| field == name).map(|(_, value)| value.as_slice());
    let text = |name: &str| std::str::from_utf8(field(name)?).ok();
    let parent: JobRef = text("parent")?.parse().ok()?;
    let child: JobRef = text("child")?.parse().ok()?;
    let incarnation = text("incarnation")?.parse().ok()?;
    let outcome = Outcome::parse(field("outcome")?)?;
    let result = field("result").map(<[u8]>::to_vec);
    Some((parent.queue, Resolve { parent: parent.id, incarnation, child, outcome, result }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_reads_as_its_resolve_and_anything_else_as_none() {
        let fields = |pairs: &[(&str, &str)]| -> Vec<(String, Vec<u8>)> {
            pairs.iter().map(|(f, v)| ((*f).to_owned(), v.as_bytes().to_vec())).collect()
        };
        let whole = fields(&[
            ("parent", "{reports}JOB_P"),
            ("incarnation", "17"),
            ("child", "{render}JOB_C"),
            ("outcome", "done"),
            ("result", "42"),
        ]);
        let (queue, resolve) = notice(&whole).expect("a notice");
        assert_eq!(queue, "reports");
        assert_eq!(resolve.parent.as_str(), "JOB_P");
        assert_eq!(resolve.child.to_string(), "{render}JOB_C");
        assert_eq!((resolve.incarnation, resolve.outcome), (17, Outcome::Done));
        assert_eq!(resolve.result.as_deref(), Some(&b"42"[..]));
        for broken in [
            fields(&[("parent", "{reports}JOB_P"), ("incarnation", "17"), ("child", "{render}JOB_C")]),
            fields(&[
                ("parent", "reports:JOB_P"),
                ("incarnation", "17"),
                ("child", "{render}JOB_C"),
                ("outcome", "done"),
            ]),
            fields(&[
                ("parent", "{reports}JOB_P"),
                ("incarnation", "x"),
                ("child", "{render}JOB_C"),
                ("outcome", "done"),
            ]),
            fields(&[
                ("parent", "{reports}JOB_P"),
                ("incarnation", "1"),
                ("child", "{render}JOB_C"),
                ("outcome", "lost"),
            ]),
        ] {
            assert!(notice(&broken).is_none(), "{broken:?}");
        }
    }
}
