//! Every `EMQ.*` command on a real server: the happy path and the main
//! refusals, each a table row that seeds keys, runs one command and checks
//! the reply and every key afterwards. (The host's conformance suite compares
//! everything with the Lua scripts in depth; this proves the module's wiring.)

mod common;

use common::{call, connect, expand, queue, render, seed, server_with, snapshot, A};
use redis::Value;

#[test]
fn enqueue_writes_the_record_once_and_refuses_bad_calls() {
    let server = server_with(&[]);
    let mut conn = connect(&server);
    let q = queue();
    let (job, pending) = (format!("{q}job:{A}"), format!("{q}pending"));
    let enqueue = ["EMQ.ENQUEUE", &job, &pending, A, "hello"];

    assert_eq!(call(&mut conn, &enqueue), Ok(Value::Int(1)));
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query(&mut conn).unwrap();
    let now = secs * 1000 + micros / 1000;
    let mut record: Vec<(String, String)> = redis::cmd("HGETALL").arg(&job).query(&mut conn).unwrap();
    let stamp = |record: &[(String, String)], field: &str| -> u64 {
        record.iter().find(|(f, _)| f == field).and_then(|(_, v)| v.parse().ok()).unwrap()
    };
    let enqueued_at = stamp(&record, "enqueued_at");
    assert!(enqueued_at <= now && now - enqueued_at < 10_000, "server ms: {enqueued_at} vs {now}");
    assert_eq!(stamp(&record, "updated_at"), enqueued_at);
    record.retain(|(field, _)| !field.ends_with("_at"));
    let fields = [("state", "pending"), ("attempts", "0"), ("payload", "hello")];
    assert_eq!(record, fields.map(|(f, v)| (f.to_owned(), v.to_owned())));
    let before = snapshot(&mut conn, &q);
    assert_eq!(before.len(), 2, "the record and pending, nothing else: {before:?}");

    assert_eq!(call(&mut conn, &enqueue), Ok(Value::Int(0)), "a duplicate");
    assert_eq!(snapshot(&mut conn, &q), before, "a duplicate changes nothing");

    let bad_kind = call(&mut conn, &["EMQ.ENQUEUE", &format!("{q}job:XYZ"), &pending, "XYZ", "x"]);
    assert!(bad_kind.clone().unwrap_err().starts_with("EMQKIND"), "{bad_kind:?}");
    let arity = call(&mut conn, &["EMQ.ENQUEUE", &job]).unwrap_err();
    assert_eq!(arity, "ERR wrong number of arguments for 'emq.enqueue' command");
    assert_eq!(snapshot(&mut conn, &q), before, "refusals change nothing");
}

/// Seed (raw or `EMQ.*` lines), the call, and its expected reply and keys.
struct Case {
    name: &'static str,
    seed: &'static [&'static str],
    call: &'static str,
    reply: &'static str,
    keys: &'static [&'static str],
}

const PENDING_A: &str = "EMQ.ENQUEUE $q:job:$A $q:pending $A p";
const CLAIM: &str = "EMQ.CLAIM $q:pending $q:active 60000";
const ACTIVE_RECORD: &str = "job:$A attempts=1 enqueued_at=T payload=p state=active updated_at=T";

