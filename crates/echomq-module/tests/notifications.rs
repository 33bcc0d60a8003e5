//! The module writes through the low-level key API, which fires no keyspace
//! events by itself; it fires them by hand. This runs one lifecycle through
//! the Lua scripts and the same one through the module, each on its own
//! queue, and checks that subscribers see the same events on the same keys,
//! in the same order.

mod common;

use std::time::Duration;

use common::{call, connect, expand, queue, server_with};
use echomq::executor::script_source;
use echomq::Name;
use echomq_test_support::RedisServer;

/// The lifecycle: a transition and its KEYS and ARGV, or a raw command that arranges a record.
const STEPS: &[(&str, &str)] = &[
    (
        "enqueue",
        "$q:job:$A $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events \
      $q:config $q:headers $q:wake $A p",
    ),
    ("enqueue", "$q:job:$B $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events $q:config $q:headers $q:wake $B p PRIORITY 5"),
    ("enqueue", "$q:job:JOB_3 $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events $q:config $q:headers $q:wake JOB_3 p DELAY 60000"),
    ("claim", "$q:pending $q:active $q:config $q:rate $q:policy $q:events $q:headers $q:wake 60000 COUNT 2"),
    ("extend", "$q:job:$A $q:active $A 1 90000"),
    ("ack", "$q:job:$A $q:active $q:done $q:results $q:events $q:config $A 1 RESULT 42"),
    ("raw", "HSET $q:job:JOB_8 state pending attempts 0 payload p"),
    ("raw", "ZADD $q:pending 9 JOB_8"),
    ("raw", "HSET $q:job:JOB_9 state active attempts 1 payload p"),
    ("raw", "ZADD $q:active 1 JOB_9"),
    (
        "acknext",
        "$q:job:JOB_9 $q:active $q:done $q:results $q:events $q:config $q:pending $q:rate $q:policy $q:headers \
         $q:wake JOB_9 1 60000 COUNT 1",
    ),
    ("fail", "$q:job:$B $q:active $q:delayed $q:dead $q:errors $q:policy $q:events $q:config $B 1 1 0 boom"),
    ("retry", "$q:job:$B $q:dead $q:pending $q:priority $q:events $q:config $q:wake $B"),
    ("claim", "$q:pending $q:active $q:config $q:rate $q:policy $q:events $q:headers $q:wake 60000"),
    ("config", "$q:config $q:pending $q:priority $q:rate $q:events $q:wake PAUSED 1 RATE 5 PER 60000"),
    ("progress", "$q:job:$B $q:progress $q:events $q:config $B 2 half"),
    ("release", "$q:job:$B $q:active $q:pending $q:priority $q:events $q:config $q:wake $B 2"),
    ("config", "$q:config $q:pending $q:priority $q:rate $q:events $q:wake PAUSED 0 CONCURRENCY 3"),
    ("claim", "$q:pending $q:active $q:config $q:rate $q:policy $q:events $q:headers $q:wake 60000"),
    ("config", "$q:config $q:pending $q:priority $q:rate $q:events $q:wake RATE 0 CONCURRENCY 0"),
    ("cancel", "$q:job:JOB_3 $q:pending $q:active $q:delayed $q:dead $q:cancelled $q:events $q:config JOB_3"),
    ("raw", "HSET $q:job:JOB_4 state delayed attempts 0 payload p"),
    ("raw", "ZADD $q:delayed 1 JOB_4"),
    ("promote", "$q:delayed $q:pending $q:priority $q:events $q:config $q:wake"),
    ("raw", "HSET $q:job:JOB_5 state active attempts 1 payload p"),
    ("raw", "ZADD $q:active 1 JOB_5"),
    ("reap", "$q:active $q:pending $q:dead $q:errors $q:priority $q:policy $q:events $q:config $q:wake 1"),
    ("purge", "$q:done $q:priority $q:errors $q:progress $q:policy $q:results $q:headers 0"),
    ("purge", "$q:dead $q:priority $q:errors $q:progress $q:policy $q:results $q:headers 0"),
    ("schedule", "$q:schedules $q:ticks s d 5000"),
    ("schedules", "$q:schedules $q:ticks DUE 1"),
    ("fire", "$q:job:JOB_6 $q:pending $q:ticks $q:events $q:config $q:wake JOB_6 p s 5000 6000"),
    ("fire", "$q:job:JOB_7 $q:pending $q:ticks $q:events $q:config $q:wake JOB_7 p s 5000 6000"),
    ("unschedule", "$q:schedules $q:ticks s"),
    // Calls that add many ids to one set: the module replicates them as one
    // ZADD, and still fires one event per id, in the scripts' order.
    ("enqueuemany", "$q:pending $q:events $q:config $q:wake JOB_M1 a JOB_M2 b"),
    ("claim", "$q:pending $q:active $q:config $q:rate $q:policy $q:events $q:headers $q:wake 60000 COUNT 10"),
    ("ackmany", "$q:active $q:done $q:results $q:events $q:config JOB_M1 1 JOB_M2 1"),
    ("raw", "HSET $q:job:JOB_P1 state delayed attempts 0 payload p"),
    ("raw", "HSET $q:job:JOB_P2 state delayed attempts 0 payload p"),
    ("raw", "ZADD $q:delayed 1 JOB_P1 1 JOB_P2"),
    ("promote", "$q:delayed $q:pending $q:priority $q:events $q:config $q:wake"),
    // An event log kept short, on a server whose stream nodes hold two
    // entries: appends trim it (`xtrim` after `xadd`).
    ("config", "$q:config $q:pending $q:priority $q:rate $q:events $q:wake EVENTS 3"),
    ("enqueue", "$q:job:JOB_T1 $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events $q:config $q:headers $q:wake JOB_T1 p"),
    ("enqueue", "$q:job:JOB_T2 $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events $q:config $q:headers $q:wake JOB_T2 p"),
    ("enqueue", "$q:job:JOB_T3 $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events $q:config $q:headers $q:wake JOB_T3 p"),
    ("enqueue", "$q:job:JOB_T4 $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events $q:config $q:headers $q:wake JOB_T4 p"),
];

