//! [`RedisStore`]: `echomq_core::Store` over the Redis module API, so the
//! core's transitions run inside Redis, in the command's own atomic step.
//!
//! Reads and writes go through the low-level key API (`RedisModule_OpenKey`,
//! `HashGet`/`HashSet`, `Zset*`), which skips the command table, argument
//! parsing and reply buffers that `RedisModule_Call` pays for on every write.
//! Only `hgetall` (INSPECT, read-only) goes through `RedisModule_Call`, so the
//! fields come back in exactly the order `HGETALL` gives the Lua script.
//!
//! The low-level API leaves to its caller what a command would do around a
//! write, so the store does it:
//! - **Replication**: each write is replicated as the plain command Lua would
//!   have run (`HSET`, `ZADD`, `ZREM`, `HDEL`, `DEL`, `XADD`), never the `EMQ.*`
//!   command itself, so replicas and the AOF need no module. A write that
//!   changed nothing is not replicated, as Redis does not propagate one.
//! - **Keyspace events**: `hset`, `hdel`, `zadd`, `zrem`, `xadd`, `xtrim` and
//!   `del` (when a write empties a key), as the commands fire them.
//! - **One command per batch of removals**: the scripts remove the ids they
//!   pop with one `ZREM key id…`, where the core calls `zrem` once per id. So
//!   consecutive removals from one key are announced together, when the next
//!   other call comes (or the store goes): one `zrem` event, one replicated
//!   `ZREM` with every id, then `del` if the key emptied, exactly as Lua.
//! - **One replicated command per batch of additions**: the ids one call
//!   adds to a sorted set (a claim's to active, ENQUEUEMANY's to pending,
//!   ACKMANY's to done) are replicated as one `ZADD key score id…`, when the
//!   call next writes that key otherwise, adds to another set, or ends.
//!   Redis replicates each command on its own (about 3k instructions, the
//!   command looked up by name each time), and the writes between them are
//!   to other keys, so the replica ends the same. The data is written, and
//!   each `zadd` event fired, at once, in the scripts' order: only the
//!   replication waits.
//! - **WATCH**: a key counts as modified only when a write changed it (the
//!   module turns off the implicit signal of every key opened to write).
//! - **Waking blocked claims**: every `zadd` that changed a set signals the
//!   key as ready, as `ZADD` does for a `BZPOPMIN` waiter.

use std::ffi::CStr;
use std::os::raw::c_int;

use echomq_core::{KeyType, Store};
use redis_module::raw;

use crate::api::{self, Key, RString};
use crate::slot;

/// The store one command (or one wake-up of a blocked claim) runs on.
pub(crate) struct RedisStore {
    ctx: *mut raw::RedisModuleCtx,
    /// The command's instant: one transition reads the clock once.
    now: Option<u64>,
    /// In cluster mode, the hash tag every key must share (see [`slot`]).
    tag: Option<Vec<u8>>,
    /// In cluster mode, the command's first declared key: Redis itself
    /// refused the command (ASK, TRYAGAIN) had it been missing here while
    /// its slot moved, so it needs no look of ours ([`Store::slot_moving`]).
    first: Option<Vec<u8>>,
    /// Whether the slot moves, once asked: one command is one moment.
    moving: Option<bool>,
    /// A key outside that slot was asked for: every later read sees nothing,
    /// every later write is dropped, and the command answers `CROSSSLOT`.
    crossed: bool,
    /// Removals done but not yet announced (see the module docs).
    removals: Option<Removals>,
    /// Additions done but not yet announced (see the module docs).
    additions: Option<Additions>,
    /// The key read last, opened (`None`: it does not exist), kept for the
    /// next read of it: a type check and the read after it open the key
    /// once. Any write drops it first.
    last_read: Option<(Vec<u8>, Option<Key>)>,
    /// Whether a write was announced (replicated) yet.
    announced: std::cell::Cell<bool>,
}

/// Additions to one sorted set, not necessarily consecutive.
struct Additions {
    key: Vec<u8>,
    name: RString,
    /// Score, member, score, member…, as `ZADD` takes them.
    pairs: Vec<RString>,
}

