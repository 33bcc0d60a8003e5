//! The queues page (`/`), a queue's page, and the writes on a whole queue:
//! pause, resume, drain (after typing its name) and configure.
//!
//! Both pages read the shared snapshot for what the counters and the
//! worker registry say: the page asks Redis nothing more for them (but a
//! queue's week by hour, asked for with `?span=hours`). A queue's page
//! reads the newest entries of its event log for its latency.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Form, Path, Query, State as Extract};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use echomq::transition::Config;
use echomq::{Drain, EventLog, Rate, Retention, Settings, Span, State, StatsReply};
use maud::{html, Markup};
use serde::Deserialize;

use super::html::{self, queue_path};
use super::snapshot::{QueueView, Snapshot};
use super::{charts, latency, partitioned_of, queue_of, workers, App, Problem, Write};

/// `/`: every queue with its counts, oldest pending job's age, live
/// workers (flagged when jobs wait for nobody), jobs completed and failed
/// in the last full minute and five, and flow settings, each kept current
/// by `/live`; pause, resume and drain beside it.
pub async fn overview(Extract(app): Extract<Arc<App>>, headers: HeaderMap) -> Response {
    let snapshot = app.snapshots.get().await;
    let token = app.form_token(&headers);
    let queues = match &snapshot.queues {
        Ok(queues) => queues,
        Err(why) => return Problem::Failed(format!("cannot read the queue registry: {why}")).into_response(),
    };
    let body = html! {
        h1 { "Queues" }
        (workers::overview(&snapshot))
        @if queues.is_empty() {
            p.none #no-queues { "No queue yet: the registry names none (a producer notes each queue it writes to)." }
        } @else {
            (html::scroll(&html! {
                table #queues {
                    tr {
                        th { "queue" }
                        @for state in State::ALL { th.n { (state) } }
                        th.n { "oldest" br; "pending" }
                        th.n { "workers" }
                        th.n title="in the last full minute / the last five full minutes" { "completed" br; "1m / 5m" }
                        th.n title="failed or dead, in the last full minute / the last five full minutes" { "failed" br; "1m / 5m" }
                        th { "flow" }
                        @if token.is_some() { th { "" } }
                    }
                    @for (name, view) in queues {
                        (row(&snapshot, name, view, token))
                    }
                }
            }))
            (partitioned(&snapshot, queues))
        }
    };
    html::page("queues", &[], &body).into_response()
}

/// The partitioned queues (protocol 1.8) among the queues, each one row:
/// its totals (its partitions' and the ordinary queue of its name's), the
/// oldest pending job of any, and its limits
/// (an exact rate across them, or each partition's own, in their rows).
fn partitioned(snapshot: &Snapshot, queues: &std::collections::BTreeMap<String, QueueView>) -> Markup {
    if snapshot.partitioned.is_empty() {
        return html! {};
    }
    html! {
        h2 { "Partitioned queues" }
        p.note { "Each is one queue over its partitions, whose rows are above; FIFO and priority hold within a partition, not across them." }
        (html::scroll(&html! {
            table #partitioned {
                tr {
                    th { "queue" } th.n { "partitions" }
                    @for state in State::ALL { th.n { (state) } }
                    th.n { "oldest" br; "pending" }
                    th { "limits" }
                }
                @for p in &snapshot.partitioned {
                    // Its partitions and the ordinary queue of its name, which its workers work too.
                    @let names = p.partitions().iter().map(|q| q.name()).chain([p.name()]);
                    @let views: Vec<&QueueView> = names.filter_map(|name| queues.get(name)).collect();
                    @let total = views.iter().filter_map(|view| view.stats.as_ref().ok()).fold(StatsReply::default(), |sum, s| sum + *s);
                    @let oldest = views.iter().filter_map(|view| snapshot.oldest_pending_secs(view)).max();
                    tr data-partitioned=(p.name()) {
                        td { a href=(queue_path(p.name(), "")) { (p.name()) } }
                        td.n { (p.partitions().len()) }
                        @for state in State::ALL { td.n { (total.of(state)) } }
                        td.n { (html::age(oldest)) }
                        td { (exact_limits(p)) }
                    }
                }
            }
        }))
    }
}

/// A partitioned queue's limits across its partitions: `exact, 50/1s, at
/// most 8 running`, or its partitions' own.
fn exact_limits(p: &echomq::Partitioned) -> String {
    let rate = p.exact().map(rate_text);
    let cap = p.running_cap().map(|cap| format!("at most {cap} running"));
    let exact: Vec<String> = rate.into_iter().chain(cap).collect();
    match exact.is_empty() {
        true => "each partition's own".to_owned(),
        false => format!("exact, {}", exact.join(", ")),
    }
}

