//! How the vector files write what a case holds, as plain JSON with sorted
//! object keys (`protocol/vectors/README.md` is the reader's account):
//! - bytes: a JSON string when they are UTF-8, else `{"hex": "…"}`;
//! - a time: any decimal integer (bytes of digits with no leading zero, an
//!   integer reply, a score, a stream id's ms) within 10^10 ms (about 115
//!   days) of the cases' now is written `{"now": d}`, d = the value − now:
//!   the replayer puts its own now in (a real server's clock cannot be set);
//! - a reply: `{"int": n}`, `{"bulk": bytes}`, `null`, an array, or
//!   `{"error": {"code", "text"}}` (an item's own refusal, ACKMANY's).

use std::fmt::Write;

use super::{Call, Case, Expect, Keyspace, Outcome, Value, NOW};
use crate::{Name, Reply};

/// Bytes longer than this, all one byte, are written as a repeat.
pub(crate) const REPEAT: usize = 64;

/// How far from [`NOW`] an integer is read as a time: about 115 days.
pub(crate) const WINDOW: u64 = 10_000_000_000;

/// A JSON value, written with its object keys sorted.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, already formatted.
    Number(String),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Json>),
    /// An object: written sorted by key.
    Object(Vec<(String, Json)>),
}

fn object(pairs: Vec<(&str, Json)>) -> Json {
    Json::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

/// An integer, or `{"now": d}` when it is a time.
pub(crate) fn int(n: i64) -> Json {
    let now = NOW as i64;
    if n.abs_diff(now) <= WINDOW {
        object(vec![("now", Json::Number((n - now).to_string()))])
    } else {
        Json::Number(n.to_string())
    }
}

/// A score: an integer as [`int`], any other as its shortest decimal.
fn score(s: f64) -> Json {
    if s.fract() == 0.0 && s.abs() < 9e15 {
        int(s as i64)
    } else {
        Json::Number(format!("{s:?}"))
    }
}

/// Bytes: a time, a string, or hex; a long run of one byte (an argument
/// over its size limit) as `{"repeat": <that byte>, "count": n}`.
pub(crate) fn bytes(b: &[u8]) -> Json {
    if b.len() > REPEAT && b.iter().all(|byte| *byte == b[0]) {
        return object(vec![("repeat", bytes(&b[..1])), ("count", Json::Number(b.len().to_string()))]);
    }
    let canonical = !b.is_empty() && b.iter().all(u8::is_ascii_digit) && (b[0] != b'0' || b.len() == 1);
    if canonical && b.len() <= 15 {
        let n: i64 = std::str::from_utf8(b).expect("digits").parse().expect("15 digits");
        if let json @ Json::Object(_) = int(n) {
            return json;
        }
    }
    match std::str::from_utf8(b) {
        Ok(text) => Json::String(text.to_owned()),
        Err(_) => object(vec![(
            "hex",
            Json::String(b.iter().fold(String::new(), |mut s, byte| {
                let _ = write!(s, "{byte:02x}");
                s
            })),
        )]),
    }
}

/// A name used as an object key: it must read as itself.
fn name(b: &[u8]) -> String {
    match bytes(b) {
        Json::String(text) => text,
        other => panic!("{:?} cannot be an object key: it reads as {other:?}", String::from_utf8_lossy(b)),
    }
}

/// A reply, typed.
pub(crate) fn reply(reply: &Reply) -> Json {
    match reply {
        Reply::Int(n) => object(vec![("int", int(*n))]),
        Reply::Bulk(b) => object(vec![("bulk", bytes(b))]),
        Reply::Nil => Json::Null,
        Reply::Array(items) => Json::Array(items.iter().map(self::reply).collect()),
        Reply::Error(refusal) => error(refusal),
    }
}

fn error(refusal: &crate::Refusal) -> Json {
    let pair =
        vec![("code", Json::String(refusal.code.to_string())), ("text", Json::String(refusal.text.clone()))];
    object(vec![("error", object(pair))])
}

/// A keyspace: each key's type and full content.
pub(crate) fn keyspace(keys: &Keyspace) -> Json {
    Json::Object(
        keys.iter()
            .map(|(key, value)| {
                let (kind, content) = match value {
                    Value::Hash(fields) => {
                        ("hash", Json::Object(fields.iter().map(|(f, v)| (name(f), bytes(v))).collect()))
                    }
                    Value::Zset(members) => (
                        "zset",
                        Json::Array(
                            members.iter().map(|(m, s)| Json::Array(vec![bytes(m), score(*s)])).collect(),
                        ),
                    ),
                    Value::Stream(entries) => (
                        "stream",
                        Json::Array(
                            entries
                                .iter()
                                .map(|(id, fields)| {
                                    let fields = fields
                                        .iter()
                                        .map(|(f, v)| Json::Array(vec![bytes(f), bytes(v)]))
                                        .collect();
                                    let id = object(vec![
                                        ("ms", int(id.ms as i64)),
                                        ("seq", Json::Number(id.seq.to_string())),
                                    ]);
                                    object(vec![("id", id), ("fields", Json::Array(fields))])
                                })
                                .collect(),
                        ),
                    ),
                    Value::String(text) => ("string", bytes(text)),
                    Value::List(items) => {
                        ("list", Json::Array(items.iter().map(|item| bytes(item)).collect()))
                    }
                    Value::Set(members) => ("set", Json::Array(members.iter().map(|m| bytes(m)).collect())),
                };
                (name(key), object(vec![("type", Json::String(kind.to_owned())), ("value", content)]))
            })
            .collect(),
    )
}

fn call(call: &Call) -> Json {
    object(vec![
        ("keys", Json::Array(call.keys.iter().map(|k| bytes(k.as_bytes())).collect())),
        ("args", Json::Array(call.args.iter().map(|a| bytes(a)).collect())),
    ])
}

/// CLAIM's (and ACKNEXT's) trailing integer n > 0 is ms left until a time
/// (the rate window's oldest claim leaving it, a timed pause's end), and so
/// is PERMIT's last (the oldest permit leaving the window):
/// `{"int": {"left": n}}`, which a replayer whose clock moved e ms past its
/// now reads as n − e.
fn with_wait(transition: Name, json: Json) -> Json {
    let Json::Array(mut items) = json else { return json };
    // The transitions that hand out jobs are the ones that pass the gate.
    if transition.describe().hands_out_tokens || transition == Name::Permit {
        if let Some(Json::Object(pair)) = items.last_mut() {
            if let [(name, Json::Number(n))] = pair.as_mut_slice() {
                if name == "int" && n.parse::<i64>().is_ok_and(|n| n > 0) {
                    pair[0].1 = object(vec![("left", Json::Number(n.clone()))]);
                }
            }
        }
    }
    Json::Array(items)
}

/// A case's `reply`: `{"value": …}`, or `{"error": …}` for a refusal.
pub(crate) fn answer(transition: Name, answer: &crate::Answer) -> Json {
    match answer {
        Ok(value) => object(vec![("value", with_wait(transition, reply(value)))]),
        Err(refusal) => error(refusal),
    }
}

/// One transition's file.
pub(crate) fn file(transition: Name, cases: &[Case], outcomes: &[Outcome]) -> String {
    let described = transition.describe();
    let cases = cases
        .iter()
        .zip(outcomes)
        .map(|(case, outcome)| {
            let mut pairs = vec![
                ("name", Json::String(case.name.clone())),
                ("before", keyspace(&outcome.before)),
                ("call", call(&case.call)),
                ("reply", answer(transition, &outcome.reply)),
                ("after", keyspace(&outcome.after)),
            ];
            if let Expect::Refused(_) = case.expect {
                pairs.push(("refused", Json::Bool(true)));
            }
            object(pairs)
        })
        .collect();
    let top = object(vec![
        ("transition", Json::String(described.name.to_owned())),
        ("command", Json::String(described.command.to_owned())),
        ("now", Json::Number(NOW.to_string())),
        ("cases", Json::Array(cases)),
    ]);
    let mut out = String::new();
    write(&top, 0, &mut out);
    out.push('\n');
    out
}

/// Pretty-printed, two spaces a level; arrays of scalars on one line.
fn write(json: &Json, depth: usize, out: &mut String) {
    let pad = |out: &mut String, depth: usize| out.extend(std::iter::repeat_n("  ", depth));
    match json {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Number(n) => out.push_str(n),
        Json::String(s) => quote(s, out),
        Json::Array(items) if items.is_empty() => out.push_str("[]"),
        Json::Array(items) if items.iter().all(flat) => {
            out.push('[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push_str(", ");
                }
                write(item, depth, out);
            }
            out.push(']');
        }
        Json::Array(items) => {
            out.push_str("[\n");
            for (n, item) in items.iter().enumerate() {
                pad(out, depth + 1);
                write(item, depth + 1, out);
                out.push_str(if n + 1 < items.len() { ",\n" } else { "\n" });
            }
            pad(out, depth);
            out.push(']');
        }
        Json::Object(pairs) if pairs.is_empty() => out.push_str("{}"),
        Json::Object(pairs) if flat(json) => {
            let mut sorted: Vec<&(String, Json)> = pairs.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            out.push('{');
            for (n, (key, value)) in sorted.into_iter().enumerate() {
                if n > 0 {
                    out.push_str(", ");
                }
                quote(key, out);
                out.push_str(": ");
                write(value, depth, out);
            }
            out.push('}');
        }
        Json::Object(pairs) => {
            let mut sorted: Vec<&(String, Json)> = pairs.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            out.push_str("{\n");
            let last = sorted.len() - 1;
            for (n, (key, value)) in sorted.into_iter().enumerate() {
                pad(out, depth + 1);
                quote(key, out);
                out.push_str(": ");
                write(value, depth + 1, out);
                out.push_str(if n < last { ",\n" } else { "\n" });
            }
            pad(out, depth);
            out.push('}');
        }
    }
}

