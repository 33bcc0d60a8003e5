//! A queue's schedules: when each ticks, its next tick, its last tick and
//! whether that tick's job exists (each tick's job id is derived from the
//! schedule and the tick, so this is one look), whether it is paused;
//! trigger (enqueue its job now, under a new id, outside its ticks), pause
//! or resume (a resume fires no tick missed while paused) and remove, each
//! after a confirmation.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Form, Path, State as Extract};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use echomq::schedule::tick_id;
use echomq::{Missed, Scheduled, When};
use maud::{html, Markup};
use serde::Deserialize;

use super::html::{self, queue_path, urlencode};
use super::snapshot::server_ms;
use super::{queue_of, App, Problem, Write};

pub async fn schedules_page(
    Extract(app): Extract<Arc<App>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    let queue = queue_of(&app, &name)?;
    let schedules = queue.schedules().list().await?;
    let now = server_ms(&mut app.conn.clone()).await?;
    let mut rows = Vec::with_capacity(schedules.len());
    for scheduled in &schedules {
        let last = scheduled.schedule.last_at_or_before(now);
        let fired = match last {
            Some(tick) => {
                let id = tick_id(&name, &scheduled.schedule.name, tick);
                let state = queue.inspect(&id).await?.map(|job| job.record.state);
                Some((tick, id, state))
            }
            None => None,
        };
        rows.push(row(&name, scheduled, now, fired, app.form_token(&headers)));
    }
    let body = html! {
        h1 { "Schedules of " (name) }
        @if schedules.is_empty() {
            p.none #no-schedules { "No schedule (`emq schedule add` makes one)." }
        } @else {
            (html::scroll(&html! {
                table #schedules {
                    tr {
                        th { "name" } th { "when" } th { "next tick" } th { "last tick" } th { "payload" }
                        @if app.form_token(&headers).is_some() { th { "" } }
                    }
                    @for row in &rows { (row) }
                }
            }))
            p.note {
                "The queue's workers fire each tick once; a paused schedule's ticks fire nothing, and its "
                "resume fires none it missed; pausing the queue holds the jobs its ticks enqueue."
            }
        }
    };
    let crumbs =
        [(name.clone(), queue_path(&name, "")), ("schedules".to_owned(), queue_path(&name, "/schedules"))];
    Ok(html::page(&format!("schedules · {name}"), &crumbs, &body).into_response())
}

type Fired = Option<(u64, echomq::JobId, Option<echomq::State>)>;

