//! A claim's fair choice among a queue's groups (PROTOCOL.md §7.9, CLAIM;
//! `includes/fair.lua`): start-time fair queueing over the groups a claim
//! may take from and the default group (the ungrouped jobs), planned on
//! reads alone, then written once the claim's every check has passed.
//!
//! Each job taken comes from the candidate with the least start tag (a tie
//! goes to the default group, then to the group whose name sorts first);
//! that candidate's tag then moves on by its step (`UNIT / weight`), and
//! the queue's virtual time becomes the tag the job was served at. A group
//! entering the index starts at its own next tag or the virtual time,
//! whichever is later: a group that was idle earns no credit.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use super::grouping::{ClaimFields, Clock, Grouping, Load, Settings, Standing};
use super::need;
use crate::store::{KeyType, Store};
use crate::Refusal;

use crate::limits::GROUP_WAKE as WAKE_LIMIT;

/// A group a plan looked at: what it held, what the plan took of it, and
/// where it stands after.
#[derive(Debug)]
pub(crate) struct Looked {
    pub(crate) group: Vec<u8>,
    load: Load,
    /// The first of its pending ids the plan has not looked at, the next
    /// last: one more than the claim's room was read, so that its count
    /// tells whether more follow.
    queue: Vec<Vec<u8>>,
    /// Ids of its set no longer in `<q>pending`.
    stale: Vec<Vec<u8>>,
    pub(crate) taken: Vec<Vec<u8>>,
    tag: u64,
    /// Whether it was in `<q>ready` / `<q>gwait` when the plan read them.
    was_ready: bool,
    was_waiting: bool,
}

/// What a claim takes, fairly, and what it must write to the groups' keys.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// The ids, in the order taken, each with its group (`None`: the default group).
    pub(crate) ids: Vec<(Vec<u8>, Option<usize>)>,
    pub(crate) looked: Vec<Looked>,
    /// The default group's next tag, when it served a job.
    default_tag: Option<u64>,
    vtime: Option<u64>,
    now: u64,
    /// Whether a claim could take more once this one is written: the
    /// default group has jobs left, or a group stands in `<q>ready`.
    pub(crate) more: bool,
}

/// A candidate in the heap: least tag first, then the default group, then by name.
type Candidate = Reverse<(u64, bool, Vec<u8>, usize)>;

/// A group a claim looks at: its name, its score in `<q>ready` when it is
/// there, and whether it is in `<q>gwait`.
type Named = (Vec<u8>, Option<u64>, bool);

impl Plan {
    /// Plan a claim of up to `room` jobs of the queue at `now` (read only),
    /// given the head of pending below the grouped jobs (`default`: at
    /// least `room` + 1 ids, when there are). `ending` is the group of a job
    /// whose lease the same call ends first (ACKNEXT's): one fewer running,
    /// and a candidate even if out of the index.
    pub(crate) fn make<S: Store>(
        store: &mut S,
        grouping: &Grouping<'_>,
        (pending, mut default): (&[u8], Vec<Vec<u8>>),
        room: u64,
        now: u64,
        ending: Option<&[u8]>,
    ) -> Result<Plan, Refusal> {
        let mut plan = Plan { now, ..Plan::default() };
        // The groups looked at first, so that one read of `<q>groups` takes
        // the clock and their fields; the errors told in §7.9's order.
        let named = candidates(store, grouping, room, now, ending, &mut plan.more);
        let asked: Vec<&[u8]> = named
            .as_ref()
            .map_or(Vec::new(), |named| named.iter().map(|(group, ..)| group.as_slice()).collect());
        let Clock { vtime, default: default_tag, fields } = grouping.clock(store, &asked)?;
        let named = named?;
        let window = room as usize + 1;
        let mut heap: BinaryHeap<Candidate> = BinaryHeap::new();
        plan.more |= room > 0 && default.len() >= window;
        default.truncate(room as usize);
        default.reverse();
        let default_tag = default_tag.max(vtime);
        if !default.is_empty() {
            heap.push(Reverse((default_tag, false, Vec::new(), usize::MAX)));
        }
        for ((group, in_ready, was_waiting), read) in named.into_iter().zip(fields) {
            // A paused group stands so whatever it holds: its ids are not read.
            let ClaimFields { settings, tag: own, ids: mut queue, mut running } =
                grouping.claim_fields(store, &group, window, read)?;
            if ending == Some(group.as_slice()) {
                running = running.saturating_sub(1);
            }
            let load = grouping.load_counted(store, &group, settings, now, (queue.len() as u64, running));
            queue.reverse();
            // A group in the index starts at its score there; one entering
            // it at its own next tag or the virtual time, whichever is later.
            let tag = in_ready.unwrap_or(own.max(vtime));
            let at = plan.looked.len();
            if load.standing() == Standing::Ready {
                heap.push(Reverse((tag, true, group.clone(), at)));
            }
            let was_ready = in_ready.is_some();
            let (stale, taken) = (Vec::new(), Vec::new());
            plan.looked.push(Looked { group, load, queue, stale, taken, tag, was_ready, was_waiting });
        }
        plan.serve(store, grouping, (pending, room), heap, default);
        Ok(plan)
    }

