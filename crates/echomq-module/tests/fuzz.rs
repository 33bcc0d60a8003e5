//! No argv crashes the server or corrupts a queue: every `EMQ.*` command the
//! module registers (checked against `COMMAND LIST FILTERBY MODULE`) gets a
//! few hundred random calls (valid calls with words replaced, cut or added,
//! now and then a thousand more; random word counts; keys, ids, numbers and
//! option names mixed with binary junk, NUL bytes, huge and negative numbers,
//! oversized words; keys of the wrong type put in the way). Then:
//! - the server answers PING on the same connection, as the same process,
//!   and its log holds no panic; a panic caught in the module would answer
//!   "internal error", which fails the test too;
//! - every refused call left the whole dataset as it was (`DEBUG DIGEST`);
//! - every queue no one sabotaged is consistent: only the protocol's keys,
//!   each of its type; each record has the protocol's fields and sits in
//!   exactly the set its `state` names; each set member, priority and error
//!   belongs to a record.
//!
//! The generator is a seeded xorshift, so a failure replays exactly: the
//! message names the seed and the call.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::{connect, error_text, queue, server_with, A, B};
use redis::{Connection, Value};

/// Each command with a valid call (`$q:` the queue, `$id` a job id, `$n` a
/// small number): the fuzzer mutates these, so calls get past the parser
/// into type checks, fences and writes.
const TEMPLATES: [(&str, &str); 60] = [
    ("EMQ.ENQUEUE", "2 $q:job:$id $q:pending $id payload"),
    ("EMQ.ENQUEUE", "11 $q:job:$id $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events $q:config $q:headers $q:wake $id payload PRIORITY -$n DELAY $n"),
    (
        "EMQ.ENQUEUE",
        "11 $q:job:$id $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events $q:config \
         $q:headers $q:wake $id payload ATTEMPTS $n TIMEOUT $n",
    ),
    (
        "EMQ.ENQUEUE",
        "11 $q:job:$id $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events $q:config \
         $q:headers $q:wake $id payload UNIQUE k$n UNIQUE_FOR $n UNIQUE_DONE 1",
    ),
    ("EMQ.CLAIM", "8 $q:pending $q:active $q:config $q:rate $q:policy $q:events $q:headers $q:wake $n COUNT $n"),
    ("EMQ.CLAIM", "8 $q:pending $q:active $q:config $q:rate $q:policy $q:events $q:headers $q:wake $n COUNT $n BLOCK $n"),
    ("EMQ.ACK", "6 $q:job:$id $q:active $q:done $q:results $q:events $q:config $id $n"),
    // A first attempt's token, right more often than a random one: done jobs too.
    ("EMQ.ACK", "6 $q:job:$id $q:active $q:done $q:results $q:events $q:config $id 1"),
    ("EMQ.ACK", "6 $q:job:$id $q:active $q:done $q:results $q:events $q:config $id $n RESULT r$n"),
    ("EMQ.ACKMANY", "5 $q:active $q:done $q:results $q:events $q:config $id 1 $id $n RESULT r$n"),
    ("EMQ.ACKMANY", "5 $q:active $q:done $q:results $q:events $q:config $id $n $id 1 $id 1"),
    (
        "EMQ.ACKNEXT",
        "11 $q:job:$id $q:active $q:done $q:results $q:events $q:config $q:pending $q:rate $q:policy $q:headers \
         $q:wake $id 1 $n COUNT $n RESULT r$n",
    ),
    (
        "EMQ.ENQUEUE",
        "11 $q:job:$id $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events $q:config \
         $q:headers $q:wake $id payload DELAY $n HEADERS {\"t\":\"$n\"}",
    ),
    ("EMQ.FAIL", "8 $q:job:$id $q:active $q:delayed $q:dead $q:errors $q:policy $q:events $q:config $id $n $n 0 boom"),
    // A first attempt out of attempts at once: jobs die often enough that the
    // clean queues hold dead ones, whatever the clock did to the leases
    // (their coverage depends on timing, so each end is made likely).
    ("EMQ.FAIL", "8 $q:job:$id $q:active $q:delayed $q:dead $q:errors $q:policy $q:events $q:config $id 1 1 0 boom"),
    // Out of attempts at once (max 0), on a counted queue: a second way to dead.
    ("EMQ.FAIL", "9 $q:job:$id $q:active $q:delayed $q:dead $q:errors $q:policy $q:events $q:config $q:counts $id 1 0 0 boom"),
    ("EMQ.DEFER", "6 $q:job:$id $q:active $q:delayed $q:policy $q:config $q:events $id $n 50 3 PAUSE 0"),
    ("EMQ.EXTEND", "2 $q:job:$id $q:active $id $n 1000"),
    ("EMQ.RELEASE", "7 $q:job:$id $q:active $q:pending $q:priority $q:events $q:config $q:wake $id $n"),
    ("EMQ.REAP", "9 $q:active $q:pending $q:dead $q:errors $q:priority $q:policy $q:events $q:config $q:wake $n LIMIT $n"),
    ("EMQ.PROMOTE", "6 $q:delayed $q:pending $q:priority $q:events $q:config $q:wake LIMIT $n"),
    ("EMQ.PURGE", "7 $q:done $q:priority $q:errors $q:progress $q:policy $q:results $q:headers 0 LIMIT $n"),
    ("EMQ.PURGE", "7 $q:dead $q:priority $q:errors $q:progress $q:policy $q:results $q:headers 0 LIMIT $n"),
    ("EMQ.CANCEL", "8 $q:job:$id $q:pending $q:active $q:delayed $q:dead $q:cancelled $q:events $q:config $id"),
    ("EMQ.RETRY", "7 $q:job:$id $q:dead $q:pending $q:priority $q:events $q:config $q:wake $id"),
    ("EMQ.INSPECT", "6 $q:job:$id $q:errors $q:progress $q:results $q:policy $q:headers $id"),
    ("EMQ.STATS", "6 $q:pending $q:active $q:delayed $q:done $q:dead $q:cancelled"),
    // The counters (protocol 1.4): read, and kept by a counted ENQUEUE and ACK.
    ("EMQ.COUNTS", "1 $q:counts minute"),
    ("EMQ.REMOVE", "7 $q:done $q:priority $q:errors $q:progress $q:policy $q:results $q:headers $id"),
    ("EMQ.REMOVE", "7 $q:pending $q:priority $q:errors $q:progress $q:policy $q:results $q:headers $id $id"),
    ("EMQ.COUNTS", "1 $q:counts HOUR"),
    (
        "EMQ.ENQUEUE",
        "12 $q:job:$id $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events $q:config \
         $q:headers $q:wake $q:counts $id payload",
    ),
    ("EMQ.ACK", "7 $q:job:$id $q:active $q:done $q:results $q:events $q:config $q:counts $id $n"),
    ("EMQ.CONFIG", "6 $q:config $q:pending $q:priority $q:rate $q:events $q:wake PAUSED 0 CONCURRENCY $n RATE $n PER $n"),
    ("EMQ.CONFIG", "6 $q:config $q:pending $q:priority $q:rate $q:events $q:wake PAUSED $n EVENTS $n"),
    ("EMQ.PROGRESS", "4 $q:job:$id $q:progress $q:events $q:config $id $n half"),
    ("EMQ.TRIM", "8 $q:done $q:priority $q:errors $q:progress $q:policy $q:results $q:headers $q:config LIMIT $n"),
    ("EMQ.DRAIN", "7 $q:delayed $q:priority $q:errors $q:progress $q:policy $q:results $q:headers LIMIT $n"),
    (
        "EMQ.OBLITERATE",
        "23 $q:pending $q:active $q:delayed $q:done $q:dead $q:cancelled $q:priority $q:errors $q:progress $q:policy \
         $q:config $q:rate $q:schedules $q:ticks $q:unique $q:unique_until $q:results $q:events $q:headers \
         $q:batches $q:batch_jobs $q:batch_open $q:wake",
    ),
    ("EMQ.SCHEDULE", "2 $q:schedules $q:ticks s$n d $n"),
    ("EMQ.UNSCHEDULE", "2 $q:schedules $q:ticks s$n"),
    ("EMQ.SCHEDULES", "2 $q:schedules $q:ticks DUE 1 LIMIT $n"),
    ("EMQ.BATCH", "3 $q:batches $q:batch_jobs $q:batch_open b$n JOB_CB$n cb $id"),
    (
        "EMQ.SETTLE",
        "8 $q:batch_open $q:batches $q:batch_jobs $q:pending $q:headers $q:events $q:config $q:wake LIMIT $n",
    ),
    ("EMQ.VERSION", ""),
    ("EMQ.FIRE", "6 $q:job:$id $q:pending $q:ticks $q:events $q:config $q:wake $id p s$n $n 9 SKIP 0"),
    ("EMQ.ENQUEUEMANY", "4 $q:pending $q:events $q:config $q:wake $id payload $id p$n"),
    // Flows (protocol 1.6): a parent, a child linked to it, the notices'
    // RESOLVE, CHILDREN, and an ACK with the flows' keys (`~` is a space).
    (
        "EMQ.FLOW",
        "10 $q:job:$id $q:children:$id $q:waiting $q:priority $q:policy $q:headers $q:parents $q:events $q:config \
         $q:counts $id parent 2 {q}JOB_C$n fail {other}JOB_D$n ignore PRIORITY $n",
    ),
    (
        "EMQ.ENQUEUE",
        "13 $q:job:$id $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events $q:config \
         $q:headers $q:wake $q:counts $q:parents $id child PARENT 7~{q}JOB_00000000000000000000000003",
    ),
    (
        "EMQ.RESOLVE",
        "13 $q:job:$id $q:children:$id $q:waiting $q:pending $q:priority $q:dead $q:errors $q:parents $q:notices \
         $q:events $q:config $q:wake $q:counts $id $n {q}JOB_C$n done RESULT r$n",
    ),
    ("EMQ.CHILDREN", "1 $q:children:$id $id"),
    // Dynamic children: the holder of a job makes it a parent.
    (
        "EMQ.ADOPT",
        "7 $q:job:$id $q:children:$id $q:active $q:waiting $q:policy $q:events $q:config $id $n 3 2 \
         {q}JOB_C$n fail {other}JOB_D$n continue",
    ),
    (
        "EMQ.ACK",
        "9 $q:job:$id $q:active $q:done $q:results $q:events $q:config $q:counts $q:parents $q:notices $id $n",
    ),
    // Fair groups (protocol 1.7): a grouped job, a group's settings, a page of groups.
    (
        "EMQ.ENQUEUE",
        "11 $q:job:$id $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until $q:events $q:config \
         $q:headers $q:wake $id p GROUP g$n PRIORITY $n",
    ),
    ("EMQ.ENQUEUEMANY", "4 $q:pending $q:events $q:config $q:wake GROUP g$n $id p $id p$n"),
    (
        "EMQ.GROUP",
        "5 $q:groups $q:gnames $q:ready $q:gwait $q:wake g$n WEIGHT $n CAP $n RATE $n PER 1000 MAX $n PAUSED 0",
    ),
    ("EMQ.GROUPS", "2 $q:gnames $q:groups AFTER g$n LIMIT $n"),
    ("EMQ.PERMIT", "2 $q:partitions $q:permits COUNT $n"),
    // An exact concurrency's running permits (1.8): granted, then renewed.
    ("EMQ.PERMIT", "3 $q:partitions $q:permits $q:running COUNT $n LEASE $n"),
    ("EMQ.RENEW", "1 $q:running $n $n $n"),
];
/// Calls per seed: each template 200 times.
const CALLS: usize = TEMPLATES.len() * 200;
/// Chosen anew when templates come, so that each seed's clean queues hold
/// a job in every state at a check (else the run proves less): with 1.4's,
/// …0005 and …0006; with 1.6's flows, …0005 no longer met a cancelled
/// job, and of …0006 to …0009 the first three do; with 1.7's groups,
/// …0007, …0008 and …000a met no dead (or no done) job, …0006 and …0009 do;
/// with 1.8's PERMIT, …0006 met no dead job, …0007, …0008 and …0009 do;
/// with its RENEW and running permits, of …0007 to …000d only …0008 and
/// …000c met a job in every state (`FUZZ_SEED=5eede3a0000c` replays one).
const SEEDS: [u64; 2] = [0x5eed_e3a0_0008, 0x5eed_e3a0_000c];

