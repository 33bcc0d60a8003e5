//! The job id parsers against two oracles. `JobId::try_from` and `parse`
//! accept exactly what the server's kind gate admits (UTF-8 whose first
//! three bytes are `JOB`), and give the text back unchanged. `JobId::branded`
//! accepts a text exactly when it is `JOB_` and the canonical (upper-case, in
//! range) text of a 128-bit ULID, per the ULID crate; such an id displays,
//! debugs, serialises and keys back to its own text; a refused one is
//! `ErrorKind::InvalidId`; and two branded ids compare as bytes the way their
//! ULIDs compare as numbers (byte order is mint order, PROTOCOL.md §1).
//!
//! Input: the first byte picks the shape (a raw text, or `JOB_` and the rest,
//! so most inputs reach the ULID checks); a 0xFF byte splits two candidates.
#![no_main]

use echomq::{Error, ErrorKind, JobId, Keyspace};
use libfuzzer_sys::fuzz_target;

/// What the oracle says the id is: its ULID, when the text is one exactly.
fn oracle(text: &[u8]) -> Option<ulid::Ulid> {
    let text = std::str::from_utf8(text).ok()?;
    let ulid_text = text.strip_prefix("JOB_")?;
    let ulid = ulid::Ulid::from_string(ulid_text).ok()?;
    (ulid.to_string() == ulid_text).then_some(ulid)
}

/// Parse `text` every way the host does, check every property, and give the
/// id when it is branded.
fn check(text: &[u8]) -> Option<(JobId, ulid::Ulid)> {
    let from_bytes = JobId::try_from(text);
    let from_str = std::str::from_utf8(text).map(str::parse::<JobId>);
    match (&from_bytes, &from_str) {
        (Ok(a), Ok(Ok(b))) => assert_eq!(a, b, "the two parsers disagree"),
        (
            Err(Error { kind: ErrorKind::InvalidId, .. }),
            Ok(Err(Error { kind: ErrorKind::InvalidId, .. })) | Err(_),
        ) => {}
        other => panic!("the two parsers disagree, or an error is not InvalidId: {other:?}"),
    }
    // The kind gate: admitted exactly when UTF-8 starting with JOB, unchanged.
    let admitted = std::str::from_utf8(text).is_ok_and(|t| t.starts_with("JOB"));
    match &from_bytes {
        Ok(id) => {
            assert!(admitted, "accepted {:?}, which the kind gate refuses", id.as_str());
            assert_eq!(id.as_str().as_bytes(), text);
            assert_eq!(id.to_string().as_bytes(), text);
            assert_eq!(id.is_branded(), oracle(text).is_some());
        }
        Err(_) => {
            assert!(!admitted, "refused {:?}, which the kind gate admits", String::from_utf8_lossy(text))
        }
    }
    let branded = std::str::from_utf8(text).map_err(|_| ()).and_then(|t| JobId::branded(t).map_err(|_| ()));
    let expected = oracle(text);
    let id = match branded {
        Ok(id) => id,
        Err(()) => {
            assert!(expected.is_none(), "refused a canonical ULID id {:?}", String::from_utf8_lossy(text));
            return None;
        }
    };
    let ulid =
        expected.unwrap_or_else(|| panic!("accepted {:?}, which is no canonical ULID id", id.as_str()));
    // Round trips: every way out gives back the very text that came in.
    assert_eq!(id.as_str().as_bytes(), text);
    assert_eq!(id.to_string().as_bytes(), text);
    assert_eq!(format!("{id:?}").as_bytes(), text);
    assert_eq!(id.as_str().len(), echomq::id::LEN);
    assert_eq!(id.to_string().parse::<JobId>().unwrap(), id);
    let json = serde_json::to_string(&id).unwrap();
    assert_eq!(serde_json::from_str::<JobId>(&json).unwrap(), id);
    // Its record key names its queue and ends with the id.
    let keys = Keyspace::new("fuzz").unwrap();
    let key = keys.job(&id);
    assert_eq!(echomq::keyspace::queue_of(&key), Some("fuzz"));
    assert_eq!(key.strip_prefix("emq:{fuzz}:job:"), Some(id.as_str()));
    Some((id, ulid))
}

fuzz_target!(|data: &[u8]| {
    let Some((&shape, rest)) = data.split_first() else { return };
    let texts: Vec<Vec<u8>> = rest
        .splitn(2, |b| *b == 0xFF)
        .map(|part| if shape % 2 == 1 { [b"JOB_", part].concat() } else { part.to_vec() })
        .collect();
    let ids: Vec<_> = texts.iter().filter_map(|text| check(text)).collect();
    if let [(a, ulid_a), (b, ulid_b)] = &ids[..] {
        assert_eq!(a.cmp(b), ulid_a.cmp(ulid_b), "byte order is not ULID order: {a} {b}");
        assert_eq!(a == b, ulid_a == ulid_b);
    }
});
