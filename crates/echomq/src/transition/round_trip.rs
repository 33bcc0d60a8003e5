//! ARGV is encoded by the host's type and parsed by the core's: two types,
//! tied here. For every transition, host values at the edges of every range
//! and with every option are encoded as the host sends them ([`Call::new`])
//! and must be accepted by the core's `parse` ([`Name::parse_only`]); where
//! the values are observable, random ones are run on the core's in-memory
//! store ([`Embedded`]) and must come back as they were sent.

use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use echomq_core::memory::{Dump, ManualClock};
use echomq_core::{limits, Backoff, Name, Policy, Role};
use proptest::prelude::*;

use super::*;
use crate::executor::{execute, Call, Embedded};
use crate::keyspace::Keyspace;
use crate::record::State;

/// The server's now on the store the observable round trips run on, ms.
const NOW: u64 = 1_000_000;

fn keyspace() -> Keyspace {
    Keyspace::new("round-trip").expect("a valid queue name")
}

fn id(n: u32) -> JobId {
    format!("JOB_{n:026}").parse().expect("a branded id")
}

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// `limits::X`'s first and last value.
fn ends(range: std::ops::RangeInclusive<u64>) -> [u64; 2] {
    [*range.start(), *range.end()]
}

/// Each call as the host sends it.
fn encoded<T: Transition>(values: impl IntoIterator<Item = T>) -> Vec<Call> {
    let keys = keyspace();
    values.into_iter().map(|value| Call::new(&keys, &value).expect("the host's checks pass")).collect()
}