/// xorshift64*: small, fast, and the same sequence everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, words: &[&'a str]) -> &'a str {
        words[self.below(words.len())]
    }
}

/// One random argument: sometimes just what a command wants, often not.
fn word(rng: &mut Rng, q: &str) -> Vec<u8> {
    const NAMES: [&str; 10] = [
        "pending",
        "active",
        "delayed",
        "done",
        "dead",
        "cancelled",
        "priority",
        "errors",
        "job:",
        "job:XYZ",
    ];
    const NUMBERS: [&str; 16] = [
        "0",
        "1",
        "-1",
        "5",
        "1000",
        "1001",
        "-0",
        "1e3",
        "0x10",
        " 5",
        "999999999999999",
        "9999999999999999",
        "99999999999999999999999999",
        "-9223372036854775808",
        "18446744073709551616",
        "2147483648",
    ];
    const OPTIONS: [&str; 8] = ["COUNT", "count", "LIMIT", "PRIORITY", "DELAY", "AT", "Block", "NOPE"];
    match rng.below(10) {
        0..=2 => {
            let name = rng.pick(&NAMES);
            let name = if name == "job:" { format!("job:{A}") } else { name.to_owned() };
            format!("{q}{name}").into_bytes()
        }
        3 => rng.pick(&[A, "JOB_", "JOB", "XYZ", "job_1", "JOB_\0\r\n"]).as_bytes().to_vec(),
        4 | 5 => rng.pick(&NUMBERS).as_bytes().to_vec(),
        6 => rng.pick(&OPTIONS).as_bytes().to_vec(),
        7 => (rng.next() as i64).to_string().into_bytes(),
        8 => (0..rng.below(40)).map(|_| rng.next() as u8).collect(),
        _ => match rng.below(48) {
            0 => vec![b'x'; 1_048_577],
            1..=15 => vec![0; rng.below(8)],
            16..=31 => b"emq:{}:pending".to_vec(),
            _ => b"emq:{q\0}:job:JOB_\0".to_vec(),
        },
    }
}

