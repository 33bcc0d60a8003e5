//! `EMQ.CLAIM … BLOCK <ms>`: a claimer waits on the pending key without
//! polling, is woken by the write that adds a job, times out with an empty
//! array, and never stalls the server for anyone else.

mod common;

use std::thread;
use std::time::{Duration, Instant};

use common::{arrange, call, connect, expand, info_field, queue, server_with, A, B};
use echomq_test_support::eventually_blocking;
use redis::Value;

fn claim(q: &str, block_ms: u64) -> Vec<String> {
    let keys = ["pending", "active", "config", "rate", "policy", "events", "headers", "wake"];
    let mut words = vec!["EMQ.CLAIM".to_owned(), keys.len().to_string()];
    words.extend(keys.map(|key| format!("{q}{key}")));
    words.extend(["30000", "BLOCK", &block_ms.to_string()].map(String::from));
    words
}

fn enqueue(q: &str, id: &str) -> Vec<String> {
    ["EMQ.ENQUEUE", "2", &format!("{q}job:{id}"), &format!("{q}pending"), id, "payload"]
        .map(String::from)
        .to_vec()
}

fn blocked_clients(conn: &mut redis::Connection) -> u64 {
    info_field(conn, "clients", "blocked_clients").and_then(|n| n.parse().ok()).unwrap_or(0)
}

fn job(id: &str) -> Value {
    claimed(id, 1, "payload")
}

fn claimed(id: &str, token: i64, payload: &str) -> Value {
    Value::Array(vec![Value::Array(vec![
        Value::BulkString(id.as_bytes().to_vec()),
        Value::Int(token),
        Value::BulkString(payload.as_bytes().to_vec()),
    ])])
}

#[test]
fn a_blocked_claim_is_woken_by_an_enqueue_and_gets_the_job() {
    let server = server_with(&[]);
    let mut producer = connect(&server);
    let mut worker = connect(&server);
    let q = queue();
    let words = claim(&q, 5000);
    let waiter = thread::spawn(move || {
        let reply = call(&mut worker, &words);
        (reply, Instant::now())
    });
    eventually_blocking("the claim to block", || blocked_clients(&mut producer) == 1);

    let enqueued = Instant::now();
    assert_eq!(call(&mut producer, &enqueue(&q, A)), Ok(Value::Int(1)));
    let (reply, answered) = waiter.join().unwrap();
    assert_eq!(reply, Ok(job(A)));
    let waited = answered.duration_since(enqueued);
    assert!(waited < Duration::from_millis(1000), "woken {waited:?} after the enqueue");
    let active: Vec<String> =
        redis::cmd("ZRANGE").arg(format!("{q}active")).arg(0).arg(-1).query(&mut producer).unwrap();
    assert_eq!(active, [A]);
}

#[test]
fn a_blocked_claim_times_out_with_an_empty_array() {
    let server = server_with(&[]);
    let mut worker = connect(&server);
    let q = queue();
    let start = Instant::now();
    assert_eq!(call(&mut worker, &claim(&q, 50)), Ok(Value::Array(vec![])));
    let waited = start.elapsed();
    assert!(waited >= Duration::from_millis(45), "answered after only {waited:?}");
    assert!(waited < Duration::from_millis(2000), "answered after {waited:?}");
}

#[test]
fn the_server_answers_others_while_a_claim_waits() {
    let server = server_with(&[]);
    let mut other = connect(&server);
    let mut worker = connect(&server);
    let q = queue();
    let words = claim(&q, 0);
    let waiter = thread::spawn(move || call(&mut worker, &words));
    eventually_blocking("the claim to block", || blocked_clients(&mut other) == 1);

    let start = Instant::now();
    for _ in 0..100 {
        let pong: String = redis::cmd("PING").query(&mut other).unwrap();
        assert_eq!(pong, "PONG");
    }
    let stats = ["EMQ.STATS", "6", "pending", "active", "delayed", "done", "dead", "cancelled"].map(|name| {
        if name.starts_with("EMQ") || name == "6" {
            name.to_owned()
        } else {
            format!("{q}{name}")
        }
    });
    assert_eq!(call(&mut other, &stats), Ok(Value::Array(vec![Value::Int(0); 6])));
    assert!(start.elapsed() < Duration::from_secs(1), "the server stalled: {:?}", start.elapsed());

    // BLOCK 0 waits without a limit: only a job ends it.
    assert_eq!(call(&mut other, &enqueue(&q, A)), Ok(Value::Int(1)));
    assert_eq!(waiter.join().unwrap(), Ok(job(A)));
}

