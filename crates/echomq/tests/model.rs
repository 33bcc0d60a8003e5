//! A property test: random sequences of transitions on a real redis-server,
//! against a small model of the protocol. After every step the replies must
//! be the model's, and the keyspace must hold the invariants: every job is in
//! exactly one of the six state sets, that set matches its record's `state`,
//! and `attempts` never decreases while the record lives.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{harness, Harness};
use echomq::{EnqueueOptions, Error, Failed, JobId, RetryPolicy, State};
use proptest::prelude::*;
use redis::AsyncCommands;

const SLOTS: usize = 4;
const SHORT: Duration = Duration::from_millis(1);
const LONG: Duration = Duration::from_secs(600);

#[derive(Clone, Debug)]
enum Op {
    Enqueue { slot: usize, priority: i64, delay: Option<bool> },
    Claim { count: u64, short: bool },
    Ack { slot: usize, stale: bool },
    Fail { slot: usize, stale: bool, max_attempts: u64, short: bool },
    Extend { slot: usize, stale: bool },
    Release { slot: usize, stale: bool },
    Reap { max_attempts: u64 },
    Promote,
    Cancel { slot: usize },
    Retry { slot: usize },
    Purge { state: State },
}

fn op() -> impl Strategy<Value = Op> {
    let slot = 0..SLOTS;
    prop_oneof![
        4 => (slot.clone(), -1i64..=1, proptest::option::of(any::<bool>()))
            .prop_map(|(slot, priority, delay)| Op::Enqueue { slot, priority, delay }),
        4 => (1u64..=3, any::<bool>()).prop_map(|(count, short)| Op::Claim { count, short }),
        3 => (slot.clone(), prop::bool::weighted(0.2)).prop_map(|(slot, stale)| Op::Ack { slot, stale }),
        2 => (slot.clone(), prop::bool::weighted(0.2), 1u64..=3, any::<bool>())
            .prop_map(|(slot, stale, max_attempts, short)| Op::Fail { slot, stale, max_attempts, short }),
        1 => (slot.clone(), prop::bool::weighted(0.3)).prop_map(|(slot, stale)| Op::Extend { slot, stale }),
        1 => (slot.clone(), prop::bool::weighted(0.3)).prop_map(|(slot, stale)| Op::Release { slot, stale }),
        2 => (1u64..=3).prop_map(|max_attempts| Op::Reap { max_attempts }),
        2 => Just(Op::Promote),
        1 => slot.clone().prop_map(|slot| Op::Cancel { slot }),
        1 => slot.prop_map(|slot| Op::Retry { slot }),
        1 => prop_oneof![Just(State::Done), Just(State::Dead), Just(State::Cancelled)]
            .prop_map(|state| Op::Purge { state }),
    ]
}

/// What the model knows of one job.
#[derive(Clone, Debug)]
struct Job {
    state: State,
    attempts: u64,
    priority: i64,
    /// Active: the lease is short (expires at once). Delayed: the due time has come or will at once.
    short: bool,
}

struct Model {
    ids: Vec<JobId>,
    jobs: BTreeMap<usize, Job>,
}

impl Model {
    fn token(&self, slot: usize, stale: bool) -> u64 {
        let attempts = self.jobs.get(&slot).map_or(0, |job| job.attempts);
        if stale {
            attempts + 1
        } else {
            attempts.max(1)
        }
    }

    /// The refusal a fenced call gets, or `None` when the token holds the lease.
    fn fence(&self, slot: usize, token: u64) -> Option<&'static str> {
        match self.jobs.get(&slot) {
            None => Some("EMQNOJOB"),
            Some(job) if job.state != State::Active || job.attempts != token => Some("EMQFENCE"),
            Some(_) => None,
        }
    }

    fn pending_order(&self) -> Vec<usize> {
        let mut pending: Vec<usize> =
            self.jobs.iter().filter(|(_, job)| job.state == State::Pending).map(|(slot, _)| *slot).collect();
        pending.sort_by_key(|slot| (self.jobs[slot].priority, self.ids[*slot].clone()));
        pending
    }
}

fn show<T: std::fmt::Debug>(result: Result<T, Error>) -> String {
    match result {
        Ok(value) => format!("{value:?}"),
        Err(err) => err.code().map_or_else(|| format!("other: {err}"), |code| code.to_string()),
    }
}

