//! ENQUEUE and ENQUEUEMANY.

use super::*;

pub(super) fn cases() -> Vec<Case> {
    let many = |args: &[&str]| call(Name::EnqueueMany, "", args);
    let two = |id: &str, payload: &str| {
        enqueue(id, payload, &[]).with_keys(keys_of(Name::Enqueue, id, "")[..2].to_vec())
    };
    let mut happy = vec![
        Case::new("a plain job, all eleven keys", enqueue(A, "hello", &[])),
        Case::new("the seed's two-key form", two(A, "hello")),
        Case::new("two keys, a duplicate answers 0", two(A, "again")).after([two(A, "hello")]),
        Case::new("a duplicate answers 0 and changes nothing", enqueue(A, "again", &[])).after([enqueue(
            A,
            "hello",
            &[],
        )]),
        Case::new("an empty payload", enqueue(A, "", &[])),
        Case::new(
            "a payload of bytes that are not UTF-8",
            enqueue(A, "", &[]).with_keys(keys_of(Name::Enqueue, A, "")),
        ),
        Case::new("PRIORITY 5 is scored and kept", enqueue(A, "p", &["PRIORITY", "5"])),
        Case::new("PRIORITY -3", enqueue(A, "p", &["PRIORITY", "-3"])),
        Case::new("PRIORITY 0 is kept nowhere", enqueue(A, "p", &["PRIORITY", "0"])),
        Case::new("PRIORITY 007 is kept as 7", enqueue(A, "p", &["PRIORITY", "007"])),
        Case::new("DELAY 5000 makes it delayed", enqueue(A, "p", &["DELAY", "5000"])),
        Case::new("DELAY 0 is pending", enqueue(A, "p", &["DELAY", "0"])),
        Case::new("AT a time ahead makes it delayed", enqueue(A, "p", &["AT", &at(30_000)])),
        Case::new("AT a time past is pending", enqueue(A, "p", &["AT", &at(-30_000)])),
        Case::new(
            "a policy of its own",
            enqueue(A, "p", &["ATTEMPTS", "3", "BACKOFF_EXP", "1000", "TIMEOUT", "30000"]),
        ),
        Case::new("BACKOFF alone", enqueue(A, "p", &["backoff", "250"])),
        Case::new("UNIQUE holds the key", enqueue(A, "p", &["UNIQUE", "k", "UNIQUE_FOR", "60000"])),
        Case::new("UNIQUE held answers the holder", enqueue(B, "p", &["UNIQUE", "k", "UNIQUE_FOR", "60000"]))
            .after([enqueue(A, "p", &["UNIQUE", "k", "UNIQUE_FOR", "120000"])]),
        Case::new(
            "UNIQUE past its hold is free again",
            enqueue(B, "p", &["UNIQUE", "k", "UNIQUE_FOR", "60000"]),
        )
        .at(-120_000, enqueue(A, "p", &["UNIQUE", "k", "UNIQUE_FOR", "30000"])),
        Case::new(
            "UNIQUE_DONE 1 frees the key when its job is done",
            enqueue(B, "p", &["UNIQUE", "k", "UNIQUE_FOR", "600000", "UNIQUE_DONE", "1"]),
        )
        .after([
            enqueue(A, "p", &["UNIQUE", "k", "UNIQUE_FOR", "600000", "UNIQUE_DONE", "1"]),
            claim(1),
            ack(A, "1"),
        ]),
        Case::new(
            "UNIQUE_DONE 1 holds while its job is pending",
            enqueue(B, "p", &["UNIQUE", "k", "UNIQUE_FOR", "600000", "UNIQUE_DONE", "1"]),
        )
        .after([enqueue(A, "p", &["UNIQUE", "k", "UNIQUE_FOR", "600000", "UNIQUE_DONE", "1"])]),
        Case::new(
            "a unique value not of its shape is refused as malformed",
            enqueue(B, "p", &["UNIQUE", "k", "UNIQUE_FOR", "60000"]),
        )
        .put("unique", hash(&[("k", "junk")]))
        .put("unique_until", zset(&[("k", (NOW + 60_000) as f64)]))
        .refused(Code::Data),
        Case::new(
            "HEADERS are kept beside the record",
            enqueue(A, "p", &["HEADERS", r#"{"tenant":"acme"}"#]),
        ),
        Case::new("no event when the log is off", enqueue(A, "p", &[])).after([config(&["EVENTS", "0"])]),
        Case::new("the id's kind: XYZ", enqueue("XYZ", "p", &[])).refused(Code::Kind),
        Case::new("the id's kind: an empty id", enqueue("", "p", &[])).refused(Code::Kind),
        Case::new("the payload missing", call(Name::Enqueue, A, &[A])).refused(Code::Arg),
        Case::new("no arguments", call(Name::Enqueue, A, &[])).refused(Code::Kind),
        Case::new(
            "the payload over its limit",
            call(Name::Enqueue, A, &[A]).arg(&vec![b'x'; crate::limits::MAX_PAYLOAD + 1]),
        )
        .refused(Code::Size),
        Case::new("an unknown option", enqueue(A, "p", &["COLOUR", "red"])).refused(Code::Arg),
        Case::new("an option without its value", enqueue(A, "p", &["PRIORITY"])).refused(Code::Arg),
        Case::new("PRIORITY not an integer", enqueue(A, "p", &["PRIORITY", "1.5"])).refused(Code::Arg),
        Case::new("PRIORITY out of range", enqueue(A, "p", &["PRIORITY", "2147483648"])).refused(Code::Arg),
        Case::new("PRIORITY given twice", enqueue(A, "p", &["PRIORITY", "1", "PRIORITY", "2"]))
            .refused(Code::Arg),
        Case::new("DELAY with AT", enqueue(A, "p", &["DELAY", "1", "AT", &at(1)])).refused(Code::Arg),
        Case::new("DELAY negative", enqueue(A, "p", &["DELAY", "-1"])).refused(Code::Arg),
        Case::new("BACKOFF with BACKOFF_EXP", enqueue(A, "p", &["BACKOFF", "1", "BACKOFF_EXP", "1"]))
            .refused(Code::Arg),
        Case::new("TIMEOUT 0", enqueue(A, "p", &["TIMEOUT", "0"])).refused(Code::Arg),
        Case::new("UNIQUE without UNIQUE_FOR", enqueue(A, "p", &["UNIQUE", "k"])).refused(Code::Arg),
        Case::new("UNIQUE_FOR without UNIQUE", enqueue(A, "p", &["UNIQUE_FOR", "1000"])).refused(Code::Arg),
        Case::new("UNIQUE of no bytes", enqueue(A, "p", &["UNIQUE", "", "UNIQUE_FOR", "1000"]))
            .refused(Code::Arg),
        Case::new("HEADERS of no bytes", enqueue(A, "p", &["HEADERS", ""])).refused(Code::Arg),
        Case::new("PRIORITY 5 in the two-key form", two(A, "p").arg(b"PRIORITY").arg(b"5"))
            .refused(Code::Arg),
        Case::new("the record a string", enqueue(A, "p", &[]))
            .put(&format!("job:{A}"), string())
            .refused(Code::Type),
        Case::new("a delayed job with delayed a string", enqueue(A, "p", &["DELAY", "1000"]))
            .put("delayed", string())
            .refused(Code::Type),
        Case::new(
            "UNIQUE whose holder's record is a string",
            enqueue(B, "p", &["UNIQUE", "k", "UNIQUE_FOR", "60000", "UNIQUE_DONE", "1"]),
        )
        .after([enqueue(A, "p", &["UNIQUE", "k", "UNIQUE_FOR", "600000", "UNIQUE_DONE", "1"])])
        .put(&format!("job:{A}"), string())
        .refused(Code::Type),
        Case::new("many: three jobs", many(&[A, "a", B, "b", C, "c"])),
        Case::new("many: a duplicate among them answers 0", many(&[A, "a", B, "b"])).after([enqueue(
            A,
            "first",
            &[],
        )]),
        Case::new("many: a job named twice is enqueued once", many(&[A, "a", A, "again"])),
        Case::new("many: no jobs", many(&[])).refused(Code::Kind),
        Case::new("many: a bad id refuses them all", many(&[A, "a", "XYZ", "b"])).refused(Code::Kind),
        Case::new("many: a payload missing", many(&[A, "a", B])).refused(Code::Arg),
        Case::new("many: a record a string refuses them all", many(&[A, "a", B, "b"]))
            .put(&format!("job:{B}"), string())
            .refused(Code::Type),
    ];
    // A payload of bytes that are not UTF-8.
    happy[5].call.args[1] = vec![0xff, 0x00, 0x80];
    with_shared(happy)
}
