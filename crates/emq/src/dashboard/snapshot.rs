//! The shared snapshot of every queue: its counts, its flow settings, the
//! age of its oldest pending job and its counters by minute over the last
//! hour (COUNTS), and the live workers from the worker registry, read once
//! for every viewer and page. It is
//! taken at most once a second, and only on demand: while a viewer follows
//! `/live`, or a page or `/metrics` was asked for in the last few seconds.
//! An idle dashboard sends Redis nothing.
//!
//! `/live` streams the snapshot's small changes as server-sent events;
//! `/metrics` renders it as Prometheus text through a
//! `metrics-exporter-prometheus` recorder of its own.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use axum::extract::State as Extract;
use axum::http::header;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use echomq::transition::StatsReply;
use echomq::{CountsReply, Executor, JobId, Keyspace, Queue, Settings, Span, State, WorkerInfo};
use futures_util::stream::{self, Stream, StreamExt};
use metrics_exporter_prometheus::PrometheusBuilder;
use tokio::sync::watch;

use super::App;
use crate::connect::{Conn, Error};

/// A snapshot younger than this is handed out as it is.
const FRESH: Duration = Duration::from_secs(1);
/// How long after the last page was asked for the snapshot is kept fresh
/// (a viewer who came back finds live counts).
const LINGER: Duration = Duration::from_secs(5);
/// How many queues are read at once.
const AT_ONCE: usize = 16;

/// Every queue as one read saw it.
#[derive(Debug)]
pub struct Snapshot {
    /// When it was taken, on this host.
    pub taken: Instant,
    /// The server's clock then, ms since the Unix epoch.
    pub now_ms: u64,
    /// Each queue, by name; or why the queue registry could not be read.
    pub queues: Result<BTreeMap<String, QueueView>, String>,
    /// The partitioned queues (protocol 1.8) whose partitions are among
    /// them, by name; none when their definitions could not be read.
    pub partitioned: Vec<echomq::Partitioned>,
    /// The live workers, sorted by id; or why the worker registry could not be read.
    pub workers: Result<Vec<WorkerInfo>, String>,
    /// This host's clock when the workers were read, ms since the Unix
    /// epoch: a worker's beats are on its own clock, and the registry's
    /// liveness is judged on this one (not the server's).
    pub local_ms: u64,
    /// What a full server does, when it is over its `maxmemory`.
    pub full: Option<String>,
    /// Its Prometheus text, rendered the first time `/metrics` asks.
    metrics: OnceLock<String>,
}

/// One queue in a snapshot.
#[derive(Debug)]
pub struct QueueView {
    /// Its counts, or why they could not be read (a key of the wrong type).
    pub stats: Result<StatsReply, String>,
    /// Paused, concurrency and rate (a plain read of its config key).
    pub settings: Option<Settings>,
    /// When its pending set's head job was enqueued, server ms.
    pub oldest_pending_ms: Option<u64>,
    /// Whether some delayed job is due (its time has come; a worker's
    /// upkeep moves it to pending): read only when some are delayed.
    pub delayed_due: bool,
    /// Its counters, by minute over the last hour, or why they could not be read.
    pub counts: Result<CountsReply, String>,
}

impl QueueView {
    /// Whether it has work a worker should take now: pending jobs, or
    /// delayed ones whose time has come.
    pub fn has_work(&self) -> bool {
        self.delayed_due || self.stats.as_ref().is_ok_and(|stats| stats.pending > 0)
    }
}

impl Snapshot {
    /// How long the oldest pending job of `view` has waited, in seconds.
    pub fn oldest_pending_secs(&self, view: &QueueView) -> Option<u64> {
        view.oldest_pending_ms.map(|at| self.now_ms.saturating_sub(at) / 1000)
    }

    /// How many live workers work `queue`, or `None` when the worker
    /// registry could not be read.
    pub fn workers_of(&self, queue: &str) -> Option<usize> {
        self.workers.as_ref().ok().map(|workers| workers.iter().filter(|w| w.works(queue)).count())
    }

    /// Whether `queue` has work a worker should take and no live worker
    /// works it (known only when the worker registry reads).
    pub fn unworked(&self, queue: &str, view: &QueueView) -> bool {
        view.has_work() && self.workers_of(queue) == Some(0)
    }

