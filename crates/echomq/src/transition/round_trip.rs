//! ARGV is encoded by the host's type and parsed by the core's: two types,
//! tied here. For every transition, host values at the edges of every range
//! and with every option are encoded as the host sends them ([`Call::new`])
//! and must be accepted by the core's `parse` ([`Name::parse_only`]); where
//! the values are observable, random ones are run on the core's in-memory
//! store ([`Embedded`]) and must come back as they were sent.

use std::sync::Arc;
use std::time::UNIX_EPOCH;

use echomq_core::memory::{Dump, ManualClock};
use echomq_core::{limits, Backoff, Name, Policy, Role};
use proptest::prelude::*;

use super::edges::{event_log, limit, ms, rate_limit};
use super::*;
use crate::executor::{execute, Embedded};
use crate::keyspace::Keyspace;
use crate::record::State;

/// The server's now on the store the observable round trips run on, ms.
const NOW: u64 = 1_000_000;

fn keyspace() -> Keyspace {
    Keyspace::new("round-trip").expect("a valid queue name")
}

/// Every transition's edge values, as the host encodes them, are what the
/// core's `parse` accepts.
#[test]
fn the_core_parses_every_transition_as_the_host_encodes_it() {
    for name in Name::ALL {
        let calls = super::edges(*name, &keyspace());
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
            parent: None,
            group: None,
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
                parent: None,
                group: None,
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
