//! `emq dashboard`: a web UI served by the command itself (axum, pages from
//! `maud` templates, which escape every value): the queues with their
//! counts, settings and oldest pending job; a queue's settings; its jobs per
//! state, newest first, a page of 25 at a time, with a search and bulk retry
//! and cancel; a job's record and events; a queue's schedules, and its open
//! batches, and its fair groups; its finished
//! jobs by minute (or hour) from the server's counters; the live workers and
//! the jobs they run. Counts stay
//! live through server-sent events (`/live`) from one shared snapshot, and
//! `/metrics` serves that snapshot as Prometheus text. With JavaScript off
//! every page still works: links, forms, a reload.
//!
//! Safety: it binds 127.0.0.1 by default. Bound anywhere else it needs a
//! token for write actions: given with `--token`, or made up and printed; a
//! browser presents it once at `/login?token=…` and keeps it in a cookie.
//! Every form carries a per-process CSRF token, a cross-site POST
//! (`Sec-Fetch-Site: cross-site`) is refused, `--read-only` refuses every
//! write, and each write is logged (who, what, which queue and jobs, outcome).
//!
//! # Layout
//! - `snapshot.rs`: the shared snapshot of every queue (counts, settings,
//!   oldest pending job, counters by minute) and of the live workers, taken
//!   at most once a second and only on demand; `/live` and `/metrics`.
//! - `charts.rs`: a queue's finished jobs over time, drawn as SVG.
//! - `latency.rs`: a queue's wait and run times at p50/p90/p99/max, from
//!   the newest entries of its event log, read when its page is asked for.
//! - `workers.rs`: `/workers`, and the workers of each queue.
//! - `html.rs`: the page frame, its style and script, and small pieces.
//! - `queues.rs`: `/`, a queue's page, and the queue-wide writes (pause,
//!   resume, drain, configure).
//! - `jobs.rs`: a state's jobs, and the search among them.
//! - `bulk.rs`: retry or cancel of the ticked jobs or of all that match.
//! - `job.rs`: one job's page and its actions.
//! - `schedules.rs`: a queue's schedules, trigger, pause, resume and remove.
//! - `batches.rs`: a queue's open batches and how far each has settled.
//! - `groups.rs`: a queue's fair groups, a page by name.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Query, State as Extract};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;
use echomq::{ErrorKind, JobId, Keyspace, Queue, State};
use serde::Deserialize;

use crate::connect::{Conn, Error, Server};

mod batches;
mod bulk;
mod charts;
mod flow;
mod groups;
mod html;
mod job;
mod jobs;
mod latency;
mod queues;
mod schedules;
mod snapshot;
pub use snapshot::server_ms;
mod workers;

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
    /// Show no write action, and refuse every write (403): a monitor's view.
    #[arg(long)]
    read_only: bool,
}

/// What every handler shares.
pub struct App {
    conn: Conn,
    executor: Arc<dyn echomq::Executor>,
    csrf: String,
    token: Option<String>,
    read_only: bool,
    snapshots: snapshot::Snapshots,
    /// Turns true when the process is asked to stop: `/live` streams end,
    /// so that the graceful shutdown does not wait for their viewers.
    stopping: tokio::sync::watch::Sender<bool>,
}

pub async fn run(server: &Server, args: Args) -> Result<(), Error> {
    let token = match (args.bind.ip().is_loopback(), args.token) {
        (_, Some(token)) => Some(token),
        (true, None) => None,
        (false, None) => Some(random_hex()?),
    };
    let conn = server.connection().await?;
    let executor = server.executor().await?;
    let app = Arc::new(App {
        snapshots: snapshot::Snapshots::new(
            conn.clone(),
            executor.clone(),
            if args.read_only { snapshot::Registry::ReadOnly } else { snapshot::Registry::Tidy },
        ),
        conn,
        executor,
        csrf: random_hex()?,
        token: token.clone(),
        read_only: args.read_only,
        stopping: tokio::sync::watch::channel(false).0,
    });
    tokio::spawn(snapshot::keep_fresh(app.clone()));
    let listener = tokio::net::TcpListener::bind(args.bind).await?;
    let address = listener.local_addr()?;
    tell!("emq dashboard on http://{address}/");
    if args.read_only {
        tell!("read-only: no write action is shown, and every one is refused");
    } else if let Some(token) = token {
        tell!("write actions need the token: open http://{address}/login?token={token}");
    }
    let stopping = app.stopping.clone();
    let service = router(app).into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, service).with_graceful_shutdown(shutdown(stopping)).await?;
    Ok(())
}