#[test]
fn a_woken_claimer_that_loses_the_race_stays_blocked() {
    let server = server_with(&[]);
    let mut producer = connect(&server);
    let q = queue();
    let waiters: Vec<_> = (0..2)
        .map(|_| {
            let mut worker = connect(&server);
            let words = claim(&q, 10_000);
            thread::spawn(move || call(&mut worker, &words))
        })
        .collect();
    eventually_blocking("both claims to block", || blocked_clients(&mut producer) == 2);

    assert_eq!(call(&mut producer, &enqueue(&q, A)), Ok(Value::Int(1)));
    eventually_blocking("one claimer to be served", || {
        waiters.iter().filter(|w| w.is_finished()).count() == 1
    });
    assert_eq!(blocked_clients(&mut producer), 1, "the other one is still waiting");

    assert_eq!(call(&mut producer, &enqueue(&q, B)), Ok(Value::Int(1)));
    let mut served: Vec<Value> = waiters.into_iter().map(|w| w.join().unwrap().unwrap()).collect();
    served.sort_by_key(|reply| format!("{reply:?}"));
    assert_eq!(served, [job(A), job(B)]);
}

#[test]
fn inside_multi_a_blocking_claim_answers_at_once() {
    let server = server_with(&[]);
    let mut conn = connect(&server);
    let q = queue();
    let mut pipe = redis::pipe();
    pipe.atomic();
    let words = claim(&q, 0);
    pipe.cmd(&words[0]).arg(&words[1..]);
    let replies: Vec<Value> = pipe.query(&mut conn).unwrap();
    assert_eq!(replies, [Value::Array(vec![])]);
}

#[test]
fn every_write_into_pending_wakes_a_blocked_claim() {
    let server = server_with(&[]);
    let mut conn = connect(&server);
    let active = ["HSET $q:job:$A state active attempts 1 payload p", "ZADD $q:active 1 $A"];
    let cases: [(&str, &[&str], &str); 4] = [
        ("release", &active, "EMQ.RELEASE 7 $q:job:$A $q:active $q:pending $q:priority $q:events $q:config $q:wake $A 1"),
        ("reap", &active, "EMQ.REAP 9 $q:active $q:pending $q:dead $q:errors $q:priority $q:policy $q:events $q:config $q:wake 5"),
        (
            "promote",
            &["HSET $q:job:$A state delayed attempts 1 payload p", "ZADD $q:delayed 1 $A"],
            "EMQ.PROMOTE 6 $q:delayed $q:pending $q:priority $q:events $q:config $q:wake",
        ),
        (
            "retry",
            &["HSET $q:job:$A state dead attempts 1 payload p", "ZADD $q:dead 1 $A"],
            "EMQ.RETRY 7 $q:job:$A $q:dead $q:pending $q:priority $q:events $q:config $q:wake $A",
        ),
    ];
    for (name, arranged, waker) in cases {
        let q = queue();
        arrange(&mut conn, &q, arranged);
        let mut worker = connect(&server);
        let words = claim(&q, 10_000);
        let waiter = thread::spawn(move || call(&mut worker, &words));
        eventually_blocking("the claim to block", || blocked_clients(&mut conn) == 1);
        call(&mut conn, &expand(&q, waker)).unwrap_or_else(|err| panic!("{name}: {err}"));
        assert_eq!(waiter.join().unwrap(), Ok(claimed(A, 2, "p")), "{name}");
    }
}

#[test]
fn records_missing_at_the_head_do_not_make_a_claimer_sleep_on_a_ready_job() {
    let server = server_with(&[]);
    let mut conn = connect(&server);
    let q = queue();
    arrange(
        &mut conn,
        &q,
        &["ZADD $q:pending 0 JOB_0 0 JOB_1", "EMQ.ENQUEUE 2 $q:job:$A $q:pending $A payload"],
    );
    let start = Instant::now();
    assert_eq!(call(&mut conn, &claim(&q, 5000)), Ok(job(A)));
    assert!(start.elapsed() < Duration::from_secs(2), "it slept: {:?}", start.elapsed());
    // Without BLOCK, a claim answers as the script does: the orphan is dropped, nothing claimed.
    arrange(&mut conn, &q, &["ZADD $q:pending 0 JOB_0", "EMQ.ENQUEUE 2 $q:job:$B $q:pending $B payload"]);
    let plain = expand(
        &q,
        "EMQ.CLAIM 8 $q:pending $q:active $q:config $q:rate $q:policy $q:events $q:headers $q:wake 30000",
    );
    assert_eq!(call(&mut conn, &plain), Ok(Value::Array(vec![])));
    assert_eq!(call(&mut conn, &plain), Ok(job(B)));
}