/// Host values of transition `name`: the ends of every range it takes, and
/// every option. An exhaustive match on [`Name`], with no `_` arm: a
/// transition added to the core without its round trip does not compile.
fn edges(name: Name) -> Vec<Call> {
    let [lease_min, lease_max] = ends(limits::LEASE_MS).map(ms);
    let [count_min, count_max] = ends(limits::CLAIM_COUNT);
    let [token_min, token_max] = ends(limits::TOKEN);
    let [attempts_min, attempts_max] = ends(limits::MAX_ATTEMPTS);
    let [delay_min, delay_max] = ends(limits::DELAY_MS).map(ms);
    let [limit_min, limit_max] = ends(limits::SWEEP_LIMIT);
    let [at_min, at_max] = ends(limits::AT_MS);
    let finished = [State::Done, State::Dead, State::Cancelled];
    let unfinished = [State::Pending, State::Delayed, State::Active];
    let ack = |token, result: Option<Vec<u8>>| Ack { id: id(1), token, result };
    let acks = [None, Some(Vec::new()), Some(vec![b'r'; limits::MAX_RESULT])]
        .into_iter()
        .flat_map(|result| [ack(token_min, result.clone()), ack(token_max, result)]);
    let schedule_names = ["s".to_owned(), "s".repeat(limits::MAX_SCHEDULE_NAME)];
    match name {
        Name::Enqueue => encoded(enqueues()),
        Name::EnqueueMany => encoded([
            EnqueueMany { jobs: vec![(id(1), Vec::new())] },
            EnqueueMany { jobs: vec![(id(1), vec![b'p'; limits::MAX_PAYLOAD])] },
            EnqueueMany {
                jobs: (0..*limits::ENQUEUES.end() as u32).map(|n| (id(n), b"p".to_vec())).collect(),
            },
        ]),
        Name::Claim => encoded(
            [lease_min, lease_max]
                .into_iter()
                .flat_map(|lease| [count_min, count_max].map(|count| Claim { lease, count })),
        ),
        Name::Ack => encoded(acks),
        Name::AckNext => encoded(acks.flat_map(|ack| {
            [(lease_min, count_min), (lease_max, count_max)].map(|(lease, count)| AckNext {
                ack: ack.clone(),
                lease,
                count,
            })
        })),
        Name::AckMany => encoded([
            AckMany { acks: acks.collect() },
            AckMany { acks: vec![ack(token_min, None); *limits::ACKS.end() as usize] },
        ]),
        Name::Fail => encoded([token_min, token_max].into_iter().flat_map(|token| {
            [
                (attempts_min, delay_min, String::new()),
                (attempts_max, delay_max, "e".repeat(limits::MAX_ERROR_TEXT)),
            ]
            .map(|(max_attempts, backoff, error)| Fail {
                id: id(1),
                token,
                max_attempts,
                backoff,
                error,
            })
        })),
        Name::Extend => {
            encoded([(token_min, lease_min), (token_max, lease_max)].map(|(token, lease)| Extend {
                id: id(1),
                token,
                lease,
            }))
        }
        Name::Release => encoded(
            [(token_min, attempts_min), (token_max, attempts_max)].map(|(token, max_attempts)| Release {
                id: id(1),
                token,
                max_attempts,
            }),
        ),
        Name::Reap => encoded(
            [(attempts_min, limit_min), (attempts_max, limit_max)]
                .map(|(max_attempts, limit)| Reap { max_attempts, limit }),
        ),
        Name::Promote => encoded([limit_min, limit_max].map(|limit| Promote { limit })),
        Name::Purge => encoded(finished.into_iter().flat_map(|state| {
            let [age_min, age_max] = ends(limits::AGE_MS).map(ms);
            [(age_min, limit_min), (age_max, limit_max)].map(|(age, limit)| Purge { state, age, limit })
        })),
        Name::Cancel => encoded([Cancel { id: id(1) }]),
        Name::Retry => encoded([Retry { id: id(1) }]),
        Name::Inspect => encoded([Inspect { id: id(1) }]),
        Name::Stats => encoded([Stats]),
        Name::Counts => encoded([Span::Minutes, Span::Hours].map(|span| Counts { span })),
        Name::Config => encoded(configs()),
        Name::Progress => encoded(
            [(token_min, Vec::new()), (token_max, vec![b'v'; limits::MAX_PROGRESS])]
                .map(|(token, value)| Progress { id: id(1), token, value }),
        ),
        Name::Schedule => encoded(schedule_names.iter().flat_map(|name| {
            [(Vec::new(), at_min), (vec![b'd'; limits::MAX_DEFINITION], at_max)]
                .map(|(definition, next)| Schedule { name: name.clone(), definition, next })
        })),
        Name::Unschedule => encoded(schedule_names.iter().map(|name| Unschedule { name: name.clone() })),
        Name::Schedules => encoded(
            [false, true]
                .into_iter()
                .flat_map(|due| [limit_min, limit_max].map(|limit| Schedules { due, limit })),
        ),
        Name::Fire => encoded(schedule_names.iter().flat_map(|name| {
            [(Vec::new(), at_min, false), (vec![b'p'; limits::MAX_PAYLOAD], at_max - 1, true)].map(
                |(payload, tick, skip)| Fire {
                    id: id(1),
                    payload,
                    name: name.clone(),
                    tick,
                    next: at_max,
                    skip,
                },
            )
        })),
        Name::Drain => encoded(
            unfinished
                .into_iter()
                .flat_map(|state| [limit_min, limit_max].map(|limit| Drain { state, limit })),
        ),
        Name::Remove => encoded(
            [State::Pending, State::Active, State::Delayed, State::Done, State::Dead, State::Cancelled]
                .into_iter()
                .flat_map(|state| [1, 1000].map(|n| Remove { state, ids: (1..=n).map(id).collect() })),
        ),
        Name::Obliterate => encoded([Obliterate]),
        Name::Trim => encoded(
            finished.into_iter().flat_map(|state| [limit_min, limit_max].map(|limit| Trim { state, limit })),
        ),
        Name::Defer => encoded([false, true].into_iter().flat_map(|pause_queue| {
            [(token_min, delay_min, attempts_min), (token_max, delay_max, attempts_max)].map(
                |(token, delay, max_attempts)| Defer { id: id(1), token, delay, max_attempts, pause_queue },
            )
        })),
        Name::Batch => encoded([
            Batch { id: "b".into(), callback: id(0), payload: Vec::new(), jobs: vec![id(1)] },
            Batch {
                id: "b_-.:".repeat(limits::MAX_BATCH_ID / 5),
                callback: id(0),
                payload: vec![b'p'; limits::MAX_PAYLOAD],
                jobs: (1..=*limits::BATCH_SIZE.end() as u32).map(id).collect(),
            },
        ]),
        Name::Settle => encoded([limit_min, limit_max].map(|limit| Settle { limit })),
    }
}