    /// The values pages show live, each by the key of its element's
    /// `data-live` attribute: `<queue>/<state>`, `<queue>/oldest`,
    /// `<queue>/flow`, `<queue>/workers`, and the finished jobs of the
    /// last full minutes (`<queue>/completed-1m`, `…-5m`, `<queue>/failed-1m`, `…-5m`).
    pub fn live(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let Ok(queues) = &self.queues else { return out };
        for (name, view) in queues {
            if let Ok(stats) = &view.stats {
                for state in State::ALL {
                    out.insert(format!("{name}/{state}"), stats.of(state).to_string());
                }
            }
            out.insert(format!("{name}/oldest"), super::html::age(self.oldest_pending_secs(view)));
            out.insert(format!("{name}/flow"), view.settings.as_ref().map_or("?".into(), super::html::flow));
            out.insert(
                format!("{name}/workers"),
                self.workers_of(name).map_or("?".into(), |n| n.to_string()),
            );
            if let Ok(counts) = &view.counts {
                for minutes in [1, 5] {
                    let tally = super::charts::last_full(counts, minutes);
                    out.insert(format!("{name}/completed-{minutes}m"), tally.completed.to_string());
                    out.insert(format!("{name}/failed-{minutes}m"), (tally.failed + tally.dead).to_string());
                }
            }
        }
        out
    }
}

/// How a snapshot reads the worker registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Registry {
    /// As `emq workers` does: dead members are taken out of `emq:workers`.
    Tidy,
    /// Writing nothing (`--read-only`): dead members are left where they are.
    ReadOnly,
}

/// The snapshot, shared: the latest, the single flight that takes the next
/// one, and the demand that keeps it fresh.
pub struct Snapshots {
    conn: Conn,
    executor: Arc<dyn Executor>,
    registry: Registry,
    latest: watch::Sender<Option<Arc<Snapshot>>>,
    /// One read at a time: a request that finds one under way waits for it.
    taking: tokio::sync::Mutex<()>,
    /// How many `/live` streams are open.
    viewers: AtomicUsize,
    /// When a page last asked.
    asked: Mutex<Instant>,
    /// Wakes [`keep_fresh`] when demand comes back.
    demand: tokio::sync::Notify,
}

impl Snapshots {
    pub fn new(conn: Conn, executor: Arc<dyn Executor>, registry: Registry) -> Snapshots {
        Snapshots {
            conn,
            executor,
            registry,
            latest: watch::channel(None).0,
            taking: tokio::sync::Mutex::new(()),
            viewers: AtomicUsize::new(0),
            asked: Mutex::new(Instant::now()),
            demand: tokio::sync::Notify::new(),
        }
    }

    /// A snapshot at most [`FRESH`] old: the latest, or a new one (one read
    /// for every request that asks meanwhile).
    pub async fn get(&self) -> Arc<Snapshot> {
        *self.asked.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
        self.demand.notify_one();
        self.current().await
    }

    /// [`get`](Snapshots::get) without being a demand: what [`keep_fresh`]
    /// calls, so that it alone never keeps itself going.
    async fn current(&self) -> Arc<Snapshot> {
        if let Some(fresh) = self.fresh() {
            return fresh;
        }
        let _taking = self.taking.lock().await;
        if let Some(fresh) = self.fresh() {
            return fresh;
        }
        let snapshot = Arc::new(take(&mut self.conn.clone(), &self.executor, self.registry).await);
        self.latest.send_replace(Some(snapshot.clone()));
        snapshot
    }

    /// Forget the latest snapshot: a write changed what it says, and the
    /// page the write goes back to must show the change.
    pub fn invalidate(&self) {
        self.latest.send_replace(None);
    }

    fn fresh(&self) -> Option<Arc<Snapshot>> {
        self.latest.borrow().as_ref().filter(|s| s.taken.elapsed() < FRESH).cloned()
    }

    /// Whether anyone looks: a viewer of `/live`, or a page asked for lately.
    fn wanted(&self) -> bool {
        self.viewers.load(Ordering::Relaxed) > 0
            || self.asked.lock().unwrap_or_else(|p| p.into_inner()).elapsed() < LINGER
    }
}

/// While anyone looks, a new snapshot every second, for the live viewers;
/// else asleep until a page or a viewer comes.
pub async fn keep_fresh(app: Arc<App>) {
    let snapshots = &app.snapshots;
    loop {
        if !snapshots.wanted() {
            // A wake-up may come between the look and the wait: look again
            // after a while at most.
            let _ = tokio::time::timeout(LINGER, snapshots.demand.notified()).await;
            continue;
        }
        let _ = snapshots.current().await;
        tokio::time::sleep(FRESH).await;
    }
}

