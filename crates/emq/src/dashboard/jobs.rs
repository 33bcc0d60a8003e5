//! A state's jobs, newest first, [`PAGE`] a page, to the last page (a
//! ZRANGE … REV by rank: O(log N + page) at any depth); the search box (an
//! exact id opens the job, a prefix lists matches, other text is a bounded
//! scan of payloads and errors that says where it stopped), whose results
//! the bulk actions (`bulk.rs`) take.

use std::sync::Arc;

use axum::extract::{Path, Query, State as Extract};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use echomq::{JobId, Keyspace, State};
use maud::{html, Markup};
use serde::Deserialize;

use super::html::{self, queue_path, urlencode};
use super::{keys_of, queue_of, state_of, App, Problem};
use crate::select::{self, Selection};

/// Jobs a page.
pub const PAGE: u64 = 25;
/// How many jobs one search step examines (payload and error read for each).
const SCAN_BUDGET: u64 = 2_000;
/// How many id prefixes' matches a search lists.
const PREFIX_BUDGET: u64 = 10_000;

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
    let search = query.q.as_deref().map(str::trim).filter(|q| !q.is_empty());
    let (title, listing) = match search {
        None => a_page(&app, &name, &keys, state, query.page.as_deref()).await?,
        Some(text) => match search_step(&app, &name, state, text, query.from.unwrap_or(0)).await? {
            Found::Job(id) => {
                return Ok(super::back_to(&queue_path(&name, &format!("/jobs/{}", urlencode(id.as_str())))))
            }
            Found::Listed(title, listing) => (title, listing),
        },
    };
    let rows = rows(&app, &name, state, &listing.ids).await?;
    let token = app.form_token(&headers);
    let body = state_body(&name, state, &title, search, &listing, &rows, token);
    let crumbs = [
        (name.clone(), queue_path(&name, "")),
        (state.to_string(), queue_path(&name, &format!("/state/{state}"))),
    ];
    Ok(html::page(&format!("{state} · {name}"), &crumbs, &body).into_response())
}

/// The page `page` (a number from 1, or `last`; the first when none) of
/// `state`'s jobs, newest first, with its title; a page past the last is
/// the last.
async fn a_page(
    app: &App,
    name: &str,
    keys: &Keyspace,
    state: State,
    page: Option<&str>,
) -> Result<(String, Listing), Problem> {
    let mut conn = app.conn.clone();
    let total: u64 = redis::cmd("ZCARD").arg(keys.state(state)).query_async(&mut conn).await?;
    let last = total.div_ceil(PAGE).max(1);
    let page = match page {
        None => 1,
        Some("last") => last,
        Some(n) => n
            .parse::<u64>()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| Problem::BadInput(format!("{n:?} is not a page: a number from 1, or last")))?,
    };
    let page = page.min(last);
    let start = (page - 1) * PAGE;
    let page_of: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(keys.state(state))
        .arg(start)
        .arg(start + PAGE - 1)
        .arg("REV")
        .arg("WITHSCORES")
        .query_async(&mut conn)
        .await?;
    let ids = page_of
        .iter()
        .map(|(id, score)| Ok((super::job_id(id)?, Some(*score))))
        .collect::<Result<Vec<_>, Problem>>()?;
    let pager = pager(name, state, page, last, total);
    Ok((format!("{total} {state}"), Listing { ids, above: pager.clone(), below: pager, matching: None }))
}

/// The state page's body: the states to go to, the search box, the
/// listing's rows (each with a box to tick, and the bulk actions below,
/// when the dashboard takes writes: `token`).
fn state_body(
    name: &str,
    state: State,
    title: &str,
    search: Option<&str>,
    listing: &Listing,
    rows: &[Row],
    token: Option<&str>,
) -> Markup {
    let table = html! {
        (html::scroll(&html! {
            table #jobs {
                tr {
                    @if token.is_some() { th { "" } }
                    th { "job" } th { (when_heading(state)) } @if state == State::Dead { th { "last error" } }
                }
                @for row in rows { (row.render(name, state, token.is_some())) }
            }
        }))
        @if rows.is_empty() { p.none #none { "none" } }
    };
    html! {
        h1 #title { (title) " jobs of " (name) }
        nav.bar #states {
            @for other in State::ALL {
                @if other == state { b { (other) } } @else { a href=(queue_path(name, &format!("/state/{other}"))) { (other) } }
            }
        }
        form.bar #search method="get" action=(queue_path(name, &format!("/state/{state}"))) {
            input type="search" name="q" value=[search] placeholder="an id, an id's start, or text in payload or error" size="40";
            button type="submit" { "search" }
            @if search.is_some() { a href=(queue_path(name, &format!("/state/{state}"))) { "clear" } }
        }
        (listing.above)
        @if let Some(token) = token {
            form #bulk method="post" action=(queue_path(name, &format!("/state/{state}/bulk"))) {
                (html::csrf(token))
                (table)
                (super::bulk::buttons(state, listing.matching.as_deref()))
            }
        } @else {
            (table)
        }
        (listing.below)
    }
}