/// Consecutive removals of members (or fields) from one key, kept open
/// until they are announced: nothing else runs in between.
struct Removals {
    zset: bool,
    key: Vec<u8>,
    name: RString,
    open: Key,
    members: Vec<RString>,
}

impl RedisStore {
    /// A store for a command whose first declared key is `first_key`.
    pub(crate) fn new(ctx: *mut raw::RedisModuleCtx, first_key: &[u8]) -> RedisStore {
        let cluster = api::context_flags(ctx) & raw::REDISMODULE_CTX_FLAGS_CLUSTER != 0;
        let tag = cluster.then(|| slot::hash_tag(first_key).to_vec());
        let first = cluster.then(|| first_key.to_vec());
        RedisStore {
            ctx,
            now: None,
            tag,
            first,
            moving: None,
            crossed: false,
            removals: None,
            additions: None,
            last_read: None,
            announced: std::cell::Cell::new(false),
        }
    }

    /// Whether the command wrote anything: announced, or still to be.
    pub(crate) fn wrote(&self) -> bool {
        self.announced.get()
            || self.additions.is_some()
            || self.removals.as_ref().is_some_and(|batch| !batch.members.is_empty())
    }

    /// Whether the command touched a key outside its slot (so wrote nothing).
    pub(crate) fn crossed_slot(&self) -> bool {
        self.crossed
    }

    /// Whether `key` may be touched; the first key that may not poisons the store.
    fn admit(&mut self, key: &[u8]) -> bool {
        if let Some(tag) = &self.tag {
            if slot::hash_tag(key) != tag.as_slice() {
                self.crossed = true;
            }
        }
        !self.crossed
    }

    /// `key`, opened to read, when it may be touched and holds a value:
    /// the key read last is not opened again.
    fn read(&mut self, key: &[u8]) -> Option<&Key> {
        self.flush();
        if !self.admit(key) {
            return None;
        }
        if self.last_read.as_ref().is_none_or(|(name, _)| name != key) {
            self.last_read = Some((key.to_vec(), Key::read(self.ctx, &RString::new(key))));
        }
        self.last_read.as_ref().and_then(|(_, open)| open.as_ref())
    }

    /// `key`, opened to write, with its name, when it may be touched and is
    /// empty or of type `kind` (the core checked; this only guards a bug).
    fn write(&mut self, key: &[u8], kind: isize) -> Option<(Key, RString)> {
        self.last_read = None;
        if !self.admit(key) {
            return None;
        }
        let name = RString::new(key);
        let open = Key::write(self.ctx, &name)?;
        let found = open.kind();
        (found == kind || found == raw::REDISMODULE_KEYTYPE_EMPTY).then_some((open, name))
    }

    /// Replicate `command key args…` and fire `event` on the key.
    fn effect(&self, class: c_int, event: &CStr, command: &CStr, name: &RString, args: &[&RString]) {
        self.announced.set(true);
        api::signal_modified(self.ctx, name);
        api::notify(self.ctx, class, event, name);
        let mut argv = Vec::with_capacity(args.len() + 1);
        argv.push(name);
        argv.extend_from_slice(args);
        api::replicate(self.ctx, command, &argv);
    }

    /// Remove `member` from the zset (or hash) `key`, announcing it later
    /// together with the removals from the same key that follow.
    fn remove(&mut self, zset: bool, key: &[u8], member: &[u8]) {
        self.announce_additions_to(key);
        if self.removals.as_ref().is_some_and(|batch| batch.zset != zset || batch.key != key) {
            self.flush();
        }
        let kind = if zset { raw::REDISMODULE_KEYTYPE_ZSET } else { raw::REDISMODULE_KEYTYPE_HASH };
        if self.removals.is_none() {
            let Some((open, name)) = self.write(key, kind) else { return };
            self.removals = Some(Removals { zset, key: key.to_vec(), name, open, members: Vec::new() });
        }
        let Some(batch) = self.removals.as_mut() else { return };
        let member = RString::new(member);
        let open = &batch.open;
        let removed =
            open.kind() == kind && if zset { open.zset_rem(&member) } else { open.hash_del(&member) };
        if removed {
            batch.members.push(member);
        }
    }

