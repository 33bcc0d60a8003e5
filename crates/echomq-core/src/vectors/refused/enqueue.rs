//! The refusals of ENQUEUE and ENQUEUEMANY, sent raw.

use super::*;

/// Refused arguments and keys.
pub(super) const ARGS: &[Raw] = &[
    Raw {
        name: "enqueue with empty headers",
        given: &[],
        call: Name::Enqueue,
        keys: "$q:job:$A $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events \
               $q:config $q:headers $q:wake",
        args: "$A p HEADERS",
        error: "EMQARG HEADERS must be 1 to 8192 bytes",
    },
    Raw {
        name: "enqueue with headers and no headers key",
        given: &[],
        call: Name::Enqueue,
        keys: "$q:job:$A $q:pending",
        args: "$A p HEADERS {}",
        error: "EMQARG HEADERS needs all eleven keys",
    },
    Raw {
        name: "enqueue with headers into a headers key that is a list",
        given: &["RPUSH $q:headers x"],
        call: Name::Enqueue,
        keys: "$q:job:$A $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events \
               $q:config $q:headers $q:wake",
        args: "$A p HEADERS {}",
        error: "EMQTYPE $q:headers holds a list, not a hash",
    },
    Raw {
        name: "enqueuemany with three keys",
        given: &[],
        call: Name::EnqueueMany,
        keys: "$q:pending $q:events $q:config",
        args: "$A p",
        error: "EMQARG wrong number of keys: takes 4 or 5 or 6",
    },
    Raw {
        name: "enqueuemany whose second job has no payload enqueues neither",
        given: &[],
        call: Name::EnqueueMany,
        keys: "$q:pending $q:events $q:config $q:wake",
        args: "$A p $B",
        error: "EMQARG payload is missing",
    },
    Raw {
        name: "enqueuemany whose second job is not a job id enqueues neither",
        given: &[],
        call: Name::EnqueueMany,
        keys: "$q:pending $q:events $q:config $q:wake",
        args: "$A p nope p",
        error: "EMQKIND job id must be JOB-namespaced",
    },
    Raw {
        name: "enqueuemany whose second job's record is a string enqueues neither",
        given: &["SET $q:job:$B x"],
        call: Name::EnqueueMany,
        keys: "$q:pending $q:events $q:config $q:wake",
        args: "$A p $B p",
        error: "EMQTYPE $q:job:$B holds a string, not a hash",
    },
    Raw {
        name: "enqueuemany into a wake-up key that is a list",
        given: &["RPUSH $q:wake x"],
        call: Name::EnqueueMany,
        keys: "$q:pending $q:events $q:config $q:wake",
        args: "$A p",
        error: "EMQTYPE $q:wake holds a list, not a zset",
    },
    Raw {
        name: "enqueuemany with another queue's event log",
        given: &[],
        call: Name::EnqueueMany,
        keys: "$q:pending emq:{other}:events $q:config $q:wake",
        args: "$A p",
        error: "EMQARG KEYS[2] must be $q:events",
    },
    Raw {
        name: "enqueue into an event log that is a string",
        given: &["SET $q:events x"],
        call: Name::Enqueue,
        keys: "$q:job:$A $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events \
               $q:config $q:headers $q:wake",
        args: "$A p",
        error: "EMQTYPE $q:events holds a string, not a stream",
    },
    Raw {
        name: "enqueue onto a string",
        given: &["SET $q:pending x"],
        call: Name::Enqueue,
        keys: "$q:job:$A $q:pending",
        args: "$A p",
        error: "EMQTYPE $q:pending holds a string, not a zset",
    },
    Raw {
        name: "enqueue with a unique key and the seed's two keys",
        given: &[],
        call: Name::Enqueue,
        keys: "$q:job:$A $q:pending",
        args: "$A p UNIQUE u UNIQUE_FOR 1000",
        error: "EMQARG UNIQUE needs all eleven keys",
    },
    Raw {
        name: "enqueue with a unique key and no hold",
        given: &[],
        call: Name::Enqueue,
        keys: "$q:job:$A $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events \
               $q:config $q:headers $q:wake",
        args: "$A p UNIQUE u",
        error: "EMQARG UNIQUE needs UNIQUE_FOR",
    },
    Raw {
        name: "enqueue with a hold and no unique key",
        given: &[],
        call: Name::Enqueue,
        keys: "$q:job:$A $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events \
               $q:config $q:headers $q:wake",
        args: "$A p UNIQUE_DONE 1",
        error: "EMQARG UNIQUE_FOR and UNIQUE_DONE need UNIQUE",
    },
    Raw {
        name: "enqueue with a hold of 0",
        given: &[],
        call: Name::Enqueue,
        keys: "$q:job:$A $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events \
               $q:config $q:headers $q:wake",
        args: "$A p UNIQUE u UNIQUE_FOR 0",
        error: "EMQARG UNIQUE_FOR must be an integer in 1..=999999999999",
    },
    Raw {
        name: "enqueue with a unique key into holds that are a hash",
        given: &["HSET $q:unique_until u 5"],
        call: Name::Enqueue,
        keys: "$q:job:$A $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events \
               $q:config $q:headers $q:wake",
        args: "$A p UNIQUE u UNIQUE_FOR 1000",
        error: "EMQTYPE $q:unique_until holds a hash, not a zset",
    },
    Raw {
        name: "enqueue with a unique key held by a job whose record is a string",
        given: &["SET $q:job:$B x", "HSET $q:unique u 1:$B", "ZADD $q:unique_until 9999999999999 u"],
        call: Name::Enqueue,
        keys: "$q:job:$A $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events \
               $q:config $q:headers $q:wake",
        args: "$A p UNIQUE u UNIQUE_FOR 1000",
        error: "EMQTYPE $q:job:$B holds a string, not a hash",
    },
    Raw {
        name: "enqueue with a policy and the seed's two keys",
        given: &[],
        call: Name::Enqueue,
        keys: "$q:job:$A $q:pending",
        args: "$A p TIMEOUT 5000",
        error: "EMQARG ATTEMPTS, BACKOFF, BACKOFF_EXP and TIMEOUT need all eleven keys",
    },
    Raw {
        name: "enqueue with a fixed and an exponential back-off",
        given: &[],
        call: Name::Enqueue,
        keys: "$q:job:$A $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events \
               $q:config $q:headers $q:wake",
        args: "$A p BACKOFF 5 backoff_exp 5",
        error: "EMQARG BACKOFF and BACKOFF_EXP exclude each other",
    },
    Raw {
        name: "enqueue with a policy into a policy that is a string",
        given: &["SET $q:policy x"],
        call: Name::Enqueue,
        keys: "$q:job:$A $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events \
               $q:config $q:headers $q:wake",
        args: "$A p ATTEMPTS 2",
        error: "EMQTYPE $q:policy holds a string, not a hash",
    },
];

