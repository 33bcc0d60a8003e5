//! Conformance: the same random transition sequences through every executor —
//! the Lua scripts and the native module on one real redis-server, and the
//! embedded core in-process — and after every step the replies are equal and
//! the keyspaces are equal: records field by field (the native two,
//! `enqueued_at` and `updated_at`, aside on Lua), sets member by member, time
//! scores within the step's clock skew. Mixed runs too: one queue worked by
//! Lua and Native in turn, against the embedded core alone. And raw calls of
//! every transition, as any speaker may send them (keys right or wrong, ids
//! of every kind, arguments valid, invalid or missing), through the script,
//! the module and the core, which must answer and write alike.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use std::sync::atomic::{AtomicU64, Ordering};

use common::example::{example, Example};
use common::ops::{grouped_op, op, perform, Op, Tokens, SLOTS};
use echomq::keyspace::Role;
use echomq::{Embedded, Executor, JobId, Lua, Name, Native, Queue};
use echomq_core::memory::{Dump, ManualClock, StreamId};
use echomq_core::Reply;
use echomq_test_support::{module_path, unique_queue, RedisServer, ServerOptions};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, FileFailurePersistence, TestRunner};
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
    /// The step that wrote each event of its log still there.
    written: std::sync::Mutex<BTreeMap<StreamId, usize>>,
}

impl Target {
    /// Put the event log of `keyspace`, read after step `step` of `ops`, in
    /// the order the protocol fixes: the steps' events in the steps' order,
    /// each step's in the order it wrote them, except for a step that walks
    /// a set by time (REAP by deadline, PROMOTE by due time, FIRE by tick,
    /// PURGE by finish time). Those write one event a job in score order,
    /// and scores are each executor's clock: two jobs whose deadlines tie on
    /// the embedded clock may be a millisecond apart on the server's, so
    /// their events are compared as a set (the scores themselves are
    /// compared within the skew, as every time is).
    fn settle_events(&self, keyspace: &mut Keyspace, step: usize, ops: &[Op]) {
        let Some(Dump::Stream(entries)) = keyspace.get_mut("events") else { return };
        let mut written = self.written.lock().unwrap();
        let newest = written.keys().next_back().copied();
        for (id, _) in entries.iter() {
            if newest.is_none_or(|newest| *id > newest) {
                written.insert(*id, step);
            }
        }
        if let Some((oldest, _)) = entries.first() {
            written.retain(|id, _| id >= oldest);
        }
        let step_of = |id: &StreamId| written.get(id).copied().unwrap_or(step);
        let by_time =
            |at: usize| matches!(ops[at], Op::Reap { .. } | Op::Promote | Op::Purge { .. } | Op::Fire { .. });
        entries.sort_by(|(a, a_fields), (b, b_fields)| {
            let (a, b) = (step_of(a), step_of(b));
            a.cmp(&b).then_with(|| {
                if a == b && by_time(a) {
                    a_fields.cmp(b_fields)
                } else {
                    std::cmp::Ordering::Equal
                }
            })
        });
    }
}

