//! Reading the vector files back and replaying a case on a [`Memory`]
//! store, as an embedded speaker would (`protocol/vectors/README.md`): its
//! `before` loaded key by key, the clock at the file's now, the call run,
//! and its reply and `after` compared with the file's. This is the core's
//! own replayer, independent of how the cases were built: `cargo test -p
//! echomq-core` runs every case of the committed files through it, one
//! test each (`tests/vectors.rs`).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use super::json::{self, Json};
use super::{keyspace, Value};
use crate::memory::ManualClock;
use crate::{Memory, Name, Store};

/// Parse the JSON text of a vector file.
///
/// # Errors
///
/// Where the text is not JSON, as the reader found it: the line and
/// what it expected (a value, `,`, `:`, a closed string, a known escape),
/// or text after the value.
pub fn parse(text: &str) -> Result<Json, String> {
    let mut parser = Parser { text: text.as_bytes(), at: 0 };
    let json = parser.value()?;
    parser.space();
    if parser.at != text.len() {
        return Err(parser.fail("text after the value"));
    }
    Ok(json)
}

struct Parser<'a> {
    text: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn fail(&self, what: &str) -> String {
        let line = self.text[..self.at.min(self.text.len())].iter().filter(|b| **b == b'\n').count() + 1;
        format!("line {line}: {what}")
    }

    fn space(&mut self) {
        while self.text.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        self.space();
        let found = self.text.get(self.at) == Some(&byte);
        if found {
            self.at += 1;
        }
        found
    }

    fn value(&mut self) -> Result<Json, String> {
        self.space();
        let rest = &self.text[self.at..];
        for (word, json) in [("null", Json::Null), ("true", Json::Bool(true)), ("false", Json::Bool(false))] {
            if rest.starts_with(word.as_bytes()) {
                self.at += word.len();
                return Ok(json);
            }
        }
        match rest.first() {
            Some(b'"') => self.string().map(Json::String),
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                if self.eat(b']') {
                    return Ok(Json::Array(items));
                }
                loop {
                    items.push(self.value()?);
                    if self.eat(b']') {
                        return Ok(Json::Array(items));
                    }
                    if !self.eat(b',') {
                        return Err(self.fail("expected , or ]"));
                    }
                }
            }
            Some(b'{') => {
                self.at += 1;
                let mut pairs = Vec::new();
                if self.eat(b'}') {
                    return Ok(Json::Object(pairs));
                }
                loop {
                    self.space();
                    let key = self.string()?;
                    if !self.eat(b':') {
                        return Err(self.fail("expected :"));
                    }
                    pairs.push((key, self.value()?));
                    if self.eat(b'}') {
                        return Ok(Json::Object(pairs));
                    }
                    if !self.eat(b',') {
                        return Err(self.fail("expected , or }"));
                    }
                }
            }
            Some(b'-' | b'0'..=b'9') => {
                let start = self.at;
                self.at += 1;
                while self.text.get(self.at).is_some_and(|b| b.is_ascii_digit() || b".eE+-".contains(b)) {
                    self.at += 1;
                }
                Ok(Json::Number(String::from_utf8_lossy(&self.text[start..self.at]).into_owned()))
            }
            _ => Err(self.fail("expected a value")),
        }
    }

    fn string(&mut self) -> Result<String, String> {
        if self.text.get(self.at) != Some(&b'"') {
            return Err(self.fail("expected a string"));
        }
        self.at += 1;
        let mut out = Vec::new();
        loop {
            let Some(&byte) = self.text.get(self.at) else { return Err(self.fail("an unended string")) };
            self.at += 1;
            match byte {
                b'"' => return String::from_utf8(out).map_err(|_| self.fail("a string not UTF-8")),
                b'\\' => {
                    let Some(&escaped) = self.text.get(self.at) else {
                        return Err(self.fail("an unended escape"));
                    };
                    self.at += 1;
                    let plain = match escaped {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'n' => '\n',
                        b't' => '\t',
                        b'r' => '\r',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'u' => {
                            let mut unit = self.hex4()?;
                            if (0xd800..0xdc00).contains(&unit) && self.text[self.at..].starts_with(b"\\u") {
                                self.at += 2;
                                let low = self.hex4()?;
                                unit = 0x10000 + ((unit - 0xd800) << 10) + (low.wrapping_sub(0xdc00) & 0x3ff);
                            }
                            char::from_u32(unit).ok_or_else(|| self.fail("a bad \\u escape"))?
                        }
                        _ => return Err(self.fail("an unknown escape")),
                    };
                    out.extend_from_slice(plain.encode_utf8(&mut [0; 4]).as_bytes());
                }
                byte => out.push(byte),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let digits = self.text.get(self.at..self.at + 4).ok_or_else(|| self.fail("a short \\u escape"))?;
        let digits = std::str::from_utf8(digits).map_err(|_| self.fail("a bad \\u escape"))?;
        self.at += 4;
        u32::from_str_radix(digits, 16).map_err(|_| self.fail("a bad \\u escape"))
    }
}

impl Json {
    /// The value of `key` in an object.
    #[must_use]
    pub(crate) fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(pairs) => pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The same value with every object's keys sorted, to compare by.
    #[must_use]
    pub(crate) fn sorted(&self) -> Json {
        match self {
            Json::Array(items) => Json::Array(items.iter().map(Json::sorted).collect()),
            Json::Object(pairs) => {
                let mut pairs: Vec<(String, Json)> =
                    pairs.iter().map(|(k, v)| (k.clone(), v.sorted())).collect();
                pairs.sort_by(|a, b| a.0.cmp(&b.0));
                Json::Object(pairs)
            }
            other => other.clone(),
        }
    }
}

/// On one line, object keys in their order.
impl fmt::Display for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Json::Null => f.write_str("null"),
            Json::Bool(b) => write!(f, "{b}"),
            Json::Number(n) => f.write_str(n),
            Json::String(s) => write!(f, "{s:?}"),
            Json::Array(items) => {
                f.write_str("[")?;
                for (n, item) in items.iter().enumerate() {
                    write!(f, "{}{item}", if n > 0 { ", " } else { "" })?;
                }
                f.write_str("]")
            }
            Json::Object(pairs) => {
                f.write_str("{")?;
                for (n, (key, value)) in pairs.iter().enumerate() {
                    write!(f, "{}{key:?}: {value}", if n > 0 { ", " } else { "" })?;
                }
                f.write_str("}")
            }
        }
    }
}