/// Every queue and the live workers, read now: one damaged queue (a key of
/// the wrong type) does not hide the others, nor a damaged worker registry
/// the queues.
async fn take(conn: &mut Conn, executor: &Arc<dyn Executor>, registry: Registry) -> Snapshot {
    let taken = Instant::now();
    let now_ms = server_ms(conn).await.unwrap_or_default();
    let local_ms = crate::now_ms();
    let workers = match registry {
        Registry::Tidy => echomq::workers(&**executor).await,
        Registry::ReadOnly => echomq::workers_read_only(&**executor).await,
    };
    let workers = workers.map_err(|err| crate::failure::explain(&err));
    let mut partitioned = Vec::new();
    let queues = match crate::ops::discover(conn).await {
        Ok(names) => {
            partitioned = crate::stats::partitioned_among(executor, &names).await.unwrap_or_default();
            let views = stream::iter(names)
                .map(|name| {
                    let (mut conn, executor) = (conn.clone(), executor.clone());
                    async move {
                        let view = read_queue(&mut conn, executor, &name, now_ms).await;
                        (name, view)
                    }
                })
                .buffered(AT_ONCE)
                .collect::<Vec<_>>()
                .await;
            Ok(views.into_iter().collect())
        }
        Err(err) => Err(crate::failure::explain(err.as_ref())),
    };
    let full = crate::ops::full_note(conn).await;
    Snapshot { taken, now_ms, queues, partitioned, workers, local_ms, full, metrics: OnceLock::new() }
}

/// The server's clock, ms since the Unix epoch.
pub async fn server_ms(conn: &mut Conn) -> Result<u64, Error> {
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(conn).await?;
    Ok(secs * 1000 + micros / 1000)
}

/// One queue: its counts and counters (at once), then its settings, and
/// its oldest pending job and due delayed jobs when it has any.
async fn read_queue(conn: &mut Conn, executor: Arc<dyn Executor>, name: &str, now_ms: u64) -> QueueView {
    let (Ok(queue), Ok(keys)) = (Queue::new(executor, name), Keyspace::new(name)) else {
        let why = "not a queue name this host accepts".to_owned();
        return QueueView {
            stats: Err(why.clone()),
            settings: None,
            oldest_pending_ms: None,
            delayed_due: false,
            counts: Err(why),
        };
    };
    let explain = |err: echomq::Error| crate::failure::explain(&err);
    let (stats, counts) = tokio::join!(queue.stats(), queue.counts(Span::Minutes));
    let (stats, counts) = (stats.map_err(explain), counts.map_err(explain));
    let settings = crate::flow::settings(conn, &keys).await.ok();
    let oldest_pending_ms = match &stats {
        Ok(stats) if stats.pending > 0 => oldest_pending(conn, &keys).await.ok().flatten(),
        _ => None,
    };
    let delayed_due = match &stats {
        Ok(stats) if stats.delayed > 0 => delayed_due(conn, &keys, now_ms).await.unwrap_or(false),
        _ => false,
    };
    QueueView { stats, settings, oldest_pending_ms, delayed_due, counts }
}

/// Whether a delayed job of `keys`' queue is due at `now_ms` (server ms):
/// the head of the delayed set by score, with the ZRANGE a read-only user
/// has (SECURITY.md's monitor).
async fn delayed_due(conn: &mut Conn, keys: &Keyspace, now_ms: u64) -> Result<bool, Error> {
    let head: Vec<String> = redis::cmd("ZRANGE")
        .arg(keys.delayed())
        .arg("-inf")
        .arg(now_ms)
        .arg("BYSCORE")
        .arg("LIMIT")
        .arg(0)
        .arg(1)
        .query_async(conn)
        .await?;
    Ok(!head.is_empty())
}

/// When the pending set's head job was enqueued: its record's `enqueued_at`
/// when it has one (the native executor writes it), else the time in its
/// branded id (a ULID's first 48 bits).
pub async fn oldest_pending(conn: &mut Conn, keys: &Keyspace) -> Result<Option<u64>, Error> {
    let head: Vec<String> = redis::cmd("ZRANGE").arg(keys.pending()).arg(0).arg(0).query_async(conn).await?;
    let Some(id) = head.into_iter().next() else { return Ok(None) };
    let Ok(id) = id.parse::<JobId>() else { return Ok(None) };
    let at: Option<u64> = redis::cmd("HGET").arg(keys.job(&id)).arg("enqueued_at").query_async(conn).await?;
    Ok(at.or_else(|| minted_ms(&id)))
}

/// The time a branded id was minted at, ms since the epoch: its ULID's
/// first ten characters, Crockford base32.
pub fn minted_ms(id: &JobId) -> Option<u64> {
    if !id.is_branded() {
        return None;
    }
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let ulid = &id.as_str().as_bytes()[echomq::id::PREFIX.len()..];
    ulid[..10].iter().try_fold(0u64, |ms, c| Some(ms * 32 + ALPHABET.iter().position(|a| a == c)? as u64))
}

