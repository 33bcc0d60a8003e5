//! What the transitions that delete jobs share, PURGE, TRIM and DRAIN
//! (`includes/delete.lua`): the side hashes, the deletion, the set KEYS[1] names.

use super::grouped::{group_at, groups_of};
use super::notice::Notify;
use super::{need, present_here};
use crate::description::{Keys, Role};
use crate::limits::SWEEP_LIMIT;
use crate::parse::{children_key, options, queue_prefix, record_key, wrong_number_of_keys};
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal, Reply};

pub(super) fn limit(args: &[&[u8]]) -> Result<usize, Refusal> {
    let [limit] = options(args, [("LIMIT", SWEEP_LIMIT)])?;
    Ok(limit.unwrap_or(*SWEEP_LIMIT.end()) as usize)
}

/// The side hashes a deleted job has entries in: priority, errors,
/// progress, policy, results, headers (PROTOCOL.md §2).
pub(super) type Sides<'k> = [&'k [u8]; 6];

/// The finished sets PURGE and TRIM delete from, by the last word of KEYS[1].
pub(super) const FINISHED: [(&[u8], Role); 3] =
    [(b"done", Role::Done), (b"dead", Role::Dead), (b"cancelled", Role::Cancelled)];

/// The keys of a transition that deletes jobs of the set KEYS[1] names,
/// one of `sets` (its refusal says it `must` be one of them), the others
/// as `K` describes them: the keys, the set's role and the queue's prefix.
pub(super) fn set_keys<'k, K: Keys<'k>>(
    keys: &[&'k [u8]],
    sets: &[(&[u8], Role)],
    must: &str,
) -> Result<(K, Role, &'k [u8]), Refusal> {
    let set = named_set(keys, sets, must)?;
    let named = K::bind(keys).ok_or_else(|| wrong_number_of_keys(K::FORMS))?;
    // The set it names stands for the description's first role.
    let roles: Vec<Role> =
        std::iter::once(set).chain(K::ROLES.iter().skip(1).take(keys.len() - 1).copied()).collect();
    let prefix = queue_prefix(keys, &roles, b"")?;
    Ok((named, set, prefix))
}

/// The types a deleting call checks first: `set` a sorted set, each side a
/// hash (or nothing), as `includes/delete.lua`'s `deleting_types_error`.
pub(super) fn deleting_types<S: Store>(store: &mut S, set: &[u8], sides: Sides<'_>) -> Result<(), Refusal> {
    need(store, set, KeyType::Zset)?;
    sides.iter().try_for_each(|side| need(store, side, KeyType::Hash))
}

/// Where a deleting call finds the jobs it deletes, and whom it tells:
/// the set (by its role) and the flows' keys (protocol 1.6, §7.8).
pub(super) struct Deleting<'k> {
    pub(super) set: &'k [u8],
    pub(super) role: Role,
    pub(super) sides: Sides<'k>,
    pub(super) notify: Notify<'k>,
}

/// Delete the jobs `ids` of the set: their set entries, their entries in
/// the side hashes, their records and (a parent's) dependencies; a job a
/// parent waits on tells it (`gone` from an unfinished set, its state from
/// a finished one); reply how many. Every record and link is checked first
/// (a hash, on this node; a link), so a refusal writes nothing. PURGE's,
/// TRIM's, DRAIN's and REMOVE's common end.
pub(super) fn delete_jobs<S: Store>(
    store: &mut S,
    prefix: &[u8],
    deleting: &Deleting<'_>,
    ids: &[Vec<u8>],
) -> Answer {
    let Deleting { set, role, sides, notify } = *deleting;
    if ids.is_empty() {
        return Ok(Reply::count(0));
    }
    for id in ids {
        let record = record_key(prefix, id);
        need(store, &record, KeyType::Hash)?;
        present_here(store, &record)?;
    }
    let mut links = Vec::new();
    for id in ids {
        if let Some(link) = notify.link(store, id)? {
            links.push((id, link));
        }
    }
    let grouped = groups_of(store, prefix, ids)?;
    // In the scripts' order (all removals, then the groups', then each side
    // hash, then the records), so the module replicates and announces the
    // same commands as Lua.
    for id in ids {
        store.zrem(set, id);
    }
    for (at, id) in ids.iter().enumerate() {
        if let Some((grouping, group)) = group_at(&grouped, at) {
            match role {
                Role::Pending => grouping.off_pending(store, id, group),
                Role::Active => grouping.off_active(store, id, group),
                _ => {}
            }
            grouping.forget(store, id);
        }
    }
    for side in sides {
        for id in ids {
            store.hdel(side, id);
        }
    }
    for id in ids {
        store.del(&record_key(prefix, id));
    }
    for id in ids {
        store.del(&children_key(prefix, id));
    }
    let outcome = match role {
        Role::Done => "done",
        Role::Dead => "dead",
        Role::Cancelled => "cancelled",
        _ => "gone",
    };
    for (id, link) in links {
        notify.tell(store, id, &link, outcome, None);
    }
    Ok(Reply::count(ids.len() as u64))
}

/// The set KEYS[1] names, by the last word of its name, as `roles` allow:
/// its role, or the refusal that says which it must be.
fn named_set(keys: &[&[u8]], roles: &[(&[u8], Role)], must: &str) -> Result<Role, Refusal> {
    let tail = keys
        .first()
        .and_then(|key| key.rsplit(|b| *b == b':').next().filter(|_| key.contains(&b':')))
        .filter(|tail| !tail.is_empty() && tail.iter().all(u8::is_ascii_alphabetic));
    match roles.iter().find(|(name, _)| Some(*name) == tail) {
        Some((_, role)) => Ok(*role),
        None => Err(Refusal::arg(format!("KEYS[1] must be emq:{{<queue>}}:{must}"))),
    }
}
