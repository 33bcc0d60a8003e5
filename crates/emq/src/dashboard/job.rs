//! A job's page: its record, payload (pretty JSON, text, or hex), headers,
//! policy, progress, result, priority, every time, its events in order, and
//! retry and cancel (after a confirmation).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{ConnectInfo, Form, Path, State as Extract};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use echomq::{Inspection, JobId, Keyspace, State};
use maud::{html, Markup};
use serde::Deserialize;

use super::html::{self, queue_path};
use super::{job_id, queue_of, App, Problem, Write};
use crate::connect::{Conn, Error};
use crate::inspect::describe_policy;

/// How many entries of the event log one page view reads at most, looking
/// for a job's events (from its enqueue on).
const EVENTS_BUDGET: usize = 5_000;
/// How many one XREAD reads.
const EVENTS_STEP: usize = 500;
/// How many bytes of a value are shown at most.
const TEXT_SHOWN: usize = 64 * 1024;
/// How many bytes of a binary value are shown as hex.
const HEX_SHOWN: usize = 4096;

pub async fn job_page(
    Extract(app): Extract<Arc<App>>,
    Path((name, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    let queue = queue_of(&app, &name)?;
    let id = job_id(&id)?;
    // A partitioned queue's name: the job's page in its partition.
    if let Some(partitioned) = super::partitioned_of(&app, &name).await? {
        return Ok(super::back_to(&queue_path(partitioned.partition_of(&id).name(), &format!("/jobs/{id}"))));
    }
    let Some(job) = queue.inspect(&id).await? else {
        return Err(Problem::NotFound(format!(
            "no job {id} in queue {name}: never enqueued there, or deleted since"
        )));
    };
    let keys = queue.keyspace();
    let mut conn = app.conn.clone();
    let record = &job.record;
    let priority = crate::inspect::priority(&mut conn, &name, &id).await?;
    // Only one row of the page: a user who may not run ZSCORE (a monitor) does without it.
    let score: Option<f64> = redis::cmd("ZSCORE")
        .arg(keys.state(record.state))
        .arg(id.as_str())
        .query_async(&mut conn)
        .await
        .ok()
        .flatten();
    let born = record.enqueued_at.or_else(|| super::snapshot::minted_ms(&id));
    let events = job_events(&mut conn, keys, &id, born).await?;
    let flow = super::flow::flow_part(&app, &queue, &id).await?;
    let state = record.state;
    let token = app.form_token(&headers);
    let body = html! {
        h1 { "Job " code { (id) } }
        @if let Some(token) = token { (actions(&name, &id, state, token)) }
        (record_table(&name, &job, priority.as_deref(), score, born))
        h2 { "Payload " span.note { "(" (record.payload.len()) " bytes)" } }
        div #payload { (bytes(&record.payload)) }
        (flow)
        h2 { "Events" }
        (events.render())
    };
    let crumbs = [
        (name.clone(), queue_path(&name, "")),
        (state.to_string(), queue_path(&name, &format!("/state/{state}"))),
    ];
    Ok(html::page(id.as_str(), &crumbs, &body).into_response())
}

/// A job's buttons: retry when it is dead, cancel unless it is done or
/// cancelled already.
fn actions(name: &str, id: &JobId, state: State, token: &str) -> Markup {
    html! {
        div.bar #actions {
            @if state == State::Dead {
                (html::button(&job_path(name, id, "/retry"), "retry", "retry", token))
            }
            @if !matches!(state, State::Done | State::Cancelled) {
                (html::button(&job_path(name, id, "/cancel"), "cancel…", "cancel", token))
            }
        }
    }
}

/// A job's record with its `priority`, its `score` in its state's set (when
/// the user may read it) and when it was `born` (enqueued, or minted), and
/// what is kept beside it: its policy, headers, last error, progress and
/// result.
fn record_table(
    name: &str,
    job: &Inspection,
    priority: Option<&str>,
    score: Option<f64>,
    born: Option<u64>,
) -> Markup {
    let record = &job.record;
    let state = record.state;
    html::scroll(&html! {
        table #record {
            tr { th { "state" } td { a href=(queue_path(name, &format!("/state/{state}"))) { (state) } } }
            tr { th { "attempts" } td { (record.attempts) } }
            @if let Some(priority) = priority { tr { th { "priority" } td { (priority) } } }
            @if let Some(group) = &job.group { tr { th { "group" } td.wrap { a href=(queue_path(name, "/groups")) { (group) } } } }
            @if let Some(at) = record.enqueued_at { tr { th { "enqueued" } td { (html::when(at)) } } }
            @else if let Some(at) = born { tr { th { "minted" } td { (html::when(at)) " (from its id)" } } }
            @if let Some(at) = record.updated_at { tr { th { "updated" } td { (html::when(at)) } } }
            @if let Some(score) = score { (score_row(state, score, record.enqueued_at)) }
            @if let Some(policy) = &job.policy { tr { th { "policy" } td { (describe_policy(policy)) } } }
            @for (header, value) in &job.headers { tr { th { "header " (header) } td.wrap { (value) } } }
            @if let Some(error) = &job.error { tr { th { "last error" } td.wrap { pre.dead #error { (error) } } } }
            @if let Some(progress) = &job.progress { tr { th { "progress" } td.wrap #progress { (bytes(progress)) } } }
            @if let Some(result) = &job.result { tr { th { "result" } td.wrap #result { (bytes(result)) } } }
        }
    })
}

fn job_path(queue: &str, id: &JobId, rest: &str) -> String {
    queue_path(queue, &format!("/jobs/{}{rest}", html::urlencode(id.as_str())))
}

/// The state set's score, in words: when it is due, its lease ends, or it finished.
fn score_row(state: State, score: f64, enqueued: Option<u64>) -> Markup {
    let at = score.max(0.0) as u64;
    let (what, value) = match state {
        State::Pending => return html! {},
        State::Delayed => ("due", html::when(at)),
        State::Waiting => ("waiting since", html::when(at)),
        State::Active => ("lease until", html::when(at)),
        State::Done | State::Dead | State::Cancelled => {
            let took = enqueued.map_or(String::new(), |born| {
                format!(
                    " ({} after its enqueue)",
                    humantime::format_duration(Duration::from_millis(at.saturating_sub(born)))
                )
            });
            ("finished", format!("{}{took}", html::when(at)))
        }
    };
    html! { tr { th { (what) } td { (value) } } }
}

/// Bytes as a person reads them: JSON pretty-printed, text as it is, else
/// hex; the first [`TEXT_SHOWN`] bytes of a long one.
pub fn bytes(value: &[u8]) -> Markup {
    if value.len() > TEXT_SHOWN {
        let cut = &value[..TEXT_SHOWN];
        // Whole characters only: a cut inside one would read as binary.
        let cut = match std::str::from_utf8(cut) {
            Ok(_) => cut,
            Err(err) => &cut[..err.valid_up_to()],
        };
        return html! {
            (bytes(cut))
            p.note { "the first " (cut.len()) " of " (value.len()) " bytes" }
        };
    }
    if let Ok(json) = serde_json::from_slice::<serde_json::Value>(value) {
        if json.is_object() || json.is_array() {
            // Valid JSON: indented as written (keys in their order, numbers as they are).
            let text = String::from_utf8_lossy(value);
            return html! { pre.json { (indented(&text)) } };
        }
    }
    match std::str::from_utf8(value) {
        Ok(text) if !text.chars().any(|c| c.is_control() && c != '\n' && c != '\t' && c != '\r') => {
            html! { pre.text { (text) } }
        }
        _ => {
            let shown = &value[..value.len().min(HEX_SHOWN)];
            html! {
                pre.hex { (hex(shown)) }
                @if shown.len() < value.len() { p.note { "the first " (HEX_SHOWN) " of " (value.len()) " bytes" } }
            }
        }
    }
}

/// JSON text, valid, indented two spaces a level: its tokens as written.
fn indented(json: &str) -> String {
    let mut out = String::with_capacity(json.len() * 2);
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    let mut chars = json.chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.extend(std::iter::repeat_n("  ", depth));
    };
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '{' | '[' => {
                out.push(c);
                while chars.peek().is_some_and(|c| c.is_ascii_whitespace()) {
                    chars.next();
                }
                if chars.peek().is_some_and(|next| matches!(next, '}' | ']')) {
                    out.extend(chars.next());
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c if c.is_ascii_whitespace() => {}
            c => out.push(c),
        }
    }
    out
}

/// A hex dump: 16 bytes a line, with each line's offset.
fn hex(value: &[u8]) -> String {
    value
        .chunks(16)
        .enumerate()
        .map(|(n, line)| {
            let bytes: Vec<String> = line.iter().map(|b| format!("{b:02x}")).collect();
            format!("{:08x}  {}", n * 16, bytes.join(" "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One event of a job: its stream id's ms, its kind, its other fields.
type JobEvent = (u64, String, Vec<(String, String)>);

/// A job's events, as far as one bounded read of the log found them.
struct JobEvents {
    found: Vec<JobEvent>,
    /// Entries older than the job's enqueue were trimmed from the log: its first ones may be gone.
    trimmed: bool,
    /// The read stopped at its budget here (a stream id): later ones were not looked at.
    stopped: Option<String>,
    /// How many entries were read.
    read: usize,
}

/// The job's events: the log from its enqueue (or from its oldest entry,
/// when the job's time is unknown) on, at most [`EVENTS_BUDGET`] entries.
async fn job_events(
    conn: &mut Conn,
    keys: &Keyspace,
    id: &JobId,
    born: Option<u64>,
) -> Result<JobEvents, Error> {
    type Entry = (String, Vec<(String, Vec<u8>)>);
    let trimmed = last_trimmed(conn, keys).await?.is_some_and(|gone| born.is_none_or(|born| gone >= born));
    // XREAD (not XRANGE: a monitor's ACL allows it) reads after an id: from
    // the ms before the job's birth.
    let mut after = born.map_or_else(|| "0-0".to_owned(), |ms| format!("{}-0", ms.saturating_sub(1)));
    let mut out = JobEvents { found: Vec::new(), trimmed, stopped: None, read: 0 };
    loop {
        let read: Option<Vec<(String, Vec<Entry>)>> = redis::cmd("XREAD")
            .arg("COUNT")
            .arg(EVENTS_STEP)
            .arg("STREAMS")
            .arg(keys.events())
            .arg(&after)
            .query_async(conn)
            .await?;
        let entries: Vec<Entry> = read.into_iter().flatten().flat_map(|(_, entries)| entries).collect();
        out.read += entries.len();
        let full = entries.len() == EVENTS_STEP;
        if let Some((last, _)) = entries.last() {
            after.clone_from(last);
        }
        for (entry, fields) in entries {
            if !fields.iter().any(|(field, value)| field == "id" && value == id.as_str().as_bytes()) {
                continue;
            }
            let ms = entry.split('-').next().and_then(|ms| ms.parse().ok()).unwrap_or_default();
            let mut kind = String::new();
            let mut rest = Vec::new();
            for (field, value) in fields {
                let value = String::from_utf8_lossy(&value).into_owned();
                match field.as_str() {
                    "event" => kind = value,
                    "id" => {}
                    _ => rest.push((field, value)),
                }
            }
            out.found.push((ms, kind, rest));
        }
        if !full {
            return Ok(out);
        }
        if out.read >= EVENTS_BUDGET {
            out.stopped = Some(after);
            return Ok(out);
        }
    }
}

/// The ms of the newest entry trimmed (or deleted) from the queue's event
/// log, when any was: XINFO STREAM's `max-deleted-entry-id` (Redis 7). A
/// job enqueued after it lost none of its events. `None` too when the
/// server does not say (no log, or XINFO not allowed).
async fn last_trimmed(conn: &mut Conn, keys: &Keyspace) -> Result<Option<u64>, Error> {
    // No log yet (nothing was trimmed), or a user who may not run XINFO (a
    // monitor): nothing to say. A lost connection shows in the read after.
    let Ok(info) =
        redis::cmd("XINFO").arg("STREAM").arg(keys.events()).query_async::<redis::Value>(conn).await
    else {
        return Ok(None);
    };
    let pairs: Vec<(redis::Value, redis::Value)> = match info {
        redis::Value::Map(pairs) => pairs,
        redis::Value::Array(items) => {
            items.chunks(2).filter_map(|pair| Some((pair.first()?.clone(), pair.get(1)?.clone()))).collect()
        }
        _ => Vec::new(),
    };
    let text = |value: &redis::Value| redis::from_redis_value::<String>(value.clone()).ok();
    let gone = pairs
        .iter()
        .find(|(name, _)| text(name).as_deref() == Some("max-deleted-entry-id"))
        .and_then(|(_, id)| text(id))
        .and_then(|id| id.parse::<echomq::StreamId>().ok());
    Ok(gone.filter(|id| *id != echomq::StreamId::ZERO).map(|id| id.ms))
}

impl JobEvents {
    fn render(&self) -> Markup {
        html! {
            @if self.trimmed {
                p.note #events-trimmed { "Older entries were trimmed from the queue's event log: this job's first events may be gone." }
            }
            @if self.found.is_empty() {
                p.none #events { "No event of this job in the log (it keeps about the queue's `events` setting; off keeps none)." }
            } @else {
                (html::scroll(&html! {
                    table #events {
                        tr { th { "when" } th { "event" } th { "details" } }
                        @for (ms, kind, fields) in &self.found {
                            tr {
                                td { (html::when_ms(*ms)) }
                                td.dead[kind == "dead" || kind == "failed"] { (kind) }
                                td.wrap {
                                    @for (field, value) in fields { (field) "=" (value) " " }
                                }
                            }
                        }
                    }
                }))
            }
            @if let Some(at) = &self.stopped {
                p.note #events-stopped { "Read " (self.read) " entries of the log from its enqueue and stopped at " code { (at) } ": later events of this job are not shown." }
            }
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct ActionForm {
    csrf: Option<String>,
    confirmed: Option<String>,
}

/// Retry or cancel one job; cancel asks first.
pub async fn job_action(
    Extract(app): Extract<Arc<App>>,
    Path((name, id, action)): Path<(String, String, String)>,
    remote: ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Form(form): Form<ActionForm>,
) -> Result<Response, Problem> {
    let write = Write::new(remote, &action, &name);
    app.may_write(&write, &headers, form.csrf.as_deref())?;
    let queue = queue_of(&app, &name)?;
    let id = job_id(&id)?;
    let write = write.jobs(std::slice::from_ref(&id));
    match action.as_str() {
        "retry" => {
            // A child that died and runs again: the parent would run first (emq retry says why).
            let done = match crate::change::rerun_children(&queue, &id).await.map_err(Problem::from) {
                // Looked at just now, with the page's own words for a refusal.
                Ok(rerun) if rerun.is_empty() => {
                    echomq::Flows::of(&queue).retry_now(&id).await.map_err(Problem::from)
                }
                Ok(rerun) => Err(Problem::Conflict(format!(
                    "{}. Retry it once they have (emq retry --force runs it now)",
                    crate::change::rerun_said(&rerun)
                ))),
                Err(problem) => Err(problem),
            };
            write.logged(&app, done, |()| "done".into())?;
        }
        "cancel" if form.confirmed.as_deref() != Some("yes") => {
            let said = format!("Cancel job {id} of {name}? If it is running, its worker loses its lease.");
            let back = job_path(&name, &id, "");
            return Ok(html::confirm(
                "Cancel job",
                &said,
                &job_path(&name, &id, "/cancel"),
                &[],
                &app.csrf,
                &back,
            )
            .into_response());
        }
        "cancel" => {
            write.logged(&app, queue.cancel(&id).await.map_err(Problem::from), |changed| {
                if *changed {
                    "done".into()
                } else {
                    "done: it was cancelled already".into()
                }
            })?;
        }
        other => return Err(Problem::NotFound(format!("no job action {other:?}: retry or cancel"))),
    }
    Ok(super::back_to(&job_path(&name, &id, "")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_as_json_text_or_hex() {
        let json = bytes(br#"{"to":"a@b","n":[1,2]}"#).into_string();
        assert!(
            json.contains("pre class=\"json\"") && json.contains("\n  &quot;to&quot;: &quot;a@b&quot;"),
            "{json}"
        );
        assert!(bytes(b"plain <text>").into_string().contains("plain &lt;text&gt;"));
        let binary = bytes(&[0, 1, 0xff, 0x10]).into_string();
        assert!(binary.contains("00000000  00 01 ff 10"), "{binary}");
        let long = bytes(&vec![0u8; HEX_SHOWN + 1]).into_string();
        assert!(long.contains(&format!("the first {HEX_SHOWN} of {} bytes", HEX_SHOWN + 1)), "{long}");
        let huge = bytes("é".repeat(TEXT_SHOWN).as_bytes()).into_string();
        assert!(huge.contains(&format!("the first {TEXT_SHOWN} of {} bytes", 2 * TEXT_SHOWN)), "a cut");
        assert!(huge.contains("pre class=\"text\""), "cut on a character boundary, still text");
    }

    #[test]
    fn json_is_indented_as_written() {
        let said = r#"{ "z": {"a,b": "x\"}y", "e": {}, "l": [ ]}, "n": 1.50, "big": 12345678901234567890 }"#;
        let want = "{\n  \"z\": {\n    \"a,b\": \"x\\\"}y\",\n    \"e\": {},\n    \"l\": []\n  },\n  \"n\": 1.50,\n  \"big\": 12345678901234567890\n}";
        assert_eq!(indented(said), want, "keys in order, numbers and strings as written");
    }
}
