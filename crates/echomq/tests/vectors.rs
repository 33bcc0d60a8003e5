//! The golden vectors of `protocol/vectors/` (generated from the core:
//! `cargo run -p echomq-core --example vectors`), replayed on every
//! executor: for each case, its keyspace before is loaded into an empty
//! database, its call runs through the executor's own [`Call`], and the
//! reply and the whole keyspace after must be the file's. On a real
//! redis-server (Lua, Native) times are the server's clock, so they match
//! within the call's skew; on the embedded executor, with a manual clock at
//! the file's now, exactly. `protocol/vectors/README.md` is the format.
//!
//! One test per case, replaying it on Lua, Native and Embedded: the list is
//! the core's own (`crates/echomq-core/tests/vectors/cases.rs`, written with
//! the files and checked with them), so no case lacks its test here either.
//! The tests share one server; each takes a database of its own while it
//! runs (16, as many as the server has, handed out in turn).

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use echomq::executor::Call;
use echomq::{Embedded, Executor, Lua, Name, Native};
use echomq_core::memory::{Dump, ManualClock};
use echomq_core::Reply;
use echomq_core::Store;
use echomq_test_support::RedisServer;
use redis::aio::MultiplexedConnection;
use serde_json::Value as Json;

/// One vector file: its transition and its cases.
struct File {
    name: Name,
    /// What `{"now": 0}` stands for in the file's own terms.
    now: i64,
    cases: Vec<Json>,
}

/// Every vector file, read once per test binary.
fn files() -> &'static [File] {
    static FILES: OnceLock<Vec<File>> = OnceLock::new();
    FILES.get_or_init(|| {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../protocol/vectors");
        let files: Vec<File> = Name::ALL
            .iter()
            .map(|name| {
                let path = dir.join(format!("{name}.json"));
                let text =
                    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let file: Json =
                    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                assert_eq!(file["transition"], name.as_str(), "{}", path.display());
                File {
                    name: *name,
                    now: file["now"].as_i64().expect("now"),
                    cases: file["cases"].as_array().expect("cases").clone(),
                }
            })
            .collect();
        assert!(files.iter().map(|f| f.cases.len()).sum::<usize>() >= 150, "the vectors hold their cases");
        files
    })
}

/// How a replay reads times: `now` is what `{"now": 0}` stands for, and
/// a time the call wrote may be up to `skew` ms from the file's.
#[derive(Clone, Copy)]
struct Clock {
    now: i64,
    skew: i64,
    /// Whether stream ids' sequence numbers are compared (only with a manual clock).
    exact: bool,
}

/// Bytes as the file writes them, with `now` for a time.
fn bytes(json: &Json, now: i64) -> Vec<u8> {
    match json {
        Json::String(text) => text.as_bytes().to_vec(),
        Json::Object(map) if map.contains_key("now") => {
            (now + map["now"].as_i64().unwrap()).to_string().into_bytes()
        }
        Json::Object(map) if map.contains_key("hex") => {
            let hex = map["hex"].as_str().unwrap().as_bytes();
            hex.chunks(2)
                .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
                .collect()
        }
        Json::Object(map) if map.contains_key("repeat") => {
            bytes(&map["repeat"], now).repeat(map["count"].as_u64().unwrap() as usize)
        }
        other => panic!("not bytes: {other}"),
    }
}

fn number(json: &Json, now: i64) -> f64 {
    match json {
        Json::Object(map) if map.contains_key("now") => (now + map["now"].as_i64().unwrap()) as f64,
        other => other.as_f64().unwrap_or_else(|| panic!("not a number: {other}")),
    }
}

/// Whether `got` is the time or number `want`, within the clock's skew for a time.
fn same_number(want: &Json, got: f64, clock: Clock) -> bool {
    match want {
        Json::Object(map) if map.contains_key("now") => {
            (number(want, clock.now) - got).abs() <= clock.skew as f64
        }
        Json::Object(map) if map.contains_key("left") => {
            let left = map["left"].as_f64().unwrap();
            got <= left && got >= left - clock.skew as f64
        }
        other => other.as_f64() == Some(got),
    }
}

fn same_bytes(want: &Json, got: &[u8], clock: Clock) -> bool {
    match want {
        Json::Object(map) if map.contains_key("now") => std::str::from_utf8(got)
            .ok()
            .and_then(|text| text.parse::<f64>().ok())
            .is_some_and(|got| same_number(want, got, clock)),
        want => bytes(want, clock.now) == got,
    }
}

