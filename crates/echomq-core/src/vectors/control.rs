//! CONFIG, INSPECT, STATS and COUNTS: settings and reads, and the
//! counters the transitions keep (protocol 1.4).

use super::*;

pub(super) fn cases() -> Vec<Case> {
    let inspect = |id: &str| call(Name::Inspect, id, &[id]);
    let stats = call(Name::Stats, "", &[]);
    // INSPECT's seventh key reads a job's group (1.7); a call of six reads none.
    let grouped = enqueue(A, "a", &["GROUP", "tenant-7"]);
    let six_keys = keys_of(Name::Inspect, A, "")[..6].to_vec();
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
        Case::new("config: a queue of a later minor is read, its protocol shown", config(&["PAUSED", "1"]))
            .put("config", hash(&[("protocol", "1.99")])),
        Case::new("config: a protocol of 01.04 reads as 1.4, shown as stored", config(&[]))
            .put("config", hash(&[("protocol", "01.04")])),
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
        Case::new("inspect: a grouped job's group, with the seventh key", inspect(A))
            .after([grouped.clone()]),
        Case::new("inspect: six keys read no group", inspect(A).with_keys(six_keys)).after([grouped]),
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
        Case::new("counts: a new queue", counts("minute")),
        Case::new("counts: enqueued, completed, failed and dead a minute ago", counts("MINUTE"))
            .after(counted()),
        Case::new("counts: by the hour", counts("hour")).after(counted()),
        Case::new("counts: a job counted over an hour ago is out of the minutes", counts("minute"))
            .at(-3_700_000, enqueue(A, "a", &[])),
        Case::new("counts: the same, by the hour", counts("hour")).at(-3_700_000, enqueue(A, "a", &[])),
        Case::new("counts: no argument", call(Name::Counts, "", &[])).refused(Code::Arg),
        Case::new("counts: a day", counts("day")).refused(Code::Arg),
        Case::new("counts: an argument too many", counts("minute").arg(b"x")).refused(Code::Arg),
        Case::new("counts: a total that is not a number", counts("minute"))
            .put("counts", hash(&[("completed", "x")]))
            .refused_with("EMQDATA emq:{q}:counts completed is not an integer of 0 or more"),
        Case::new("counts: a negative minute", counts("minute"))
            .put("counts", hash(&[("minute", "-1")]))
            .refused_with("EMQDATA emq:{q}:counts minute is not an integer of 0 or more"),
        Case::new("counts: a slot after the last minute written reads 0, unread", counts("minute")).put(
            "counts",
            hash(&[
                ("minute", &(MINUTE - 5).to_string()),
                (&format!("completed:m{}", (MINUTE - 5) % 60), "3"),
                (&format!("completed:m{}", (MINUTE - 2) % 60), "x"),
            ]),
        ),
        Case::new("counts: with no minute written, no slot is read", counts("minute"))
            .put("counts", hash(&[("completed", "2"), (&format!("completed:m{}", MINUTE % 60), "x")])),
        Case::new("counts: by the hour, the minute is not read", counts("hour"))
            .put("counts", hash(&[("minute", "x"), ("hour", &HOUR.to_string())])),
        Case::new("counts: a clock behind the counters shows no slot a ring older", counts("minute")).put(
            "counts",
            hash(&[
                ("minute", &(MINUTE + 2).to_string()),
                (&format!("completed:m{}", (MINUTE + 2) % 60), "4"),
                (&format!("completed:m{}", MINUTE % 60), "1"),
            ]),
        ),
    ];
    // ACK, whose other cases (and shared ones) are with the finishing
    // transitions: how it keeps the counters.
    let counting = vec![
        Case::new("ack: counted in now's minute and hour", ack(A, "1"))
            .after([enqueue(A, "a", &[]), claim(1)]),
        Case::new("ack: without the counts key, nothing counted", ack_uncounted())
            .after([enqueue(A, "a", &[]), claim(1)]),
        Case::new("ack: a later minute empties the minutes since", ack(A, "1"))
            .after([enqueue(A, "a", &[]), claim(1)])
            .put(
                "counts",
                hash(&[
                    ("minute", &(MINUTE - 3).to_string()),
                    ("hour", &HOUR.to_string()),
                    ("completed", "11"),
                    (&format!("completed:m{}", (MINUTE - 3) % 60), "2"),
                    (&format!("completed:m{}", (MINUTE - 1) % 60), "9"),
                    (&format!("completed:h{}", HOUR % 168), "11"),
                ]),
            ),
        Case::new("ack: a clock behind the counters counts in their minute", ack(A, "1"))
            .after([enqueue(A, "a", &[]), claim(1)])
            .put("counts", hash(&[("minute", &(MINUTE + 2).to_string()), ("hour", &HOUR.to_string())])),
        Case::new("ack: another event's counter is not ack's to read", ack(A, "1"))
            .after([enqueue(A, "a", &[]), claim(1)])
            .put("counts", hash(&[("failed", "x")])),
        Case::new("ack: a total that is not a number", ack(A, "1"))
            .after([enqueue(A, "a", &[]), claim(1)])
            .put("counts", hash(&[("completed", "1.5")]))
            .refused_with("EMQDATA emq:{q}:counts completed is not an integer of 0 or more"),
    ];
    with_shared(happy).into_iter().chain(counting).chain(out_of_range()).collect()
}

