//! Conformance: the same random transition sequences through every executor —
//! the Lua scripts and the native module on one real redis-server, and the
//! embedded core in-process — and after every step the replies are equal and
//! the keyspaces are equal: records field by field (the native two,
//! `enqueued_at` and `updated_at`, aside on Lua), sets member by member, time
//! scores within the step's clock skew. Mixed runs too: one queue worked by
//! Lua and Native in turn, against the embedded core alone.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use std::sync::atomic::{AtomicU64, Ordering};

use common::ops::{op, perform, Op, Tokens, SLOTS};
use echomq::{Embedded, Executor, JobId, Lua, Native, Queue};
use echomq_core::memory::{Dump, ManualClock};
use echomq_test_support::{module_path, unique_queue, RedisServer, ServerOptions};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use redis::aio::MultiplexedConnection;

/// One queue of one executor, and how to read its keys back.
struct Target {
    name: &'static str,
    queue: Queue,
    tokens: Tokens,
    /// Set for the embedded executor: its keys are read from its store.
    embedded: Option<Embedded>,
    /// Whether its records carry `enqueued_at` and `updated_at`.
    extras: Extras,
    /// Each record's stamps at the last step: `enqueued_at` must stay as it
    /// was born, `updated_at` never go back, for as long as the record lives.
    stamps: std::sync::Mutex<BTreeMap<String, [Option<u64>; 2]>>,
}

/// What a target's records must say about the native executor's two fields.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Extras {
    /// Never there: Lua writes only the three birth fields.
    Absent,
    /// Always both: the core writes them on every record write.
    Present,
    /// Both or neither, `enqueued_at` ≤ `updated_at`: a queue worked by Lua
    /// and Native in turn, where a record born on Lua never gets them, and
    /// one born natively keeps them (PROTOCOL.md §3).
    Paired,
}

const EXTRAS: [&[u8]; 2] = [b"enqueued_at", b"updated_at"];

/// Check a target's records against its [`Extras`].
fn check_extras(target: &Target, keyspace: &Keyspace) -> Result<(), String> {
    // A record that is gone (purged) may be born again, with new stamps.
    target.stamps.lock().unwrap().retain(|key, _| keyspace.contains_key(key));
    for (key, dump) in keyspace {
        let Dump::Hash(fields) = dump else { continue };
        if !key.starts_with("job:") {
            continue;
        }
        let present = EXTRAS.iter().filter(|f| fields.contains_key(**f)).count();
        let fine = match target.extras {
            Extras::Absent => present == 0,
            Extras::Present => present == 2,
            Extras::Paired => present != 1,
        };
        if !fine {
            return Err(format!("{}: {key} has {present} of enqueued_at and updated_at", target.name));
        }
        let ms = |field: &[u8]| -> Option<u64> { std::str::from_utf8(fields.get(field)?).ok()?.parse().ok() };
        if present == 2 {
            match (ms(EXTRAS[0]), ms(EXTRAS[1])) {
                (Some(enqueued), Some(updated)) if enqueued <= updated => {}
                other => return Err(format!("{}: {key} has enqueued_at, updated_at {other:?}", target.name)),
            }
        }
        let now = [ms(EXTRAS[0]), ms(EXTRAS[1])];
        let mut stamps = target.stamps.lock().unwrap();
        if let Some([enqueued, updated]) = stamps.insert(key.clone(), now) {
            if enqueued != now[0] || updated > now[1] {
                let was = format!("enqueued_at, updated_at were {enqueued:?}, {updated:?}");
                return Err(format!("{}: {key}: {was}, are {:?}, {:?}", target.name, now[0], now[1]));
            }
        }
    }
    Ok(())
}

/// Every key of a queue, by its name after the queue's prefix.
type Keyspace = BTreeMap<String, Dump>;