/// Run one op on the server and on the model; the two replies, rendered.
async fn step(h: &Harness, model: &mut Model, op: &Op) -> (String, String) {
    let q = &h.queue;
    let claimed =
        |slot: usize, token: u64| echomq::Claimed { id: model.ids[slot].clone(), token, payload: vec![] };
    match *op {
        Op::Enqueue { slot, priority, delay } => {
            let mut options = EnqueueOptions::default().id(model.ids[slot].clone()).priority(priority);
            if let Some(short) = delay {
                options = options.delay(if short { SHORT } else { LONG });
            }
            let got = show(q.enqueue_with(vec![slot as u8], options).await.map(|e| e.duplicate));
            let duplicate = model.jobs.contains_key(&slot);
            if !duplicate {
                let state = if delay.is_some() { State::Delayed } else { State::Pending };
                model.jobs.insert(slot, Job { state, attempts: 0, priority, short: delay == Some(true) });
            }
            (got, format!("{duplicate:?}"))
        }
        Op::Claim { count, short } => {
            let got = q.claim_batch(if short { SHORT } else { LONG }, count).await;
            let got = show(got.map(|jobs| jobs.iter().map(|j| (j.id.clone(), j.token)).collect::<Vec<_>>()));
            let mut want = Vec::new();
            for slot in model.pending_order().into_iter().take(count as usize) {
                let job = model.jobs.get_mut(&slot).unwrap();
                job.state = State::Active;
                job.attempts += 1;
                job.short = short;
                want.push((model.ids[slot].clone(), job.attempts));
            }
            (got, format!("{want:?}"))
        }
        Op::Ack { slot, stale } => {
            let token = model.token(slot, stale);
            let got = show(q.ack(&claimed(slot, token)).await);
            let want = model.fence(slot, token).map(str::to_owned).unwrap_or_else(|| {
                model.jobs.get_mut(&slot).unwrap().state = State::Done;
                "()".into()
            });
            (got, want)
        }
        Op::Fail { slot, stale, max_attempts, short } => {
            let token = model.token(slot, stale);
            let backoff = if short { Duration::ZERO } else { LONG };
            let policy = RetryPolicy { max_attempts, backoff, max_backoff: backoff };
            let got = show(q.fail(&claimed(slot, token), "boom", &policy).await);
            let want = model.fence(slot, token).map(str::to_owned).unwrap_or_else(|| {
                let job = model.jobs.get_mut(&slot).unwrap();
                let failed = if job.attempts >= max_attempts { Failed::Dead } else { Failed::Delayed };
                job.state = if failed == Failed::Dead { State::Dead } else { State::Delayed };
                job.short = short;
                format!("{failed:?}")
            });
            (got, want)
        }
        Op::Extend { slot, stale } => {
            let token = model.token(slot, stale);
            let got = match q.extend(&claimed(slot, token), LONG).await {
                Ok(_) => "deadline".to_owned(),
                other => show(other),
            };
            let want = model.fence(slot, token).map(str::to_owned).unwrap_or_else(|| {
                model.jobs.get_mut(&slot).unwrap().short = false;
                "deadline".into()
            });
            (got, want)
        }
        Op::Release { slot, stale } => {
            let token = model.token(slot, stale);
            let got = show(q.release(&claimed(slot, token)).await);
            let want = model.fence(slot, token).map(str::to_owned).unwrap_or_else(|| {
                model.jobs.get_mut(&slot).unwrap().state = State::Pending;
                "()".into()
            });
            (got, want)
        }
        Op::Reap { max_attempts } => {
            wait_for_short_scores(h, &h.keys.active()).await;
            let got = show(q.reap(max_attempts).await.map(|r| (r.requeued, r.dead)));
            let (mut requeued, mut dead) = (0, 0);
            for job in model.jobs.values_mut().filter(|job| job.state == State::Active && job.short) {
                if job.attempts >= max_attempts {
                    job.state = State::Dead;
                    dead += 1;
                } else {
                    job.state = State::Pending;
                    requeued += 1;
                }
            }
            (got, format!("{:?}", (requeued, dead)))
        }
        Op::Promote => {
            wait_for_short_scores(h, &h.keys.delayed()).await;
            let got = show(q.promote().await);
            let mut promoted = 0;
            for job in model.jobs.values_mut().filter(|job| job.state == State::Delayed && job.short) {
                job.state = State::Pending;
                promoted += 1;
            }
            (got, format!("{promoted}"))
        }
        Op::Cancel { slot } => {
            let got = show(q.cancel(&model.ids[slot]).await);
            let want = match model.jobs.get_mut(&slot) {
                None => "EMQNOJOB".into(),
                Some(job) if job.state == State::Cancelled => "false".into(),
                Some(job) if job.state == State::Done => "EMQSTATE".into(),
                Some(job) => {
                    job.state = State::Cancelled;
                    "true".into()
                }
            };
            (got, want)
        }
        Op::Retry { slot } => {
            let got = show(q.retry(&model.ids[slot]).await);
            let want = match model.jobs.get_mut(&slot) {
                None => "EMQNOJOB".into(),
                Some(job) if job.state == State::Dead => {
                    job.state = State::Pending;
                    "()".into()
                }
                Some(_) => "EMQSTATE".into(),
            };
            (got, want)
        }
        Op::Purge { state } => {
            let got = show(q.purge(state, Duration::ZERO).await);
            let before = model.jobs.len();
            model.jobs.retain(|_, job| job.state != state);
            (got, format!("{}", before - model.jobs.len()))
        }
    }
}