/// A call of `command`: its template mutated (a word replaced, the tail cut
/// or extended), or, one time in four, random words only.
fn call_of(rng: &mut Rng, template: &str, q: &str) -> Vec<Vec<u8>> {
    if rng.below(4) == 0 {
        return (0..rng.below(14)).map(|_| word(rng, q)).collect();
    }
    let id = rng.pick(&[A, B, "JOB_00000000000000000000000003"]);
    let mut args = Vec::new();
    for valid in template.split_whitespace() {
        let n = (1 + rng.below(4)).to_string();
        let valid =
            valid.replace("$q:", q).replace("$id", id).replace("$n", &n).replace('~', " ").into_bytes();
        args.push(if rng.below(8) == 0 { word(rng, q) } else { valid });
    }
    match rng.below(64) {
        0..=9 => args.truncate(rng.below(args.len() + 1)),
        10..=19 => args.extend((0..1 + rng.below(3)).map(|_| word(rng, q))),
        20 => args.extend((0..1000).map(|_| word(rng, q))),
        _ => {}
    }
    args
}

/// Now and then a key of the queue gets a value of the wrong type, or goes.
fn sabotage(rng: &mut Rng, q: &str) -> redis::Cmd {
    let key = format!("{q}{}", rng.pick(&["pending", "active", "delayed", "dead", "errors", "priority"]));
    let mut command = redis::cmd(rng.pick(&["SET", "RPUSH", "SADD", "DEL", "DEL"]));
    command.arg(&key);
    if rng.below(5) != 0 {
        command.arg("x");
    }
    command
}