/// ENQUEUEs at the ends of every range, with each option and all of them.
fn enqueues() -> Vec<Enqueue> {
    let plain = Enqueue {
        id: id(1),
        payload: Vec::new(),
        priority: 0,
        due: Due::Now,
        policy: None,
        unique: None,
        headers: Headers::new(),
    };
    let [delay_min, delay_max] = ends(limits::DELAY_MS);
    let [at_min, at_max] = ends(limits::AT_MS);
    let [attempts_min, attempts_max] = ends(limits::MAX_ATTEMPTS);
    let [timeout_min, timeout_max] = ends(limits::TIMEOUT_MS);
    let [hold_min, hold_max] = ends(limits::UNIQUE_MS).map(ms);
    let policies = [
        Policy {
            attempts: Some(attempts_min),
            backoff: Some(Backoff::Fixed(delay_min)),
            timeout: Some(timeout_min),
        },
        Policy {
            attempts: Some(attempts_max),
            backoff: Some(Backoff::Exponential(delay_max)),
            timeout: Some(timeout_max),
        },
        Policy { attempts: Some(1), ..Policy::default() },
        Policy { backoff: Some(Backoff::Fixed(1)), ..Policy::default() },
        Policy { timeout: Some(1), ..Policy::default() },
    ];
    let uniques = [
        Unique { key: "u".into(), hold: hold_min, until_finished: false },
        Unique { key: "u".repeat(limits::MAX_UNIQUE_KEY), hold: hold_max, until_finished: true },
    ];
    let dues = [
        Due::After(ms(delay_min)),
        Due::After(ms(delay_max)),
        Due::At(UNIX_EPOCH + ms(at_min)),
        Due::At(UNIX_EPOCH + ms(at_max)),
    ];
    let big_headers: Headers = [("h".to_owned(), "v".repeat(limits::MAX_HEADERS - 10))].into();
    let mut all = vec![Enqueue { payload: vec![b'p'; limits::MAX_PAYLOAD], ..plain.clone() }];
    all.extend(
        [*limits::PRIORITY.start(), -1, 1, *limits::PRIORITY.end()]
            .map(|priority| Enqueue { priority, ..plain.clone() }),
    );
    all.extend(dues.map(|due| Enqueue { due, ..plain.clone() }));
    all.extend(policies.map(|policy| Enqueue { policy: Some(policy), ..plain.clone() }));
    all.extend(uniques.clone().map(|unique| Enqueue { unique: Some(unique), ..plain.clone() }));
    all.extend(
        [big_headers.clone(), [("a".to_owned(), String::new())].into()]
            .map(|headers| Enqueue { headers, ..plain.clone() }),
    );
    all.push(Enqueue {
        payload: b"p".to_vec(),
        priority: -7,
        due: dues[1],
        policy: Some(policies[1]),
        unique: Some(uniques[1].clone()),
        headers: big_headers,
        ..plain
    });
    all
}

/// CONFIGs: a read, each option alone at the ends of its range, and all together.
fn configs() -> Vec<Config> {
    let read = Config::default();
    let [keep_ms_min, keep_ms_max] = ends(limits::KEEP_MS).map(ms);
    let [keep_count_min, keep_count_max] = ends(limits::KEEP_COUNT);
    let [per_min, per_max] = ends(limits::RATE_PERIOD_MS).map(ms);
    let retentions = [
        Retention { age: None, count: None },
        Retention { age: Some(keep_ms_min), count: Some(keep_count_min) },
        Retention { age: Some(keep_ms_max), count: Some(keep_count_max) },
    ];
    let mut all = vec![read];
    all.extend([false, true].map(|paused| Config { paused: Some(paused), ..read }));
    all.extend(ends(limits::CONCURRENCY).map(|n| Config { concurrency: Some(limit(n)), ..read }));
    all.extend(
        [(0, per_min), (1, per_min), (*limits::RATE.end(), per_max)]
            .map(|rate| Config { rate: Some(rate_limit(rate)), ..read }),
    );
    for keep in retentions {
        all.extend([
            Config { keep_done: Some(keep), ..read },
            Config { keep_dead: Some(keep), ..read },
            Config { keep_cancelled: Some(keep), ..read },
        ]);
    }
    all.extend(ends(limits::EVENTS).map(|n| Config { events: Some(event_log(n)), ..read }));
    all.push(Config {
        paused: Some(true),
        concurrency: Some(Limit::To(3)),
        rate: Some(Limit::To(Rate { claims: 5, per: per_max })),
        keep_done: Some(retentions[2]),
        keep_dead: Some(retentions[1]),
        keep_cancelled: Some(retentions[0]),
        events: Some(EventLog::Keep(7)),
    });
    all
}