/// Stored settings outside the range CONFIG writes (a foreign write): each
/// read as the gate, TRIM and the event log apply it, and CONFIG's reply
/// shows that (PROTOCOL.md §7.1, §7.4, §7.5).
fn out_of_range() -> Vec<Case> {
    let trim = call_on(Name::Trim, "", "done", &[]);
    vec![
        Case::new("config: a stored concurrency of -5 reads 0, no limit", config(&[]))
            .put("config", hash(&[("concurrency", "-5")])),
        Case::new("config: a stored rate of 0 reads no rate, its period 0 too", config(&[]))
            .put("config", hash(&[("rate", "0"), ("per", "1000")])),
        Case::new("config: a stored rate without a period reads no rate", config(&[]))
            .put("config", hash(&[("rate", "5")])),
        Case::new("config: a stored period of -3 reads no rate", config(&[]))
            .put("config", hash(&[("rate", "5"), ("per", "-3")])),
        Case::new("config: a stored concurrency above its range is used as stored", config(&[]))
            .put("config", hash(&[("concurrency", "99999999999")])),
        Case::new("config: a stored retention below 0 reads the default", config(&[]))
            .put("config", hash(&[("done_age", "-1"), ("dead_count", "-7"), ("cancelled_age", "0")])),
        Case::new("config: a stored event log length below 0 reads 0, off", config(&["PAUSED", "1"]))
            .put("config", hash(&[("events", "-5")])),
        Case::new("claim: a stored concurrency of -5 is no limit", claim(2))
            .after([enqueue(A, "a", &[]), enqueue(B, "b", &[])])
            .put("config", hash(&[("concurrency", "-5")])),
        Case::new("claim: a stored rate without a period is no limit", claim(2))
            .after([enqueue(A, "a", &[]), enqueue(B, "b", &[])])
            .put("config", hash(&[("rate", "1")])),
        Case::new("claim: a stored event log length below 0 writes no event", claim(1))
            .after([enqueue(A, "a", &[])])
            .put("config", hash(&[("events", "-5")])),
        Case::new("trim: a stored retention below 0 applies the default", trim)
            .after([enqueue(A, "a", &[]), claim(1), ack(A, "1")])
            .put("config", hash(&[("done_count", "-1")])),
    ]
}

/// The minute and hour (since the epoch) of the call's now.
const MINUTE: u64 = NOW / 60_000;
const HOUR: u64 = NOW / 3_600_000;

fn counts(span: &str) -> Call {
    call(Name::Counts, "", &[span])
}

/// One job of each counted kind: A completed, B dead (one attempt), C
/// failed with another to come, and three enqueued.
fn counted() -> Vec<Call> {
    vec![
        enqueue(A, "a", &[]),
        enqueue(B, "b", &[]),
        enqueue(C, "c", &[]),
        claim(3),
        ack(A, "1"),
        fail(B, "1", "1"),
        fail(C, "1", "3"),
    ]
}

/// ACK in its six-key form: a speaker before protocol 1.4.
fn ack_uncounted() -> Call {
    let mut call = ack(A, "1");
    call.keys.truncate(6);
    call
}
