//! GROUPS: a page of a queue's groups, each with its depth, running count,
//! standing and settings (PROTOCOL.md §7.9; `groups.lua`). Writes nothing.

use super::grouping::{row, Grouping};
use super::need;
use crate::description::{keys, Description, Effect};
use crate::limits::SWEEP_LIMIT;
use crate::parse::{lossy, named_keys};
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal, Reply};

keys! {
    /// GROUPS' KEYS.
    GroupsKeys { names: GroupNames, groups: Groups }
}

/// A parsed GROUPS.
#[derive(Debug)]
pub struct Groups<'a> {
    keys: GroupsKeys<'a>,
    prefix: &'a [u8],
    after: Option<&'a [u8]>,
    limit: usize,
}

impl<'a> Groups<'a> {
    /// What GROUPS is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "groups",
        command: "EMQ.GROUPS",
        keys: GroupsKeys::ROLES,
        forms: GroupsKeys::FORMS,
        args: &[],
        options: &["AFTER", "LIMIT"],
        effect: Effect::Reads,
        wakes_claims: false,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: false,
    };

    /// KEYS: gnames, groups. ARGV: `AFTER <group>` (the page starts after
    /// it), `LIMIT <1..=1000>` (100 when not given).
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQARG`: the keys are not this queue's, in their number and roles; an option is unknown, given
    ///   twice, without its value or out of range.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Groups<'a>, Refusal> {
        let (keys, prefix) = named_keys::<GroupsKeys>(keys, b"")?;
        let (mut after, mut limit) = (None, None);
        let mut rest = args;
        while let Some((&name, tail)) = rest.split_first() {
            let upper = name.to_ascii_uppercase();
            let value = tail.first().copied();
            match upper.as_slice() {
                b"AFTER" if after.is_none() => {
                    after = Some(value.ok_or_else(|| Refusal::arg("AFTER needs a group"))?);
                }
                b"LIMIT" if limit.is_none() => {
                    limit = Some(crate::parse::count(value, "LIMIT", SWEEP_LIMIT)? as usize);
                }
                b"AFTER" | b"LIMIT" => return Err(Refusal::arg(format!("{} given twice", lossy(&upper)))),
                _ => return Err(Refusal::arg(format!("unknown option {}", lossy(name)))),
            }
            rest = tail.get(1..).unwrap_or_default();
        }
        Ok(Groups { keys, prefix, after, limit: limit.unwrap_or(100) })
    }

    /// `[next, row…]`: up to LIMIT groups by name after AFTER, each `[group,
    /// pending, running, standing, settings]` (standing `ready`, `idle`,
    /// `paused`, `capped` or `limited`), and `next`, the AFTER of the next
    /// page, or nil after the last.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal):
    /// - `EMQTYPE`: a key, or one of a listed group's own, holds another type.
    /// - `EMQDATA`: a listed group's settings do not read as some.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        need(store, self.keys.names, KeyType::Zset)?;
        need(store, self.keys.groups, KeyType::Hash)?;
        let grouping = Grouping::of(self.prefix);
        let mut names = store.zafter(self.keys.names, self.after, self.limit + 1);
        let more = names.len() > self.limit;
        names.truncate(self.limit);
        let next = match names.last() {
            Some(last) if more => Reply::Bulk(last.clone()),
            _ => Reply::Nil,
        };
        let mut reply = vec![next];
        for group in &names {
            reply.push(row(store, &grouping, group)?);
        }
        Ok(Reply::Array(reply))
    }
}
