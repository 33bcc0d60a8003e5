//! Cluster slots, for the one kind of key Redis cannot check for us.
//!
//! Redis Cluster checks that every key a command *declares* lives in one
//! slot this node serves. CLAIM, REAP, PROMOTE and PURGE also touch a
//! *derived* key, the record `emq:{q}:job:<id>` of an id they pop, and the
//! low-level key API does no slot check of its own.
//!
//! Why the derived key is always in the declared key's slot: the core builds
//! it as the declared set key's queue prefix followed by `job:<id>`, and it
//! only accepts a prefix of the form `emq:{<name>}:` with a non-empty name and
//! no brace inside it (`echomq_core::parse::queue_prefix`). Redis hashes a key
//! by its first `{…}` with something inside, so both keys hash `<name>` alone,
//! whatever bytes the id holds: the same slot. So the check can never fail
//! today; it is cheap (a scan for two braces per key), so `RedisStore` still
//! compares every key's tag with the first declared key's when cluster mode
//! is on, and a command that would cross a slot writes nothing and answers
//! `CROSSSLOT`.

/// The part of `key` Redis Cluster hashes: the bytes between the first `{`
/// and the next `}` when there are some, else the whole key.
pub(crate) fn hash_tag(key: &[u8]) -> &[u8] {
    let Some(open) = key.iter().position(|b| *b == b'{') else {
        return key;
    };
    let rest = &key[open + 1..];
    match rest.iter().position(|b| *b == b'}') {
        Some(close) if close > 0 => &rest[..close],
        _ => key,
    }
}

/// The cluster slot of `key`: CRC16 (XMODEM) of its hash tag, mod 16384.
pub(crate) fn key_slot(key: &[u8]) -> u16 {
    crc16::State::<crc16::XMODEM>::calculate(hash_tag(key)) % 16384
}

/// Whether `CLUSTER NODES`, as a node answers it, shows `slot` migrating
/// from that node (`[<slot>->-<id>]` on its `myself` line) or importing to
/// it (`[<slot>-<-<id>]`). While it does, the slot's keys are split between
/// two nodes: a record missing here may be on the other.
pub(crate) fn moving(cluster_nodes: &[u8], slot: u16) -> bool {
    let Some(myself) = cluster_nodes.split(|b| *b == b'\n').find(|line| {
        line.split(|b| *b == b' ')
            .nth(2)
            .is_some_and(|flags| flags.split(|b| *b == b',').any(|f| f == b"myself"))
    }) else {
        return false;
    };
    let (migrating, importing) = (format!("[{slot}->-"), format!("[{slot}-<-"));
    let has = |needle: &str| myself.windows(needle.len()).any(|w| w == needle.as_bytes());
    has(&migrating) || has(&importing)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `a` and `b` certainly hash to the same slot: their tags are equal.
    fn same_slot(a: &[u8], b: &[u8]) -> bool {
        hash_tag(a) == hash_tag(b)
    }

    /// Slots as `CLUSTER KEYSLOT` gives them.
    #[test]
    fn key_slots_match_redis() {
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"somekey"), 11058);
        assert_eq!(key_slot(b"emq:{foo}:pending"), 12182);
        assert_eq!(key_slot(b"emq:{foo}:job:JOB_X"), 12182);
    }

    #[test]
    fn a_moving_slot_shows_on_the_myself_line_only() {
        let nodes = b"07c3 127.0.0.1:30004@31004 master - 0 1 3 connected 0-5460 [77->-e7d1]\n\
            e7d1 127.0.0.1:30002@31002 myself,master - 0 0 2 connected 5461-10922 [93-<-07c3] [12182->-292f]\n";
        assert!(moving(nodes, 93), "importing to myself");
        assert!(moving(nodes, 12182), "migrating from myself");
        assert!(!moving(nodes, 77), "another node's migration");
        assert!(!moving(nodes, 9), "a prefix of a slot number is not that slot");
        assert!(!moving(nodes, 1218));
        assert!(!moving(b"", 93), "no cluster");
    }

    #[test]
    fn tags_follow_redis_cluster_rules() {
        assert_eq!(hash_tag(b"emq:{q}:pending"), b"q");
        assert_eq!(hash_tag(b"emq:{}:pending"), b"emq:{}:pending", "an empty tag hashes the whole key");
        assert_eq!(hash_tag(b"emq:{q:pending"), b"emq:{q:pending", "no closing brace");
        assert_eq!(hash_tag(b"plain"), b"plain");
        assert_eq!(hash_tag(b"a{b}{c}"), b"b", "only the first tag counts");
        assert_eq!(
            hash_tag(b"{}{x}"),
            b"{}{x}",
            "the first opening brace decides, even when its tag is empty"
        );
    }

    #[test]
    fn a_record_derived_from_a_set_key_is_in_its_slot_whatever_the_id() {
        let prefix = b"emq:{orders}:".as_slice();
        for id in [b"JOB_1".as_slice(), b"JOB_{x}", b"JOB_}{", b"JOB_\0\r\n"] {
            let record = [prefix, b"job:", id].concat();
            assert!(same_slot(b"emq:{orders}:pending", &record), "{id:?}");
        }
        assert!(!same_slot(b"emq:{a}:pending", b"emq:{b}:job:JOB_1"));
    }
}