/// One queue's row on `/`.
fn row(snapshot: &Snapshot, name: &str, view: &QueueView, token: Option<&str>) -> Markup {
    let flow = view.settings.as_ref().map_or("?".into(), html::flow);
    let paused = view.settings.as_ref().is_some_and(|s| s.paused);
    html! {
        tr data-queue=(name) {
            td { a href=(queue_path(name, "")) { (name) } }
            @match &view.stats {
                Ok(stats) => {
                    @for state in State::ALL {
                        td.n.dead[state == State::Dead && stats.dead > 0] {
                            a href=(queue_path(name, &format!("/state/{state}"))) {
                                (html::live(&format!("{name}/{state}"), &stats.of(state).to_string()))
                            }
                        }
                    }
                    td.n { (html::live(&format!("{name}/oldest"), &html::age(snapshot.oldest_pending_secs(view)))) }
                }
                Err(why) => td.bad.wrap colspan="7" { "unreadable: " (why) }
            }
            (workers::cell(snapshot, name, view))
            @match &view.counts {
                Ok(counts) => {
                    @let (one, five) = (charts::last_full(counts, 1), charts::last_full(counts, 5));
                    td.n.completed {
                        (html::live(&format!("{name}/completed-1m"), &one.completed.to_string())) " / "
                        (html::live(&format!("{name}/completed-5m"), &five.completed.to_string()))
                    }
                    td.n.failed {
                        (html::live(&format!("{name}/failed-1m"), &(one.failed + one.dead).to_string())) " / "
                        (html::live(&format!("{name}/failed-5m"), &(five.failed + five.dead).to_string()))
                    }
                }
                Err(why) => td.bad.wrap colspan="2" title=(why) { "no counters" }
            }
            td.flow.paused[paused] { (html::live(&format!("{name}/flow"), &flow)) }
            @if let Some(token) = token {
                td {
                    @if paused {
                        (html::button(&queue_path(name, "/resume"), "resume", "resume", token))
                    } @else {
                        (html::button(&queue_path(name, "/pause"), "pause", "pause", token))
                    }
                    a href=(queue_path(name, "/drain")) { "drain…" }
                }
            }
        }
    }
}

/// A queue page's query: which span its chart shows.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct QueueQuery {
    span: Option<String>,
}

impl QueueQuery {
    fn span(&self) -> Result<Span, Problem> {
        match self.span.as_deref() {
            None | Some("minutes") => Ok(Span::Minutes),
            Some("hours") => Ok(Span::Hours),
            Some(other) => Err(Problem::BadInput(format!("span {other:?} is not one: minutes or hours"))),
        }
    }
}

/// A queue's page: its settings (a form to change them), its counts per
/// state (each a link to its jobs), the workers that work it, its finished
/// jobs by minute (or by hour, `?span=hours`), the latency of its last
/// jobs (from its event log), links to its schedules and batches.
pub async fn queue_page(
    Extract(app): Extract<Arc<App>>,
    Path(name): Path<String>,
    Query(query): Query<QueueQuery>,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    let queue = queue_of(&app, &name)?;
    if let Some(partitioned) = partitioned_of(&app, &name).await? {
        return partitioned_page(&app, &partitioned, app.form_token(&headers)).await;
    }
    let span = query.span()?;
    let stats = queue.stats().await?;
    let settings = settings_of(&app, &queue).await?;
    let token = app.form_token(&headers);
    // The shared snapshot (a page asked for is demand for live counts too)
    // says whether the registry knows the queue: a misspelt name does not.
    let snapshot = app.snapshots.get().await;
    let unknown = snapshot.queues.as_ref().is_ok_and(|queues| !queues.contains_key(&name));
    let view = snapshot.queues.as_ref().ok().and_then(|queues| queues.get(&name));
    // The hour by minute from the snapshot; a week by hour (or a queue the
    // snapshot does not hold) read for this page.
    let counts = match (span, view) {
        (Span::Minutes, Some(view)) => view.counts.clone(),
        _ => queue.counts(span).await.map_err(|err| crate::failure::explain(&err)),
    };
    let latency = latency::section(&mut app.conn.clone(), queue.keyspace(), settings.events).await;
    let body = html! {
        h1 { "Queue " (name) }
        @if unknown {
            p.note #unknown { "The queue registry does not name " (name) ": no producer has written to it (a misspelt name?)." }
        }
        (flow_bar(&name, &settings, token))
        h2 { "Jobs" }
        (counts_table(&name, &stats))
        (workers::of_queue(&snapshot, &name, view))
        (charts::section(&name, span, counts.as_ref().map_err(String::as_str)))
        (latency)
        h2 { "Settings" }
        (settings_table(&settings))
        @if let Some(token) = token { (settings_form(&name, &settings, token)) }
    };
    Ok(html::page(&name, &[(name.clone(), queue_path(&name, ""))], &body).into_response())
}