/// Where the calls go: mostly two shared queues, so state builds up (one of
/// them sabotaged now and then, one never), sometimes a fresh one.
struct Queues {
    /// Queues whose keys were never given a wrong type or deleted by hand.
    clean: BTreeSet<String>,
}

const SHARED: &str = "emq:{fuzz}:";
const CLEAN: &str = "emq:{fuzz-clean}:";

impl Queues {
    fn pick(&mut self, rng: &mut Rng, conn: &mut Connection) -> String {
        let q = match rng.below(8) {
            0 | 1 => queue(),
            2..=4 => SHARED.to_owned(),
            _ => CLEAN.to_owned(),
        };
        if q != CLEAN && rng.below(40) == 0 {
            let _: Result<Value, _> = sabotage(rng, &q).query(conn);
        } else if q != SHARED {
            self.clean.insert(q.clone());
        }
        q
    }
}

// Two seeds, each on a server of its own, so that the two run side by side:
// the run is nearly all the server's DEBUG DIGEST, one core each.
#[test]
fn no_argv_crashes_the_server_or_corrupts_a_queue() {
    fuzz_from(SEEDS[0]);
}

#[test]
fn no_argv_crashes_the_server_or_corrupts_a_queue_from_a_second_seed() {
    fuzz_from(SEEDS[1]);
}