/// Malformed stored state (PROTOCOL.md §5), refused before any write.
pub(super) const STORED: &[Raw] = &[
    Raw {
        name: "enqueue with an events setting of 1.5 writes no job",
        given: &["HSET $q:config events 1.5"],
        call: Name::Enqueue,
        keys: ENQUEUE_KEYS,
        args: "$A p",
        error: "EMQDATA $q:config events is not an integer",
    },
    Raw {
        name: "enqueue with a unique value of 2:JOB_H",
        given: &["HSET $q:unique k 2:JOB_H", "ZADD $q:unique_until 99999999999999 k"],
        call: Name::Enqueue,
        keys: ENQUEUE_KEYS,
        args: "$A p UNIQUE k UNIQUE_FOR 1000",
        error: "EMQDATA $q:unique k is not <0|1>:<id>",
    },
    Raw {
        name: "enqueue with a unique value whose id is no job id",
        given: &["HSET $q:unique k 0:XYZ", "ZADD $q:unique_until 99999999999999 k"],
        call: Name::Enqueue,
        keys: ENQUEUE_KEYS,
        args: "$A p UNIQUE k UNIQUE_FOR 1000",
        error: "EMQDATA $q:unique k is not <0|1>:<id>",
    },
    Raw {
        name: "enqueue with a unique value whose id is no job id, its hold ended",
        given: &["HSET $q:unique k 1:JO", "ZADD $q:unique_until 5 k"],
        call: Name::Enqueue,
        keys: ENQUEUE_KEYS,
        args: "$A p UNIQUE k UNIQUE_FOR 1000",
        error: "EMQDATA $q:unique k is not <0|1>:<id>",
    },
    Raw {
        name: "enqueue whose unique holder has a state that is not a state",
        given: &[
            "HSET $q:unique k 1:$B",
            "ZADD $q:unique_until 99999999999999 k",
            "HSET $q:job:$B state sleeping attempts 0 payload b",
        ],
        call: Name::Enqueue,
        keys: ENQUEUE_KEYS,
        args: "$A p UNIQUE k UNIQUE_FOR 1000",
        error: "EMQDATA $q:job:$B state is not a state",
    },
    Raw {
        name: "enqueue of a held unique key into events of the wrong type",
        given: &["HSET $q:unique k 0:$B", "ZADD $q:unique_until 99999999999999 k", "SADD $q:events x"],
        call: Name::Enqueue,
        keys: ENQUEUE_KEYS,
        args: "$A p UNIQUE k UNIQUE_FOR 1000",
        error: "EMQTYPE $q:events holds a set, not a stream",
    },
    Raw {
        name: "enqueue into a queue of protocol 2.0",
        given: &["HSET $q:config protocol 2.0"],
        call: Name::Enqueue,
        keys: ENQUEUE_KEYS,
        args: "$A p",
        error: VERSION_2,
    },
    Raw {
        name: "enqueue into a queue whose protocol is 1",
        given: &["HSET $q:config protocol 1"],
        call: Name::Enqueue,
        keys: ENQUEUE_KEYS,
        args: "$A p",
        error: "EMQVERSION $q:config protocol is not <major>.<minor>; this speaker is 1.11",
    },
];
