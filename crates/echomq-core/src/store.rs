//! What the transitions need from storage: hashes, sorted sets, key types and
//! the clock. Redis (through the module) and the in-process [`Memory`] store
//! both provide it.
//!
//! [`Memory`]: crate::memory::Memory

/// The Redis type of a key, as `TYPE` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyType {
    /// No such key.
    None,
    /// A hash.
    Hash,
    /// A sorted set.
    Zset,
    /// A stream.
    Stream,
    /// Any other type, by its `TYPE` name (`string`, `list`, …).
    Other(&'static str),
}

impl KeyType {
    /// The name `TYPE` answers with.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            KeyType::None => "none",
            KeyType::Hash => "hash",
            KeyType::Zset => "zset",
            KeyType::Stream => "stream",
            KeyType::Other(name) => name,
        }
    }
}

/// Storage the transitions run on. Methods are only called on keys whose type
/// was checked first, so they need not report type errors; a storage failure
/// they cannot hide (out of memory) is the store's own to raise.
pub trait Store {
    /// The clock, in ms since the Unix epoch: the server's, for Redis. One
    /// transition sees one instant, as one command does: every reading after
    /// the first, until the next [`begin`](Store::begin), is the first.
    fn now_ms(&mut self) -> u64;
    /// A transition begins: the next [`now_ms`](Store::now_ms) reads the
    /// clock anew. A store made for one command (the module's) has nothing to do.
    fn begin(&mut self) {}
    /// The type of `key`.
    fn key_type(&mut self, key: &[u8]) -> KeyType;
    /// Whether `key`'s Redis Cluster slot is being moved to or from this
    /// node, so that a key missing here may be on the other node. Asked only
    /// when a record is missing; never, outside a cluster.
    fn slot_moving(&mut self, key: &[u8]) -> bool {
        let _ = key;
        false
    }
    /// One field of a hash.
    fn hget(&mut self, key: &[u8], field: &[u8]) -> Option<Vec<u8>>;
    /// Several fields of a hash, in order: a store that opens keys opens it once.
    fn hmget(&mut self, key: &[u8], fields: &[&[u8]]) -> Vec<Option<Vec<u8>>> {
        fields.iter().map(|field| self.hget(key, field)).collect()
    }
    /// Every field of a hash, as field/value pairs.
    fn hgetall(&mut self, key: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)>;
    /// Set fields of a hash, creating it when missing.
    fn hset(&mut self, key: &[u8], fields: &[(&[u8], &[u8])]);
    /// Add `by` to an integer field of a hash (absent: 0) and answer the sum;
    /// the caller has checked the field holds an integer.
    fn hincrby(&mut self, key: &[u8], field: &[u8], by: i64) -> i64 {
        let old = self.hget(key, field).and_then(|v| std::str::from_utf8(&v).ok()?.parse::<i64>().ok());
        let sum = old.unwrap_or(0) + by;
        self.hset(key, &[(field, sum.to_string().as_bytes())]);
        sum
    }
    /// Delete a field of a hash (and the hash when it empties).
    fn hdel(&mut self, key: &[u8], field: &[u8]);
    /// Delete a key.
    fn del(&mut self, key: &[u8]);
    /// Add a member to a sorted set or move it to `score`.
    fn zadd(&mut self, key: &[u8], score: f64, member: &[u8]);
    /// Add members to a sorted set (or move them), as one `ZADD key score
    /// member …`: a store that fires keyspace events fires one for them
    /// all, as the command does.
    fn zadd_many(&mut self, key: &[u8], pairs: &[(f64, &[u8])]) {
        for &(score, member) in pairs {
            self.zadd(key, score, member);
        }
    }
    /// Remove a member of a sorted set (and the set when it empties).
    fn zrem(&mut self, key: &[u8], member: &[u8]);
    /// Set the wake-up key `key` (PROTOCOL.md §9): its one member `1`, at
    /// 0. A store whose clients wait on the key tells them even when the
    /// member was there already, as a `ZADD` that changes nothing does not.
    fn wake(&mut self, key: &[u8]) {
        self.zadd(key, 0.0, b"1");
    }
    /// The size of a sorted set.
    fn zcard(&mut self, key: &[u8]) -> u64;
    /// How many entries a stream holds (`XLEN`).
    fn xlen(&mut self, key: &[u8]) -> u64;
    /// The score of a member of a sorted set, if it is there.
    fn zscore(&mut self, key: &[u8], member: &[u8]) -> Option<f64>;
    /// The first `count` members in (score, member) order.
    fn zhead(&mut self, key: &[u8], count: usize) -> Vec<Vec<u8>>;
    /// The first `count` members in (score, member) order, each with its
    /// score (`ZRANGE key 0 count-1 WITHSCORES`).
    fn zhead_scored(&mut self, key: &[u8], count: usize) -> Vec<(Vec<u8>, f64)> {
        let head = self.zhead(key, count);
        head.into_iter().filter_map(|member| Some((member.clone(), self.zscore(key, &member)?))).collect()
    }
    /// The lowest score above `min` (`min` itself excluded).
    fn zfirst_above(&mut self, key: &[u8], min: f64) -> Option<f64>;
    /// Up to `limit` members with score ≤ `max`, in (score, member) order.
    fn zupto(&mut self, key: &[u8], max: f64, limit: usize) -> Vec<Vec<u8>>;
    /// Up to `limit` members of a sorted set whose scores are all equal,
    /// in byte order, after `after` (excluded) or from the first: `ZRANGE
    /// key (after + BYLEX LIMIT 0 limit`.
    fn zafter(&mut self, key: &[u8], after: Option<&[u8]>, limit: usize) -> Vec<Vec<u8>>;
    /// Append an entry of `fields` to the stream `key` under a new id (the
    /// server's `*`), then trim the stream to about its newest `keep`
    /// entries, as `XADD key MAXLEN ~ keep * field value …`. The new entry's
    /// time, the first part of its id: a rate-limited claim logs the claim
    /// its `active` event names at that time (PROTOCOL.md §7.1). `None` when
    /// nothing was added.
    fn xadd(&mut self, key: &[u8], keep: u64, fields: &[(&[u8], &[u8])]) -> Option<u64>;
}
