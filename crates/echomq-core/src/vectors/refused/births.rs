//! A record that exists without one of its birth fields, or whose `state`
//! is none of the six (PROTOCOL.md §3, §5): every transition that reads a
//! record reads its `state` and `attempts` (CLAIM and ACKNEXT its
//! `payload` too), and one that lacks any is refused, `EMQDATA <key>
//! <field> is missing`, the first of them in that order, before any write:
//! never taken for a missing record, dropped from its set, or fenced. A
//! whole record whose `state` is none of the six is `EMQDATA <key> state is
//! not a state`, wherever it is read: never taken from its set as if its
//! set named its state, nor waited on as an unfinished job. ACKMANY
//! answers either as that job's item. Each of four shapes (no `attempts`,
//! no `state`, `payload` alone, a state none of the six) at every place a
//! transition reads a record.

use super::*;

/// Where a transition reads the record `$q:job:$A`: what else is written,
/// the call, and the fields its record holds besides the missing ones
/// (`state` and `attempts`, in the state it would be in).
struct Place {
    what: &'static str,
    /// The record's `state` and `attempts` where it is whole.
    state: &'static str,
    attempts: &'static str,
    /// The other lines written first.
    given: &'static [&'static str],
    call: Name,
    keys: &'static str,
    args: &'static str,
}

/// A job `$B` active under token 1, for ACKNEXT to ack.
const ACTIVE_B: &str = "HSET $q:job:$B state active attempts 1 payload b";
const ACKNEXT_KEYS_B: &str = "$q:job:$B $q:active $q:done $q:results $q:events $q:config $q:pending $q:rate \
                              $q:policy $q:headers $q:wake";
const ACKNEXT_KEYS_A: &str = "$q:job:$A $q:active $q:done $q:results $q:events $q:config $q:pending $q:rate \
                              $q:policy $q:headers $q:wake";
const FAIL_KEYS: &str = "$q:job:$A $q:active $q:delayed $q:dead $q:errors $q:policy $q:events $q:config";
const SETTLE_KEYS: &str =
    "$q:batch_open $q:batches $q:batch_jobs $q:pending $q:headers $q:events $q:config $q:wake";

