//! Bad input gets a clear typed error and changes nothing: bad queue names,
//! bad ids, EMQKIND through a raw EVALSHA, keys of the wrong type, oversized
//! payloads, malformed arguments and keys.

mod common;

use echomq::ErrorKind;
use std::time::Duration;

use common::example::{example, Example};
use common::{harness, run, Call, Harness, A};
use echomq::executor::execute;
use echomq::executor::script_source;
use echomq::keyspace::Role;
use echomq::transition::*;
use echomq::{EnqueueOptions, Error, JobId, Keyspace, Name, Queue};
use echomq_core::limits;
use redis::Value;

/// Send a transition's script straight to the server, as any speaker could.
async fn eval(h: &Harness, transition: &str, keys: &[String], args: &[&[u8]]) -> Result<Value, Error> {
    let name =
        echomq::Name::ALL.iter().find(|name| name.as_str() == transition).expect("a transition's name");
    let script = redis::Script::new(&script_source(*name));
    let mut invocation = script.prepare_invoke();
    for key in keys {
        invocation.key(key);
    }
    for arg in args {
        invocation.arg(*arg);
    }
    let mut conn = h.conn.clone();
    // The error reply as the server sent it, through the host's typed mapping.
    invocation.invoke_async(&mut conn).await.map_err(Error::from)
}

/// A refusal as its wire text: `EMQARG lease must be …`.
fn text(reply: Result<Value, Error>) -> Result<Value, String> {
    reply.map_err(|err| err.to_string())
}

/// A transition's name, its KEYS and its ARGV, sent raw.
type RawCall<'a> = (&'a str, Vec<String>, Vec<&'a [u8]>);
/// A raw call and the error reply it must get.
type Refusal<'a> = (&'a str, Vec<String>, Vec<&'a [u8]>, &'a str);

fn a() -> JobId {
    A.parse().unwrap()
}

#[tokio::test]
async fn bad_queue_names_are_refused_before_anything_is_sent() {
    let h = harness().await;
    for bad in ["", "a{b}", "}", "nul\0byte", &"q".repeat(256)] {
        let err = Queue::new(std::sync::Arc::new(echomq::Lua::new(h.conn.clone())), bad).expect_err(bad);
        assert!(matches!(err, Error { kind: ErrorKind::InvalidQueue, .. }), "{bad:?}: {err}");
        assert!(matches!(Keyspace::new(bad), Err(Error { kind: ErrorKind::InvalidQueue, .. })));
    }
    assert_eq!(h.dbsize().await, 0);
}

#[tokio::test]
async fn bad_ids_are_refused_by_the_host() {
    for bad in ["XYZ", "JOB_", "JOB_0123", "JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1U", "job_01JDQ3H6Z8M4W0T9XK2B7C5N1R"]
    {
        assert!(matches!(JobId::branded(bad), Err(Error { kind: ErrorKind::InvalidId, .. })), "{bad:?}");
    }
    // What the server's kind gate would refuse, the host refuses too.
    for bad in ["XYZ", "job_01JDQ3H6Z8M4W0T9XK2B7C5N1R", ""] {
        assert!(matches!(bad.parse::<JobId>(), Err(Error { kind: ErrorKind::InvalidId, .. })), "{bad:?}");
    }
}

#[tokio::test]
async fn a_non_job_id_gets_emqkind_from_every_script_and_writes_nothing() {
    let h = harness().await;
    let p = h.prefix();
    let job = format!("{p}job:XYZ");
    let key = |name: &str| format!("{p}{name}");
    // Every transition that takes an id, with all its keys, the record's XYZ's.
    let calls: Vec<RawCall> = Name::ALL
        .iter()
        .filter_map(|name| Some((name, example(*name).naming_a_non_job?.to_vec())))
        .map(|(name, args)| {
            let keys = name.describe().keys.iter().map(|role| match role {
                Role::Job => job.clone(),
                // A parent's dependencies (FLOW's, RESOLVE's, CHILDREN's), XYZ's too.
                Role::Children => key("children:XYZ"),
                // REMOVE's set: any of the seven will do.
                Role::AnySet => key("dead"),
                other => key(other.fixed().expect("a fixed key")),
            });
            (name.as_str(), keys.collect(), args)
        })
        .collect();
    for (transition, keys, args) in calls {
        let reply = eval(&h, transition, &keys, &args).await;
        assert!(
            matches!(&reply, Err(err) if err.kind == ErrorKind::Kind && err.text() == "job id must be JOB-namespaced"),
            "{transition}: {reply:?}"
        );
    }
    assert_eq!(h.dbsize().await, 0);
}

