//! Shared by the integration tests: a server, a queue on it, and a snapshot of
//! the queue's whole keyspace rendered as text, so a test can check every key
//! a transition may touch.

#![allow(dead_code)]

pub mod example;
pub mod ops;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use echomq::executor::execute;
use echomq::transition::*;
use echomq::{Executor, Keyspace, Lua, Name, Queue};
use echomq_test_support::{unique_queue, RedisServer};
use redis::aio::MultiplexedConnection;
use redis::AsyncCommands;

/// Two valid ids, in mint order; tests write `$A` and `$B` for them.
pub const A: &str = "JOB_00000000000000000000000001";
pub const B: &str = "JOB_00000000000000000000000002";

/// A fresh server and one queue on it.
pub struct Harness {
    pub server: RedisServer,
    pub conn: MultiplexedConnection,
    pub keys: Keyspace,
    pub lua: Arc<Lua<MultiplexedConnection>>,
    pub queue: Queue,
}

pub async fn harness() -> Harness {
    harness_on(RedisServer::start()).await
}

/// A harness on `server`.
pub async fn harness_on(server: RedisServer) -> Harness {
    let conn = server.connection().await;
    let name = unique_queue("q");
    let lua = Arc::new(Lua::new(conn.clone()));
    let queue = Queue::new(lua.clone(), &name).unwrap();
    Harness { server, conn, keys: Keyspace::new(&name).unwrap(), lua, queue }
}

impl Harness {
    /// The queue's key prefix, `emq:{q}:`.
    pub fn prefix(&self) -> String {
        self.keys.pending().trim_end_matches("pending").to_owned()
    }

    /// Replace `$q:`, `$A` and `$B` with the prefix and the two ids.
    /// `$q:`, `$A` and `$B` expanded, and `~` for a space inside one word.
    pub fn expand(&self, text: &str) -> String {
        text.replace("$q:", &self.prefix()).replace("$A", A).replace("$B", B).replace('~', " ")
    }

    /// Run raw commands, one per line of words (`$q:`, `$A`, `$B` expanded).
    pub async fn arrange(&self, commands: &[&str]) {
        let mut conn = self.conn.clone();
        for line in commands {
            let words: Vec<String> = line.split_whitespace().map(|w| self.expand(w)).collect();
            let mut cmd = redis::cmd(&words[0]);
            cmd.arg(&words[1..]);
            let _: redis::Value = cmd.query_async(&mut conn).await.unwrap_or_else(|e| panic!("{line}: {e}"));
        }
    }

    /// The server's clock in ms.
    pub async fn now_ms(&self) -> u64 {
        let mut conn = self.conn.clone();
        let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(&mut conn).await.unwrap();
        secs * 1000 + micros / 1000
    }

    /// Every key of the queue, rendered one line per key, sorted by key:
    /// `job:$A attempts=0 payload=p state=pending` for a hash (fields sorted),
    /// `pending $A@0 $B@0` for a sorted set (members in score order).
    pub async fn snapshot(&self) -> Vec<Line> {
        snapshot(&self.conn, &self.prefix()).await
    }

    /// The whole database, every key, for checks that nothing was written anywhere.
    pub async fn dbsize(&self) -> u64 {
        let mut conn = self.conn.clone();
        redis::cmd("DBSIZE").query_async(&mut conn).await.unwrap()
    }

    /// Wait until the server's clock passes `ms` (a lease deadline, a due time).
    pub async fn wait_past(&self, ms: u64) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while self.now_ms().await <= ms {
            assert!(std::time::Instant::now() < deadline, "the server's clock did not pass {ms}");
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    }
}

/// One key of a snapshot: its name after the prefix, and its entries.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub key: String,
    pub entries: Vec<(String, String)>,
}

impl std::fmt::Display for Line {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.key)?;
        for (name, value) in &self.entries {
            write!(f, " {name}={value}")?;
        }
        Ok(())
    }
}

pub fn unexpand(text: &str) -> String {
    text.replace(A, "$A").replace(B, "$B")
}

pub async fn snapshot(conn: &MultiplexedConnection, prefix: &str) -> Vec<Line> {
    let mut conn = conn.clone();
    let mut names: Vec<String> = conn.keys(format!("{prefix}*")).await.unwrap();
    names.sort();
    let mut lines = Vec::new();
    for name in names {
        let kind: String = redis::cmd("TYPE").arg(&name).query_async(&mut conn).await.unwrap();
        let entries = match kind.as_str() {
            "hash" => {
                let map: BTreeMap<String, Vec<u8>> = conn.hgetall(&name).await.unwrap();
                map.into_iter().map(|(f, v)| (unexpand(&f), unexpand(&String::from_utf8_lossy(&v)))).collect()
            }
            "zset" => {
                let members: Vec<(String, f64)> = conn.zrange_withscores(&name, 0, -1).await.unwrap();
                members.into_iter().map(|(m, s)| (unexpand(&m), format!("{s}"))).collect()
            }
            "stream" => {
                let entries: Vec<(String, Vec<Vec<u8>>)> =
                    redis::cmd("XRANGE").arg(&name).arg("-").arg("+").query_async(&mut conn).await.unwrap();
                entries
                    .into_iter()
                    .map(|(_, words)| {
                        let pairs = words.chunks(2).map(|pair| (pair[0].clone(), pair[1].clone()));
                        stream_entry(pairs.collect())
                    })
                    .collect()
            }
            other => vec![("TYPE".into(), other.into())],
        };
        lines.push(Line { key: unexpand(&name[prefix.len()..]), entries });
    }
    lines
}