/// Counts a `/live` viewer while its stream is open.
struct Viewer(Arc<App>);

impl Viewer {
    fn new(app: Arc<App>) -> Viewer {
        app.snapshots.viewers.fetch_add(1, Ordering::Relaxed);
        app.snapshots.demand.notify_one();
        Viewer(app)
    }
}

impl Drop for Viewer {
    fn drop(&mut self) {
        self.0.snapshots.viewers.fetch_sub(1, Ordering::Relaxed);
    }
}

/// `/live`: server-sent events, each a JSON object of the live values that
/// changed since the last event to this viewer (all of them first).
pub async fn live(Extract(app): Extract<Arc<App>>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let viewer = Viewer::new(app.clone());
    let updates = app.snapshots.latest.subscribe();
    let stopping = app.stopping.subscribe();
    let sent = BTreeMap::<String, String>::new();
    let state = (viewer, updates, stopping, sent);
    let events = stream::unfold(state, |(viewer, mut updates, mut stopping, mut sent)| async move {
        loop {
            // The process stopping ends the stream (and the graceful shutdown's wait).
            tokio::select! {
                changed = updates.changed() => changed.ok()?,
                _ = stopping.wait_for(|stop| *stop) => return None,
            }
            let Some(snapshot) = updates.borrow_and_update().clone() else { continue };
            let now = snapshot.live();
            let changed: BTreeMap<&String, &String> =
                now.iter().filter(|(key, value)| sent.get(*key) != Some(value)).collect();
            if changed.is_empty() {
                continue;
            }
            let data = serde_json::to_string(&changed).unwrap_or_default();
            sent = now;
            return Some((Ok(Event::default().data(data)), (viewer, updates, stopping, sent)));
        }
    });
    Sse::new(events).keep_alive(KeepAlive::default())
}

