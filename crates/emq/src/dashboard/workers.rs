//! The live workers, from the worker registry (`emq:workers`, PROTOCOL.md
//! §11.3) as the shared snapshot read it: `/workers` lists each with its
//! queues and the jobs it runs now (their leases' deadlines); a queue's
//! page lists those that work it; the queues page says how many work each
//! queue, and flags a queue whose jobs wait for nobody.

use std::sync::Arc;

use axum::extract::State as Extract;
use axum::response::{IntoResponse, Response};
use echomq::WorkerInfo;
use maud::{html, Markup};

use super::html::{self, queue_path};
use super::snapshot::{QueueView, Snapshot};
use super::App;

/// `/workers`: every live worker, then every job they run now.
pub async fn workers_page(Extract(app): Extract<Arc<App>>) -> Response {
    let snapshot = app.snapshots.get().await;
    let body = html! {
        h1 { "Workers" }
        @match &snapshot.workers {
            Err(why) => p.bad #registry { "The worker registry cannot be read: " (why) },
            Ok(workers) if workers.is_empty() => p.none #no-workers {
                "No live worker: none has written the worker registry (emq:workers) within its TTL."
            },
            Ok(workers) => {
                p.note #live-workers {
                    (workers.len()) " live worker(s), as of their last beats; ages by this dashboard's clock."
                }
                (html::scroll(&table(&snapshot, workers, None)))
                h2 { "Running jobs" }
                (running(&snapshot, workers))
            }
        }
    };
    html::page("workers", &[("workers".into(), "/workers".into())], &body).into_response()
}

/// The workers as a table: on `/workers` all of them (`queue` none), on a
/// queue's page those that work it, with how many of its jobs each runs.
fn table(snapshot: &Snapshot, workers: &[WorkerInfo], queue: Option<&str>) -> Markup {
    let since = |ms: u64| html::age(Some(snapshot.local_ms.saturating_sub(ms) / 1000));
    html! {
        table #workers-table {
            tr {
                th { "worker" } th { "host" } th.n { "pid" }
                @if queue.is_none() { th { "queues" } }
                th.n { "concurrency" } th.n { "running" }
                th { "version" } th { "protocol" } th.n { "started" } th.n { "last beat" } th.n { "ttl" }
            }
            @for worker in workers {
                @let running = worker.running.iter().filter(|job| queue.is_none_or(|q| job.queue == q)).count();
                tr id=[queue.is_none().then_some(&worker.id)] data-worker=(worker.id) {
                    td { a href=(worker_path(&worker.id)) { code { (worker.id) } } }
                    td { (worker.host) }
                    td.n { (worker.pid) }
                    @if queue.is_none() {
                        td.wrap {
                            @for (i, name) in worker.queues.iter().enumerate() {
                                @if i > 0 { ", " }
                                a href=(queue_path(name, "")) { (name) }
                            }
                        }
                    }
                    td.n { (worker.concurrency) }
                    td.n.running { (running) }
                    td { (worker.version) }
                    td { (worker.protocol) }
                    td.n title=(html::when(worker.started)) { (since(worker.started)) " ago" }
                    td.n.beat title=(html::when_ms(worker.beat)) { (since(worker.beat)) " ago" }
                    td.n { (humantime::format_duration(worker.ttl)) }
                }
            }
        }
    }
}

/// Where a worker's row is: its id as the fragment of `/workers`.
fn worker_path(id: &str) -> String {
    format!("/workers#{}", html::urlencode(id))
}

/// Every job the workers run now: its worker, its queue, its attempt, and
/// when its lease runs out (by the worker's clock, as of its last beat).
fn running(snapshot: &Snapshot, workers: &[WorkerInfo]) -> Markup {
    let jobs: Vec<_> = workers.iter().flat_map(|w| w.running.iter().map(move |job| (w, job))).collect();
    html! {
        @if jobs.is_empty() {
            p.none #no-running { "None of them runs a job now (as of their last beats)." }
        } @else {
            (html::scroll(&html! {
                table #running {
                    tr { th { "job" } th { "queue" } th.n { "attempt" } th { "worker" } th { "lease until" } th.n { "left" } }
                    @for (worker, job) in &jobs {
                        @let left = job.lease_until.saturating_sub(snapshot.local_ms);
                        tr data-job=(job.id.as_str()) {
                            td { a href=(queue_path(&job.queue, &format!("/jobs/{}", job.id))) { code { (job.id) } } }
                            td { a href=(queue_path(&job.queue, "")) { (job.queue) } }
                            td.n { (job.token) }
                            td { a href=(worker_path(&worker.id)) { code { (worker.id) } } }
                            td { (html::when_ms(job.lease_until)) }
                            td.n.dead[left == 0] {
                                @if left == 0 { "ran out" } @else { (html::age(Some(left / 1000))) }
                            }
                        }
                    }
                }
            }))
        }
    }
}

/// The queues page's summary: how many workers live, and the queues with
/// work and no worker.
pub fn overview(snapshot: &Snapshot) -> Markup {
    let unworked: Vec<&String> = match &snapshot.queues {
        Ok(queues) => {
            queues.iter().filter(|(name, view)| snapshot.unworked(name, view)).map(|(n, _)| n).collect()
        }
        Err(_) => Vec::new(),
    };
    html! {
        section #workers {
            @if let Some(full) = &snapshot.full {
                p.bad #full { (full) }
            }
            @match &snapshot.workers {
                Err(why) => p.bad #registry { "The worker registry cannot be read: " (why) },
                Ok(workers) => p #live-workers {
                    a href="/workers" { (workers.len()) " live worker(s)" }
                }
            }
            @if !unworked.is_empty() {
                p.bad #unworked {
                    "No live worker works "
                    @for (i, name) in unworked.iter().enumerate() {
                        @if i > 0 { ", " }
                        a href=(queue_path(name, "")) { (name) }
                    }
                    ": their pending (or due) jobs wait for nobody."
                }
            }
        }
    }
}

/// A queue's row's cell on the queues page: its live workers, flagged when
/// it has work and none.
pub fn cell(snapshot: &Snapshot, name: &str, view: &QueueView) -> Markup {
    let count = snapshot.workers_of(name).map_or("?".into(), |n| n.to_string());
    html! {
        @if snapshot.unworked(name, view) {
            td.n.bad.unworked title="jobs wait and no live worker works this queue" {
                "⚠ " (html::live(&format!("{name}/workers"), &count))
            }
        } @else {
            td.n { (html::live(&format!("{name}/workers"), &count)) }
        }
    }
}

/// A queue's page: the workers that work it, or a flag when it has work and none.
pub fn of_queue(snapshot: &Snapshot, name: &str, view: Option<&QueueView>) -> Markup {
    html! {
        section #workers data-queue=(name) {
            h2 { "Workers" }
            @match &snapshot.workers {
                Err(why) => p.bad #registry { "The worker registry cannot be read: " (why) },
                Ok(workers) => {
                    @let working: Vec<WorkerInfo> = workers.iter().filter(|w| w.works(name)).cloned().collect();
                    @if working.is_empty() {
                        @if view.is_some_and(|view| snapshot.unworked(name, view)) {
                            p.bad #no-worker { "No live worker works this queue: its pending (or due) jobs wait for nobody." }
                        } @else {
                            p.none #no-worker { "No live worker works this queue." }
                        }
                    } @else {
                        (html::scroll(&table(snapshot, &working, Some(name))))
                    }
                }
            }
        }
    }
}
