//! The gate holds on every path that hands out jobs (PROTOCOL.md §7.1): no
//! interval of PER ms holds more than RATE claims, for all claimers together,
//! read from the rate log and from the event log both, and `active` never
//! holds more than CONCURRENCY jobs.
//!
//! Random interleavings of every claim path (CLAIM, a waiting CLAIM, ACKNEXT,
//! ACKMANY with a CLAIM behind it in one round trip) from several claimers,
//! between the moves that free a slot or add to pending (ACK, FAIL, RELEASE,
//! DEFER with its timed pause, a pause and a resume, REAP, PROMOTE) and time
//! passing, on each executor: the embedded one on a clock that moves a
//! millisecond now and then while a transition runs, as a server's does, and
//! Lua and Native on a real server. The checks run after every step. A
//! failure prints the case, with the seed that replays it
//! (`tests/gate.proptest-regressions` keeps it).

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use echomq::executor::{Call, Embedded};
use echomq::transition::{
    Ack, AckMany, AckNext, Claim, Claims, Config, Defer, EnqueueMany, EventLog, Fail, Limit, Promote, Rate,
    Reap, Release, Stats, Transition,
};
use echomq::{Executor, JobId, Keyspace, Lua, Native};
use echomq_core::memory::{Clock, StreamId};
use echomq_core::Store;
use echomq_test_support::{module_path, unique_queue, RedisServer, ServerOptions};
use proptest::prelude::*;
use proptest::test_runner::{Config as Cases, FileFailurePersistence, TestRunner};
use redis::aio::MultiplexedConnection;
use tokio::task::JoinHandle;

/// Claimers in a case, each holding the leases it was handed.
const CLAIMERS: usize = 3;

/// Cases on the embedded executor (`PROPTEST_CASES` overrides).
const CASES: u32 = 1000;

/// Cases on each server-backed executor, where every step is a round trip
/// (`PROPTEST_CASES` overrides): with Valkey's 250 each (scripts/test),
/// 850 a claim path a run.
const SERVER_CASES: u32 = 600;

/// A lease no case outlives (REAP takes only the short ones).
const LONG: Duration = Duration::from_secs(600);

/// The queue's limits in one case.
#[derive(Clone, Copy, Debug)]
struct Limits {
    rate: u64,
    per: u64,
    concurrency: Option<u64>,
    /// Leases of this many ms, short enough for REAP to take them back
    /// within the case; `None`: leases that outlive it.
    short_lease: Option<u64>,
}

#[derive(Clone, Debug)]
enum Step {
    Enqueue {
        jobs: usize,
    },
    Claim {
        by: usize,
        count: u64,
    },
    /// A claim that waits for a job when none is pending (`EMQ.CLAIM …
    /// BLOCK`, BZPOPMIN on the wake-up key on Lua), left running while
    /// the case goes on.
    ClaimWaiting {
        by: usize,
        count: u64,
        wait: u64,
    },
    AckNext {
        by: usize,
        count: u64,
    },
    /// ACKMANY of the claimer's first `acks` leases, then a CLAIM, in one round trip.
    AckManyThenClaim {
        by: usize,
        acks: usize,
        count: u64,
    },
    Ack {
        by: usize,
    },
    Fail {
        by: usize,
        backoff: u64,
    },
    Release {
        by: usize,
    },
    Defer {
        by: usize,
        delay: u64,
        pause: bool,
    },
    Pause,
    Resume,
    Promote,
    Reap,
    Sleep {
        ms: u64,
    },
}

fn step(per: u64) -> impl Strategy<Value = Step> {
    let by = 0..CLAIMERS;
    prop_oneof![
        3 => (1usize..=4).prop_map(|jobs| Step::Enqueue { jobs }),
        4 => (by.clone(), 1u64..=6).prop_map(|(by, count)| Step::Claim { by, count }),
        2 => (by.clone(), 1u64..=6, 1..=per).prop_map(|(by, count, wait)| Step::ClaimWaiting { by, count, wait }),
        4 => (by.clone(), 1u64..=6).prop_map(|(by, count)| Step::AckNext { by, count }),
        3 => (by.clone(), 1usize..=3, 1u64..=6)
            .prop_map(|(by, acks, count)| Step::AckManyThenClaim { by, acks, count }),
        2 => by.clone().prop_map(|by| Step::Ack { by }),
        1 => (by.clone(), 0..=per).prop_map(|(by, backoff)| Step::Fail { by, backoff }),
        1 => by.clone().prop_map(|by| Step::Release { by }),
        1 => (by, 1..=per, any::<bool>()).prop_map(|(by, delay, pause)| Step::Defer { by, delay, pause }),
        1 => Just(Step::Pause),
        1 => Just(Step::Resume),
        1 => Just(Step::Promote),
        1 => Just(Step::Reap),
        3 => (0..=per).prop_map(|ms| Step::Sleep { ms }),
    ]
}