const HAPPY: &[Case] = &[
    Case {
        name: "enqueue with options takes four keys",
        seed: &[],
        call: "EMQ.ENQUEUE $q:job:$A $q:pending $q:delayed $q:priority $A p PRIORITY 5 DELAY 60000",
        reply: "1",
        keys: &[
            "delayed $A@T",
            "job:$A attempts=0 enqueued_at=T payload=p state=delayed updated_at=T",
            "priority $A=5",
        ],
    },
    Case {
        name: "claim takes the head in order and mints tokens",
        seed: &[PENDING_A, "EMQ.ENQUEUE $q:job:$B $q:pending $B p"],
        call: "EMQ.CLAIM $q:pending $q:active 60000 COUNT 5",
        reply: "[[$A, 1, p], [$B, 1, p]]",
        keys: &[
            "active $A@T $B@T",
            ACTIVE_RECORD,
            "job:$B attempts=1 enqueued_at=T payload=p state=active updated_at=T",
        ],
    },
    Case { name: "claim of nothing", seed: &[], call: CLAIM, reply: "[]", keys: &[] },
    Case {
        name: "ack",
        seed: &[PENDING_A, CLAIM],
        call: "EMQ.ACK $q:job:$A $q:active $q:done $A 1",
        reply: "1",
        keys: &["done $A@T", "job:$A attempts=1 enqueued_at=T payload=p state=done updated_at=T"],
    },
    Case {
        name: "fail with attempts left",
        seed: &[PENDING_A, CLAIM],
        call: "EMQ.FAIL $q:job:$A $q:active $q:delayed $q:dead $q:errors $A 1 3 1000 boom",
        reply: "delayed",
        keys: &[
            "delayed $A@T",
            "errors $A=boom",
            "job:$A attempts=1 enqueued_at=T payload=p state=delayed updated_at=T",
        ],
    },
    Case {
        name: "fail at max attempts",
        seed: &[PENDING_A, CLAIM],
        call: "EMQ.FAIL $q:job:$A $q:active $q:delayed $q:dead $q:errors $A 1 1 1000 boom",
        reply: "dead",
        keys: &[
            "dead $A@T",
            "errors $A=boom",
            "job:$A attempts=1 enqueued_at=T payload=p state=dead updated_at=T",
        ],
    },
    Case {
        name: "extend",
        seed: &[PENDING_A, CLAIM],
        call: "EMQ.EXTEND $q:job:$A $q:active $A 1 5000",
        reply: "T",
        keys: &["active $A@T", ACTIVE_RECORD],
    },
    Case {
        name: "release",
        seed: &[PENDING_A, CLAIM],
        call: "EMQ.RELEASE $q:job:$A $q:active $q:pending $q:priority $A 1",
        reply: "1",
        keys: &["job:$A attempts=1 enqueued_at=T payload=p state=pending updated_at=T", "pending $A@0"],
    },
    Case {
        name: "reap an expired lease",
        seed: &["HSET $q:job:$A state active attempts 1 payload p", "ZADD $q:active 1 $A"],
        call: "EMQ.REAP $q:active $q:pending $q:dead $q:errors $q:priority 3",
        reply: "[1, 0]",
        keys: &["job:$A attempts=1 payload=p state=pending updated_at=T", "pending $A@0"],
    },
    Case {
        name: "promote a due job",
        seed: &["HSET $q:job:$A state delayed attempts 0 payload p", "ZADD $q:delayed 1 $A"],
        call: "EMQ.PROMOTE $q:delayed $q:pending $q:priority LIMIT 10",
        reply: "1",
        keys: &["job:$A attempts=0 payload=p state=pending updated_at=T", "pending $A@0"],
    },
    Case {
        name: "purge a finished job",
        seed: &["HSET $q:job:$A state done attempts 1 payload p", "ZADD $q:done 1 $A", "HSET $q:errors $A e"],
        call: "EMQ.PURGE $q:done $q:priority $q:errors 0",
        reply: "1",
        keys: &[],
    },
    Case {
        name: "cancel",
        seed: &[PENDING_A],
        call: "EMQ.CANCEL $q:job:$A $q:pending $q:active $q:delayed $q:dead $q:cancelled $A",
        reply: "1",
        keys: &["cancelled $A@T", "job:$A attempts=0 enqueued_at=T payload=p state=cancelled updated_at=T"],
    },
    Case {
        name: "retry a dead job",
        seed: &["HSET $q:job:$A state dead attempts 3 payload p", "ZADD $q:dead 1 $A"],
        call: "EMQ.RETRY $q:job:$A $q:dead $q:pending $q:priority $A",
        reply: "1",
        keys: &["job:$A attempts=3 payload=p state=pending updated_at=T", "pending $A@0"],
    },
    Case {
        name: "inspect",
        seed: &[PENDING_A],
        call: "EMQ.INSPECT $q:job:$A $q:errors $A",
        reply: "[[state, pending, attempts, 0, payload, p, enqueued_at, T, updated_at, T], nil]",
        keys: &["job:$A attempts=0 enqueued_at=T payload=p state=pending updated_at=T", "pending $A@0"],
    },
    Case {
        name: "stats",
        seed: &[PENDING_A],
        call: "EMQ.STATS $q:pending $q:active $q:delayed $q:done $q:dead $q:cancelled",
        reply: "[1, 0, 0, 0, 0, 0]",
        keys: &["job:$A attempts=0 enqueued_at=T payload=p state=pending updated_at=T", "pending $A@0"],
    },
];

#[test]
fn every_command_does_its_transition() {
    let server = server_with(&[]);
    let mut conn = connect(&server);
    for case in HAPPY {
        let q = queue();
        seed(&mut conn, &q, case.seed);
        let reply =
            call(&mut conn, &expand(&q, case.call)).unwrap_or_else(|err| panic!("{}: {err}", case.name));
        let reply = render(&reply).replace(common::A, "$A").replace(common::B, "$B");
        assert_eq!(reply, case.reply, "{}", case.name);
        assert_eq!(snapshot(&mut conn, &q), case.keys, "{}", case.name);
        redis::cmd("FLUSHALL").query::<()>(&mut conn).unwrap();
    }
}

