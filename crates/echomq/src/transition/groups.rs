//! GROUPS (protocol 1.7): a page of a queue's groups, by name, each with
//! its depth, running count, standing and settings (PROTOCOL.md §7.9).

use echomq_core::{limits, Name, Reply};

use super::argument::{checked, decimal};
use super::group::{group_info, text, GroupInfo};
use super::reply::array_reply;
use super::Transition;
use crate::Result;

/// A page of a queue's groups, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
#[must_use]
pub struct Groups {
    /// The page starts after this group (the previous page's `next`).
    pub after: Option<String>,
    /// At most this many groups (1..=1000; 100 when not given).
    pub limit: Option<u64>,
}

impl Groups {
    /// The first page, of up to 100 groups.
    pub fn new() -> Groups {
        Groups::default()
    }

    /// The page after `group`.
    pub fn after(mut self, group: impl Into<String>) -> Groups {
        self.after = Some(group.into());
        self
    }

    /// At most `limit` groups.
    pub const fn limit(mut self, limit: u64) -> Groups {
        self.limit = Some(limit);
        self
    }
}

/// A page of groups, and where the next starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupsPage {
    /// The groups, by name.
    pub groups: Vec<GroupInfo>,
    /// The `after` of the next page; `None` after the last.
    pub next: Option<String>,
}

impl Transition for Groups {
    const NAME: Name = Name::Groups;
    type Output = GroupsPage;

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        let mut args = Vec::new();
        if let Some(after) = &self.after {
            args.extend([b"AFTER".to_vec(), after.as_bytes().to_vec()]);
        }
        if let Some(limit) = self.limit {
            args.extend([b"LIMIT".to_vec(), decimal(checked("LIMIT", limit, limits::SWEEP_LIMIT)?)]);
        }
        Ok(args)
    }

    fn parse(reply: Reply) -> Result<GroupsPage> {
        let mut items = array_reply("the reply", reply)?.into_iter();
        let next = match items.next() {
            None | Some(Reply::Nil) => None,
            Some(next) => Some(text("the next page", next)?),
        };
        let groups = items.map(group_info).collect::<Result<Vec<GroupInfo>>>()?;
        Ok(GroupsPage { groups, next })
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        vec![Groups::new(), Groups::new().after("x".repeat(limits::MAX_GROUP)).limit(*limits::SWEEP_LIMIT.end())]
    }
}