/// A valid call of every transition, with the keys it needs arranged and
/// the records it reads besides its KEYS: [`example`]'s.
fn happy_calls() -> Vec<(Name, &'static [&'static str], Call, Vec<JobId>)> {
    Name::ALL
        .iter()
        .map(|name| {
            let Example { given, happy, reads, .. } = example(*name);
            let call = happy();
            assert_eq!(call.name(), *name, "{name}'s happy call is of another transition");
            (*name, given, call, reads.iter().map(|id| id.parse().unwrap()).collect())
        })
        .collect()
}

#[tokio::test]
async fn a_key_of_the_wrong_type_gets_emqtype_and_nothing_changes() {
    let h = harness().await;
    let mut conn = h.conn.clone();
    let mut checked = 0;
    for (name, given, call, reads) in happy_calls() {
        let mut keys = call.keys(&h.keys);
        keys.extend(reads.iter().map(|job| h.keys.job(job)));
        // ENQUEUE and ENQUEUEMANY read their parents key only for PARENT
        // (ENQUEUE's excludes the UNIQUE its happy call holds): that key
        // is never checked there.
        if matches!(name, Name::Enqueue | Name::EnqueueMany) {
            keys.retain(|key| *key != h.keys.role(Role::Parents, None).unwrap());
        }
        for key in keys {
            let _: () = redis::cmd("FLUSHDB").query_async(&mut conn).await.unwrap();
            h.arrange(given).await;
            let _: () = redis::pipe().del(&key).set(&key, "clobbered").query_async(&mut conn).await.unwrap();
            let before = h.snapshot().await;
            let reply = run(&h.keys, h.lua.as_ref(), &call).await;
            assert_eq!(reply, "Err(EMQTYPE)", "{name} with {key} clobbered");
            assert_eq!(before, h.snapshot().await, "{name} wrote with {key} clobbered");
            checked += 1;
        }
    }
    assert_eq!(checked, 288, "every key of every transition, and the records they derive");
}

#[tokio::test]
async fn an_oversized_payload_is_refused_and_writes_nothing() {
    let h = harness().await;
    let big = vec![b'x'; limits::MAX_PAYLOAD + 1];
    let err = h.queue.enqueue(big.clone()).await.unwrap_err();
    assert!(matches!(err, Error { kind: ErrorKind::TooLarge, .. }), "{err}");

    let p = h.prefix();
    let keys = [format!("{p}job:{A}"), format!("{p}pending")];
    let reply = text(eval(&h, "enqueue", &keys, &[A.as_bytes(), &big]).await);
    assert_eq!(reply, Err("EMQSIZE payload exceeds 1048576 bytes".into()));
    assert_eq!(h.dbsize().await, 0);

    // The limit itself is fine.
    let id = h.queue.enqueue(vec![b'x'; limits::MAX_PAYLOAD]).await.unwrap();
    assert_eq!(h.queue.inspect(&id).await.unwrap().unwrap().record.payload.len(), limits::MAX_PAYLOAD);
}