/// A reply as the file writes them: `{"int"}`, `{"bulk"}`, `null`, an
/// array, `{"error"}`. INSPECT's record is compared as a set of pairs.
fn same_reply(want: &Json, got: &Reply, clock: Clock, inspect: bool) -> bool {
    match (want, got) {
        (Json::Null, Reply::Nil) => true,
        (Json::Object(map), Reply::Int(n)) if map.contains_key("int") => {
            same_number(&map["int"], *n as f64, clock)
        }
        (Json::Object(map), Reply::Bulk(b)) if map.contains_key("bulk") => same_bytes(&map["bulk"], b, clock),
        (Json::Object(map), Reply::Error(refusal)) if map.contains_key("error") => {
            map["error"]["code"] == refusal.code.as_str() && map["error"]["text"] == refusal.text
        }
        (Json::Array(want), Reply::Array(got)) if want.len() == got.len() => {
            if inspect {
                if let (Some(Json::Array(fields)), Some(Reply::Array(values))) = (want.first(), got.first()) {
                    let pairs = |n: usize| (0..n / 2).map(|i| (2 * i, 2 * i + 1));
                    let found = fields.len() == values.len()
                        && pairs(fields.len()).all(|(f, v)| {
                            pairs(values.len()).any(|(g, h)| {
                                same_reply(&fields[f], &values[g], clock, false)
                                    && same_reply(&fields[v], &values[h], clock, false)
                            })
                        });
                    return found
                        && want.iter().zip(got).skip(1).all(|(w, g)| same_reply(w, g, clock, false));
                }
            }
            want.iter().zip(got).all(|(w, g)| same_reply(w, g, clock, false))
        }
        _ => false,
    }
}

/// The record fields only the native executor writes (PROTOCOL.md §3):
/// a Lua replay compares records without them.
const EXTRAS: [&str; 2] = ["enqueued_at", "updated_at"];

/// A field of `<q>counts` that names a minute or hour of the clock (the
/// stamps and the slots): a replay on a server whose clock is not the
/// file's compares the totals only (`protocol/vectors/README.md`).
fn slotted(field: &str) -> bool {
    field == "minute" || field == "hour" || field.contains(':')
}

/// COUNTS' reply on a clock that is not the file's: its slots compared by
/// their number only, the time and the totals as they are.
fn slots_counted(want: &Json, got: Reply) -> (Json, Reply) {
    let mut want = want.clone();
    if let Some(slots) = want.get_mut(2) {
        *slots = serde_json::json!({"int": slots.as_array().map_or(0, Vec::len)});
    }
    let got = match got {
        Reply::Array(mut parts) if parts.len() == 3 => {
            let n = match &parts[2] {
                Reply::Array(slots) => slots.len() as i64,
                _ => -1,
            };
            parts[2] = Reply::Int(n);
            Reply::Array(parts)
        }
        other => other,
    };
    (want, got)
}

