//! A property test: random sequences of transitions on a real redis-server,
//! against a small model of the protocol. After every step the replies must
//! be the model's, and the keyspace must hold the invariants: every job is in
//! exactly one of the six state sets, that set matches its record's `state`,
//! and `attempts` never decreases while the record lives.

mod common;

use std::collections::BTreeMap;

use common::ops::{op, perform, schedule_name, token_for, Op, Tokens, RATE_PERIOD, SLOTS};
use common::{harness, Harness};
use echomq::transition::{Admission, Settings, Stored};
use echomq::{Failed, JobId, State};
use proptest::prelude::*;
use redis::AsyncCommands;

/// What the model knows of one job.
#[derive(Clone, Debug)]
struct Job {
    state: State,
    attempts: u64,
    priority: i64,
    /// Active: the lease is short (expires at once). Delayed: the due time has come or will at once.
    short: bool,
    /// The last PROGRESS value, kept until the job is purged.
    progress: Option<String>,
    /// Its own maximum attempts (its policy), over FAIL's and REAP's.
    own_attempts: Option<u64>,
}

impl Job {
    /// A job born pending with no options (ENQUEUEMANY's, FIRE's).
    fn plain() -> Job {
        Job {
            state: State::Pending,
            attempts: 0,
            priority: 0,
            short: false,
            progress: None,
            own_attempts: None,
        }
    }
}

struct Model {
    ids: Vec<JobId>,
    jobs: BTreeMap<usize, Job>,
    /// The queue's settings: paused, and the concurrency limit (0: none).
    paused: bool,
    concurrency: u64,
    /// The rate (0: none), and how many claims its log holds (the period
    /// outlasts a sequence, so none leaves the window).
    rate: u64,
    logged: u64,
    /// The slot whose job holds the dedup key, once one does.
    unique_holder: Option<usize>,
    /// Each schedule by name: its definition and next tick.
    schedules: BTreeMap<usize, (Vec<u8>, u64)>,
}

impl Model {
    /// A fenced op: its refusal, or `change` applied to the job when `token` holds the lease.
    fn fenced(&mut self, slot: usize, token: u64, change: impl FnOnce(&mut Job) -> String) -> String {
        match self.jobs.get_mut(&slot) {
            None => "EMQNOJOB".into(),
            Some(job) if job.state != State::Active || job.attempts != token => "EMQFENCE".into(),
            Some(job) => change(job),
        }
    }

    fn pending_order(&self) -> Vec<usize> {
        let mut pending: Vec<usize> =
            self.jobs.iter().filter(|(_, job)| job.state == State::Pending).map(|(slot, _)| *slot).collect();
        pending.sort_by_key(|slot| (self.jobs[slot].priority, self.ids[*slot].clone()));
        pending
    }
}