/// ENQUEUEMANY's payloads: over the limit, refused by the host before
/// sending and by the script, which then enqueues none of the call's jobs;
/// the limit itself is fine.
#[tokio::test]
async fn an_oversized_payload_in_enqueuemany_is_refused_and_writes_nothing() {
    let h = harness().await;
    let big = vec![b'x'; limits::MAX_PAYLOAD + 1];
    let b: JobId = common::B.parse().unwrap();
    let call =
        EnqueueMany { jobs: vec![(a(), b"p".to_vec()), (b.clone(), big.clone())], parent: None, group: None };
    assert!(matches!(call.args(), Err(Error { kind: ErrorKind::TooLarge, .. })));
    let keys = call.keys(&h.keys);
    let reply =
        text(eval(&h, "enqueuemany", &keys, &[A.as_bytes(), b"p", b.as_str().as_bytes(), &big]).await);
    assert_eq!(reply, Err("EMQSIZE payload exceeds 1048576 bytes".into()));
    assert_eq!(h.dbsize().await, 0, "neither job enqueued");
    let fits = vec![b'x'; limits::MAX_PAYLOAD];
    let reply = eval(&h, "enqueuemany", &keys, &[A.as_bytes(), &fits]).await.unwrap();
    assert_eq!(reply, Value::Array(vec![Value::Int(1)]));
}

#[tokio::test]
async fn bad_schedules_are_refused_and_write_nothing() {
    let h = harness().await;
    let big = vec![b'x'; limits::MAX_DEFINITION + 1];
    let call = Schedule { name: "s".into(), definition: big.clone(), next: 1000 };
    assert!(matches!(call.args(), Err(Error { kind: ErrorKind::TooLarge, .. })));
    let keys = [h.keys.schedules(), h.keys.ticks()];
    let reply = text(eval(&h, "schedule", &keys, &[b"s", &big, b"1000"]).await);
    assert_eq!(reply, Err(format!("EMQSIZE definition exceeds {} bytes", limits::MAX_DEFINITION)));
    let long = vec![b'n'; limits::MAX_SCHEDULE_NAME + 1];
    let reply = text(eval(&h, "schedule", &keys, &[&long, b"d", b"1000"]).await);
    assert_eq!(reply, Err("EMQARG schedule name must be 1 to 200 bytes".into()));
    let reply = text(eval(&h, "unschedule", &keys, &[b""]).await);
    assert_eq!(reply, Err("EMQARG schedule name must be 1 to 200 bytes".into()));

    // The host refuses before sending: a bad name, interval, expression, zone or bound.
    let every = |name: &str, ms: u64| echomq::Schedule::every(name, Duration::from_millis(ms), "p");
    assert!(matches!(every("", 1000), Err(Error { kind: ErrorKind::Argument, .. })));
    assert!(matches!(every(&"n".repeat(201), 1000), Err(Error { kind: ErrorKind::Argument, .. })));
    assert!(matches!(every("s", 0), Err(Error { kind: ErrorKind::Argument, .. })));
    assert!(matches!(
        echomq::Schedule::cron("s", "61 * * * *", "UTC", "p"),
        Err(Error { kind: ErrorKind::Argument, .. })
    ));
    assert!(matches!(
        echomq::Schedule::cron("s", "* * * * *", "Nowhere/Else", "p"),
        Err(Error { kind: ErrorKind::Argument, .. })
    ));
    let unbounded = every("s", 1000).unwrap().missed(echomq::Missed::All(1001));
    assert!(matches!(unbounded, Err(Error { kind: ErrorKind::Argument, .. })));
    let fire =
        Fire { id: a(), payload: b"p".to_vec(), name: "s".into(), tick: 2000, next: 2000, skip: false };
    assert!(matches!(fire.args(), Err(Error { kind: ErrorKind::Argument, .. })));
    assert!(matches!(h.queue.schedules().remove("").await, Err(Error { kind: ErrorKind::Argument, .. })));
    assert_eq!(h.dbsize().await, 0);
}

#[tokio::test]
async fn an_oversized_progress_is_refused_and_writes_nothing() {
    let h = harness().await;
    h.queue.enqueue(b"p".to_vec()).await.unwrap();
    let job = h.queue.claim(Duration::from_secs(60)).await.unwrap().unwrap();
    let before = h.snapshot().await;
    let big = vec![b'x'; limits::MAX_PROGRESS + 1];
    let err = job.progress(big.clone()).await.unwrap_err();
    assert!(matches!(err, Error { kind: ErrorKind::TooLarge, .. }), "{err}");

    let keys = [h.keys.job(&job.id), h.keys.progress(), h.keys.events(), h.keys.config()];
    let token = job.token.to_string();
    let reply =
        text(eval(&h, "progress", &keys, &[job.id.as_str().as_bytes(), token.as_bytes(), &big]).await);
    assert_eq!(reply, Err("EMQSIZE progress exceeds 4096 bytes".into()));
    assert_eq!(h.snapshot().await, before, "nothing written");

    // The limit itself is fine.
    job.progress(vec![b'x'; limits::MAX_PROGRESS]).await.unwrap();
    let seen = h.queue.inspect(&job.id).await.unwrap().unwrap();
    assert_eq!(seen.progress.map(|p| p.len()), Some(limits::MAX_PROGRESS));
}