/// Seed, the call, and the error it must get; nothing may change.
const REFUSALS: &[(&str, &[&str], &str, &str)] = &[
    (
        "ack with a stale token",
        &[PENDING_A, CLAIM],
        "EMQ.ACK $q:job:$A $q:active $q:done $A 2",
        "EMQFENCE token does not hold the lease",
    ),
    (
        "extend after a cancel",
        &[PENDING_A, CLAIM, "EMQ.CANCEL $q:job:$A $q:pending $q:active $q:delayed $q:dead $q:cancelled $A"],
        "EMQ.EXTEND $q:job:$A $q:active $A 1 5000",
        "EMQFENCE token does not hold the lease",
    ),
    (
        "release of no job",
        &[],
        "EMQ.RELEASE $q:job:$A $q:active $q:pending $q:priority $A 1",
        "EMQNOJOB no such job",
    ),
    (
        "enqueue onto a string",
        &["SET $q:pending x"],
        "EMQ.ENQUEUE $q:job:$A $q:pending $A p",
        "EMQTYPE $q:pending holds a string, not a zset",
    ),
    (
        "claim into a list",
        &[PENDING_A, "RPUSH $q:active x"],
        CLAIM,
        "EMQTYPE $q:active holds a list, not a zset",
    ),
    (
        "claim of a record that is a set",
        &["ZADD $q:pending 0 $A", "SADD $q:job:$A x"],
        CLAIM,
        "EMQTYPE $q:job:$A holds a set, not a hash",
    ),
    (
        "fail into a stream",
        &[PENDING_A, CLAIM, "XADD $q:errors * f v"],
        "EMQ.FAIL $q:job:$A $q:active $q:delayed $q:dead $q:errors $A 1 3 0 e",
        "EMQTYPE $q:errors holds a stream, not a hash",
    ),
    (
        "stats of a hash",
        &["HSET $q:done f v"],
        "EMQ.STATS $q:pending $q:active $q:delayed $q:done $q:dead $q:cancelled",
        "EMQTYPE $q:done holds a hash, not a zset",
    ),
    (
        "a lease of 0",
        &[PENDING_A],
        "EMQ.CLAIM $q:pending $q:active 0",
        "EMQARG lease must be an integer in 1..=2147483647",
    ),
    (
        "a huge count",
        &[PENDING_A],
        "EMQ.CLAIM $q:pending $q:active 100 COUNT 99999999999999999999",
        "EMQARG COUNT must be an integer in 1..=1000",
    ),
    (
        "a float lease",
        &[PENDING_A, CLAIM],
        "EMQ.EXTEND $q:job:$A $q:active $A 1 1e3",
        "EMQARG lease must be an integer in 1..=2147483647",
    ),
    (
        "a negative limit",
        &[],
        "EMQ.REAP $q:active $q:pending $q:dead $q:errors $q:priority 3 LIMIT -1",
        "EMQARG LIMIT must be an integer in 1..=1000",
    ),
    (
        "a missing argument",
        &[],
        "EMQ.PURGE $q:done $q:priority $q:errors",
        "EMQARG age must be an integer in 0..=999999999999",
    ),
    (
        "keys of two queues",
        &[],
        "EMQ.PROMOTE $q:delayed emq:{other}:pending $q:priority",
        "EMQARG KEYS[2] must be $q:pending",
    ),
    (
        "retry of a pending job",
        &[PENDING_A],
        "EMQ.RETRY $q:job:$A $q:dead $q:pending $q:priority $A",
        "EMQSTATE cannot retry a pending job",
    ),
    (
        "inspect of a bad id",
        &[],
        "EMQ.INSPECT $q:job:XYZ $q:errors XYZ",
        "EMQKIND job id must be JOB-namespaced",
    ),
];

#[test]
fn refusals_answer_in_the_scripts_words_and_write_nothing() {
    let server = server_with(&[]);
    let mut conn = connect(&server);
    for (name, seeds, words, error) in REFUSALS {
        let q = queue();
        seed(&mut conn, &q, seeds);
        let before = snapshot(&mut conn, &q);
        let reply = call(&mut conn, &expand(&q, words));
        let expected = error.replace("$q:", &q).replace("$A", A);
        assert_eq!(reply, Err(expected), "{name}");
        assert_eq!(snapshot(&mut conn, &q), before, "{name} wrote something");
        redis::cmd("FLUSHALL").query::<()>(&mut conn).unwrap();
    }
}

#[test]
fn an_oversized_payload_is_refused() {
    let server = server_with(&[]);
    let mut conn = connect(&server);
    let q = queue();
    let (job, pending, payload) = (format!("{q}job:{A}"), format!("{q}pending"), vec![b'x'; 1_048_577]);
    let words: [&[u8]; 5] = [b"EMQ.ENQUEUE", job.as_bytes(), pending.as_bytes(), A.as_bytes(), &payload];
    assert_eq!(call(&mut conn, &words), Err("EMQSIZE payload exceeds 1048576 bytes".into()));
    assert_eq!(snapshot(&mut conn, &q), Vec::<String>::new());
}