/// Every route: the pages (GET) and the writes (POST), each write behind [`App::may_write`].
fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/", get(queues::overview))
        .route("/queues/{queue}", get(queues::queue_page))
        .route("/queues/{queue}/pause", post(queues::pause))
        .route("/queues/{queue}/resume", post(queues::resume))
        .route("/queues/{queue}/drain", get(queues::drain_page).post(queues::drain))
        .route("/queues/{queue}/configure", post(queues::configure))
        .route("/queues/{queue}/state/{state}", get(jobs::state_page))
        .route("/queues/{queue}/state/{state}/bulk", post(bulk::bulk))
        .route("/queues/{queue}/jobs/{id}", get(job::job_page))
        .route("/queues/{queue}/jobs/{id}/{action}", post(job::job_action))
        .route("/queues/{queue}/schedules", get(schedules::schedules_page))
        .route("/queues/{queue}/schedules/remove", post(schedules::remove))
        .route("/queues/{queue}/schedules/trigger", post(schedules::trigger))
        .route("/queues/{queue}/schedules/pause", post(schedules::pause))
        .route("/queues/{queue}/schedules/resume", post(schedules::resume))
        .route("/queues/{queue}/batches", get(batches::batches_page))
        .route("/queues/{queue}/groups", get(groups::groups_page))
        .route("/workers", get(workers::workers_page))
        .route("/live", get(snapshot::live))
        .route("/metrics", get(snapshot::metrics))
        .route("/login", get(login))
        .fallback(not_found)
        .with_state(app)
}

async fn shutdown(stopping: tokio::sync::watch::Sender<bool>) {
    let _ = tokio::signal::ctrl_c().await;
    stopping.send_replace(true);
}

async fn not_found() -> Response {
    Problem::NotFound("no such page".into()).into_response()
}

/// Why a request was not answered with its page: each a status, and a page
/// that says why. Bad input is 400 and a missing thing 404, never 500.
#[derive(Debug)]
pub enum Problem {
    /// The request itself is wrong (a malformed id, queue name, state, or form).
    BadInput(String),
    /// What it names does not exist.
    NotFound(String),
    /// A write this dashboard does not allow (read-only, no token, no CSRF token).
    Forbidden(String),
    /// The job is not in a state the change takes (a retry of a pending
    /// job, a flow's parent whose children still run).
    Conflict(String),
    /// The server failed or refused (a key of the wrong type, a lost connection).
    Failed(String),
}

impl From<echomq::Error> for Problem {
    fn from(err: echomq::Error) -> Problem {
        let said = crate::failure::explain(&err);
        match err.kind {
            ErrorKind::Argument | ErrorKind::InvalidId | ErrorKind::InvalidQueue | ErrorKind::Kind => {
                Problem::BadInput(said)
            }
            ErrorKind::NoJob => Problem::NotFound(said),
            ErrorKind::State => Problem::Conflict(said),
            _ => Problem::Failed(said),
        }
    }
}

impl From<Error> for Problem {
    fn from(err: Error) -> Problem {
        if let Some(refused) = err.downcast_ref::<crate::select::Refused>() {
            return Problem::BadInput(refused.to_string());
        }
        match err.downcast::<echomq::Error>() {
            Ok(err) => Problem::from(*err),
            Err(err) => Problem::Failed(crate::failure::explain(err.as_ref())),
        }
    }
}

impl From<redis::RedisError> for Problem {
    fn from(err: redis::RedisError) -> Problem {
        Problem::Failed(crate::failure::explain(&err))
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::BadInput(said) => write!(f, "bad input: {said}"),
            Problem::NotFound(said) => write!(f, "not found: {said}"),
            Problem::Forbidden(said) => write!(f, "refused: {said}"),
            Problem::Conflict(said) => write!(f, "not now: {said}"),
            Problem::Failed(said) => write!(f, "{said}"),
        }
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let (status, title, said) = match self {
            Problem::BadInput(said) => (StatusCode::BAD_REQUEST, "bad request", said),
            Problem::NotFound(said) => (StatusCode::NOT_FOUND, "not found", said),
            Problem::Forbidden(said) => (StatusCode::FORBIDDEN, "refused", said),
            Problem::Conflict(said) => (StatusCode::CONFLICT, "not now", said),
            Problem::Failed(said) => (StatusCode::INTERNAL_SERVER_ERROR, "failed", said),
        };
        (status, html::problem(title, &said)).into_response()
    }
}

/// A queue name from a path, checked: a bad one is 400 saying why.
fn queue_of(app: &App, name: &str) -> Result<Queue, Problem> {
    Ok(Queue::new(app.executor.clone(), name)?)
}

/// The partitioned queue `name` (protocol 1.8), or `None` for an ordinary queue.
async fn partitioned_of(app: &App, name: &str) -> Result<Option<echomq::Partitioned>, Problem> {
    Ok(echomq::Partitioned::find(app.executor.clone(), name).await?)
}