#[tokio::test]
async fn an_oversized_result_is_refused_and_writes_nothing() {
    let h = harness().await;
    h.queue.enqueue(b"p".to_vec()).await.unwrap();
    let job = h.queue.claim(Duration::from_secs(60)).await.unwrap().unwrap().into_job();
    // Each refused call ends a lease handle; the same lease, handed again.
    let held = |job: &echomq::Claimed| echomq::Lease::held(&h.queue, job.id.clone(), job.token);
    let before = h.snapshot().await;
    let big = vec![b'x'; limits::MAX_RESULT + 1];
    let err = held(&job).ack_with(big.clone()).await.unwrap_err();
    assert!(matches!(err, Error { kind: ErrorKind::TooLarge, .. }), "{err}");

    let keys = [
        h.keys.job(&job.id),
        h.keys.active(),
        h.keys.done(),
        h.keys.results(),
        h.keys.events(),
        h.keys.config(),
    ];
    let token = job.token.to_string();
    let args: [&[u8]; 4] = [job.id.as_str().as_bytes(), token.as_bytes(), b"RESULT", &big];
    let reply = text(eval(&h, "ack", &keys, &args).await);
    assert_eq!(reply, Err("EMQSIZE result exceeds 1048576 bytes".into()));
    assert_eq!(h.snapshot().await, before, "nothing written");
    // ACKNEXT's RESULT, by the host and by the script, with the job to claim after it.
    h.queue.enqueue(b"next".to_vec()).await.unwrap();
    let before = h.snapshot().await;
    let err = held(&job).ack_and_claim(Some(big.clone()), Duration::from_secs(60), 1).await.unwrap_err();
    assert!(matches!(err, Error { kind: ErrorKind::TooLarge, .. }), "{err}");
    let call = AckNext { ack: Ack::of(&job), lease: Duration::from_secs(60), count: 1 };
    let keys = call.keys(&h.keys);
    let args: [&[u8]; 5] = [job.id.as_str().as_bytes(), token.as_bytes(), b"60000", b"RESULT", &big];
    let reply = text(eval(&h, "acknext", &keys, &args).await);
    assert_eq!(reply, Err("EMQSIZE result exceeds 1048576 bytes".into()));
    assert_eq!(h.snapshot().await, before, "nothing acked, nothing claimed");

    // ACKMANY's, by the host and by the script: nothing acked, not even the
    // job before it.
    let other = h.queue.claim(Duration::from_secs(60)).await.unwrap().unwrap().into_job();
    let before = h.snapshot().await;
    let acks = vec![Ack::of(&other), Ack { result: Some(big.clone()), ..Ack::of(&job) }];
    let err = execute(h.lua.as_ref(), &h.keys, &AckMany { acks }).await.unwrap_err();
    assert!(matches!(err, Error { kind: ErrorKind::TooLarge, .. }), "{err}");
    let keys = AckMany { acks: vec![Ack::of(&job)] }.keys(&h.keys);
    let other_token = other.token.to_string();
    let args: [&[u8]; 6] = [
        other.id.as_str().as_bytes(),
        other_token.as_bytes(),
        job.id.as_str().as_bytes(),
        token.as_bytes(),
        b"RESULT",
        &big,
    ];
    let reply = text(eval(&h, "ackmany", &keys, &args).await);
    assert_eq!(reply, Err("EMQSIZE result exceeds 1048576 bytes".into()));
    assert_eq!(h.snapshot().await, before, "nothing acked");

    // The limit itself is fine, and the result is read back whole.
    held(&job).ack_with(vec![b'x'; limits::MAX_RESULT]).await.unwrap();
    assert_eq!(h.queue.result(&job.id).await.unwrap().map(|r| r.len()), Some(limits::MAX_RESULT));
}