    /// Take up to `room` jobs, each from the candidate with the least tag,
    /// which moves on by its step and stays a candidate while it stands
    /// ready; `default` holds the default group's ids, the next last.
    fn serve<S: Store>(
        &mut self,
        store: &mut S,
        grouping: &Grouping<'_>,
        (pending, room): (&[u8], u64),
        mut heap: BinaryHeap<Candidate>,
        mut default: Vec<Vec<u8>>,
    ) {
        while (self.ids.len() as u64) < room {
            let Some(Reverse((tag, grouped, _, at))) = heap.pop() else { break };
            if !grouped {
                let Some(id) = default.pop() else { continue };
                self.vtime = Some(tag);
                let next = tag + Settings::default().step();
                self.default_tag = Some(next);
                self.ids.push((id, None));
                if !default.is_empty() {
                    heap.push(Reverse((next, false, Vec::new(), usize::MAX)));
                }
                continue;
            }
            let looked = &mut self.looked[at];
            // None: what it read of its set was passed over, all of it.
            let Some(id) = looked.next(store, grouping, pending) else { continue };
            self.vtime = Some(tag);
            looked.tag = tag + looked.load.settings.step();
            looked.load.pending -= 1;
            looked.load.running += 1;
            looked.load.logged += 1;
            looked.taken.push(id.clone());
            self.ids.push((id, Some(at)));
            if looked.load.standing() == Standing::Ready {
                heap.push(Reverse((looked.tag, true, looked.group.clone(), at)));
            }
        }
        self.more |=
            !default.is_empty() || self.looked.iter().any(|looked| looked.load.standing() == Standing::Ready);
    }

    /// The ids the plan takes, in order.
    pub(crate) fn taken_ids(&self) -> Vec<Vec<u8>> {
        self.ids.iter().map(|(id, _)| id.clone()).collect()
    }

    /// Write what the plan took to the groups' keys, after the claim wrote
    /// its records: each group's ids out of its pending set and into its
    /// leases at `deadline`, its rate log, its tag and its place in the
    /// index; the default group's tag; the virtual time. `logged` is each
    /// claim as the rate log names it, in the plan's order.
    pub(crate) fn write<S: Store>(
        &self,
        store: &mut S,
        grouping: &Grouping<'_>,
        deadline: f64,
        logged: &[(Vec<u8>, u64)],
    ) {
        let keys = grouping.keys;
        let settings_key = keys.settings();
        // Each job claimed by its id (`<id>:<token>`: the token has no `:`);
        // an id whose record was missing was not claimed, and holds no lease.
        let claimed: HashMap<&[u8], (&[u8], u64)> = logged
            .iter()
            .filter_map(|(member, at)| {
                let colon = member.iter().rposition(|&b| b == b':')?;
                Some((&member[..colon], (member.as_slice(), *at)))
            })
            .collect();
        let mut tags: Vec<(Vec<u8>, String)> = Vec::new();
        for looked in &self.looked {
            let group = looked.group.as_slice();
            let pending = keys.pending(group);
            for id in looked.stale.iter().chain(&looked.taken) {
                store.zrem(&pending, id);
            }
            if !looked.taken.is_empty() {
                let leases: Vec<&[u8]> =
                    looked.taken.iter().map(Vec::as_slice).filter(|id| claimed.contains_key(id)).collect();
                let scored: Vec<(f64, &[u8])> = leases.iter().rev().map(|id| (deadline, *id)).collect();
                if !scored.is_empty() {
                    store.zadd_many(&keys.active(group), &scored);
                }
                if let Some((_, per)) = looked.load.settings.rate {
                    let log = keys.rate(group);
                    for member in &looked.load.expired {
                        store.zrem(&log, member);
                    }
                    let edge = self.now.saturating_sub(per) as f64;
                    for id in &leases {
                        let (member, at) = claimed[id];
                        super::gate::log_claim(store, &log, edge, member, at.max(self.now));
                    }
                }
                tags.push(([b"tag:", group].concat(), looked.tag.to_string()));
            }
            self.place(store, grouping, looked);
        }
        // The tags moved on and the virtual time, in one write.
        if let Some(tag) = self.default_tag {
            tags.push((b"tag:".to_vec(), tag.to_string()));
        }
        if let Some(vtime) = self.vtime {
            tags.push((b"vtime".to_vec(), vtime.to_string()));
        }
        if !tags.is_empty() {
            let fields: Vec<(&[u8], &[u8])> =
                tags.iter().map(|(field, tag)| (field.as_slice(), tag.as_bytes())).collect();
            store.hset(&settings_key, &fields);
        }
    }