/// A job id from a path, checked.
fn job_id(text: &str) -> Result<JobId, Problem> {
    text.parse().map_err(|err: echomq::Error| Problem::BadInput(err.text().to_owned()))
}

/// A state from a path, checked.
fn state_of(text: &str) -> Result<State, Problem> {
    text.parse().map_err(|_| {
        Problem::BadInput(format!(
            "{text:?} is not a state: pending, active, delayed, done, dead or cancelled"
        ))
    })
}

/// The keys of queue `name`, checked.
fn keys_of(name: &str) -> Result<Keyspace, Problem> {
    Ok(Keyspace::new(name)?)
}

impl App {
    /// Whether write actions are shown to this request: not read-only, and
    /// on loopback without a token or with the token's cookie.
    fn writable(&self, headers: &HeaderMap) -> bool {
        !self.read_only && self.has_token(headers)
    }

    /// The CSRF token forms carry, when this request may write: forms are
    /// drawn only then.
    fn form_token(&self, headers: &HeaderMap) -> Option<&str> {
        self.writable(headers).then_some(self.csrf.as_str())
    }

    fn has_token(&self, headers: &HeaderMap) -> bool {
        let Some(token) = &self.token else { return true };
        let wanted = format!("emq_token={token}");
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .any(|cookie| cookie.trim() == wanted)
    }

    /// Whether this write may go on: not read-only, the token's cookie
    /// (when one is needed), the form's CSRF token, and no cross-site
    /// request. Refused ones are logged too.
    fn may_write(&self, write: &Write<'_>, headers: &HeaderMap, csrf: Option<&str>) -> Result<(), Problem> {
        let cross_site = headers.get("sec-fetch-site").is_some_and(|v| v != "same-origin" && v != "none");
        let refusal = if self.read_only {
            Some("this dashboard is read-only (--read-only): it changes nothing")
        } else if !self.has_token(headers) {
            Some("write actions need the dashboard's token: open /login?token=… with the token it printed")
        } else if csrf != Some(self.csrf.as_str()) || cross_site {
            Some("write actions need a form of this dashboard's own (its CSRF token, same site)")
        } else {
            None
        };
        match refusal {
            Some(why) => {
                write.log(&format!("refused: {why}"));
                Err(Problem::Forbidden(why.into()))
            }
            None => Ok(()),
        }
    }
}

/// One write, for the audit log: who asked, what, on which queue and jobs.
pub struct Write<'a> {
    remote: SocketAddr,
    action: &'a str,
    queue: &'a str,
    jobs: String,
}

impl<'a> Write<'a> {
    fn new(ConnectInfo(remote): ConnectInfo<SocketAddr>, action: &'a str, queue: &'a str) -> Write<'a> {
        Write { remote, action, queue, jobs: String::new() }
    }

    /// The same write, naming its jobs (a few, then how many more).
    fn jobs(mut self, ids: &[JobId]) -> Write<'a> {
        let shown: Vec<&str> = ids.iter().take(5).map(JobId::as_str).collect();
        self.jobs = match ids.len() {
            0..=5 => shown.join(","),
            n => format!("{},… ({n} in all)", shown.join(",")),
        };
        self
    }

    /// The same write, on every job of a selection (said in words).
    fn all(mut self, selection: &str) -> Write<'a> {
        self.jobs = format!("all {selection}");
        self
    }

    /// The audit line: info, with every field.
    fn log(&self, outcome: &str) {
        tracing::info!(
            remote = %self.remote,
            action = self.action,
            queue = self.queue,
            jobs = self.jobs.as_str(),
            outcome,
            "dashboard write"
        );
    }

    /// Log the outcome of `done` and hand it on; the snapshot is
    /// forgotten, so that the next page shows what the write did.
    fn logged<T>(
        &self,
        app: &App,
        done: Result<T, Problem>,
        said: impl FnOnce(&T) -> String,
    ) -> Result<T, Problem> {
        app.snapshots.invalidate();
        match &done {
            Ok(value) => self.log(&said(value)),
            Err(problem) => self.log(&format!("failed: {problem}")),
        }
        done
    }
}

/// Where a write goes back to: a page of this dashboard, never elsewhere.
fn back_to(path: &str) -> Response {
    Redirect::to(path).into_response()
}

#[derive(Deserialize)]
struct LoginQuery {
    token: String,
}

async fn login(Extract(app): Extract<Arc<App>>, Query(query): Query<LoginQuery>) -> Response {
    if app.token.as_deref() != Some(query.token.as_str()) {
        return Problem::Forbidden("wrong token".into()).into_response();
    }
    let cookie = format!("emq_token={}; HttpOnly; SameSite=Strict; Path=/", query.token);
    ([(header::SET_COOKIE, cookie)], Redirect::to("/")).into_response()
}

/// 128 random bits as hex, from the kernel.
fn random_hex() -> Result<String, Error> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