/// A queue's settings: CONFIG's, or, for a read-only ACL user who may not
/// run CONFIG, the plain read of its config hash.
async fn settings_of(app: &App, queue: &echomq::Queue) -> Result<Settings, Problem> {
    match queue.settings().await {
        Ok(settings) => Ok(settings),
        Err(_) => Ok(crate::flow::settings(&mut app.conn.clone(), queue.keyspace()).await?),
    }
}

/// A partitioned queue's page (protocol 1.8): each partition, linked to its
/// own page, with its counts by state (each linked to those jobs there),
/// then the ordinary queue of its name (a speaker before 1.8 enqueues
/// there) and the total; pause and resume hold every partition.
async fn partitioned_page(
    app: &App,
    partitioned: &echomq::Partitioned,
    token: Option<&str>,
) -> Result<Response, Problem> {
    let name = partitioned.name();
    let mut rows = Vec::new();
    for queue in partitioned.partitions().iter().chain([&queue_of(app, name)?]) {
        let settings = settings_of(app, queue).await?;
        rows.push((queue.name().to_owned(), queue.stats().await?, settings));
    }
    let total = rows.iter().fold(StatsReply::default(), |sum, (_, stats, _)| sum + *stats);
    let paused = rows.iter().filter(|(queue, _, settings)| settings.paused && queue != name).count();
    let body = html! {
        h1 { "Queue " (name) }
        p.note #partitioned {
            "Partitioned over " (rows.len() - 1) " queues (protocol 1.8): a job is in the partition its id, group or \
             unique key names. FIFO and priority hold within a partition, not across them."
        }
        div.bar {
            span #flow { (paused) " of " (rows.len() - 1) " partitions paused; limits: " (exact_limits(partitioned)) }
            @if let Some(token) = token {
                (html::button(&queue_path(name, "/pause"), "pause", "pause all", token))
                (html::button(&queue_path(name, "/resume"), "resume", "resume all", token))
            }
        }
        h2 { "Partitions" }
        (html::scroll(&html! {
            table #partitions {
                tr { th { "queue" } @for state in State::ALL { th.n { (state) } } th { "flow" } }
                @for (queue, stats, settings) in &rows {
                    tr data-partition=(queue) {
                        td { a href=(queue_path(queue, "")) { (queue) } @if queue == name { " (its own)" } }
                        @for state in State::ALL {
                            td.n { a href=(queue_path(queue, &format!("/state/{state}"))) { (stats.of(state)) } }
                        }
                        td { (crate::flow::describe(settings)) }
                    }
                }
                tr #total { th { "all" } @for state in State::ALL { td.n { (total.of(state)) } } td {} }
            }
        }))
    };
    Ok(html::page(name, &[(name.to_owned(), queue_path(name, ""))], &body).into_response())
}

/// A queue page's bar: its flow (paused, limits), pause or resume and
/// drain when the dashboard takes writes (`token`), its schedules,
/// batches and groups.
fn flow_bar(name: &str, settings: &Settings, token: Option<&str>) -> Markup {
    html! {
        div.bar {
            span.paused[settings.paused] #flow { (html::live(&format!("{name}/flow"), &html::flow(settings))) }
            @if let Some(token) = token {
                @if settings.paused {
                    (html::button(&queue_path(name, "/resume"), "resume", "resume", token))
                } @else {
                    (html::button(&queue_path(name, "/pause"), "pause", "pause", token))
                }
                a href=(queue_path(name, "/drain")) { "drain…" }
            }
            a href=(queue_path(name, "/schedules")) { "schedules" }
            a href=(queue_path(name, "/batches")) { "batches" }
            a href=(queue_path(name, "/groups")) { "groups" }
        }
    }
}

/// A queue page's counts per state, each a link to its jobs.
fn counts_table(name: &str, stats: &StatsReply) -> Markup {
    html::scroll(&html! {
        table #counts {
            tr { @for state in State::ALL { th.n { (state) } } }
            tr {
                @for state in State::ALL {
                    td.n {
                        a id=(format!("count-{state}")) href=(queue_path(name, &format!("/state/{state}"))) {
                            (html::live(&format!("{name}/{state}"), &stats.of(state).to_string()))
                        }
                    }
                }
            }
        }
    })
}

