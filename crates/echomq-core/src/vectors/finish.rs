//! ACK, FAIL, CANCEL and RETRY: how a job ends, and comes back.

use super::*;

fn claimed() -> [Call; 2] {
    [enqueue(A, "a", &[]), claim(1)]
}

pub(super) fn cases() -> Vec<Case> {
    let cancel = |id: &str| call(Name::Cancel, id, &[id]);
    let retry = |id: &str| call(Name::Retry, id, &[id]);
    let dead = [enqueue(A, "a", &["PRIORITY", "4"]), claim(1), fail(A, "1", "1")];
    let happy = vec![
        Case::new("ack: done", ack(A, "1")).after(claimed()),
        Case::new("ack: RESULT kept", call(Name::Ack, A, &[A, "1", "RESULT", "42"])).after(claimed()),
        Case::new("ack: an empty RESULT", call(Name::Ack, A, &[A, "1", "result", ""])).after(claimed()),
        Case::new("ack: a second attempt", ack(A, "2")).after(claimed()).after([release(A, "1"), claim(1)]),
        Case::new("ack: a stale token", ack(A, "2")).after(claimed()).refused(Code::Fence),
        Case::new("ack: a pending job", ack(A, "1")).after([enqueue(A, "a", &[])]).refused(Code::Fence),
        Case::new("ack: done twice", ack(A, "1")).after(claimed()).after([ack(A, "1")]).refused(Code::Fence),
        Case::new("ack: no such job", ack(A, "1")).refused(Code::NoJob),
        Case::new("ack: the token missing", call(Name::Ack, A, &[A])).after(claimed()).refused(Code::Arg),
        Case::new("ack: token 0", ack(A, "0")).after(claimed()).refused(Code::Arg),
        Case::new("ack: the id's kind", ack("XYZ", "1")).refused(Code::Kind),
        Case::new(
            "ack: RESULT over its limit",
            call(Name::Ack, A, &[A, "1", "RESULT"]).arg(&vec![b'r'; crate::limits::MAX_RESULT + 1]),
        )
        .after(claimed())
        .refused(Code::Size),
        Case::new("ack: a record whose state is no state", ack(A, "1"))
            .put(&format!("job:{A}"), hash(&[("state", "weird"), ("attempts", "1"), ("payload", "p")]))
            .refused(Code::Data),
        Case::new("fail: retried later", fail(A, "1", "3")).after(claimed()),
        Case::new("fail: out of attempts is dead", fail(A, "1", "1")).after(claimed()),
        Case::new("fail: its own ATTEMPTS decides", fail(A, "1", "5"))
            .after([enqueue(A, "a", &["ATTEMPTS", "1"]), claim(1)]),
        Case::new("fail: its own BACKOFF_EXP", fail(A, "2", "5")).after([
            enqueue(A, "a", &["BACKOFF_EXP", "1000"]),
            claim(1),
            release(A, "1"),
            claim(1),
        ]),
        Case::new(
            "fail: a long error is cut in its event",
            call(Name::Fail, A, &[A, "1", "3", "0"]).arg(&[b'e'; 2000]),
        )
        .after(claimed()),
        Case::new("fail: max attempts negative", call(Name::Fail, A, &[A, "1", "-1", "0", "e"]))
            .after(claimed())
            .refused(Code::Arg),
        Case::new("fail: the error missing", call(Name::Fail, A, &[A, "1", "3", "0"]))
            .after(claimed())
            .refused(Code::Arg),
        Case::new(
            "fail: the error over 65536 bytes",
            call(Name::Fail, A, &[A, "1", "3", "0"]).arg(&vec![b'e'; 65_537]),
        )
        .after(claimed())
        .refused(Code::Size),
        Case::new("fail: a stale token", fail(A, "7", "3")).after(claimed()).refused(Code::Fence),
        Case::new("fail: no such job", fail(A, "1", "3")).refused(Code::NoJob),
        Case::new("cancel: a pending job", cancel(A)).after([enqueue(A, "a", &[])]),
        Case::new("cancel: an active job", cancel(A)).after(claimed()),
        Case::new("cancel: a delayed job", cancel(A)).after([enqueue(A, "a", &["DELAY", "60000"])]),
        Case::new("cancel: a dead job", cancel(A)).after(dead.clone()),
        Case::new("cancel: cancelled already answers 0", cancel(A)).after([enqueue(A, "a", &[]), cancel(A)]),
        Case::new("cancel: cancelled already answers 0 before the events keys", cancel(A))
            .after([enqueue(A, "a", &[]), cancel(A)])
            .put("events", string()),
        Case::new("cancel: cancelled already answers 0 before the queue's version", cancel(A))
            .after([enqueue(A, "a", &[]), cancel(A)])
            .put("config", hash(&[("protocol", "2.0")])),
        Case::new("cancel: a pending job into events of the wrong type", cancel(A))
            .after([enqueue(A, "a", &[])])
            .put("events", string())
            .refused_with("EMQTYPE emq:{q}:events holds a string, not a stream"),
        Case::new("cancel: a done job", cancel(A)).after(claimed()).after([ack(A, "1")]).refused(Code::State),
        Case::new("cancel: no such job", cancel(A)).refused(Code::NoJob),
        Case::new("cancel: the id's kind", cancel("job_lower")).refused(Code::Kind),
        Case::new("cancel: the id missing", call(Name::Cancel, A, &[])).refused(Code::Kind),
        Case::new("retry: a dead job back to pending at its priority", retry(A)).after(dead.clone()),
        Case::new("retry: a pending job", retry(A)).after([enqueue(A, "a", &[])]).refused(Code::State),
        Case::new("retry: a cancelled job", retry(A))
            .after([enqueue(A, "a", &[]), cancel(A)])
            .refused(Code::State),
        Case::new("retry: no such job", retry(A)).refused(Code::NoJob),
        Case::new("retry: the id's kind", retry("XYZ")).refused(Code::Kind),
    ];
    with_shared(happy)
}