#[tokio::test]
async fn malformed_calls_get_emqarg_and_write_nothing() {
    let h = harness().await;
    let p = h.prefix();
    let key = |name: &str| format!("{p}{name}");
    let job = key(&format!("job:{A}"));
    let other_queue = "emq:{elsewhere}:pending".to_string();
    let keys = |names: &[&str]| names.iter().map(|name| key(name)).collect::<Vec<_>>();
    let claim = || keys(&["pending", "active", "config", "rate", "policy", "events", "headers", "wake"]);
    let config = || keys(&["config", "pending", "priority", "rate", "events", "wake"]);
    let enqueue = || {
        let rest = ["pending", "delayed", "priority", "policy", "unique", "unique_until", "events", "config"];
        [vec![job.clone()], keys(&rest), keys(&["headers", "wake"])].concat()
    };
    let cases: Vec<Refusal> = vec![
        ("claim", claim(), vec![b"0"], "EMQARG lease must be an integer in 1..=2147483647"),
        ("claim", claim(), vec![b"1e3"], "EMQARG lease must be an integer in 1..=2147483647"),
        ("claim", claim(), vec![b" 5"], "EMQARG lease must be an integer in 1..=2147483647"),
        ("claim", claim(), vec![], "EMQARG lease must be an integer in 1..=2147483647"),
        ("claim", claim(), vec![b"1000", b"COUNT", b"1001"], "EMQARG COUNT must be an integer in 1..=1000"),
        ("claim", claim(), vec![b"1000", b"COUNT"], "EMQARG COUNT must be an integer in 1..=1000"),
        ("claim", claim(), vec![b"1000", b"COUNT", b"1", b"count", b"2"], "EMQARG COUNT given twice"),
        ("claim", claim(), vec![b"1000", b"BLOCK", b"5"], "EMQARG unknown option BLOCK"),
        ("claim", vec![key("pending")], vec![b"1000"], "EMQARG wrong number of keys: takes 8"),
        (
            "claim",
            keys(&["active", "pending", "config", "rate", "policy", "events", "headers", "wake"]),
            vec![b"1000"],
            "EMQARG KEYS[1] must be emq:{<queue>}:pending",
        ),
        (
            "claim",
            [
                vec![key("pending"), other_queue.clone()],
                keys(&["config", "rate", "policy", "events", "headers", "wake"]),
            ]
            .concat(),
            vec![b"1000"],
            &*Box::leak(format!("EMQARG KEYS[2] must be {p}active").into_boxed_str()),
        ),
        (
            "claim",
            vec![key("pending"), key("active"), key("config")],
            vec![b"1000"],
            "EMQARG wrong number of keys: takes 8",
        ),
        ("config", config(), vec![b"PAUSED", b"yes"], "EMQARG PAUSED must be an integer in 0..=1"),
        ("config", config(), vec![b"PAUSED", b"-1"], "EMQARG PAUSED must be an integer in 0..=1"),
        ("config", config(), vec![b"PAUSED"], "EMQARG PAUSED must be an integer in 0..=1"),
        (
            "config",
            config(),
            vec![b"CONCURRENCY", b"2147483648"],
            "EMQARG CONCURRENCY must be an integer in 0..=2147483647",
        ),
        (
            "config",
            config(),
            vec![b"CONCURRENCY", b"1.5"],
            "EMQARG CONCURRENCY must be an integer in 0..=2147483647",
        ),
        ("config", config(), vec![b"PAUSED", b"1", b"paused", b"0"], "EMQARG PAUSED given twice"),
        ("config", config(), vec![b"LIMIT", b"1"], "EMQARG unknown option LIMIT"),
        (
            "config",
            vec![key("config"), key("pending"), key("priority")],
            vec![],
            "EMQARG wrong number of keys: takes 6",
        ),
        ("config", config(), vec![b"RATE", b"5"], "EMQARG RATE needs PER"),
        ("config", config(), vec![b"PER", b"1000"], "EMQARG PER needs RATE"),
        (
            "config",
            config(),
            vec![b"RATE", b"100001", b"PER", b"1"],
            "EMQARG RATE must be an integer in 0..=100000",
        ),
        (
            "config",
            config(),
            vec![b"RATE", b"5", b"PER", b"0"],
            "EMQARG PER must be an integer in 1..=86400000",
        ),
        (
            "config",
            config(),
            vec![b"RATE", b"5", b"PER", b"86400001"],
            "EMQARG PER must be an integer in 1..=86400000",
        ),
        (
            "config",
            keys(&["pending", "config", "priority", "rate", "events", "wake"]),
            vec![],
            "EMQARG KEYS[1] must be emq:{<queue>}:config",
        ),
        ("enqueue", vec![job.clone(), key("pending")], vec![A.as_bytes()], "EMQARG payload is missing"),
        (
            "enqueue",
            vec![key(&format!("job:{}", "JOB_00000000000000000000000002")), key("pending")],
            vec![A.as_bytes(), b"p"],
            "EMQARG KEYS[1] must be emq:{<queue>}:job:<id>",
        ),
        (
            "enqueue",
            vec![job.clone(), key("pending")],
            vec![A.as_bytes(), b"p", b"PRIORITY", b"1"],
            "EMQARG PRIORITY, DELAY and AT need all eleven keys",
        ),
        (
            "enqueue",
            enqueue(),
            vec![A.as_bytes(), b"p", b"DELAY", b"5", b"AT", b"5"],
            "EMQARG DELAY and AT exclude each other",
        ),
        (
            "enqueue",
            enqueue(),
            vec![A.as_bytes(), b"p", b"PRIORITY", b"2147483648"],
            "EMQARG PRIORITY must be an integer in -2147483648..=2147483647",
        ),
        (
            "enqueue",
            enqueue(),
            vec![A.as_bytes(), b"p", b"UNIQUE", b"", b"UNIQUE_FOR", b"1000"],
            "EMQARG UNIQUE must be 1 to 512 bytes",
        ),
        (
            "enqueue",
            enqueue(),
            vec![A.as_bytes(), b"p", b"UNIQUE", &[b'k'; 513], b"UNIQUE_FOR", b"1000"],
            "EMQARG UNIQUE must be 1 to 512 bytes",
        ),
        (
            "enqueue",
            enqueue(),
            vec![A.as_bytes(), b"p", b"UNIQUE", b"k", b"UNIQUE_FOR", b"1000", b"UNIQUE_DONE", b"2"],
            "EMQARG UNIQUE_DONE must be an integer in 0..=1",
        ),
        (
            "defer",
            [vec![job.clone()], keys(&["active", "delayed", "policy", "config", "events"])].concat(),
            vec![A.as_bytes(), b"1", b"-1", b"3"],
            "EMQARG delay must be an integer in 0..=999999999999",
        ),
        (
            "trim",
            vec![
                key("done"),
                key("priority"),
                key("errors"),
                key("progress"),
                key("policy"),
                key("results"),
                key("headers"),
                key("config"),
            ],
            vec![b"LIMIT", b"1001"],
            "EMQARG LIMIT must be an integer in 1..=1000",
        ),
        (
            "enqueue",
            vec![job.clone(), key("pending")],
            vec![A.as_bytes(), b"p", b"ATTEMPTS", b"3"],
            "EMQARG ATTEMPTS, BACKOFF, BACKOFF_EXP and TIMEOUT need all eleven keys",
        ),
        (
            "enqueue",
            enqueue(),
            vec![A.as_bytes(), b"p", b"BACKOFF", b"5", b"BACKOFF_EXP", b"5"],
            "EMQARG BACKOFF and BACKOFF_EXP exclude each other",
        ),
        (
            "enqueue",
            enqueue(),
            vec![A.as_bytes(), b"p", b"TIMEOUT", b"0"],
            "EMQARG TIMEOUT must be an integer in 1..=2147483647",
        ),
        (
            "enqueue",
            enqueue(),
            vec![A.as_bytes(), b"p", b"ATTEMPTS", b"-1"],
            "EMQARG ATTEMPTS must be an integer in 0..=2147483647",
        ),
        (
            "enqueue",
            enqueue(),
            vec![A.as_bytes(), b"p", b"ATTEMPTS", b"1", b"attempts", b"2"],
            "EMQARG ATTEMPTS given twice",
        ),
        (
            "enqueue",
            enqueue(),
            vec![A.as_bytes(), b"p", b"BACKOFF_EXP", b"1000000000000"],
            "EMQARG BACKOFF_EXP must be an integer in 0..=999999999999",
        ),
        (
            "enqueue",
            {
                let mut keys = enqueue();
                keys[4] = key("priorities");
                keys
            },
            vec![A.as_bytes(), b"p", b"ATTEMPTS", b"1"],
            &*Box::leak(format!("EMQARG KEYS[5] must be {p}policy").into_boxed_str()),
        ),
        (
            "ack",
            [vec![job.clone()], keys(&["active", "done", "results", "events", "config"])].concat(),
            vec![A.as_bytes(), b"0"],
            "EMQARG token must be an integer in 1..=999999999999999",
        ),
        (
            "ack",
            [vec![job.clone()], keys(&["active", "done", "results", "events", "config"])].concat(),
            vec![A.as_bytes(), b"1", b"extra"],
            "EMQARG unknown option extra",
        ),
        (
            "purge",
            vec![key("pending"), key("priority"), key("errors")],
            vec![b"0"],
            "EMQARG KEYS[1] must be emq:{<queue>}:done, dead or cancelled",
        ),
        (
            "reap",
            keys(&["active", "pending", "dead", "errors", "priority", "policy", "events", "config", "wake"]),
            vec![b"3", b"LIMIT", b"1001"],
            "EMQARG LIMIT must be an integer in 1..=1000",
        ),
    ];
    for (transition, keys, args, want) in cases {
        let reply = text(eval(&h, transition, &keys, &args).await);
        assert_eq!(reply, Err(want.to_string()), "{transition} {keys:?} {args:?}");
    }
    assert_eq!(h.dbsize().await, 0);
}