/// One round trip: every key under a prefix with its content.
const DUMP: &str = r#"
local out = {}
for _, key in ipairs(redis.call('KEYS', ARGV[1] .. '*')) do
  local kind = redis.call('TYPE', key)['ok']
  local body = {}
  if kind == 'hash' then body = redis.call('HGETALL', key)
  elseif kind == 'zset' then body = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES') end
  out[#out + 1] = {key, kind, body}
end
return out
"#;

async fn read_keyspace(target: &Target, conn: &MultiplexedConnection) -> Keyspace {
    let prefix = target.queue.keyspace().pending().trim_end_matches("pending").to_owned();
    if let Some(embedded) = &target.embedded {
        return embedded
            .dump()
            .into_iter()
            .filter_map(|(key, dump)| {
                Some((String::from_utf8(key).ok()?.strip_prefix(&prefix)?.to_owned(), dump))
            })
            .collect();
    }
    let rows: Vec<(String, String, Vec<Vec<u8>>)> =
        redis::Script::new(DUMP).arg(&prefix).invoke_async(&mut conn.clone()).await.unwrap();
    rows.into_iter()
        .map(|(key, kind, body)| {
            let pairs = body.chunks(2).map(|pair| (pair[0].clone(), pair[1].clone()));
            let dump = match kind.as_str() {
                "hash" => Dump::Hash(pairs.collect()),
                "zset" => Dump::Zset(
                    pairs
                        .map(|(member, score)| (member, String::from_utf8_lossy(&score).parse().unwrap()))
                        .collect(),
                ),
                other => panic!("{key} is a {other}"),
            };
            (key[prefix.len()..].to_owned(), dump)
        })
        .collect()
}

/// Differences between a reference keyspace (Lua's) and another executor's.
fn compare(reference: &Keyspace, other: &Keyspace, skew: f64) -> Result<(), String> {
    let names = |k: &Keyspace| k.keys().cloned().collect::<Vec<_>>();
    if names(reference) != names(other) {
        return Err(format!("keys differ: {:?} vs {:?}", names(reference), names(other)));
    }
    for (key, want) in reference {
        let got = &other[key];
        match (want, got) {
            (Dump::Hash(want), Dump::Hash(got)) if key.starts_with("job:") => {
                // Field by field, the native two aside (check_extras judges those).
                fn plain(h: &BTreeMap<Vec<u8>, Vec<u8>>) -> Vec<(&Vec<u8>, &Vec<u8>)> {
                    h.iter().filter(|(f, _)| !EXTRAS.contains(&f.as_slice())).collect()
                }
                if plain(want) != plain(got) {
                    return Err(format!("{key}: {want:?} vs {got:?}"));
                }
            }
            (Dump::Zset(want), Dump::Zset(got)) if key != "pending" => {
                let by_member = |z: &Vec<(Vec<u8>, f64)>| z.iter().cloned().collect::<BTreeMap<_, _>>();
                let (want, got) = (by_member(want), by_member(got));
                let same = want.len() == got.len()
                    && want.iter().all(|(m, s)| got.get(m).is_some_and(|g| (g - s).abs() <= skew));
                if !same {
                    return Err(format!("{key}: {want:?} vs {got:?} (skew {skew})"));
                }
            }
            (want, got) if want != got => return Err(format!("{key}: {want:?} vs {got:?}")),
            _ => {}
        }
    }
    Ok(())
}

async fn server_ms(conn: &MultiplexedConnection) -> u64 {
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(&mut conn.clone()).await.unwrap();
    secs * 1000 + micros / 1000
}

/// Before a reap or promote: wait until every short lease or delay on the
/// server is past, so each executor sees the same jobs as due.
async fn wait_for_short_scores(conn: &MultiplexedConnection, targets: &[Target]) {
    let horizon = server_ms(conn).await + 60_000;
    let mut latest = 0u64;
    for target in targets.iter().filter(|t| t.embedded.is_none()) {
        let keys = target.queue.keyspace();
        for set in [keys.active(), keys.delayed()] {
            let scores: Vec<(String, f64)> = redis::cmd("ZRANGEBYSCORE")
                .arg(&set)
                .arg("-inf")
                .arg(horizon)
                .arg("WITHSCORES")
                .query_async(&mut conn.clone())
                .await
                .unwrap();
            latest = scores.iter().map(|(_, s)| *s as u64).fold(latest, u64::max);
        }
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while server_ms(conn).await <= latest {
        assert!(std::time::Instant::now() < deadline, "the server's clock did not pass {latest}");
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
}

/// Run one sequence through `targets` (the first is the reference) and check after each step.
async fn run_sequence(
    conn: &MultiplexedConnection,
    clock: &ManualClock,
    targets: &mut [Target],
    ops: &[Op],
) -> Result<(), String> {
    let ids: Vec<JobId> = (0..SLOTS).map(|_| JobId::mint()).collect();
    let mut skew = 1.0f64;
    for (n, op) in ops.iter().enumerate() {
        if matches!(op, Op::Reap { .. } | Op::Promote) {
            wait_for_short_scores(conn, targets).await;
        }
        let t0 = server_ms(conn).await;
        clock.set(t0);
        let mut replies = Vec::with_capacity(targets.len());
        for target in targets.iter_mut() {
            replies.push(perform(&target.queue, &ids, &mut target.tokens, op).await);
        }
        skew = skew.max((server_ms(conn).await - t0 + 1) as f64);
        let reference = read_keyspace(&targets[0], conn).await;
        check_extras(&targets[0], &reference).map_err(|e| format!("step {n} {op:?}: {e}"))?;
        for (target, reply) in targets.iter().zip(&replies).skip(1) {
            let at =
                |what: String| format!("step {n} {op:?}: {} vs {}: {what}", targets[0].name, target.name);
            if *reply != replies[0] {
                return Err(at(format!("replies {} and {reply}", replies[0])));
            }
            let keyspace = read_keyspace(target, conn).await;
            check_extras(target, &keyspace).map_err(at)?;
            compare(&reference, &keyspace, skew).map_err(at)?;
        }
    }
    Ok(())
}

/// Lua and Native in turn, by a seeded coin: one queue, two executors.
struct Alternate {
    lua: Lua<MultiplexedConnection>,
    native: Native<MultiplexedConnection>,
    coin: AtomicU64,
}

impl Alternate {
    /// Heads for Lua, tails for Native: xorshift64, reproducible from the seed proptest drew.
    fn heads(&self) -> bool {
        let mut x = self.coin.load(Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.coin.store(x, Ordering::Relaxed);
        x & 1 == 0
    }
}

#[async_trait::async_trait]
impl Executor for Alternate {
    async fn run(&self, calls: &[echomq::Call]) -> echomq::Result<Vec<echomq::Result<redis::Value>>> {
        if self.heads() {
            self.lua.run(calls).await
        } else {
            self.native.run(calls).await
        }
    }
}

/// Run `cases` random sequences on one module-loaded server; `targets` makes
/// each sequence's executors from the connection, a clock and a coin seed.
fn for_random_sequences(
    cases: u32,
    targets: impl Fn(&MultiplexedConnection, Arc<ManualClock>, u64) -> Vec<Target>,
) {
    let server =
        RedisServer::start_with(ServerOptions { module: Some(module_path()), ..ServerOptions::default() });
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let conn = runtime.block_on(server.client().get_multiplexed_async_connection()).unwrap();
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(cases);
    let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
    let sequences = (prop::collection::vec(op(), 1..30), 1u64..);
    let result = runner.run(&sequences, |(ops, seed)| {
        let clock = Arc::new(ManualClock::new(0));
        let mut targets = targets(&conn, clock.clone(), seed);
        let outcome = runtime.block_on(run_sequence(&conn, &clock, &mut targets, &ops));
        prop_assert!(outcome.is_ok(), "{}", outcome.unwrap_err());
        Ok(())
    });
    if let Err(err) = result {
        panic!("{err}");
    }
}

fn target(name: &'static str, via: Arc<dyn Executor>, embedded: Option<Embedded>, extras: Extras) -> Target {
    let queue = Queue::with_executor(via, &unique_queue("conformance")).unwrap();
    Target { name, queue, tokens: Tokens::new(), embedded, extras, stamps: Default::default() }
}

#[test]
fn lua_native_and_embedded_agree_on_random_sequences() {
    for_random_sequences(1000, |conn, clock, _| {
        let embedded = Embedded::with_clock(clock);
        vec![
            target("lua", Arc::new(Lua::new(conn.clone())), None, Extras::Absent),
            target("native", Arc::new(Native::new(conn.clone())), None, Extras::Present),
            target("embedded", Arc::new(embedded.clone()), Some(embedded), Extras::Present),
        ]
    });
}

#[test]
fn a_queue_worked_by_lua_and_native_in_turn_agrees_with_the_core() {
    for_random_sequences(200, |conn, clock, seed| {
        let embedded = Embedded::with_clock(clock);
        let alternate = Alternate {
            lua: Lua::new(conn.clone()),
            native: Native::new(conn.clone()),
            coin: AtomicU64::new(seed),
        };
        vec![
            target("embedded", Arc::new(embedded.clone()), Some(embedded), Extras::Present),
            target("lua+native", Arc::new(alternate), None, Extras::Paired),
        ]
    });
}

/// Which key a raw call puts at one position of KEYS.
#[derive(Clone, Copy, Debug)]
enum KeyPick {
    /// The protocol's key for the position, of the call's own queue.
    Own,
    /// The same name, of another queue.
    OtherQueue,
    /// A key of the own queue, but the wrong one (`active`).
    WrongName,
    /// Not a key of any queue.
    Stray,
}

/// Which id a raw call sends.
#[derive(Clone, Copy, Debug)]
enum IdPick {
    /// A freshly minted, branded id.
    Minted,
    /// An id the kind gate admits, with no brand.
    Odd,
    /// Not a job id.
    NotAJob,
}

/// One ENQUEUE as any speaker may send it: two or four keys, each one right
/// or not, an id, and options. Lua gets it by EVALSHA with its number of
/// keys, the core with its keys split, and the module as `EMQ.ENQUEUE` with
/// the flat argv, whose key count it must infer (PROTOCOL.md §8): all three
/// must answer alike and write alike.
#[derive(Clone, Debug)]
struct RawEnqueue {
    keys: Vec<KeyPick>,
    id: IdPick,
    options: Vec<(&'static str, &'static str)>,
}

fn raw_enqueue() -> impl Strategy<Value = RawEnqueue> {
    let pick = prop_oneof![
        6 => Just(KeyPick::Own),
        2 => Just(KeyPick::OtherQueue),
        1 => Just(KeyPick::WrongName),
        1 => Just(KeyPick::Stray),
    ];
    let id = prop_oneof![6 => Just(IdPick::Minted), 1 => Just(IdPick::Odd), 1 => Just(IdPick::NotAJob)];
    let option = prop_oneof![
        Just(("PRIORITY", "0")),
        Just(("PRIORITY", "-0")),
        Just(("PRIORITY", "007")),
        Just(("PRIORITY", "-1")),
        Just(("priority", "1")),
        Just(("DELAY", "0")),
        Just(("DELAY", "600000")),
        Just(("AT", "1")),
        Just(("AT", "x")),
        Just(("COLOUR", "1")),
    ];
    (
        prop_oneof![Just(2usize), Just(4usize)],
        prop::collection::vec(pick, 4),
        id,
        prop::collection::vec(option, 0..3),
    )
        .prop_map(|(count, keys, id, options)| RawEnqueue { keys: keys[..count].to_vec(), id, options })
}

impl RawEnqueue {
    /// KEYS and ARGV for the queue whose prefix is `prefix` (`emq:{q}:`),
    /// `other` being another queue's.
    fn call(&self, prefix: &str, other: &str, id: &str) -> (Vec<String>, Vec<String>) {
        let names = ["job", "pending", "delayed", "priority"];
        let keys = self
            .keys
            .iter()
            .zip(names)
            .map(|(pick, name)| {
                let name = if name == "job" { format!("job:{id}") } else { name.to_owned() };
                match pick {
                    KeyPick::Own => format!("{prefix}{name}"),
                    KeyPick::OtherQueue => format!("{other}{name}"),
                    KeyPick::WrongName => format!("{prefix}active"),
                    KeyPick::Stray => "stray".to_owned(),
                }
            })
            .collect();
        let mut args = vec![id.to_owned(), "payload".to_owned()];
        for (name, value) in &self.options {
            args.extend([name.to_string(), value.to_string()]);
        }
        (keys, args)
    }
}

/// A raw reply as text, the queues' prefixes written `$q:` and `$other:`.
fn raw_reply(reply: redis::RedisResult<i64>, [own, other]: &[String; 2]) -> String {
    let text = match reply {
        Ok(n) => n.to_string(),
        Err(err) => format!("{} {}", err.code().unwrap_or("?"), err.detail().unwrap_or("")),
    };
    text.replace(own, "$q:").replace(other, "$other:")
}

/// Two fresh queues' prefixes: the call's own and another.
fn two_queues(name: &str) -> [String; 2] {
    [name, "other"].map(|n| format!("emq:{{{}}}:", unique_queue(&format!("raw-{name}-{n}"))))
}

#[test]
fn raw_enqueues_get_the_same_reply_from_the_script_the_module_and_the_core() {
    let server =
        RedisServer::start_with(ServerOptions { module: Some(module_path()), ..ServerOptions::default() });
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let conn = runtime.block_on(server.client().get_multiplexed_async_connection()).unwrap();
    let script = redis::Script::new(&echomq::executor::script_source("enqueue").unwrap());
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(500);
    let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
    let result = runner.run(&raw_enqueue(), |call| {
        let id = match call.id {
            IdPick::Minted => JobId::mint().to_string(),
            IdPick::Odd => "JOB-odd".to_owned(),
            IdPick::NotAJob => "XYZ".to_owned(),
        };
        let outcome = runtime.block_on(async {
            let mut c = conn.clone();
            let t0 = server_ms(&conn).await;
            // Lua, by EVALSHA with the call's own number of keys.
            let lua = two_queues("lua");
            let (keys, args) = call.call(&lua[0], &lua[1], &id);
            let mut invocation = script.prepare_invoke();
            for key in &keys {
                invocation.key(key);
            }
            for arg in &args {
                invocation.arg(arg);
            }
            let lua_reply = raw_reply(invocation.invoke_async(&mut c).await, &lua);
            // The module: one flat argv.
            let native = two_queues("native");
            let (keys, args) = call.call(&native[0], &native[1], &id);
            let native_reply =
                raw_reply(redis::cmd("EMQ.ENQUEUE").arg(&keys).arg(&args).query_async(&mut c).await, &native);
            // The core, keys split as Lua has them.
            let core = two_queues("core");
            let (keys, args) = call.call(&core[0], &core[1], &id);
            let mut memory = echomq_core::Memory::new(Arc::new(ManualClock::new(t0)));
            let bytes = |words: &[String]| words.iter().map(|w| w.as_bytes().to_vec()).collect::<Vec<_>>();
            let (keys, args) = (bytes(&keys), bytes(&args));
            let core_reply = match echomq_core::run(
                &mut memory,
                "enqueue",
                &keys.iter().map(Vec::as_slice).collect::<Vec<_>>(),
                &args.iter().map(Vec::as_slice).collect::<Vec<_>>(),
            ) {
                Ok(echomq_core::Reply::Int(n)) => n.to_string(),
                Ok(other) => format!("{other:?}"),
                Err(refusal) => refusal.to_string().replace(&core[0], "$q:").replace(&core[1], "$other:"),
            };
            if lua_reply != native_reply || lua_reply != core_reply {
                return Err(format!("lua {lua_reply:?}, native {native_reply:?}, core {core_reply:?}"));
            }
            let skew = (server_ms(&conn).await - t0 + 1) as f64;
            let read = |prefix: String| {
                let conn = conn.clone();
                async move {
                    let rows: Vec<(String, String, Vec<Vec<u8>>)> =
                        redis::Script::new(DUMP).arg(&prefix).invoke_async(&mut conn.clone()).await.unwrap();
                    rows.into_iter()
                        .map(|(key, kind, body)| {
                            let pairs = body.chunks(2).map(|p| (p[0].clone(), p[1].clone()));
                            let dump = match kind.as_str() {
                                "hash" => Dump::Hash(pairs.collect()),
                                _ => Dump::Zset(
                                    pairs
                                        .map(|(m, s)| (m, String::from_utf8_lossy(&s).parse().unwrap()))
                                        .collect(),
                                ),
                            };
                            (key[prefix.len()..].to_owned(), dump)
                        })
                        .collect::<Keyspace>()
                }
            };
            let dump = memory.dump();
            for side in 0..2 {
                let lua_keys = read(lua[side].clone()).await;
                compare(&lua_keys, &read(native[side].clone()).await, skew)
                    .map_err(|e| format!("lua vs native, queue {side}: {e}"))?;
                let core_keys: Keyspace = dump
                    .iter()
                    .filter_map(|(key, dump)| {
                        let name = std::str::from_utf8(key).ok()?.strip_prefix(&core[side])?;
                        Some((name.to_owned(), dump.clone()))
                    })
                    .collect();
                compare(&lua_keys, &core_keys, skew)
                    .map_err(|e| format!("lua vs core, queue {side}: {e}"))?;
            }
            Ok(())
        });
        prop_assert!(outcome.is_ok(), "{call:?} with id {id}: {}", outcome.unwrap_err());
        Ok(())
    });
    if let Err(err) = result {
        panic!("{err}");
    }
}

/// PROTOCOL.md §11.4, raw, from the script and the module alike: CLAIM's
/// token is an integer reply, FAIL's outcome a bulk string, INSPECT's missing
/// error a nil; a priority is kept in canonical decimal, and 0 not at all.
#[test]
fn reply_types_and_hash_values_are_the_same_from_the_script_and_the_module() {
    use redis::Value;
    let server =
        RedisServer::start_with(ServerOptions { module: Some(module_path()), ..ServerOptions::default() });
    let mut conn = server.client().get_connection().unwrap();
    let mut reader = server.client().get_connection().unwrap();
    for native in [false, true] {
        let q = format!("emq:{{{}}}:", unique_queue("replies"));
        let key = |name: &str| format!("{q}{name}");
        let mut call = |transition: &str, keys: Vec<String>, args: Vec<&str>| -> Value {
            let mut cmd = if native {
                redis::cmd(&format!("EMQ.{}", transition.to_uppercase()))
            } else {
                let mut cmd = redis::cmd("EVAL");
                cmd.arg(echomq::executor::script_source(transition).unwrap()).arg(keys.len());
                cmd
            };
            cmd.arg(&keys).arg(&args);
            cmd.query(&mut conn).unwrap_or_else(|err| panic!("{transition}: {err}"))
        };
        let four =
            |id: &str| vec![key(&format!("job:{id}")), key("pending"), key("delayed"), key("priority")];
        let (a, b) = ("JOB_00000000000000000000000001", "JOB_00000000000000000000000002");
        assert_eq!(call("enqueue", four(a), vec![a, "pa", "PRIORITY", "007"]), Value::Int(1));
        assert_eq!(call("enqueue", four(b), vec![b, "pb", "PRIORITY", "-0"]), Value::Int(1));
        let priorities: Vec<(String, String)> =
            redis::cmd("HGETALL").arg(key("priority")).query(&mut reader).unwrap();
        assert_eq!(priorities, [(a.to_owned(), "7".to_owned())], "native {native}");

        let claimed = call("claim", vec![key("pending"), key("active")], vec!["60000"]);
        let want = Value::Array(vec![Value::Array(vec![
            Value::BulkString(b.as_bytes().to_vec()),
            Value::Int(1),
            Value::BulkString(b"pb".to_vec()),
        ])]);
        assert_eq!(claimed, want, "native {native}: the token is an integer");
        let fail_keys =
            vec![key(&format!("job:{b}")), key("active"), key("delayed"), key("dead"), key("errors")];
        let failed = call("fail", fail_keys, vec![b, "1", "3", "1000", "boom"]);
        assert_eq!(failed, Value::BulkString(b"delayed".to_vec()), "native {native}");
        let inspected = call("inspect", vec![key(&format!("job:{a}")), key("errors")], vec![a]);
        let Value::Array(parts) = inspected else { panic!("native {native}: INSPECT is an array") };
        assert!(matches!(&parts[..], [Value::Array(_), Value::Nil]), "native {native}: {parts:?}");
    }
}