    /// Announce the pending removals: the event, the replicated command, and
    /// the key's deletion (with its `del` event) when they emptied it.
    fn flush(&mut self) {
        let Some(batch) = self.removals.take() else { return };
        self.last_read = None;
        let (class, event, command) = if batch.zset {
            (raw::REDISMODULE_NOTIFY_ZSET, c"zrem", c"ZREM")
        } else {
            (raw::REDISMODULE_NOTIFY_HASH, c"hdel", c"HDEL")
        };
        if batch.members.is_empty() {
            return;
        }
        let members: Vec<&RString> = batch.members.iter().collect();
        self.effect(class, event, command, &batch.name, &members);
        if batch.open.len() == 0 {
            batch.open.delete();
            api::notify(self.ctx, raw::REDISMODULE_NOTIFY_GENERIC, c"del", &batch.name);
        }
    }

    /// Announce the pending additions when they are to `key` (a write of
    /// another kind to it comes next: the replica must see them first).
    fn announce_additions_to(&mut self, key: &[u8]) {
        if self.additions.as_ref().is_some_and(|batch| batch.key == key) {
            self.announce_additions();
        }
    }

    /// Replicate the pending additions: one `ZADD` with every pair.
    fn announce_additions(&mut self) {
        let Some(batch) = self.additions.take() else { return };
        let mut argv = Vec::with_capacity(batch.pairs.len() + 1);
        argv.push(&batch.name);
        argv.extend(&batch.pairs);
        self.announced.set(true);
        api::replicate(self.ctx, c"ZADD", &argv);
    }
}

impl Drop for RedisStore {
    fn drop(&mut self) {
        self.flush();
        self.announce_additions();
    }
}

impl Store for RedisStore {
    fn now_ms(&mut self) -> u64 {
        *self.now.get_or_insert_with(api::now_ms)
    }

    fn key_type(&mut self, key: &[u8]) -> KeyType {
        let Some(open) = self.read(key) else { return KeyType::None };
        match open.kind() {
            raw::REDISMODULE_KEYTYPE_EMPTY => KeyType::None,
            raw::REDISMODULE_KEYTYPE_HASH => KeyType::Hash,
            raw::REDISMODULE_KEYTYPE_ZSET => KeyType::Zset,
            raw::REDISMODULE_KEYTYPE_STRING => KeyType::Other("string"),
            raw::REDISMODULE_KEYTYPE_LIST => KeyType::Other("list"),
            raw::REDISMODULE_KEYTYPE_SET => KeyType::Other("set"),
            raw::REDISMODULE_KEYTYPE_STREAM => KeyType::Stream,
            // `TYPE` would name the module's own type; no such key is ever a queue's.
            _ => KeyType::Other("module"),
        }
    }

    /// Outside a cluster, never; in one, for a key the command did not
    /// declare first, as this node's `CLUSTER NODES` says (asked once a
    /// command: it costs tens of µs).
    fn slot_moving(&mut self, key: &[u8]) -> bool {
        if self.tag.is_none() || self.first.as_deref() == Some(key) {
            return false;
        }
        let ctx = self.ctx;
        *self.moving.get_or_insert_with(|| slot::moving(&api::cluster_nodes(ctx), slot::key_slot(key)))
    }

    fn hget(&mut self, key: &[u8], field: &[u8]) -> Option<Vec<u8>> {
        let open = self.read(key)?;
        if open.kind() != raw::REDISMODULE_KEYTYPE_HASH {
            return None;
        }
        open.hash_get(&RString::new(field)).map(|value| value.to_vec())
    }

    fn hmget(&mut self, key: &[u8], fields: &[&[u8]]) -> Vec<Option<Vec<u8>>> {
        match self.read(key) {
            Some(open) if open.kind() == raw::REDISMODULE_KEYTYPE_HASH => fields
                .iter()
                .map(|field| open.hash_get(&RString::new(field)).map(|value| value.to_vec()))
                .collect(),
            _ => vec![None; fields.len()],
        }
    }