/// A case: the limits, the steps, and the seed of the embedded clock's ticks.
fn case(pers: std::ops::RangeInclusive<u64>) -> impl Strategy<Value = (Limits, Vec<Step>, u64)> {
    (1u64..=5, pers, proptest::option::weighted(0.5, 1u64..=6), any::<bool>()).prop_flat_map(
        |(rate, per, concurrency, short)| {
            let limits = Limits { rate, per, concurrency, short_lease: short.then_some(per * 2) };
            (Just(limits), prop::collection::vec(step(per), 1..40), any::<u64>())
        },
    )
}

/// The embedded executor's clock: it moves only when the case sleeps, and,
/// like a server's, now and then by a millisecond between two readings (a
/// transition reads its instant first and writes its events after).
struct Ticking {
    ms: AtomicU64,
    seed: AtomicU64,
}

impl Ticking {
    fn sleep(&self, ms: u64) {
        self.ms.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for Ticking {
    fn now_ms(&self) -> u64 {
        // xorshift64: reproducible from the case's seed.
        let mut x = self.seed.load(Ordering::SeqCst);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.seed.store(x, Ordering::SeqCst);
        let tick = u64::from(x.is_multiple_of(4));
        self.ms.fetch_add(tick, Ordering::SeqCst) + tick
    }
}

/// Where a case runs, and how it reads the rate log and moves time.
enum Place {
    Embedded { embedded: Embedded, clock: Arc<Ticking> },
    Server { conn: MultiplexedConnection },
}

impl Place {
    async fn sleep(&self, ms: u64) {
        match self {
            Place::Embedded { clock, .. } => clock.sleep(ms),
            Place::Server { .. } => tokio::time::sleep(Duration::from_millis(ms)).await,
        }
    }

    /// The rate log (each entry's member and score) and the event log's
    /// `active` events (each claim's `<id>:<token>` and its entry's time),
    /// read at one moment: a waiting claim may land at any time.
    async fn logs(&self, keys: &Keyspace) -> (Vec<(String, u64)>, Vec<(String, u64)>) {
        match self {
            Place::Embedded { embedded, .. } => {
                let mut store = embedded.store();
                let key = keys.rate();
                let members = store.zupto(key.as_bytes(), f64::INFINITY, usize::MAX);
                let rate = members
                    .into_iter()
                    .map(|member| {
                        let score = store.zscore(key.as_bytes(), &member).unwrap() as u64;
                        (String::from_utf8(member).unwrap(), score)
                    })
                    .collect();
                let events = store.xread(keys.events().as_bytes(), StreamId { ms: 0, seq: 0 }, usize::MAX);
                (rate, events.into_iter().filter_map(|(id, fields)| claim_of(id.ms, &fields)).collect())
            }
            Place::Server { conn } => {
                let mut conn = conn.clone();
                type Events = Vec<(String, Vec<Vec<u8>>)>;
                let (rate, events): (Vec<(String, u64)>, Events) = redis::pipe()
                    .atomic()
                    .cmd("ZRANGE")
                    .arg(keys.rate())
                    .arg(0)
                    .arg(-1)
                    .arg("WITHSCORES")
                    .cmd("XRANGE")
                    .arg(keys.events())
                    .arg("-")
                    .arg("+")
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                let claims = events.into_iter().filter_map(|(id, words)| {
                    let fields: Vec<_> =
                        words.chunks(2).map(|pair| (pair[0].clone(), pair[1].clone())).collect();
                    claim_of(id.split('-').next().unwrap().parse().unwrap(), &fields)
                });
                (rate, claims.collect())
            }
        }
    }
}

/// An `active` event's claim, `<id>:<token>`, and its time.
fn claim_of(ms: u64, fields: &[(Vec<u8>, Vec<u8>)]) -> Option<(String, u64)> {
    let field = |name: &[u8]| fields.iter().find(|(f, _)| f == name).map(|(_, v)| String::from_utf8_lossy(v));
    if field(b"event")? != "active" {
        return None;
    }
    Some((format!("{}:{}", field(b"id")?, field(b"attempt")?), ms))
}

/// One case's run: the executor, the queue, what each claimer holds.
struct Run {
    via: Arc<dyn Executor>,
    keys: Keyspace,
    limits: Limits,
    held: [Vec<(JobId, u64)>; CLAIMERS],
    waiting: Vec<(usize, JoinHandle<echomq::Result<Claims>>)>,
    /// Every claim the replies handed out: `<id>:<token>`.
    handed: Vec<String>,
    /// Every rate log entry seen, by member: its score.
    logged: BTreeMap<String, u64>,
}

impl Run {
    fn lease(&self) -> Duration {
        self.limits.short_lease.map_or(LONG, Duration::from_millis)
    }

    fn claim(&self, count: u64) -> Claim {
        Claim { lease: self.lease(), count }
    }

    fn take(&mut self, by: usize, claims: Claims) {
        for job in claims.jobs {
            self.handed.push(format!("{}:{}", job.id, job.token));
            self.held[by].push((job.id, job.token));
        }
    }

    /// The claimer's oldest lease, given up by it.
    fn pop(&mut self, by: usize) -> Option<(JobId, u64)> {
        (!self.held[by].is_empty()).then(|| self.held[by].remove(0))
    }

    async fn call<T: Transition>(&self, transition: &T) -> echomq::Result<T::Output> {
        echomq::executor::execute(&*self.via, &self.keys, transition).await
    }

    /// Waiting claims that have their answer.
    async fn gather(&mut self, all: bool) {
        let mut still = Vec::new();
        for (by, handle) in std::mem::take(&mut self.waiting) {
            if all || handle.is_finished() {
                let claims = handle.await.expect("the waiting claim's task").expect("a waiting claim");
                self.take(by, claims);
            } else {
                still.push((by, handle));
            }
        }
        self.waiting = still;
    }

    async fn perform(&mut self, place: &Place, step: &Step) {
        let ack = |(id, token): (JobId, u64)| Ack { id, token, result: None };
        match *step {
            Step::Enqueue { jobs } => {
                let jobs = (0..jobs).map(|_| (JobId::mint(), b"p".to_vec())).collect();
                self.call(&EnqueueMany { jobs, parent: None, group: None }).await.unwrap();
            }
            Step::Claim { by, count } => {
                let claims = self.call(&self.claim(count)).await.unwrap();
                self.take(by, claims);
            }
            Step::ClaimWaiting { by, count, wait } => {
                let call = Call::new(&self.keys, &self.claim(count)).unwrap();
                let via = self.via.clone();
                let task = tokio::spawn(async move {
                    Claim::parse(via.claim_waiting(&call, Duration::from_millis(wait)).await?)
                });
                self.waiting.push((by, task));
            }
            Step::AckNext { by, count } => {
                if let Some(lease) = self.pop(by) {
                    let acknext = AckNext { ack: ack(lease), lease: self.lease(), count };
                    // A lease REAP took back is fenced: nothing claimed.
                    if let Ok(claims) = self.call(&acknext).await {
                        self.take(by, claims);
                    }
                }
            }
            Step::AckManyThenClaim { by, acks, count } => {
                let leases: Vec<_> = (0..acks).filter_map(|_| self.pop(by)).collect();
                let mut calls = Vec::new();
                if !leases.is_empty() {
                    let acks = AckMany { acks: leases.into_iter().map(ack).collect() };
                    calls.push(Call::new(&self.keys, &acks).unwrap());
                }
                calls.push(Call::new(&self.keys, &self.claim(count)).unwrap());
                let replies = self.via.run(&calls).await.unwrap();
                let claimed = replies.replies.into_iter().last().unwrap().unwrap();
                self.take(by, Claim::parse(claimed).unwrap());
            }
            Step::Ack { by } => {
                if let Some(lease) = self.pop(by) {
                    let _fenced_or_done = self.call(&ack(lease)).await;
                }
            }
            Step::Fail { by, backoff } => {
                if let Some((id, token)) = self.pop(by) {
                    let fail = Fail {
                        id,
                        token,
                        max_attempts: 100,
                        backoff: Duration::from_millis(backoff),
                        error: "e".into(),
                    };
                    let _fenced_or_failed = self.call(&fail).await;
                }
            }
            Step::Release { by } => {
                if let Some((id, token)) = self.pop(by) {
                    let _fenced_or_released = self.call(&Release { id, token, max_attempts: 100 }).await;
                }
            }
            Step::Defer { by, delay, pause } => {
                if let Some((id, token)) = self.pop(by) {
                    let delay = Duration::from_millis(delay);
                    let defer = Defer { id, token, delay, max_attempts: 100, pause_queue: pause };
                    let _fenced_or_deferred = self.call(&defer).await;
                }
            }
            Step::Pause => {
                self.call(&Config::default().paused(true)).await.unwrap();
            }
            Step::Resume => {
                self.call(&Config::default().paused(false)).await.unwrap();
            }
            Step::Promote => {
                self.call(&Promote { limit: 1000 }).await.unwrap();
            }
            Step::Reap => {
                self.call(&Reap { max_attempts: 100, limit: 1000 }).await.unwrap();
            }
            Step::Sleep { ms } => place.sleep(ms).await,
        }
    }

    /// The checks, after every step: `active` within the concurrency
    /// limit; no interval of PER ms holding more than RATE claims, by the
    /// rate log's scores (every entry ever seen) and by the `active` events'
    /// times; every claim logged in both.
    async fn check(&mut self, place: &Place, after: &str) -> Result<(), String> {
        let Limits { rate, per, concurrency, .. } = self.limits;
        let active = self.call(&Stats).await.unwrap().active;
        if let Some(limit) = concurrency {
            if active > limit {
                return Err(format!("{after}: {active} jobs active, over the concurrency limit of {limit}"));
            }
        }
        let (rate_log, claims) = place.logs(&self.keys).await;
        for (member, score) in rate_log {
            self.logged.entry(member).or_insert(score);
        }
        let by_log: Vec<u64> = self.logged.values().copied().collect();
        crowded(&by_log, rate, per).map_err(|at| format!("{after}: the rate log {at}"))?;
        let by_events: Vec<u64> = claims.iter().map(|(_, ms)| *ms).collect();
        crowded(&by_events, rate, per).map_err(|at| format!("{after}: the event log {at}"))?;
        // Every claim is logged at its event's time, or later; one this
        // test never saw in the rate log must have left the window (a later
        // claim trimmed it), so a later entry is at least PER past it.
        let newest = by_log.iter().max().copied().unwrap_or(0);
        for (member, ms) in &claims {
            match self.logged.get(member) {
                Some(score) if score < ms => {
                    return Err(format!("{after}: {member} logged at {score}, before its event at {ms}"))
                }
                Some(_) => {}
                None if ms + per <= newest => {}
                None => return Err(format!("{after}: {member}, claimed at {ms}, is not in the rate log")),
            }
        }
        if claims.len() < self.logged.len() {
            return Err(format!(
                "{after}: {} claims in the rate log, {} active events",
                self.logged.len(),
                claims.len()
            ));
        }
        Ok(())
    }

    /// Every claim a reply handed out has its `active` event, and nothing else.
    fn all_told(&self, claims: &[(String, u64)]) -> Result<(), String> {
        let mut handed = self.handed.clone();
        handed.sort();
        let mut told: Vec<&String> = claims.iter().map(|(member, _)| member).collect();
        told.sort();
        if handed.iter().collect::<Vec<_>>() != told {
            return Err(format!("claims handed out {handed:?}, told in events {told:?}"));
        }
        Ok(())
    }
}
/// `Err` naming the interval when some `per` ms of `times` hold more than `rate`.
fn crowded(times: &[u64], rate: u64, per: u64) -> Result<(), String> {
    let mut times = times.to_vec();
    times.sort_unstable();
    let mut end = 0;
    for (start, &from) in times.iter().enumerate() {
        while end < times.len() && times[end] < from + per {
            end += 1;
        }
        let held = (end - start) as u64;
        if held > rate {
            return Err(format!(
                "holds {held} claims in [{from}, {}) ms, over {rate} per {per} ms: {times:?}",
                from + per
            ));
        }
    }
    Ok(())
}

/// Run one case on `via` at `place`.
async fn run_case(
    via: Arc<dyn Executor>,
    place: &Place,
    limits: Limits,
    steps: &[Step],
) -> Result<(), String> {
    let keys = Keyspace::new(&unique_queue("gate")).unwrap();
    let mut run = Run {
        via,
        keys,
        limits,
        held: Default::default(),
        waiting: Vec::new(),
        handed: Vec::new(),
        logged: BTreeMap::new(),
    };
    let mut config = Config::default();
    config.concurrency = limits.concurrency.map(Limit::To);
    let config = config
        .rate(Limit::To(Rate { claims: limits.rate, per: Duration::from_millis(limits.per) }))
        .events(EventLog::Keep(1_000_000));
    run.call(&config).await.unwrap();
    for (n, step) in steps.iter().enumerate() {
        run.perform(place, step).await;
        run.gather(false).await;
        run.check(place, &format!("after step {n} ({step:?})")).await?;
    }
    // The waiting claims end: a resume and an arrival wake any still waiting.
    run.call(&Config::default().paused(false)).await.unwrap();
    run.gather(true).await;
    run.check(place, "at the end").await?;
    let (_, claims) = place.logs(&run.keys).await;
    run.all_told(&claims)
}

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(default)
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Cases {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "tests/gate.proptest-regressions",
        ))),
        ..Cases::default()
    })
}