/// Bytes as the files write them, `{"now": d}` read as `now` + d.
fn bytes(json: &Json, now: u64) -> Result<Vec<u8>, String> {
    let pair = |key| json.get(key);
    match json {
        Json::String(text) => Ok(text.as_bytes().to_vec()),
        _ if pair("now").is_some() => Ok(time(json, now)?.to_string().into_bytes()),
        _ if pair("hex").is_some() => {
            let Some(Json::String(hex)) = pair("hex") else { return Err(format!("not hex: {json}")) };
            (0..hex.len())
                .step_by(2)
                .map(|at| hex.get(at..at + 2).and_then(|two| u8::from_str_radix(two, 16).ok()))
                .collect::<Option<Vec<u8>>>()
                .ok_or_else(|| format!("not hex: {json}"))
        }
        _ if pair("repeat").is_some() => {
            let count = pair("count").and_then(integer).ok_or_else(|| format!("no count: {json}"))?;
            let one = bytes(pair("repeat").expect("a repeat"), now)?;
            Ok(one.repeat(usize::try_from(count).map_err(|_| format!("a bad count: {json}"))?))
        }
        other => Err(format!("not bytes: {other}")),
    }
}

fn integer(json: &Json) -> Option<i64> {
    match json {
        Json::Number(n) => n.parse().ok(),
        _ => None,
    }
}

/// `{"now": d}` as `now` + d.
fn time(json: &Json, now: u64) -> Result<i64, String> {
    let d = json.get("now").and_then(integer).ok_or_else(|| format!("not a time: {json}"))?;
    Ok(now as i64 + d)
}

/// A score: a number, or a time.
fn number(json: &Json, now: u64) -> Result<f64, String> {
    match json {
        Json::Number(n) => n.parse().map_err(|_| format!("not a number: {json}")),
        _ => Ok(time(json, now)? as f64),
    }
}

fn array(json: &Json) -> Result<&[Json], String> {
    match json {
        Json::Array(items) => Ok(items),
        other => Err(format!("not an array: {other}")),
    }
}

fn pairs(json: &Json) -> Result<&[(String, Json)], String> {
    match json {
        Json::Object(pairs) => Ok(pairs),
        other => Err(format!("not an object: {other}")),
    }
}

