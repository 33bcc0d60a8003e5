//! The limits on every argument of every transition. The Lua scripts check the
//! same numbers (a test proves it); the host checks them before it sends, so a
//! bad call fails fast with the same meaning it would get from the server.
//!
//! Integers travel as decimal text: an optional `-` and at most 15 digits.

use std::ops::RangeInclusive;

/// The largest payload a job may carry, in bytes (1 MiB).
pub const MAX_PAYLOAD: usize = 1_048_576;
/// The largest result ACK keeps, in bytes: as large as a payload.
pub const MAX_RESULT: usize = MAX_PAYLOAD;
/// The largest headers a job may carry (ENQUEUE HEADERS), in bytes.
pub const MAX_HEADERS: usize = 8_192;
/// The longest group name (ENQUEUE GROUP, GROUP), in bytes.
pub const MAX_GROUP: usize = 200;
/// A group's weight (GROUP WEIGHT): its share against the others.
pub const GROUP_WEIGHT: RangeInclusive<u64> = 1..=1000;
/// What a grouped job's score in `<q>pending` adds to its priority
/// (2^32): past every ungrouped job's, exact in a double.
pub const GROUPED_SCORE: u64 = 4_294_967_296;
/// What one job served moves a group's start tag on by, at weight 1.
pub const TAG_UNIT: u64 = 1_000_000;
/// The most groups a claim moves from `<q>gwait` back among its candidates.
pub const GROUP_WAKE: usize = 100;
/// The longest batch id (BATCH), in bytes.
pub const MAX_BATCH_ID: usize = 200;
/// How many jobs one batch holds (BATCH).
pub const BATCH_SIZE: RangeInclusive<u64> = 1..=1000;
/// How many open batches one SETTLE looks at, at most.
pub const SETTLE_BATCHES: usize = 100;
/// The longest error text FAIL keeps, in bytes.
pub const MAX_ERROR_TEXT: usize = 65_536;
/// The largest progress value PROGRESS keeps, in bytes.
pub const MAX_PROGRESS: usize = 4_096;
/// The longest schedule name, in bytes.
pub const MAX_SCHEDULE_NAME: usize = 200;
/// The largest schedule definition, in bytes: a header line and a payload.
pub const MAX_DEFINITION: usize = MAX_PAYLOAD + 4_096;
/// The longest dedup key (ENQUEUE UNIQUE), in bytes.
pub const MAX_UNIQUE_KEY: usize = 512;
/// How long a dedup key holds, in milliseconds (ENQUEUE UNIQUE_FOR).
pub const UNIQUE_MS: RangeInclusive<u64> = 1..=999_999_999_999;
/// How many expired dedup keys one ENQUEUE with UNIQUE forgets, at most.
pub const UNIQUE_SWEEP: usize = 100;
/// How long finished jobs are kept, in milliseconds (CONFIG DONE_AGE,
/// DEAD_AGE, CANCELLED_AGE); 0 keeps them at any age.
pub const KEEP_MS: RangeInclusive<u64> = 0..=999_999_999_999;
/// How many finished jobs of a state are kept, at most (CONFIG DONE_COUNT,
/// DEAD_COUNT, CANCELLED_COUNT); 0 keeps any number.
pub const KEEP_COUNT: RangeInclusive<u64> = 0..=1_000_000_000;
/// Done jobs are kept a day by default (TRIM),
pub const KEEP_DONE_MS: u64 = 86_400_000;
/// and at most ten thousand of them.
pub const KEEP_DONE_COUNT: u64 = 10_000;
/// Dead jobs are kept thirty days by default,
pub const KEEP_DEAD_MS: u64 = 2_592_000_000;
/// and at most a hundred thousand of them.
pub const KEEP_DEAD_COUNT: u64 = 100_000;
/// Cancelled jobs are kept a day by default,
pub const KEEP_CANCELLED_MS: u64 = 86_400_000;
/// and at most ten thousand of them.
pub const KEEP_CANCELLED_COUNT: u64 = 10_000;
/// How many entries a queue's event log keeps by default (about: the
/// server trims whole blocks of entries, CONFIG EVENTS sets it).
pub const EVENTS_KEEP: u64 = 10_000;
/// A queue's event log length (CONFIG EVENTS); 0 turns the log off.
pub const EVENTS: RangeInclusive<u64> = 0..=10_000_000;
/// The longest error text an event carries, in bytes (the rest stays in `errors`).
pub const MAX_EVENT_ERROR: usize = 1_024;
/// A yes-or-no option (SCHEDULES DUE, FIRE SKIP): 0 or 1.
pub const FLAG: RangeInclusive<u64> = 0..=1;
/// The most digits an integer argument may have.
pub const MAX_DIGITS: usize = 15;

