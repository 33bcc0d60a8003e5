//! A grouped job's group, as a transition that moves one job (or a few)
//! reads it before any write (PROTOCOL.md §7.9): the job-side half of
//! [`grouping`](super::grouping), which holds the queue's groups' keys,
//! settings and placing.

use super::grouping::{Grouping, Settings};
use crate::store::Store;
use crate::Refusal;

/// A job's group, as a transition that moves that one job reads it before
/// any write (its group's keys' types and settings checked): `None` for an
/// ungrouped job, or a queue without groups.
pub(crate) struct Grouped<'p> {
    pub(crate) of: Option<(Grouping<'p>, Vec<u8>)>,
    /// The group's settings, as read.
    settings: Settings,
}

impl<'p> Grouped<'p> {
    /// Read the group of the job `id` of the queue at `prefix`.
    pub(crate) fn read<S: Store>(store: &mut S, prefix: &'p [u8], id: &[u8]) -> Result<Grouped<'p>, Refusal> {
        let none = Grouped { of: None, settings: Settings::default() };
        let Some(grouping) = Grouping::open_checked(store, prefix)? else { return Ok(none) };
        let Some(group) = grouping.group_of(store, id) else { return Ok(none) };
        let settings = grouping.settings(store, &group)?;
        Ok(Grouped { of: Some((grouping, group)), settings })
    }

    /// The group of the job `id`, its keys and settings not checked: for
    /// ACKNEXT's ack, whose claim reads the group and checks what it
    /// touches before any write.
    pub(crate) fn named<S: Store>(
        store: &mut S,
        prefix: &'p [u8],
        id: &[u8],
    ) -> Result<Grouped<'p>, Refusal> {
        let Some(grouping) = Grouping::open(store, prefix)? else {
            return Ok(Grouped { of: None, settings: Settings::default() });
        };
        let of = grouping.group_of(store, id).map(|group| (grouping, group));
        Ok(Grouped { of, settings: Settings::default() })
    }

    /// The queue's groups and the job's group's name, when it has one.
    pub(crate) fn name(&self) -> Option<(&Grouping<'p>, &[u8])> {
        self.of.as_ref().map(|(grouping, group)| (grouping, group.as_slice()))
    }

    /// The job leaves its lease. With `claims`, a claim in the same call
    /// follows and puts the group where it stands (ACKNEXT's): only out of
    /// its leases here.
    pub(crate) fn off_active<S: Store>(&self, store: &mut S, id: &[u8], claims: bool) {
        let Some((grouping, group)) = &self.of else { return };
        store.zrem(&grouping.keys.active(group), id);
        if !claims {
            grouping.place(store, group, self.settings);
        }
    }

    /// The job leaves pending other than by a claim.
    pub(crate) fn off_pending<S: Store>(&self, store: &mut S, id: &[u8]) {
        if let Some((grouping, group)) = &self.of {
            store.zrem(&grouping.keys.pending(group), id);
            grouping.place(store, group, self.settings);
        }
    }

    /// The job enters pending at `priority` (after its record's write).
    pub(crate) fn enter_pending<S: Store>(&self, store: &mut S, pending: &[u8], id: &[u8], priority: f64) {
        match &self.of {
            None => store.zadd(pending, priority, id),
            Some((grouping, group)) => {
                grouping.join(store, pending, id, group, priority);
                grouping.place(store, group, self.settings);
            }
        }
    }
}

/// A queue's groups and the group of each of many jobs (`None`: none).
pub(crate) type JobsGroups<'p> = (Grouping<'p>, Vec<Option<Vec<u8>>>);

/// The groups of many jobs, read before any write, each group's settings
/// checked once: `None` for a queue without groups.
pub(crate) fn groups_of<'p, S: Store>(
    store: &mut S,
    prefix: &'p [u8],
    ids: &[Vec<u8>],
) -> Result<Option<JobsGroups<'p>>, Refusal> {
    let Some(grouping) = Grouping::open_checked(store, prefix)? else { return Ok(None) };
    let groups = grouping.groups_of(store, ids);
    let mut checked: Vec<&[u8]> = Vec::new();
    for group in groups.iter().flatten() {
        if !checked.contains(&group.as_slice()) {
            grouping.settings(store, group)?;
            checked.push(group);
        }
    }
    Ok(Some((grouping, groups)))
}

/// The `at`-th job's group of a [`groups_of`] read, with the queue's groups.
pub(crate) fn group_at<'g, 'p>(
    grouped: &'g Option<JobsGroups<'p>>,
    at: usize,
) -> Option<(&'g Grouping<'p>, &'g [u8])> {
    let (grouping, groups) = grouped.as_ref()?;
    Some((grouping, groups.get(at)?.as_deref()?))
}
