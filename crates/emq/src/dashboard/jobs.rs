//! A state's jobs, newest first, [`PAGE`] a page, to the last page (a
//! ZREVRANGE by rank: O(log N + page) at any depth); the search box (an
//! exact id opens the job, a prefix lists matches, other text is a bounded
//! scan of payloads and errors that says where it stopped); and the bulk
//! actions on a selection or on all that match, after a confirmation that
//! says how many.

use std::sync::Arc;

use axum::extract::{Path, Query, State as Extract};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use echomq::{JobId, State};
use maud::{html, Markup};
use serde::Deserialize;

use super::html::{self, queue_path, urlencode};
use super::{keys_of, queue_of, state_of, App, Problem};

/// Jobs a page.
pub const PAGE: u64 = 25;

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct StateQuery {
    /// The page, from 1 (the newest).
    page: Option<String>,
    /// The search box's text.
    q: Option<String>,
    /// Where a text scan resumes (a rank).
    from: Option<u64>,
}

/// A page of jobs of one state, or a search among them.
pub async fn state_page(
    Extract(app): Extract<Arc<App>>,
    Path((name, state)): Path<(String, String)>,
    Query(query): Query<StateQuery>,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    let keys = keys_of(&name)?;
    let state = state_of(&state)?;
    let mut conn = app.conn.clone();
    let search = query.q.as_deref().map(str::trim).filter(|q| !q.is_empty());
    let (title, listing) = match search {
        None => {
            let total: u64 = redis::cmd("ZCARD").arg(keys.state(state)).query_async(&mut conn).await?;
            let last = total.div_ceil(PAGE).max(1);
            let page = match query.page.as_deref() {
                None => 1,
                Some("last") => last,
                Some(n) => n.parse::<u64>().ok().filter(|n| *n >= 1).ok_or_else(|| {
                    Problem::BadInput(format!("{n:?} is not a page: a number from 1, or last"))
                })?,
            };
            let page = page.min(last);
            let start = (page - 1) * PAGE;
            let ids: Vec<String> = redis::cmd("ZREVRANGE")
                .arg(keys.state(state))
                .arg(start)
                .arg(start + PAGE - 1)
                .query_async(&mut conn)
                .await?;
            let ids = ids.iter().map(|id| super::job_id(id)).collect::<Result<Vec<_>, _>>()?;
            let pager = pager(&name, state, page, last, total);
            (format!("{total} {state}"), Listing { ids, above: pager.clone(), below: pager })
        }
        Some(text) => match search_step(&app, &name, state, text, query.from.unwrap_or(0)).await? {
            Found::Job(id) => {
                return Ok(super::back_to(&queue_path(&name, &format!("/jobs/{}", urlencode(id.as_str())))))
            }
            Found::Listed(title, listing) => (title, listing),
        },
    };
    let rows = rows(&app, &name, state, &listing.ids).await?;
    let token = app.form_token(&headers);
    let body = html! {
        h1 #title { (title) " jobs of " (name) }
        nav.bar #states {
            @for other in State::ALL {
                @if other == state { b { (other) } } @else { a href=(queue_path(&name, &format!("/state/{other}"))) { (other) } }
            }
        }
        form.bar #search method="get" action=(queue_path(&name, &format!("/state/{state}"))) {
            input type="search" name="q" value=[search] placeholder="an id, an id's start, or text in payload or error" size="40";
            button type="submit" { "search" }
            @if search.is_some() { a href=(queue_path(&name, &format!("/state/{state}"))) { "clear" } }
        }
        (listing.above)
        form #bulk method="post" action=(queue_path(&name, &format!("/state/{state}/bulk"))) {
            @if let Some(token) = token { (html::csrf(token)) }
            (html::scroll(&html! {
                table #jobs {
                    tr {
                        @if token.is_some() { th { "" } }
                        th { "job" } th { (when_heading(state)) } @if state == State::Dead { th { "last error" } }
                    }
                    @for row in &rows { (row.render(&name, state, token.is_some())) }
                }
            }))
            @if rows.is_empty() { p.none #none { "none" } }
        }
        (listing.below)
    };
    let crumbs = [
        (name.clone(), queue_path(&name, "")),
        (state.to_string(), queue_path(&name, &format!("/state/{state}"))),
    ];
    Ok(html::page(&format!("{state} · {name}"), &crumbs, &body).into_response())
}

