//! [`Memory`]: an in-process [`Store`] with an injectable [`Clock`], what the
//! embedded executor runs the transitions on. It keeps only what the protocol
//! uses: hashes, sorted sets and streams (and, for tests, a stand-in for any
//! other type).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

// The hash maps of an in-process store: randomly seeded as std's, and faster.
use foldhash::HashMap;

use crate::store::{KeyType, Store};

mod clock;
mod short;
mod stream;

pub use clock::{Clock, ManualClock, SystemClock};
use short::{Score, Short};
use stream::{pack, unpack, Stream};
pub use stream::{Entry, StreamId};

#[derive(Clone, Debug, Default)]
struct Zset {
    scores: HashMap<Short, f64>,
    order: BTreeSet<(Score, Short)>,
}

/// One key's value.
#[derive(Clone, Debug)]
enum Value {
    Hash(BTreeMap<Short, Short>),
    Zset(Zset),
    Stream(Stream),
    /// A string: only plain commands write one (an upkeep lease, PROTOCOL.md §11.3).
    String(Vec<u8>),
    /// A key of a type the protocol never writes (tests put these in the way).
    Other(&'static str),
}

/// A key's content, for comparing keyspaces.
#[derive(Clone, Debug, PartialEq)]
pub enum Dump {
    /// A hash's fields, sorted.
    Hash(BTreeMap<Vec<u8>, Vec<u8>>),
    /// A sorted set's members with their scores, in order.
    Zset(Vec<(Vec<u8>, f64)>),
    /// A stream's entries, in order.
    Stream(Vec<Entry>),
    /// Any other type, by name.
    Other(&'static str),
}

/// An in-process keyspace.
pub struct Memory {
    keys: HashMap<Vec<u8>, Value>,
    clock: Arc<dyn Clock>,
    /// The running transition's instant, once read (see [`Store::now_ms`]).
    instant: Option<u64>,
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memory").field("keys", &self.keys.len()).finish_non_exhaustive()
    }
}

impl Memory {
    /// An empty keyspace on `clock`.
    #[must_use]
    pub fn new(clock: Arc<dyn Clock>) -> Memory {
        Memory { keys: HashMap::default(), clock, instant: None }
    }

    /// Every key with its content, sorted by key.
    #[must_use]
    pub fn dump(&self) -> BTreeMap<Vec<u8>, Dump> {
        self.keys
            .iter()
            .map(|(key, value)| {
                let dump = match value {
                    Value::Hash(fields) => {
                        Dump::Hash(fields.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect())
                    }
                    Value::Zset(zset) => {
                        Dump::Zset(zset.order.iter().map(|(s, m)| (m.to_vec(), s.0)).collect())
                    }
                    Value::Stream(stream) => Dump::Stream(stream.entries.iter().map(unpack).collect()),
                    Value::String(_) => Dump::Other("string"),
                    Value::Other(name) => Dump::Other(name),
                };
                (key.clone(), dump)
            })
            .collect()
    }

    /// Put a value of another type at `key` (a string, say): for tests of `EMQTYPE`.
    pub fn put_other(&mut self, key: &[u8], type_name: &'static str) {
        self.keys.insert(key.to_vec(), Value::Other(type_name));
    }

    /// The string at `key`, if it holds one (`GET`).
    #[must_use]
    pub fn string(&self, key: &[u8]) -> Option<&[u8]> {
        match self.keys.get(key) {
            Some(Value::String(value)) => Some(value),
            _ => None,
        }
    }

    /// Make `key` the string `value` (`SET`), whatever it held.
    pub fn set_string(&mut self, key: &[u8], value: &[u8]) {
        self.keys.insert(key.to_vec(), Value::String(value.to_vec()));
    }

    /// Up to `count` entries of the stream `key` whose ids come after `after`.
    #[must_use]
    pub fn xread(&self, key: &[u8], after: StreamId, count: usize) -> Vec<Entry> {
        match self.keys.get(key) {
            Some(Value::Stream(stream)) => {
                let start = stream.entries.partition_point(|(id, _)| *id <= after);
                stream.entries.range(start..).take(count).map(unpack).collect()
            }
            _ => Vec::new(),
        }
    }

    /// The id of the stream `key`'s newest entry, if it has one.
    #[must_use]
    pub fn xlast(&self, key: &[u8]) -> Option<StreamId> {
        match self.keys.get(key) {
            Some(Value::Stream(stream)) => stream.entries.back().map(|(id, _)| *id),
            _ => None,
        }
    }

    /// Delete the entries of the stream `key` with these ids: how many there
    /// were. The stream stays, empty or not, as Redis keeps it.
    pub fn xdel(&mut self, key: &[u8], ids: &[StreamId]) -> usize {
        let Some(Value::Stream(stream)) = self.keys.get_mut(key) else { return 0 };
        let before = stream.entries.len();
        stream.entries.retain(|(id, _)| !ids.contains(id));
        before - stream.entries.len()
    }

