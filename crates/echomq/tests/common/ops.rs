//! Random transition sequences, shared by the model test and the conformance
//! suite: the ops, their proptest strategy, and [`perform`], which runs one op
//! through a [`Queue`] and renders its reply as text to compare.

use std::collections::BTreeMap;
use std::time::Duration;

use echomq::executor::execute;
use echomq::transition::{
    Ack, AckMany, Config, EnqueueMany, Extend, Fail, Fire, Progress, Release, Schedule, Schedules, Transition,
};
use echomq::{EnqueueOptions, Error, Held, JobId, Lease, Limit, Queue, Rate, RetryPolicy, State, Upkeep};
use proptest::prelude::*;

/// How many distinct jobs a sequence plays with.
pub const SLOTS: usize = 4;
/// A lease or delay that is over by the next reap or promote.
pub const SHORT: Duration = Duration::from_millis(1);
/// A lease or delay that never runs out within a test.
pub const LONG: Duration = Duration::from_secs(600);
/// A rate's period: longer than any sequence, so its count is the model's.
pub const RATE_PERIOD: Duration = Duration::from_secs(3600);

/// One step of a sequence. Jobs are named by slot; `stale` sends a token one
/// past the last claim's.
#[derive(Clone, Debug)]
pub enum Op {
    /// `attempts`: the job's own maximum attempts, its policy; `unique`:
    /// dedup by the one key [`UNIQUE_KEY`], held for an hour.
    Enqueue {
        slot: usize,
        priority: i64,
        delay: Option<bool>,
        attempts: Option<u64>,
        unique: bool,
    },
    /// ENQUEUE into one of [`GROUPS`] groups (PROTOCOL.md §7.9); the
    /// grouped sequences only (the model knows no groups).
    EnqueueGrouped {
        slot: usize,
        priority: i64,
        group: usize,
    },
    /// GROUP: one group's weight, cap, rate (claims per [`RATE_PERIOD`]) and
    /// pause set, 0 removing a cap or a rate; the grouped sequences only.
    Group {
        group: usize,
        weight: u64,
        cap: u64,
        rate: u64,
        paused: bool,
    },
    /// One ENQUEUEMANY of one to three jobs, a job perhaps named twice.
    EnqueueMany {
        slots: Vec<usize>,
    },
    Claim {
        count: u64,
        short: bool,
    },
    Ack {
        slot: usize,
        stale: bool,
    },
    /// One ACKMANY of one to three jobs, one of them perhaps named twice.
    AckMany {
        jobs: Vec<(usize, bool)>,
    },
    Fail {
        slot: usize,
        stale: bool,
        max_attempts: u64,
        short: bool,
    },
    Extend {
        slot: usize,
        stale: bool,
    },
    Release {
        slot: usize,
        stale: bool,
        /// The releaser's maximum, for a job with none of its own (REFUND).
        max_attempts: u64,
    },
    Reap {
        max_attempts: u64,
    },
    Promote,
    Cancel {
        slot: usize,
    },
    Retry {
        slot: usize,
    },
    Purge {
        state: State,
    },
    /// CONFIG: pause or resume, set or remove (0) the concurrency limit, and
    /// set or remove (0) a rate per a long period (claims a sequence makes
    /// stay in the window).
    Config {
        paused: Option<bool>,
        concurrency: Option<u64>,
        rate: Option<u64>,
    },
    Progress {
        slot: usize,
        stale: bool,
    },
    Inspect {
        slot: usize,
    },
    Schedule {
        name: usize,
        next: u64,
    },
    Unschedule {
        name: usize,
    },
    Schedules {
        due: bool,
    },
    Fire {
        slot: usize,
        name: usize,
        tick: u64,
        skip: bool,
    },
}

/// The dedup key of every unique enqueue in a sequence.
pub const UNIQUE_KEY: &str = "k";

/// How many groups a grouped sequence plays with.
pub const GROUPS: usize = 2;

/// A group's name by number.
pub fn group_name(n: usize) -> String {
    format!("g{n}")
}

