//! What only the module's own commands show: ENQUEUE's native record (the
//! seed's five fields, both stamps on the server's clock), the key count
//! every call leads with and the key specs that read it (`COMMAND GETKEYS`),
//! `EMQ.VERSION`, Redis's arity error, and payloads as raw bytes. Every
//! transition's behaviour and refusals are one table run on Lua, Native and
//! Embedded alike (`crates/echomq/tests/transitions.rs`), and the conformance
//! suite compares them on random sequences.

mod common;

use common::{call, connect, queue, server_with, snapshot, A};
use echomq_core::{Name, Role, PROTOCOL};
use redis::Value;

#[test]
fn enqueue_writes_the_seeds_five_fields_once_and_refuses_bad_calls() {
    let server = server_with(&[]);
    let mut conn = connect(&server);
    let q = queue();
    let (job, pending) = (format!("{q}job:{A}"), format!("{q}pending"));
    let enqueue = ["EMQ.ENQUEUE", "2", &job, &pending, A, "hello"];

    assert_eq!(call(&mut conn, &enqueue), Ok(Value::Int(1)));
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query(&mut conn).unwrap();
    let now = secs * 1000 + micros / 1000;
    let mut record: Vec<(String, String)> = redis::cmd("HGETALL").arg(&job).query(&mut conn).unwrap();
    record.sort();
    let stamp = |field: &str| -> String {
        record.iter().find(|(f, _)| f == field).map(|(_, v)| v.clone()).unwrap_or_default()
    };
    let enqueued_at: u64 = stamp("enqueued_at").parse().unwrap();
    assert!(enqueued_at <= now && now - enqueued_at < 10_000, "server ms: {enqueued_at} vs {now}");
    let born = enqueued_at.to_string();
    let fields = [
        ("attempts", "0"),
        ("enqueued_at", born.as_str()),
        ("payload", "hello"),
        ("state", "pending"),
        ("updated_at", born.as_str()),
    ];
    assert_eq!(record, fields.map(|(f, v)| (f.to_owned(), v.to_owned())), "exactly five fields");
    let before = snapshot(&mut conn, &q);
    assert_eq!(before.len(), 2, "the record and pending, nothing else: {before:?}");

    assert_eq!(call(&mut conn, &enqueue), Ok(Value::Int(0)), "a duplicate");
    assert_eq!(snapshot(&mut conn, &q), before, "a duplicate changes nothing");

    let bad_kind = call(&mut conn, &["EMQ.ENQUEUE", "2", &format!("{q}job:XYZ"), &pending, "XYZ", "x"]);
    assert!(bad_kind.clone().unwrap_err().starts_with("EMQKIND"), "{bad_kind:?}");
    let arity = call(&mut conn, &["EMQ.ENQUEUE"]).unwrap_err();
    assert_eq!(arity, "ERR wrong number of arguments for 'emq.enqueue' command");
    assert_eq!(snapshot(&mut conn, &q), before, "refusals change nothing");
}

#[test]
fn a_call_without_its_key_count_or_with_another_is_refused_and_changes_nothing() {
    let server = server_with(&[]);
    let mut conn = connect(&server);
    let q = queue();
    let (job, pending) = (format!("{q}job:{A}"), format!("{q}pending"));
    let wrong = "EMQARG wrong number of keys: takes 2 or 11 or 12 or 13";
    for count in [None, Some("-2"), Some("2.0"), Some("two"), Some("")] {
        let mut words = vec!["EMQ.ENQUEUE"];
        words.extend(count);
        words.extend([job.as_str(), pending.as_str(), A, "hello"]);
        assert_eq!(call(&mut conn, &words), Err(wrong.to_owned()), "{words:?}");
    }
    // A count that splits the words but is none of the forms: refused
    // after the id's kind, as EVALSHA's script refuses it.
    let delayed = format!("{q}delayed");
    let three = ["EMQ.ENQUEUE", "3", &job, &pending, &delayed, A, "hello"];
    assert_eq!(call(&mut conn, &three), Err(wrong.to_owned()));
    let id_among_keys = ["EMQ.ENQUEUE", "3", &job, &pending, A, "hello"];
    assert_eq!(call(&mut conn, &id_among_keys), Err("EMQKIND job id must be JOB-namespaced".to_owned()));
    // More keys counted than the call holds.
    assert_eq!(call(&mut conn, &["EMQ.ENQUEUE", "11", &job, &pending, A, "hello"]), Err(wrong.to_owned()));
    let stats = ["EMQ.STATS", "5", "a", "b", "c", "d", "e"];
    assert_eq!(call(&mut conn, &stats), Err("EMQARG wrong number of keys: takes 6 or 7".to_owned()));
    assert_eq!(snapshot(&mut conn, &q), Vec::<String>::new(), "nothing written");
}