    /// When a claim took fewer jobs than the gate let it: ms until the
    /// first group held by its rate frees (at least 1), if one is.
    pub(crate) fn group_held<S: Store>(&self, store: &mut S, grouping: &Grouping<'_>) -> Option<i64> {
        let (_, frees) = store.zhead_scored(&grouping.keys.wait(), 1).pop()?;
        Some((frees as u64).saturating_sub(self.now).max(1) as i64)
    }

    /// A looked-at group to where it stands after the claim.
    fn place<S: Store>(&self, store: &mut S, grouping: &Grouping<'_>, looked: &Looked) {
        let (ready, wait) = (grouping.keys.ready(), grouping.keys.wait());
        let group = looked.group.as_slice();
        let moved = !looked.taken.is_empty();
        match looked.load.standing() {
            Standing::Ready => {
                if looked.was_waiting {
                    store.zrem(&wait, group);
                }
                if moved || !looked.was_ready {
                    store.zadd(&ready, looked.tag as f64, group);
                }
            }
            Standing::Limited(frees) => {
                let frees = if moved { frees.max(self.now + 1) } else { frees };
                if looked.was_ready {
                    store.zrem(&ready, group);
                }
                store.zadd(&wait, frees as f64, group);
            }
            _ => {
                if looked.was_ready {
                    store.zrem(&ready, group);
                }
                if looked.was_waiting {
                    store.zrem(&wait, group);
                }
            }
        }
    }
}

impl Looked {
    /// The group's next pending id; an id no longer in `<q>pending` (a
    /// speaker before 1.7 took or removed it) is passed over, and the
    /// group's pending jobs are counted anew.
    fn next<S: Store>(&mut self, store: &mut S, grouping: &Grouping<'_>, pending: &[u8]) -> Option<Vec<u8>> {
        while let Some(id) = self.queue.pop() {
            if store.zscore(pending, &id).is_some() {
                return Some(id);
            }
            self.stale.push(id);
            let held = store.zcard(&grouping.keys.pending(&self.group));
            self.load.pending = held.saturating_sub((self.stale.len() + self.taken.len()) as u64);
        }
        None
    }
}

/// The groups a claim looks at (see [`Named`]): the first `room` of the
/// index, those of `<q>gwait` whose window freed (at most [`WAKE_LIMIT`]),
/// and the group `ending` (ACKNEXT's acked job's). With no room, only the
/// ending group, to put it where it stands. `more` is set when the index
/// holds groups past those.
fn candidates<S: Store>(
    store: &mut S,
    grouping: &Grouping<'_>,
    room: u64,
    now: u64,
    ending: Option<&[u8]>,
    more: &mut bool,
) -> Result<Vec<Named>, Refusal> {
    let (ready, wait) = (grouping.keys.ready(), grouping.keys.wait());
    // Each key's type checked, then the key read (a store that opens keys
    // opens it once).
    need(store, &ready, KeyType::Zset)?;
    let mut head = if room > 0 { store.zhead_scored(&ready, room as usize + 1) } else { Vec::new() };
    need(store, &wait, KeyType::Zset)?;
    let mut names: Vec<Named> = Vec::new();
    if room > 0 {
        *more |= head.len() as u64 > room;
        head.truncate(room as usize);
        names.extend(head.into_iter().map(|(group, tag)| (group, Some(tag.max(0.0) as u64), false)));
        for group in store.zupto(&wait, now as f64, WAKE_LIMIT) {
            if !names.iter().any(|(name, ..)| *name == group) {
                names.push((group, None, true));
            }
        }
    }
    if let Some(group) = ending.filter(|group| !names.iter().any(|(name, ..)| name == group)) {
        let tag = store.zscore(&ready, group).map(|tag| tag.max(0.0) as u64);
        let waiting = tag.is_none() && store.zscore(&wait, group).is_some();
        names.push((group.to_vec(), tag, waiting));
    }
    Ok(names)
}