/// How many schedule names a sequence plays with.
pub const NAMES: usize = 2;

/// A schedule's name by number.
pub fn schedule_name(n: usize) -> String {
    format!("s{n}")
}

pub fn op() -> impl Strategy<Value = Op> {
    let slot = 0..SLOTS;
    prop_oneof![
        4 => (
            slot.clone(),
            -1i64..=1,
            proptest::option::of(any::<bool>()),
            proptest::option::weighted(0.3, 0u64..=3),
            prop::bool::weighted(0.2)
        )
            .prop_map(|(slot, priority, delay, attempts, unique)| Op::Enqueue {
                slot,
                priority,
                delay,
                attempts,
                unique
            }),
        2 => prop::collection::vec(slot.clone(), 1..=3).prop_map(|slots| Op::EnqueueMany { slots }),
        4 => (1u64..=3, any::<bool>()).prop_map(|(count, short)| Op::Claim { count, short }),
        3 => (slot.clone(), prop::bool::weighted(0.2)).prop_map(|(slot, stale)| Op::Ack { slot, stale }),
        2 => prop::collection::vec((slot.clone(), prop::bool::weighted(0.2)), 1..=3)
            .prop_map(|jobs| Op::AckMany { jobs }),
        2 => (slot.clone(), prop::bool::weighted(0.2), 1u64..=3, any::<bool>())
            .prop_map(|(slot, stale, max_attempts, short)| Op::Fail { slot, stale, max_attempts, short }),
        1 => (slot.clone(), prop::bool::weighted(0.3)).prop_map(|(slot, stale)| Op::Extend { slot, stale }),
        1 => (slot.clone(), prop::bool::weighted(0.3), 1u64..=3)
            .prop_map(|(slot, stale, max_attempts)| Op::Release { slot, stale, max_attempts }),
        2 => (1u64..=3).prop_map(|max_attempts| Op::Reap { max_attempts }),
        2 => Just(Op::Promote),
        1 => slot.clone().prop_map(|slot| Op::Cancel { slot }),
        1 => slot.clone().prop_map(|slot| Op::Retry { slot }),
        1 => prop_oneof![Just(State::Done), Just(State::Dead), Just(State::Cancelled)]
            .prop_map(|state| Op::Purge { state }),
        1 => (
            proptest::option::of(prop::bool::weighted(0.3)),
            proptest::option::of(0u64..=3),
            proptest::option::of(0u64..=4)
        )
            .prop_map(|(paused, concurrency, rate)| Op::Config { paused, concurrency, rate }),
        1 => (slot.clone(), prop::bool::weighted(0.3)).prop_map(|(slot, stale)| Op::Progress { slot, stale }),
        1 => slot.clone().prop_map(|slot| Op::Inspect { slot }),
        1 => (0..NAMES, 1u64..=3).prop_map(|(name, next)| Op::Schedule { name, next: next * 1000 }),
        1 => (0..NAMES).prop_map(|name| Op::Unschedule { name }),
        1 => any::<bool>().prop_map(|due| Op::Schedules { due }),
        2 => (slot.clone(), 0..NAMES, 1u64..=3, prop::bool::weighted(0.2))
            .prop_map(|(slot, name, tick, skip)| Op::Fire { slot, name, tick: tick * 1000, skip }),
    ]
}

/// [`op`]'s, and grouped enqueues and group settings among them.
pub fn grouped_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => op(),
        3 => (0..SLOTS, -1i64..=1, 0..GROUPS)
            .prop_map(|(slot, priority, group)| Op::EnqueueGrouped { slot, priority, group }),
        1 => (0..GROUPS, 1u64..=3, 0u64..=2, 0u64..=2, prop::bool::weighted(0.2))
            .prop_map(|(group, weight, cap, rate, paused)| Op::Group { group, weight, cap, rate, paused }),
    ]
}

/// The last token each slot's claim handed out.
pub type Tokens = BTreeMap<usize, u64>;

