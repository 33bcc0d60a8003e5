//! The refusals of REAP, PROMOTE, TRIM, PURGE, DRAIN and OBLITERATE, sent raw.

use super::*;

/// Refused arguments and keys.
pub(super) const ARGS: &[Raw] = &[
    Raw {
        name: "a negative limit",
        given: &[],
        call: Name::Reap,
        keys: "$q:active $q:pending $q:dead $q:errors $q:priority $q:policy $q:events $q:config $q:wake",
        args: "3 LIMIT -1",
        error: "EMQARG LIMIT must be an integer in 1..=1000",
    },
    Raw {
        name: "a missing argument",
        given: &[],
        call: Name::Purge,
        keys: "$q:done $q:priority $q:errors $q:progress $q:policy $q:results $q:headers",
        args: "",
        error: "EMQARG age must be an integer in 0..=999999999999",
    },
    Raw {
        name: "keys of two queues",
        given: &[],
        call: Name::Promote,
        keys: "$q:delayed emq:{other}:pending $q:priority $q:events $q:config $q:wake",
        args: "",
        error: "EMQARG KEYS[2] must be $q:pending",
    },
    Raw {
        name: "trim of an unfinished set",
        given: &[],
        call: Name::Trim,
        keys: "$q:pending $q:priority $q:errors $q:progress $q:policy $q:results $q:headers $q:config",
        args: "",
        error: "EMQARG KEYS[1] must be emq:{<queue>}:done, dead or cancelled",
    },
    Raw {
        name: "trim with a config that is a zset",
        given: &["ZADD $q:config 1 x"],
        call: Name::Trim,
        keys: "$q:done $q:priority $q:errors $q:progress $q:policy $q:results $q:headers $q:config",
        args: "",
        error: "EMQTYPE $q:config holds a zset, not a hash",
    },
    Raw {
        name: "drain of a finished set",
        given: &[],
        call: Name::Drain,
        keys: "$q:done $q:priority $q:errors $q:progress $q:policy $q:results $q:headers",
        args: "",
        error: "EMQARG KEYS[1] must be emq:{<queue>}:pending, delayed, active or waiting",
    },
    Raw {
        name: "drain with LIMIT 0",
        given: &[],
        call: Name::Drain,
        keys: "$q:pending $q:priority $q:errors $q:progress $q:policy $q:results $q:headers",
        args: "LIMIT 0",
        error: "EMQARG LIMIT must be an integer in 1..=1000",
    },
    Raw {
        name: "drain of a job whose record is a list",
        given: &["ZADD $q:delayed 5 $A", "RPUSH $q:job:$A x"],
        call: Name::Drain,
        keys: "$q:delayed $q:priority $q:errors $q:progress $q:policy $q:results $q:headers",
        args: "",
        error: "EMQTYPE $q:job:$A holds a list, not a hash",
    },
    Raw {
        name: "obliterate with an argument",
        given: &[],
        call: Name::Obliterate,
        keys: "$q:pending $q:active $q:delayed $q:done $q:dead $q:cancelled $q:priority $q:errors \
               $q:progress $q:policy $q:config $q:rate $q:schedules $q:ticks $q:unique $q:unique_until \
               $q:results $q:events $q:headers $q:batches $q:batch_jobs $q:batch_open $q:wake",
        args: "FORCE 1",
        error: "EMQARG unknown option FORCE",
    },
    Raw {
        name: "obliterate of a queue whose schedules are a string",
        given: &["SET $q:schedules x"],
        call: Name::Obliterate,
        keys: "$q:pending $q:active $q:delayed $q:done $q:dead $q:cancelled $q:priority $q:errors \
               $q:progress $q:policy $q:config $q:rate $q:schedules $q:ticks $q:unique $q:unique_until \
               $q:results $q:events $q:headers $q:batches $q:batch_jobs $q:batch_open $q:wake",
        args: "",
        error: "EMQTYPE $q:schedules holds a string, not a hash",
    },
    Raw {
        name: "reap with a policy that is a set",
        given: &[
            "HSET $q:job:$A state active attempts 1 payload p",
            "ZADD $q:active 5 $A",
            "SADD $q:policy x",
        ],
        call: Name::Reap,
        keys: "$q:active $q:pending $q:dead $q:errors $q:priority $q:policy $q:events $q:config $q:wake",
        args: "3",
        error: "EMQTYPE $q:policy holds a set, not a hash",
    },
    Raw {
        name: "purge into a progress that is a set",
        given: &["HSET $q:job:$A state done attempts 1 payload p", "ZADD $q:done 5 $A", "SADD $q:progress x"],
        call: Name::Purge,
        keys: "$q:done $q:priority $q:errors $q:progress $q:policy $q:results $q:headers",
        args: "0",
        error: "EMQTYPE $q:progress holds a set, not a hash",
    },
];