/// The differences between a keyspace as the file writes it and one read back.
fn compare(
    want: &Json,
    got: &BTreeMap<String, (String, Vec<Vec<u8>>)>,
    clock: Clock,
    lua: bool,
) -> Vec<String> {
    let want = want.as_object().unwrap();
    let mut wrong = Vec::new();
    let (names, got_names): (Vec<&String>, Vec<&String>) = (want.keys().collect(), got.keys().collect());
    if names != got_names {
        return vec![format!("keys {names:?}, found {got_names:?}")];
    }
    for (key, entry) in want {
        let (kind, body) = &got[key];
        let content = &entry["value"];
        let same = entry["type"] == kind.as_str()
            && match kind.as_str() {
                "hash" => {
                    let skip = |field: &str| {
                        (lua && key.contains(":job:") && EXTRAS.contains(&field))
                            || (!clock.exact && key.ends_with(":counts") && slotted(field))
                    };
                    let mut want: Vec<(&String, &Json)> =
                        content.as_object().unwrap().iter().filter(|(f, _)| !skip(f)).collect();
                    let mut found: Vec<(String, &Vec<u8>)> = body
                        .chunks(2)
                        .map(|p| (String::from_utf8_lossy(&p[0]).into_owned(), &p[1]))
                        .filter(|(f, _)| !skip(f))
                        .collect();
                    want.sort_by(|a, b| a.0.cmp(b.0));
                    found.sort();
                    want.len() == found.len()
                        && want.iter().zip(&found).all(|((f, w), (g, v))| *f == g && same_bytes(w, v, clock))
                }
                "zset" => {
                    let members = content.as_array().unwrap();
                    let found: BTreeMap<&[u8], f64> = body
                        .chunks(2)
                        .map(|p| (p[0].as_slice(), String::from_utf8_lossy(&p[1]).parse().unwrap()))
                        .collect();
                    members.len() == found.len()
                        && members.iter().all(|pair| {
                            let member = bytes(&pair[0], clock.now);
                            found
                                .get(member.as_slice())
                                .is_some_and(|score| same_number(&pair[1], *score, clock))
                        })
                }
                "stream" => {
                    let entries = content.as_array().unwrap();
                    entries.len() * 2 == body.len()
                        && entries.iter().zip(body.chunks(2)).all(|(entry, found)| {
                            let id = String::from_utf8_lossy(&found[0]).into_owned();
                            let (ms, seq) = id.split_once('-').unwrap();
                            let fields: Vec<Vec<u8>> = entry["fields"]
                                .as_array()
                                .unwrap()
                                .iter()
                                .flat_map(|pair| [bytes(&pair[0], clock.now), bytes(&pair[1], clock.now)])
                                .collect();
                            same_number(&entry["id"]["ms"], ms.parse().unwrap(), clock)
                                && (!clock.exact || entry["id"]["seq"].as_u64() == seq.parse().ok())
                                && found[1] == fields.join(&0u8)
                        })
                }
                "string" => body.is_empty() || same_bytes(content, &body[0], clock),
                // The embedded store keeps only a list's or a set's type.
                "list" | "set" => {
                    let items = content.as_array().unwrap();
                    body.is_empty()
                        || (items.len() == body.len()
                            && items.iter().zip(body).all(|(item, found)| same_bytes(item, found, clock)))
                }
                _ => false,
            };
        if !same {
            wrong.push(format!("{key}: want {entry}, found {kind} {:?}", lossy(body)));
        }
    }
    wrong
}

fn lossy(body: &[Vec<u8>]) -> Vec<String> {
    body.iter().map(|b| String::from_utf8_lossy(b).into_owned()).collect()
}

