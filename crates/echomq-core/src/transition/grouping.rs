//! Fair groups (PROTOCOL.md §7.9, 1.7; `includes/grouping.lua`): what every
//! transition that moves a grouped job into or out of pending or active
//! shares, and what GROUP and GROUPS read.
//!
//! A queue's jobs may carry a group (a tenant, a customer, a key). Every
//! pending job stays in `<q>pending` (counts, lists, cancels and removals
//! read it as before), a grouped one scored past every ungrouped one
//! ([`GROUPED`] + its priority), so that the head of pending below it is the
//! default group: the ungrouped jobs. The groups' own keys, all in the
//! queue's slot and derived from its prefix as the records are (a group is
//! named by data, as a job is):
//! - `<q>group`: hash, job id → its group, while its record lives;
//! - `<q>gpending:<g>`: zset, the group's pending jobs, scored by priority;
//! - `<q>gactive:<g>`: zset, the group's leases (its running count is their
//!   number, never a counter);
//! - `<q>grate:<g>`: zset, the group's rate log, as `<q>rate` (§7.1);
//! - `<q>groups`: hash, `set:<g>` → the group's settings, `tag:<g>` → its
//!   next start tag (`tag:` the default group's), `vtime` → the tag of the
//!   job served last (the queue's virtual time);
//! - `<q>gnames`: zset (every score 0), the groups with a job pending or
//!   running or with settings: what GROUPS pages through, by name;
//! - `<q>ready`: zset, the groups a claim may take from now, by start tag;
//! - `<q>gwait`: zset, the groups held by their rate, by when a slot frees.
//!
//! A group at its cap, its rate or paused is out of `<q>ready`, never
//! skipped in place: it comes back when a lease of its ends, its window
//! frees (a claim moves it from `<q>gwait`) or it is resumed.

use super::{found, need};
use crate::limits::{GROUPED_SCORE, GROUP_WEIGHT, MAX_GROUP, PRIORITY, SWEEP_LIMIT, TAG_UNIT};
use crate::parse::{lossy, malformed, stored};
use crate::store::{KeyType, Store};
use crate::Refusal;

/// A grouped job's score in `<q>pending` is this plus its priority: past
/// every ungrouped job's (a priority is within ±2^31), exact in a double.
pub(crate) const GROUPED: f64 = GROUPED_SCORE as f64;

/// The highest score of an ungrouped job in `<q>pending`: the default
/// group's head is the pending jobs scored at most this.
pub(crate) const UNGROUPED_MAX: f64 = *PRIORITY.end() as f64;

/// What one job served moves a group of weight 1 on by; weight w moves it
/// by `UNIT / w`. Integers, so that Lua's doubles and Rust agree exactly.
pub(crate) const UNIT: u64 = TAG_UNIT;

/// The most a weight may be: a tag moves on by at least 1000 a job.
pub(crate) const MAX_WEIGHT: u64 = *GROUP_WEIGHT.end();

/// A queue's group keys, derived from its prefix (`emq:{q}:`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct GroupKeys<'p> {
    pub(crate) prefix: &'p [u8],
}

impl GroupKeys<'_> {
    fn key(&self, name: &[u8], group: &[u8]) -> Vec<u8> {
        [self.prefix, name, group].concat()
    }

    /// `<q>group`: job id → group.
    pub(crate) fn membership(&self) -> Vec<u8> {
        self.key(b"group", b"")
    }

    /// `<q>groups`: settings, tags, the virtual time.
    pub(crate) fn settings(&self) -> Vec<u8> {
        self.key(b"groups", b"")
    }

    /// `<q>gnames`: the groups GROUPS lists.
    pub(crate) fn names(&self) -> Vec<u8> {
        self.key(b"gnames", b"")
    }

    /// `<q>ready`: the groups a claim may take from, by start tag.
    pub(crate) fn ready(&self) -> Vec<u8> {
        self.key(b"ready", b"")
    }

    /// `<q>gwait`: the groups held by their rate, by when a slot frees.
    pub(crate) fn wait(&self) -> Vec<u8> {
        self.key(b"gwait", b"")
    }

    /// `<q>wake`, the queue's wake-up key (§9), told when a group enters
    /// `<q>ready` other than by a claim.
    pub(crate) fn wake(&self) -> Vec<u8> {
        self.key(b"wake", b"")
    }

    /// `<q>gpending:<g>`.
    pub(crate) fn pending(&self, group: &[u8]) -> Vec<u8> {
        self.key(b"gpending:", group)
    }

    /// `<q>gactive:<g>`.
    pub(crate) fn active(&self, group: &[u8]) -> Vec<u8> {
        self.key(b"gactive:", group)
    }

    /// `<q>grate:<g>`.
    pub(crate) fn rate(&self, group: &[u8]) -> Vec<u8> {
        self.key(b"grate:", group)
    }
}

