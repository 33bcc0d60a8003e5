//! One table of what the suites need of each transition: [`example`]. A
//! transition added to the core does not compile here until it has its
//! entry, and once it has, `bad_input.rs`, `conformance.rs` and the random
//! sequences of [`super::ops`] cover it with nothing more to write.

use std::time::Duration;

use echomq::transition::*;
use echomq::{JobId, Name, State};

use super::ops::Op;
use super::{Call, A, B};

/// What the suites need of one transition.
#[derive(Clone, Copy)]
pub struct Example {
    /// The keys a happy call needs, as raw commands (`$q:`, `$A`, `$B`
    /// expanded by [`super::Harness::arrange`]).
    pub given: &'static [&'static str],
    /// A valid call, given [`Example::given`], with the options that make it
    /// read every key it may.
    pub happy: fn() -> Call,
    /// The records a happy call reads besides its KEYS (those of the jobs it
    /// moves, or names in its ARGV), by id.
    pub reads: &'static [&'static str],
    /// The ARGV of a call that names the job `XYZ`, which has no `JOB_`
    /// brand, or `None` for a transition that names no job.
    pub naming_a_non_job: Option<&'static [&'static [u8]]>,
    /// Raw calls: each positional argument's candidates, the first valid
    /// (`$id` is the call's id, `$token` the arranged record's attempts,
    /// `$stale` one past it).
    pub raw_args: &'static [&'static [&'static str]],
    /// Raw calls: the options a call may add, valid or not.
    pub raw_options: &'static [(&'static str, &'static str)],
    /// Which op of the random sequences sends it (`Ok`: a test of an op),
    /// or why none does (`Err`).
    pub sent_by: Result<fn(&Op) -> bool, &'static str>,
}

const TOKEN: &[&str] = &["$token", "$stale", "0", "x"];
const ID: &[&str] = &["$id"];
const LIMIT: &[(&str, &str)] =
    &[("LIMIT", "10"), ("limit", "1"), ("LIMIT", "0"), ("LIMIT", "1001"), ("COUNT", "1")];
const STRAY: &[(&str, &str)] = &[("extra", "1")];
const ACTIVE: &[&str] = &["HSET $q:job:$A state active attempts 1 payload p", "ZADD $q:active 5 $A"];
const PENDING: &[&str] = &["HSET $q:job:$A state pending attempts 0 payload p", "ZADD $q:pending 0 $A"];
const DEAD: &[&str] = &["HSET $q:job:$A state dead attempts 3 payload p", "ZADD $q:dead 5 $A"];
const SCHEDULED: &[&str] = &["HSET $q:schedules s d", "ZADD $q:ticks 1000 s"];

fn a() -> JobId {
    A.parse().unwrap()
}