/// Every key of the database: its type and content (a stream's entries as
/// id, then fields and values joined by NULs).
const DUMP: &str = r#"
local out = {}
for _, key in ipairs(redis.call('KEYS', '*')) do
  local kind = redis.call('TYPE', key)['ok']
  local body = {}
  if kind == 'hash' then body = redis.call('HGETALL', key)
  elseif kind == 'zset' then body = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
  elseif kind == 'string' then body = {redis.call('GET', key)}
  elseif kind == 'list' then body = redis.call('LRANGE', key, 0, -1)
  elseif kind == 'set' then
    body = redis.call('SMEMBERS', key)
    table.sort(body)
  elseif kind == 'stream' then
    for _, entry in ipairs(redis.call('XRANGE', key, '-', '+')) do
      body[#body + 1] = entry[1]
      body[#body + 1] = table.concat(entry[2], '\0')
    end
  end
  out[#out + 1] = {key, kind, body}
end
return out
"#;

type Found = BTreeMap<String, (String, Vec<Vec<u8>>)>;

async fn dump_server(conn: &MultiplexedConnection) -> Found {
    let rows: Vec<(String, String, Vec<Vec<u8>>)> =
        redis::Script::new(DUMP).invoke_async(&mut conn.clone()).await.unwrap();
    rows.into_iter().map(|(key, kind, body)| (key, (kind, body))).collect()
}

fn dump_embedded(embedded: &Embedded) -> Found {
    let pairs = |items: Vec<(Vec<u8>, Vec<u8>)>| items.into_iter().flat_map(|(a, b)| [a, b]).collect();
    embedded
        .dump()
        .into_iter()
        .map(|(key, dump)| {
            let found = match dump {
                Dump::Hash(fields) => ("hash".to_owned(), pairs(fields.into_iter().collect())),
                Dump::Zset(members) => (
                    "zset".to_owned(),
                    pairs(members.into_iter().map(|(m, s)| (m, s.to_string().into_bytes())).collect()),
                ),
                Dump::Stream(entries) => (
                    "stream".to_owned(),
                    entries
                        .into_iter()
                        .flat_map(|(id, fields)| {
                            let joined: Vec<Vec<u8>> = fields.into_iter().flat_map(|(f, v)| [f, v]).collect();
                            [id.to_string().into_bytes(), joined.join(&0u8)]
                        })
                        .collect(),
                ),
                // The store keeps only a string's type.
                Dump::Other(kind) => (kind.to_owned(), Vec::new()),
            };
            (String::from_utf8(key).unwrap(), found)
        })
        .collect()
}

async fn load_server(conn: &MultiplexedConnection, before: &Json, now: i64) {
    if before.as_object().unwrap().is_empty() {
        return;
    }
    let mut pipe = redis::pipe();
    for (key, entry) in before.as_object().unwrap() {
        let content = &entry["value"];
        match entry["type"].as_str().unwrap() {
            "hash" => {
                let fields: Vec<(String, Vec<u8>)> =
                    content.as_object().unwrap().iter().map(|(f, v)| (f.clone(), bytes(v, now))).collect();
                pipe.hset_multiple(key, &fields);
            }
            "zset" => {
                for pair in content.as_array().unwrap() {
                    pipe.zadd(key, bytes(&pair[0], now), number(&pair[1], now));
                }
            }
            "stream" => {
                for item in content.as_array().unwrap() {
                    let id = format!("{}-{}", number(&item["id"]["ms"], now), item["id"]["seq"]);
                    let mut xadd = redis::cmd("XADD");
                    xadd.arg(key).arg(id);
                    for pair in item["fields"].as_array().unwrap() {
                        xadd.arg(bytes(&pair[0], now)).arg(bytes(&pair[1], now));
                    }
                    pipe.add_command(xadd);
                }
            }
            "string" => {
                pipe.set(key, bytes(content, now));
            }
            "list" => {
                let items: Vec<Vec<u8>> = content.as_array().unwrap().iter().map(|b| bytes(b, now)).collect();
                pipe.rpush(key, items);
            }
            "set" => {
                let members: Vec<Vec<u8>> =
                    content.as_array().unwrap().iter().map(|b| bytes(b, now)).collect();
                pipe.sadd(key, members);
            }
            other => panic!("{key} is a {other}"),
        }
    }
    let () = pipe.query_async(&mut conn.clone()).await.unwrap();
}

fn load_embedded(embedded: &Embedded, clock: &ManualClock, before: &Json, now: i64) -> Result<(), String> {
    let mut store = embedded.store();
    for (key, entry) in before.as_object().unwrap() {
        let (k, content) = (key.as_bytes(), &entry["value"]);
        match entry["type"].as_str().unwrap() {
            "hash" => {
                let fields: Vec<(Vec<u8>, Vec<u8>)> = content
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(f, v)| (f.clone().into_bytes(), bytes(v, now)))
                    .collect();
                let fields: Vec<(&[u8], &[u8])> =
                    fields.iter().map(|(f, v)| (f.as_slice(), v.as_slice())).collect();
                store.hset(k, &fields);
            }
            "zset" => {
                for pair in content.as_array().unwrap() {
                    store.zadd(k, number(&pair[1], now), &bytes(&pair[0], now));
                }
            }
            "stream" => {
                // The store mints ids from its clock: each entry at its ms.
                for item in content.as_array().unwrap() {
                    let ms = number(&item["id"]["ms"], now) as u64;
                    clock.set(ms);
                    let fields: Vec<(Vec<u8>, Vec<u8>)> = item["fields"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|pair| (bytes(&pair[0], now), bytes(&pair[1], now)))
                        .collect();
                    let fields: Vec<(&[u8], &[u8])> =
                        fields.iter().map(|(f, v)| (f.as_slice(), v.as_slice())).collect();
                    store.xadd(k, u64::MAX, &fields);
                    let id = store.xlast(k).map(|id| id.to_string());
                    if id != Some(format!("{ms}-{}", item["id"]["seq"])) {
                        return Err(format!(
                            "{key}: the embedded store cannot load entry {item} (it minted {id:?})"
                        ));
                    }
                }
            }
            "string" => store.put_other(k, "string"),
            "list" => store.put_other(k, "list"),
            "set" => store.put_other(k, "set"),
            other => panic!("{key} is a {other}"),
        }
    }
    clock.set(now as u64);
    Ok(())
}

/// Which executor a replay runs on.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Via {
    Lua,
    Native,
    Embedded,
}

/// Replay one case on `via`; its differences, if any.
async fn replay_on(
    via: Via,
    conn: &MultiplexedConnection,
    name: Name,
    case: &Json,
    file_now: i64,
) -> Vec<String> {
    replay_at(via, conn, name, case, file_now, Memory::Room).await.0
}

/// How a case is replayed on a server: with room, or past `maxmemory`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Memory {
    Room,
    /// The server over its `maxmemory` (noeviction) while the call runs.
    Full,
}