/// A group's name: 1 to [`MAX_GROUP`] bytes (`EMQARG` otherwise).
pub(crate) fn group_name(value: Option<&[u8]>) -> Result<&[u8], Refusal> {
    match value {
        Some(name) if (1..=MAX_GROUP).contains(&name.len()) => Ok(name),
        _ => Err(Refusal::arg(format!("GROUP must be 1 to {MAX_GROUP} bytes"))),
    }
}

/// A group's settings, as `<q>groups` holds them (`WEIGHT 2 CAP 3 RATE 10
/// PER 1000 MAX 500 PAUSED 1`, in that order, defaults left out); none:
/// weight 1, no cap, no rate, no most, not paused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Settings {
    pub(crate) weight: u64,
    pub(crate) cap: Option<u64>,
    /// At most `.0` claims in any `.1` ms.
    pub(crate) rate: Option<(u64, u64)>,
    /// At most this many pending (ENQUEUE past it is `EMQFULL`).
    pub(crate) max: Option<u64>,
    pub(crate) paused: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings { weight: 1, cap: None, rate: None, max: None, paused: false }
    }
}

impl Settings {
    /// Read a group's settings text; `None` when it does not read as some.
    pub(crate) fn parse(text: &[u8]) -> Option<Settings> {
        let text = std::str::from_utf8(text).ok()?;
        let words: Vec<&str> = text.split(' ').collect();
        if text.is_empty() || !words.len().is_multiple_of(2) {
            return None;
        }
        let mut settings = Settings::default();
        let (mut rate, mut per) = (None, None);
        for pair in words.chunks(2) {
            if pair[1].is_empty() || pair[1].len() > 15 || !pair[1].bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let value: u64 = pair[1].parse().ok()?;
            match pair[0] {
                "WEIGHT" if (1..=MAX_WEIGHT).contains(&value) => settings.weight = value,
                "CAP" if value >= 1 => settings.cap = Some(value),
                "RATE" if value >= 1 => rate = Some(value),
                "PER" if value >= 1 => per = Some(value),
                "MAX" if value >= 1 => settings.max = Some(value),
                "PAUSED" if value == 1 => settings.paused = true,
                _ => return None,
            }
        }
        settings.rate = match (rate, per) {
            (Some(rate), Some(per)) => Some((rate, per)),
            (None, None) => None,
            _ => return None,
        };
        Some(settings)
    }

    /// The text `<q>groups` keeps: empty for the defaults (kept as no field).
    pub(crate) fn text(&self) -> String {
        let mut words = Vec::new();
        if self.weight != 1 {
            words.push(format!("WEIGHT {}", self.weight));
        }
        if let Some(cap) = self.cap {
            words.push(format!("CAP {cap}"));
        }
        if let Some((rate, per)) = self.rate {
            words.push(format!("RATE {rate} PER {per}"));
        }
        if let Some(max) = self.max {
            words.push(format!("MAX {max}"));
        }
        if self.paused {
            words.push("PAUSED 1".to_owned());
        }
        words.join(" ")
    }

    /// How far one job served moves the group's tag on.
    pub(crate) fn step(&self) -> u64 {
        UNIT / self.weight
    }
}