    fn hgetall(&mut self, key: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        match self.read(key) {
            Some(open) if open.kind() == raw::REDISMODULE_KEYTYPE_HASH => {
                api::hgetall(self.ctx, &RString::new(key))
            }
            _ => Vec::new(),
        }
    }

    fn hset(&mut self, key: &[u8], fields: &[(&[u8], &[u8])]) {
        self.flush();
        self.announce_additions_to(key);
        let Some((open, name)) = self.write(key, raw::REDISMODULE_KEYTYPE_HASH) else { return };
        let mut args = Vec::with_capacity(fields.len() * 2);
        for (field, value) in fields {
            let (field, value) = (RString::new(field), RString::new(value));
            open.hash_set(&field, &value);
            args.push(field);
            args.push(value);
        }
        let args: Vec<&RString> = args.iter().collect();
        self.effect(raw::REDISMODULE_NOTIFY_HASH, c"hset", c"HSET", &name, &args);
    }

    fn hdel(&mut self, key: &[u8], field: &[u8]) {
        self.remove(false, key, field);
    }

    fn del(&mut self, key: &[u8]) {
        self.flush();
        self.announce_additions_to(key);
        if !self.admit(key) {
            return;
        }
        self.last_read = None;
        let name = RString::new(key);
        let Some(open) = Key::write(self.ctx, &name) else { return };
        if open.kind() != raw::REDISMODULE_KEYTYPE_EMPTY {
            open.delete();
            self.effect(raw::REDISMODULE_NOTIFY_GENERIC, c"del", c"DEL", &name, &[]);
        }
    }

    fn zadd(&mut self, key: &[u8], score: f64, member: &[u8]) {
        self.zadd_many(key, &[(score, member)]);
    }

    fn wake(&mut self, key: &[u8]) {
        self.zadd(key, 0.0, b"1");
        // A native claim blocked on the key (block.rs) is told even when `1`
        // was there already: a ZADD that changes nothing signals no one.
        if !self.crossed {
            api::signal_ready(self.ctx, &RString::new(key));
        }
    }

    fn zadd_many(&mut self, key: &[u8], pairs: &[(f64, &[u8])]) {
        self.flush();
        if self.additions.as_ref().is_some_and(|batch| batch.key != key) {
            self.announce_additions();
        }
        let Some((open, name)) = self.write(key, raw::REDISMODULE_KEYTYPE_ZSET) else { return };
        let mut changed = false;
        for &(score, member) in pairs {
            let member = RString::new(member);
            if open.zset_add(score, &member) {
                changed = true;
                let score = RString::new(score_text(score).as_bytes());
                let batch = self.additions.get_or_insert_with(|| Additions {
                    key: key.to_vec(),
                    name: RString::new(key),
                    pairs: Vec::new(),
                });
                batch.pairs.extend([score, member]);
            }
        }
        // One ZADD of them all fires one event, as the scripts' does.
        if changed {
            api::signal_modified(self.ctx, &name);
            api::notify(self.ctx, raw::REDISMODULE_NOTIFY_ZSET, c"zadd", &name);
            api::signal_ready(self.ctx, &name);
        }
    }

    fn zrem(&mut self, key: &[u8], member: &[u8]) {
        self.remove(true, key, member);
    }

    fn xlen(&mut self, key: &[u8]) -> u64 {
        match self.read(key) {
            Some(open) if open.kind() == raw::REDISMODULE_KEYTYPE_STREAM => open.len() as u64,
            _ => 0,
        }
    }

    fn zcard(&mut self, key: &[u8]) -> u64 {
        match self.read(key) {
            Some(open) if open.kind() == raw::REDISMODULE_KEYTYPE_ZSET => open.len() as u64,
            _ => 0,
        }
    }

    fn zscore(&mut self, key: &[u8], member: &[u8]) -> Option<f64> {
        match self.read(key) {
            Some(open) if open.kind() == raw::REDISMODULE_KEYTYPE_ZSET => {
                open.zset_score(&RString::new(member))
            }
            _ => None,
        }
    }

    fn zhead(&mut self, key: &[u8], count: usize) -> Vec<Vec<u8>> {
        self.zupto(key, f64::INFINITY, count)
    }

