//! REAP, PROMOTE, PURGE, TRIM, DRAIN and OBLITERATE: a worker's upkeep and
//! an operator's deletions.

use super::*;

/// A job claimed a minute ago under a one-second lease: long expired.
fn expired(id: &str, options: &[&str]) -> Vec<(i64, Call)> {
    vec![(-61_000, enqueue(id, id, options)), (-60_000, call(Name::Claim, "", &["1000"]))]
}

fn steps(case: Case, steps: Vec<(i64, Call)>) -> Case {
    steps.into_iter().fold(case, |case, (at, call)| case.at(at, call))
}

/// `id` done a minute ago, with a result, progress and headers beside it.
fn done(id: &str) -> [Call; 4] {
    [
        enqueue(id, "p", &["PRIORITY", "2", "HEADERS", "{}", "ATTEMPTS", "3"]),
        claim(1),
        call(Name::Progress, id, &[id, "1", "9"]),
        call(Name::Ack, id, &[id, "1", "RESULT", "r"]),
    ]
}

pub(super) fn cases() -> Vec<Case> {
    let reap = |args: &[&str]| call(Name::Reap, "", args);
    let promote = |args: &[&str]| call(Name::Promote, "", args);
    let purge = |set: &str, args: &[&str]| call_on(Name::Purge, "", set, args);
    let trim = |set: &str, args: &[&str]| call_on(Name::Trim, "", set, args);
    let drain = |set: &str, args: &[&str]| call_on(Name::Drain, "", set, args);
    let obliterate = call(Name::Obliterate, "", &[]);
    let remove = |set: &str, ids: &[&str]| call_on(Name::Remove, "", set, ids);
    let happy = vec![
        Case::new("remove: a dead job and all it kept", remove("dead", &[A])).after([
            enqueue(A, "a", &["PRIORITY", "2", "HEADERS", r#"{"t":"x"}"#]),
            claim(1),
            fail(A, "1", "1"),
        ]),
        Case::new("remove: an id in another set is left alone", remove("dead", &[A, B])).after([
            enqueue(A, "a", &[]),
            enqueue(B, "b", &[]),
            claim(1),
            fail(A, "1", "1"),
        ]),
        Case::new("remove: an active job, its holder fenced", remove("active", &[A]))
            .after([enqueue(A, "a", &[]), claim(1)]),
        Case::new("remove: an id named twice, once", remove("pending", &[A, A])).after([enqueue(
            A,
            "a",
            &[],
        )]),
        Case::new("remove: a done job and its result", remove("done", &[A])).after([
            enqueue(A, "a", &[]),
            claim(1),
            call(Name::Ack, A, &[A, "1", "RESULT", "ok"]),
        ]),
        Case::new("remove: no id", remove("dead", &[])).refused_with("EMQKIND job id must be JOB-namespaced"),
        Case::new("remove: an id of another kind", remove("dead", &[A, "XYZ"]))
            .refused_with("EMQKIND job id must be JOB-namespaced"),
        Case::new("remove: from the wake-up key", remove("wake", &[A])).refused(Code::Arg),
        steps(
            Case::new("reap: an expired lease back to pending", reap(&["3"])),
            expired(A, &["PRIORITY", "1"]),
        ),
        steps(Case::new("reap: out of attempts is dead", reap(&["1"])), expired(A, &[])),
        steps(Case::new("reap: its own ATTEMPTS decides", reap(&["9"])), expired(A, &["ATTEMPTS", "1"])),
        Case::new("reap: a live lease stays", reap(&["3"]))
            .after([enqueue(A, "a", &[]), call(Name::Claim, "", &["600000"])]),
        steps(
            steps(Case::new("reap: LIMIT 1 of two", reap(&["3", "LIMIT", "1"])), expired(A, &[])),
            expired(B, &[]),
        ),
        Case::new("reap: an id whose record is missing is dropped", reap(&["3"]))
            .put("active", zset(&[(A, 1.0)])),
        Case::new("reap: max attempts missing", reap(&[])).refused(Code::Arg),
        Case::new("reap: LIMIT 0", reap(&["3", "LIMIT", "0"])).refused(Code::Arg),
        steps(Case::new("reap: an expired record a string", reap(&["3"])), expired(A, &[]))
            .put(&format!("job:{A}"), string())
            .refused(Code::Type),
        Case::new("promote: a due job to pending", promote(&[]))
            .at(-61_000, enqueue(A, "a", &["DELAY", "1000", "PRIORITY", "3"])),
        Case::new("promote: a job not due stays", promote(&[])).after([enqueue(
            A,
            "a",
            &["DELAY", "600000"],
        )]),
        Case::new("promote: LIMIT 1 of two", promote(&["LIMIT", "1"]))
            .at(-61_000, enqueue(A, "a", &["DELAY", "1000"]))
            .at(-61_000, enqueue(B, "b", &["DELAY", "2000"])),
        Case::new("promote: LIMIT 1001", promote(&["LIMIT", "1001"])).refused(Code::Arg),
        Case::new("promote: a stray argument", promote(&["5"])).refused(Code::Arg),
        Case::new("purge: a done job and all beside it", purge("done", &["30000"])).after(done(A)),
        Case::new("purge: a job younger than the age stays", purge("done", &["600000"])).after(done(A)),
        Case::new("purge: a dead job", purge("dead", &["0", "LIMIT", "10"])).after([
            enqueue(A, "a", &[]),
            claim(1),
            fail(A, "1", "1"),
        ]),
        Case::new("purge: a cancelled job", purge("cancelled", &["0"]))
            .after([enqueue(A, "a", &[]), call(Name::Cancel, A, &[A])]),
        Case::new("purge: the age missing", purge("done", &[])).refused(Code::Arg),
        Case::new("purge: not a finished set", purge("pending", &["0"])).refused(Code::Arg),
        Case::new("trim: a count of 1 keeps the newest", trim("done", &["LIMIT", "100"]))
            .at(-120_000, enqueue(A, "a", &[]))
            .at(-120_000, claim(1))
            .at(-119_000, ack(A, "1"))
            .after([enqueue(B, "b", &[]), claim(1), ack(B, "1"), config(&["DONE_COUNT", "1"])]),
        Case::new("trim: an age cuts the old", trim("done", &["LIMIT", "100"]))
            .after(done(A))
            .after([config(&["DONE_AGE", "1000"])]),
        Case::new("trim: the defaults keep a fresh job", trim("done", &["LIMIT", "100"])).after(done(A)),
        Case::new("trim: dead jobs by age", trim("dead", &["LIMIT", "1"])).after([
            enqueue(A, "a", &[]),
            claim(1),
            fail(A, "1", "1"),
            config(&["DEAD_AGE", "1"]),
        ]),
        Case::new("trim: LIMIT missing its value", trim("done", &["LIMIT"])).refused(Code::Arg),
        Case::new("drain: pending jobs and all beside them", drain("pending", &["LIMIT", "10"]))
            .after([enqueue(A, "a", &["PRIORITY", "1", "HEADERS", "{}"]), enqueue(B, "b", &[])]),
        Case::new("drain: LIMIT 1 takes the head", drain("pending", &["LIMIT", "1"]))
            .after([enqueue(A, "a", &[]), enqueue(B, "b", &["PRIORITY", "5"])]),
        Case::new("drain: an active job", drain("active", &[])).after([enqueue(A, "a", &[]), claim(1)]),
        Case::new("drain: delayed jobs", drain("delayed", &[])).after([enqueue(A, "a", &["DELAY", "60000"])]),
        Case::new("drain: not an unfinished set", drain("done", &[])).refused(Code::Arg),
        Case::new("obliterate: the queue's keys", obliterate.clone()).after([
            config(&["PAUSED", "1", "CONCURRENCY", "2"]),
            call(Name::Schedule, "", &["s", "def", &at(60_000)]),
        ]),
        Case::new("obliterate: an empty queue deletes nothing", obliterate.clone()),
        Case::new("obliterate: a queue holding jobs", obliterate.clone())
            .after([enqueue(A, "a", &[]), config(&["PAUSED", "1"])])
            .refused(Code::State),
        Case::new("obliterate: an argument", obliterate.clone().arg(b"x")).refused(Code::Arg),
    ];
    with_shared(happy)
}