#[test]
fn the_gate_holds_on_every_claim_path_embedded() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let result = runner(cases(CASES)).run(&case(1..=50), |(limits, steps, seed)| {
        let clock = Arc::new(Ticking { ms: AtomicU64::new(1_000_000), seed: AtomicU64::new(seed | 1) });
        let embedded = Embedded::with_clock(clock.clone());
        let place = Place::Embedded { embedded: embedded.clone(), clock };
        let outcome = runtime.block_on(run_case(Arc::new(embedded), &place, limits, &steps));
        prop_assert!(outcome.is_ok(), "{}", outcome.unwrap_err());
        Ok(())
    });
    if let Err(err) = result {
        panic!("{err}");
    }
}

/// The server-side executors, each with connections of its own for the
/// claims that wait.
#[derive(Clone, Copy)]
enum Via {
    Lua,
    Native,
}

/// Run the cases on one module-loaded server, through `via`.
fn on_a_server(via: Via) {
    let server =
        RedisServer::start_with(ServerOptions { module: Some(module_path()), ..ServerOptions::default() });
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let conn = runtime.block_on(server.connection());
    let client = server.client();
    let make = |conn: MultiplexedConnection| -> Arc<dyn Executor> {
        let client = client.clone();
        let blocking = move || {
            let client = client.clone();
            async move { client.get_multiplexed_async_connection().await }
        };
        match via {
            Via::Lua => Arc::new(Lua::new(conn).with_blocking_connections(blocking)),
            Via::Native => Arc::new(Native::new(conn).with_blocking_connections(blocking)),
        }
    };
    // Short periods, so that a case's claims cross many windows in little time.
    let result = runner(cases(SERVER_CASES)).run(&case(4..=25), |(limits, steps, _)| {
        let via = make(conn.clone());
        let place = Place::Server { conn: conn.clone() };
        let outcome = runtime.block_on(run_case(via, &place, limits, &steps));
        runtime.block_on(redis::cmd("FLUSHDB").query_async::<()>(&mut conn.clone())).unwrap();
        prop_assert!(outcome.is_ok(), "{}", outcome.unwrap_err());
        Ok(())
    });
    if let Err(err) = result {
        panic!("{err}");
    }
}

#[test]
fn the_gate_holds_on_every_claim_path_lua() {
    on_a_server(Via::Lua);
}

#[test]
fn the_gate_holds_on_every_claim_path_native() {
    on_a_server(Via::Native);
}