#[tokio::test]
async fn the_host_refuses_out_of_range_arguments_in_the_servers_words() {
    let h = harness().await;
    let p = h.prefix();
    let host = Claim { lease: Duration::ZERO, count: 1 }.args().unwrap_err();
    let claim_keys = ["pending", "active", "config", "rate", "policy", "events", "headers", "wake"]
        .map(|key| format!("{p}{key}"));
    let server = text(eval(&h, "claim", &claim_keys, &[b"0"]).await);
    assert_eq!(Err(host.to_string()), server);

    let host = Claim { lease: Duration::from_secs(1), count: 1001 }.args().unwrap_err();
    let server = text(eval(&h, "claim", &claim_keys, &[b"1000", b"COUNT", b"1001"]).await);
    assert_eq!(Err(host.to_string()), server);

    // ACKNEXT's lease and COUNT: the host's check and the script's, in the same words.
    let acknext = |lease, count| AckNext { ack: Ack { id: a(), token: 1, result: None }, lease, count };
    let acknext_keys = acknext(Duration::from_secs(1), 1).keys(&h.keys);
    for (call, args) in [
        (acknext(Duration::ZERO, 1), [b"0".as_slice(), b"COUNT", b"1"]),
        (acknext(Duration::from_secs(1), 0), [b"1000".as_slice(), b"COUNT", b"0"]),
        (acknext(Duration::from_secs(1), 1001), [b"1000".as_slice(), b"COUNT", b"1001"]),
    ] {
        let host = call.args().unwrap_err();
        let args = [[A.as_bytes(), b"1"].as_slice(), &args].concat();
        let server = text(eval(&h, "acknext", &acknext_keys, &args).await);
        assert_eq!(Err(host.to_string()), server);
    }

    // ACKMANY's number of jobs: past the limit in the script's words; none at all the host's own.
    let acks = vec![Ack { id: a(), token: 1, result: None }; 1001];
    let host = AckMany { acks: acks.clone() }.args().unwrap_err();
    let args: Vec<&[u8]> = acks.iter().flat_map(|_| [A.as_bytes(), b"1".as_slice()]).collect();
    let server = text(eval(&h, "ackmany", &AckMany { acks }.keys(&h.keys), &args).await);
    assert_eq!(Err(host.to_string()), server);
    assert!(matches!(AckMany { acks: Vec::new() }.args(), Err(Error { kind: ErrorKind::Argument, .. })));
    // ENQUEUEMANY's, the same way.
    let jobs = vec![(a(), b"p".to_vec()); 1001];
    let host = EnqueueMany { jobs: jobs.clone(), parent: None, group: None }.args().unwrap_err();
    let args: Vec<&[u8]> = jobs.iter().flat_map(|_| [A.as_bytes(), b"p".as_slice()]).collect();
    let server = text(
        eval(&h, "enqueuemany", &EnqueueMany { jobs, parent: None, group: None }.keys(&h.keys), &args).await,
    );
    assert_eq!(Err(host.to_string()), server);
    assert!(matches!(
        EnqueueMany { jobs: Vec::new(), parent: None, group: None }.args(),
        Err(Error { kind: ErrorKind::Argument, .. })
    ));

    let host = Config::default().concurrency(echomq::Limit::To(1 << 31)).args().unwrap_err();
    let all_keys = |name: Name, job: Option<&JobId>| -> Vec<String> {
        name.describe().keys.iter().map(|role| h.keys.role(*role, job).expect("a key")).collect()
    };
    let config_keys = all_keys(Name::Config, None);
    let server = text(eval(&h, "config", &config_keys, &[b"CONCURRENCY", b"2147483648"]).await);
    assert_eq!(Err(host.to_string()), server);
    let zero = echomq::Rate { claims: 5, per: Duration::ZERO };
    let host = Config::default().rate(echomq::Limit::To(zero)).args().unwrap_err();
    let server = text(eval(&h, "config", &config_keys, &[b"RATE", b"5", b"PER", b"0"]).await);
    assert_eq!(Err(host.to_string()), server);

    // A job's policy: the host's check and the script's, in the same words.
    let policy = |timeout| echomq::Policy { timeout: Some(timeout), ..echomq::Policy::default() };
    let enqueue = |timeout| Enqueue {
        id: a(),
        payload: b"p".to_vec(),
        priority: 0,
        due: Due::Now,
        policy: Some(policy(timeout)),
        unique: None,
        headers: Default::default(),
        parent: None,
        group: None,
    };
    let host = enqueue(0).args().unwrap_err();
    let enqueue_keys = all_keys(Name::Enqueue, Some(&a()));
    let server = text(eval(&h, "enqueue", &enqueue_keys, &[A.as_bytes(), b"p", b"TIMEOUT", b"0"]).await);
    assert_eq!(Err(host.to_string()), server);
    let err = h.queue.enqueue_with(b"p".to_vec(), EnqueueOptions::default().timeout(Duration::ZERO)).await;
    assert!(matches!(err, Err(Error { kind: ErrorKind::Argument, .. })), "{err:?}");
    // A limit of 0 is not a removal in disguise: Unlimited and Off say that.
    let before = h.snapshot().await;
    let zero_rate = echomq::Rate { claims: 0, per: Duration::from_secs(1) };
    for config in [
        Config::default().concurrency(echomq::Limit::To(0)),
        Config::default().rate(echomq::Limit::To(zero_rate)),
        Config::default().events(echomq::EventLog::Keep(0)),
    ] {
        let err = h.queue.configure(config).await;
        assert!(matches!(err, Err(Error { kind: ErrorKind::Argument, .. })), "{config:?}: {err:?}");
    }
    assert_eq!(h.snapshot().await, before, "nothing written");

    let err = h.queue.enqueue_with(b"x".to_vec(), EnqueueOptions::default().priority(1 << 40)).await;
    assert!(matches!(err, Err(Error { kind: ErrorKind::Argument, .. })));
    let err = h.queue.claim(Duration::from_secs(1 << 40)).await;
    assert!(matches!(err, Err(Error { kind: ErrorKind::Argument, .. })));
    assert_eq!(h.dbsize().await, 0);
}