/// A stream entry as a snapshot shows it, its id left out (a clock's): its
/// `event` as the name, then its job and other fields, `$A,attempt:1`.
pub fn stream_entry(fields: Vec<(Vec<u8>, Vec<u8>)>) -> (String, String) {
    let text = |bytes: &[u8]| unexpand(&String::from_utf8_lossy(bytes));
    let mut name = String::new();
    let mut rest = Vec::new();
    for (field, value) in fields {
        match field.as_slice() {
            b"event" => name = text(&value),
            b"id" => rest.insert(0, text(&value)),
            _ => rest.push(format!("{}:{}", text(&field), text(&value))),
        }
    }
    (name, rest.join(","))
}

/// Check a snapshot against expected lines. An expected zset score `now` or
/// `now+N` matches a score in `[t0 + N, t1 + N]`, the server's clock read
/// before and after the transition ran; every other value must be equal
/// (`~` stands for a space).
pub fn check(expected: &[&str], actual: &[Line], t0: u64, t1: u64) -> Result<(), String> {
    let show = || actual.iter().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n");
    if expected.len() != actual.len() {
        return Err(format!("expected {} keys, found {}:\n{}", expected.len(), actual.len(), show()));
    }
    for (want, got) in expected.iter().zip(actual) {
        let mut words = want.split_whitespace();
        let key = words.next().unwrap_or_default();
        let entries: Vec<(&str, &str)> = words.map(|w| w.split_once(['=', '@']).unwrap_or((w, ""))).collect();
        let same = key == got.key
            && entries.len() == got.entries.len()
            && entries.iter().zip(&got.entries).all(|((n, v), (gn, gv))| {
                let v = v.replace('~', " ");
                *n == gn && (v == *gv || time_matches(&v, gv, t0, t1))
            });
        if !same {
            return Err(format!("expected `{want}`, found `{got}`; all keys:\n{}", show()));
        }
    }
    Ok(())
}

fn time_matches(want: &str, got: &str, t0: u64, t1: u64) -> bool {
    let Some(offset) = want.strip_prefix("now") else { return false };
    let offset: u64 = if offset.is_empty() { 0 } else { offset.trim_start_matches('+').parse().unwrap() };
    got.parse::<f64>().is_ok_and(|score| {
        let score = score as u64;
        t0 + offset <= score && score <= t1 + offset
    })
}

/// Any transition, as a value a table can hold: a host transition type
/// behind one object, built by [`Call::new`] from any [`Transition`], so a
/// transition added to the core needs nothing here. What each suite needs
/// of a transition is in [`example::example`].
pub struct Call(Of);

/// A call's transition: its own, or a unit one (STATS, OBLITERATE) a
/// constant can name.
enum Of {
    Owned(Box<dyn AnyTransition>),
    Unit(&'static dyn AnyTransition),
}

/// Any host transition, its type erased: what a table does with a call.
trait AnyTransition: Send + Sync {
    fn name(&self) -> Name;
    fn keys(&self, k: &Keyspace) -> Vec<String>;
    fn output<'a>(
        &'a self,
        k: &'a Keyspace,
        via: &'a dyn Executor,
    ) -> BoxFuture<'a, echomq::Result<Box<dyn Got>>>;
}

impl<T> AnyTransition for T
where
    T: Transition + 'static,
    T::Output: std::fmt::Debug + 'static,
{
    fn name(&self) -> Name {
        T::NAME
    }

    fn keys(&self, k: &Keyspace) -> Vec<String> {
        Transition::keys(self, k)
    }

    fn output<'a>(
        &'a self,
        k: &'a Keyspace,
        via: &'a dyn Executor,
    ) -> BoxFuture<'a, echomq::Result<Box<dyn Got>>> {
        Box::pin(async move { Ok(Box::new(execute(via, k, self).await?) as Box<dyn Got>) })
    }
}

/// A boxed future that may move between threads.
type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// What a call got: any transition's output, shown and compared by its type.
pub trait Got: std::fmt::Debug + Send {
    fn as_any(&self) -> &dyn std::any::Any;
}