/// The transition named `transition`, and how many of `args` are its KEYS.
fn described(transition: &str, args: &[String]) -> (Name, usize) {
    let name = *Name::ALL.iter().find(|name| name.as_str() == transition).expect("a transition");
    // The keys lead the call, and every key of the protocol begins with `emq:`.
    (name, args.iter().take_while(|arg| arg.starts_with("emq:")).count())
}

/// Run the lifecycle on queue `q`, natively or through the scripts, and
/// return every keyevent it fired as `event key` (the queue's prefix as `$q:`).
fn events_of(server: &RedisServer, q: &str, native: bool) -> Vec<String> {
    let mut subscriber = connect(server);
    let mut conn = connect(server);
    let mut pubsub = subscriber.as_pubsub();
    pubsub.psubscribe("__keyevent@0__:*").unwrap();
    pubsub.subscribe("end-of-run").unwrap();
    pubsub.set_read_timeout(Some(Duration::from_secs(10))).unwrap();

    for (transition, words) in STEPS {
        let args = expand(q, words);
        let reply = if *transition == "raw" {
            call(&mut conn, &args)
        } else if native {
            let (name, keys) = described(transition, &args);
            let mut command = vec![name.describe().command.to_owned(), keys.to_string()];
            command.extend(args);
            call(&mut conn, &command)
        } else {
            let (name, keys) = described(transition, &args);
            let mut command = vec!["EVAL".to_owned(), script_source(name), keys.to_string()];
            command.extend(args);
            call(&mut conn, &command)
        };
        reply.unwrap_or_else(|err| panic!("{transition} {words}: {err}"));
    }
    redis::cmd("PUBLISH").arg("end-of-run").arg("").query::<()>(&mut conn).unwrap();

    let mut events = Vec::new();
    loop {
        let message = pubsub.get_message().expect("events until the end of the run");
        if message.get_channel_name() == "end-of-run" {
            return events;
        }
        let event = message.get_channel_name().trim_start_matches("__keyevent@0__:").to_owned();
        let key: String = message.get_payload().unwrap();
        events.push(format!("{event} {}", key.replace(q, "$q:")));
    }
}

#[test]
fn the_module_fires_the_keyspace_events_the_scripts_fire() {
    let server = server_with(&["--notify-keyspace-events", "KEA", "--stream-node-max-entries", "2"]);
    let lua = events_of(&server, &queue(), false);
    let native = events_of(&server, &queue(), true);
    assert_eq!(native, lua);
    assert!(native.iter().any(|event| event == "xtrim $q:events"), "the log was trimmed: {native:?}");
    // The record's birth, as the issue spells it.
    assert_eq!(native[..2], ["hset $q:job:JOB_00000000000000000000000001", "zadd $q:pending"]);
}
