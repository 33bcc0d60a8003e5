//! Host values at the edges of every range a transition takes, with every
//! option: each host type's `Transition::edges` builds its own from these
//! ends, and `round_trip.rs` sends them all through the core's `parse`.

use std::time::{Duration, UNIX_EPOCH};

use echomq_core::{limits, Backoff, Policy};

use super::*;
use crate::executor::Call;
use crate::keyspace::Keyspace;
use crate::record::State;

pub(super) fn id(n: u32) -> JobId {
    format!("JOB_{n:026}").parse().expect("a branded id")
}

pub(super) fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// `limits::X`'s first and last value.
pub(super) fn ends(range: std::ops::RangeInclusive<u64>) -> [u64; 2] {
    [*range.start(), *range.end()]
}

/// `T`'s edge values as the host sends them on the queue `keys`.
pub(super) fn encoded<T: Transition>(keys: &Keyspace) -> Vec<Call> {
    T::edges().iter().map(|value| Call::new(keys, value).expect("the host's checks pass")).collect()
}

/// The ends of the ranges several transitions share.
pub(super) struct Ends {
    pub(super) lease_min: Duration,
    pub(super) lease_max: Duration,
    pub(super) count_min: u64,
    pub(super) count_max: u64,
    pub(super) token_min: u64,
    pub(super) token_max: u64,
    pub(super) attempts_min: u64,
    pub(super) attempts_max: u64,
    pub(super) delay_min: Duration,
    pub(super) delay_max: Duration,
    pub(super) limit_min: u64,
    pub(super) limit_max: u64,
    pub(super) at_min: u64,
    pub(super) at_max: u64,
    pub(super) finished: [State; 3],
    pub(super) unfinished: [State; 4],
    pub(super) schedule_names: [String; 2],
}

impl Ends {
    pub(super) fn new() -> Ends {
        let [lease_min, lease_max] = ends(limits::LEASE_MS).map(ms);
        let [count_min, count_max] = ends(limits::CLAIM_COUNT);
        let [token_min, token_max] = ends(limits::TOKEN);
        let [attempts_min, attempts_max] = ends(limits::MAX_ATTEMPTS);
        let [delay_min, delay_max] = ends(limits::DELAY_MS).map(ms);
        let [limit_min, limit_max] = ends(limits::SWEEP_LIMIT);
        let [at_min, at_max] = ends(limits::AT_MS);
        Ends {
            lease_min,
            lease_max,
            count_min,
            count_max,
            token_min,
            token_max,
            attempts_min,
            attempts_max,
            delay_min,
            delay_max,
            limit_min,
            limit_max,
            at_min,
            at_max,
            finished: [State::Done, State::Dead, State::Cancelled],
            unfinished: [State::Pending, State::Delayed, State::Active, State::Waiting],
            schedule_names: ["s".to_owned(), "s".repeat(limits::MAX_SCHEDULE_NAME)],
        }
    }

    /// An ACK of job 1 with `token` and `result`.
    pub(super) fn ack(&self, token: u64, result: Option<Vec<u8>>) -> Ack {
        Ack { id: id(1), token, result }
    }

    /// ACKs at both ends of the token, with no result, an empty one and the largest.
    pub(super) fn acks(&self) -> impl Iterator<Item = Ack> + '_ {
        [None, Some(Vec::new()), Some(vec![b'r'; limits::MAX_RESULT])]
            .into_iter()
            .flat_map(|result| [self.ack(self.token_min, result.clone()), self.ack(self.token_max, result)])
    }
}

/// ENQUEUEs at the ends of every range, with each option and all of them.
pub(super) fn enqueues() -> Vec<Enqueue> {
    let plain = Enqueue {
        id: id(1),
        payload: Vec::new(),
        priority: 0,
        due: Due::Now,
        policy: None,
        unique: None,
        headers: Headers::new(),
        parent: None,
        group: None,
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
    all.extend(
        ["g".to_owned(), "x".repeat(limits::MAX_GROUP)]
            .map(|group| Enqueue { group: Some(group), ..plain.clone() }),
    );
    all.push(Enqueue {
        payload: b"p".to_vec(),
        priority: -7,
        due: dues[1],
        policy: Some(policies[1]),
        unique: Some(uniques[1].clone()),
        headers: big_headers,
        group: Some("tenant-7".into()),
        ..plain
    });
    all
}

/// CONFIGs: a read, each option alone at the ends of its range, and all together.
pub(super) fn configs() -> Vec<Config> {
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
pub(super) fn limit(n: u64) -> Limit<u64> {
    if n == 0 {
        Limit::Unlimited
    } else {
        Limit::To(n)
    }
}

/// A rate as the wire says it: 0 claims is none.
pub(super) fn rate_limit((claims, per): (u64, Duration)) -> Limit<Rate> {
    if claims == 0 {
        Limit::Unlimited
    } else {
        Limit::To(Rate { claims, per })
    }
}

/// An event log's length as the wire says it: 0 is off.
pub(super) fn event_log(n: u64) -> EventLog {
    if n == 0 {
        EventLog::Off
    } else {
        EventLog::Keep(n)
    }
}
