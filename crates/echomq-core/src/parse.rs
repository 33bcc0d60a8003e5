//! Argument parsing and validation, shared by every transition. Each check
//! answers with the same words as the Lua scripts. The checks are the
//! crate's own: a caller reaches them through a transition's `parse`. The
//! one public item, [`wrong_number_of_keys`], is for the module, whose key
//! count is checked before a transition parses.

use std::ops::RangeInclusive;

use crate::description::Keys;
use crate::limits::MAX_DIGITS;
use crate::{Code, Refusal, Role};

/// Text for a refusal from bytes that may not be UTF-8.
pub(crate) fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The kind gate: the first three bytes of an id must be `JOB`.
pub(crate) fn kind(id: Option<&[u8]>) -> Result<&[u8], Refusal> {
    match id {
        Some(id) if id.starts_with(b"JOB") => Ok(id),
        _ => Err(Refusal::new(Code::Kind, "job id must be JOB-namespaced")),
    }
}

/// An integer argument: an optional `-`, 1 to 15 decimal digits, within `range`.
pub(crate) fn integer(value: Option<&[u8]>, name: &str, range: RangeInclusive<i64>) -> Result<i64, Refusal> {
    match value.and_then(integer_text) {
        Some(n) if range.contains(&n) => Ok(n),
        _ => Err(Refusal::arg(format!("{name} must be an integer in {}..={}", range.start(), range.end()))),
    }
}

/// A stored integer (PROTOCOL.md §5): a field the protocol writes as a
/// number (a setting, a record's `attempts`, a priority) holds an integer in
/// the form ARGV's take, or nothing (`None`). Anything else is malformed
/// stored state, `EMQDATA <key> <field> is not an integer`, refused before
/// any write.
pub(crate) fn stored(value: Option<&[u8]>, key: &[u8], field: &[u8]) -> Result<Option<i64>, Refusal> {
    let Some(value) = value else { return Ok(None) };
    integer_text(value).map(Some).ok_or_else(|| malformed(key, field, "an integer"))
}

/// `EMQDATA <key> <field> is not <what>`: a key of the right type holds a
/// value of the wrong shape.
pub(crate) fn malformed(key: &[u8], field: &[u8], what: &str) -> Refusal {
    Refusal::new(Code::Data, format!("{} {} is not {what}", lossy(key), lossy(field)))
}

/// `EMQDATA <key> <field> is missing`: a record that exists without one of
/// its birth fields (PROTOCOL.md §3, §5).
pub(crate) fn missing(key: &[u8], field: &[u8]) -> Refusal {
    Refusal::new(Code::Data, format!("{} {} is missing", lossy(key), lossy(field)))
}

/// Decimal text: an optional `-`, then 1 to [`MAX_DIGITS`] digits.
fn integer_text(value: &[u8]) -> Option<i64> {
    let digits = value.strip_prefix(b"-").unwrap_or(value);
    let well_formed =
        !digits.is_empty() && digits.len() <= MAX_DIGITS && digits.iter().all(u8::is_ascii_digit);
    well_formed.then(|| std::str::from_utf8(value).ok()?.parse::<i64>().ok()).flatten()
}

/// An integer argument that is never negative (its range starts at 0 or more).
pub(crate) fn count(value: Option<&[u8]>, name: &str, range: RangeInclusive<u64>) -> Result<u64, Refusal> {
    let signed = (*range.start() as i64)..=(*range.end() as i64);
    integer(value, name, signed).map(|n| n as u64)
}