/// Malformed stored state (PROTOCOL.md §5), refused before any write.
pub(super) const STORED: &[Raw] = &[
    Raw {
        name: "reap with a priority of abc leaves the job where it was",
        given: &[
            "HSET $q:job:$A state active attempts 1 payload p",
            "ZADD $q:active 5 $A",
            "HSET $q:priority $A abc",
        ],
        call: Name::Reap,
        keys: REAP_KEYS,
        args: "3",
        error: "EMQDATA $q:priority $A is not an integer",
    },
    Raw {
        name: "reap with a policy of garbage",
        given: &[
            "HSET $q:job:$A state active attempts 1 payload p",
            "ZADD $q:active 5 $A",
            "HSET $q:policy $A garbage",
        ],
        call: Name::Reap,
        keys: REAP_KEYS,
        args: "3",
        error: "EMQDATA $q:policy $A is not a policy",
    },
    Raw {
        name: "reap with attempts 1.0",
        given: &["HSET $q:job:$A state active attempts 1.0 payload p", "ZADD $q:active 5 $A"],
        call: Name::Reap,
        keys: REAP_KEYS,
        args: "3",
        error: "EMQDATA $q:job:$A attempts is not an integer",
    },
    Raw {
        name: "promote with a priority of abc",
        given: &[
            "HSET $q:job:$A state delayed attempts 0 payload p",
            "ZADD $q:delayed 5 $A",
            "HSET $q:priority $A abc",
        ],
        call: Name::Promote,
        keys: "$q:delayed $q:pending $q:priority $q:events $q:config $q:wake",
        args: "",
        error: "EMQDATA $q:priority $A is not an integer",
    },
    Raw {
        name: "trim with a done_count of ten",
        given: &[
            "HSET $q:job:$A state done attempts 1 payload p",
            "ZADD $q:done 5 $A",
            "HSET $q:config done_count ten",
        ],
        call: Name::Trim,
        keys: "$q:done $q:priority $q:errors $q:progress $q:policy $q:results $q:headers $q:config",
        args: "",
        error: "EMQDATA $q:config done_count is not an integer",
    },
    Raw {
        name: "reap in a queue of protocol 2.0",
        given: &[
            "HSET $q:job:$A state active attempts 1 payload p",
            "ZADD $q:active 5 $A",
            "HSET $q:config protocol 2.0",
        ],
        call: Name::Reap,
        keys: REAP_KEYS,
        args: "3",
        error: VERSION_2,
    },
    Raw {
        name: "obliterate of a queue of protocol 2.0",
        given: &["HSET $q:config protocol 2.0", "HSET $q:schedules s every~1000~last"],
        call: Name::Obliterate,
        keys: OBLITERATE_KEYS,
        args: "",
        error: VERSION_2,
    },
    Raw {
        name: "obliterate of a queue of protocol 2.0 that still holds jobs",
        given: &["HSET $q:config protocol 2.0", "ZADD $q:pending 0 $A"],
        call: Name::Obliterate,
        keys: OBLITERATE_KEYS,
        args: "",
        error: VERSION_2,
    },
    Raw {
        name: "obliterate of a queue whose protocol is 1.4.0",
        given: &["HSET $q:config protocol 1.4.0"],
        call: Name::Obliterate,
        keys: OBLITERATE_KEYS,
        args: "",
        error: "EMQVERSION $q:config protocol is not <major>.<minor>; this speaker is 1.11",
    },
];

/// OBLITERATE's keys, the counts key included.
const OBLITERATE_KEYS: &str = "$q:pending $q:active $q:delayed $q:done $q:dead $q:cancelled $q:priority \
                               $q:errors $q:progress $q:policy $q:config $q:rate $q:schedules $q:ticks \
                               $q:unique $q:unique_until $q:results $q:events $q:headers $q:batches \
                               $q:batch_jobs $q:batch_open $q:wake $q:counts";
