//! What only the module's own commands show: ENQUEUE's native record (its
//! `enqueued_at` on the server's clock, no `updated_at` yet), Redis's arity
//! error, and payloads as raw bytes. Every transition's behaviour and
//! refusals are one table run on Lua, Native and Embedded alike
//! (`crates/echomq/tests/transitions.rs`), and the conformance suite compares
//! them on random sequences.

mod common;

use common::{call, connect, queue, server_with, snapshot, A};
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
    assert!(!record.iter().any(|(field, _)| field == "updated_at"), "updated_at comes with a later write");
    record.retain(|(field, _)| field != "enqueued_at");
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