/// Options after the positional arguments: `NAME value` pairs, each at most
/// once. `spec` lists the upper-case names and ranges; the result holds each
/// option's value in the same order, `None` when absent.
pub(crate) fn options<const N: usize>(
    args: &[&[u8]],
    spec: [(&str, RangeInclusive<u64>); N],
) -> Result<[Option<u64>; N], Refusal> {
    let mut found = [None; N];
    let mut rest = args;
    while let Some((&name, tail)) = rest.split_first() {
        let upper = name.to_ascii_uppercase();
        let Some(at) = spec.iter().position(|(known, _)| known.as_bytes() == upper.as_slice()) else {
            return Err(Refusal::arg(format!("unknown option {}", lossy(name))));
        };
        let (label, range) = &spec[at];
        if found[at].is_some() {
            return Err(Refusal::arg(format!("{label} given twice")));
        }
        found[at] = Some(count(tail.first().copied(), label, range.clone())?);
        rest = tail.get(1..).unwrap_or_default();
    }
    Ok(found)
}

/// A call's keys by name, and the queue's prefix: their count must be one
/// of `K`'s forms (else the same refusal as the scripts'), and each key the
/// queue's key of its role, as [`queue_prefix`] checks them.
pub(crate) fn named_keys<'k, K: Keys<'k>>(keys: &[&'k [u8]], id: &[u8]) -> Result<(K, &'k [u8]), Refusal> {
    let named = K::bind(keys).ok_or_else(|| wrong_number_of_keys(K::FORMS))?;
    let prefix = queue_prefix(keys, &K::ROLES[..keys.len()], id)?;
    Ok((named, prefix))
}

/// The queue's prefix, `emq:{q}:`, read off the first key and checked against
/// every key: they must be this queue's keys, in the order and roles given.
/// [`Role::Job`] stands for the record of `id`.
pub(crate) fn queue_prefix<'k>(keys: &[&'k [u8]], roles: &[Role], id: &[u8]) -> Result<&'k [u8], Refusal> {
    if keys.len() != roles.len() {
        return Err(wrong_number_of_keys(&[roles.len()]));
    }
    // Compared in place, not built: every transition checks its keys here.
    let first = keys[0];
    let prefix = match roles[0] {
        Role::Job => first.strip_suffix(id).and_then(|rest| rest.strip_suffix(b"job:")),
        Role::Children => first.strip_suffix(id).and_then(|rest| rest.strip_suffix(b"children:")),
        other => first.strip_suffix(other.pattern().as_bytes()),
    };
    let Some(prefix) = prefix.filter(|prefix| well_formed_prefix(prefix)) else {
        return Err(Refusal::arg(format!("KEYS[1] must be emq:{{<queue>}}:{}", roles[0].pattern())));
    };
    for (i, (key, role)) in keys.iter().zip(roles).enumerate().skip(1) {
        let name = key.strip_prefix(prefix);
        let named = match role {
            Role::Job => name.and_then(|name| name.strip_prefix(b"job:")) == Some(id),
            Role::Children => name.and_then(|name| name.strip_prefix(b"children:")) == Some(id),
            other => name == Some(other.pattern().as_bytes()),
        };
        if !named {
            let wanted = match role {
                Role::Job => record_key(prefix, id),
                Role::Children => children_key(prefix, id),
                other => [prefix, other.pattern().as_bytes()].concat(),
            };
            return Err(Refusal::arg(format!("KEYS[{}] must be {}", i + 1, lossy(&wanted))));
        }
    }
    Ok(prefix)
}

/// The refusal of a call whose number of keys is none of `forms`, the
/// counts its transition takes: `wrong number of keys: takes 2 or 11 or 12`, as
/// the scripts and the module's key count answer it.
#[must_use]
pub fn wrong_number_of_keys(forms: &[usize]) -> Refusal {
    let counts: Vec<String> = forms.iter().map(usize::to_string).collect();
    Refusal::arg(format!("wrong number of keys: takes {}", counts.join(" or ")))
}

/// `emq:{<name>}:` where the name is not empty and holds no brace.
fn well_formed_prefix(prefix: &[u8]) -> bool {
    prefix
        .strip_prefix(b"emq:{")
        .and_then(|rest| rest.strip_suffix(b"}:"))
        .is_some_and(|name| !name.is_empty() && !name.iter().any(|b| *b == b'{' || *b == b'}'))
}