/// [`replay_on`], the server's memory as `memory` says; its differences.
/// At [`Memory::Full`] a transition that grows the queue may be refused
/// with `OOM`, leaving the keyspace as it was; any other answer, and every
/// other transition's, must be the case's.
async fn replay_at(
    via: Via,
    conn: &MultiplexedConnection,
    name: Name,
    case: &Json,
    file_now: i64,
    memory: Memory,
) -> (Vec<String>, bool) {
    let server_ms = || async {
        let (secs, micros): (i64, i64) = redis::cmd("TIME").query_async(&mut conn.clone()).await.unwrap();
        secs * 1000 + micros / 1000
    };
    let clock = Arc::new(ManualClock::new(file_now as u64));
    let embedded = Embedded::with_clock(clock.clone());
    let executor: Arc<dyn Executor> = match via {
        Via::Lua => Arc::new(Lua::new(conn.clone())),
        Via::Native => Arc::new(Native::new(conn.clone())),
        Via::Embedded => Arc::new(embedded.clone()),
    };
    let now = if via == Via::Embedded { file_now } else { server_ms().await };
    if via == Via::Embedded {
        if let Err(err) = load_embedded(&embedded, &clock, &case["before"], now) {
            return (vec![err], false);
        }
    } else {
        let () = redis::cmd("FLUSHDB").query_async(&mut conn.clone()).await.unwrap();
        load_server(conn, &case["before"], now).await;
    }
    let call = &case["call"];
    let keys = call["keys"].as_array().unwrap().iter().map(|k| String::from_utf8(bytes(k, now)).unwrap());
    let args = call["args"].as_array().unwrap().iter().map(|a| bytes(a, now));
    let call = Call { name, keys: keys.collect(), args: args.collect() };
    let maxmemory = |bytes: &'static str| async move {
        let () = redis::cmd("CONFIG")
            .arg(&["SET", "maxmemory", bytes])
            .query_async(&mut conn.clone())
            .await
            .unwrap();
    };
    if memory == Memory::Full {
        maxmemory("1").await;
    }
    let reply = executor.run(std::slice::from_ref(&call)).await.unwrap().replies.pop().unwrap();
    if memory == Memory::Full {
        maxmemory("0").await;
    }
    // A transition that grows the queue may be refused (natively always;
    // a script when its first write may grow memory), and then writes
    // nothing; else it answers as with room. One that writes is never refused.
    let grows = name.describe().effect == echomq_core::description::Effect::Grows;
    let oom = matches!(&reply, Err(err) if err.redis().and_then(|redis| redis.code()) == Some("OOM"));
    if oom && grows {
        let found = dump_server(conn).await;
        let clock = Clock { now, skew: server_ms().await - now + 1, exact: false };
        let written = compare(&case["before"], &found, clock, via == Via::Lua);
        return (written.into_iter().map(|w| format!("written at maxmemory: {w}")).collect(), true);
    }
    let skew = if via == Via::Embedded { 0 } else { server_ms().await - now + 1 };
    let clock = Clock { now, skew, exact: via == Via::Embedded };
    let mut wrong = Vec::new();
    let want = &case["reply"];
    match (&want.get("value"), reply) {
        (Some(value), Ok(got)) => {
            let (value, got) = if name == Name::Counts && !clock.exact {
                slots_counted(value, got)
            } else {
                ((*value).clone(), got)
            };
            if !same_reply(&value, &got, clock, name == Name::Inspect) {
                wrong.push(format!("reply: want {value}, got {got:?}"));
            }
        }
        (None, Err(err)) if err.code().is_some() => {
            let code = err.code().unwrap();
            let line = err.to_string();
            let text = line.strip_prefix(code.as_str()).unwrap_or(&line).trim_start();
            if want["error"]["code"] != code.as_str() || want["error"]["text"] != text {
                wrong.push(format!("refusal: want {}, got {line}", want["error"]));
            }
        }
        (_, got) => wrong.push(format!("reply: want {want}, got {got:?}")),
    }
    let found = if via == Via::Embedded { dump_embedded(&embedded) } else { dump_server(conn).await };
    wrong.extend(
        compare(&case["after"], &found, clock, via == Via::Lua).into_iter().map(|w| format!("after: {w}")),
    );
    (wrong, oom)
}