/// The token a fenced op sends: the last claim's, or one past it when stale.
pub fn token_for(tokens: &Tokens, slot: usize, stale: bool) -> u64 {
    let last = tokens.get(&slot).copied().unwrap_or(0);
    if stale {
        last + 1
    } else {
        last.max(1)
    }
}

/// A reply as text: its value's Debug form, or the protocol code of a refusal.
pub fn show<T: std::fmt::Debug>(result: Result<T, Error>) -> String {
    match result {
        Ok(value) => format!("{value:?}"),
        Err(err) => err.code().map_or_else(|| format!("other: {err}"), |code| code.to_string()),
    }
}

/// Run `op` on `q`; its reply, rendered. Extend's deadline renders as `deadline`.
pub async fn perform(q: &Queue, ids: &[JobId], tokens: &mut Tokens, op: &Op) -> String {
    let claimed = |slot: usize, stale: bool| echomq::Claimed {
        id: ids[slot].clone(),
        token: token_for(tokens, slot, stale),
        payload: vec![],
        policy: None,
        headers: Default::default(),
    };
    match *op {
        Op::Enqueue { slot, priority, delay, attempts, unique } => {
            let mut options = EnqueueOptions::default().id(ids[slot].clone()).priority(priority);
            if let Some(n) = attempts {
                options = options.attempts(n);
            }
            if unique {
                options = options.unique(UNIQUE_KEY, Duration::from_secs(3600));
            }
            if let Some(short) = delay {
                options = options.delay(if short { SHORT } else { LONG });
            }
            show(q.enqueue_with(vec![slot as u8], options).await.map(|e| e.duplicate))
        }
        Op::EnqueueGrouped { slot, priority, group } => {
            let options =
                EnqueueOptions::default().id(ids[slot].clone()).priority(priority).group(group_name(group));
            show(q.enqueue_with(vec![slot as u8], options).await.map(|e| e.duplicate))
        }
        Op::Group { group, weight, cap, rate, paused } => {
            let cap = if cap == 0 { Limit::Unlimited } else { Limit::To(cap) };
            let rate =
                if rate == 0 { Limit::Unlimited } else { Limit::To(Rate { claims: rate, per: RATE_PERIOD }) };
            let call =
                echomq::Group::new(group_name(group)).weight(weight).cap(cap).rate(rate).paused(paused);
            show(run(q, &call).await)
        }
        Op::EnqueueMany { ref slots } => {
            let jobs = slots.iter().map(|&slot| (ids[slot].clone(), vec![slot as u8])).collect();
            show(
                execute(&**q.executor(), q.keyspace(), &EnqueueMany { jobs, parent: None, group: None })
                    .await,
            )
        }
        Op::Claim { count, short } => {
            let claims = q.claim_many(if short { SHORT } else { LONG }, count, None).await;
            if let Ok(claims) = &claims {
                for job in &claims.jobs {
                    let slot = ids.iter().position(|id| *id == job.id).expect("a known id");
                    tokens.insert(slot, job.token);
                }
            }
            show(claims.map(|claims| {
                let jobs: Vec<_> = claims
                    .jobs
                    .into_iter()
                    .map(Lease::into_job)
                    .map(|j| (j.id, j.token, j.payload))
                    .collect();
                // The rate's wait depends on the clock; which limit held is compared.
                let held = claims.held.map(|held| match held {
                    Held::Wait(_) => "Rate".to_owned(),
                    other => format!("{other:?}"),
                });
                (jobs, held)
            }))
        }
        Op::Ack { slot, stale } => show(run(q, &Ack::of(&claimed(slot, stale))).await),
        Op::AckMany { ref jobs } => {
            let acks = jobs.iter().map(|&(slot, stale)| Ack::of(&claimed(slot, stale))).collect();
            match run(q, &AckMany { acks }).await {
                Ok(outcomes) => format!("{:?}", outcomes.into_iter().map(show).collect::<Vec<_>>()),
                Err(err) => show::<()>(Err(err)),
            }
        }
        Op::Fail { slot, stale, max_attempts, short } => {
            let backoff = if short { Duration::ZERO } else { LONG };
            let policy = RetryPolicy::new()
                .max_attempts(max_attempts)
                .backoff(backoff)
                .max_backoff(backoff)
                .jitter(0.0);
            let job = claimed(slot, stale);
            let backoff = policy.delay_for(&job.id, job.token);
            let fail = Fail { id: job.id, token: job.token, max_attempts, backoff, error: "boom".to_owned() };
            show(run(q, &fail).await)
        }
        Op::Extend { slot, stale } => match run(q, &extend(claimed(slot, stale))).await {
            Ok(_) => "deadline".to_owned(),
            other => show(other),
        },
        Op::Release { slot, stale, max_attempts } => {
            let job = claimed(slot, stale);
            show(run(q, &Release { id: job.id, token: job.token, max_attempts }).await)
        }
        Op::Reap { max_attempts } => {
            show(Upkeep::of(q).reap(max_attempts).await.map(|r| (r.requeued, r.dead)))
        }
        Op::Promote => show(Upkeep::of(q).promote().await),
        Op::Cancel { slot } => show(q.cancel(&ids[slot]).await),
        Op::Retry { slot } => show(q.retry(&ids[slot]).await),
        Op::Purge { state } => show(Upkeep::of(q).purge(state, Duration::ZERO).await),
        Op::Config { paused, concurrency, rate } => {
            // The model says a removal as 0, as the wire does.
            let concurrency = concurrency.map(|n| if n == 0 { Limit::Unlimited } else { Limit::To(n) });
            let rate = rate.map(|claims| match claims {
                0 => Limit::Unlimited,
                claims => Limit::To(Rate { claims, per: RATE_PERIOD }),
            });
            let mut change = Config::default();
            change = paused.map_or(change, |paused| change.paused(paused));
            change = concurrency.map_or(change, |limit| change.concurrency(limit));
            change = rate.map_or(change, |limit| change.rate(limit));
            match q.configure(change).await {
                Ok(settings) => format!("Ok({})", crate::common::settings_shown(&settings)),
                Err(err) => show::<()>(Err(err)),
            }
        }
        Op::Progress { slot, stale } => {
            let job = claimed(slot, stale);
            let value = progress_value(&job);
            show(run(q, &Progress { id: job.id, token: job.token, value }).await)
        }
        Op::Schedule { name, next } => {
            let call = Schedule { name: schedule_name(name), definition: vec![b'd'; name + 1], next };
            show(execute(&**q.executor(), q.keyspace(), &call).await)
        }
        Op::Unschedule { name } => show(q.schedules().remove(&schedule_name(name)).await),
        Op::Schedules { due } => {
            let call = Schedules { due, limit: 1000 };
            show(execute(&**q.executor(), q.keyspace(), &call).await.map(|listed| listed.schedules))
        }
        Op::Fire { slot, name, tick, skip } => {
            let call = Fire {
                id: ids[slot].clone(),
                payload: vec![slot as u8],
                name: schedule_name(name),
                tick,
                next: tick + 1000,
                skip,
            };
            show(execute(&**q.executor(), q.keyspace(), &call).await)
        }
        Op::Inspect { slot } => show(q.inspect(&ids[slot]).await.map(|found| {
            found.map(|job| (job.record.state, job.record.attempts, job.progress.map(String::from_utf8)))
        })),
    }
}

/// The value a PROGRESS op reports: the token it sends, so that a later
/// INSPECT shows which report stuck.
/// Run one transition on `q`, as a holder of any token may send it.
async fn run<T: Transition>(q: &Queue, call: &T) -> echomq::Result<T::Output> {
    execute(&**q.executor(), q.keyspace(), call).await
}

/// EXTEND of `job` by a long lease.
fn extend(job: echomq::Claimed) -> Extend {
    Extend { id: job.id, token: job.token, lease: LONG }
}

pub fn progress_value(job: &echomq::Claimed) -> Vec<u8> {
    format!("at {}", job.token).into_bytes()
}
