//! A queue's open batches (PROTOCOL.md §7.7): the first [`SHOWN`] of
//! `<q>batch_open` by score, each with what `<q>batches` keeps of it: its
//! total, its cursor (how many of its jobs SETTLE has seen finish, in
//! order), how many of those were done, dead, cancelled or gone, and its
//! callback's id (the job enqueued once the cursor reaches the total).
//! Three reads, whatever the number of batches; it writes nothing. A batch
//! whose state does not read is shown as unreadable.

use std::sync::Arc;

use axum::extract::{Path, State as Extract};
use axum::response::{IntoResponse, Response};
use echomq::keyspace::Role;
use maud::{html, Markup};

use super::html::{self, queue_path};
use super::{keys_of, App, Problem};

/// How many open batches the page shows, the oldest first.
const SHOWN: usize = 100;

/// A batch's state as `<q>batches` keeps it: `<total> <cursor> <done>
/// <dead> <cancelled> <gone> <callback id>`.
#[derive(Debug, PartialEq, Eq)]
struct Progress {
    total: u64,
    cursor: u64,
    done: u64,
    dead: u64,
    cancelled: u64,
    gone: u64,
    callback: String,
}

/// Read a batch's state; `None` for one that does not read as §7.7 writes it.
fn progress(text: &str) -> Option<Progress> {
    let words: Vec<&str> = text.split(' ').collect();
    let [total, cursor, done, dead, cancelled, gone, callback] = words[..] else { return None };
    let n = |word: &str| -> Option<u64> {
        (!word.is_empty() && word.bytes().all(|b| b.is_ascii_digit())).then(|| word.parse().ok()).flatten()
    };
    let read = Progress {
        total: n(total)?,
        cursor: n(cursor)?,
        done: n(done)?,
        dead: n(dead)?,
        cancelled: n(cancelled)?,
        gone: n(gone)?,
        callback: callback.to_owned(),
    };
    let counted =
        [read.done, read.dead, read.cancelled, read.gone].iter().try_fold(0u64, |a, b| a.checked_add(*b));
    (!read.callback.is_empty() && read.cursor <= read.total && counted == Some(read.cursor)).then_some(read)
}

pub async fn batches_page(
    Extract(app): Extract<Arc<App>>,
    Path(name): Path<String>,
) -> Result<Response, Problem> {
    let keys = keys_of(&name)?;
    let key = |role: Role| keys.role(role, None).expect("a batch key is one of the queue's fixed keys");
    let mut conn = app.conn.clone();
    let open: u64 = redis::cmd("ZCARD").arg(key(Role::BatchOpen)).query_async(&mut conn).await?;
    let shown: Vec<(String, f64)> = if open == 0 {
        Vec::new()
    } else {
        redis::cmd("ZRANGE")
            .arg(key(Role::BatchOpen))
            .arg(0)
            .arg(SHOWN - 1)
            .arg("WITHSCORES")
            .query_async(&mut conn)
            .await?
    };
    let states: Vec<Option<Vec<u8>>> = if shown.is_empty() {
        Vec::new()
    } else {
        let mut hmget = redis::cmd("HMGET");
        hmget.arg(key(Role::Batches));
        for (batch, _) in &shown {
            hmget.arg(batch);
        }
        hmget.query_async(&mut conn).await?
    };
    let body = html! {
        h1 { "Open batches of " (name) }
        @if shown.is_empty() {
            p.none #no-batches { "No open batch: a batch closes when its callback is enqueued." }
        } @else {
            (html::scroll(&html! {
                table #batches {
                    tr {
                        th { "batch" } th { "opened or last passed over" } th.n { "jobs" } th.n { "settled" }
                        th.n { "done" } th.n { "dead" } th.n { "cancelled" } th.n { "gone" } th { "callback" }
                    }
                    @for ((batch, score), state) in shown.iter().zip(&states) {
                        (row(batch, *score, state.as_deref()))
                    }
                }
            }))
            @if open > shown.len() as u64 {
                p.note #more-batches { "The first " (shown.len()) " of " (open) " open batches." }
            }
            p.note { "The queue's workers settle each batch in order of its jobs; its callback is enqueued once every one has finished." }
        }
    };
    let crumbs =
        [(name.clone(), queue_path(&name, "")), ("batches".to_owned(), queue_path(&name, "/batches"))];
    Ok(html::page(&format!("batches · {name}"), &crumbs, &body).into_response())
}

fn row(batch: &str, score: f64, state: Option<&[u8]>) -> Markup {
    let read = state.and_then(|bytes| std::str::from_utf8(bytes).ok()).and_then(progress);
    let since = if score.is_finite() && score >= 0.0 { html::when(score as u64) } else { score.to_string() };
    html! {
        tr data-batch=(batch) {
            td { code { (batch) } }
            td { (since) }
            @match (&read, state) {
                (Some(p), _) => {
                    td.n { (p.total) } td.n { (p.cursor) } td.n { (p.done) } td.n { (p.dead) }
                    td.n { (p.cancelled) } td.n { (p.gone) } td { code { (p.callback) } }
                }
                (None, None) => td.bad.wrap colspan="7" { "no state in the batches hash (the next settle drops it)" },
                (None, Some(bytes)) => td.bad.wrap colspan="7" {
                    "unreadable: " code { (String::from_utf8_lossy(&bytes[..bytes.len().min(120)])) }
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_reads_as_the_protocol_writes_it() {
        let read = progress("10 4 2 1 1 0 JOB_01ARZ3NDEKTSV4RRFFQ69G5FAV").unwrap();
        assert_eq!(
            (read.total, read.cursor, read.done, read.dead, read.cancelled, read.gone),
            (10, 4, 2, 1, 1, 0)
        );
        assert_eq!(read.callback, "JOB_01ARZ3NDEKTSV4RRFFQ69G5FAV");
        for bad in [
            "",
            "10 4 2 1 1 0",
            "10 4 2 1 1 0 cb extra",
            "10  4 2 1 1 0 cb",
            "10 4 2 1 1 -0 cb",
            "10 4 2 1 1 x cb",
            "10 11 11 0 0 0 cb",
            "10 4 2 1 1 1 cb",
            "10 4 2 1 1 0 ",
        ] {
            assert_eq!(progress(bad), None, "{bad:?}");
        }
    }
}
