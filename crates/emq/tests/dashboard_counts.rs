//! Issue 30's check of the charts: "the chart matches the jobs finished
//! within 5% while a worker runs 600 jobs/s under default retention". A
//! producer enqueues at a steady ~600 jobs a second for a few seconds while
//! an in-process `Worker` finishes them, the queue's retention left at its
//! default (which trims finished records); then the queue page's chart
//! (each bar's `data-completed`), its totals and `/metrics` are read over
//! plain HTTP and compared with the jobs the worker finished.

mod dashboard_support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dashboard_support::{queue, Dashboard};
use echomq::worker::{HandlerError, JobContext, Worker, WorkerOptions};
use echomq_test_support::{eventually, unique_queue, RedisServer};

/// The producer's pace: a batch of `BATCH` every `TICK`, 600 jobs a second.
const TICK: Duration = Duration::from_millis(50);
const BATCH: usize = 30;
/// How many batches: three seconds' worth.
const BATCHES: usize = 60;

/// Every value of attribute `name` in `page` between `from` and `to`, as numbers.
fn attributes(page: &str, from: &str, to: &str, name: &str) -> Vec<u64> {
    let start = page.find(from).unwrap_or_else(|| panic!("no {from} in the page"));
    let part = &page[start..start + page[start..].find(to).expect("the chart's end")];
    let needle = format!(r#"{name}=""#);
    part.match_indices(&needle)
        .map(|(at, _)| {
            let value = &part[at + needle.len()..];
            value[..value.find('"').unwrap()].parse().unwrap()
        })
        .collect()
}

/// The figure in the cell after `row`'s header, column `column` (0: enqueued).
fn cell(page: &str, row: &str, column: usize) -> u64 {
    let start = page.find(&format!(r#"<tr id="{row}">"#)).unwrap_or_else(|| panic!("no row {row}"));
    let cells: Vec<u64> = page[start..]
        .split("<td class=\"n")
        .skip(1)
        .take(4)
        .map(|td| {
            let text = &td[td.find('>').unwrap() + 1..];
            text[..text.find('<').unwrap()].parse().unwrap()
        })
        .collect();
    cells[column]
}

/// The value of the metric line that starts with `series`.
fn metric(text: &str, series: &str) -> u64 {
    let line =
        text.lines().find(|line| line.starts_with(series)).unwrap_or_else(|| panic!("no {series}: {text}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chart_matches_the_jobs_a_worker_finished_at_600_a_second() {
    let server = RedisServer::start();
    let name = unique_queue("chart");
    let q = queue(&server, &name).await;
    let finished = Arc::new(AtomicU64::new(0));
    let counted = finished.clone();
    let handler = move |_job: JobContext| {
        let counted = counted.clone();
        async move {
            counted.fetch_add(1, Ordering::Relaxed);
            Ok::<_, HandlerError>(())
        }
    };
    let options = WorkerOptions::default().concurrency(50).lease(Duration::from_secs(120));
    let worker = Worker::with_options(q.clone(), handler, options);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(worker.run_until(async move {
        let _ = stopped.await;
    }));

    // A steady 600 a second: a batch each tick, late ticks not made up in a burst.
    let started = Instant::now();
    let mut ticks = tokio::time::interval(TICK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for batch in 0..BATCHES {
        ticks.tick().await;
        let payloads = (0..BATCH).map(|n| format!("job {batch}.{n}"));
        for id in q.enqueue_batch(payloads).await.unwrap() {
            id.unwrap();
        }
    }
    let enqueued = (BATCH * BATCHES) as u64;
    let producing = started.elapsed();
    eventually("the worker finished every job", || async {
        let stats = q.stats().await.unwrap();
        stats.pending == 0 && stats.active == 0 && finished.load(Ordering::Relaxed) == enqueued
    })
    .await;
    let took = started.elapsed();
    let _ = stop.send(());
    running.await.unwrap().unwrap();
    let finished = finished.load(Ordering::Relaxed);
    eprintln!(
        "{enqueued} jobs enqueued in {producing:.1?} ({:.0}/s), finished in {took:.1?} ({:.0}/s)",
        enqueued as f64 / producing.as_secs_f64(),
        finished as f64 / took.as_secs_f64()
    );
    // Retention as a new queue has it (no `configure`): the chart reads the
    // server's counters, not the finished records it keeps.
    let settings = q.settings().await.unwrap();
    let a_day = echomq::Retention { age: Some(Duration::from_secs(86_400)), count: Some(10_000) };
    assert_eq!(settings.keep_done, a_day, "the protocol's default retention (PROTOCOL.md §7.4)");

    let dashboard = Dashboard::start(&server, &[]);
    let page = dashboard.get(&format!("/queues/{name}"));
    assert_eq!(page.status(), 200, "{page:?}");
    let page = page.0;
    let bars = attributes(&page, r#"<svg class="chart""#, "</svg>", "data-completed");
    assert_eq!(bars.len(), 60, "a bar a minute over the hour");
    let charted: u64 = bars.iter().sum();
    let off = charted.abs_diff(finished) as f64 / finished as f64;
    assert!(off <= 0.05, "the chart says {charted} completed, the worker finished {finished}");
    assert_eq!(charted, finished, "the server counts every ack");
    let failed: u64 = attributes(&page, r#"<svg class="chart""#, "</svg>", "data-failed").iter().sum();
    assert_eq!(failed, 0);
    assert_eq!(cell(&page, "totals-all", 1), finished, "the totals' completed");
    assert_eq!(cell(&page, "totals-all", 0), enqueued, "the totals' enqueued");
    assert_eq!(cell(&page, "totals-span", 1), finished, "the hour's completed");

    // The week by hour says the same; a span that is not one is refused.
    let week = dashboard.get(&format!("/queues/{name}?span=hours")).0;
    let hours = attributes(&week, r#"<svg class="chart""#, "</svg>", "data-completed");
    assert_eq!((hours.len(), hours.iter().sum::<u64>()), (168, finished));
    let bad = dashboard.get(&format!("/queues/{name}?span=days"));
    assert!(bad.status() == 400 && bad.has("span &quot;days&quot; is not one: minutes or hours"), "{bad:?}");

    let metrics = dashboard.get("/metrics").0;
    let series = |metric: &str| format!("{metric}{{queue=\"{name}\"}}");
    assert_eq!(metric(&metrics, &series("emq_queue_completed_total")), finished);
    assert_eq!(metric(&metrics, &series("emq_queue_enqueued_total")), enqueued);
    assert_eq!(metric(&metrics, &series("emq_queue_failed_total")), 0);
    assert_eq!(metric(&metrics, &series("emq_queue_dead_total")), 0);
    assert!(metrics.contains("# TYPE emq_queue_completed_total counter"), "{metrics}");
    // The worker stopped and said so: nobody works the queue now.
    assert_eq!(metric(&metrics, &series("emq_workers")), 0);
}