/// What the suites need of `name`. An exhaustive match on [`Name`], with no
/// `_` arm: a transition added to the core without its entry here does not
/// compile. A `const fn`, so that conformance's raw call shapes are built
/// by the compiler.
pub const fn example(name: Name) -> Example {
    match name {
        Name::Enqueue => Example {
            given: &[],
            happy: || {
                Call::new(Enqueue {
                    id: a(),
                    payload: b"p".to_vec(),
                    priority: 1,
                    due: Due::After(Duration::from_secs(60)),
                    policy: Some(echomq::Policy { attempts: Some(3), ..Default::default() }),
                    unique: Some(Unique {
                        key: "u".into(),
                        hold: Duration::from_secs(60),
                        until_finished: true,
                    }),
                    headers: [("tenant".to_owned(), "acme".to_owned())].into(),
                    parent: None,
                    group: None,
                })
            },
            reads: &[],
            naming_a_non_job: Some(&[b"XYZ", b"hello"]),
            raw_args: &[ID, &["payload"]],
            raw_options: &[
                ("PRIORITY", "0"),
                ("PRIORITY", "-0"),
                ("PRIORITY", "007"),
                ("PRIORITY", "-1"),
                ("priority", "1"),
                ("DELAY", "0"),
                ("DELAY", "600000"),
                ("AT", "1"),
                ("AT", "x"),
                ("COLOUR", "1"),
                ("ATTEMPTS", "1"),
                ("attempts", "0"),
                ("BACKOFF", "5000"),
                ("BACKOFF_EXP", "1000"),
                ("TIMEOUT", "0"),
                ("TIMEOUT", "60000"),
                ("UNIQUE", "k"),
                ("UNIQUE_FOR", "60000"),
                ("UNIQUE_FOR", "0"),
                ("unique_done", "1"),
                ("HEADERS", r#"{"a":"b"}"#),
                ("headers", ""),
            ],
            sent_by: Ok(|op| matches!(op, Op::Enqueue { .. } | Op::EnqueueGrouped { .. })),
        },
        Name::EnqueueMany => Example {
            given: &[],
            happy: || Call::new(EnqueueMany { jobs: vec![(a(), b"p".to_vec())], parent: None, group: None }),
            // It reads the records of its jobs.
            reads: &[A],
            naming_a_non_job: Some(&[b"XYZ", b"p"]),
            raw_args: &[ID, &["payload", ""]],
            // More jobs, the same one again among them.
            raw_options: &[
                ("$id", "again"),
                ("JOB_2", "p2"),
                ("nope", "p"),
                ("JOB_3", ""),
                ("PRIORITY", "1"),
            ],
            sent_by: Ok(|op| matches!(op, Op::EnqueueMany { .. })),
        },
        Name::Claim => Example {
            // A rate set, so that the gate reads (and checks) the rate log too.
            given: &[
                "HSET $q:job:$A state pending attempts 0 payload p",
                "ZADD $q:pending 0 $A",
                "HSET $q:config rate 5 per 1000",
            ],
            happy: || Call::new(Claim { lease: Duration::from_secs(30), count: 1 }),
            // It reads the records of the ids it moves.
            reads: &[A],
            naming_a_non_job: None,
            raw_args: &[&["60000", "1", "0", "x", "2147483648"]],
            raw_options: &[
                ("COUNT", "2"),
                ("count", "1"),
                ("COUNT", "0"),
                ("COUNT", "1001"),
                ("LIMIT", "1"),
                ("UNTIL", "9999999999999"),
                ("until", "1"),
                ("UNTIL", "-1"),
                ("UNTIL", "10000000000000"),
                ("UNTIL", "soon"),
            ],
            sent_by: Ok(|op| matches!(op, Op::Claim { .. })),
        },
        Name::Ack => Example {
            given: ACTIVE,
            happy: || Call::new(Ack { id: a(), token: 1, result: None }),
            reads: &[],
            naming_a_non_job: Some(&[b"XYZ", b"1"]),
            raw_args: &[ID, TOKEN],
            raw_options: &[("RESULT", "42"), ("result", ""), ("RESULT", "7"), ("extra", "1")],
            sent_by: Ok(|op| matches!(op, Op::Ack { .. })),
        },
        Name::AckNext => Example {
            // A job to claim after the ack, and a rate set, so that every key is read.
            given: &[
                "HSET $q:job:$A state active attempts 1 payload p",
                "ZADD $q:active 5 $A",
                "HSET $q:job:$B state pending attempts 0 payload p",
                "ZADD $q:pending 0 $B",
                "HSET $q:config rate 5 per 1000",
            ],
            happy: || {
                Call::new(AckNext {
                    ack: Ack { id: a(), token: 1, result: Some(b"r".to_vec()) },
                    lease: Duration::from_secs(30),
                    count: 1,
                })
            },
            // The record of the job it claims after the ack.
            reads: &[B],
            naming_a_non_job: Some(&[b"XYZ", b"1", b"30000"]),
            raw_args: &[ID, TOKEN, &["60000", "0", "x"]],
            raw_options: &[
                ("RESULT", "42"),
                ("COUNT", "2"),
                ("count", "1"),
                ("COUNT", "0"),
                ("RESULT", ""),
                ("LIMIT", "1"),
            ],
            sent_by: Err("the worker's ack of its last running job: raw calls and transitions.rs"),
        },
        Name::AckMany => Example {
            given: ACTIVE,
            happy: || Call::new(AckMany { acks: vec![Ack { id: a(), token: 1, result: None }] }),
            // It reads the records of its jobs.
            reads: &[A],
            naming_a_non_job: Some(&[b"XYZ", b"1"]),
            raw_args: &[ID, TOKEN],
            // More jobs too, the same one again among them.
            raw_options: &[
                ("RESULT", "42"),
                ("$id", "$token"),
                ("$id", "$stale"),
                ("JOB_2", "1"),
                ("result", ""),
                ("nope", "1"),
                ("RESULT", "x"),
                ("JOB_3", "x"),
            ],
            sent_by: Ok(|op| matches!(op, Op::AckMany { .. })),
        },
        Name::Fail => Example {
            given: ACTIVE,
            happy: || {
                Call::new(Fail {
                    id: a(),
                    token: 1,
                    max_attempts: 3,
                    backoff: Duration::ZERO,
                    error: "boom".into(),
                })
            },
            reads: &[],
            naming_a_non_job: Some(&[b"XYZ", b"1", b"3", b"1000", b"boom"]),
            raw_args: &[ID, TOKEN, &["3", "1", "0", "-1", "x"], &["1000", "0", "-5", "x"], &["boom", ""]],
            raw_options: STRAY,
            sent_by: Ok(|op| matches!(op, Op::Fail { .. })),
        },
        Name::Extend => Example {
            given: ACTIVE,
            happy: || Call::new(Extend { id: a(), token: 1, lease: Duration::from_secs(30) }),
            reads: &[],
            naming_a_non_job: Some(&[b"XYZ", b"1", b"1000"]),
            raw_args: &[ID, TOKEN, &["60000", "0", "x"]],
            raw_options: STRAY,
            sent_by: Ok(|op| matches!(op, Op::Extend { .. })),
        },
        Name::Release => Example {
            given: ACTIVE,
            happy: || Call::new(Release { id: a(), token: 1, max_attempts: 3 }),
            reads: &[],
            naming_a_non_job: Some(&[b"XYZ", b"1"]),
            raw_args: &[ID, TOKEN],
            raw_options: &[
                ("REFUND", "3"),
                ("refund", "0"),
                ("REFUND", "x"),
                ("REFUND", "2147483648"),
                ("extra", "1"),
            ],
            sent_by: Ok(|op| matches!(op, Op::Release { .. })),
        },
        Name::Reap => Example {
            given: ACTIVE,
            happy: || Call::new(Reap { max_attempts: 3, limit: 10 }),
            reads: &[A],
            naming_a_non_job: None,
            raw_args: &[&["3", "1", "0", "-1", "x"]],
            raw_options: LIMIT,
            sent_by: Ok(|op| matches!(op, Op::Reap { .. })),
        },
        Name::Promote => Example {
            given: &["HSET $q:job:$A state delayed attempts 0 payload p", "ZADD $q:delayed 5 $A"],
            happy: || Call::new(Promote { limit: 10 }),
            reads: &[A],
            naming_a_non_job: None,
            raw_args: &[],
            raw_options: LIMIT,
            sent_by: Ok(|op| matches!(op, Op::Promote)),
        },
        Name::Purge => Example {
            given: DEAD,
            happy: || Call::new(Purge { state: State::Dead, age: Duration::ZERO, limit: 10 }),
            reads: &[A],
            naming_a_non_job: None,
            raw_args: &[&["0", "600000", "-1", "x"]],
            raw_options: LIMIT,
            sent_by: Ok(|op| matches!(op, Op::Purge { .. })),
        },
        Name::Cancel => Example {
            given: PENDING,
            happy: || Call::new(Cancel { id: a() }),
            reads: &[],
            naming_a_non_job: Some(&[b"XYZ"]),
            raw_args: &[ID],
            raw_options: STRAY,
            sent_by: Ok(|op| matches!(op, Op::Cancel { .. })),
        },
        Name::Retry => Example {
            given: DEAD,
            happy: || Call::new(Retry { id: a() }),
            reads: &[],
            naming_a_non_job: Some(&[b"XYZ"]),
            raw_args: &[ID],
            raw_options: STRAY,
            sent_by: Ok(|op| matches!(op, Op::Retry { .. })),
        },
        Name::Inspect => Example {
            given: &["HSET $q:job:$A state pending attempts 0 payload p"],
            happy: || Call::new(Inspect { id: a() }),
            reads: &[],
            naming_a_non_job: Some(&[b"XYZ"]),
            raw_args: &[ID],
            raw_options: STRAY,
            sent_by: Ok(|op| matches!(op, Op::Inspect { .. })),
        },
        Name::Stats => Example {
            given: &[],
            happy: || Call::new(Stats),
            reads: &[],
            naming_a_non_job: None,
            raw_args: &[],
            raw_options: STRAY,
            sent_by: Err("a read the sequences' keyspace comparison makes redundant: raw calls"),
        },
        Name::Counts => Example {
            given: &["HSET $q:counts enqueued 3 completed 2 minute 1 hour 1"],
            happy: || Call::new(Counts { span: Span::Minutes }),
            reads: &[],
            naming_a_non_job: None,
            raw_args: &[&["minute", "HOUR", "day", ""]],
            raw_options: STRAY,
            sent_by: Err("a read the sequences' keyspace comparison makes redundant: raw calls"),
        },
        Name::Config => Example {
            given: &[],
            happy: || {
                Call::new(
                    Config::default()
                        .paused(true)
                        .concurrency(echomq::Limit::To(2))
                        .rate(echomq::Limit::To(echomq::Rate { claims: 5, per: Duration::from_secs(1) }))
                        .keep_done(Retention { age: None, count: Some(5) }),
                )
            },
            reads: &[],
            naming_a_non_job: None,
            raw_args: &[],
            raw_options: &[
                ("PAUSED", "1"),
                ("paused", "0"),
                ("PAUSED", "2"),
                ("CONCURRENCY", "1"),
                ("CONCURRENCY", "-1"),
                ("RATE", "1"),
                ("PER", "600000"),
                ("RATE", "0"),
                ("PER", "0"),
                ("DONE_AGE", "0"),
                ("DONE_COUNT", "1"),
                ("dead_count", "0"),
                ("CANCELLED_AGE", "-1"),
                ("EVENTS", "0"),
                ("events", "5"),
                ("EVENTS", "-1"),
            ],
            sent_by: Ok(|op| matches!(op, Op::Config { .. })),
        },
        Name::Progress => Example {
            given: ACTIVE,
            happy: || Call::new(Progress { id: a(), token: 1, value: b"half".to_vec() }),
            reads: &[],
            naming_a_non_job: Some(&[b"XYZ", b"1", b"half"]),
            raw_args: &[ID, TOKEN, &["half", ""]],
            raw_options: STRAY,
            sent_by: Ok(|op| matches!(op, Op::Progress { .. })),
        },
        Name::Schedule => Example {
            given: &[],
            happy: || Call::new(Schedule { name: "s".into(), definition: b"d".to_vec(), next: 1000 }),
            reads: &[],
            naming_a_non_job: None,
            raw_args: &[&["s", ""], &["d1", ""], &["5000", "0", "-1", "x", "10000000000000"]],
            raw_options: STRAY,
            sent_by: Ok(|op| matches!(op, Op::Schedule { .. })),
        },
        Name::Unschedule => Example {
            given: SCHEDULED,
            happy: || Call::new(Unschedule { name: "s".into() }),
            reads: &[],
            naming_a_non_job: None,
            raw_args: &[&["s", "t", ""]],
            raw_options: STRAY,
            sent_by: Ok(|op| matches!(op, Op::Unschedule { .. })),
        },
        Name::Schedules => Example {
            given: SCHEDULED,
            happy: || Call::new(Schedules { due: true, limit: 10 }),
            reads: &[],
            naming_a_non_job: None,
            raw_args: &[],
            raw_options: &[
                ("DUE", "1"),
                ("due", "0"),
                ("DUE", "2"),
                ("LIMIT", "1"),
                ("LIMIT", "0"),
                ("SKIP", "1"),
            ],
            sent_by: Ok(|op| matches!(op, Op::Schedules { .. })),
        },
        Name::Fire => Example {
            given: SCHEDULED,
            happy: || {
                Call::new(Fire {
                    id: a(),
                    payload: b"p".to_vec(),
                    name: "s".into(),
                    tick: 1000,
                    next: 2000,
                    skip: false,
                })
            },
            reads: &[],
            naming_a_non_job: Some(&[b"XYZ", b"p", b"s", b"1000", b"2000"]),
            raw_args: &[ID, &["p"], &["s", ""], &["5000", "x", "-1"], &["6000", "5000", "0"]],
            raw_options: &[("SKIP", "1"), ("skip", "0"), ("SKIP", "2"), ("DUE", "1")],
            sent_by: Ok(|op| matches!(op, Op::Fire { .. })),
        },
        Name::Drain => Example {
            given: PENDING,
            happy: || Call::new(Drain { state: State::Pending, limit: 1000 }),
            reads: &[A],
            naming_a_non_job: None,
            raw_args: &[],
            raw_options: &[("LIMIT", "1"), ("LIMIT", "0"), ("limit", "2")],
            sent_by: Err("empties the queue a sequence plays with: raw calls and transitions.rs"),
        },
        Name::Remove => Example {
            given: DEAD,
            happy: || Call::new(Remove { state: State::Dead, ids: vec![a()] }),
            reads: &[A],
            naming_a_non_job: Some(&[b"XYZ"]),
            raw_args: &[ID],
            raw_options: STRAY,
            sent_by: Err("deletes jobs a sequence plays with: raw calls and tests/select.rs"),
        },
        Name::Obliterate => Example {
            given: &[],
            happy: || Call::new(Obliterate),
            reads: &[],
            naming_a_non_job: None,
            raw_args: &[],
            raw_options: STRAY,
            sent_by: Err("deletes the queue a sequence plays with: raw calls and delete.rs"),
        },
        Name::Trim => Example {
            given: &["HSET $q:job:$A state done attempts 1 payload p", "ZADD $q:done 5 $A"],
            happy: || Call::new(Trim { state: State::Done, limit: 1000 }),
            reads: &[A],
            naming_a_non_job: None,
            raw_args: &[],
            raw_options: &[("LIMIT", "1"), ("LIMIT", "1001"), ("AGE", "5")],
            sent_by: Err("its retention runs on the clock: raw calls and retention.rs"),
        },
        Name::Defer => Example {
            given: ACTIVE,
            happy: || {
                Call::new(Defer {
                    id: a(),
                    token: 1,
                    delay: Duration::from_secs(5),
                    max_attempts: 3,
                    pause_queue: true,
                })
            },
            reads: &[],
            naming_a_non_job: Some(&[b"XYZ", b"1", b"5000", b"3"]),
            raw_args: &[ID, TOKEN, &["5000", "0", "-1"], &["3", "0", "x"]],
            raw_options: &[("PAUSE", "1"), ("pause", "0"), ("PAUSE", "2")],
            sent_by: Err("pauses the queue on the clock: raw calls and transitions.rs"),
        },
        Name::Batch => Example {
            given: &[],
            happy: || {
                Call::new(Batch {
                    id: "b1".into(),
                    callback: JobId::try_from("JOB_CB".as_bytes()).unwrap(),
                    payload: b"cb".to_vec(),
                    jobs: vec![a()],
                })
            },
            reads: &[],
            // Its callback's id and its jobs'.
            naming_a_non_job: Some(&[b"b1", b"XYZ", b"cb", b"XYZ"]),
            raw_args: &[&["b1", "b~2", ""], &["JOB_CB", "nope"], &["cb"], ID],
            raw_options: &[("JOB_2", "JOB_3"), ("nope", "JOB_4")],
            sent_by: Err("not yet in the model: raw calls, batches.rs and transitions.rs"),
        },
        Name::Settle => Example {
            given: &[
                "HSET $q:batches b1 1~0~0~0~0~0~JOB_CB b1:callback cb",
                "HSET $q:batch_jobs b1:0 $A",
                "ZADD $q:batch_open 5 b1",
                "HSET $q:job:$A state done attempts 1 payload p",
            ],
            happy: || Call::new(Settle { limit: 1000 }),
            reads: &[A],
            naming_a_non_job: None,
            raw_args: &[],
            raw_options: &[("LIMIT", "1"), ("LIMIT", "0"), ("limit", "5")],
            sent_by: Err("not yet in the model: raw calls, batches.rs and transitions.rs"),
        },
        Name::Flow => Example {
            given: &[],
            happy: || {
                Call::new(Flow {
                    id: a(),
                    payload: b"p".to_vec(),
                    children: vec![Dependency {
                        child: JobRef::new("other", B.parse().unwrap()).unwrap(),
                        on_failure: OnFailure::Fail,
                    }],
                    priority: 1,
                    policy: Some(echomq::Policy { attempts: Some(3), ..Default::default() }),
                    headers: [("tenant".to_owned(), "acme".to_owned())].into(),
                    parent: Some(Link {
                        incarnation: 7,
                        parent: JobRef::new("up", B.parse().unwrap()).unwrap(),
                    }),
                    group: None,
                })
            },
            reads: &[],
            naming_a_non_job: Some(&[b"XYZ", b"p", b"1", b"{q}JOB_B", b"fail"]),
            raw_args: &[
                ID,
                &["p"],
                &["1", "0", "x"],
                &["{other}$B", "other:$B"],
                &["fail", "ignore", "lose"],
            ],
            raw_options: &[("PRIORITY", "2"), ("ATTEMPTS", "3"), ("PARENT", "7 {up}$B"), ("DELAY", "5")],
            sent_by: Err("not yet in the model: flows.rs and the vectors"),
        },
        Name::Resolve => Example {
            given: &[
                "HSET $q:job:$A state waiting attempts 0 payload p",
                "ZADD $q:waiting 5 $A",
                "HSET $q:children:$A incarnation 7 open 1 {other}$B open~fail",
            ],
            happy: || {
                Call::new(Resolve {
                    parent: a(),
                    incarnation: 7,
                    child: JobRef::new("other", B.parse().unwrap()).unwrap(),
                    outcome: Outcome::Done,
                    result: Some(b"r".to_vec()),
                })
            },
            reads: &[],
            naming_a_non_job: Some(&[b"XYZ", b"7", b"{other}JOB_B", b"done"]),
            raw_args: &[ID, &["7", "8", "x"], &["{other}$B", "$B"], &["done", "dead", "lost"]],
            raw_options: &[("RESULT", "r"), ("result", ""), ("COUNT", "1")],
            sent_by: Err("not yet in the model: flows.rs and the vectors"),
        },
        Name::Children => Example {
            given: &["HSET $q:children:$A incarnation 7 open 1 {other}$B open~fail"],
            happy: || Call::new(Children { id: a() }),
            reads: &[],
            naming_a_non_job: Some(&[b"XYZ"]),
            raw_args: &[ID],
            raw_options: STRAY,
            sent_by: Err("not yet in the model: flows.rs and the vectors"),
        },
        Name::Adopt => Example {
            given: &[
                "HSET $q:job:$A state active attempts 1 payload p",
                "ZADD $q:active 5 $A",
                "HSET $q:children:$A incarnation 7 open 1 children 1 {other}$B open~fail",
            ],
            happy: || {
                let child = |id: &str| Dependency {
                    child: JobRef::new("other", id.parse().unwrap()).unwrap(),
                    on_failure: OnFailure::Ignore,
                };
                Call::new(Adopt {
                    id: a(),
                    token: 1,
                    max_attempts: 3,
                    children: vec![child(B), child("JOB_C")],
                })
            },
            reads: &[],
            naming_a_non_job: Some(&[b"XYZ", b"1", b"3", b"1", b"{q}JOB_B", b"fail"]),
            raw_args: &[
                ID,
                TOKEN,
                &["3", "0", "x"],
                &["1", "0", "x"],
                &["{other}$B", "other:$B"],
                &["fail", "ignore", "lose"],
            ],
            raw_options: STRAY,
            sent_by: Err("not yet in the model: flows.rs and the vectors"),
        },
        Name::Group => Example {
            given: &[
                "HSET $q:job:$A state pending attempts 0 payload p",
                "ZADD $q:pending 4294967296 $A",
                "HSET $q:group $A g",
                "ZADD $q:gpending:g 0 $A",
                "ZADD $q:gnames 0 g",
                "ZADD $q:ready 0 g",
            ],
            happy: || {
                let rate = echomq::Rate { claims: 5, per: Duration::from_secs(1) };
                Call::new(Group::new("g").weight(2).cap(echomq::Limit::To(1)).rate(echomq::Limit::To(rate)))
            },
            reads: &[],
            naming_a_non_job: None,
            raw_args: &[&["g", "", "x"]],
            raw_options: &[
                ("WEIGHT", "2"),
                ("weight", "0"),
                ("CAP", "0"),
                ("CAP", "-1"),
                ("RATE", "1"),
                ("PER", "1000"),
                ("MAX", "5"),
                ("PAUSED", "1"),
                ("PAUSED", "2"),
                ("COLOUR", "1"),
            ],
            sent_by: Ok(|op| matches!(op, Op::Group { .. })),
        },
        Name::Groups => Example {
            given: &["ZADD $q:gnames 0 a 0 b", "HSET $q:groups set:a CAP~1"],
            happy: || Call::new(Groups::new().limit(1)),
            reads: &[],
            naming_a_non_job: None,
            raw_args: &[],
            raw_options: &[("AFTER", "a"), ("LIMIT", "1"), ("LIMIT", "0"), ("limit", "1001"), ("COUNT", "1")],
            sent_by: Err("not yet in the model: the vectors and groups.rs"),
        },
        Name::Permit => Example {
            given: &[
                "HSET $q:partitions count 4 rate 5 per 1000 concurrency 3",
                "ZADD $q:permits 1 1",
                "ZADD $q:running 1 1",
            ],
            happy: || Call::new(Permit { count: 2, lease: Some(Duration::from_secs(30)) }),
            reads: &[],
            naming_a_non_job: None,
            raw_args: &[],
            raw_options: &[
                ("COUNT", "2"),
                ("count", "1000"),
                ("COUNT", "0"),
                ("COUNT", "x"),
                ("LEASE", "30000"),
                ("lease", "0"),
                ("LIMIT", "1"),
            ],
            sent_by: Err(
                "not in the model: a partitioned queue's coordinator, the vectors and partitions.rs",
            ),
        },
        Name::Renew => Example {
            given: &["ZADD $q:running 9999999999999 1 9999999999999 2"],
            happy: || Call::new(Renew { lease: Duration::from_secs(30), permits: vec![1, 2, 3] }),
            reads: &[],
            naming_a_non_job: None,
            raw_args: &[&["30000", "0", "x"], &["1", "0", "x", "07"]],
            raw_options: STRAY,
            sent_by: Err(
                "not in the model: a partitioned queue's coordinator, the vectors and partitions.rs",
            ),
        },
    }
}