/// Load a keyspace as the files write it into an empty `store`; the content
/// of its strings, lists and sets, which the store keeps only as a type.
fn load(
    store: &mut Memory,
    clock: &ManualClock,
    keys: &Json,
    now: u64,
) -> Result<BTreeMap<Vec<u8>, Value>, String> {
    let mut others = BTreeMap::new();
    for (key, entry) in pairs(keys)? {
        let (k, content) = (key.as_bytes(), entry.get("value").ok_or_else(|| format!("{key}: no value"))?);
        let items =
            || -> Result<Vec<Vec<u8>>, String> { array(content)?.iter().map(|b| bytes(b, now)).collect() };
        match entry.get("type") {
            Some(Json::String(kind)) if kind == "hash" => load_hash(store, k, content, now)?,
            Some(Json::String(kind)) if kind == "zset" => load_zset(store, key, content, now)?,
            Some(Json::String(kind)) if kind == "stream" => load_stream(store, clock, key, content, now)?,
            Some(Json::String(kind)) if kind == "string" => {
                store.put_other(k, "string");
                others.insert(k.to_vec(), Value::String(bytes(content, now)?));
            }
            Some(Json::String(kind)) if kind == "list" => {
                store.put_other(k, "list");
                others.insert(k.to_vec(), Value::List(items()?));
            }
            Some(Json::String(kind)) if kind == "set" => {
                store.put_other(k, "set");
                others.insert(k.to_vec(), Value::Set(items()?));
            }
            other => return Err(format!("{key}: a type this replayer does not know: {other:?}")),
        }
    }
    Ok(others)
}

/// Load the hash `key`, its fields `content` (an object).
fn load_hash(store: &mut Memory, key: &[u8], content: &Json, now: u64) -> Result<(), String> {
    let fields = pairs(content)?
        .iter()
        .map(|(f, v)| Ok((f.as_bytes(), bytes(v, now)?)))
        .collect::<Result<Vec<_>, String>>()?;
    let fields: Vec<(&[u8], &[u8])> = fields.iter().map(|(f, v)| (*f, v.as_slice())).collect();
    store.hset(key, &fields);
    Ok(())
}

/// Load the sorted set `key`, its `[member, score]` pairs `content`.
fn load_zset(store: &mut Memory, key: &str, content: &Json, now: u64) -> Result<(), String> {
    for pair in array(content)? {
        let pair = array(pair)?;
        let (Some(member), Some(score)) = (pair.first(), pair.get(1)) else {
            return Err(format!("{key}: not a member and score: {pair:?}"));
        };
        store.zadd(key.as_bytes(), number(score, now)?, &bytes(member, now)?);
    }
    Ok(())
}

/// Load the stream `key`, its entries `content`: the store mints ids from
/// its clock, so each entry is added at its ms and must get its id.
fn load_stream(
    store: &mut Memory,
    clock: &ManualClock,
    key: &str,
    content: &Json,
    now: u64,
) -> Result<(), String> {
    let k = key.as_bytes();
    for item in array(content)? {
        let id = item.get("id").ok_or_else(|| format!("{key}: an entry without an id"))?;
        let ms = id.get("ms").map(|ms| number(ms, now)).transpose()?.unwrap_or(-1.0);
        let seq = id.get("seq").and_then(integer);
        clock.set(ms as u64);
        let fields = array(item.get("fields").unwrap_or(&Json::Null))?
            .iter()
            .map(|pair| {
                let pair = array(pair)?;
                Ok((bytes(&pair[0], now)?, bytes(&pair[1], now)?))
            })
            .collect::<Result<Vec<_>, String>>()?;
        let fields: Vec<(&[u8], &[u8])> = fields.iter().map(|(f, v)| (f.as_slice(), v.as_slice())).collect();
        store.xadd(k, u64::MAX, &fields);
        let minted = store.xlast(k).map(|id| (id.ms as f64, id.seq as i64));
        if minted != seq.map(|seq| (ms, seq)) {
            return Err(format!("{key}: the store cannot load entry {item} (it minted {minted:?})"));
        }
    }
    Ok(())
}

/// How two keyspaces differ, key by key.
fn differences(want: &Json, got: &Json) -> Result<Vec<String>, String> {
    let (want, got) = (pairs(want)?, pairs(got)?);
    let find =
        |pairs: &[(String, Json)], key: &str| pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.sorted());
    let mut keys: Vec<&String> = want.iter().chain(got).map(|(k, _)| k).collect();
    keys.sort();
    keys.dedup();
    Ok(keys
        .into_iter()
        .filter_map(|key| match (find(want, key), find(got, key)) {
            (Some(w), Some(g)) if w == g => None,
            (Some(w), Some(g)) => Some(format!("{key}:\n      want {w}\n      got  {g}")),
            (Some(w), None) => Some(format!("{key}: missing; want {w}")),
            (None, Some(g)) => Some(format!("{key}: not wanted; got {g}")),
            (None, None) => None,
        })
        .collect())
}