/// A limit as the wire says it: 0 is none.
fn limit(n: u64) -> Limit<u64> {
    if n == 0 {
        Limit::Unlimited
    } else {
        Limit::To(n)
    }
}

/// A rate as the wire says it: 0 claims is none.
fn rate_limit((claims, per): (u64, Duration)) -> Limit<Rate> {
    if claims == 0 {
        Limit::Unlimited
    } else {
        Limit::To(Rate { claims, per })
    }
}

/// An event log's length as the wire says it: 0 is off.
fn event_log(n: u64) -> EventLog {
    if n == 0 {
        EventLog::Off
    } else {
        EventLog::Keep(n)
    }
}

/// Every transition's edge values, as the host encodes them, are what the
/// core's `parse` accepts.
#[test]
fn the_core_parses_every_transition_as_the_host_encodes_it() {
    for name in Name::ALL {
        let calls = edges(*name);
        assert!(!calls.is_empty(), "{name}: no values");
        for call in calls {
            assert_eq!(call.name, *name, "{name}: a call of another transition");
            let keys: Vec<&[u8]> = call.keys.iter().map(|key| key.as_bytes()).collect();
            let args: Vec<&[u8]> = call.args.iter().map(Vec::as_slice).collect();
            let parsed = name.parse_only(&keys, &args);
            assert!(
                parsed.is_ok(),
                "{name}: {parsed:?} refused {:?}",
                call.args.iter().map(|a| a.len()).collect::<Vec<_>>()
            );
        }
    }
}

/// An executor on the core's in-memory store at [`NOW`], and a runtime to drive it.
fn store() -> (Embedded, tokio::runtime::Runtime) {
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
    (Embedded::with_clock(Arc::new(ManualClock::new(NOW))), runtime)
}

/// The content of `key` in `store`.
fn dumped(store: &Embedded, key: &str) -> Option<Dump> {
    store.dump().remove(key.as_bytes())
}

/// `member`'s score in the sorted set `key`.
fn score(store: &Embedded, key: &str, member: &str) -> Option<f64> {
    match dumped(store, key)? {
        Dump::Zset(members) => members.into_iter().find(|(m, _)| m == member.as_bytes()).map(|(_, s)| s),
        other => panic!("{key} is {other:?}, not a sorted set"),
    }
}

/// `field` of the hash `key`.
fn field(store: &Embedded, key: &str, field: &str) -> Option<Vec<u8>> {
    match dumped(store, key)? {
        Dump::Hash(fields) => fields.get(field.as_bytes()).cloned(),
        other => panic!("{key} is {other:?}, not a hash"),
    }
}

fn policy() -> impl Strategy<Value = Option<Policy>> {
    let backoff = prop_oneof![
        limits::DELAY_MS.prop_map(Backoff::Fixed),
        limits::DELAY_MS.prop_map(Backoff::Exponential)
    ];
    proptest::option::of(
        (
            proptest::option::of(limits::MAX_ATTEMPTS),
            proptest::option::of(backoff),
            proptest::option::of(limits::TIMEOUT_MS),
        )
            .prop_map(|(attempts, backoff, timeout)| Policy { attempts, backoff, timeout }),
    )
}

fn due() -> impl Strategy<Value = Due> {
    prop_oneof![
        Just(Due::Now),
        limits::DELAY_MS.prop_map(|delay| Due::After(ms(delay))),
        limits::AT_MS.prop_map(|at| Due::At(UNIX_EPOCH + ms(at))),
    ]
}

fn unique() -> impl Strategy<Value = Option<Unique>> {
    let key = proptest::collection::vec(proptest::char::range('!', '~'), 1..=limits::MAX_UNIQUE_KEY);
    proptest::option::of((key, limits::UNIQUE_MS, any::<bool>()).prop_map(|(key, hold, until_finished)| {
        Unique { key: key.into_iter().collect(), hold: ms(hold), until_finished }
    }))
}

fn enqueue() -> impl Strategy<Value = Enqueue> {
    let headers = proptest::collection::btree_map("[a-z-]{1,12}", "\\PC{0,40}", 0..5);
    (proptest::collection::vec(any::<u8>(), 0..64), limits::PRIORITY, due(), policy(), unique(), headers)
        .prop_map(|(payload, priority, due, policy, unique, headers)| Enqueue {
            id: JobId::mint(),
            payload,
            priority,
            due,
            policy,
            unique,
            headers,
        })
}