/// What a target's records must say about the native executor's two fields.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Extras {
    /// Never there: Lua writes only the three birth fields.
    Absent,
    /// Both, always: the core writes them at birth, equal, the seed's five
    /// fields (PROTOCOL.md §3).
    Present,
    /// No `updated_at` without `enqueued_at`, `enqueued_at` ≤ `updated_at`:
    /// a queue worked by Lua and Native in turn, where a record born on Lua
    /// never gets them, and one born natively keeps them (PROTOCOL.md §3).
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
        let [enqueued, updated] = EXTRAS.map(|f| fields.contains_key(f));
        let fine = match target.extras {
            Extras::Absent => !enqueued && !updated,
            Extras::Present => enqueued && updated,
            Extras::Paired => enqueued || !updated,
        };
        if !fine {
            let has = format!("enqueued_at {enqueued}, updated_at {updated}");
            return Err(format!("{}: {key} has {has}", target.name));
        }
        let ms = |field: &[u8]| -> Option<u64> { std::str::from_utf8(fields.get(field)?).ok()?.parse().ok() };
        if enqueued && updated {
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
  elseif kind == 'zset' then body = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
  elseif kind == 'stream' then
    -- Each entry as a pair: its id, and its fields and values joined by NULs.
    for _, entry in ipairs(redis.call('XRANGE', key, '-', '+')) do
      body[#body + 1] = entry[1]
      body[#body + 1] = table.concat(entry[2], '\0')
    end
  end
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
    dump_prefix(conn, &prefix).await
}

/// Differences between a reference keyspace (Lua's) and another executor's.
/// A `<q>counts` hash as the executors must agree on it: per field, the
/// totals as they are and the slots summed per event and ring (`completed:m`
/// is every `completed:m<n>`); `minute` and `hour` only as present, since
/// executors a step apart may stamp neighbours.
fn counted(hash: &BTreeMap<Vec<u8>, Vec<u8>>) -> BTreeMap<String, i64> {
    let mut out = BTreeMap::new();
    for (field, value) in hash {
        let field = String::from_utf8_lossy(field);
        let n: i64 = String::from_utf8_lossy(value).parse().unwrap_or(-1);
        match field.as_ref() {
            "minute" | "hour" => drop(out.insert(field.into_owned(), 1)),
            name => match name.split_once(':') {
                Some((event, slot)) => *out.entry(format!("{event}:{}", &slot[..1])).or_insert(0) += n,
                None => drop(out.insert(name.to_owned(), n)),
            },
        }
    }
    out
}

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
            // Which minute's (hour's) slot holds a count is a matter of each
            // executor's clock: the totals exactly, each event's slots
            // summed, and the stamps only as present.
            (Dump::Hash(want), Dump::Hash(got)) if key == "counts" && counted(want) != counted(got) => {
                return Err(format!("{key}: {want:?} vs {got:?}"));
            }
            (Dump::Hash(_), Dump::Hash(_)) if key == "counts" => {}
            (Dump::Hash(want), Dump::Hash(got)) if key == "config" => {
                // A timed pause's end is a time: within the skew; the rest exactly.
                let time = |value: &[u8]| std::str::from_utf8(value).ok()?.parse::<f64>().ok();
                let same = want.len() == got.len()
                    && want.iter().all(|(field, w)| {
                        got.get(field).is_some_and(|g| match field.as_slice() {
                            b"paused_until" => {
                                time(w).zip(time(g)).is_some_and(|(w, g)| (w - g).abs() <= skew)
                            }
                            _ => w == g,
                        })
                    });
                if !same {
                    return Err(format!("{key}: {want:?} vs {got:?} (skew {skew})"));
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
            (Dump::Stream(want), Dump::Stream(got)) => {
                // The event log: the same events in the same order; their
                // ids are each executor's clock.
                let events = |s: &Vec<echomq_core::memory::Entry>| {
                    s.iter().map(|(_, f)| f.clone()).collect::<Vec<_>>()
                };
                if events(want) != events(got) {
                    return Err(format!("{key}: {:?} vs {:?}", events(want), events(got)));
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
        let mut reference = read_keyspace(&targets[0], conn).await;
        targets[0].settle_events(&mut reference, n, ops);
        check_extras(&targets[0], &reference).map_err(|e| format!("step {n} {op:?}: {e}"))?;
        for (target, reply) in targets.iter().zip(&replies).skip(1) {
            let at =
                |what: String| format!("step {n} {op:?}: {} vs {}: {what}", targets[0].name, target.name);
            if *reply != replies[0] {
                return Err(at(format!("replies {} and {reply}", replies[0])));
            }
            let mut keyspace = read_keyspace(target, conn).await;
            target.settle_events(&mut keyspace, n, ops);
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
    async fn run(&self, calls: &[echomq::executor::Call]) -> echomq::Result<echomq::executor::Ran> {
        if self.heads() {
            self.lua.run(calls).await
        } else {
            self.native.run(calls).await
        }
    }

    async fn claim_waiting(
        &self,
        claim: &echomq::executor::Call,
        wait: std::time::Duration,
    ) -> echomq::Result<echomq_core::Reply> {
        self.lua.claim_waiting(claim, wait).await
    }

    async fn wait_on_many(
        &self,
        wakes: &[String],
        wait: std::time::Duration,
    ) -> echomq::Result<Option<usize>> {
        self.lua.wait_on_many(wakes, wait).await
    }

    async fn interrupt_waits(&self) {
        self.lua.interrupt_waits().await;
    }

    fn setup(&self) -> echomq::executor::Setup {
        self.lua.setup()
    }

    fn plain(&self) -> &dyn echomq::executor::Plain {
        self.lua.plain()
    }
}

/// Run `cases` random sequences on one module-loaded server; `targets` makes
/// each sequence's executors from the connection, a clock and a coin seed.
fn for_random_sequences<O: Strategy<Value = Op>>(
    cases: u32,
    ops: O,
    targets: impl Fn(&MultiplexedConnection, Arc<ManualClock>, u64) -> Vec<Target>,
) {
    let server =
        RedisServer::start_with(ServerOptions { module: Some(module_path()), ..ServerOptions::default() });
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let conn = runtime.block_on(server.connection());
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(cases);
    // A failing case is kept (and tried first on every later run) in the
    // file beside this one, which is committed: a case found once is never lost.
    let persistence = FileFailurePersistence::Direct("tests/conformance.proptest-regressions");
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: Some(Box::new(persistence)),
        ..Config::default()
    });
    let sequences = (prop::collection::vec(ops, 1..30), 1u64..);
    let result = runner.run(&sequences, |(ops, seed)| {
        // Each sequence on an empty server: reading a queue's keys (KEYS, in
        // DUMP) costs the whole keyspace, and the leftovers of the sequences
        // before made the thousandth one about twenty times slower.
        runtime.block_on(redis::cmd("FLUSHDB").query_async::<()>(&mut conn.clone())).unwrap();
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
    let queue = Queue::new(via, &unique_queue("conformance")).unwrap();
    Target {
        name,
        queue,
        tokens: Tokens::new(),
        embedded,
        extras,
        stamps: Default::default(),
        written: Default::default(),
    }
}

#[test]
fn lua_native_and_embedded_agree_on_random_sequences() {
    for_random_sequences(1000, op(), three_executors);
}

/// The same with grouped jobs and groups' settings among the ops: the fair
/// claim, caps, rates and pauses (PROTOCOL.md §7.9) alike on each.
#[test]
fn lua_native_and_embedded_agree_on_random_grouped_sequences() {
    for_random_sequences(300, grouped_op(), three_executors);
}

fn three_executors(conn: &MultiplexedConnection, clock: Arc<ManualClock>, _: u64) -> Vec<Target> {
    let embedded = Embedded::with_clock(clock);
    vec![
        target("lua", Arc::new(Lua::new(conn.clone())), None, Extras::Absent),
        target("native", Arc::new(Native::new(conn.clone())), None, Extras::Present),
        target("embedded", Arc::new(embedded.clone()), Some(embedded), Extras::Present),
    ]
}

#[test]
fn a_queue_worked_by_lua_and_native_in_turn_agrees_with_the_core() {
    for_random_sequences(200, op(), |conn, clock, seed| {
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
    /// A key of the own queue, but the wrong one (`active`, or `pending` where `active` belongs).
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

/// One transition's raw calls: its KEYS are its description's, its
/// arguments' candidates and the options a call may add its [`example`]'s
/// ([`Example::raw_args`], [`Example::raw_options`]).
#[derive(Clone, Copy)]
struct Shape {
    name: Name,
    args: &'static [&'static [&'static str]],
    options: &'static [(&'static str, &'static str)],
}

/// Every transition, as a raw call sends it (BLOCK aside: only the module
/// has it), in [`Name::ALL`]'s order: built by the compiler from
/// [`example`], whose match on [`Name`] is exhaustive.
const SHAPES: [Shape; Name::ALL.len()] = {
    const fn shape(name: Name) -> Shape {
        let Example { raw_args, raw_options, .. } = example(name);
        Shape { name, args: raw_args, options: raw_options }
    }
    let mut shapes = [shape(Name::Enqueue); Name::ALL.len()];
    let mut at = 0;
    while at < shapes.len() {
        shapes[at] = shape(Name::ALL[at]);
        at += 1;
    }
    shapes
};

/// One raw call of any transition, as any speaker may send it: each key
/// right or not, each argument valid or not, some missing, options added;
/// against a queue holding, or not, a record of the call's id in some state.
/// Every key of the transition is sent. Lua gets it by EVALSHA with its
/// number of keys, the core with its keys split, and the module as
/// `EMQ.<NAME>` with the same count (PROTOCOL.md §8): all three must answer
/// alike and write alike.
#[derive(Clone, Debug)]
struct RawCall {
    /// Index into [`SHAPES`].
    shape: usize,
    keys: Vec<KeyPick>,
    id: IdPick,
    /// Each positional argument's candidate, modulo the pool's length.
    args: Vec<usize>,
    /// How many positional arguments are sent (the rest are missing).
    sent: usize,
    /// Options added, modulo the shape's pool.
    options: Vec<usize>,
    /// The state of a record arranged before the call, or none.
    arranged: Option<&'static str>,
}

fn raw_call() -> impl Strategy<Value = RawCall> {
    let pick = prop_oneof![
        12 => Just(KeyPick::Own),
        1 => Just(KeyPick::OtherQueue),
        1 => Just(KeyPick::WrongName),
        1 => Just(KeyPick::Stray),
    ];
    let id = prop_oneof![6 => Just(IdPick::Minted), 1 => Just(IdPick::Odd), 1 => Just(IdPick::NotAJob)];
    let arg = prop_oneof![4 => Just(0usize), 1 => 1usize..5];
    let arranged = prop_oneof![
        Just(None),
        Just(Some("pending")),
        Just(Some("active")),
        Just(Some("delayed")),
        Just(Some("done")),
        Just(Some("dead")),
        Just(Some("cancelled")),
    ];
    let sent = prop_oneof![6 => Just(usize::MAX), 1 => 0usize..5];
    let most_keys = Name::ALL.iter().map(|name| name.describe().keys.len()).max().unwrap_or_default();
    (
        0..SHAPES.len(),
        prop::collection::vec(pick, most_keys),
        id,
        prop::collection::vec(arg, 5),
        sent,
        prop::collection::vec(0usize..10, 0..3),
        arranged,
    )
        .prop_map(|(shape, keys, id, args, sent, options, arranged)| RawCall {
            shape,
            keys,
            id,
            args,
            sent,
            options,
            arranged,
        })
}

/// The attempts of an arranged record: the token that holds its lease when active.
const ARRANGED_ATTEMPTS: u64 = 2;

impl RawCall {
    fn shape(&self) -> &'static Shape {
        &SHAPES[self.shape]
    }

    /// KEYS and ARGV for the queue whose prefix is `prefix` (`emq:{q}:`),
    /// `other` being another queue's.
    fn call(&self, [prefix, other]: &[String; 2], id: &str) -> (Vec<String>, Vec<String>) {
        let shape = self.shape();
        let described = shape.name.describe();
        let keys = self
            .keys
            .iter()
            .zip(described.keys)
            .map(|(pick, role)| {
                let name = match role {
                    Role::Job => format!("job:{id}"),
                    Role::Finished => "dead".to_owned(),
                    Role::Unfinished => "delayed".to_owned(),
                    other => other.fixed().unwrap_or_default().to_owned(),
                };
                let wrong = if name == "active" { "pending" } else { "active" };
                match pick {
                    KeyPick::Own => format!("{prefix}{name}"),
                    KeyPick::OtherQueue => format!("{other}{name}"),
                    KeyPick::WrongName => format!("{prefix}{wrong}"),
                    KeyPick::Stray => "stray:key".to_owned(),
                }
            })
            .collect();
        let word = |word: &str| match word {
            "$id" => id.to_owned(),
            "$token" => ARRANGED_ATTEMPTS.to_string(),
            "$stale" => (ARRANGED_ATTEMPTS + 1).to_string(),
            other => other.to_owned(),
        };
        let mut args: Vec<String> =
            shape.args.iter().zip(&self.args).map(|(pool, pick)| word(pool[pick % pool.len()])).collect();
        args.truncate(self.sent);
        if args.len() == shape.args.len() && !shape.options.is_empty() {
            for pick in &self.options {
                let (name, value) = shape.options[pick % shape.options.len()];
                args.extend([word(name), word(value)]);
            }
        }
        (keys, args)
    }

    /// The record of `id` arranged in its state's set, long due.
    fn arranged(&self, prefix: &str, id: &str) -> Option<Arranged> {
        let state = self.arranged?;
        let fields = [("state", state), ("attempts", &ARRANGED_ATTEMPTS.to_string()), ("payload", "p")]
            .map(|(f, v)| (f.to_owned(), v.to_owned()));
        let score = if state == "pending" { 0.0 } else { 1.0 };
        Some(Arranged { record: format!("{prefix}job:{id}"), fields, set: format!("{prefix}{state}"), score })
    }
}

/// A record arranged before a raw call, and its place in its state's set.
struct Arranged {
    record: String,
    fields: [(String, String); 3],
    set: String,
    score: f64,
}

/// A reply as text, the queues' prefixes written `$q:` and `$other:`; EXTEND's
/// deadline (a time) as `deadline`.
fn render(transition: &str, reply: Result<Reply, String>, [own, other]: &[String; 2]) -> String {
    fn text(reply: &Reply) -> String {
        match reply {
            Reply::Int(n) => n.to_string(),
            Reply::Bulk(bytes) => format!("{:?}", String::from_utf8_lossy(bytes)),
            Reply::Nil => "nil".to_owned(),
            Reply::Array(items) => format!("[{}]", items.iter().map(text).collect::<Vec<_>>().join(", ")),
            Reply::Error(refusal) => format!("error {refusal}"),
        }
    }
    let text = match reply {
        Ok(Reply::Int(_)) if transition == "extend" => "deadline".to_owned(),
        // INSPECT's record: field/value pairs in no set order (PROTOCOL.md §11.4).
        Ok(Reply::Array(mut parts)) if transition == "inspect" => {
            if let Some(Reply::Array(fields)) = parts.first_mut() {
                let mut pairs: Vec<Vec<Reply>> = fields.chunks(2).map(<[Reply]>::to_vec).collect();
                pairs.sort_by_key(|pair| format!("{pair:?}"));
                *fields = pairs.concat();
            }
            text(&Reply::Array(parts))
        }
        // COUNTS' first element is the server's now, and which slot holds a
        // count is a matter of the clock: the slots summed, by column.
        Ok(Reply::Array(mut parts)) if transition == "counts" && parts.len() == 3 => {
            parts[0] = Reply::Bulk(b"now".to_vec());
            if let Reply::Array(slots) = &parts[2] {
                let mut sums = [0i64; 4];
                for slot in slots {
                    if let Reply::Array(four) = slot {
                        for (sum, n) in sums.iter_mut().zip(four) {
                            *sum += if let Reply::Int(n) = n { *n } else { 0 };
                        }
                    }
                }
                parts[2] = Reply::Array(sums.map(Reply::Int).to_vec());
            }
            text(&Reply::Array(parts))
        }
        // SCHEDULES' first element is the server's now, a time.
        Ok(Reply::Array(mut parts)) if transition == "schedules" => {
            if let Some(now @ Reply::Int(_)) = parts.first_mut() {
                *now = Reply::Bulk(b"now".to_vec());
            }
            text(&Reply::Array(parts))
        }
        Ok(reply) => text(&reply),
        Err(err) => err,
    };
    text.replace(own, "$q:").replace(other, "$other:")
}

/// `command`'s reply as the server sent it: an error reply is the error, and
/// an array keeps the error replies inside it (ACKMANY's per-job refusals).
async fn sent(conn: &mut MultiplexedConnection, command: &redis::Cmd) -> redis::RedisResult<redis::Value> {
    use redis::aio::ConnectionLike;
    match conn.req_packed_command(command).await? {
        redis::Value::ServerError(err) => Err(err.into()),
        value => Ok(value),
    }
}

/// A server's reply in the core's terms, an error as its text.
fn from_redis(reply: redis::RedisResult<redis::Value>) -> Result<Reply, String> {
    fn convert(value: redis::Value) -> Reply {
        match value {
            redis::Value::Int(n) => Reply::Int(n),
            redis::Value::BulkString(bytes) => Reply::Bulk(bytes),
            redis::Value::SimpleString(text) => Reply::Bulk(text.into_bytes()),
            redis::Value::Array(items) => Reply::Array(items.into_iter().map(convert).collect()),
            redis::Value::Nil => Reply::Nil,
            redis::Value::ServerError(err) => match echomq_core::Code::parse(err.code()) {
                Some(code) => {
                    Reply::Error(echomq_core::Refusal::new(code, err.details().unwrap_or_default()))
                }
                None => Reply::Bulk(format!("{err:?}").into_bytes()),
            },
            other => Reply::Bulk(format!("{other:?}").into_bytes()),
        }
    }
    reply.map(convert).map_err(|err| format!("{} {}", err.code().unwrap_or("?"), err.detail().unwrap_or("")))
}

/// Two fresh queues' prefixes: the call's own and another.
fn two_queues(name: &str) -> [String; 2] {
    [name, "other"].map(|n| format!("emq:{{{}}}:", unique_queue(&format!("raw-{name}-{n}"))))
}

/// Every key under `prefix` with its content, in one round trip (`DUMP`).
async fn dump_prefix(conn: &MultiplexedConnection, prefix: &str) -> Keyspace {
    let rows: Vec<(String, String, Vec<Vec<u8>>)> =
        redis::Script::new(DUMP).arg(prefix).invoke_async(&mut conn.clone()).await.unwrap();
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
                "stream" => Dump::Stream(
                    pairs
                        .map(|(id, words)| {
                            let words: Vec<&[u8]> = words.split(|b| *b == 0).collect();
                            let fields = words.chunks(2).map(|p| (p[0].to_vec(), p[1].to_vec())).collect();
                            (String::from_utf8_lossy(&id).parse().unwrap(), fields)
                        })
                        .collect(),
                ),
                other => panic!("{key} is a {other}"),
            };
            (key[prefix.len()..].to_owned(), dump)
        })
        .collect()
}

/// Run one raw call through the script, the module and the core; compare,
/// and give the reply they agree on.
async fn raw_round(conn: &MultiplexedConnection, call: &RawCall, id: &str) -> Result<String, String> {
    use echomq_core::Store;
    let name = call.shape().name;
    let described = name.describe();
    let mut c = conn.clone();
    let (lua, native, core) = (two_queues("lua"), two_queues("native"), two_queues("core"));
    for prefix in [&lua[0], &native[0]] {
        if let Some(arranged) = call.arranged(prefix, id) {
            let mut pipe = redis::pipe();
            pipe.hset_multiple(&arranged.record, &arranged.fields).zadd(&arranged.set, id, arranged.score);
            let _: () = pipe.query_async(&mut c).await.unwrap();
        }
    }
    let t0 = server_ms(conn).await;
    let mut memory = echomq_core::Memory::new(Arc::new(ManualClock::new(t0)));
    if let Some(arranged) = call.arranged(&core[0], id) {
        let fields: Vec<(&[u8], &[u8])> =
            arranged.fields.iter().map(|(f, v)| (f.as_bytes(), v.as_bytes())).collect();
        memory.hset(arranged.record.as_bytes(), &fields);
        memory.zadd(arranged.set.as_bytes(), arranged.score, id.as_bytes());
    }
    // Lua, by EVALSHA with the call's own number of keys.
    let (keys, args) = call.call(&lua, id);
    let script = redis::Script::new(&echomq::executor::script_source(name));
    script.load_async(&mut c).await.unwrap();
    let mut evalsha = redis::cmd("EVALSHA");
    evalsha.arg(script.get_hash()).arg(keys.len()).arg(&keys).arg(&args);
    let lua_reply = render(described.name, from_redis(sent(&mut c, &evalsha).await), &lua);
    // The module: the same key count, then the keys and arguments.
    let (keys, args) = call.call(&native, id);
    let module = redis::cmd(described.command).arg(keys.len()).arg(&keys).arg(&args).clone();
    let native_reply = render(described.name, from_redis(sent(&mut c, &module).await), &native);
    // The core, keys split as Lua has them.
    let (keys, args) = call.call(&core, id);
    let keys: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    let outcome = name.run(&mut memory, &keys, &args).map_err(|refusal| refusal.to_string());
    let core_reply = render(described.name, outcome, &core);
    if lua_reply != native_reply || lua_reply != core_reply {
        return Err(format!("lua {lua_reply:?}, native {native_reply:?}, core {core_reply:?}"));
    }
    let skew = (server_ms(conn).await - t0 + 1) as f64;
    let dump = memory.dump();
    for side in 0..2 {
        let lua_keys = dump_prefix(conn, &lua[side]).await;
        compare(&lua_keys, &dump_prefix(conn, &native[side]).await, skew)
            .map_err(|e| format!("lua vs native, queue {side}: {e}"))?;
        let core_keys: Keyspace = dump
            .iter()
            .filter_map(|(key, dump)| {
                let name = std::str::from_utf8(key).ok()?.strip_prefix(&core[side])?;
                Some((name.to_owned(), dump.clone()))
            })
            .collect();
        compare(&lua_keys, &core_keys, skew).map_err(|e| format!("lua vs core, queue {side}: {e}"))?;
    }
    Ok(lua_reply)
}

/// The random sequences make every op an [`Example::sent_by`] names, and
/// each op sends one transition. (The raw calls cover every transition:
/// [`SHAPES`] is built from [`example`], whose match on [`Name`] is exhaustive.)
#[test]
fn every_op_a_transition_names_is_made_by_the_sequences() {
    let mut runner = TestRunner::deterministic();
    let ops: Vec<Op> =
        (0..5000).map(|_| grouped_op().new_tree(&mut runner).expect("an op").current()).collect();
    for name in Name::ALL {
        match example(*name).sent_by {
            Ok(sends) => assert!(ops.iter().any(sends), "no sequence sends {name}"),
            Err(why) => assert!(!why.is_empty(), "{name}: say why no op sends it"),
        }
    }
    for op in &ops {
        let sent =
            Name::ALL.iter().filter(|name| example(**name).sent_by.is_ok_and(|sends| sends(op))).count();
        assert_eq!(sent, 1, "{op:?} sends one transition");
    }
}

#[test]
fn raw_calls_get_the_same_reply_from_the_script_the_module_and_the_core() {
    let server =
        RedisServer::start_with(ServerOptions { module: Some(module_path()), ..ServerOptions::default() });
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let conn = runtime.block_on(server.connection());
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(1000);
    // A failing case is kept (and tried first on every later run) in the
    // file beside this one, which is committed: a case found once is never lost.
    let persistence = FileFailurePersistence::Direct("tests/conformance.proptest-regressions");
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: Some(Box::new(persistence)),
        ..Config::default()
    });
    let result = runner.run(&raw_call(), |call| {
        let id = match call.id {
            IdPick::Minted => JobId::mint().to_string(),
            IdPick::Odd => "JOB-odd".to_owned(),
            IdPick::NotAJob => "XYZ".to_owned(),
        };
        let outcome = runtime.block_on(raw_round(&conn, &call, &id));
        prop_assert!(outcome.is_ok(), "{call:?} with id {id}: {}", outcome.unwrap_err());
        Ok(())
    });
    if let Err(err) = result {
        panic!("{err}");
    }
}

/// The case that found the module's old key-count guess wanting (issue 12):
/// an ENQUEUE whose third key is another queue's delayed set.
#[test]
fn an_enqueue_with_another_queues_delayed_key_is_refused_alike() {
    let server =
        RedisServer::start_with(ServerOptions { module: Some(module_path()), ..ServerOptions::default() });
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let conn = runtime.block_on(server.connection());
    let shape = 0;
    assert_eq!(SHAPES[shape].name, Name::Enqueue);
    let mut keys = vec![KeyPick::Own; Name::Enqueue.describe().keys.len()];
    keys[2] = KeyPick::OtherQueue;
    let call = RawCall {
        shape,
        keys,
        id: IdPick::Minted,
        args: vec![0; 5],
        sent: 2,
        options: vec![],
        arranged: None,
    };
    let reply = runtime.block_on(raw_round(&conn, &call, JobId::mint().as_str())).unwrap();
    assert!(reply.contains("EMQARG KEYS[3] must be $q:delayed"), "refused for its third key: {reply}");
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
        let mut call = |transition: Name, keys: Vec<String>, args: Vec<&str>| -> Value {
            let mut cmd = if native {
                redis::cmd(transition.describe().command)
            } else {
                let mut cmd = redis::cmd("EVAL");
                cmd.arg(echomq::executor::script_source(transition));
                cmd
            };
            cmd.arg(keys.len());
            cmd.arg(&keys).arg(&args);
            cmd.query(&mut conn).unwrap_or_else(|err| panic!("{transition:?}: {err}"))
        };
        // Every key of the transition, `id`'s record for its job.
        let all = |name: Name, id: &str| -> Vec<String> {
            let keys = name.describe().keys.iter();
            keys.map(|role| match role {
                Role::Job => key(&format!("job:{id}")),
                other => key(other.fixed().expect("a fixed key")),
            })
            .collect()
        };
        let enqueue_keys = |id: &str| all(Name::Enqueue, id);
        let (a, b) = ("JOB_00000000000000000000000001", "JOB_00000000000000000000000002");
        assert_eq!(call(Name::Enqueue, enqueue_keys(a), vec![a, "pa", "PRIORITY", "007"]), Value::Int(1));
        assert_eq!(call(Name::Enqueue, enqueue_keys(b), vec![b, "pb", "PRIORITY", "-0"]), Value::Int(1));
        let priorities: Vec<(String, String)> =
            redis::cmd("HGETALL").arg(key("priority")).query(&mut reader).unwrap();
        assert_eq!(priorities, [(a.to_owned(), "7".to_owned())], "native {native}");

        let claim_keys = || all(Name::Claim, "");
        let claimed = call(Name::Claim, claim_keys(), vec!["60000"]);
        let want = Value::Array(vec![Value::Array(vec![
            Value::BulkString(b.as_bytes().to_vec()),
            Value::Int(1),
            Value::BulkString(b"pb".to_vec()),
        ])]);
        assert_eq!(claimed, want, "native {native}: the token is an integer");
        let fail_keys = all(Name::Fail, b);
        let failed = call(Name::Fail, fail_keys, vec![b, "1", "3", "1000", "boom"]);
        assert_eq!(failed, Value::BulkString(b"delayed".to_vec()), "native {native}");
        let inspect_keys = all(Name::Inspect, a);
        let inspected = call(Name::Inspect, inspect_keys.clone(), vec![a]);
        let Value::Array(parts) = inspected else { panic!("native {native}: INSPECT is an array") };
        assert!(
            matches!(
                &parts[..],
                [Value::Array(_), Value::Nil, Value::Nil, Value::Nil, Value::Nil, Value::Nil, Value::Nil]
            ),
            "native {native}: {parts:?}"
        );

        // CONFIG answers eleven integers (its retention as TRIM applies it,
        // and its event log's length); a claim the gate held ends with one.
        let config_keys = all(Name::Config, "");
        let settings = call(Name::Config, config_keys, vec!["PAUSED", "1", "RATE", "5", "PER", "1000"]);
        let ints = |ns: &[i64]| Value::Array(ns.iter().map(|n| Value::Int(*n)).collect());
        let kept = [86_400_000, 10_000, 2_592_000_000, 100_000, 86_400_000, 10_000, 10_000];
        assert_eq!(settings, ints(&[&[1, 0, 5, 1000][..], &kept].concat()), "native {native}");
        assert_eq!(call(Name::Claim, claim_keys(), vec!["60000"]), ints(&[-1]), "native {native}: paused");
    }
}
