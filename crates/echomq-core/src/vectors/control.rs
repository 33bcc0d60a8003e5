//! CONFIG, INSPECT and STATS: settings and reads.

use super::*;

pub(super) fn cases() -> Vec<Case> {
    let inspect = |id: &str| call(Name::Inspect, id, &[id]);
    let stats = call(Name::Stats, "", &[]);
    let happy = vec![
        Case::new("config: a read of no settings", config(&[])),
        Case::new("config: pause", config(&["PAUSED", "1"])),
        Case::new("config: resume re-adds the head of pending", config(&["PAUSED", "0"]))
            .after([enqueue(A, "a", &["PRIORITY", "2"]), config(&["PAUSED", "1"])]),
        Case::new("config: resume of a queue not paused writes no event", config(&["PAUSED", "0"]))
            .after([enqueue(A, "a", &[])]),
        Case::new("config: PAUSED 0 ends a timed pause", config(&["PAUSED", "0"])).after([
            enqueue(A, "a", &[]),
            claim(1),
            call(Name::Defer, A, &[A, "1", "300000", "3", "PAUSE", "1"]),
        ]),
        Case::new(
            "config: concurrency, rate and per",
            config(&["CONCURRENCY", "4", "RATE", "10", "PER", "1000"]),
        ),
        Case::new("config: CONCURRENCY 0 removes it", config(&["CONCURRENCY", "0"]))
            .after([config(&["CONCURRENCY", "3"])]),
        Case::new("config: RATE 0 removes it and the log", config(&["RATE", "0"])).after([
            enqueue(A, "a", &[]),
            config(&["RATE", "5", "PER", "600000"]),
            claim(1),
        ]),
        Case::new(
            "config: retention and the log's length",
            config(&[
                "DONE_AGE",
                "1000",
                "DONE_COUNT",
                "5",
                "DEAD_AGE",
                "0",
                "DEAD_COUNT",
                "7",
                "CANCELLED_AGE",
                "9",
                "CANCELLED_COUNT",
                "0",
                "EVENTS",
                "50",
            ]),
        ),
        Case::new("config: options in any case", config(&["paused", "1", "Concurrency", "2"])),
        Case::new("config: a stored paused of 2 is refused as malformed", config(&[]))
            .put("config", hash(&[("paused", "2")]))
            .refused(Code::Data),
        Case::new("config: RATE without PER", config(&["RATE", "5"])).refused(Code::Arg),
        Case::new("config: PER without RATE", config(&["PER", "5"])).refused(Code::Arg),
        Case::new("config: PAUSED 2", config(&["PAUSED", "2"])).refused(Code::Arg),
        Case::new("config: PER 0", config(&["RATE", "1", "PER", "0"])).refused(Code::Arg),
        Case::new("config: RATE over its limit", config(&["RATE", "100001", "PER", "1"])).refused(Code::Arg),
        Case::new("config: an option given twice", config(&["PAUSED", "1", "PAUSED", "1"]))
            .refused(Code::Arg),
        Case::new("config: an unknown option", config(&["SPEED", "1"])).refused(Code::Arg),
        Case::new("config: an option without its value", config(&["EVENTS"])).refused(Code::Arg),
        Case::new("inspect: a pending job", inspect(A)).after([enqueue(A, "a", &[])]),
        Case::new("inspect: no such job", inspect(A)),
        Case::new("inspect: everything beside a job", inspect(A)).after([
            enqueue(A, "a", &["ATTEMPTS", "4", "HEADERS", r#"{"k":"v"}"#]),
            claim(1),
            call(Name::Progress, A, &[A, "1", "half"]),
            fail(A, "1", "4"),
        ]),
        Case::new("inspect: a done job's result", inspect(A)).after([
            enqueue(A, "a", &[]),
            claim(1),
            call(Name::Ack, A, &[A, "1", "RESULT", "ok"]),
        ]),
        Case::new("inspect: the id's kind", inspect("XYZ")).refused(Code::Kind),
        Case::new("inspect: the id missing", call(Name::Inspect, A, &[])).refused(Code::Kind),
        Case::new("stats: an empty queue", stats.clone()),
        Case::new("stats: one job in each set", stats.clone()).after([
            enqueue(A, "a", &[]),
            claim(1),
            enqueue(B, "b", &["DELAY", "60000"]),
            enqueue(C, "c", &[]),
        ]),
        Case::new("stats: an argument", stats.clone().arg(b"x")).refused(Code::Arg),
    ];
    with_shared(happy)
}