/// The refusal's code a case expects, if it expects one.
/// At `maxmemory` (noeviction: a write that may grow memory is refused
/// while the server is over it), the jobs already in a queue move on and
/// new ones are refused before any write (PROTOCOL.md §8): every case of a
/// transition that writes replays exactly as with room, on Lua and native
/// (an EXTEND refused there let a running job's lease run out, to be run
/// again and die of `lease expired`; a native ACK refused ran the job
/// again); one that grows the queue, refused, writes nothing. ENQUEUE is
/// refused on both.
#[test]
fn at_maxmemory_work_in_flight_moves_on_and_new_work_is_refused() {
    use echomq_core::description::Effect;
    let server = RedisServer::start_with_module();
    let client = redis::Client::open(server.url()).expect("a loopback URL");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let failures: Vec<String> = runtime.block_on(async {
        let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
        let conn = client.get_multiplexed_async_connection_with_config(&config).await.unwrap();
        let () = redis::cmd("CONFIG")
            .arg(&["SET", "maxmemory-policy", "noeviction"])
            .query_async(&mut conn.clone())
            .await
            .unwrap();
        let mut failures = Vec::new();
        for file in files().iter().filter(|file| file.name.describe().effect != Effect::Reads) {
            for case in &file.cases {
                for via in [Via::Lua, Via::Native] {
                    let (wrong, refused) =
                        replay_at(via, &conn, file.name, case, file.now, Memory::Full).await;
                    if file.name == Name::Enqueue
                        && case["name"] == "a plain job, all eleven keys"
                        && !refused
                    {
                        failures.push(format!("a new job is enqueued on {via:?} at maxmemory"));
                    }
                    if !wrong.is_empty() {
                        failures.push(format!(
                            "{:?} {} on {via:?}:\n  {}",
                            file.name,
                            case["name"],
                            wrong.join("\n  ")
                        ));
                    }
                }
            }
        }
        failures
    });
    assert!(failures.is_empty(), "{} differ at maxmemory:\n{}", failures.len(), failures.join("\n"));
}

#[rustfmt::skip]
#[path = "../../echomq-core/tests/vectors/cases.rs"]
mod cases;

/// The databases of the shared server not in use by a test right now.
static FREE: Mutex<Vec<u8>> = Mutex::new(Vec::new());
static FREED: Condvar = Condvar::new();

/// A database of the shared server, this test's alone until dropped.
struct Database(u8);

impl Database {
    /// One of the server's 16, waiting while every one is in use.
    fn take() -> Database {
        static FILLED: OnceLock<()> = OnceLock::new();
        FILLED.get_or_init(|| FREE.lock().unwrap().extend(0..16));
        let mut free = FREE.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(db) = free.pop() {
                return Database(db);
            }
            free = FREED.wait(free).unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        FREE.lock().unwrap_or_else(|p| p.into_inner()).push(self.0);
        FREED.notify_one();
    }
}

/// Replay `case` of `transition`'s file on every executor; fails naming the
/// case and each executor on which it differs.
fn replay(transition: &str, case: &str) {
    let file = files().iter().find(|file| file.name.as_str() == transition).expect("a transition");
    let json = file.cases.iter().find(|c| c["name"] == case);
    let json = json.unwrap_or_else(|| panic!("{transition}.json has no case {case:?}"));
    let db = Database::take();
    let server = RedisServer::shared_with_module();
    let client = redis::Client::open(format!("{}{}", server.url(), db.0)).expect("a loopback URL");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let failures: Vec<String> = runtime.block_on(async {
        let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
        let conn = client.get_multiplexed_async_connection_with_config(&config).await.unwrap();
        let mut failures = Vec::new();
        for via in [Via::Lua, Via::Native, Via::Embedded] {
            let wrong = replay_on(via, &conn, file.name, json, file.now).await;
            if !wrong.is_empty() {
                failures.push(format!("on {via:?}:\n  {}", wrong.join("\n  ")));
            }
        }
        failures
    });
    assert!(failures.is_empty(), "{transition}.json, case {case:?}, differs\n{}", failures.join("\n"));
}