/// Every key of `name`'s longest form for the queue `q`, a job's record for `A`.
fn all_keys(name: Name, q: &str) -> Vec<String> {
    let described = name.describe();
    described
        .keys
        .iter()
        .map(|role| match role {
            Role::Job => format!("{q}job:{A}"),
            Role::Children => format!("{q}children:{A}"),
            Role::Finished => format!("{q}done"),
            Role::Unfinished => format!("{q}delayed"),
            other => format!("{q}{}", other.fixed().unwrap_or_default()),
        })
        .collect()
}

#[test]
fn command_getkeys_gives_exactly_each_calls_keys() {
    let server = server_with(&[]);
    let mut conn = connect(&server);
    let q = queue();
    for name in Name::ALL {
        let described = name.describe();
        for count in described.forms {
            let keys = &all_keys(*name, &q)[..*count];
            let mut getkeys = redis::cmd("COMMAND");
            getkeys.arg("GETKEYS").arg(described.command).arg(count).arg(keys);
            // An argument or two after the keys, as every call but STATS has.
            getkeys.arg(A).arg("1");
            let found: Vec<String> = getkeys.query(&mut conn).unwrap_or_else(|err| panic!("{name}: {err}"));
            assert_eq!(found, keys, "{name} with {count} keys");
            // Each key flagged as the transition reads or writes it.
            let mut flagged = redis::cmd("COMMAND");
            flagged.arg("GETKEYSANDFLAGS").arg(described.command).arg(count).arg(keys).arg(A).arg("1");
            let flags: Vec<(String, Vec<String>)> = flagged.query(&mut conn).unwrap();
            let want = if described.reads_only() { "RO" } else { "RW" };
            assert!(flags.iter().all(|(_, flags)| flags.iter().any(|f| f == want)), "{name}: {flags:?}");
        }
        // A count the command refuses names no key, not the words after it.
        let refused = described.forms.iter().max().unwrap() + 1;
        let mut getkeys = redis::cmd("COMMAND");
        getkeys.arg("GETKEYS").arg(described.command).arg(refused).arg(all_keys(*name, &q)).arg(A).arg("1");
        getkeys.arg("x").arg("y");
        let found: redis::RedisResult<Vec<String>> = getkeys.query(&mut conn);
        assert!(found.as_ref().is_err() || found.as_ref().is_ok_and(Vec::is_empty), "{name}: {found:?}");
    }
    let info: Value = redis::cmd("COMMAND").arg("INFO").arg("EMQ.STATS").query(&mut conn).unwrap();
    assert!(holds(&info, "keynum"), "a keynum key spec: {info:?}");
}

/// Whether `word` is one of the strings anywhere in `value` (an array, a
/// map or a set of COMMAND INFO's reply), as a whole string.
fn holds(value: &Value, word: &str) -> bool {
    match value {
        Value::BulkString(bytes) => bytes == word.as_bytes(),
        Value::SimpleString(text) => text == word,
        Value::Array(items) | Value::Set(items) => items.iter().any(|item| holds(item, word)),
        Value::Map(pairs) => pairs.iter().any(|(k, v)| holds(k, word) || holds(v, word)),
        _ => false,
    }
}

#[test]
fn emq_version_answers_the_protocol_and_module_list_says_it_too() {
    let server = server_with(&[]);
    let mut conn = connect(&server);
    let version: Value = redis::cmd("EMQ.VERSION").query(&mut conn).unwrap();
    assert_eq!(version, Value::BulkString(b"1.11".to_vec()));
    assert_eq!(PROTOCOL.to_string(), "1.11");
    let refused = call(&mut conn, &["EMQ.VERSION", "extra"]).unwrap_err();
    assert_eq!(refused, "EMQARG EMQ.VERSION takes no arguments");
    let modules: Vec<Vec<Value>> = redis::cmd("MODULE").arg("LIST").query(&mut conn).unwrap();
    let echomq = modules
        .iter()
        .find(|module| module.contains(&Value::BulkString(b"echomq".to_vec())))
        .expect("the module is listed");
    let number = echomq.iter().skip_while(|v| **v != Value::BulkString(b"ver".to_vec())).nth(1);
    assert_eq!(number, Some(&Value::Int(11100)), "1.11 as major*10000 + minor*100: {echomq:?}");
    let flags: Value = redis::cmd("COMMAND").arg("INFO").arg("EMQ.VERSION").query(&mut conn).unwrap();
    assert!(holds(&flags, "readonly") && holds(&flags, "fast"), "{flags:?}");
}

#[test]
fn an_oversized_payload_is_refused() {
    let server = server_with(&[]);
    let mut conn = connect(&server);
    let q = queue();
    let (job, pending, payload) = (format!("{q}job:{A}"), format!("{q}pending"), vec![b'x'; 1_048_577]);
    let words: [&[u8]; 6] =
        [b"EMQ.ENQUEUE", b"2", job.as_bytes(), pending.as_bytes(), A.as_bytes(), &payload];
    assert_eq!(call(&mut conn, &words), Err("EMQSIZE payload exceeds 1048576 bytes".into()));
    assert_eq!(snapshot(&mut conn, &q), Vec::<String>::new());
}