/// CALLS calls from `seed`, or from `FUZZ_SEED` (hex) to replay a failure.
fn fuzz_from(seed: u64) {
    let server = server_with(&["--enable-debug-command", "yes"]);
    let mut conn = connect(&server);
    every_command_is_fuzzed(&mut conn);
    let pid = info_field(&mut conn, "process_id");
    // The long-lived queues keep a short event log: every call is digested
    // before and after, and a log of 10,000 entries would be most of it.
    for q in [SHARED, CLEAN] {
        let keys = ["config", "pending", "priority", "rate", "events", "wake"].map(|key| format!("{q}{key}"));
        let _: Value = redis::cmd("EMQ.CONFIG")
            .arg(keys.len())
            .arg(&keys)
            .arg("EVENTS")
            .arg(100)
            .query(&mut conn)
            .unwrap();
    }
    let seed = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
        .unwrap_or(seed);
    let mut rng = Rng(seed);
    let mut queues = Queues { clean: BTreeSet::new() };
    let mut seen = BTreeSet::new();
    let start = Instant::now();
    for round in 0..CALLS {
        let q = queues.pick(&mut rng, &mut conn);
        let (command, template) = TEMPLATES[round % TEMPLATES.len()];
        let args = call_of(&mut rng, template, &q);
        let shown = || format!("seed {seed:#x}, call {round}: {command} {:?}", lossy(&args));
        let before = digest(&mut conn);
        match send(&mut conn, command, &args) {
            Err(err) if err.is_io_error() || err.is_connection_dropped() => {
                panic!("the server died at {}", shown())
            }
            Err(err) => {
                assert!(!error_text(&err).contains("internal error"), "a panic at {}", shown());
                assert_eq!(digest(&mut conn), before, "a refused call changed data at {}", shown());
            }
            Ok(Value::Array(items)) => {
                let panicked = |item: &Value| matches!(item, Value::ServerError(err) if err.to_string().contains("internal error"));
                assert!(!items.iter().any(panicked), "a panic at {}", shown());
            }
            Ok(_) => {}
        }
        // The shared clean queue is checked all along, not only at the end.
        if round % 5 == 4 {
            let found = consistent(&mut conn, CLEAN).unwrap_or_else(|why| panic!("after {}: {why}", shown()));
            seen.extend(found);
        }
    }
    let elapsed = start.elapsed();

    let pong: String = redis::cmd("PING").query(&mut conn).expect("the server answers after the fuzzing");
    assert_eq!(pong, "PONG");
    assert_eq!(info_field(&mut conn, "process_id"), pid, "the server was restarted");
    let log = std::fs::read_to_string(server.dir().join("redis.log")).unwrap_or_default();
    assert!(!log.contains("panicked") && !log.contains("BUG REPORT"), "the server's log:\n{log}");
    for q in &queues.clean {
        let found = consistent(&mut conn, q).unwrap_or_else(|why| panic!("seed {seed:#x}: queue {q}: {why}"));
        seen.extend(found);
    }
    // The checks mean something only if the calls moved jobs through the
    // lifecycle: the clean queues, checked all along and at the end, held
    // jobs in every state.
    assert_eq!(seen.len(), SETS.len(), "the clean queues' jobs were only ever {seen:?}");
    // A bound on the run, generous for a busy machine: 30 s for each seed,
    // side by side, on the shared 2-core one (95 s for one seed of twice the
    // calls: the digest grows with the data), nearly all of it the server's
    // DEBUG DIGEST before and after each call.
    assert!(elapsed < Duration::from_secs(300), "took {elapsed:?}");
}

/// The module's commands are exactly the ones the templates fuzz.
fn every_command_is_fuzzed(conn: &mut Connection) {
    let registered: BTreeSet<String> =
        redis::cmd("COMMAND").arg("LIST").arg("FILTERBY").arg("MODULE").arg("echomq").query(conn).unwrap();
    let fuzzed: BTreeSet<String> = TEMPLATES.iter().map(|(command, _)| command.to_lowercase()).collect();
    assert_eq!(registered, fuzzed, "the module's commands and the fuzzed ones differ");
}