fn row(name: &str, scheduled: &Scheduled, now: u64, fired: Fired, token: Option<&str>) -> Markup {
    let schedule = &scheduled.schedule;
    let when = match &schedule.when {
        When::Every(interval) => format!("every {}", humantime::format_duration(*interval)),
        When::Cron { expr, zone } => format!("cron {expr} ({zone})"),
    };
    let missed = match schedule.missed {
        Missed::Last => "fire the last".to_owned(),
        Missed::Skip => "skip".to_owned(),
        Missed::All(n) => format!("fire each (up to {n})"),
    };
    let next_in =
        humantime::format_duration(std::time::Duration::from_secs(scheduled.next.saturating_sub(now) / 1000));
    html! {
        tr data-schedule=(schedule.name) {
            td { (schedule.name) }
            td {
                (when) @if schedule.paused { " · " strong.paused { "paused" } }
                br; span.note { "missed ticks: " (missed) }
            }
            td { (html::when(scheduled.next)) br; span.note { "in " (next_in) } }
            td {
                @match &fired {
                    None => "-",
                    Some((tick, id, state)) => {
                        (html::when(*tick)) br;
                        @match state {
                            Some(state) => a href=(queue_path(name, &format!("/jobs/{}", urlencode(id.as_str())))) { "its job, " (state) },
                            None => span.note title="not fired yet, or its job is gone" { "(no job)" },
                        }
                    }
                }
            }
            td.flow { code { (String::from_utf8_lossy(&schedule.payload[..schedule.payload.len().min(120)])) } }
            @if let Some(token) = token {
                td {
                    form.inline method="post" action=(queue_path(name, "/schedules/remove")) {
                        (html::csrf(token))
                        input type="hidden" name="name" value=(schedule.name);
                        button.remove type="submit" { "remove…" }
                    }
                    form.inline method="post" action=(queue_path(name, "/schedules/trigger")) {
                        (html::csrf(token))
                        input type="hidden" name="name" value=(schedule.name);
                        button.trigger type="submit" { "trigger now…" }
                    }
                    @let (action, label) = if schedule.paused { ("resume", "resume…") } else { ("pause", "pause…") };
                    form.inline method="post" action=(queue_path(name, &format!("/schedules/{action}"))) {
                        (html::csrf(token))
                        input type="hidden" name="name" value=(schedule.name);
                        button.(action) type="submit" { (label) }
                    }
                }
            }
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct ScheduleForm {
    csrf: Option<String>,
    name: String,
    confirmed: Option<String>,
}

/// Remove a schedule, after a confirmation; the jobs it fired stay.
pub async fn remove(
    Extract(app): Extract<Arc<App>>,
    Path(name): Path<String>,
    remote: ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Form(form): Form<ScheduleForm>,
) -> Result<Response, Problem> {
    let write = Write::new(remote, "unschedule", &name);
    app.may_write(&write, &headers, form.csrf.as_deref())?;
    let queue = queue_of(&app, &name)?;
    if form.confirmed.as_deref() != Some("yes") {
        let said = format!("Remove schedule {:?} of {name}? The jobs it fired stay.", form.name);
        return Ok(confirm(&app, &name, &form.name, "Remove schedule", &said, "remove"));
    }
    let removed =
        write.logged(&app, queue.schedules().remove(&form.name).await.map_err(Problem::from), |removed| {
            format!("done: schedule {:?} {}", form.name, if *removed { "removed" } else { "was not there" })
        })?;
    if !removed {
        return Err(Problem::NotFound(format!("no schedule {:?} in {name}", form.name)));
    }
    Ok(super::back_to(&queue_path(&name, "/schedules")))
}

/// The page that asks to confirm `action` (`remove`, `trigger`, `pause`, `resume`) on
/// schedule `schedule` of queue `name`, posting back to its route.
fn confirm(app: &App, name: &str, schedule: &str, title: &str, said: &str, action: &str) -> Response {
    let fields = [("name", schedule.to_owned())];
    let back = queue_path(name, "/schedules");
    let to = queue_path(name, &format!("/schedules/{action}"));
    html::confirm(title, said, &to, &fields, &app.csrf, &back).into_response()
}

/// Enqueue a schedule's job now, after a confirmation: its payload, a new
/// id; its ticks go on as before.
pub async fn trigger(
    Extract(app): Extract<Arc<App>>,
    Path(name): Path<String>,
    remote: ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Form(form): Form<ScheduleForm>,
) -> Result<Response, Problem> {
    let write = Write::new(remote, "trigger", &name);
    app.may_write(&write, &headers, form.csrf.as_deref())?;
    let queue = queue_of(&app, &name)?;
    if form.confirmed.as_deref() != Some("yes") {
        let said = format!(
            "Enqueue the job of schedule {:?} of {name} now, outside its ticks? Its next tick stays.",
            form.name
        );
        return Ok(confirm(&app, &name, &form.name, "Trigger schedule", &said, "trigger"));
    }
    let triggered = write.logged(
        &app,
        queue.schedules().trigger(&form.name).await.map_err(Problem::from),
        |triggered| match triggered {
            Some(id) => format!("done: schedule {:?} enqueued {id}", form.name),
            None => format!("done: no schedule {:?}", form.name),
        },
    )?;
    match triggered {
        Some(id) => Ok(super::back_to(&queue_path(&name, &format!("/jobs/{}", urlencode(id.as_str()))))),
        None => Err(Problem::NotFound(format!("no schedule {:?} in {name}", form.name))),
    }
}

/// Pause a schedule, after a confirmation: its ticks fire no job until it is resumed.
pub async fn pause(
    Extract(app): Extract<Arc<App>>,
    Path(name): Path<String>,
    remote: ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Form(form): Form<ScheduleForm>,
) -> Result<Response, Problem> {
    set_paused(&app, &name, Write::new(remote, "pause schedule", &name), &headers, form, true).await
}

/// Resume a paused schedule, after a confirmation: from its first tick
/// after now; those missed while it was paused do not fire.
pub async fn resume(
    Extract(app): Extract<Arc<App>>,
    Path(name): Path<String>,
    remote: ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Form(form): Form<ScheduleForm>,
) -> Result<Response, Problem> {
    set_paused(&app, &name, Write::new(remote, "resume schedule", &name), &headers, form, false).await
}

async fn set_paused(
    app: &App,
    name: &str,
    write: Write<'_>,
    headers: &HeaderMap,
    form: ScheduleForm,
    paused: bool,
) -> Result<Response, Problem> {
    app.may_write(&write, headers, form.csrf.as_deref())?;
    let queue = queue_of(app, name)?;
    let (action, done, title, why) = if paused {
        ("pause", "paused", "Pause schedule", "Its ticks fire no job until it is resumed.")
    } else {
        let why =
            "Its ticks start again from the first after now; those missed while it was paused do not fire.";
        ("resume", "resumed", "Resume schedule", why)
    };
    if form.confirmed.as_deref() != Some("yes") {
        let said = format!("{title} {:?} of {name}? {why}", form.name);
        return Ok(confirm(app, name, &form.name, title, &said, action));
    }
    let schedules = queue.schedules();
    let found = if paused { schedules.pause(&form.name).await } else { schedules.resume(&form.name).await };
    let scheduled = write.logged(app, found.map_err(Problem::from), |found| match found {
        Some(_) => format!("done: schedule {:?} {done}", form.name),
        None => format!("done: no schedule {:?}", form.name),
    })?;
    match scheduled {
        Some(_) => Ok(super::back_to(&queue_path(name, "/schedules"))),
        None => Err(Problem::NotFound(format!("no schedule {:?} in {name}", form.name))),
    }
}
