//! No argv crashes the server: every `EMQ.*` command gets a few hundred
//! random calls (valid calls with words replaced, cut or added; random word
//! counts; keys, ids, numbers and option names mixed with binary junk, NUL
//! bytes, huge and negative numbers, oversized words; keys of the wrong type
//! put in the way), then the server must still answer PING. A panic caught
//! in the module would answer "internal error"; that fails the test too.
//!
//! The generator is a seeded xorshift, so a failure replays exactly: the
//! message names the seed and the call.

mod common;

use std::time::{Duration, Instant};

use common::{connect, error_text, queue, server_with, A, B};
use redis::Value;

/// Each command with a valid call (`$q:` the queue, `$id` a job id, `$n` a
/// small number): the fuzzer mutates these, so calls get past the parser
/// into type checks, fences and writes.
const TEMPLATES: [(&str, &str); 14] = [
    ("EMQ.ENQUEUE", "$q:job:$id $q:pending $id payload"),
    ("EMQ.ENQUEUE", "$q:job:$id $q:pending $q:delayed $q:priority $id payload PRIORITY -$n DELAY $n"),
    ("EMQ.CLAIM", "$q:pending $q:active $n COUNT $n"),
    ("EMQ.ACK", "$q:job:$id $q:active $q:done $id $n"),
    ("EMQ.FAIL", "$q:job:$id $q:active $q:delayed $q:dead $q:errors $id $n $n 0 boom"),
    ("EMQ.EXTEND", "$q:job:$id $q:active $id $n 1000"),
    ("EMQ.RELEASE", "$q:job:$id $q:active $q:pending $q:priority $id $n"),
    ("EMQ.REAP", "$q:active $q:pending $q:dead $q:errors $q:priority $n LIMIT $n"),
    ("EMQ.PROMOTE", "$q:delayed $q:pending $q:priority LIMIT $n"),
    ("EMQ.PURGE", "$q:done $q:priority $q:errors 0 LIMIT $n"),
    ("EMQ.CANCEL", "$q:job:$id $q:pending $q:active $q:delayed $q:dead $q:cancelled $id"),
    ("EMQ.RETRY", "$q:job:$id $q:dead $q:pending $q:priority $id"),
    ("EMQ.INSPECT", "$q:job:$id $q:errors $id"),
    ("EMQ.STATS", "$q:pending $q:active $q:delayed $q:done $q:dead $q:cancelled"),
];
const CALLS: usize = 13 * 500;
const SEED: u64 = 0x5eed_e3a0_0001;

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
        let valid = valid.replace("$q:", q).replace("$id", id).replace("$n", &n).into_bytes();
        args.push(if rng.below(8) == 0 { word(rng, q) } else { valid });
    }
    match rng.below(6) {
        0 => args.truncate(rng.below(args.len() + 1)),
        1 => args.extend((0..1 + rng.below(3)).map(|_| word(rng, q))),
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

#[test]
fn no_argv_crashes_the_server() {
    let server = server_with(&[]);
    let mut conn = connect(&server);
    let mut rng = Rng(SEED);
    let start = Instant::now();
    for round in 0..CALLS {
        // Most calls use one queue, so state builds up; some a fresh one.
        let q = if rng.below(4) == 0 { queue() } else { "emq:{fuzz}:".to_owned() };
        if rng.below(40) == 0 {
            let _: Result<Value, _> = sabotage(&mut rng, &q).query(&mut conn);
        }
        let (command, template) = TEMPLATES[round % TEMPLATES.len()];
        let args = call_of(&mut rng, template, &q);
        // A claim that may block runs inside MULTI, where it answers at once.
        let may_block = command == "EMQ.CLAIM" && args.iter().any(|arg| arg.eq_ignore_ascii_case(b"BLOCK"));
        let mut pipe = redis::pipe();
        pipe.atomic().cmd(command).arg(&args);
        let reply: Result<Value, _> =
            if may_block { pipe.query(&mut conn) } else { redis::cmd(command).arg(&args).query(&mut conn) };
        let shown = || format!("seed {SEED:#x}, call {round}: {command} {:?}", lossy(&args));
        match reply {
            Err(err) if err.is_io_error() || err.is_connection_dropped() => {
                panic!("the server died at {}", shown())
            }
            Err(err) => assert!(!error_text(&err).contains("internal error"), "a panic at {}", shown()),
            Ok(_) => {}
        }
    }
    let pong: String = redis::cmd("PING").query(&mut conn).unwrap();
    assert_eq!(pong, "PONG");
    assert!(start.elapsed() < Duration::from_secs(30), "took {:?}", start.elapsed());
}

fn lossy(args: &[Vec<u8>]) -> Vec<String> {
    args.iter().map(|arg| String::from_utf8_lossy(&arg[..arg.len().min(64)]).into_owned()).collect()
}