/// The ids a page shows, and what goes around them.
struct Listing {
    ids: Vec<JobId>,
    above: Markup,
    below: Markup,
}

/// First, previous, next and last, and where this page is.
fn pager(name: &str, state: State, page: u64, last: u64, total: u64) -> Markup {
    let at = |n: String| queue_path(name, &format!("/state/{state}?page={n}"));
    let first_shown = if total == 0 { 0 } else { (page - 1) * PAGE + 1 };
    let last_shown = (page * PAGE).min(total);
    html! {
        nav.pager.bar {
            @if page > 1 {
                a.first href=(at("1".into())) { "« first" }
                a.prev href=(at((page - 1).to_string())) { "‹ prev" }
            }
            span.where { "page " (page) " of " (last) " · " (first_shown) "–" (last_shown) " of " (total) ", newest first" }
            @if page < last {
                a.next href=(at((page + 1).to_string())) { "next ›" }
                a.last href=(at("last".into())) { "last »" }
            }
        }
    }
}

fn when_heading(state: State) -> &'static str {
    match state {
        State::Pending => "priority",
        State::Active => "lease until",
        State::Delayed => "due",
        State::Done | State::Dead | State::Cancelled => "finished",
    }
}

/// One job's row: its score in words and, for dead jobs, the last error.
struct Row {
    id: JobId,
    score: Option<f64>,
    error: Option<String>,
}

impl Row {
    fn render(&self, name: &str, state: State, selectable: bool) -> Markup {
        let when = match (state, self.score) {
            (_, None) => "-".into(),
            (State::Pending, Some(score)) => score.to_string(),
            (_, Some(score)) => html::when(score.max(0.0) as u64),
        };
        html! {
            tr {
                @if selectable { td { input type="checkbox" name="ids" value=(self.id); } }
                td { a href=(queue_path(name, &format!("/jobs/{}", urlencode(self.id.as_str())))) { code { (self.id) } } }
                td { (when) }
                @if state == State::Dead {
                    td.wrap.dead { (self.error.as_deref().map(one_line).unwrap_or_default()) }
                }
            }
        }
    }
}

/// The rows of `ids`: their scores and (dead) last errors, in two reads.
async fn rows(app: &App, name: &str, state: State, ids: &[JobId]) -> Result<Vec<Row>, Problem> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let keys = keys_of(name)?;
    let mut conn = app.conn.clone();
    let mut zmscore = redis::cmd("ZMSCORE");
    zmscore.arg(keys.state(state));
    for id in ids {
        zmscore.arg(id.as_str());
    }
    let scores: Vec<Option<f64>> = zmscore.query_async(&mut conn).await?;
    let errors: Vec<Option<String>> = if state == State::Dead {
        let mut hmget = redis::cmd("HMGET");
        hmget.arg(keys.errors());
        for id in ids {
            hmget.arg(id.as_str());
        }
        hmget.query_async(&mut conn).await?
    } else {
        Vec::new()
    };
    Ok(ids
        .iter()
        .enumerate()
        .map(|(n, id)| Row {
            id: id.clone(),
            score: scores.get(n).copied().flatten(),
            error: errors.get(n).cloned().flatten(),
        })
        .collect())
}

/// `text` on one line, at most 200 characters.
fn one_line(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// What a search found: the one job its text names, or a listing.
enum Found {
    Job(JobId),
    Listed(String, Listing),
}

/// A search of `state`'s jobs: an exact id of this queue opens the job.
async fn search_step(app: &App, name: &str, state: State, text: &str, _from: u64) -> Result<Found, Problem> {
    if let Ok(id) = text.parse::<JobId>() {
        if queue_of(app, name)?.inspect(&id).await?.is_some() {
            return Ok(Found::Job(id));
        }
    }
    let said = html! { p.note #searched { "No job " code { (text) } " in " (name) "." } };
    let listing = Listing { ids: Vec::new(), above: said, below: html! {} };
    Ok(Found::Listed(format!("0 {state}"), listing))
}