fn settings_table(settings: &Settings) -> Markup {
    let limit = |n: Option<String>| n.unwrap_or_else(|| "none".into());
    html! {
        (html::scroll(&html! {
            table #settings {
                tr { th { "paused" } td { (settings.paused) } }
                tr { th { "concurrency" } td { (limit(settings.concurrency.map(|n| n.to_string()))) } }
                tr { th { "rate" } td { (limit(settings.rate.map(rate_text))) } }
                tr { th { "keep done" } td { (keep_text(settings.keep_done)) } }
                tr { th { "keep dead" } td { (keep_text(settings.keep_dead)) } }
                tr { th { "keep cancelled" } td { (keep_text(settings.keep_cancelled)) } }
                tr { th { "events" } td { (events_text(settings.events)) } }
            }
        }))
    }
}

fn rate_text(Rate { claims, per }: Rate) -> String {
    format!("{claims}/{}", humantime::format_duration(per))
}

/// Retention as `configure`'s form takes it: `AGE/COUNT`, `none` for no bound.
fn keep_text(keep: Retention) -> String {
    let age = keep.age.map_or("none".into(), |age| humantime::format_duration(age).to_string());
    let count = keep.count.map_or("none".into(), |n| n.to_string());
    format!("{age}/{count}")
}

fn events_text(events: EventLog) -> String {
    match events {
        EventLog::Off => "off".into(),
        EventLog::Keep(n) => n.to_string(),
    }
}

fn settings_form(name: &str, settings: &Settings, token: &str) -> Markup {
    let field = |label: &str, field: &str, value: String, hint: &str| {
        html! { label { (label) " " input type="text" name=(field) value=(value) size="14" title=(hint); } }
    };
    html! {
        form #configure method="post" action=(queue_path(name, "/configure")) {
            (html::csrf(token))
            (field("concurrency", "concurrency", settings.concurrency.map_or("none".into(), |n| n.to_string()), "a number of jobs, or none"))
            (field("rate", "rate", settings.rate.map_or("none".into(), rate_text), "claims/period, e.g. 100/1s, or none"))
            (field("keep done", "keep_done", keep_text(settings.keep_done), "AGE/COUNT, e.g. 24h/10000"))
            (field("keep dead", "keep_dead", keep_text(settings.keep_dead), "AGE/COUNT"))
            (field("keep cancelled", "keep_cancelled", keep_text(settings.keep_cancelled), "AGE/COUNT"))
            (field("events", "events", events_text(settings.events), "entries the event log keeps, or off"))
            button type="submit" { "save settings" }
        }
    }
}

/// A form of one CSRF token.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct TokenForm {
    pub csrf: Option<String>,
}

pub async fn pause(
    Extract(app): Extract<Arc<App>>,
    Path(name): Path<String>,
    remote: ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Form(form): Form<TokenForm>,
) -> Result<Response, Problem> {
    set_paused(&app, &name, Write::new(remote, "pause", &name), &headers, form, true).await
}

pub async fn resume(
    Extract(app): Extract<Arc<App>>,
    Path(name): Path<String>,
    remote: ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Form(form): Form<TokenForm>,
) -> Result<Response, Problem> {
    set_paused(&app, &name, Write::new(remote, "resume", &name), &headers, form, false).await
}

async fn set_paused(
    app: &App,
    name: &str,
    write: Write<'_>,
    headers: &HeaderMap,
    form: TokenForm,
    paused: bool,
) -> Result<Response, Problem> {
    app.may_write(&write, headers, form.csrf.as_deref())?;
    // A partitioned queue's name: every partition, as `emq pause` does.
    let done = async {
        if let Some(partitioned) = partitioned_of(app, name).await? {
            let each = if paused { partitioned.pause().await? } else { partitioned.resume().await? };
            return Ok(format!(
                "done: its {} partitions {}",
                each.len(),
                if paused { "paused" } else { "resumed" }
            ));
        }
        let queue = queue_of(app, name)?;
        let settings = if paused { queue.pause().await? } else { queue.resume().await? };
        Ok(format!("done: {}", html::flow(&settings)))
    };
    write.logged(app, done.await, String::clone)?;
    Ok(back(headers, &queue_path(name, "")))
}