/// A call as the server gets it. A claim that may block runs inside MULTI,
/// where it answers at once.
fn send(conn: &mut Connection, command: &str, args: &[Vec<u8>]) -> redis::RedisResult<Value> {
    if command == "EMQ.CLAIM" && args.iter().any(|arg| arg.eq_ignore_ascii_case(b"BLOCK")) {
        let mut pipe = redis::pipe();
        pipe.atomic().cmd(command).arg(args);
        pipe.query(conn)
    } else {
        // The reply as sent: an error reply is the call's refusal; an array
        // keeps the errors inside it (ACKMANY's refusals of single jobs,
        // whose call changed the others).
        match redis::ConnectionLike::req_command(conn, redis::cmd(command).arg(args))? {
            Value::ServerError(err) => Err(err.into()),
            value => Ok(value),
        }
    }
}

/// A digest of the whole dataset.
fn digest(conn: &mut Connection) -> String {
    redis::cmd("DEBUG").arg("DIGEST").query(conn).expect("DEBUG DIGEST")
}

fn info_field(conn: &mut Connection, field: &str) -> Option<String> {
    common::info_field(conn, "server", field)
}

const SETS: [&str; 7] = ["pending", "active", "delayed", "done", "dead", "cancelled", "waiting"];
const FIELDS: [&str; 5] = ["state", "attempts", "payload", "enqueued_at", "updated_at"];

/// Check queue `q`'s keys against the protocol (see the file's header); the
/// state of each record it holds.
/// The type of a groups' key (protocol 1.7) named so after the queue's prefix.
fn group_key(name: &[u8]) -> Option<&'static str> {
    match name {
        b"group" | b"groups" => Some("hash"),
        b"gnames" | b"ready" | b"gwait" => Some("zset"),
        _ if [b"gpending:".as_slice(), b"gactive:", b"grate:"].iter().any(|kind| name.starts_with(kind)) => {
            Some("zset")
        }
        _ => None,
    }
}