const PLACES: &[Place] = &[
    Place {
        what: "claim of it at the head of pending",
        state: "pending",
        attempts: "0",
        given: &["ZADD $q:pending 0 $A"],
        call: Name::Claim,
        keys: CLAIM_KEYS,
        args: "30000",
    },
    Place {
        what: "acknext whose claim finds it at the head of pending",
        state: "pending",
        attempts: "0",
        given: &["ZADD $q:pending 0 $A", ACTIVE_B, "ZADD $q:active 99999999999999 $B"],
        call: Name::AckNext,
        keys: ACKNEXT_KEYS_B,
        args: "$B 1 30000",
    },
    Place {
        what: "acknext of it",
        state: "active",
        attempts: "1",
        given: &["ZADD $q:active 99999999999999 $A"],
        call: Name::AckNext,
        keys: ACKNEXT_KEYS_A,
        args: "$A 1 30000",
    },
    Place {
        what: "ack of it",
        state: "active",
        attempts: "1",
        given: &["ZADD $q:active 99999999999999 $A"],
        call: Name::Ack,
        keys: ACK_KEYS,
        args: "$A 1",
    },
    Place {
        what: "fail of it",
        state: "active",
        attempts: "1",
        given: &["ZADD $q:active 99999999999999 $A"],
        call: Name::Fail,
        keys: FAIL_KEYS,
        args: "$A 1 3 1000 boom",
    },
    Place {
        what: "defer of it",
        state: "active",
        attempts: "1",
        given: &["ZADD $q:active 99999999999999 $A"],
        call: Name::Defer,
        keys: "$q:job:$A $q:active $q:delayed $q:policy $q:config $q:events",
        args: "$A 1 1000 3",
    },
    Place {
        what: "extend of it",
        state: "active",
        attempts: "1",
        given: &["ZADD $q:active 99999999999999 $A"],
        call: Name::Extend,
        keys: "$q:job:$A $q:active",
        args: "$A 1 30000",
    },
    Place {
        what: "release of it",
        state: "active",
        attempts: "1",
        given: &["ZADD $q:active 99999999999999 $A"],
        call: Name::Release,
        keys: "$q:job:$A $q:active $q:pending $q:priority $q:events $q:config $q:wake",
        args: "$A 1",
    },
    Place {
        what: "progress of it",
        state: "active",
        attempts: "1",
        given: &["ZADD $q:active 99999999999999 $A"],
        call: Name::Progress,
        keys: "$q:job:$A $q:progress $q:events $q:config",
        args: "$A 1 half",
    },
    Place {
        what: "reap of its expired lease",
        state: "active",
        attempts: "1",
        given: &["ZADD $q:active 5 $A"],
        call: Name::Reap,
        keys: REAP_KEYS,
        args: "3",
    },
    Place {
        what: "promote of it when due",
        state: "delayed",
        attempts: "1",
        given: &["ZADD $q:delayed 5 $A"],
        call: Name::Promote,
        keys: "$q:delayed $q:pending $q:priority $q:events $q:config $q:wake",
        args: "",
    },
    Place {
        what: "cancel of it",
        state: "pending",
        attempts: "0",
        given: &["ZADD $q:pending 0 $A"],
        call: Name::Cancel,
        keys: "$q:job:$A $q:pending $q:active $q:delayed $q:dead $q:cancelled $q:events $q:config",
        args: "$A",
    },
    Place {
        what: "retry of it",
        state: "dead",
        attempts: "3",
        given: &["ZADD $q:dead 5 $A"],
        call: Name::Retry,
        keys: "$q:job:$A $q:dead $q:pending $q:priority $q:events $q:config $q:wake",
        args: "$A",
    },
    Place {
        what: "settle of a batch over it",
        state: "done",
        attempts: "1",
        given: &[
            "ZADD $q:done 5 $A",
            "HSET $q:batches b1 1~0~0~0~0~0~JOB_CB b1:callback cb",
            "HSET $q:batch_jobs b1:0 $A",
            "ZADD $q:batch_open 5 b1",
        ],
        call: Name::Settle,
        keys: SETTLE_KEYS,
        args: "",
    },
    Place {
        what: "enqueue whose unique key it holds",
        state: "pending",
        attempts: "0",
        given: &["ZADD $q:pending 0 $A", "HSET $q:unique k 1:$A", "ZADD $q:unique_until 99999999999999 k"],
        call: Name::Enqueue,
        keys: "$q:job:$B $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events \
               $q:config $q:headers $q:wake",
        args: "$B p UNIQUE k UNIQUE_FOR 1000 UNIQUE_DONE 1",
    },
];

/// The four shapes: a name, the record's fields, and the error's words
/// after the record's key.
fn shapes(place: &Place) -> [(&'static str, String, &'static str); 4] {
    [
        (
            "without attempts",
            format!("HSET $q:job:$A state {} payload p", place.state),
            "attempts is missing",
        ),
        (
            "without state",
            format!("HSET $q:job:$A attempts {} payload p", place.attempts),
            "state is missing",
        ),
        ("with only a payload", "HSET $q:job:$A payload p".to_owned(), "state is missing"),
        (
            "with a state none of the six",
            format!("HSET $q:job:$A state weird attempts {} payload p", place.attempts),
            "state is not a state",
        ),
    ]
}

pub(super) fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for place in PLACES {
        for (shape, record, words) in shapes(place) {
            let mut given = vec![record.as_str()];
            given.extend(place.given);
            let name = format!("{} {shape}", place.what);
            let error = expand(&format!("EMQDATA $q:job:$A {words}"));
            cases.push(raw(&name, &given, place.call, place.keys, place.args).refused_with(&error));
        }
    }
    // ACKMANY answers it as that job's item, and acks the others.
    let ack = PLACES.iter().find(|place| place.call == Name::Ack).expect("an ack");
    for (shape, record, _) in shapes(ack) {
        let given = [record.as_str(), ack.given[0], ACTIVE_B, "ZADD $q:active 99999999999999 $B"];
        let name = format!("ackmany of it {shape} and of a whole job");
        let keys = "$q:active $q:done $q:results $q:events $q:config";
        cases.push(raw(&name, &given, Name::AckMany, keys, "$A 1 $B 1"));
    }
    cases
}
