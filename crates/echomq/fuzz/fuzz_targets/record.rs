//! The record parser, fed field/value lists as HGETALL could give them (and
//! as it never would). When `Record::from_fields` accepts a list:
//! - every field is one of the protocol's five, and the three birth fields are there;
//! - the payload is the input's bytes, verbatim;
//! - the record written back as the executors write it (state name, decimal
//!   numbers, the payload as is), in any field order, parses to the same record;
//! - INSPECT's reply parser, given the same fields, reads the same record.
//!
//! Whatever it refuses is `ErrorKind::Record`, INSPECT refuses it too, and a
//! list of distinct fields parses the same in any order (a hash has none).
#![no_main]

use echomq::record::field;
use echomq::executor::Reply;
use echomq::transition::{Inspect, Transition};
use echomq::{Error, ErrorKind, Record, State};
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;

const NAMES: [&str; 5] =
    [field::STATE, field::ATTEMPTS, field::PAYLOAD, field::ENQUEUED_AT, field::UPDATED_AT];

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// Mostly the protocol's names with fitting values, so lists often parse;
/// now and then any bytes at all.
fn fields(u: &mut Unstructured) -> Result<Fields> {
    let mut fields = Vec::new();
    for _ in 0..u.int_in_range(0..=7)? {
        let name: Vec<u8> = match u.int_in_range(0..=9)? {
            0 => u.arbitrary()?,
            n => NAMES[n as usize % NAMES.len()].into(),
        };
        let value: Vec<u8> = match (name.as_slice(), u.int_in_range(0..=3)?) {
            (_, 0) => u.arbitrary()?,
            (b"state", _) => u.choose(&State::ALL)?.as_str().into(),
            (b"payload", _) => u.arbitrary()?,
            _ => u.arbitrary::<u64>()?.to_string().into(),
        };
        fields.push((name, value));
    }
    Ok(fields)
}

/// The record as the executors write it.
fn written(record: &Record) -> Fields {
    let mut fields = vec![
        (field::STATE.into(), record.state.as_str().into()),
        (field::ATTEMPTS.into(), record.attempts.to_string().into()),
        (field::PAYLOAD.into(), record.payload.clone()),
    ];
    for (name, value) in [(field::ENQUEUED_AT, record.enqueued_at), (field::UPDATED_AT, record.updated_at)] {
        if let Some(value) = value {
            fields.push((name.into(), value.to_string().into()));
        }
    }
    fields
}

/// INSPECT's reply for a record hash: its flat field/value array and no error.
fn inspect(fields: &Fields) -> echomq::Result<Option<Record>> {
    let flat = fields.iter().flat_map(|(f, v)| [Reply::Bulk(f.clone()), Reply::Bulk(v.clone())]);
    let reply = Reply::Array(vec![Reply::Array(flat.collect()), Reply::Nil]);
    Inspect::parse(reply).map(|found| found.map(|inspection| inspection.record))
}

fuzz_target!(|data: &[u8]| {
    let Ok(fields) = fields(&mut Unstructured::new(data)) else { return };
    let parsed = Record::from_fields(fields.iter().map(|(f, v)| (f, v)));

    let mut names: Vec<&[u8]> = fields.iter().map(|(f, _)| f.as_slice()).collect();
    names.sort();
    names.dedup();
    if names.len() == fields.len() {
        let reversed = Record::from_fields(fields.iter().rev().map(|(f, v)| (f, v)));
        assert_eq!(parsed.as_ref().ok(), reversed.as_ref().ok(), "field order changed the record");
    }
    let from_inspect = inspect(&fields);

    let record = match parsed {
        Ok(record) => record,
        Err(Error { kind: ErrorKind::Record, .. }) => {
            assert!(
                matches!(from_inspect, Err(Error { kind: ErrorKind::Record, .. }))
                    || (fields.is_empty() && matches!(from_inspect, Ok(None))),
                "INSPECT read what the record parser refuses: {from_inspect:?}"
            );
            return;
        }
        Err(other) => panic!("a refusal that is not ErrorKind::Record: {other:?}"),
    };
    for (name, _) in &fields {
        assert!(NAMES.iter().any(|known| known.as_bytes() == name.as_slice()), "accepted field {name:?}");
    }
    for birth in [field::STATE, field::ATTEMPTS, field::PAYLOAD] {
        assert!(names.contains(&birth.as_bytes()), "accepted a record without {birth}");
    }
    let payload = fields.iter().rev().find(|(f, _)| f == b"payload").map(|(_, v)| v);
    assert_eq!(Some(&record.payload), payload, "the payload is not verbatim");

    let mut again = written(&record);
    assert_eq!(Record::from_fields(again.iter().map(|(f, v)| (f, v))).unwrap(), record);
    again.reverse();
    assert_eq!(Record::from_fields(again.iter().map(|(f, v)| (f, v))).unwrap(), record);
    assert_eq!(from_inspect.unwrap(), Some(record), "INSPECT read another record");
});