/// Where a group stands: what GROUPS shows and where the index keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Standing {
    /// A claim may take from it: in `<q>ready`.
    Ready,
    /// Nothing pending.
    Idle,
    /// Paused.
    Paused,
    /// As many running as its cap.
    Capped,
    /// Its rate spent until the server's ms given: in `<q>gwait`.
    Limited(u64),
}

impl Standing {
    /// The word GROUPS answers.
    pub(crate) fn word(self) -> &'static str {
        match self {
            Standing::Ready => "ready",
            Standing::Idle => "idle",
            Standing::Paused => "paused",
            Standing::Capped => "capped",
            Standing::Limited(_) => "limited",
        }
    }
}

/// What a group holds now, as read.
#[derive(Clone, Debug)]
pub(crate) struct Load {
    pub(crate) settings: Settings,
    pub(crate) pending: u64,
    pub(crate) running: u64,
    /// Claims in its rate window, and the rate log's entries that left it.
    pub(crate) logged: u64,
    pub(crate) expired: Vec<Vec<u8>>,
    /// When the oldest claim in the window leaves it (with a rate set).
    pub(crate) frees: Option<u64>,
}

impl Load {
    /// Where the group stands with this load, at `now`.
    pub(crate) fn standing(&self) -> Standing {
        let Settings { cap, rate, paused, .. } = self.settings;
        if paused {
            return Standing::Paused;
        }
        if self.pending == 0 {
            return Standing::Idle;
        }
        if cap.is_some_and(|cap| self.running >= cap) {
            return Standing::Capped;
        }
        match (rate, self.frees) {
            (Some((limit, _)), Some(frees)) if self.logged >= limit => Standing::Limited(frees),
            _ => Standing::Ready,
        }
    }
}

/// A queue's groups, as a transition that moves jobs sees them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Grouping<'p> {
    pub(crate) keys: GroupKeys<'p>,
}

impl<'p> Grouping<'p> {
    /// The queue's groups when it has grouped jobs (`<q>group` exists, a
    /// hash: `EMQTYPE` otherwise): `None` costs one lookup. The caller
    /// checks the other keys it touches.
    pub(crate) fn open<S: Store>(store: &mut S, prefix: &'p [u8]) -> Result<Option<Grouping<'p>>, Refusal> {
        let grouping = Grouping { keys: GroupKeys { prefix } };
        Ok(found(store, &grouping.keys.membership(), KeyType::Hash)?.then_some(grouping))
    }

    /// [`open`](Grouping::open), and the fixed keys every placing of a
    /// group touches checked.
    pub(crate) fn open_checked<S: Store>(
        store: &mut S,
        prefix: &'p [u8],
    ) -> Result<Option<Grouping<'p>>, Refusal> {
        let Some(grouping) = Grouping::open(store, prefix)? else { return Ok(None) };
        grouping.check(store)?;
        Ok(Some(grouping))
    }

