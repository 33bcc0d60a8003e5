//! Completions counted in-process: a `metrics` recorder that keeps the
//! worker's `emq_jobs_processed_total` (incremented once an ack returned, as
//! BullMQ emits `completed` once `moveToFinished` returned) and marks the
//! moment it reaches the expected count, and when the last one came (for
//! the worker processes of `processes.rs`). Every other metric is dropped.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use echomq::worker::metric;
use metrics::{Counter, CounterFn, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};

/// The count, when it reached the expected number, and when the last one
/// came (µs since the Unix epoch, 0 before the first).
struct Completions {
    count: AtomicU64,
    expected: AtomicU64,
    reached: Mutex<Option<tokio::sync::oneshot::Sender<Instant>>>,
    last_us: AtomicU64,
}

static COMPLETIONS: Completions = Completions {
    count: AtomicU64::new(0),
    expected: AtomicU64::new(u64::MAX),
    reached: Mutex::new(None),
    last_us: AtomicU64::new(0),
};

struct Processed;

impl CounterFn for Processed {
    fn increment(&self, value: u64) {
        let count = COMPLETIONS.count.fetch_add(value, Ordering::AcqRel) + value;
        let expected = COMPLETIONS.expected.load(Ordering::Acquire);
        if expected == u64::MAX {
            // Counting with no end in sight (`restart`): the time of the last one is the figure.
            let wall = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64);
            COMPLETIONS.last_us.fetch_max(wall, Ordering::AcqRel);
        } else if count >= expected {
            let at = Instant::now();
            if let Some(reached) = COMPLETIONS.reached.lock().unwrap().take() {
                let _ = reached.send(at);
            }
        }
    }

    fn absolute(&self, _value: u64) {}
}

struct Counting;

impl Recorder for Counting {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        if key.name() == metric::PROCESSED {
            Counter::from_arc(Arc::new(Processed))
        } else {
            Counter::noop()
        }
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }

    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

/// Install the recorder, once per process.
pub(crate) fn install() {
    metrics::set_global_recorder(Counting).expect("the only recorder");
}

/// Count from zero; the returned future resolves with when `jobs` jobs were acked.
pub(crate) fn expect(jobs: usize) -> impl std::future::Future<Output = Instant> {
    let (reached, at) = tokio::sync::oneshot::channel();
    *COMPLETIONS.reached.lock().unwrap() = Some(reached);
    reset(jobs as u64);
    async move { at.await.expect("the count reached") }
}

/// Count from zero, expecting nothing, and keep when the last one came.
pub(crate) fn restart() {
    *COMPLETIONS.reached.lock().unwrap() = None;
    reset(u64::MAX);
}

fn reset(expected: u64) {
    COMPLETIONS.count.store(0, Ordering::Release);
    COMPLETIONS.last_us.store(0, Ordering::Release);
    COMPLETIONS.expected.store(expected, Ordering::Release);
}

/// The jobs counted since the last reset, and when the last one came (µs
/// since the Unix epoch), if any came.
pub(crate) fn so_far() -> (u64, Option<u64>) {
    let last = COMPLETIONS.last_us.load(Ordering::Acquire);
    (COMPLETIONS.count.load(Ordering::Acquire), (last > 0).then_some(last))
}