/// Wait until every short lease or short delay in `set` is behind the server's clock.
async fn wait_for_short_scores(h: &Harness, set: &str) {
    let mut conn = h.conn.clone();
    let horizon = h.now_ms().await + 60_000;
    let short: Vec<(String, f64)> = conn.zrangebyscore_withscores(set, "-inf", horizon).await.unwrap();
    if let Some(latest) = short.iter().map(|(_, score)| *score as u64).max() {
        h.wait_past(latest).await;
    }
}

/// The invariants, and the model's view of every job, checked on the server.
async fn check(h: &Harness, model: &Model, floor: &mut BTreeMap<String, u64>) -> Result<(), String> {
    let mut conn = h.conn.clone();
    let mut seen: BTreeMap<String, State> = BTreeMap::new();
    for state in State::ALL {
        let members: Vec<String> = conn.zrange(h.keys.state(state), 0, -1).await.unwrap();
        for id in members {
            if let Some(other) = seen.insert(id.clone(), state) {
                return Err(format!("{id} is in both {other} and {state}"));
            }
        }
    }
    let records: Vec<String> = conn.keys(format!("{}job:*", h.prefix())).await.unwrap();
    if records.len() != seen.len() {
        return Err(format!("{} records but {} ids in the sets", records.len(), seen.len()));
    }
    for (id, in_set) in &seen {
        let parsed: JobId = id.parse().map_err(|e| format!("{e}"))?;
        let record = h.queue.inspect(&parsed).await.map_err(|e| e.to_string())?;
        let record = record.ok_or(format!("{id} is in {in_set} with no record"))?.record;
        if record.state != *in_set {
            return Err(format!("{id} is in {in_set} but its record says {}", record.state));
        }
        let last = floor.entry(id.clone()).or_insert(0);
        if record.attempts < *last {
            return Err(format!("{id}: attempts went down from {last} to {}", record.attempts));
        }
        *last = record.attempts;
        let slot = model.ids.iter().position(|known| known == &parsed).ok_or("an unknown id")?;
        let job = model.jobs.get(&slot).ok_or(format!("{id} exists but the model purged it"))?;
        if (job.state, job.attempts) != (record.state, record.attempts) {
            return Err(format!("{id}: server {:?}, model {:?}", (record.state, record.attempts), job));
        }
    }
    // A purge ends a record's life; an id enqueued again starts a new one at
    // attempts 0 (PROTOCOL.md, "Fencing"). The floor holds within one life.
    floor.retain(|id, _| seen.contains_key(id));
    if seen.len() != model.jobs.len() {
        return Err(format!("the server holds {} jobs, the model {}", seen.len(), model.jobs.len()));
    }
    Ok(())
}

proptest! {
    // PROPTEST_CASES=<n> runs more (or fewer) sequences than CI's 96.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(96),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_sequences_keep_the_invariants(ops in prop::collection::vec(op(), 1..40)) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let outcome: Result<(), String> = runtime.block_on(async {
            let h = harness().await;
            let mut model = Model { ids: (0..SLOTS).map(|_| JobId::mint()).collect(), jobs: BTreeMap::new() };
            let mut floor = BTreeMap::new();
            for (n, op) in ops.iter().enumerate() {
                let (got, want) = step(&h, &mut model, op).await;
                if got != want {
                    return Err(format!("step {n} {op:?}: server {got}, model {want}"));
                }
                check(&h, &model, &mut floor).await.map_err(|e| format!("after step {n} {op:?}: {e}"))?;
            }
            Ok(())
        });
        prop_assert!(outcome.is_ok(), "{}", outcome.unwrap_err());
    }
}