    /// Delete every key.
    pub fn clear(&mut self) {
        self.keys.clear();
    }

    fn hash(&mut self, key: &[u8]) -> Option<&mut BTreeMap<Short, Short>> {
        match self.keys.get_mut(key) {
            Some(Value::Hash(fields)) => Some(fields),
            _ => None,
        }
    }

    fn zset(&mut self, key: &[u8]) -> Option<&mut Zset> {
        match self.keys.get_mut(key) {
            Some(Value::Zset(zset)) => Some(zset),
            _ => None,
        }
    }

    /// The value of `key`, made by `new` when there is none: the key is
    /// copied only then, not for every write to a key that exists.
    fn value_or(&mut self, key: &[u8], new: impl FnOnce() -> Value) -> &mut Value {
        if !self.keys.contains_key(key) {
            self.keys.insert(key.to_vec(), new());
        }
        self.keys.get_mut(key).expect("inserted above")
    }
}

impl Store for Memory {
    fn now_ms(&mut self) -> u64 {
        let clock = &self.clock;
        *self.instant.get_or_insert_with(|| clock.now_ms())
    }

    fn begin(&mut self) {
        self.instant = None;
    }

    fn key_type(&mut self, key: &[u8]) -> KeyType {
        match self.keys.get(key) {
            None => KeyType::None,
            Some(Value::Hash(_)) => KeyType::Hash,
            Some(Value::Zset(_)) => KeyType::Zset,
            Some(Value::Stream(_)) => KeyType::Stream,
            Some(Value::String(_)) => KeyType::Other("string"),
            Some(Value::Other(name)) => KeyType::Other(name),
        }
    }

    fn hget(&mut self, key: &[u8], field: &[u8]) -> Option<Vec<u8>> {
        self.hash(key)?.get(field).map(|value| value.to_vec())
    }

    fn hmget(&mut self, key: &[u8], fields: &[&[u8]]) -> Vec<Option<Vec<u8>>> {
        match self.hash(key) {
            Some(hash) => fields.iter().map(|field| hash.get(*field).map(|value| value.to_vec())).collect(),
            None => vec![None; fields.len()],
        }
    }

    fn hgetall(&mut self, key: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let fields = self.hash(key).into_iter().flatten();
        fields.map(|(field, value)| (field.to_vec(), value.to_vec())).collect()
    }

    fn hset(&mut self, key: &[u8], fields: &[(&[u8], &[u8])]) {
        if let Value::Hash(hash) = self.value_or(key, || Value::Hash(BTreeMap::new())) {
            for (field, v) in fields {
                match hash.get_mut(*field) {
                    // A field set again (a record's state, its attempts): the field's name stays.
                    Some(value) => *value = Short::new(v),
                    None => {
                        hash.insert(Short::new(field), Short::new(v));
                    }
                }
            }
        }
    }

    fn hdel(&mut self, key: &[u8], field: &[u8]) {
        if let Some(hash) = self.hash(key) {
            hash.remove(field);
            if hash.is_empty() {
                self.keys.remove(key);
            }
        }
    }

    fn del(&mut self, key: &[u8]) {
        self.keys.remove(key);
    }

    fn zadd(&mut self, key: &[u8], score: f64, member: &[u8]) {
        if let Value::Zset(zset) = self.value_or(key, || Value::Zset(Zset::default())) {
            match zset.scores.get_mut(member) {
                Some(old) => {
                    let old = std::mem::replace(old, score);
                    // The member's bytes move from its old place in the order to its new one.
                    let (_, member) =
                        zset.order.take(&(Score(old), Short::new(member))).expect("ordered as scored");
                    zset.order.insert((Score(score), member));
                }
                None => {
                    let member = Short::new(member);
                    zset.scores.insert(member.clone(), score);
                    zset.order.insert((Score(score), member));
                }
            }
        }
    }

    fn zrem(&mut self, key: &[u8], member: &[u8]) {
        if let Some(zset) = self.zset(key) {
            if let Some(old) = zset.scores.remove(member) {
                zset.order.remove(&(Score(old), Short::new(member)));
            }
            if zset.scores.is_empty() {
                self.keys.remove(key);
            }
        }
    }

    fn xlen(&mut self, key: &[u8]) -> u64 {
        match self.keys.get(key) {
            Some(Value::Stream(stream)) => stream.entries.len() as u64,
            _ => 0,
        }
    }

    fn zcard(&mut self, key: &[u8]) -> u64 {
        self.zset(key).map_or(0, |zset| zset.scores.len() as u64)
    }