impl<T: std::fmt::Debug + Send + 'static> Got for T {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl Call {
    /// A call of `transition`.
    pub fn new<T>(transition: T) -> Call
    where
        T: Transition + 'static,
        T::Output: std::fmt::Debug + 'static,
    {
        Call(Of::Owned(Box::new(transition)))
    }

    fn held(&self) -> &dyn AnyTransition {
        match &self.0 {
            Of::Owned(transition) => transition.as_ref(),
            Of::Unit(transition) => *transition,
        }
    }

    /// Which transition it calls.
    pub fn name(&self) -> Name {
        self.held().name()
    }

    /// The transition's KEYS.
    pub fn keys(&self, k: &Keyspace) -> Vec<String> {
        self.held().keys(k)
    }

    /// Run it through `via`: its output as the host parses it, boxed.
    pub async fn output(&self, k: &Keyspace, via: &dyn Executor) -> echomq::Result<Box<dyn Got>> {
        self.held().output(k, via).await
    }
}

/// `Call::Claim(Claim { … })`: the spelling `transitions.rs`'s tables use
/// for the transitions they were written with. Each is [`Call::new`] and
/// nothing more; a transition added later needs none: its cases write
/// `Call::new(…)`.
macro_rules! spelled {
    ($($transition:ident),* ; $($unit:ident),*) => {
        #[allow(non_snake_case, non_upper_case_globals)]
        impl Call {
            $(
                pub fn $transition(transition: $transition) -> Call {
                    Call::new(transition)
                }
            )*
            $(
                pub const $unit: Call = Call(Of::Unit(&$unit));
            )*
        }
    };
}

spelled!(
    Enqueue, EnqueueMany, Claim, Ack, AckNext, AckMany, Fail, Extend, Release, Reap, Promote, Purge, Cancel,
    Retry, Inspect, Config, Progress, Schedule, Unschedule, Schedules, Fire, Drain, Trim, Defer, Batch, Settle;
    Stats, Obliterate
);

/// Run a call and render its reply: `Ok(<debug>)`, or `Err(<code>)` for a refusal.
pub async fn run(k: &Keyspace, via: &dyn Executor, call: &Call) -> String {
    show(call.output(k, via).await)
}

/// A reply rendered: `Ok(<debug>)`, or `Err(<code>)` for a refusal.
fn show<T: std::fmt::Debug>(result: echomq::Result<T>) -> String {
    match result {
        Ok(value) => format!("Ok({value:?})").replace(A, "$A").replace(B, "$B"),
        Err(err) => match err.code() {
            Some(code) => format!("Err({code})"),
            None => format!("Err(other: {err})"),
        },
    }
}

/// The retention a queue has when none is set (PROTOCOL.md §7.4).
pub fn default_retention() -> [Retention; 3] {
    use echomq::limits::*;
    let keep = |ms: u64, count: u64| Retention { age: Some(Duration::from_millis(ms)), count: Some(count) };
    [
        keep(KEEP_DONE_MS, KEEP_DONE_COUNT),
        keep(KEEP_DEAD_MS, KEEP_DEAD_COUNT),
        keep(KEEP_CANCELLED_MS, KEEP_CANCELLED_COUNT),
    ]
}

/// CONFIG's reply as the tables show it: the flow settings, then each
/// retention and the event log's length where they are not the default.
pub fn settings_shown(settings: &Settings) -> String {
    let Settings { paused, concurrency, rate, .. } = settings;
    let mut text = format!("Settings {{ paused: {paused:?}, concurrency: {concurrency:?}, rate: {rate:?} }}");
    let kept =
        [("done", settings.keep_done), ("dead", settings.keep_dead), ("cancelled", settings.keep_cancelled)];
    for ((state, keep), default) in kept.into_iter().zip(default_retention()) {
        if keep != default {
            text.push_str(&format!(" keep {state} {:?}/{:?}", keep.age, keep.count));
        }
    }
    if settings.events != echomq::EventLog::default() {
        text.push_str(&format!(" events {:?}", settings.events));
    }
    text
}

/// A server with the module, and the three executors on it (and in-process):
/// Lua and Native over one connection to it, each with connections of its
/// own for blocking reads (as `echomq::connect` makes them), and an embedded one.
pub async fn three_executors() -> (RedisServer, [(&'static str, Arc<dyn Executor>); 3]) {
    use redis::aio::{ConnectionManager, ConnectionManagerConfig};
    let server = RedisServer::start_with(echomq_test_support::ServerOptions {
        module: Some(echomq_test_support::module_path()),
        ..echomq_test_support::ServerOptions::default()
    });
    let (client, config) = (server.client(), ConnectionManagerConfig::new().set_response_timeout(None));
    let conn = ConnectionManager::new_with_config(client.clone(), config.clone()).await.unwrap();
    let open = move || ConnectionManager::new_with_config(client.clone(), config.clone());
    let executors: [(&str, Arc<dyn Executor>); 3] = [
        ("lua", Arc::new(Lua::new(conn.clone()).with_blocking_connections(open.clone()).on_one_server())),
        ("native", Arc::new(echomq::Native::new(conn).with_blocking_connections(open).on_one_server())),
        ("embedded", Arc::new(echomq::Embedded::new())),
    ];
    (server, executors)
}