/// A scalar, or an object of scalars only (`{"now": -5}`), or an array of
/// those: written on one line.
fn flat(json: &Json) -> bool {
    match json {
        Json::Array(items) => items.iter().all(|item| !matches!(item, Json::Array(_)) && flat(item)),
        Json::Object(pairs) => pairs.iter().all(|(_, v)| !matches!(v, Json::Array(_) | Json::Object(_))),
        _ => true,
    }
}

fn quote(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_near_now_are_relative_and_the_rest_literal() {
        assert_eq!(bytes(NOW.to_string().as_bytes()), object(vec![("now", Json::Number("0".into()))]));
        assert_eq!(int(NOW as i64 - 5000), object(vec![("now", Json::Number("-5000".into()))]));
        assert_eq!(int(60_000), Json::Number("60000".into()));
        assert_eq!(bytes(b"60000"), Json::String("60000".into()), "a number that is no time is bytes");
        let padded = format!("0{NOW}");
        assert_eq!(bytes(padded.as_bytes()), Json::String(padded.clone()), "a leading zero is no time");
        assert_eq!(bytes(&[0xff, 0]), object(vec![("hex", Json::String("ff00".into()))]));
    }

    #[test]
    fn objects_are_written_sorted() {
        let mut out = String::new();
        write(&object(vec![("b", Json::Null), ("a", Json::String("\"\n".into()))]), 0, &mut out);
        assert_eq!(out, r#"{"a": "\"\n", "b": null}"#);
    }
}
