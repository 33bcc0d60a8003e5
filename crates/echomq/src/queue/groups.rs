//! A queue's fair groups (protocol 1.7, PROTOCOL.md §7.9), through
//! [`QueueGroups::of`] the queue: one group read or changed (GROUP), a page
//! of them or all of them (GROUPS). A job joins its group when it is
//! enqueued ([`EnqueueOptions::group`](super::EnqueueOptions::group)).

use super::Queue;
use crate::transition::{Group, GroupInfo, Groups, GroupsPage};
use crate::Result;

/// A queue's groups, the operator's side of fairness: claims take turns
/// between the groups that have work, by weight, and each group may have a
/// cap on its running jobs, a rate, a most pending and a pause of its own.
/// Ungrouped jobs are one more group, the default group. The calls of `emq
/// groups`, `emq limit --group` and the dashboard's groups.
///
/// ```no_run
/// # async fn demo(q: &echomq::Queue) -> echomq::Result<()> {
/// use echomq::{Group, Limit, QueueGroups};
/// let groups = QueueGroups::of(q);
/// let tenant = groups.set(Group::new("tenant-7").weight(3).cap(Limit::To(2))).await?;
/// println!("{}: {} pending, {} running", tenant.group, tenant.pending, tenant.running);
/// for group in groups.all().await? {
///     println!("{} {}", group.group, group.standing.as_str());
/// }
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct QueueGroups<'q> {
    queue: &'q Queue,
}

impl<'q> QueueGroups<'q> {
    /// The groups of `queue`.
    #[must_use]
    pub fn of(queue: &'q Queue) -> QueueGroups<'q> {
        QueueGroups { queue }
    }

    /// One group as the queue holds it: its depth, its running jobs, where
    /// it stands and its settings (a group never seen reads as idle, with
    /// the defaults). Changes nothing.
    ///
    /// # Errors
    /// [`ErrorKind::Argument`](crate::ErrorKind::Argument) for a name that
    /// is not 1 to 200 bytes, before anything is sent; a key of the wrong
    /// type, malformed stored settings, a failure of the connection or the
    /// server.
    pub async fn get(&self, group: &str) -> Result<GroupInfo> {
        self.queue.run(&Group::new(group)).await
    }

    /// Change the settings `change` names (weight, cap, rate, most
    /// pending, pause), in one transition, for every worker at once: the
    /// group after. A group paused, capped or limited leaves the claims'
    /// turn at once; one resumed or given room gets its turn back.
    ///
    /// # Errors
    /// [`ErrorKind::Argument`](crate::ErrorKind::Argument), nothing sent,
    /// for a name or a setting outside its limits (a weight of 0 or over
    /// 1000, a cap, rate or most of 0: [`Limit::Unlimited`](crate::Limit)
    /// removes one); as [`get`](QueueGroups::get) otherwise.
    pub async fn set(&self, change: Group) -> Result<GroupInfo> {
        self.queue.run(&change).await
    }

    /// Pause `group`'s claims: its jobs wait, the other groups' run.
    ///
    /// # Errors
    /// As [`set`](QueueGroups::set).
    pub async fn pause(&self, group: &str) -> Result<GroupInfo> {
        self.set(Group::new(group).paused(true)).await
    }

    /// Resume `group`'s claims; claims waiting for work wake at once.
    ///
    /// # Errors
    /// As [`set`](QueueGroups::set).
    pub async fn resume(&self, group: &str) -> Result<GroupInfo> {
        self.set(Group::new(group).paused(false)).await
    }

    /// A page of the groups, by name (byte order): those with a job
    /// pending or running, or with settings of their own. The next page
    /// starts after the page's [`next`](GroupsPage::next).
    ///
    /// # Errors
    /// [`ErrorKind::Argument`](crate::ErrorKind::Argument) for a limit
    /// outside 1..=1000, before anything is sent; as
    /// [`get`](QueueGroups::get) otherwise.
    pub async fn page(&self, page: Groups) -> Result<GroupsPage> {
        self.queue.run(&page).await
    }

    /// Every group, by name, a page of a thousand at a time: one call
    /// for each thousand groups (each call is bounded; a queue of many
    /// groups takes many calls). A group added meanwhile after the page
    /// being read is listed; one before it is not.
    ///
    /// # Errors
    /// As [`page`](QueueGroups::page) (the groups read before the failure
    /// are lost with it).
    pub async fn all(&self) -> Result<Vec<GroupInfo>> {
        let mut groups = Vec::new();
        let mut page = Groups::new().limit(ALL_PAGE);
        loop {
            let GroupsPage { groups: read, next } = self.page(page).await?;
            groups.extend(read);
            match next {
                Some(after) => page = Groups::new().after(after).limit(ALL_PAGE),
                None => return Ok(groups),
            }
        }
    }
}

/// How many groups one call of [`QueueGroups::all`] reads: the protocol's
/// most.
const ALL_PAGE: u64 = 1000;