    fn zhead_scored(&mut self, key: &[u8], count: usize) -> Vec<(Vec<u8>, f64)> {
        match self.read(key) {
            Some(open) if open.kind() == raw::REDISMODULE_KEYTYPE_ZSET => {
                open.zset_range_scored(f64::NEG_INFINITY, false, f64::INFINITY, count)
            }
            _ => Vec::new(),
        }
    }

    fn zfirst_above(&mut self, key: &[u8], min: f64) -> Option<f64> {
        match self.read(key) {
            Some(open) if open.kind() == raw::REDISMODULE_KEYTYPE_ZSET => {
                open.zset_range_scored(min, true, f64::INFINITY, 1).pop().map(|(_, score)| score)
            }
            _ => None,
        }
    }

    fn zupto(&mut self, key: &[u8], max: f64, limit: usize) -> Vec<Vec<u8>> {
        match self.read(key) {
            Some(open) if open.kind() == raw::REDISMODULE_KEYTYPE_ZSET => {
                open.zset_range(f64::NEG_INFINITY, max, limit)
            }
            _ => Vec::new(),
        }
    }

    fn zafter(&mut self, key: &[u8], after: Option<&[u8]>, limit: usize) -> Vec<Vec<u8>> {
        match self.read(key) {
            Some(open) if open.kind() == raw::REDISMODULE_KEYTYPE_ZSET => open.zset_range_lex(after, limit),
            _ => Vec::new(),
        }
    }

    /// Through the module's stream API, as `XADD key MAXLEN ~ keep * …`:
    /// the entry, then the trim of whole nodes. It is replicated with the id
    /// it got and, when the trim took entries, `MAXLEN =` the length it left,
    /// so a replica (which holds what this stream held) ends the same; the
    /// `xadd` and `xtrim` events fire as the command fires them.
    /// `RedisModule_Call("XADD")` did the same for a tenth more instructions
    /// an entry (`bench/events_cost.py`).
    fn xadd(&mut self, key: &[u8], keep: u64, fields: &[(&[u8], &[u8])]) -> Option<u64> {
        self.flush();
        self.announce_additions_to(key);
        let (open, name) = self.write(key, raw::REDISMODULE_KEYTYPE_STREAM)?;
        let fields: Vec<RString> =
            fields.iter().flat_map(|(field, value)| [RString::new(field), RString::new(value)]).collect();
        let id = open.stream_add(&fields)?;
        let trimmed = open.stream_trim_about(keep) > 0;
        let mut args = Vec::with_capacity(4 + fields.len());
        if trimmed {
            for word in [b"MAXLEN".as_slice(), b"=", open.len().to_string().as_bytes()] {
                args.push(RString::new(word));
            }
        }
        args.push(RString::new(format!("{}-{}", id.ms, id.seq).as_bytes()));
        let mut argv: Vec<&RString> = args.iter().collect();
        argv.extend(&fields);
        drop(open);
        self.effect(raw::REDISMODULE_NOTIFY_STREAM, c"xadd", c"XADD", &name, &argv);
        if trimmed {
            api::notify(self.ctx, raw::REDISMODULE_NOTIFY_STREAM, c"xtrim", &name);
        }
        Some(id.ms)
    }
}

/// A score as `ZADD` takes it: the integer text for the whole numbers the
/// protocol uses (priorities, server ms), so replicas store the same double.
fn score_text(score: f64) -> String {
    if score.fract() == 0.0 && score.abs() < 9.0e15 {
        format!("{}", score as i64)
    } else {
        format!("{score:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::score_text;

    #[test]
    fn scores_travel_as_zadd_reads_them() {
        assert_eq!(score_text(0.0), "0");
        assert_eq!(score_text(-2_147_483_648.0), "-2147483648");
        assert_eq!(score_text(1_700_000_000_123.0), "1700000000123");
        assert_eq!(score_text(0.5), "0.5");
        assert_eq!(score_text(1e300), "1e300");
        assert_eq!("1e300".parse::<f64>(), Ok(1e300));
    }
}