    fn zscore(&mut self, key: &[u8], member: &[u8]) -> Option<f64> {
        self.zset(key)?.scores.get(member).copied()
    }

    fn zhead(&mut self, key: &[u8], count: usize) -> Vec<Vec<u8>> {
        self.zset(key)
            .map(|zset| zset.order.iter().take(count).map(|(_, m)| m.to_vec()).collect())
            .unwrap_or_default()
    }

    fn zhead_scored(&mut self, key: &[u8], count: usize) -> Vec<(Vec<u8>, f64)> {
        self.zset(key)
            .map(|zset| zset.order.iter().take(count).map(|(s, m)| (m.to_vec(), s.0)).collect())
            .unwrap_or_default()
    }

    fn zfirst_above(&mut self, key: &[u8], min: f64) -> Option<f64> {
        self.zset(key).and_then(|zset| zset.order.iter().map(|(s, _)| s.0).find(|score| *score > min))
    }

    fn zupto(&mut self, key: &[u8], max: f64, limit: usize) -> Vec<Vec<u8>> {
        self.zset(key)
            .map(|zset| {
                zset.order
                    .iter()
                    .take_while(|(s, _)| s.0 <= max)
                    .take(limit)
                    .map(|(_, m)| m.to_vec())
                    .collect()
            })
            .unwrap_or_default()
    }