    /// The groups of a queue, whether or not it has grouped jobs yet.
    pub(crate) fn of(prefix: &'p [u8]) -> Grouping<'p> {
        Grouping { keys: GroupKeys { prefix } }
    }

    /// The types of the fixed keys: two hashes and four sorted sets (the
    /// wake-up key among them, which placing a group may set).
    pub(crate) fn check<S: Store>(&self, store: &mut S) -> Result<(), Refusal> {
        need(store, &self.keys.membership(), KeyType::Hash)?;
        need(store, &self.keys.settings(), KeyType::Hash)?;
        for key in [self.keys.names(), self.keys.ready(), self.keys.wait(), self.keys.wake()] {
            need(store, &key, KeyType::Zset)?;
        }
        Ok(())
    }

    /// The job `id`'s group, if it has one.
    pub(crate) fn group_of<S: Store>(&self, store: &mut S, id: &[u8]) -> Option<Vec<u8>> {
        store.hget(&self.keys.membership(), id)
    }

    /// Each job's group, for the ids that have one, read before any write.
    pub(crate) fn groups_of<S: Store>(&self, store: &mut S, ids: &[Vec<u8>]) -> Vec<Option<Vec<u8>>> {
        ids.iter().map(|id| self.group_of(store, id)).collect()
    }

    /// `group`'s settings, and its keys' types (`EMQTYPE`, `EMQDATA` for
    /// settings that do not read as some): read before any write.
    pub(crate) fn settings<S: Store>(&self, store: &mut S, group: &[u8]) -> Result<Settings, Refusal> {
        for key in [self.keys.pending(group), self.keys.active(group), self.keys.rate(group)] {
            need(store, &key, KeyType::Zset)?;
        }
        let key = self.keys.settings();
        let field = [b"set:", group].concat();
        match store.hget(&key, &field) {
            None => Ok(Settings::default()),
            Some(text) => Settings::parse(&text).ok_or_else(|| malformed(&key, &field, "a group's settings")),
        }
    }

    /// The virtual time and the default group's next tag, and each of
    /// `groups`' settings and own next tag (`set:<g>`, `tag:<g>`), in one
    /// read (`<q>groups`' type checked first; `EMQDATA` for a clock that
    /// is no integer, the groups' fields checked by
    /// [`claim_fields`](Grouping::claim_fields)).
    pub(crate) fn clock<S: Store>(&self, store: &mut S, groups: &[&[u8]]) -> Result<Clock, Refusal> {
        let key = self.keys.settings();
        need(store, &key, KeyType::Hash)?;
        let mut fields: Vec<Vec<u8>> = vec![b"vtime".to_vec(), b"tag:".to_vec()];
        for group in groups {
            fields.push([b"set:", *group].concat());
            fields.push([b"tag:", *group].concat());
        }
        let names: Vec<&[u8]> = fields.iter().map(Vec::as_slice).collect();
        let mut read = store.hmget(&key, &names).into_iter();
        let (vtime, default) = (read.next().flatten(), read.next().flatten());
        let vtime = tag_of(vtime.as_deref(), &key, b"vtime")?;
        let default = tag_of(default.as_deref(), &key, b"tag:")?;
        let mut fields = Vec::with_capacity(groups.len());
        while let (Some(set), Some(tag)) = (read.next(), read.next()) {
            fields.push((set, tag));
        }
        Ok(Clock { vtime, default, fields })
    }

    /// What a claim reads of `group`, each key's type checked before it
    /// is read (a store that opens keys opens it once): its settings and
    /// its own next tag, as [`clock`](Grouping::clock) read them (`text`,
    /// `own`); its first `window` pending ids unless it is paused; its
    /// running count when it has a cap (its leases' type checked either
    /// way); its rate log's type with a rate. Then `EMQDATA` for a tag
    /// that is no integer.
    pub(crate) fn claim_fields<S: Store>(
        &self,
        store: &mut S,
        group: &[u8],
        window: usize,
        (text, own): GroupFields,
    ) -> Result<ClaimFields, Refusal> {
        let key = self.keys.settings();
        let settings = match text {
            None => Settings::default(),
            Some(text) => Settings::parse(&text)
                .ok_or_else(|| malformed(&key, &[b"set:", group].concat(), "a group's settings"))?,
        };
        let pending = self.keys.pending(group);
        need(store, &pending, KeyType::Zset)?;
        let ids = if settings.paused { Vec::new() } else { store.zhead(&pending, window) };
        let active = self.keys.active(group);
        need(store, &active, KeyType::Zset)?;
        let running = if settings.cap.is_some() { store.zcard(&active) } else { 0 };
        if settings.rate.is_some() {
            need(store, &self.keys.rate(group), KeyType::Zset)?;
        }
        let tag = tag_of(own.as_deref(), &key, &[b"tag:", group].concat())?;
        Ok(ClaimFields { settings, tag, ids, running })
    }

    /// What `group` holds now (its settings read before), at `now` when it
    /// has a rate.
    pub(crate) fn load<S: Store>(&self, store: &mut S, group: &[u8], settings: Settings, now: u64) -> Load {
        let pending = store.zcard(&self.keys.pending(group));
        let running = store.zcard(&self.keys.active(group));
        self.load_counted(store, group, settings, now, (pending, running))
    }

    /// [`load`](Grouping::load) with its pending and running counts known.
    pub(crate) fn load_counted<S: Store>(
        &self,
        store: &mut S,
        group: &[u8],
        settings: Settings,
        now: u64,
        (pending, running): (u64, u64),
    ) -> Load {
        let mut load = Load { settings, pending, running, logged: 0, expired: Vec::new(), frees: None };
        if let Some((_, per)) = settings.rate {
            let log = self.keys.rate(group);
            let edge = now.saturating_sub(per) as f64;
            let mut expired = store.zupto(&log, edge, usize::MAX);
            load.logged = store.zcard(&log) - expired.len() as u64;
            expired.truncate(*SWEEP_LIMIT.end() as usize);
            load.expired = expired;
            load.frees = Some(
                store.zfirst_above(&log, edge).map_or(now + per, |oldest| oldest as u64 + per).max(now + 1),
            );
        }
        load
    }

    /// The job `id` of `group` enters pending at `priority`, after its
    /// record's write: `<q>pending` past the ungrouped jobs, the group's own
    /// set, the group known, and ready if a claim may take from it.
    pub(crate) fn enter_pending<S: Store>(
        &self,
        store: &mut S,
        pending: &[u8],
        id: &[u8],
        group: &[u8],
        priority: f64,
    ) {
        self.join(store, pending, id, group, priority);
        self.reindex(store, group);
    }

    /// [`enter_pending`](Grouping::enter_pending) but the group's place, which
    /// the caller puts once for many jobs (ENQUEUEMANY).
    pub(crate) fn join<S: Store>(
        &self,
        store: &mut S,
        pending: &[u8],
        id: &[u8],
        group: &[u8],
        priority: f64,
    ) {
        store.zadd(pending, GROUPED + priority, id);
        store.zadd(&self.keys.pending(group), priority, id);
        store.zadd(&self.keys.names(), 0.0, group);
    }

    /// The job `id` of `group` leaves pending other than by a claim
    /// (cancelled, removed, drained): out of the group's set.
    pub(crate) fn off_pending<S: Store>(&self, store: &mut S, id: &[u8], group: &[u8]) {
        store.zrem(&self.keys.pending(group), id);
        self.reindex(store, group);
    }

    /// The job `id` of `group` leaves its lease (acked, failed, released,
    /// reaped, …): out of the group's leases, and the group ready again if
    /// its cap held it back.
    pub(crate) fn off_active<S: Store>(&self, store: &mut S, id: &[u8], group: &[u8]) {
        store.zrem(&self.keys.active(group), id);
        self.reindex(store, group);
    }

    /// The record of `id` is deleted: its group is forgotten.
    pub(crate) fn forget<S: Store>(&self, store: &mut S, id: &[u8]) {
        store.hdel(&self.keys.membership(), id);
    }

    /// Put `group` where it stands: in `<q>ready` (at its start tag: its
    /// own next tag, or the virtual time if later, so that an idle group
    /// earns no credit; a group there already keeps its place), in
    /// `<q>gwait` until its rate frees, or in neither; a group with nothing
    /// pending or running and no settings is forgotten. Settings that do
    /// not read are left as they are (a claim refuses them).
    pub(crate) fn reindex<S: Store>(&self, store: &mut S, group: &[u8]) {
        let Ok(settings) = self.settings(store, group) else { return };
        self.place(store, group, settings);
    }

    /// [`reindex`](Grouping::reindex) with `group`'s settings read (and
    /// its keys checked) before the call's first write: no write of a
    /// transition but GROUP's changes them. A group that enters `<q>ready`
    /// sets the wake-up key, so that a claim waiting for work looks again:
    /// its slot freed under its cap, its window freed, it was resumed.
    pub(crate) fn place<S: Store>(&self, store: &mut S, group: &[u8], settings: Settings) {
        if self.settle(store, group, settings) {
            store.wake(&self.keys.wake());
        }
    }

    /// [`place`](Grouping::place) without the wake-up: whether the group
    /// entered `<q>ready`.
    pub(crate) fn settle<S: Store>(&self, store: &mut S, group: &[u8], settings: Settings) -> bool {
        let mut entered = false;
        let now = if settings.rate.is_some() { store.now_ms() } else { 0 };
        let load = self.load(store, group, settings, now);
        let (ready, wait) = (self.keys.ready(), self.keys.wait());
        match load.standing() {
            Standing::Ready => {
                store.zrem(&wait, group);
                if store.zscore(&ready, group).is_none() {
                    let start = self.start(store, group);
                    store.zadd(&ready, start as f64, group);
                    entered = true;
                }
            }
            Standing::Limited(frees) => {
                store.zrem(&ready, group);
                store.zadd(&wait, frees as f64, group);
            }
            _ => {
                store.zrem(&ready, group);
                store.zrem(&wait, group);
            }
        }
        if load.pending == 0 && load.running == 0 && settings == Settings::default() {
            self.tidy(store, group);
        }
        entered
    }

    /// The tag `group` starts at on entering `<q>ready`: its own, or the
    /// virtual time if later.
    fn start<S: Store>(&self, store: &mut S, group: &[u8]) -> u64 {
        let key = self.keys.settings();
        let own = [b"tag:", group].concat();
        let tags = store.hmget(&key, &[&own, b"vtime"]);
        let tag =
            |at: usize| tags.get(at).and_then(|tag| tag_of(tag.as_deref(), &key, b"").ok()).unwrap_or(0);
        tag(0).max(tag(1))
    }

    /// Forget a group that holds nothing and has no settings.
    fn tidy<S: Store>(&self, store: &mut S, group: &[u8]) {
        store.zrem(&self.keys.names(), group);
        store.hdel(&self.keys.settings(), &[b"tag:", group].concat());
        store.del(&self.keys.rate(group));
    }
}

/// The clock of a queue's groups and its candidates' fields, read at once
/// ([`Grouping::clock`]).
#[derive(Debug)]
pub(crate) struct Clock {
    pub(crate) vtime: u64,
    /// The default group's next tag.
    pub(crate) default: u64,
    /// Each group's `set:<g>` and `tag:<g>`, as read, in the order asked.
    pub(crate) fields: Vec<GroupFields>,
}

/// A group's `set:<g>` and `tag:<g>` in `<q>groups`, as read.
pub(crate) type GroupFields = (Option<Vec<u8>>, Option<Vec<u8>>);

/// What a claim reads of a group ([`Grouping::claim_fields`]).
pub(crate) struct ClaimFields {
    pub(crate) settings: Settings,
    /// Its own next tag (0 when it has none).
    pub(crate) tag: u64,
    /// Its first pending ids, in order (none read when it is paused).
    pub(crate) ids: Vec<Vec<u8>>,
    /// Its running count, read only when it has a cap (0 otherwise).
    pub(crate) running: u64,
}

/// A tag as `<q>groups` keeps it: 0 when absent, `EMQDATA` when no integer.
fn tag_of(value: Option<&[u8]>, key: &[u8], field: &[u8]) -> Result<u64, Refusal> {
    Ok(stored(value, key, field)?.map_or(0, |tag| tag.max(0) as u64))
}

/// The names and settings text of GROUP's and GROUPS' replies: `[name,
/// pending, running, standing, settings]`.
pub(crate) fn row<S: Store>(
    store: &mut S,
    grouping: &Grouping<'_>,
    group: &[u8],
) -> Result<crate::Reply, Refusal> {
    use crate::Reply;
    let settings = grouping.settings(store, group)?;
    let now = if settings.rate.is_some() { store.now_ms() } else { 0 };
    let load = grouping.load(store, group, settings, now);
    Ok(Reply::Array(vec![
        Reply::Bulk(group.to_vec()),
        Reply::count(load.pending),
        Reply::count(load.running),
        Reply::Bulk(load.standing().word().as_bytes().to_vec()),
        Reply::Bulk(settings.text().into_bytes()),
    ]))
}

/// A refusal naming a group that is full.
pub(crate) fn full(group: &[u8], max: u64) -> Refusal {
    Refusal::new(crate::Code::Full, format!("group {} holds its MAX of {max} pending jobs", lossy(group)))
}
