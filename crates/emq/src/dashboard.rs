//! `emq dashboard`: a web UI served by the command itself (axum,
//! server-rendered, no JavaScript): queues with their counts, throughput over
//! time, each queue's jobs, a job's record, and retry and cancel buttons.
//! `/metrics` serves the counts as Prometheus text.
//!
//! Safety: it binds 127.0.0.1 by default. Bound anywhere else it needs a
//! token for write actions: given with `--token`, or made up and printed; a
//! browser presents it once at `/login?token=…` and keeps it in a cookie.
//! Every form carries a per-process CSRF token, and a cross-site POST
//! (`Sec-Fetch-Site: cross-site`) is refused.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, UNIX_EPOCH};

use axum::extract::{Form, Path, Query, State as Extract};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;
use echomq::{JobId, Keyspace, Queue, State};
use serde::Deserialize;

use crate::connect::{Error, Server};
use crate::ops::{discover, priority};

mod html;

use html::{escape, urlencode};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Where to listen. Anything but loopback makes write actions need a
    /// token; the pages (payloads, errors, results) are open to whoever
    /// reaches the address: put it behind your own access control.
    #[arg(long, default_value = "127.0.0.1:7880")]
    bind: SocketAddr,
    /// The token write actions need when not bound to loopback (default: a new one, printed).
    // `--help` never shows the environment's value: it is a secret.
    #[arg(long, env = "ECHOMQ_DASHBOARD_TOKEN", hide_env_values = true)]
    token: Option<String>,
}

/// How many throughput samples the chart keeps (one a second).
const SAMPLES: usize = 120;

struct App {
    server_conn: crate::connect::Conn,
    executor: Arc<dyn echomq::Executor>,
    csrf: String,
    token: Option<String>,
    /// (when, jobs finished so far per queue), newest last.
    samples: Mutex<VecDeque<(Instant, u64)>>,
}

pub async fn run(server: &Server, args: Args) -> Result<(), Error> {
    let token = match (args.bind.ip().is_loopback(), args.token) {
        (_, Some(token)) => Some(token),
        (true, None) => None,
        (false, None) => Some(random_hex()?),
    };
    let app = Arc::new(App {
        server_conn: server.connection().await?,
        executor: server.executor().await?,
        csrf: random_hex()?,
        token: token.clone(),
        samples: Mutex::default(),
    });
    tokio::spawn(sample(app.clone()));
    let router = Router::new()
        .route("/", get(overview))
        .route("/queues/{queue}", get(queue_page))
        .route("/queues/{queue}/jobs/{id}", get(job_page))
        .route("/queues/{queue}/jobs/{id}/{action}", post(job_action))
        .route("/metrics", get(metrics))
        .route("/login", get(login))
        .with_state(app);
    let listener = tokio::net::TcpListener::bind(args.bind).await?;
    let address = listener.local_addr()?;
    tell!("emq dashboard on http://{address}/");
    if let Some(token) = token {
        tell!("write actions need the token: open http://{address}/login?token={token}");
    }
    axum::serve(listener, router).with_graceful_shutdown(shutdown()).await?;
    Ok(())
}

async fn shutdown() {
    let _ = tokio::signal::ctrl_c().await;
}

/// Every second, how many jobs are finished in all: the chart's data.
async fn sample(app: Arc<App>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        if let Ok(counts) = counts(&app).await {
            let finished = counts.values().flatten().map(|s| s.done + s.dead).sum();
            let mut samples = app.samples.lock().unwrap_or_else(|p| p.into_inner());
            samples.push_back((Instant::now(), finished));
            if samples.len() > SAMPLES {
                samples.pop_front();
            }
        }
    }
}

/// Each queue's counts, or why they could not be read: one damaged queue
/// (a key of the wrong type) does not hide the others.
async fn counts(app: &App) -> Result<BTreeMap<String, Result<echomq::StatsReply, String>>, Error> {
    let mut out = BTreeMap::new();
    for name in discover(&mut app.server_conn.clone()).await? {
        let stats = Queue::new(app.executor.clone(), &name)?.stats().await;
        out.insert(name, stats.map_err(|err| crate::failure::explain(&err)));
    }
    Ok(out)
}

fn failure(err: impl std::fmt::Display) -> Response {
    (StatusCode::INTERNAL_SERVER_ERROR, Html(html::page("error", None, &escape(&err.to_string()))))
        .into_response()
}

