//! A job's flow on its page (protocol 1.6): the parent it will tell, and,
//! for a parent, its children as a tree, each node with its state and a
//! link to its own page; a child that is a parent itself shows its own.

use std::future::Future;
use std::pin::Pin;

use echomq::keyspace::Role;
use echomq::{JobId, JobRef, Keyspace, Queue, State};
use maud::{html, Markup};

use super::html::queue_path;
use super::{App, Problem};

/// How deep a tree is drawn: a nested flow deeper than this is a link.
const DEPTH: usize = 4;

/// The flow part of job `id`'s page, in `queue`: nothing for a job that is
/// in no flow.
pub async fn flow_part(app: &App, queue: &Queue, id: &JobId) -> Result<Markup, Problem> {
    let mut conn = app.conn.clone();
    let parents = Keyspace::new(queue.name())?.role(Role::Parents, None).unwrap_or_default();
    // A user who may not read it (a monitor) does without the line.
    let link: Option<String> =
        redis::cmd("HGET").arg(parents).arg(id.as_str()).query_async(&mut conn).await.ok().flatten();
    let parent = link.and_then(|link| link.split_once(' ')?.1.parse::<JobRef>().ok());
    let children = tree(app, queue.clone(), id.clone(), 0).await?;
    Ok(html! {
        @if parent.is_some() || children.is_some() {
            h2 { "Flow" }
            @if let Some(parent) = &parent {
                p #parent { "Its parent, told when it ends: " (node_link(parent)) }
            }
            @if let Some(children) = children { div #flow { (children) } }
        }
    })
}

/// The children of parent `id` of `queue`, as a list, nested parents'
/// children below them; `None` for a job that is no parent.
fn tree(
    app: &App,
    queue: Queue,
    id: JobId,
    depth: usize,
) -> Pin<Box<dyn Future<Output = Result<Option<Markup>, Problem>> + Send + '_>> {
    Box::pin(async move {
        let Some(children) = echomq::Flows::of(&queue).children(&id).await? else { return Ok(None) };
        let mut items = Vec::with_capacity(children.children.len());
        for child in &children.children {
            let in_queue = Queue::new(app.executor.clone(), &child.child.queue)?;
            let live = in_queue.inspect(&child.child.id).await?.map(|job| job.record.state);
            let below = match live {
                Some(State::Waiting | State::Pending | State::Active | State::Done) if depth + 1 < DEPTH => {
                    tree(app, in_queue, child.child.id.clone(), depth + 1).await?
                }
                _ => None,
            };
            let heard = child.outcome.map_or("open", |outcome| outcome.as_str());
            items.push(html! {
                li {
                    (node_link(&child.child))
                    " " span.note { "parent heard: " (heard) }
                    " " span { "now: " (live.map_or("gone".to_owned(), |state| state.to_string())) }
                    @if let Some(below) = below { (below) }
                }
            });
        }
        Ok(Some(html! {
            p.note { (children.open) " of " (children.children.len()) " children open" }
            ul.tree { @for item in items { (item) } }
        }))
    })
}

/// A link to a job's page, named `{queue}id`.
fn node_link(job: &JobRef) -> Markup {
    let path = queue_path(&job.queue, &format!("/jobs/{}", super::html::urlencode(job.id.as_str())));
    html! { a href=(path) { code { (job) } } }
}
