//! Fair groups (issue 50, toward protocol 1.7; not yet a transition's): the
//! index that lets a claim interleave the groups of a queue that have work,
//! by weight, with no burst credit for a group that was idle (start-time
//! fair queueing), and that leaves out a group at its cap or paused instead
//! of skipping it in place.
//!
//! Keys, all in the queue's slot, derived from its prefix:
//! - `<q>group`: hash, job id -> its group (beside the record);
//! - `<q>gpending:<g>`: zset, the group's pending jobs, scored as `<q>pending`;
//! - `<q>gactive:<g>`: zset, the group's leases (its running count is their
//!   number, never a counter);
//! - `<q>ready`: zset, the groups a claim may take from now, by start tag;
//! - `<q>groups`: hash, `<g>` -> the group's settings (`WEIGHT w CAP n
//!   PAUSED 1`), `tag:<g>` -> its next start tag, `vtime` -> the tag of the
//!   group served last (the queue's virtual time).
//!
//! Ungrouped jobs are the default group, named by the empty string: they stay
//! in `<q>pending` (a queue without groups pays nothing), its readiness is
//! that set's size, its tag is `tag:` and its settings the field ``.
//!
//! Tags are integers: a job served from a group of weight w moves its tag on
//! by [`UNIT`] / w, so that Lua's doubles and Rust's integers agree exactly
//! (every tag stays below 2^53 for billions of claims).
#![allow(dead_code)] // wired into ENQUEUE, CLAIM and the ends of a lease next

use crate::parse::{lossy, malformed, stored};
use crate::store::Store;
use crate::Refusal;

/// What one job served moves a group of weight 1 on by.
pub(crate) const UNIT: u64 = 1_000_000;

/// The most a weight may be: a tag moves on by at least 1000 a job.
pub(crate) const MAX_WEIGHT: u64 = 1000;

/// A queue's group keys, derived from its prefix (`emq:{q}:`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct GroupKeys<'k> {
    prefix: &'k [u8],
}

impl<'k> GroupKeys<'k> {
    pub(crate) fn new(prefix: &'k [u8]) -> GroupKeys<'k> {
        GroupKeys { prefix }
    }

    /// `<q>group`: job id -> group.
    pub(crate) fn membership(&self) -> Vec<u8> {
        [self.prefix, b"group"].concat()
    }

    /// `<q>groups`: the groups' settings, tags and the queue's virtual time.
    pub(crate) fn settings(&self) -> Vec<u8> {
        [self.prefix, b"groups"].concat()
    }

    /// `<q>ready`: the groups a claim may take from, by start tag.
    pub(crate) fn ready(&self) -> Vec<u8> {
        [self.prefix, b"ready"].concat()
    }

    /// The pending set of `group`: `<q>pending` for the default group.
    pub(crate) fn pending(&self, group: &[u8]) -> Vec<u8> {
        if group.is_empty() {
            return [self.prefix, b"pending"].concat();
        }
        [self.prefix, b"gpending:", group].concat()
    }

    /// The leases of `group`.
    pub(crate) fn active(&self, group: &[u8]) -> Vec<u8> {
        [self.prefix, b"gactive:", group].concat()
    }
}

/// A group's settings, as `<q>groups` holds them (`WEIGHT 2 CAP 3 PAUSED 1`);
/// none: weight 1, no cap, not paused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Settings {
    pub(crate) weight: u64,
    pub(crate) cap: Option<u64>,
    pub(crate) paused: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings { weight: 1, cap: None, paused: false }
    }
}

impl Settings {
    /// Read a group's settings text; `None` when it does not read as one.
    pub(crate) fn parse(text: &[u8]) -> Option<Settings> {
        let text = std::str::from_utf8(text).ok()?;
        let words: Vec<&str> = text.split(' ').filter(|word| !word.is_empty()).collect();
        if !words.len().is_multiple_of(2) {
            return None;
        }
        let mut settings = Settings::default();
        for pair in words.chunks(2) {
            let value: u64 = pair[1].parse().ok().filter(|_| pair[1].bytes().all(|b| b.is_ascii_digit()))?;
            match pair[0] {
                "WEIGHT" if (1..=MAX_WEIGHT).contains(&value) => settings.weight = value,
                "CAP" if value >= 1 => settings.cap = Some(value),
                "PAUSED" if value <= 1 => settings.paused = value == 1,
                _ => return None,
            }
        }
        Some(settings)
    }