/// The ms a due time stands for.
fn due_ms(due: Due) -> Option<u64> {
    match due {
        Due::Now => None,
        Due::After(delay) => Some(NOW + delay.as_millis() as u64),
        Due::At(at) => Some(at.duration_since(UNIX_EPOCH).expect("after the epoch").as_millis() as u64),
    }
}

fn retention() -> impl Strategy<Value = Option<Retention>> {
    let age = proptest::option::of(limits::KEEP_MS.prop_map(ms));
    proptest::option::of(
        (age, proptest::option::of(limits::KEEP_COUNT)).prop_map(|(age, count)| Retention { age, count }),
    )
}

fn config() -> impl Strategy<Value = Config> {
    let rate = proptest::option::of((limits::RATE, limits::RATE_PERIOD_MS.prop_map(ms)));
    (
        proptest::option::of(any::<bool>()),
        proptest::option::of(limits::CONCURRENCY),
        rate,
        (retention(), retention(), retention()),
        proptest::option::of(limits::EVENTS),
    )
        .prop_map(|(paused, concurrency, rate, (keep_done, keep_dead, keep_cancelled), events)| Config {
            paused,
            concurrency: concurrency.map(limit),
            rate: rate.map(rate_limit),
            keep_done,
            keep_dead,
            keep_cancelled,
            events: events.map(event_log),
        })
}

