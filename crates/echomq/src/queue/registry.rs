//! The queue registry (PROTOCOL.md §2, `emq:queues`): a sorted set of queue
//! name → when it was last seen (ms), so that an operator lists queues
//! without scanning the keyspace. A queue is noted when it first holds a
//! job and while a worker works it; a deleted queue leaves it. Advisory:
//! plain commands beside the transitions, outside every queue's hashtag.

use crate::executor::{Command, Executor};
use crate::keyspace::REGISTRY;
use crate::Result;

/// Note the queue `name` as seen now: `ZADD emq:queues GT <now ms> name`
/// (a clock that went back leaves the later time).
///
/// # Errors
/// A failure of the connection or the server (`WRONGTYPE`, `NOPERM`).
pub async fn note(via: &dyn Executor, name: &str) -> Result<()> {
    let seen = Command::ZAdd {
        key: REGISTRY.into(),
        score: None,
        member: name.into(),
        raise_only: true,
        existing_only: false,
    };
    via.plain().one(seen).await?;
    Ok(())
}

/// Up to `limit` queue names, the most recently seen, in name order.
///
/// # Errors
/// As [`note`].
pub async fn list(via: &dyn Executor, limit: usize) -> Result<Vec<String>> {
    if limit == 0 {
        return Ok(Vec::new());
    }
    let latest = Command::ZRange { key: REGISTRY.into(), count: limit, latest: true };
    let mut names: Vec<String> =
        via.plain().one(latest).await?.scored()?.into_iter().map(|(name, _)| name).collect();
    names.sort_unstable();
    Ok(names)
}

/// Take the queue `name` out of the registry (a deleted queue).
///
/// # Errors
/// As [`note`].
pub(crate) async fn forget(via: &dyn Executor, name: &str) -> Result<()> {
    via.plain().one(Command::ZRem(REGISTRY.into(), vec![name.into()])).await?;
    Ok(())
}
