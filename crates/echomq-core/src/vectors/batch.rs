//! BATCH and SETTLE.

use super::*;

pub(super) fn cases() -> Vec<Case> {
    let batch = |args: &[&str]| call(Name::Batch, "", args);
    let settle = |args: &[&str]| call(Name::Settle, "", args);
    let open = batch(&["b1", C, "callback", A, B]);
    let happy = vec![
        Case::new("batch: opened over two jobs", open.clone())
            .after([enqueue(A, "a", &[]), enqueue(B, "b", &[])]),
        Case::new("batch: opened again answers 0", open.clone()).after([open.clone()]),
        Case::new("batch: an id of every allowed character", batch(&["a-Z_0.9:x", C, "cb", A])),
        Case::new("batch: an id ending in :callback", batch(&["b:callback", C, "cb", A])).refused(Code::Arg),
        Case::new("batch: an id with a space", batch(&["b 1", C, "cb", A])).refused(Code::Arg),
        Case::new("batch: no jobs", batch(&["b1", C, "cb"])).refused(Code::Arg),
        Case::new("batch: the callback's kind", batch(&["b1", "XYZ", "cb", A])).refused(Code::Kind),
        Case::new("batch: a job's kind", batch(&["b1", C, "cb", A, "XYZ"])).refused(Code::Kind),
        Case::new("batch: the payload missing", batch(&["b1", C])).refused(Code::Arg),
        Case::new("settle: every job finished enqueues the callback", settle(&[])).after([
            enqueue(A, "a", &[]),
            enqueue(B, "b", &[]),
            open.clone(),
            claim(1),
            ack(A, "1"),
            call(Name::Cancel, B, &[B]),
        ]),
        Case::new("settle: a job not finished stops the batch", settle(&[])).after([
            enqueue(A, "a", &[]),
            enqueue(B, "b", &[]),
            open.clone(),
            claim(1),
            ack(A, "1"),
        ]),
        Case::new("settle: a job gone counts as gone", settle(&[])).after([
            enqueue(A, "a", &[]),
            open.clone(),
            claim(1),
            fail(A, "1", "1"),
        ]),
        Case::new("settle: LIMIT 1 looks at one job", settle(&["LIMIT", "1"])).after([
            enqueue(A, "a", &[]),
            enqueue(B, "b", &[]),
            open.clone(),
            claim(2),
            ack(A, "1"),
            ack(B, "1"),
        ]),
        Case::new("settle: the callback's record exists", settle(&[])).after([
            enqueue(A, "a", &[]),
            enqueue(C, "c", &[]),
            open.clone(),
            call(Name::Cancel, A, &[A]),
        ]),
        Case::new("settle: an open entry with no state is removed", settle(&[]))
            .put("batch_open", zset(&[("ghost", 1.0)])),
        Case::new("settle: a state with a signed number is no state, removed", settle(&[]))
            .put("batch_open", zset(&[("b1", 1.0)]))
            .put("batches", hash(&[("b1", "+1 0 0 0 0 0 JOB_CB"), ("b1:callback", "cb")]))
            .put("batch_jobs", hash(&[("b1:0", A)])),
        Case::new("settle: a state with a number of 16 digits is no state, removed", settle(&[]))
            .put("batch_open", zset(&[("b1", 1.0)]))
            .put("batches", hash(&[("b1", "1 0 0 0 0 0000000000000000 JOB_CB"), ("b1:callback", "cb")]))
            .put("batch_jobs", hash(&[("b1:0", A)])),
        Case::new("settle: a state's numbers may have leading zeros", settle(&[]))
            .put("batch_open", zset(&[("b1", 1.0)]))
            .put("batches", hash(&[("b1", "01 00 0 0 0 000000000000007 JOB_CB"), ("b1:callback", "cb")]))
            .put("batch_jobs", hash(&[("b1:0", A)])),
        Case::new("settle: nothing open", settle(&[])),
        Case::new("settle: LIMIT 0", settle(&["LIMIT", "0"])).refused(Code::Arg),
        Case::new("settle: a job's record a string", settle(&[]))
            .after([enqueue(A, "a", &[]), open.clone()])
            .put(&format!("job:{A}"), string())
            .refused(Code::Type),
    ];
    with_shared(happy)
}