/// A retention as CONFIG reads it back: 0 (or none) is "any".
fn as_read(retention: Retention) -> Retention {
    Retention { age: retention.age.filter(|age| !age.is_zero()), count: retention.count.filter(|n| *n > 0) }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// An ENQUEUE's values come back from the core as the host sent them:
    /// the payload, the policy and the headers by INSPECT; the priority,
    /// the due time and the UNIQUE hold from the keys it wrote.
    #[test]
    fn an_enqueue_comes_back_as_the_host_sent_it(call in enqueue()) {
        let (store, runtime) = store();
        let keys = keyspace();
        let admitted = runtime.block_on(execute(&store, &keys, &call));
        prop_assert_eq!(admitted.ok(), Some(Admission::Enqueued));
        let job = runtime.block_on(execute(&store, &keys, &Inspect { id: call.id.clone() }));
        let job = job.expect("INSPECT answers").expect("the job is there");
        let id = call.id.as_str();
        prop_assert_eq!(&job.record.payload, &call.payload);
        prop_assert_eq!(job.policy, call.policy.filter(|policy| *policy != Policy::default()));
        prop_assert_eq!(&job.headers, &call.headers);
        let key = |role| keys.role(role, Some(&call.id)).expect("a key");
        match due_ms(call.due).filter(|due| *due > NOW) {
            Some(due) => {
                prop_assert_eq!(job.record.state, State::Delayed);
                prop_assert_eq!(score(&store, &key(Role::Delayed), id), Some(due as f64));
            }
            None => {
                prop_assert_eq!(job.record.state, State::Pending);
                prop_assert_eq!(score(&store, &key(Role::Pending), id), Some(call.priority as f64));
            }
        }
        let priority = field(&store, &key(Role::Priority), id);
        prop_assert_eq!(priority, (call.priority != 0).then(|| call.priority.to_string().into_bytes()));
        if let Some(unique) = &call.unique {
            let held = field(&store, &key(Role::Unique), &unique.key);
            let mode = if unique.until_finished { "1" } else { "0" };
            prop_assert_eq!(held, Some(format!("{mode}:{id}").into_bytes()));
            let until = score(&store, &key(Role::UniqueUntil), &unique.key);
            prop_assert_eq!(until, Some((NOW + unique.hold.as_millis() as u64) as f64));
        }
    }

    /// A CONFIG's values come back in the settings it answers, each as the
    /// protocol reads it (0 removes a limit, keeps any age or count).
    #[test]
    fn a_config_comes_back_as_the_host_sent_it(call in config()) {
        let (store, runtime) = store();
        let settings = runtime.block_on(execute(&store, &keyspace(), &call)).expect("CONFIG answers");
        let default = runtime.block_on(execute(&store, &keyspace(), &Config::default())).expect("a read");
        prop_assert_eq!(settings, default, "a read after answers the same");
        if let Some(paused) = call.paused {
            prop_assert_eq!(settings.paused, paused);
        }
        if let Some(concurrency) = call.concurrency {
            let set = match concurrency {
                Limit::Unlimited => None,
                Limit::To(n) => Some(n),
            };
            prop_assert_eq!(settings.concurrency, set);
        }
        if let Some(rate) = call.rate {
            let set = match rate {
                Limit::Unlimited => None,
                Limit::To(rate) => Some(rate),
            };
            prop_assert_eq!(settings.rate, set);
        }
        let kept = [
            (call.keep_done, settings.keep_done),
            (call.keep_dead, settings.keep_dead),
            (call.keep_cancelled, settings.keep_cancelled),
        ];
        for (sent, read) in kept {
            if let Some(sent) = sent {
                prop_assert_eq!(read, as_read(sent));
            }
        }
        if let Some(events) = call.events {
            prop_assert_eq!(settings.events, events);
        }
    }

    /// What a lease holder sends comes back by INSPECT: ACK's result, FAIL's
    /// error text and PROGRESS's value, each of any bytes the limits allow.
    #[test]
    fn a_holders_values_come_back_as_the_host_sent_them(
        result in proptest::collection::vec(any::<u8>(), 0..256),
        error in "\\PC{0,80}",
        progress in proptest::collection::vec(any::<u8>(), 0..256),
        backoff in limits::DELAY_MS,
    ) {
        let (store, runtime) = store();
        let keys = keyspace();
        let claimed = || {
            let enqueue = Enqueue {
                id: JobId::mint(),
                payload: Vec::new(),
                priority: 0,
                due: Due::Now,
                policy: None,
                unique: None,
                headers: Headers::new(),
            };
            runtime.block_on(execute(&store, &keys, &enqueue)).expect("ENQUEUE");
            let claims = runtime.block_on(execute(&store, &keys, &Claim { lease: ms(60_000), count: 1 }));
            let job = claims.expect("CLAIM").jobs.pop().expect("a job");
            assert_eq!(job.id, enqueue.id, "the job enqueued is the one claimed");
            job
        };
        let inspect = |id: &JobId| {
            runtime.block_on(execute(&store, &keys, &Inspect { id: id.clone() })).expect("INSPECT").expect("a job")
        };

        let job = claimed();
        let progressed = Progress { id: job.id.clone(), token: job.token, value: progress.clone() };
        runtime.block_on(execute(&store, &keys, &progressed)).expect("PROGRESS");
        let acked = Ack { id: job.id.clone(), token: job.token, result: Some(result.clone()) };
        runtime.block_on(execute(&store, &keys, &acked)).expect("ACK");
        let done = inspect(&job.id);
        prop_assert_eq!(done.progress, Some(progress));
        prop_assert_eq!(done.result, Some(result));

        let job = claimed();
        let failed =
            Fail { id: job.id.clone(), token: job.token, max_attempts: 5, backoff: ms(backoff), error: error.clone() };
        prop_assert_eq!(runtime.block_on(execute(&store, &keys, &failed)).expect("FAIL"), Failed::Delayed);
        let delayed = keys.role(Role::Delayed, None).expect("a key");
        prop_assert_eq!(score(&store, &delayed, job.id.as_str()), Some((NOW + backoff) as f64));
        prop_assert_eq!(inspect(&job.id).error, Some(error));
    }

    /// A schedule's name, definition and next tick come back from SCHEDULES.
    #[test]
    fn a_schedule_comes_back_as_the_host_sent_it(
        name in "[a-z0-9:_-]{1,200}",
        definition in proptest::collection::vec(any::<u8>(), 0..256),
        next in limits::AT_MS,
    ) {
        let (store, runtime) = store();
        let keys = keyspace();
        let call = Schedule { name: name.clone(), definition: definition.clone(), next };
        prop_assert!(runtime.block_on(execute(&store, &keys, &call)).expect("SCHEDULE"));
        let listed = runtime.block_on(execute(&store, &keys, &Schedules { due: false, limit: 10 }));
        let listed = listed.expect("SCHEDULES");
        prop_assert_eq!(listed.now, NOW);
        prop_assert_eq!(listed.schedules, vec![Stored { name, definition, next }]);
    }
}