/// A record's key: the queue's prefix, `job:`, the id.
pub(crate) fn record_key(prefix: &[u8], id: &[u8]) -> Vec<u8> {
    [prefix, b"job:", id].concat()
}

/// A parent's dependencies' key: the queue's prefix, `children:`, the id
/// (protocol 1.6, §7.8). It goes with the record.
pub(crate) fn children_key(prefix: &[u8], id: &[u8]) -> Vec<u8> {
    [prefix, b"children:", id].concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_plain_decimal() {
        let range = -5..=999_999_999_999_999;
        for (text, want) in
            [("0", 0), ("-5", -5), ("007", 7), ("-0", 0), ("999999999999999", 999_999_999_999_999)]
        {
            assert_eq!(integer(Some(text.as_bytes()), "n", range.clone()), Ok(want), "{text}");
        }
        for text in ["", "-", "+5", " 5", "5 ", "1e3", "0x10", "1.0", "-6", "1000000000000000", "٣"] {
            let err = integer(Some(text.as_bytes()), "n", range.clone()).unwrap_err();
            assert_eq!(err.to_string(), "EMQARG n must be an integer in -5..=999999999999999", "{text}");
        }
        assert!(integer(None, "n", range).is_err());
    }

    #[test]
    fn stored_integers_take_the_arguments_form() {
        let read = |text: &str| stored(Some(text.as_bytes()), b"emq:{q}:config", b"rate");
        assert_eq!(read("01"), Ok(Some(1)));
        assert_eq!(read("-3"), Ok(Some(-3)));
        assert_eq!(stored(None, b"k", b"f"), Ok(None));
        for text in ["", "1.5", "2.5", " 1", "1 ", "1e0", "+1", "abc", "1000000000000000"] {
            assert_eq!(
                read(text).unwrap_err().to_string(),
                "EMQDATA emq:{q}:config rate is not an integer",
                "{text}"
            );
        }
    }

    #[test]
    fn options_are_named_once_each() {
        let spec = [("COUNT", 1..=10), ("BLOCK", 0..=100)];
        assert_eq!(options(&[b"count", b"3"], spec.clone()), Ok([Some(3), None]));
        assert_eq!(options(&[b"BLOCK", b"0", b"COUNT", b"1"], spec.clone()), Ok([Some(1), Some(0)]));
        let err = |args: &[&[u8]]| options(args, spec.clone()).unwrap_err().to_string();
        assert_eq!(err(&[b"COUNT", b"1", b"count", b"2"]), "EMQARG COUNT given twice");
        assert_eq!(err(&[b"LIMIT", b"1"]), "EMQARG unknown option LIMIT");
        assert_eq!(err(&[b"COUNT"]), "EMQARG COUNT must be an integer in 1..=10");
    }

    #[test]
    fn keys_must_be_one_queues() {
        let id = b"JOB_1".as_slice();
        let keys: [&[u8]; 2] = [b"emq:{q}:job:JOB_1", b"emq:{q}:active"];
        let roles = [Role::Job, Role::Active];
        assert_eq!(queue_prefix(&keys, &roles, id), Ok(b"emq:{q}:".as_slice()));
        let other: [&[u8]; 2] = [b"emq:{q}:job:JOB_1", b"emq:{r}:active"];
        assert_eq!(
            queue_prefix(&other, &roles, id).unwrap_err().to_string(),
            "EMQARG KEYS[2] must be emq:{q}:active"
        );
        let bad: [&[u8]; 2] = [b"emq:{}:job:JOB_1", b"emq:{}:active"];
        assert_eq!(
            queue_prefix(&bad, &roles, id).unwrap_err().to_string(),
            "EMQARG KEYS[1] must be emq:{<queue>}:job:<id>"
        );
        assert_eq!(
            queue_prefix(&keys[..1], &roles, id).unwrap_err().to_string(),
            "EMQARG wrong number of keys: takes 2"
        );
        assert_eq!(wrong_number_of_keys(&[2, 11]).to_string(), "EMQARG wrong number of keys: takes 2 or 11");
    }
}