/// Run one op on the server and on the model; the two replies, rendered.
async fn step(h: &Harness, model: &mut Model, tokens: &mut Tokens, op: &Op) -> (String, String) {
    // The model's reply first, from the state before the op (the same tokens perform will send).
    let want = match *op {
        Op::Enqueue { slot, priority, delay, attempts, unique } => {
            // A unique enqueue is a duplicate while another job holds the
            // key: for the whole sequence (its hold is an hour), whatever
            // became of that job.
            let held = unique && model.unique_holder.is_some();
            let duplicate = model.jobs.contains_key(&slot) || held;
            if unique && !duplicate {
                model.unique_holder = Some(slot);
            }
            if !duplicate {
                let state = if delay.is_some() { State::Delayed } else { State::Pending };
                model.jobs.insert(
                    slot,
                    Job {
                        state,
                        attempts: 0,
                        priority,
                        short: delay == Some(true),
                        progress: None,
                        own_attempts: attempts,
                    },
                );
            }
            format!("{duplicate:?}")
        }
        Op::EnqueueMany { ref slots } => {
            let admitted: Vec<Admission> = slots
                .iter()
                .map(|&slot| {
                    if model.jobs.contains_key(&slot) {
                        return Admission::Duplicate;
                    }
                    model.jobs.insert(slot, Job::plain());
                    Admission::Enqueued
                })
                .collect();
            format!("{admitted:?}")
        }
        Op::Claim { short, count } => {
            let active = model.jobs.values().filter(|job| job.state == State::Active).count() as u64;
            let (mut room, mut held) = (count, None);
            if model.paused {
                (room, held) = (0, Some("Paused"));
            } else {
                let left = model.concurrency.saturating_sub(active);
                if model.concurrency > 0 && left < room {
                    (room, held) = (left, Some("Busy"));
                }
                let left = model.rate.saturating_sub(model.logged);
                if model.rate > 0 && left <= room && left < count {
                    (room, held) = (left, Some("Rate"));
                }
            }
            let held = held.map(str::to_owned);
            let mut claimed = Vec::new();
            for slot in model.pending_order().into_iter().take(room as usize) {
                let job = model.jobs.get_mut(&slot).unwrap();
                job.state = State::Active;
                job.attempts += 1;
                job.short = short;
                claimed.push((model.ids[slot].clone(), job.attempts, vec![slot as u8]));
            }
            if model.rate > 0 && !model.paused {
                model.logged += claimed.len() as u64;
            }
            // A limit is told only when it held back jobs still pending; a pause always.
            let held = held.filter(|held| held == "Paused" || !model.pending_order().is_empty());
            format!("{:?}", (claimed, held))
        }
        Op::Ack { slot, stale } => model.fenced(slot, token_for(tokens, slot, stale), |job| {
            job.state = State::Done;
            "()".into()
        }),
        Op::AckMany { ref jobs } => {
            let outcomes: Vec<String> = jobs
                .iter()
                .map(|&(slot, stale)| {
                    model.fenced(slot, token_for(tokens, slot, stale), |job| {
                        job.state = State::Done;
                        "()".into()
                    })
                })
                .collect();
            format!("{outcomes:?}")
        }
        Op::Fail { slot, stale, max_attempts, short } => {
            model.fenced(slot, token_for(tokens, slot, stale), |job| {
                let failed = if job.attempts >= job.own_attempts.unwrap_or(max_attempts) {
                    Failed::Dead
                } else {
                    Failed::Delayed
                };
                job.state = if failed == Failed::Dead { State::Dead } else { State::Delayed };
                job.short = short;
                format!("{failed:?}")
            })
        }
        Op::Extend { slot, stale } => model.fenced(slot, token_for(tokens, slot, stale), |job| {
            job.short = false;
            "deadline".into()
        }),
        Op::Release { slot, stale, max_attempts } => {
            model.fenced(slot, token_for(tokens, slot, stale), |job| {
                job.state = State::Pending;
                // REFUND: the attempt is given back, the job's own maximum grows.
                job.own_attempts = Some((job.own_attempts.unwrap_or(max_attempts) + 1).min(2_147_483_647));
                "()".into()
            })
        }
        Op::Reap { max_attempts } => {
            wait_for_short_scores(h, &h.keys.active()).await;
            let (mut requeued, mut dead) = (0, 0);
            for job in model.jobs.values_mut().filter(|job| job.state == State::Active && job.short) {
                if job.attempts >= job.own_attempts.unwrap_or(max_attempts) {
                    job.state = State::Dead;
                    dead += 1;
                } else {
                    job.state = State::Pending;
                    requeued += 1;
                }
            }
            format!("{:?}", (requeued, dead))
        }
        Op::Promote => {
            wait_for_short_scores(h, &h.keys.delayed()).await;
            let mut promoted = 0;
            for job in model.jobs.values_mut().filter(|job| job.state == State::Delayed && job.short) {
                job.state = State::Pending;
                promoted += 1;
            }
            format!("{promoted}")
        }
        Op::Cancel { slot } => match model.jobs.get_mut(&slot) {
            None => "EMQNOJOB".into(),
            Some(job) if job.state == State::Cancelled => "false".into(),
            Some(job) if job.state == State::Done => "EMQSTATE".into(),
            Some(job) => {
                job.state = State::Cancelled;
                "true".into()
            }
        },
        Op::Retry { slot } => match model.jobs.get_mut(&slot) {
            None => "EMQNOJOB".into(),
            Some(job) if job.state == State::Dead => {
                job.state = State::Pending;
                "()".into()
            }
            Some(_) => "EMQSTATE".into(),
        },
        Op::Purge { state } => {
            let before = model.jobs.len();
            model.jobs.retain(|_, job| job.state != state);
            format!("{}", before - model.jobs.len())
        }
        Op::Config { paused, concurrency, rate } => {
            model.paused = paused.unwrap_or(model.paused);
            model.concurrency = concurrency.unwrap_or(model.concurrency);
            if rate == Some(0) {
                model.logged = 0;
            }
            model.rate = rate.unwrap_or(model.rate);
            let concurrency = (model.concurrency > 0).then_some(model.concurrency);
            let rate = (model.rate > 0).then_some(echomq::Rate { claims: model.rate, per: RATE_PERIOD });
            let [keep_done, keep_dead, keep_cancelled] = common::default_retention();
            let settings = Settings {
                paused: model.paused,
                concurrency,
                rate,
                keep_done,
                keep_dead,
                keep_cancelled,
                events: echomq::EventLog::default(),
                protocol: None,
            };
            format!("Ok({})", common::settings_shown(&settings))
        }
        Op::Progress { slot, stale } => {
            let token = token_for(tokens, slot, stale);
            model.fenced(slot, token, |job| {
                job.progress = Some(format!("at {token}"));
                "()".into()
            })
        }
        Op::Schedule { name, next } => {
            let added = model.schedules.insert(name, (vec![b'd'; name + 1], next)).is_none();
            format!("{added:?}")
        }
        Op::Unschedule { name } => format!("{:?}", model.schedules.remove(&name).is_some()),
        Op::Schedules { .. } => {
            // Every tick in these sequences is long past, so all are due.
            let mut listed: Vec<Stored> = model
                .schedules
                .iter()
                .map(|(name, (definition, next))| Stored {
                    name: schedule_name(*name),
                    definition: definition.clone(),
                    next: *next,
                })
                .collect();
            listed.sort_by(|a, b| (a.next, &a.name).cmp(&(b.next, &b.name)));
            format!("{listed:?}")
        }
        Op::Fire { slot, name, tick, skip } => match model.schedules.get_mut(&name) {
            Some((_, next)) if *next == tick => {
                *next = tick + 1000;
                if skip || model.jobs.contains_key(&slot) {
                    "MovedOn".into()
                } else {
                    model.jobs.insert(slot, Job::plain());
                    "Enqueued".into()
                }
            }
            _ => "Stale".into(),
        },
        Op::Inspect { slot } => {
            let job = model.jobs.get(&slot);
            let seen = job.map(|job| (job.state, job.attempts, job.progress.clone().map(Ok::<_, ()>)));
            format!("{seen:?}")
        }
        // The model knows no groups: its sequences are `op`'s, which make none.
        Op::EnqueueGrouped { .. } | Op::Group { .. } => unreachable!("{op:?}: not one of op()'s"),
    };
    let got = perform(&h.queue, &model.ids, tokens, op).await;
    (got, want)
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
            let mut model = Model {
                ids: (0..SLOTS).map(|_| JobId::mint()).collect(),
                jobs: BTreeMap::new(),
                paused: false,
                concurrency: 0,
                rate: 0,
                logged: 0,
                schedules: BTreeMap::new(),
                unique_holder: None,
            };
            let (mut floor, mut tokens) = (BTreeMap::new(), Tokens::new());
            for (n, op) in ops.iter().enumerate() {
                let (got, want) = step(&h, &mut model, &mut tokens, op).await;
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
