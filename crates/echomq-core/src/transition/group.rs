//! GROUP: read or set one group's settings, its weight, cap, rate, most
//! pending and pause (PROTOCOL.md §7.9; `group.lua`).

use super::grouping::{group_name, row, Grouping, Settings};
use super::{need, wake, wake_key};
use crate::description::{keys, Description, Effect};
use crate::limits::{CONCURRENCY, GROUP_WEIGHT, KEEP_COUNT, RATE, RATE_PERIOD_MS, SWITCH};
use crate::parse::{named_keys, options};
use crate::store::{KeyType, Store};
use crate::{Answer, Refusal};

keys! {
    /// GROUP's KEYS.
    GroupKeys { groups: Groups, names: GroupNames, ready: Ready, wait: GroupWait, wake: Wake }
}

/// A parsed GROUP.
#[derive(Debug)]
pub struct Group<'a> {
    keys: GroupKeys<'a>,
    prefix: &'a [u8],
    group: &'a [u8],
    /// WEIGHT, CAP, RATE, PER, MAX, PAUSED as given (0: none, for CAP, RATE, MAX).
    given: [Option<u64>; 6],
}

impl<'a> Group<'a> {
    /// What GROUP is, for every layer.
    pub const DESCRIPTION: Description = Description {
        name: "group",
        command: "EMQ.GROUP",
        keys: GroupKeys::ROLES,
        forms: GroupKeys::FORMS,
        args: &["group"],
        options: &["WEIGHT", "CAP", "RATE", "PER", "MAX", "PAUSED"],
        effect: Effect::Grows,
        wakes_claims: true,
        fenced: false,
        hands_out_tokens: false,
        waits_for_replication: false,
    };

    /// KEYS: groups, gnames, ready, gwait, wake. ARGV: the group, then
    /// `WEIGHT <1..=1000>`, `CAP <n>`, `RATE <n> PER <ms>`, `MAX <n>` (0
    /// removes a cap, a rate, a most), `PAUSED 0|1`.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before any storage is read:
    /// - `EMQARG`: the keys are not this queue's, in their number and roles; the group is missing or over
    ///   200 bytes; an option is unknown, given twice or out of range; `RATE` above 0 without `PER`, or
    ///   `PER` without `RATE`.
    pub fn parse(keys: &'a [&'a [u8]], args: &'a [&'a [u8]]) -> Result<Group<'a>, Refusal> {
        let (keys, prefix) = named_keys::<GroupKeys>(keys, b"")?;
        let group = group_name(args.first().copied())?;
        let given = options(
            args.get(1..).unwrap_or_default(),
            [
                ("WEIGHT", GROUP_WEIGHT),
                ("CAP", CONCURRENCY),
                ("RATE", RATE),
                ("PER", RATE_PERIOD_MS),
                ("MAX", KEEP_COUNT),
                ("PAUSED", SWITCH),
            ],
        )?;
        match (given[2], given[3]) {
            (Some(rate), None) if rate > 0 => return Err(Refusal::arg("RATE needs PER")),
            (None, Some(_)) => return Err(Refusal::arg("PER needs RATE")),
            _ => {}
        }
        Ok(Group { keys, prefix, group, given })
    }

    /// The group's row, `[group, pending, running, standing, settings]`,
    /// after the settings given were written: the ones given replace the
    /// stored ones, the others stay. A group given room, resumed or freed
    /// enters `<q>ready` (and wakes a waiting claim); one paused or capped
    /// leaves it.
    ///
    /// # Errors
    ///
    /// A [`Refusal`](crate::Refusal), before the first write (nothing changed):
    /// - `EMQTYPE`: a key, or one of the group's own, holds another type.
    /// - `EMQDATA`: the group's stored settings do not read as some.
    pub fn apply<S: Store>(&self, store: &mut S) -> Answer {
        let grouping = Grouping::of(self.prefix);
        grouping.check(store)?;
        let wakes = wake_key(store, Some(self.keys.wake))?;
        need(store, self.keys.groups, KeyType::Hash)?;
        let before = grouping.settings(store, self.group)?;
        let after = self.merged(before);
        if after != before {
            let field = [b"set:", self.group].concat();
            match after.text() {
                text if text.is_empty() => store.hdel(self.keys.groups, &field),
                text => {
                    store.hset(self.keys.groups, &[(&field, text.as_bytes())]);
                    store.zadd(self.keys.names, 0.0, self.group);
                }
            }
            let was_ready = store.zscore(self.keys.ready, self.group).is_some();
            // Out of the index first, so that it enters at its start tag if it may.
            store.zrem(self.keys.ready, self.group);
            store.zrem(self.keys.wait, self.group);
            if grouping.settle(store, self.group, after) && !was_ready {
                wake(store, wakes);
            }
        }
        row(store, &grouping, self.group)
    }

    /// The stored settings with the given ones in their place.
    fn merged(&self, mut settings: Settings) -> Settings {
        let [weight, cap, rate, per, max, paused] = self.given;
        let some = |n: u64| (n > 0).then_some(n);
        if let Some(weight) = weight {
            settings.weight = weight;
        }
        if let Some(cap) = cap {
            settings.cap = some(cap);
        }
        if let Some(rate) = rate {
            settings.rate = some(rate).zip(per);
        }
        if let Some(max) = max {
            settings.max = some(max);
        }
        if let Some(paused) = paused {
            settings.paused = paused == 1;
        }
        settings
    }
}