async fn overview(Extract(app): Extract<Arc<App>>) -> Response {
    let counts = match counts(&app).await {
        Ok(counts) => counts,
        Err(err) => return failure(err),
    };
    let rows: Vec<Vec<String>> = counts
        .iter()
        .map(|(name, s)| {
            let link = format!(r#"<a href="/queues/{}">{}</a>"#, urlencode(name), escape(name));
            match s {
                Ok(s) => [s.pending, s.active, s.delayed, s.done, s.dead, s.cancelled].iter().fold(
                    vec![link],
                    |mut row, n| {
                        row.push(n.to_string());
                        row
                    },
                ),
                Err(why) => vec![link, format!("unreadable: {}", escape(why))],
            }
        })
        .collect();
    let rates: Vec<f64> = {
        let samples = app.samples.lock().unwrap_or_else(|p| p.into_inner());
        let samples: Vec<_> = samples.iter().collect();
        samples
            .windows(2)
            .map(|w| w[1].1.saturating_sub(w[0].1) as f64 / (w[1].0 - w[0].0).as_secs_f64().max(1e-3))
            .collect()
    };
    let body = format!(
        "<h2>Queues</h2>{}<h2>Throughput</h2>{}<p>jobs finished per second, the last two minutes</p>",
        html::table("queues", &["queue", "pending", "active", "delayed", "done", "dead", "cancelled"], &rows),
        html::chart(&rates)
    );
    Html(html::page("queues", Some(2), &body)).into_response()
}

async fn queue_page(
    Extract(app): Extract<Arc<App>>,
    Path(queue): Path<String>,
    headers: HeaderMap,
) -> Response {
    match render_queue(&app, &queue, can_write(&app, &headers)).await {
        Ok(body) => Html(html::page(&queue, Some(2), &body)).into_response(),
        Err(err) => failure(err),
    }
}

async fn render_queue(app: &App, name: &str, writable: bool) -> Result<String, Error> {
    let keys = Keyspace::new(name)?;
    let stats = Queue::new(app.executor.clone(), name)?.stats().await?;
    let mut body = String::new();
    for (state, count) in [
        (State::Pending, stats.pending),
        (State::Active, stats.active),
        (State::Delayed, stats.delayed),
        (State::Done, stats.done),
        (State::Dead, stats.dead),
        (State::Cancelled, stats.cancelled),
    ] {
        body.push_str(&format!(r#"<h3>{state} <span id="count-{state}">{count}</span></h3>"#));
        let jobs: Vec<(String, f64)> = redis::cmd("ZRANGE")
            .arg(keys.state(state))
            .arg(0)
            .arg(19)
            .arg("WITHSCORES")
            .query_async(&mut app.server_conn.clone())
            .await?;
        let rows: Vec<Vec<String>> = jobs
            .into_iter()
            .map(|(id, score)| {
                let link = format!(
                    r#"<a href="/queues/{}/jobs/{id}"><code>{id}</code></a>"#,
                    urlencode(name),
                    id = escape(&id)
                );
                let mut actions = String::new();
                if writable && state == State::Dead {
                    actions.push_str(&html::action(name, &id, "retry", &app.csrf));
                }
                if writable && !matches!(state, State::Done | State::Cancelled) {
                    actions.push_str(&html::action(name, &id, "cancel", &app.csrf));
                }
                vec![link, describe(state, score), actions]
            })
            .collect();
        if rows.is_empty() {
            body.push_str(&format!(r#"<p id="jobs-{state}" class="none">none</p>"#));
        } else {
            body.push_str(&html::table(&format!("jobs-{state}"), &["job", "", ""], &rows));
        }
    }
    Ok(body)
}

fn describe(state: State, score: f64) -> String {
    let at = || humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(score.max(0.0) as u64));
    match state {
        State::Pending => format!("priority {score}"),
        State::Active => format!("lease until {}", at()),
        State::Delayed => format!("due {}", at()),
        _ => format!("since {}", at()),
    }
}

async fn job_page(Extract(app): Extract<Arc<App>>, Path((queue, id)): Path<(String, String)>) -> Response {
    let shown = async {
        let id: JobId = id.parse()?;
        let job = Queue::new(app.executor.clone(), &queue)?.inspect(&id).await?;
        let Some(job) = job else { return Ok::<_, Error>(format!("no job {}", escape(id.as_str()))) };
        let r = job.record;
        let priority = priority(&mut app.server_conn.clone(), &queue, &id).await?;
        let mut rows = vec![
            vec!["state".into(), r.state.to_string()],
            vec!["attempts".into(), r.attempts.to_string()],
            vec!["payload".into(), format!("<pre>{}</pre>", escape(&String::from_utf8_lossy(&r.payload)))],
        ];
        if let Some(priority) = priority {
            rows.insert(2, vec!["priority".into(), escape(&priority)]);
        }
        for (name, at) in [("enqueued_at", r.enqueued_at), ("updated_at", r.updated_at)] {
            if let Some(at) = at {
                rows.push(vec![name.into(), describe(State::Done, at as f64).replace("since ", "")]);
            }
        }
        if let Some(error) = job.error {
            rows.push(vec!["last error".into(), format!(r#"<pre class="dead">{}</pre>"#, escape(&error))]);
        }
        if let Some(progress) = job.progress {
            rows.push(vec![
                "progress".into(),
                format!("<pre>{}</pre>", escape(&String::from_utf8_lossy(&progress))),
            ]);
        }
        Ok(html::table("record", &["field", "value"], &rows))
    };
    match shown.await {
        Ok(body) => Html(html::page(&format!("{queue} / {id}"), None, &body)).into_response(),
        Err(err) => failure(err),
    }
}

#[derive(Deserialize)]
struct ActionForm {
    csrf: String,
}

async fn job_action(
    Extract(app): Extract<Arc<App>>,
    Path((queue, id, action)): Path<(String, String, String)>,
    headers: HeaderMap,
    Form(form): Form<ActionForm>,
) -> Response {
    let cross_site = headers.get("sec-fetch-site").is_some_and(|v| v != "same-origin" && v != "none");
    if !can_write(&app, &headers) || form.csrf != app.csrf || cross_site {
        return (StatusCode::FORBIDDEN, "write actions need the dashboard's token and a form of its own")
            .into_response();
    }
    let done = async {
        let id: JobId = id.parse()?;
        let q = Queue::new(app.executor.clone(), &queue)?;
        match action.as_str() {
            "retry" => q.retry(&id).await?,
            "cancel" => drop(q.cancel(&id).await?),
            other => return Err::<(), Error>(format!("no action {other}").into()),
        }
        Ok(())
    };
    match done.await {
        Ok(()) => Redirect::to(&format!("/queues/{}", urlencode(&queue))).into_response(),
        Err(err) => (StatusCode::BAD_REQUEST, escape(&err.to_string())).into_response(),
    }
}

/// Whether this request may write: always on loopback without a token, else with the token's cookie.
fn can_write(app: &App, headers: &HeaderMap) -> bool {
    let Some(token) = &app.token else { return true };
    let wanted = format!("emq_token={token}");
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .any(|cookie| cookie.trim() == wanted)
}

#[derive(Deserialize)]
struct LoginQuery {
    token: String,
}

async fn login(Extract(app): Extract<Arc<App>>, Query(query): Query<LoginQuery>) -> Response {
    if app.token.as_deref() != Some(query.token.as_str()) {
        return (StatusCode::FORBIDDEN, "wrong token").into_response();
    }
    let cookie = format!("emq_token={}; HttpOnly; SameSite=Strict; Path=/", query.token);
    ([(header::SET_COOKIE, cookie)], Redirect::to("/")).into_response()
}

/// The counts, as Prometheus text.
async fn metrics(Extract(app): Extract<Arc<App>>) -> Response {
    let counts = match counts(&app).await {
        Ok(counts) => counts,
        Err(err) => {
            let said = format!("cannot read the queues: {}\n", crate::failure::explain(err.as_ref()));
            return (StatusCode::SERVICE_UNAVAILABLE, [(header::CONTENT_TYPE, "text/plain")], said)
                .into_response();
        }
    };
    let mut text = String::from("# HELP emq_jobs Jobs in each state, per queue.\n# TYPE emq_jobs gauge\n");
    let mut unreadable = String::new();
    for (queue, s) in counts {
        let queue = queue.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n");
        let Ok(s) = s else {
            unreadable.push_str(&format!("emq_queue_unreadable{{queue=\"{queue}\"}} 1\n"));
            continue;
        };
        for (state, n) in [
            ("pending", s.pending),
            ("active", s.active),
            ("delayed", s.delayed),
            ("done", s.done),
            ("dead", s.dead),
            ("cancelled", s.cancelled),
        ] {
            text.push_str(&format!("emq_jobs{{queue=\"{queue}\",state=\"{state}\"}} {n}\n"));
        }
    }
    if !unreadable.is_empty() {
        text.push_str("# HELP emq_queue_unreadable Queues whose counts could not be read (a key of the wrong type); the dashboard says why.\n# TYPE emq_queue_unreadable gauge\n");
        text.push_str(&unreadable);
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

/// 128 random bits as hex, from the kernel.
fn random_hex() -> Result<String, Error> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