/// A lease, in milliseconds (CLAIM, EXTEND): up to about 24.8 days.
pub const LEASE_MS: RangeInclusive<u64> = 1..=2_147_483_647;
/// A delay or back-off, in milliseconds (ENQUEUE DELAY, FAIL): up to about 31 years.
pub const DELAY_MS: RangeInclusive<u64> = 0..=999_999_999_999;
/// An absolute due time, server ms since the Unix epoch (ENQUEUE AT).
pub const AT_MS: RangeInclusive<u64> = 0..=9_999_999_999_999;
/// A purge age, in milliseconds (PURGE).
pub const AGE_MS: RangeInclusive<u64> = 0..=999_999_999_999;
/// A priority (ENQUEUE PRIORITY): lower is claimed first, 0 by default.
pub const PRIORITY: RangeInclusive<i64> = -2_147_483_648..=2_147_483_647;
/// A fencing token (ACK, FAIL, EXTEND, RELEASE): the claim's `attempts`.
pub const TOKEN: RangeInclusive<u64> = 1..=999_999_999_999_999;
/// A maximum number of attempts (FAIL, REAP): a job with `attempts` at or past it dies.
pub const MAX_ATTEMPTS: RangeInclusive<u64> = 0..=2_147_483_647;
/// A job's timeout, in milliseconds (ENQUEUE TIMEOUT): as long as a lease may be.
pub const TIMEOUT_MS: RangeInclusive<u64> = 1..=2_147_483_647;
/// How many jobs one CLAIM may take (COUNT).
pub const CLAIM_COUNT: RangeInclusive<u64> = 1..=1000;
/// How many jobs one ACKMANY may finish.
pub const ACKS: RangeInclusive<u64> = 1..=1000;
/// How many jobs one ENQUEUEMANY may admit.
pub const ENQUEUES: RangeInclusive<u64> = 1..=1000;
/// How many children one FLOW may declare (protocol 1.6).
pub const FLOW_CHILDREN: RangeInclusive<u64> = 1..=1000;
/// How many jobs one REAP, PROMOTE or PURGE may move (LIMIT); also its default.
pub const SWEEP_LIMIT: RangeInclusive<u64> = 1..=1000;
/// A queue's concurrency limit (CONFIG CONCURRENCY): at most this many jobs
/// active at once; 0 removes the limit.
pub const CONCURRENCY: RangeInclusive<u64> = 0..=2_147_483_647;
/// A switch (CONFIG PAUSED): 0 or 1.
pub const SWITCH: RangeInclusive<u64> = 0..=1;
/// A queue's rate limit (CONFIG RATE): at most this many claims per period;
/// 0 removes the limit. Bounded, since the claim log holds one entry per
/// claim of the last period.
pub const RATE: RangeInclusive<u64> = 0..=100_000;
/// A rate limit's period, in milliseconds (CONFIG PER): up to a day.
pub const RATE_PERIOD_MS: RangeInclusive<u64> = 1..=86_400_000;
/// An exact rate's period across a partitioned queue's partitions (PERMIT,
/// 1.8): at least 100 ms, so that its permits' hold, a tenth of it, covers
/// a claim's round trip to another node and the nodes' clocks' drift.
pub const EXACT_PERIOD_MS: RangeInclusive<u64> = 100..=86_400_000;

/// An exact concurrency across a partitioned queue's partitions (PERMIT,
/// 1.8): at most this many of its jobs running at once; 0 is none. Bounded,
/// since `<p>running` holds one permit a running job.
pub const EXACT_CONCURRENCY: RangeInclusive<u64> = 0..=100_000;
/// How long a claim may run after its permits' grant, and a running permit
/// outlive its job's lease, when no exact rate sets the hold (PERMIT, 1.8):
/// a claim's round trip to another node, and the nodes' clocks' drift.
pub const RUNNING_HOLD_MS: u64 = 1_000;
/// How many permits one RENEW names (1.8).
pub const RENEWS: RangeInclusive<u64> = 1..=1000;

/// How many minutes `<q>counts` keeps a count of, one a minute (protocol 1.4).
pub const COUNT_MINUTES: u64 = 60;
/// How many hours `<q>counts` keeps a count of, one an hour: a week.
pub const COUNT_HOURS: u64 = 168;
/// A minute and an hour in ms: the slots of `<q>counts`.
pub const MINUTE_MS: u64 = 60_000;
/// An hour in ms.
pub const HOUR_MS: u64 = 3_600_000;
/// The largest incarnation a parent's link names: 15 digits, as every number.
pub const INCARNATION: RangeInclusive<u64> = 0..=999_999_999_999_999;