/// `/metrics`: the snapshot as Prometheus text.
pub async fn metrics(Extract(app): Extract<Arc<App>>) -> Response {
    let snapshot = app.snapshots.get().await;
    if let Err(why) = &snapshot.queues {
        let said = format!("cannot read the queues: {why}\n");
        return (axum::http::StatusCode::SERVICE_UNAVAILABLE, [(header::CONTENT_TYPE, "text/plain")], said)
            .into_response();
    }
    let text = snapshot.metrics.get_or_init(|| prometheus_text(&snapshot)).clone();
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

/// The metric names, each said once (a Grafana dashboard is written against them).
mod names {
    pub const JOBS: &str = "emq_jobs";
    pub const OLDEST_PENDING: &str = "emq_oldest_pending_seconds";
    pub const PAUSED: &str = "emq_queue_paused";
    pub const CONCURRENCY: &str = "emq_queue_concurrency_limit";
    pub const RATE: &str = "emq_queue_rate_limit";
    pub const UNREADABLE: &str = "emq_queue_unreadable";
    pub const ENQUEUED: &str = "emq_queue_enqueued_total";
    pub const COMPLETED: &str = "emq_queue_completed_total";
    pub const FAILED: &str = "emq_queue_failed_total";
    pub const DEAD: &str = "emq_queue_dead_total";
    pub const WORKERS: &str = "emq_workers";
    pub const PARTITION: &str = "emq_partition_info";
    pub const EXACT_RATE: &str = "emq_partitioned_exact_rate_limit";
    pub const EXACT_CONCURRENCY: &str = "emq_partitioned_exact_concurrency_limit";
}

/// The snapshot through a recorder of its own (never the global one):
/// gauges set from it, counters set to the server's totals (`absolute`:
/// the server counts, not this process), then rendered.
fn prometheus_text(snapshot: &Snapshot) -> String {
    use metrics::{counter, gauge};
    let recorder = PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    metrics::with_local_recorder(&recorder, || {
        describe_all();
        let Ok(queues) = &snapshot.queues else { return };
        for (name, view) in queues {
            let queue = name.clone();
            // Its workers even when its keys are damaged: who would run its jobs.
            if let Some(n) = snapshot.workers_of(name) {
                gauge!(names::WORKERS, "queue" => queue.clone()).set(n as f64);
            }
            let Ok(stats) = &view.stats else {
                gauge!(names::UNREADABLE, "queue" => queue).set(1.0);
                continue;
            };
            for state in State::ALL {
                let labels = [("queue", queue.clone()), ("state", state.to_string())];
                gauge!(names::JOBS, &labels).set(stats.of(state) as f64);
            }
            let oldest = snapshot.oldest_pending_secs(view).unwrap_or(0);
            gauge!(names::OLDEST_PENDING, "queue" => queue.clone()).set(oldest as f64);
            if let Some(settings) = &view.settings {
                gauge!(names::PAUSED, "queue" => queue.clone()).set(f64::from(u8::from(settings.paused)));
                if let Some(n) = settings.concurrency {
                    gauge!(names::CONCURRENCY, "queue" => queue.clone()).set(n as f64);
                }
                if let Some(rate) = settings.rate {
                    let per_second = rate.claims as f64 / rate.per.as_secs_f64().max(1e-3);
                    gauge!(names::RATE, "queue" => queue.clone()).set(per_second);
                }
            }
            if let Ok(counts) = &view.counts {
                let totals = counts.totals;
                counter!(names::ENQUEUED, "queue" => queue.clone()).absolute(totals.enqueued);
                counter!(names::COMPLETED, "queue" => queue.clone()).absolute(totals.completed);
                counter!(names::FAILED, "queue" => queue.clone()).absolute(totals.failed);
                counter!(names::DEAD, "queue" => queue.clone()).absolute(totals.dead);
            }
        }
        partitioned_metrics(snapshot);
    });
    handle.render()
}

/// Each family's help text (`# HELP`), as `promtool check metrics` asks.
fn describe_all() {
    use metrics::{describe_counter, describe_gauge};
    describe_gauge!(names::JOBS, "Jobs in each state, per queue.");
    describe_gauge!(names::OLDEST_PENDING, "How long the pending set's head job has waited, in seconds.");
    describe_gauge!(names::PAUSED, "1 while the queue's claims are paused.");
    describe_gauge!(names::CONCURRENCY, "The queue's limit on jobs active at once (only when set).");
    describe_gauge!(names::RATE, "The queue's limit on claims per second (only when set).");
    describe_gauge!(
        names::UNREADABLE,
        "Queues whose counts could not be read (a key of the wrong type); the dashboard says why."
    );
    describe_counter!(names::ENQUEUED, "Jobs enqueued to the queue, as the server counts them.");
    describe_counter!(names::COMPLETED, "Jobs completed (acked), as the server counts them.");
    describe_counter!(
        names::FAILED,
        "Failed attempts with another attempt to come (FAIL to delayed, REAP to pending)."
    );
    describe_counter!(names::DEAD, "Jobs out of attempts, sent to dead (FAIL or REAP).");
    describe_gauge!(names::WORKERS, "Live workers working the queue, from the worker registry.");
}

/// A partitioned queue's (protocol 1.8): an info series for each partition,
/// which a query joins on `queue` to sum the partitions by `partitioned`,
/// and its exact rate, when one is set.
fn partitioned_metrics(snapshot: &Snapshot) {
    use metrics::{describe_gauge, gauge};
    describe_gauge!(
        names::PARTITION,
        "1 for each partition of a partitioned queue, naming it and its index."
    );
    describe_gauge!(
        names::EXACT_RATE,
        "A partitioned queue's exact rate across its partitions, claims per second."
    );
    describe_gauge!(
        names::EXACT_CONCURRENCY,
        "A partitioned queue's exact concurrency across its partitions: the most of its jobs running at once."
    );
    for p in &snapshot.partitioned {
        for (k, queue) in p.partitions().iter().enumerate() {
            let labels = [
                ("queue", queue.name().to_owned()),
                ("partitioned", p.name().to_owned()),
                ("partition", k.to_string()),
            ];
            gauge!(names::PARTITION, &labels).set(1.0);
        }
        if let Some(rate) = p.exact() {
            let per_second = rate.claims as f64 / rate.per.as_secs_f64().max(1e-3);
            gauge!(names::EXACT_RATE, "partitioned" => p.name().to_owned()).set(per_second);
        }
        if let Some(cap) = p.running_cap() {
            gauge!(names::EXACT_CONCURRENCY, "partitioned" => p.name().to_owned()).set(cap as f64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_branded_id_tells_when_it_was_minted() {
        let before = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis();
        let at = u128::from(minted_ms(&JobId::mint()).unwrap());
        let after = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis();
        assert!(before <= at && at <= after, "{before} {at} {after}");
        // The ULID specification's example, 2016-07-30T23:54:10.259Z.
        assert_eq!(minted_ms(&"JOB_01ARZ3NDEKTSV4RRFFQ69G5FAV".parse().unwrap()), Some(1_469_922_850_259));
        assert_eq!(minted_ms(&"JOB_order-17".parse().unwrap()), None, "not branded");
    }
}
