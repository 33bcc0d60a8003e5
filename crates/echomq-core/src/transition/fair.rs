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

use super::grouping::{Grouping, Load, Settings, Standing, UNGROUPED_MAX};
use crate::store::Store;
use crate::Refusal;

use crate::limits::GROUP_WAKE as WAKE_LIMIT;

/// A group a plan looked at: what it held, what the plan took of it, and
/// where it stands after.
#[derive(Debug)]
pub(crate) struct Looked {
    pub(crate) group: Vec<u8>,
    load: Load,
    /// Its pending ids in order, as far as read.
    queue: Vec<Vec<u8>>,
    /// Ids of its set no longer in `<q>pending`, and whether the set was read.
    stale: Vec<Vec<u8>>,
    read: bool,
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
}

/// A candidate in the heap: least tag first, then the default group, then by name.
type Candidate = Reverse<(u64, bool, Vec<u8>, usize)>;

impl Plan {
    /// Plan a claim of up to `room` jobs of the queue at `now` (read only).
    /// `ending` is the group of a job whose lease the same call ends first
    /// (ACKNEXT's): one fewer running, and a candidate even if out of the index.
    pub(crate) fn make<S: Store>(
        store: &mut S,
        grouping: &Grouping<'_>,
        pending: &[u8],
        room: u64,
        now: u64,
        ending: Option<&[u8]>,
    ) -> Result<Plan, Refusal> {
        let mut plan = Plan { now, ..Plan::default() };
        let vtime = grouping.tag(store, b"vtime")?;
        let mut heap: BinaryHeap<Candidate> = BinaryHeap::new();
        // The default group: the head of pending below the grouped jobs.
        let mut default =
            if room == 0 { Vec::new() } else { store.zupto(pending, UNGROUPED_MAX, room as usize) };
        default.reverse();
        let default_tag = grouping.tag(store, b"tag:")?.max(vtime);
        if !default.is_empty() {
            heap.push(Reverse((default_tag, false, Vec::new(), usize::MAX)));
        }
        for (group, in_ready) in candidates(store, grouping, room, now, ending) {
            let settings = grouping.settings(store, &group)?;
            let mut load = grouping.load(store, &group, settings, now);
            if ending == Some(group.as_slice()) {
                load.running = load.running.saturating_sub(1);
            }
            // A group in the index starts at its score there; one entering
            // it at its own next tag or the virtual time, whichever is later.
            let tag = match in_ready {
                Some(tag) => tag,
                None => grouping.tag(store, &[b"tag:", group.as_slice()].concat())?.max(vtime),
            };
            let was_waiting = in_ready.is_none() && store.zscore(&grouping.keys.wait(), &group).is_some();
            let at = plan.looked.len();
            if load.standing() == Standing::Ready {
                heap.push(Reverse((tag, true, group.clone(), at)));
            }
            let (queue, stale, taken) = (Vec::new(), Vec::new(), Vec::new());
            let was_ready = in_ready.is_some();
            plan.looked.push(Looked {
                group,
                load,
                queue,
                stale,
                read: false,
                taken,
                tag,
                was_ready,
                was_waiting,
            });
        }
        plan.serve(store, grouping, (pending, room), heap, default)?;
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
    ) -> Result<(), Refusal> {
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
            let Some(id) = looked.next(store, grouping, pending, room)? else {
                // Its set held fewer than it counted: nothing more pending.
                looked.load.pending = 0;
                continue;
            };
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
        Ok(())
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
                let field = [b"tag:", group].concat();
                store.hset(&settings_key, &[(&field, looked.tag.to_string().as_bytes())]);
            }
            self.place(store, grouping, looked);
        }
        if let Some(tag) = self.default_tag {
            store.hset(&settings_key, &[(b"tag:", tag.to_string().as_bytes())]);
        }
        if let Some(vtime) = self.vtime {
            store.hset(&settings_key, &[(b"vtime", vtime.to_string().as_bytes())]);
        }
    }

    /// When a claim took fewer jobs than the gate let it: ms until the
    /// first group held by its rate frees (at least 1), if one is.
    pub(crate) fn group_held<S: Store>(&self, store: &mut S, grouping: &Grouping<'_>) -> Option<i64> {
        let wait = grouping.keys.wait();
        let first = store.zhead(&wait, 1).pop()?;
        let frees = store.zscore(&wait, &first)? as u64;
        Some(frees.saturating_sub(self.now).max(1) as i64)
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
    /// The group's next pending id, reading its set on first use; an id
    /// no longer in `<q>pending` (a speaker before 1.7 took or removed it)
    /// is passed over.
    fn next<S: Store>(
        &mut self,
        store: &mut S,
        grouping: &Grouping<'_>,
        pending: &[u8],
        room: u64,
    ) -> Result<Option<Vec<u8>>, Refusal> {
        if !self.read {
            self.read = true;
            let key = grouping.keys.pending(&self.group);
            let (mut queue, stale): (Vec<_>, Vec<_>) = store
                .zhead(&key, room as usize)
                .into_iter()
                .partition(|id| store.zscore(pending, id).is_some());
            self.stale = stale;
            self.load.pending = self.load.pending.saturating_sub(self.stale.len() as u64);
            queue.reverse();
            self.queue = queue;
        }
        Ok(self.queue.pop())
    }
}

/// The groups a claim looks at, each with its score in `<q>ready` when it
/// is there: the first `room` of the index, those of `<q>gwait` whose
/// window freed (at most [`WAKE_LIMIT`]), and the group `ending` (ACKNEXT's
/// acked job's). With no room, only the ending group, to put it where it
/// stands.
fn candidates<S: Store>(
    store: &mut S,
    grouping: &Grouping<'_>,
    room: u64,
    now: u64,
    ending: Option<&[u8]>,
) -> Vec<(Vec<u8>, Option<u64>)> {
    let ready = grouping.keys.ready();
    let mut names: Vec<(Vec<u8>, Option<u64>)> = Vec::new();
    if room > 0 {
        for group in store.zhead(&ready, room as usize) {
            let tag = store.zscore(&ready, &group).map(|tag| tag.max(0.0) as u64);
            names.push((group, tag));
        }
        for group in store.zupto(&grouping.keys.wait(), now as f64, WAKE_LIMIT) {
            if !names.iter().any(|(name, _)| *name == group) {
                names.push((group, None));
            }
        }
    }
    if let Some(group) = ending.filter(|group| !names.iter().any(|(name, _)| name == group)) {
        let tag = store.zscore(&ready, group).map(|tag| tag.max(0.0) as u64);
        names.push((group.to_vec(), tag));
    }
    names
}
