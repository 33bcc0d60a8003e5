//! The refusals of ACK, FAIL, CANCEL and RETRY, sent raw.

use super::*;

/// Refused arguments and keys.
pub(super) const ARGS: &[Raw] = &[
    Raw {
        name: "ack with a stale token",
        given: ACTIVE_A,
        call: Name::Ack,
        keys: "$q:job:$A $q:active $q:done $q:results $q:events $q:config",
        args: "$A 2",
        error: "EMQFENCE token does not hold the lease",
    },
    Raw {
        name: "ack with a result and three keys",
        given: ACTIVE_A,
        call: Name::Ack,
        keys: "$q:job:$A $q:active $q:done",
        args: "$A 1 RESULT 42",
        error: "EMQARG wrong number of keys: takes 6 or 7",
    },
    Raw {
        name: "ack with a result given twice",
        given: ACTIVE_A,
        call: Name::Ack,
        keys: "$q:job:$A $q:active $q:done $q:results $q:events $q:config",
        args: "$A 1 RESULT 42 RESULT 43",
        error: "EMQARG RESULT given twice",
    },
    Raw {
        name: "ack with a result that has no bytes",
        given: ACTIVE_A,
        call: Name::Ack,
        keys: "$q:job:$A $q:active $q:done $q:results $q:events $q:config",
        args: "$A 1 RESULT",
        error: "EMQARG RESULT is missing its bytes",
    },
    Raw {
        name: "ack with five keys",
        given: ACTIVE_A,
        call: Name::Ack,
        keys: "$q:job:$A $q:active $q:done $q:results $q:events",
        args: "$A 1",
        error: "EMQARG wrong number of keys: takes 6 or 7",
    },
    Raw {
        name: "ack into results that are a set",
        given: &[
            "HSET $q:job:$A state active attempts 1 payload p",
            "ZADD $q:active 5 $A",
            "SADD $q:results x",
        ],
        call: Name::Ack,
        keys: "$q:job:$A $q:active $q:done $q:results $q:events $q:config",
        args: "$A 1 RESULT 42",
        error: "EMQTYPE $q:results holds a set, not a hash",
    },
    Raw {
        name: "ack into an event log that is a hash",
        given: &[
            "HSET $q:job:$A state active attempts 1 payload p",
            "ZADD $q:active 5 $A",
            "HSET $q:events x y",
        ],
        call: Name::Ack,
        keys: "$q:job:$A $q:active $q:done $q:results $q:events $q:config",
        args: "$A 1",
        error: "EMQTYPE $q:events holds a hash, not a stream",
    },
    Raw {
        name: "fail with an event log but no config key",
        given: ACTIVE_A,
        call: Name::Fail,
        keys: "$q:job:$A $q:active $q:delayed $q:dead $q:errors $q:policy $q:events",
        args: "$A 1 3 1000 boom",
        error: "EMQARG wrong number of keys: takes 8 or 9",
    },
    Raw {
        name: "fail into a stream",
        given: &[
            "HSET $q:job:$A state active attempts 1 payload p",
            "ZADD $q:active 5 $A",
            "XADD $q:errors * f v",
        ],
        call: Name::Fail,
        keys: "$q:job:$A $q:active $q:delayed $q:dead $q:errors $q:policy $q:events $q:config",
        args: "$A 1 3 0 e",
        error: "EMQTYPE $q:errors holds a stream, not a hash",
    },
    Raw {
        name: "retry of a pending job",
        given: PENDING_A,
        call: Name::Retry,
        keys: "$q:job:$A $q:dead $q:pending $q:priority $q:events $q:config $q:wake",
        args: "$A",
        error: "EMQSTATE cannot retry a pending job",
    },
    Raw {
        name: "fail with a policy that is a list",
        given: &[
            "HSET $q:job:$A state active attempts 1 payload p",
            "ZADD $q:active 5 $A",
            "RPUSH $q:policy x",
        ],
        call: Name::Fail,
        keys: "$q:job:$A $q:active $q:delayed $q:dead $q:errors $q:policy $q:events $q:config",
        args: "$A 1 3 1000 boom",
        error: "EMQTYPE $q:policy holds a list, not a hash",
    },
    Raw {
        name: "fail with a sixth key of another role",
        given: ACTIVE_A,
        call: Name::Fail,
        keys: "$q:job:$A $q:active $q:delayed $q:dead $q:errors $q:priority $q:events $q:config",
        args: "$A 1 3 1000 boom",
        error: "EMQARG KEYS[6] must be $q:policy",
    },
];

/// Malformed stored state (PROTOCOL.md §5), refused before any write.
pub(super) const STORED: &[Raw] = &[
    Raw {
        name: "ack of a record whose attempts is negative is no fence",
        given: &["HSET $q:job:$A state active attempts -1 payload a", "ZADD $q:active 99999999999999 $A"],
        call: Name::Ack,
        keys: ACK_KEYS,
        args: "$A 1",
        error: "EMQDATA $q:job:$A attempts is not an integer of 0 or more",
    },
    Raw {
        name: "fail with a policy that ends in a space",
        given: &[
            "HSET $q:job:$A state active attempts 1 payload p",
            "ZADD $q:active 99999999999999 $A",
            "HSET $q:policy $A ATTEMPTS~3~",
        ],
        call: Name::Fail,
        keys: "$q:job:$A $q:active $q:delayed $q:dead $q:errors $q:policy $q:events $q:config",
        args: "$A 1 3 1000 boom",
        error: "EMQDATA $q:policy $A is not a policy",
    },
    Raw {
        name: "retry with a priority of 1e0",
        given: &[
            "HSET $q:job:$A state dead attempts 3 payload p",
            "ZADD $q:dead 5 $A",
            "HSET $q:priority $A 1e0",
        ],
        call: Name::Retry,
        keys: "$q:job:$A $q:dead $q:pending $q:priority $q:events $q:config $q:wake",
        args: "$A",
        error: "EMQDATA $q:priority $A is not an integer",
    },
    Raw {
        name: "ack of a record whose attempts is x",
        given: &["HSET $q:job:$A state active attempts x payload p", "ZADD $q:active 99999999999999 $A"],
        call: Name::Ack,
        keys: ACK_KEYS,
        args: "$A 1",
        error: "EMQDATA $q:job:$A attempts is not an integer",
    },
    Raw {
        name: "cancel of a job whose state is not a state",
        given: &["HSET $q:job:$A state sleeping attempts 0 payload p"],
        call: Name::Cancel,
        keys: "$q:job:$A $q:pending $q:active $q:delayed $q:dead $q:cancelled $q:events $q:config",
        args: "$A",
        error: "EMQDATA $q:job:$A state is not a state",
    },
    Raw {
        name: "retry of a job whose state is not a state",
        given: &["HSET $q:job:$A state Dead attempts 3 payload p", "ZADD $q:dead 5 $A"],
        call: Name::Retry,
        keys: "$q:job:$A $q:dead $q:pending $q:priority $q:events $q:config $q:wake",
        args: "$A",
        error: "EMQDATA $q:job:$A state is not a state",
    },
];