fn consistent(conn: &mut Connection, q: &str) -> Result<Vec<String>, String> {
    // The queue's keys only (no glob character is in a queue's prefix).
    let all: Vec<Vec<u8>> = redis::cmd("KEYS").arg(format!("{q}*")).query(conn).unwrap();
    let mut records = BTreeMap::new();
    let mut members: BTreeMap<Vec<u8>, &str> = BTreeMap::new();
    let mut side_fields = Vec::new();
    let mut grouped = Vec::new();
    for key in all.iter().filter(|key| key.starts_with(q.as_bytes())) {
        let name = &key[q.len()..];
        let kind: String = redis::cmd("TYPE").arg(key).query(conn).unwrap();
        let shown = String::from_utf8_lossy(name).into_owned();
        if let Some(id) = name.strip_prefix(b"job:") {
            if kind != "hash" {
                return Err(format!("{shown} is a {kind}"));
            }
            let fields: BTreeMap<String, Vec<u8>> = redis::cmd("HGETALL").arg(key).query(conn).unwrap();
            records.insert(id.to_vec(), record_state(&fields).map_err(|why| format!("{shown}: {why}"))?);
        } else if let Some(set) = SETS.iter().find(|set| set.as_bytes() == name) {
            if kind != "zset" {
                return Err(format!("{shown} is a {kind}"));
            }
            let ids: Vec<Vec<u8>> = redis::cmd("ZRANGE").arg(key).arg(0).arg(-1).query(conn).unwrap();
            for id in ids {
                if let Some(other) = members.insert(id.clone(), set) {
                    return Err(format!("{} is in {other} and {set}", String::from_utf8_lossy(&id)));
                }
            }
        } else if [b"schedules".as_slice(), b"ticks", b"unique", b"unique_until"].contains(&name) {
            let want = if name == b"schedules" || name == b"unique" { "hash" } else { "zset" };
            if kind != want {
                return Err(format!("{shown} is a {kind}"));
            }
        } else if let Some(id) = name.strip_prefix(b"children:") {
            // A parent's dependencies go with its record (protocol 1.6).
            if kind != "hash" {
                return Err(format!("{shown} is a {kind}"));
            }
            side_fields.push((shown.clone(), id.to_vec()));
        } else if [
            b"priority".as_slice(),
            b"errors",
            b"progress",
            b"policy",
            b"results",
            b"headers",
            b"parents",
        ]
        .contains(&name)
        {
            if kind != "hash" {
                return Err(format!("{shown} is a {kind}"));
            }
            let ids: Vec<Vec<u8>> = redis::cmd("HKEYS").arg(key).query(conn).unwrap();
            side_fields.extend(ids.into_iter().map(|id| (shown.clone(), id)));
        } else if [
            b"config".as_slice(),
            b"rate",
            b"events",
            b"batches",
            b"batch_jobs",
            b"batch_open",
            b"wake",
            b"counts",
            b"notices",
        ]
        .contains(&name)
        {
            // The queue's settings, its claim log, its event log, its
            // batches, its wake-up key and its counters: no job ids to account for (an
            // event or a batch's job may outlive its job).
            let want = match name {
                b"config" | b"batches" | b"batch_jobs" | b"counts" => "hash",
                b"rate" | b"batch_open" | b"wake" => "zset",
                _ => "stream",
            };
            if kind != want {
                return Err(format!("{shown} is a {kind}"));
            }
        } else if let Some(kind_of) = group_key(name) {
            // The groups' keys (protocol 1.7): a job's group goes with its
            // record; a group's sets hold ids of its pending or leased jobs.
            if kind != kind_of {
                return Err(format!("{shown} is a {kind}"));
            }
            if name == b"group" {
                let ids: Vec<Vec<u8>> = redis::cmd("HKEYS").arg(key).query(conn).unwrap();
                side_fields.extend(ids.into_iter().map(|id| (shown.clone(), id)));
            } else if name.starts_with(b"gpending:") || name.starts_with(b"gactive:") {
                let ids: Vec<Vec<u8>> = redis::cmd("ZRANGE").arg(key).arg(0).arg(-1).query(conn).unwrap();
                let set = if name.starts_with(b"gpending:") { "pending" } else { "active" };
                grouped.extend(ids.into_iter().map(|id| (shown.clone(), id, set)));
            }
        } else {
            return Err(format!("a key the protocol does not name: {shown}"));
        }
    }
    for (key, id, set) in &grouped {
        if members.get(id) != Some(set) {
            return Err(format!("{key} holds {}, which is not {set}", String::from_utf8_lossy(id)));
        }
    }
    for (id, state) in &records {
        if members.get(id) != Some(&state.as_str()) {
            let found = members.get(id).copied().unwrap_or("no set");
            return Err(format!("{} is {state} but in {found}", String::from_utf8_lossy(id)));
        }
    }
    for (id, set) in &members {
        if !records.contains_key(id) {
            return Err(format!("{} is in {set} without a record", String::from_utf8_lossy(id)));
        }
    }
    for (hash, id) in &side_fields {
        if !records.contains_key(id) {
            return Err(format!("{hash} holds {} without a record", String::from_utf8_lossy(id)));
        }
    }
    Ok(records.into_values().collect())
}

/// A record's state, when its fields are the protocol's.
fn record_state(fields: &BTreeMap<String, Vec<u8>>) -> Result<String, String> {
    if let Some(other) = fields.keys().find(|name| !FIELDS.contains(&name.as_str())) {
        return Err(format!("a field the protocol does not name: {other}"));
    }
    // A native record has both stamps from its birth on (PROTOCOL.md §3).
    for number in ["attempts", "enqueued_at", "updated_at"] {
        let value = fields.get(number).map(|value| String::from_utf8_lossy(value));
        let bad = value.as_deref().is_none_or(|value| value.parse::<u64>().is_err());
        if bad {
            return Err(format!("{number} is {value:?}"));
        }
    }
    let state = fields.get("state").map(|state| String::from_utf8_lossy(state).into_owned());
    match state {
        Some(state) if SETS.contains(&state.as_str()) && fields.contains_key("payload") => Ok(state),
        _ => Err(format!("state {state:?}, or no payload")),
    }
}

fn lossy(args: &[Vec<u8>]) -> Vec<String> {
    args.iter().take(16).map(|arg| String::from_utf8_lossy(&arg[..arg.len().min(64)]).into_owned()).collect()
}
