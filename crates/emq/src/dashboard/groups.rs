//! A queue's fair groups (protocol 1.7): a page of them by name, each with
//! its pending and running jobs, where it stands and its settings, read
//! with GROUPS when the page is asked for (`?after=` for the next page).
//! `emq limit --group` changes them.

use std::sync::Arc;

use axum::extract::{Path, Query, State as Extract};
use axum::response::{IntoResponse, Response};
use echomq::{Groups, QueueGroups};
use maud::html;
use serde::Deserialize;

use super::html::{self, queue_path, urlencode};
use super::{queue_of, App, Problem};

/// How many groups a page shows.
const PAGE: u64 = 100;

#[derive(Deserialize)]
pub struct GroupsQuery {
    /// The page starts after this group.
    after: Option<String>,
}

pub async fn groups_page(
    Extract(app): Extract<Arc<App>>,
    Path(name): Path<String>,
    Query(query): Query<GroupsQuery>,
) -> Result<Response, Problem> {
    let queue = queue_of(&app, &name)?;
    let mut page = Groups::new().limit(PAGE);
    if let Some(after) = query.after.filter(|after| !after.is_empty()) {
        crate::flow::group(&after).map_err(Problem::BadInput)?;
        page = page.after(after);
    }
    let page = QueueGroups::of(&queue).page(page).await?;
    let body = html! {
        h1 { "Groups of " (name) }
        @if page.groups.is_empty() {
            p.none #no-groups { "No group: no job of this queue was enqueued with one (`emq enqueue --group`)." }
        } @else {
            (html::scroll(&html! {
                table #groups {
                    tr {
                        th { "group" } th.n { "pending" } th.n { "running" } th { "state" } th { "settings" }
                    }
                    @for group in &page.groups {
                        tr {
                            td { (group.group) }
                            td.n { (group.pending) }
                            td.n { (group.running) }
                            td { (group.standing.as_str()) }
                            td { (crate::flow::group_settings(group)) }
                        }
                    }
                }
            }))
            @if let Some(next) = &page.next {
                p { a #next href=(format!("{}?after={}", queue_path(&name, "/groups"), urlencode(next))) { "next groups" } }
            }
            p.note {
                "Claims take turns between the groups that have work, by weight; a paused, capped or "
                "limited group waits out of turn. `emq limit " (name) " --group G` changes one."
            }
        }
    };
    let crumbs = [(name.clone(), queue_path(&name, "")), ("groups".to_owned(), queue_path(&name, "/groups"))];
    Ok(html::page(&format!("groups · {name}"), &crumbs, &body).into_response())
}