/// Back where the form was (its Referer, when it is a page of this
/// dashboard), else to `fallback`.
fn back(headers: &HeaderMap, fallback: &str) -> Response {
    let host = headers.get("host").and_then(|h| h.to_str().ok()).unwrap_or_default();
    let from = headers.get("referer").and_then(|r| r.to_str().ok()).and_then(|r| {
        let rest = r.strip_prefix("http://").or_else(|| r.strip_prefix("https://"))?;
        let path = rest.strip_prefix(host)?;
        // A path of this site only: never `//host` or a backslash, which a
        // browser would read as another site.
        (path.starts_with('/') && !path.starts_with("//") && !path.contains('\\')).then(|| path.to_owned())
    });
    super::back_to(from.as_deref().unwrap_or(fallback))
}

/// The page that asks for the queue's name before draining it.
pub async fn drain_page(
    Extract(app): Extract<Arc<App>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    let queue = queue_of(&app, &name)?;
    let stats = queue.stats().await?;
    let body = html! {
        h1 { "Drain " (name) }
        p #drain-what {
            "Deletes its " (stats.pending) " pending and " (stats.delayed) " delayed jobs (and, if asked, its "
            (stats.active) " active ones, whose workers lose their leases). Finished jobs stay."
        }
        @if let Some(token) = app.form_token(&headers) {
            form #drain method="post" action=(queue_path(&name, "/drain")) {
                (html::csrf(token))
                label { "type the queue's name to confirm: " input type="text" name="confirm" autocomplete="off"; }
                label { input type="checkbox" name="active" value="yes"; " the active jobs too" }
                button.danger type="submit" { "drain" }
            }
        } @else {
            p.note { "This dashboard does not take writes from you here (read-only, or no token)." }
        }
    };
    Ok(html::page(&format!("drain {name}"), &[(name.clone(), queue_path(&name, ""))], &body).into_response())
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct DrainForm {
    csrf: Option<String>,
    confirm: String,
    active: Option<String>,
}

pub async fn drain(
    Extract(app): Extract<Arc<App>>,
    Path(name): Path<String>,
    remote: ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Form(form): Form<DrainForm>,
) -> Result<Response, Problem> {
    let write = Write::new(remote, "drain", &name);
    app.may_write(&write, &headers, form.csrf.as_deref())?;
    let done = async {
        let queue = queue_of(&app, &name)?;
        if form.confirm != name {
            return Err(Problem::BadInput(format!(
                "to drain it, type the queue's name exactly ({name:?}); {:?} is not it: nothing was drained",
                form.confirm
            )));
        }
        let which = if form.active.is_some() { Drain::WithActive } else { Drain::Waiting };
        Ok(queue.drain(which).await?)
    };
    write.logged(&app, done.await, |n| format!("done: {n} jobs drained"))?;
    Ok(super::back_to(&queue_path(&name, "")))
}

/// The settings form: each field as `emq config` takes it; an empty one is left as it is.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct ConfigureForm {
    csrf: Option<String>,
    concurrency: String,
    rate: String,
    keep_done: String,
    keep_dead: String,
    keep_cancelled: String,
    events: String,
}

impl ConfigureForm {
    /// The change it asks for; a field that does not read is refused, naming it.
    fn config(&self) -> Result<Config, Problem> {
        fn read<T>(
            field: &str,
            text: &str,
            parse: fn(&str) -> Result<T, String>,
        ) -> Result<Option<T>, Problem> {
            let text = text.trim();
            if text.is_empty() {
                return Ok(None);
            }
            parse(text)
                .map(Some)
                .map_err(|why| Problem::BadInput(format!("{field}: {why}: nothing was changed")))
        }
        let mut config = Config::default();
        config.concurrency = read("concurrency", &self.concurrency, crate::flow::concurrency)?;
        config.rate = read("rate", &self.rate, crate::flow::rate)?;
        config.keep_done = read("keep done", &self.keep_done, crate::flow::retention)?;
        config.keep_dead = read("keep dead", &self.keep_dead, crate::flow::retention)?;
        config.keep_cancelled = read("keep cancelled", &self.keep_cancelled, crate::flow::retention)?;
        config.events = read("events", &self.events, crate::flow::events_length)?;
        Ok(config)
    }
}

pub async fn configure(
    Extract(app): Extract<Arc<App>>,
    Path(name): Path<String>,
    remote: ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Form(form): Form<ConfigureForm>,
) -> Result<Response, Problem> {
    let write = Write::new(remote, "configure", &name);
    app.may_write(&write, &headers, form.csrf.as_deref())?;
    let done = async {
        let queue = queue_of(&app, &name)?;
        let config = form.config()?;
        Ok(queue.configure(config).await?)
    };
    write.logged(&app, done.await, |s: &Settings| format!("done: {}", html::flow(s)))?;
    Ok(super::back_to(&queue_path(&name, "")))
}