/// Replay the case named `case` of a parsed vector file on a fresh
/// [`Memory`] store at the file's now. `Err` says what differs: the reply,
/// and each key of the keyspace after that is not the file's.
///
/// # Errors
///
/// What differs, as text: the reply, each key after the call that is not
/// the file's, or a case written to be refused that was not. Also a file
/// or case this replayer cannot read: no transition, now or case of that
/// name; a part missing; bytes, arrays or key types it does not know; a
/// `before` that does not load as written.
pub fn replay(file: &Json, case: &str) -> Result<(), String> {
    let transition = match file.get("transition") {
        Some(Json::String(name)) => Name::ALL.iter().copied().find(|n| n.as_str() == name),
        _ => None,
    }
    .ok_or_else(|| format!("the file names no transition: {:?}", file.get("transition")))?;
    let now =
        file.get("now").and_then(integer).and_then(|n| u64::try_from(n).ok()).ok_or("the file has no now")?;
    let cases = array(file.get("cases").ok_or("the file has no cases")?)?;
    let found = cases
        .iter()
        .find(|c| c.get("name") == Some(&Json::String(case.to_owned())))
        .ok_or_else(|| format!("{transition}.json has no case {case:?}: regenerate the vectors"))?;
    let part = |name: &str| found.get(name).ok_or_else(|| format!("the case has no {name}"));

    let clock = Arc::new(ManualClock::new(now));
    let mut store = Memory::new(clock.clone());
    let mut others = load(&mut store, &clock, part("before")?, now)?;
    let loaded = json::keyspace(&keyspace(&store, &others)?);
    let unfaithful = differences(part("before")?, &loaded)?;
    if !unfaithful.is_empty() {
        return Err(format!("its before does not load as written:\n  {}", unfaithful.join("\n  ")));
    }

    let call = part("call")?;
    let list = |name: &str| -> Result<Vec<Vec<u8>>, String> {
        array(call.get(name).ok_or_else(|| format!("the call has no {name}"))?)?
            .iter()
            .map(|b| bytes(b, now))
            .collect()
    };
    let (keys, args) = (list("keys")?, list("args")?);
    let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    clock.set(now);
    let answer = transition.run(&mut store, &keys, &args);
    // The content of the other types stays what was loaded: the store keeps
    // only their type, and a transition never writes one.
    others.retain(|key, _| store.dump().contains_key(key));

    let mut wrong = Vec::new();
    let reply = json::answer(transition, &answer).sorted();
    let want = part("reply")?.sorted();
    if reply != want {
        wrong.push(format!("reply:\n    want {want}\n    got  {reply}"));
    }
    if found.get("refused") == Some(&Json::Bool(true)) && answer.is_ok() {
        wrong.push("the case is written to be refused, and was not".to_owned());
    }
    let after = json::keyspace(&keyspace(&store, &others)?);
    let changed = differences(part("after")?, &after)?;
    if !changed.is_empty() {
        wrong.push(format!("after:\n    {}", changed.join("\n    ")));
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_the_files_write() {
        let text = r#"{"a": [1, -2.5, "x\"\n\u00e9\ud83d\ude00"], "b": {"now": -5}, "c": null, "d": true}"#;
        let json = parse(text).unwrap();
        assert_eq!(
            json.get("a"),
            Some(&Json::Array(vec![
                Json::Number("1".into()),
                Json::Number("-2.5".into()),
                Json::String("x\"\né😀".into()),
            ]))
        );
        assert_eq!(bytes(json.get("b").unwrap(), 1000).unwrap(), b"995");
        assert!(parse("[1,]").is_err());
        assert!(parse("{} x").is_err());
    }

    #[test]
    fn a_difference_names_the_key_and_both_values() {
        let want =
            parse(r#"{"k": {"type": "string", "value": "a"}, "gone": {"type": "string", "value": "x"}}"#);
        let got = parse(r#"{"k": {"type": "string", "value": "b"}}"#);
        let found = differences(&want.unwrap(), &got.unwrap()).unwrap();
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].starts_with("gone: missing"), "{found:?}");
        assert!(found[1].contains(r#"want {"type": "string", "value": "a"}"#), "{found:?}");
    }
}