/// The ids a page shows, and what goes around them.
struct Listing {
    /// The ids, with their scores when the read that found them had them.
    ids: Vec<(JobId, Option<f64>)>,
    above: Markup,
    below: Markup,
    /// The search text the ids match, for "all matching".
    matching: Option<String>,
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
        State::Waiting => "waiting since",
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

/// The rows of `ids`: their scores (read now for those without one) and,
/// for dead jobs, their last errors.
async fn rows(
    app: &App,
    name: &str,
    state: State,
    ids: &[(JobId, Option<f64>)],
) -> Result<Vec<Row>, Problem> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let keys = keys_of(name)?;
    let mut conn = app.conn.clone();
    let mut scores: Vec<Option<f64>> = ids.iter().map(|(_, score)| *score).collect();
    if scores.iter().any(Option::is_none) {
        let mut zmscore = redis::cmd("ZMSCORE");
        zmscore.arg(keys.state(state));
        for (id, _) in ids {
            zmscore.arg(id.as_str());
        }
        // Only the "when" column: a user who may not run ZMSCORE sees "-".
        if let Ok(read) = zmscore.query_async::<Vec<Option<f64>>>(&mut conn).await {
            scores = read;
        }
    }
    let errors: Vec<Option<String>> = if state == State::Dead {
        let mut hmget = redis::cmd("HMGET");
        hmget.arg(keys.errors());
        for (id, _) in ids {
            hmget.arg(id.as_str());
        }
        hmget.query_async(&mut conn).await?
    } else {
        Vec::new()
    };
    Ok(ids
        .iter()
        .enumerate()
        .map(|(n, (id, _))| Row {
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

/// One step of a search of `state`'s jobs: an exact id of this queue opens
/// the job; an id's start (`JOB…`) lists the ids that start so, in any
/// state; other text examines [`SCAN_BUDGET`] jobs from rank `from`, newest
/// first, and says where it stopped, with a link that goes on from there.
async fn search_step(app: &App, name: &str, state: State, text: &str, from: u64) -> Result<Found, Problem> {
    let mut conn = app.conn.clone();
    if let Ok(id) = text.parse::<JobId>() {
        if queue_of(app, name)?.inspect(&id).await?.is_some() {
            return Ok(Found::Job(id));
        }
    }
    let kind = echomq::id::KIND;
    if text.starts_with(kind) || kind.starts_with(text) {
        let limit = usize::try_from(PAGE).unwrap_or(usize::MAX);
        let (found, complete) = select::by_prefix(&mut conn, name, text, PREFIX_BUDGET, limit).await?;
        let above = html! {
            p.note #searched {
                (found.len()) " id(s) of " (name) " start with " code { (text) }
                @if !complete { " (the first found: the search stopped at its budget; type more of the id)" }
            }
            @if !found.is_empty() {
                (html::scroll(&html! {
                    table #prefix {
                        tr { th { "job" } th { "state" } }
                        @for (id, state) in &found {
                            tr {
                                td { a href=(queue_path(name, &format!("/jobs/{}", urlencode(id.as_str())))) { code { (id) } } }
                                td { (state) }
                            }
                        }
                    }
                }))
            }
        };
        let listing = Listing { ids: Vec::new(), above, below: html! {}, matching: None };
        return Ok(Found::Listed(format!("{} matching", found.len()), listing));
    }
    let selection = Selection { queue: name.to_owned(), state, matching: Some(text.to_owned()) };
    let limit = usize::try_from(PAGE).unwrap_or(usize::MAX);
    let step = select::walk(&mut conn, &selection, from, SCAN_BUDGET, limit).await?;
    let path = queue_path(name, &format!("/state/{state}"));
    let above = html! {
        p.note #searched {
            (step.ids.len()) " " (state) " job(s) whose payload or error contains " code { (text) } ", among ranks "
            (from + 1) " to " (from + step.examined) " of " (step.total) " (newest first). "
            @match step.next {
                Some(next) => {
                    "Stopped there: "
                    a #continue href=(format!("{path}?q={}&from={next}", urlencode(text))) { "continue from rank " (next + 1) }
                }
                None => "That is the end of the set.",
            }
        }
    };
    let ids = step.ids.into_iter().map(|id| (id, None)).collect();
    let listing = Listing { ids, above, below: html! {}, matching: Some(text.to_owned()) };
    Ok(Found::Listed(format!("{} matching", listing.ids.len()), listing))
}