    /// The text `<q>groups` keeps, its settings in a fixed order, defaults left out.
    pub(crate) fn text(&self) -> String {
        let mut words = Vec::new();
        if self.weight != 1 {
            words.push(format!("WEIGHT {}", self.weight));
        }
        if let Some(cap) = self.cap {
            words.push(format!("CAP {cap}"));
        }
        if self.paused {
            words.push("PAUSED 1".to_owned());
        }
        words.join(" ")
    }

    /// How far one job served moves the group's tag on.
    fn step(&self) -> u64 {
        UNIT / self.weight
    }
}

/// A job a claim took, and its group (empty: the default group).
pub(crate) type Served = (Vec<u8>, Vec<u8>);

/// The index of a queue's groups, over a store.
pub(crate) struct Groups<'k> {
    keys: GroupKeys<'k>,
}

impl<'k> Groups<'k> {
    pub(crate) fn new(prefix: &'k [u8]) -> Groups<'k> {
        Groups { keys: GroupKeys::new(prefix) }
    }

    /// `group`'s settings (`EMQDATA` for a text that does not read as some).
    pub(crate) fn settings<S: Store>(&self, store: &mut S, group: &[u8]) -> Result<Settings, Refusal> {
        let key = self.keys.settings();
        match store.hget(&key, group) {
            None => Ok(Settings::default()),
            Some(text) => Settings::parse(&text).ok_or_else(|| malformed(&key, group, "a group's settings")),
        }
    }

    /// The job `id`'s group: the empty name for an ungrouped job.
    pub(crate) fn group_of<S: Store>(&self, store: &mut S, id: &[u8]) -> Vec<u8> {
        store.hget(&self.keys.membership(), id).unwrap_or_default()
    }

    /// A field of `<q>groups` that holds a tag (`vtime`, `tag:<g>`): 0 when absent.
    fn tag<S: Store>(&self, store: &mut S, field: &[u8]) -> Result<u64, Refusal> {
        let key = self.keys.settings();
        let value = stored(store.hget(&key, field).as_deref(), &key, field)?;
        Ok(value.map_or(0, |tag| tag.max(0) as u64))
    }

    /// The job `id` enters pending in its group, at `score` (its priority):
    /// the group's set, and the group ready if it can be taken from.
    pub(crate) fn to_pending<S: Store>(
        &self,
        store: &mut S,
        id: &[u8],
        group: &[u8],
        score: f64,
    ) -> Result<(), Refusal> {
        if !group.is_empty() {
            store.hset(&self.keys.membership(), &[(id, group)]);
        }
        store.zadd(&self.keys.pending(group), score, id);
        self.ready(store, group)
    }

    /// The job `id` of `group` leaves its lease (acked, failed, reaped,
    /// released, …): out of the group's leases, and the group ready again if
    /// its cap held it back.
    pub(crate) fn off_active<S: Store>(&self, store: &mut S, id: &[u8], group: &[u8]) -> Result<(), Refusal> {
        store.zrem(&self.keys.active(group), id);
        self.ready(store, group)
    }

    /// Put `group` in `<q>ready` when it has pending jobs, room under its cap
    /// and is not paused, and is not there already: at its own next tag, or
    /// the queue's virtual time if that is later (an idle group earns no
    /// credit). The default group is never a member (a claim reads its
    /// readiness itself).
    pub(crate) fn ready<S: Store>(&self, store: &mut S, group: &[u8]) -> Result<(), Refusal> {
        let ready = self.keys.ready();
        if group.is_empty() || store.zscore(&ready, group).is_some() {
            return Ok(());
        }
        if !self.can_take(store, group)? {
            return Ok(());
        }
        let start = self.start(store, group)?;
        store.zadd(&ready, start as f64, group);
        Ok(())
    }

    /// Whether a claim may take a job of `group` now.
    fn can_take<S: Store>(&self, store: &mut S, group: &[u8]) -> Result<bool, Refusal> {
        let settings = self.settings(store, group)?;
        let room = settings.cap.is_none_or(|cap| store.zcard(&self.keys.active(group)) < cap);
        Ok(!settings.paused && room && store.zcard(&self.keys.pending(group)) > 0)
    }

    /// The tag `group` would start at now: its own, or the virtual time if later.
    fn start<S: Store>(&self, store: &mut S, group: &[u8]) -> Result<u64, Refusal> {
        let own = self.tag(store, &[b"tag:", group].concat())?;
        Ok(own.max(self.tag(store, b"vtime")?))
    }

    /// Take up to `room` jobs, fairly: each from the group with the least
    /// start tag among the ready ones and the default group, whose tag then
    /// moves on by its step; a group with nothing left, or at its cap,
    /// leaves the index. Each job taken is in its group's leases at
    /// `deadline`; the caller moves the records and `<q>active`. The jobs
    /// and their groups, in the order taken.
    pub(crate) fn take<S: Store>(
        &self,
        store: &mut S,
        room: u64,
        deadline: f64,
    ) -> Result<Vec<Served>, Refusal> {
        let mut taken = Vec::new();
        let ready = self.keys.ready();
        while (taken.len() as u64) < room {
            let grouped = store.zhead(&ready, 1).pop().map(|group| {
                let tag = store.zscore(&ready, &group).unwrap_or(0.0) as u64;
                (group, tag)
            });
            let default =
                if self.can_take(store, b"")? { Some((Vec::new(), self.start(store, b"")?)) } else { None };
            // The least tag first; on a tie the default group, then by name.
            let Some((group, tag)) = [default, grouped].into_iter().flatten().min_by(|a, b| a.1.cmp(&b.1))
            else {
                break;
            };
            let pending = self.keys.pending(&group);
            let Some(id) = store.zhead(&pending, 1).pop() else {
                // A ready group whose set was emptied under it: out of the index.
                store.zrem(&ready, &group);
                continue;
            };
            store.zrem(&pending, &id);
            store.zadd(&self.keys.active(&group), deadline, &id);
            let step = self.settings(store, &group)?.step();
            let settings = self.keys.settings();
            let next = (tag + step).to_string();
            store.hset(
                &settings,
                &[
                    (b"vtime", tag.to_string().as_bytes()),
                    (&[b"tag:", group.as_slice()].concat(), next.as_bytes()),
                ],
            );
            if !group.is_empty() {
                store.zrem(&ready, &group);
                self.ready(store, &group)?;
            }
            taken.push((id, group));
        }
        Ok(taken)
    }

    /// `group`'s settings written (and the index told: a group paused or
    /// at a lower cap leaves it at its next claim; one resumed or given
    /// room enters it now).
    pub(crate) fn configure<S: Store>(
        &self,
        store: &mut S,
        group: &[u8],
        settings: Settings,
    ) -> Result<(), Refusal> {
        if settings.weight == 0 || settings.weight > MAX_WEIGHT {
            return Err(Refusal::arg(format!("group {} weight must be 1..={MAX_WEIGHT}", lossy(group))));
        }
        store.hset(&self.keys.settings(), &[(group, settings.text().as_bytes())]);
        if !self.can_take(store, group)? {
            store.zrem(&self.keys.ready(), group);
        }
        self.ready(store, group)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use super::*;
    use crate::memory::{ManualClock, Memory};

    const PREFIX: &[u8] = b"emq:{q}:";

    fn store() -> Memory {
        Memory::new(Arc::new(ManualClock::new(1_000)))
    }

    /// `n` jobs of `group`, ids `<group>-<k>`, all at priority 0 (FIFO by id).
    fn enqueue(store: &mut Memory, groups: &Groups<'_>, group: &str, n: usize) {
        for k in 0..n {
            let id = format!("JOB_{group}-{k:07}");
            groups.to_pending(store, id.as_bytes(), group.as_bytes(), 0.0).unwrap();
        }
    }

    /// Finish the job `id` of `group`: out of its leases.
    fn finish(store: &mut Memory, groups: &Groups<'_>, id: &[u8], group: &[u8]) {
        groups.off_active(store, id, group).unwrap();
    }

    #[test]
    fn a_flooded_queue_serves_a_late_tenant_within_one_claim_a_slot() {
        let (mut store, groups) = (store(), Groups::new(PREFIX));
        enqueue(&mut store, &groups, "a", 100_000);
        let slots = 10;
        // Ten slots busy with tenant A, then B's one job arrives.
        let first = groups.take(&mut store, slots, 1.0).unwrap();
        assert!(first.iter().all(|(_, group)| group == b"a"));
        enqueue(&mut store, &groups, "b", 1);
        let mut claims = 0;
        'run: for (id, group) in first {
            finish(&mut store, &groups, &id, &group);
            for (_, group) in groups.take(&mut store, 1, 1.0).unwrap() {
                claims += 1;
                if group == b"b" {
                    break 'run;
                }
            }
        }
        assert!(claims <= slots, "B waited {claims} claims behind A's 100,000");
    }

    #[test]
    fn weights_one_two_five_share_claims_within_two_percent() {
        let (mut store, groups) = (store(), Groups::new(PREFIX));
        for (group, weight) in [("x", 1), ("y", 2), ("z", 5)] {
            let settings = Settings { weight, ..Settings::default() };
            groups.configure(&mut store, group.as_bytes(), settings).unwrap();
            enqueue(&mut store, &groups, group, 100_000);
        }
        let mut served: HashMap<Vec<u8>, u64> = HashMap::new();
        for _ in 0..1000 {
            for (id, group) in groups.take(&mut store, 100, 1.0).unwrap() {
                finish(&mut store, &groups, &id, &group);
                *served.entry(group).or_default() += 1;
            }
        }
        let total: u64 = served.values().sum();
        assert_eq!(total, 100_000);
        for (group, weight) in [(&b"x"[..], 1.0), (b"y", 2.0), (b"z", 5.0)] {
            let share = served[group] as f64 / total as f64;
            let want = weight / 8.0;
            assert!((share - want).abs() <= 0.02 * want, "{}: {share} of claims, not {want}", lossy(group));
        }
    }

    #[test]
    fn a_group_at_its_cap_leaves_the_index_and_does_not_hold_up_the_others() {
        let (mut store, groups) = (store(), Groups::new(PREFIX));
        groups.configure(&mut store, b"capped", Settings { cap: Some(2), ..Settings::default() }).unwrap();
        enqueue(&mut store, &groups, "capped", 50);
        enqueue(&mut store, &groups, "free", 50);
        let taken = groups.take(&mut store, 40, 1.0).unwrap();
        let capped = taken.iter().filter(|(_, group)| group == b"capped").count();
        assert_eq!(capped, 2, "at most its cap running");
        assert_eq!(taken.len(), 40, "the free group fills the rest");
        assert_eq!(store.zcard(&GroupKeys::new(PREFIX).active(b"capped")), 2);
        // One of its leases ends: it is ready again, for one more.
        let (id, _) = taken.iter().find(|(_, group)| group == b"capped").unwrap().clone();
        finish(&mut store, &groups, &id, b"capped");
        let next = groups.take(&mut store, 20, 1.0).unwrap();
        assert_eq!(next.iter().filter(|(_, group)| group == b"capped").count(), 1);
    }

    #[test]
    fn an_idle_group_earns_no_burst_credit_and_a_paused_one_waits() {
        let (mut store, groups) = (store(), Groups::new(PREFIX));
        enqueue(&mut store, &groups, "busy", 1000);
        for (id, group) in groups.take(&mut store, 500, 1.0).unwrap() {
            finish(&mut store, &groups, &id, &group);
        }
        // A group idle so far arrives: it alternates with the busy one
        // rather than taking 500 claims in a row.
        enqueue(&mut store, &groups, "late", 100);
        let next = groups.take(&mut store, 20, 1.0).unwrap();
        let late = next.iter().filter(|(_, group)| group == b"late").count();
        assert!((9..=11).contains(&late), "{late} of 20");
        groups.configure(&mut store, b"late", Settings { paused: true, ..Settings::default() }).unwrap();
        assert!(groups.take(&mut store, 20, 1.0).unwrap().iter().all(|(_, group)| group == b"busy"));
        groups.configure(&mut store, b"late", Settings::default()).unwrap();
        assert!(groups.take(&mut store, 20, 1.0).unwrap().iter().any(|(_, group)| group == b"late"));
    }

    #[test]
    fn ungrouped_jobs_are_one_default_group_beside_the_others() {
        let (mut store, groups) = (store(), Groups::new(PREFIX));
        enqueue(&mut store, &groups, "", 100);
        enqueue(&mut store, &groups, "t", 100);
        let taken = groups.take(&mut store, 20, 1.0).unwrap();
        let default = taken.iter().filter(|(_, group)| group.is_empty()).count();
        assert_eq!(default, 10, "half each");
        assert_eq!(store.zcard(b"emq:{q}:pending"), 90, "the default group's jobs wait in <q>pending");
    }

    #[test]
    fn settings_read_back_and_bad_ones_are_refused() {
        for settings in [
            Settings::default(),
            Settings { weight: 5, cap: Some(3), paused: true },
            Settings { weight: MAX_WEIGHT, cap: None, paused: false },
        ] {
            assert_eq!(Settings::parse(settings.text().as_bytes()), Some(settings));
        }
        for bad in
            ["WEIGHT", "WEIGHT 0", "WEIGHT 1001", "CAP 0", "PAUSED 2", "COLOUR 1", "WEIGHT -1", "WEIGHT +2"]
        {
            assert_eq!(Settings::parse(bad.as_bytes()), None, "{bad}");
        }
        let (mut store, groups) = (store(), Groups::new(PREFIX));
        store.hset(b"emq:{q}:groups", &[(b"g", b"WEIGHT zero")]);
        assert!(groups.settings(&mut store, b"g").is_err());
    }
}