    fn zafter(&mut self, key: &[u8], after: Option<&[u8]>, limit: usize) -> Vec<Vec<u8>> {
        self.zset(key)
            .map(|zset| {
                zset.order
                    .iter()
                    .map(|(_, m)| m)
                    .filter(|m| after.is_none_or(|after| m.as_ref() > after))
                    .take(limit)
                    .map(|m| m.to_vec())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Trims to exactly `keep` entries: "about" `keep`, as Redis's `~` allows.
    fn xadd(&mut self, key: &[u8], keep: u64, fields: &[(&[u8], &[u8])]) -> Option<u64> {
        let now = self.clock.now_ms();
        let Value::Stream(stream) = self.value_or(key, || Value::Stream(Stream::default())) else {
            return None;
        };
        {
            let last = stream.last;
            let id = if now > last.ms {
                StreamId { ms: now, seq: 0 }
            } else {
                StreamId { seq: last.seq + 1, ..last }
            };
            stream.last = id;
            stream.entries.push_back((id, pack(fields)));
            while stream.entries.len() as u64 > keep {
                stream.entries.pop_front();
            }
            Some(id.ms)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One transition sees one instant, however long it takes: a clock that
    /// moves at every reading is read once a call. (An ACKMANY of two jobs
    /// on the embedded executor once stamped them a millisecond apart.)
    #[test]
    fn a_transition_reads_the_clock_once() {
        use crate::{Name, Reply};
        use std::sync::atomic::{AtomicU64, Ordering};
        struct Ticking(AtomicU64);
        impl Clock for Ticking {
            fn now_ms(&self) -> u64 {
                self.0.fetch_add(1, Ordering::SeqCst)
            }
        }
        let mut store = Memory::new(Arc::new(Ticking(AtomicU64::new(1_000))));
        let ids = [b"JOB_00000000000000000000000001".as_slice(), b"JOB_00000000000000000000000002"];
        for id in ids {
            let record = [b"emq:{q}:job:".as_slice(), id].concat();
            let keys = [record.as_slice(), b"emq:{q}:pending"];
            assert_eq!(Name::Enqueue.run(&mut store, &keys, &[id, b"p"]), Ok(Reply::Int(1)));
        }
        let claim = ["pending", "active", "config", "rate", "policy", "events", "headers", "wake"]
            .map(|key| format!("emq:{{q}}:{key}"));
        let claim = claim.each_ref().map(|key| key.as_bytes());
        let claimed = Name::Claim.run(&mut store, &claim, &[b"60000", b"COUNT", b"2"]);
        assert!(matches!(&claimed, Ok(Reply::Array(jobs)) if jobs.len() == 2), "{claimed:?}");
        let acks = ["active", "done", "results", "events", "config"].map(|key| format!("emq:{{q}}:{key}"));
        let acks = acks.each_ref().map(|key| key.as_bytes());
        let acked = Name::AckMany.run(&mut store, &acks, &[ids[0], b"1", ids[1], b"1"]);
        assert_eq!(acked, Ok(Reply::Array(vec![Reply::Int(1), Reply::Int(1)])));
        let Some(Dump::Zset(done)) = store.dump().remove(b"emq:{q}:done".as_slice()) else {
            panic!("no done set")
        };
        let at: Vec<f64> = done.iter().map(|(_, score)| *score).collect();
        assert_eq!(at.len(), 2);
        assert_eq!(at[0], at[1], "both jobs finished at the call's one instant: {done:?}");
    }

    /// Members kept in place (30 bytes or fewer) and on the heap (more)
    /// order, match and move as their bytes do, across the boundary.
    #[test]
    fn short_and_long_members_are_one_order() {
        let mut store = Memory::new(Arc::new(ManualClock::new(0)));
        let member = |len: usize, last: u8| {
            let mut bytes = vec![b'm'; len];
            bytes[len - 1] = last;
            bytes
        };
        let (inline, heap, longer) = (member(30, b'b'), member(31, b'a'), member(31, b'c'));
        for key in [&inline, &heap, &longer] {
            store.zadd(b"z", 1.0, key);
            store.hset(b"h", &[(key, key)]);
        }
        let mut want = vec![inline.clone(), heap.clone(), longer.clone()];
        want.sort();
        assert_eq!(store.zhead(b"z", 10), want);
        assert_eq!(store.zscore(b"z", &heap), Some(1.0));
        store.zadd(b"z", 0.0, &longer);
        assert_eq!(store.zhead(b"z", 1), std::slice::from_ref(&longer), "a heap member moved by its bytes");
        store.zrem(b"z", &inline);
        store.zrem(b"z", &heap);
        assert_eq!(store.zcard(b"z"), 1);
        assert_eq!(store.hget(b"h", &heap), Some(heap.clone()));
        assert_eq!(store.hmget(b"h", &[&inline, b"none", &longer]), [Some(inline), None, Some(longer)]);
    }

    #[test]
    fn sorted_sets_order_by_score_then_member_bytes() {
        let mut store = Memory::new(Arc::new(ManualClock::new(0)));
        store.zadd(b"z", 1.0, b"b");
        store.zadd(b"z", 1.0, b"a");
        store.zadd(b"z", -1.0, b"c");
        store.zadd(b"z", 5.0, b"a");
        assert_eq!(store.zhead(b"z", 10), [b"c".to_vec(), b"b".to_vec(), b"a".to_vec()]);
        assert_eq!(store.zupto(b"z", 1.0, 10), [b"c".to_vec(), b"b".to_vec()]);
        assert_eq!(store.zupto(b"z", 1.0, 1), [b"c".to_vec()]);
        store.zrem(b"z", b"c");
        store.zrem(b"z", b"b");
        store.zrem(b"z", b"a");
        assert_eq!(store.key_type(b"z"), KeyType::None, "an emptied set is gone, as in Redis");
    }

    #[test]
    fn stream_ids_grow_and_trimming_keeps_the_newest() {
        let clock = Arc::new(ManualClock::new(5));
        let mut store = Memory::new(clock.clone());
        for n in 0..4u8 {
            store.xadd(b"s", 3, &[(b"n", &[b'0' + n])]);
        }
        let ids: Vec<String> =
            store.xread(b"s", StreamId::default(), 10).iter().map(|(id, _)| id.to_string()).collect();
        assert_eq!(ids, ["5-1", "5-2", "5-3"], "the oldest went; ids within a millisecond count up");
        clock.set(2);
        store.xadd(b"s", 3, &[(b"n", b"4")]);
        assert_eq!(
            store.xlast(b"s"),
            Some(StreamId { ms: 5, seq: 4 }),
            "a clock that went back does not reuse ids"
        );
        assert_eq!(store.xread(b"s", "5-3".parse().unwrap(), 10).len(), 1);
        assert_eq!(store.key_type(b"s"), KeyType::Stream);
    }

    #[test]
    fn a_stream_entry_reads_back_its_fields_as_written() {
        let mut store = Memory::new(Arc::new(ManualClock::new(1)));
        let fields: [(&[u8], &[u8]); 4] = [
            (b"event", b"completed"),
            (b"", b"empty name"),
            (b"empty value", b""),
            (b"bytes", &[0, 255, 10]),
        ];
        store.xadd(b"s", 10, &fields);
        store.xadd(b"s", 10, &[]);
        let read = store.xread(b"s", StreamId::default(), 10);
        let written: Vec<(Vec<u8>, Vec<u8>)> = fields.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect();
        assert_eq!(read[0].1, written);
        assert!(read[1].1.is_empty(), "an entry of no fields");
        assert!(matches!(&store.dump()[&b"s".to_vec()], Dump::Stream(entries) if entries[0].1 == written));
    }

    #[test]
    fn hashes_vanish_when_emptied() {
        let mut store = Memory::new(Arc::new(ManualClock::new(0)));
        store.hset(b"h", &[(b"f", b"v")]);
        assert_eq!(store.hget(b"h", b"f"), Some(b"v".to_vec()));
        store.hdel(b"h", b"f");
        assert_eq!(store.key_type(b"h"), KeyType::None);
    }
}
