//! CLAIM, ACKNEXT, ACKMANY, EXTEND, RELEASE, PROGRESS and DEFER: the lease.

use super::*;

fn claimed() -> [Call; 2] {
    [enqueue(A, "a", &[]), claim(1)]
}

/// `id` claimed, acked and purged, then enqueued again: a new job whose
/// tokens start again at 1, pending.
fn new_life(id: &str) -> [Call; 5] {
    [
        enqueue(id, "a", &[]),
        claim(1),
        ack(id, "1"),
        call_on(Name::Purge, "", "done", &["0"]),
        enqueue(id, "a", &[]),
    ]
}

pub(super) fn cases() -> Vec<Case> {
    let claim_args = |args: &[&str]| call(Name::Claim, "", args);
    let acknext = |args: &[&str]| call(Name::AckNext, A, args);
    let ackmany = |args: &[&str]| call(Name::AckMany, "", args);
    let extend = |args: &[&str]| call(Name::Extend, A, args);
    let release_args = |args: &[&str]| {
        let mut call = call(Name::Release, A, args);
        call.keys.truncate(7);
        call
    };
    let refund_args = |args: &[&str]| call(Name::Release, A, args);
    let progress = |args: &[&str]| call(Name::Progress, A, args);
    let defer = |args: &[&str]| call(Name::Defer, A, args);
    let three = [enqueue(A, "a", &[]), enqueue(B, "b", &[]), enqueue(C, "c", &[])];
    let happy = vec![
        Case::new("claim: one job", claim(1)).after([enqueue(A, "a", &[])]),
        Case::new("claim: nothing pending answers []", claim(1)),
        Case::new("claim: COUNT 2 of three, in pending order", claim(2)).after(three.clone()),
        Case::new("claim: the lease argument alone", claim_args(&["30000"])).after([enqueue(A, "a", &[])]),
        Case::new("claim: a higher priority comes first", claim(1))
            .after([enqueue(A, "a", &["PRIORITY", "5"]), enqueue(B, "b", &["PRIORITY", "-1"])]),
        Case::new("claim: a second attempt's token is 2", claim(1)).after([
            enqueue(A, "a", &[]),
            claim(1),
            release(A, "1"),
        ]),
        Case::new("claim: a policy is handed out", claim(1)).after([enqueue(A, "a", &["ATTEMPTS", "2"])]),
        Case::new("claim: headers are handed out", claim(1)).after([enqueue(
            A,
            "a",
            &["HEADERS", r#"{"t":"1"}"#],
        )]),
        Case::new("claim: paused answers [-1]", claim(1))
            .after([enqueue(A, "a", &[]), config(&["PAUSED", "1"])]),
        Case::new("claim: paused and empty answers [-1]", claim(1)).after([config(&["PAUSED", "1"])]),
        Case::new("claim: concurrency 1 held back the rest", claim(5)).after([
            enqueue(A, "a", &[]),
            enqueue(B, "b", &[]),
            config(&["CONCURRENCY", "1"]),
        ]),
        Case::new("claim: concurrency full answers [0]", claim(1)).after([
            enqueue(A, "a", &[]),
            enqueue(B, "b", &[]),
            config(&["CONCURRENCY", "1"]),
            claim(1),
        ]),
        Case::new("claim: a rate logs each claim", claim(3))
            .after(three.clone())
            .after([config(&["RATE", "2", "PER", "600000"])]),
        Case::new("claim: a full rate window answers the ms to wait", claim(1)).after([
            enqueue(A, "a", &[]),
            enqueue(B, "b", &[]),
            config(&["RATE", "1", "PER", "600000"]),
            claim(1),
        ]),
        Case::new("claim: a new life of an id is logged beside its earlier claim", claim(1))
            .after([config(&["RATE", "3", "PER", "600000"])])
            .after(new_life(A)),
        Case::new("claim: a new life's claim counts against the rate", claim(1))
            .after([config(&["RATE", "2", "PER", "600000"])])
            .after(new_life(A))
            .after([claim(1), enqueue(B, "b", &[])]),
        Case::new("claim: a timed pause answers its ms", claim(1)).after([
            enqueue(A, "a", &[]),
            enqueue(B, "b", &[]),
            claim(1),
            call(Name::Defer, A, &[A, "1", "300000", "5", "PAUSE", "1"]),
        ]),
        Case::new("claim: an id whose record is missing is dropped", claim(1))
            .put("pending", zset(&[(A, 0.0)])),
        Case::new("claim: lease 0", claim_args(&["0"])).refused(Code::Arg),
        Case::new("claim: lease missing", claim_args(&[])).refused(Code::Arg),
        Case::new("claim: COUNT 0", claim_args(&["1000", "COUNT", "0"])).refused(Code::Arg),
        Case::new("claim: COUNT 1001", claim_args(&["1000", "COUNT", "1001"])).refused(Code::Arg),
        Case::new("claim: an unknown option", claim_args(&["1000", "WAIT", "1"])).refused(Code::Arg),
        Case::new("claim: a taken record a string", claim(1))
            .after([enqueue(A, "a", &[])])
            .put(&format!("job:{A}"), string())
            .refused(Code::Type),
        Case::new("acknext: acks and claims the next", acknext(&[A, "1", "60000"])).after([
            enqueue(A, "a", &[]),
            enqueue(B, "b", &[]),
            claim(1),
        ]),
        Case::new(
            "acknext: with RESULT and COUNT",
            acknext(&[A, "1", "60000", "COUNT", "2", "RESULT", "42"]),
        )
        .after(three.clone())
        .after([claim(1)]),
        Case::new("acknext: nothing more pending", acknext(&[A, "1", "60000"])).after(claimed()),
        Case::new("acknext: a stale token", acknext(&[A, "2", "60000"]))
            .after(claimed())
            .refused(Code::Fence),
        Case::new("acknext: no such job", acknext(&[A, "1", "60000"])).refused(Code::NoJob),
        Case::new("acknext: COUNT given twice", acknext(&[A, "1", "60000", "COUNT", "1", "COUNT", "2"]))
            .after(claimed())
            .refused(Code::Arg),
        Case::new("acknext: the lease missing", acknext(&[A, "1"])).after(claimed()).refused(Code::Arg),
        Case::new("ackmany: two jobs, one with a result", ackmany(&[A, "1", B, "1", "RESULT", "42"]))
            .after([enqueue(A, "a", &[]), enqueue(B, "b", &[]), claim(2)]),
        Case::new("ackmany: each job answered on its own", ackmany(&[A, "1", B, "1", C, "1"])).after([
            enqueue(A, "a", &[]),
            enqueue(B, "b", &[]),
            claim(1),
        ]),
        Case::new("ackmany: a job named twice is acked once", ackmany(&[A, "1", A, "1"])).after(claimed()),
        Case::new(
            "ackmany: attempts of 1.0 is that job's EMQDATA, the next acked",
            ackmany(&[B, "1", A, "1"]),
        )
        .after([enqueue(A, "a", &[]), claim(1)])
        .put(&format!("job:{B}"), hash(&[("state", "active"), ("attempts", "1.0"), ("payload", "b")]))
        .put("active", zset(&[(A, (NOW + 60_000) as f64), (B, (NOW + 60_000) as f64)])),
        Case::new("ackmany: a malformed job named twice is refused twice", ackmany(&[B, "1", B, "1"]))
            .put(&format!("job:{B}"), hash(&[("state", "weird"), ("attempts", "1"), ("payload", "b")])),
        Case::new("ackmany: no jobs", ackmany(&[])).refused(Code::Kind),
        Case::new("ackmany: a token missing", ackmany(&[A])).after(claimed()).refused(Code::Arg),
        Case::new("ackmany: a bad second id refuses all", ackmany(&[A, "1", "XYZ", "1"]))
            .after(claimed())
            .refused(Code::Kind),
        Case::new("extend: renews the lease", extend(&[A, "1", "120000"])).after(claimed()),
        Case::new("extend: a stale token", extend(&[A, "9", "120000"])).after(claimed()).refused(Code::Fence),
        Case::new("extend: a pending job is not held", extend(&[A, "0", "120000"]))
            .after([enqueue(A, "a", &[])])
            .refused(Code::Arg),
        Case::new("extend: a pending job, token 1", extend(&[A, "1", "120000"]))
            .after([enqueue(A, "a", &[])])
            .refused(Code::Fence),
        Case::new("extend: no such job", extend(&[A, "1", "120000"])).refused(Code::NoJob),
        Case::new("extend: lease 0", extend(&[A, "1", "0"])).after(claimed()).refused(Code::Arg),
        Case::new("extend: the id's kind", extend(&["XYZ", "1", "1000"])).refused(Code::Kind),
        Case::new("release: back to pending", release(A, "1")).after(claimed()),
        Case::new("release: back at its priority", release(A, "1"))
            .after([enqueue(A, "a", &["PRIORITY", "9"]), claim(1)]),
        Case::new("release: a stale token", release(A, "2")).after(claimed()).refused(Code::Fence),
        Case::new("release: token not a number", release(A, "one")).after(claimed()).refused(Code::Arg),
        Case::new("release: no such job", release(A, "1")).refused(Code::NoJob),
        Case::new("release: an unknown option", release_args(&[A, "1", "LATER", "1"]))
            .after(claimed())
            .refused(Code::Arg),
        Case::new("release: REFUND gives the attempt back", refund(A, "1", "3")).after(claimed()),
        Case::new("release: REFUND grows the job's own ATTEMPTS", refund(A, "1", "9"))
            .after([enqueue(A, "a", &["ATTEMPTS", "2", "BACKOFF", "5"]), claim(1)]),
        Case::new("release: REFUND at the largest ATTEMPTS stays there", refund(A, "1", "2147483647"))
            .after(claimed()),
        Case::new("release: a second REFUND grows it again", refund(A, "2", "3"))
            .after(claimed())
            .after([refund(A, "1", "3"), claim(1)]),
        Case::new("release: REFUND without the policy key", release_args(&[A, "1", "REFUND", "3"]))
            .after(claimed())
            .refused(Code::Arg),
        Case::new("release: the policy key without REFUND", refund_args(&[A, "1"]))
            .after(claimed())
            .refused(Code::Arg),
        Case::new("release: REFUND not a number", refund(A, "1", "three"))
            .after(claimed())
            .refused(Code::Arg),
        Case::new("release: REFUND given twice", refund_args(&[A, "1", "REFUND", "3", "REFUND", "3"]))
            .after(claimed())
            .refused(Code::Arg),
        Case::new("release: REFUND with a policy key of another type", refund(A, "1", "3"))
            .after(claimed())
            .put("policy", string())
            .refused(Code::Type),
        Case::new("release: REFUND with a malformed policy", refund(A, "1", "3"))
            .after(claimed())
            .put("policy", hash(&[(A, "ATTEMPTS many")]))
            .refused(Code::Data),
        Case::new("release: REFUND on a stale token changes nothing", refund(A, "2", "3"))
            .after(claimed())
            .refused(Code::Fence),
        Case::new("progress: kept beside the record", progress(&[A, "1", "50%"])).after(claimed()),
        Case::new("progress: the empty string is a value", progress(&[A, "1", ""])).after(claimed()),
        Case::new("progress: the value missing", progress(&[A, "1"])).after(claimed()).refused(Code::Arg),
        Case::new("progress: over 4096 bytes", progress(&[A, "1"]).arg(&[b'x'; 4097]))
            .after(claimed())
            .refused(Code::Size),
        Case::new("progress: a done job is not held", progress(&[A, "1", "x"]))
            .after([enqueue(A, "a", &[]), claim(1), ack(A, "1")])
            .refused(Code::Fence),
        Case::new("defer: waits without spending its attempt", defer(&[A, "1", "5000", "3"]))
            .after(claimed()),
        Case::new("defer: PAUSE 1 pauses the queue", defer(&[A, "1", "5000", "3", "PAUSE", "1"]))
            .after(claimed()),
        Case::new("defer: a job's own ATTEMPTS grows by one", defer(&[A, "1", "5000", "3"]))
            .after([enqueue(A, "a", &["ATTEMPTS", "2", "BACKOFF", "10"]), claim(1)]),
        Case::new("defer: PAUSE 2", defer(&[A, "1", "5000", "3", "PAUSE", "2"]))
            .after(claimed())
            .refused(Code::Arg),
        Case::new("defer: max attempts missing", defer(&[A, "1", "5000"]))
            .after(claimed())
            .refused(Code::Arg),
        Case::new("defer: a stale token", defer(&[A, "3", "5000", "3"]))
            .after(claimed())
            .refused(Code::Fence),
    ];
    with_shared(happy)
}
