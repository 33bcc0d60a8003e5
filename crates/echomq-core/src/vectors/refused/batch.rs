//! The refusals of BATCH and SETTLE, sent raw.

use super::*;

/// Refused arguments and keys.
pub(super) const ARGS: &[Raw] = &[
    Raw {
        name: "batch with a bad id",
        given: &[],
        call: Name::Batch,
        keys: "$q:batches $q:batch_jobs $q:batch_open",
        args: "b~1 JOB_CB cb $A",
        error: "EMQARG batch id must be 1 to 200 bytes of letters, digits, _, -, . and :, and not end in \
                :callback",
    },
    Raw {
        name: "batch whose id is another batch's callback field",
        given: &["HSET $q:batches b 1~0~0~0~0~0~JOB_CB b:callback cb"],
        call: Name::Batch,
        keys: "$q:batches $q:batch_jobs $q:batch_open",
        args: "b:callback JOB_CB2 cb $A",
        error: "EMQARG batch id must be 1 to 200 bytes of letters, digits, _, -, . and :, and not end in \
                :callback",
    },
    Raw {
        name: "batch with a callback that is not a job id",
        given: &[],
        call: Name::Batch,
        keys: "$q:batches $q:batch_jobs $q:batch_open",
        args: "b1 CB cb $A",
        error: "EMQKIND job id must be JOB-namespaced",
    },
    Raw {
        name: "settle with an unknown option",
        given: &[],
        call: Name::Settle,
        keys: "$q:batch_open $q:batches $q:batch_jobs $q:pending $q:headers $q:events $q:config $q:wake",
        args: "COUNT 5",
        error: "EMQARG unknown option COUNT",
    },
    Raw {
        name: "batch with no jobs",
        given: &[],
        call: Name::Batch,
        keys: "$q:batches $q:batch_jobs $q:batch_open",
        args: "b1 JOB_CB cb",
        error: "EMQARG a batch has 1 to 1000 jobs",
    },
    Raw {
        name: "batch with a job that is not a job id",
        given: &[],
        call: Name::Batch,
        keys: "$q:batches $q:batch_jobs $q:batch_open",
        args: "b1 JOB_CB cb $A nope",
        error: "EMQKIND job id must be JOB-namespaced",
    },
    Raw {
        name: "batch into open batches that are a list",
        given: &["RPUSH $q:batch_open x"],
        call: Name::Batch,
        keys: "$q:batches $q:batch_jobs $q:batch_open",
        args: "b1 JOB_CB cb $A",
        error: "EMQTYPE $q:batch_open holds a list, not a zset",
    },
    Raw {
        name: "settle with LIMIT 0",
        given: &[],
        call: Name::Settle,
        keys: "$q:batch_open $q:batches $q:batch_jobs $q:pending $q:headers $q:events $q:config $q:wake",
        args: "LIMIT 0",
        error: "EMQARG LIMIT must be an integer in 1..=1000",
    },
    Raw {
        name: "settle of a batch whose job's record is a string",
        given: &[
            "HSET $q:batches b1 1~0~0~0~0~0~JOB_CB b1:callback cb",
            "HSET $q:batch_jobs b1:0 $A",
            "ZADD $q:batch_open 5 b1",
            "SET $q:job:$A x",
        ],
        call: Name::Settle,
        keys: "$q:batch_open $q:batches $q:batch_jobs $q:pending $q:headers $q:events $q:config $q:wake",
        args: "",
        error: "EMQTYPE $q:job:$A holds a string, not a hash",
    },
];

/// Malformed stored state (PROTOCOL.md §5), refused before any write.
pub(super) const STORED: &[Raw] = &[];
