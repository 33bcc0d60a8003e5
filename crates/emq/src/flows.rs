//! `emq flow add`: a flow from JSON, a parent and its children in any
//! queues (protocol 1.6, PROTOCOL.md §7.8), written as `Flows::add`
//! writes it: the parent first, then each child linked to it.

use std::io::Read;

use echomq::{EnqueueOptions, Flow, JobId, OnFailure};
use serde::Deserialize;

use crate::connect::{Error, Server};

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Add a flow from JSON (a file, or - for stdin): {"queue": "reports",
    /// "payload": "merge", "children": [{"queue": "render", "payload": "page 1"},
    /// {"queue": "thumbs", "payload": "sum", "on_failure": "ignore",
    /// "children": [...]}]}. A node may also give "id", "priority" and
    /// "group" (its fair group: a tenant, a customer, a key); a
    /// child's "on_failure" is fail (the default: the parent dies with it),
    /// ignore (the parent waits for the others) or continue (the parent runs
    /// at once). Prints the parent, its incarnation and its children, as JSON.
    /// A node without an "id" derives its id from its parent's; give the top
    /// parent one, and adding the file again (after a failure half-way) adds
    /// only what is missing.
    Add(AddArgs),
}

#[derive(clap::Args, Debug)]
pub struct AddArgs {
    /// The JSON file, or - to read it from stdin.
    file: String,
}

/// One node of the JSON: a job, and the children that make it a parent.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Node {
    queue: String,
    payload: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    priority: i64,
    #[serde(default)]
    group: Option<String>,
    #[serde(default)]
    on_failure: Option<String>,
    #[serde(default)]
    children: Vec<Node>,
}

pub async fn run(server: &Server, command: Command) -> Result<(), Error> {
    let Command::Add(args) = command;
    let text = if args.file == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text)?;
        text
    } else {
        std::fs::read_to_string(&args.file).map_err(|err| format!("{}: {err}", args.file))?
    };
    let root: Node =
        serde_json::from_str(&text).map_err(|err| refused(format!("{}: not a flow: {err}", args.file)))?;
    if root.on_failure.is_some() {
        return Err(refused("the top parent has no on_failure: it is nobody's child".into()));
    }
    let queue = server.queue(&root.queue).await?;
    let named = root.id.is_some();
    let top = match &root.id {
        Some(given) => given.parse::<JobId>()?,
        None => JobId::mint(),
    };
    let added = match echomq::Flows::of(&queue).add(flow(root, Some(top.clone()))?).await {
        Ok(added) => added,
        Err(err) => return Err(added_in_part(&queue, &top, named, err).await),
    };
    let children: Vec<String> = added.children.iter().map(ToString::to_string).collect();
    let line = serde_json::json!({
        "parent": added.parent.to_string(),
        "incarnation": added.incarnation,
        "created": added.created,
        "children": children,
    });
    tell!("{line}");
    Ok(())
}

/// A flow whose adding failed: as it failed when its parent was not
/// written (nothing was); else exit 4, with the parent's id and how to
/// complete it, for its parent and some children stand and the rest do not.
async fn added_in_part(queue: &echomq::Queue, top: &JobId, named: bool, err: echomq::Error) -> Error {
    let written = queue.inspect(top).await.ok().flatten().is_some();
    if !written {
        return Box::new(err);
    }
    let again = match named {
        true => "add the same file again".to_owned(),
        false => format!("add the file again with \"id\": \"{top}\" on its top parent"),
    };
    let message = format!(
        "{}\nthe flow was added in part: its parent {{{}}}{top} and the children before the failure were written, \
         the rest not. Once the cause is fixed, {again} to complete it (its children's ids derive from the \
         parent's, so nothing is added twice), within a minute: after that the queue's sweep counts a missing \
         child gone, and fails the parent",
        crate::failure::explain(&err),
        queue.name()
    );
    Box::new(crate::failure::Exit::new(crate::failure::Failure::MaybeDone, message))
}

/// The parent `node`, its children built in turn. A node without an id
/// derives its own from its parent's ([`JobId::child`]), and the top
/// parent without one mints it: adding a file whose top parent has an id
/// again adds nothing twice.
fn flow(node: Node, id: Option<JobId>) -> Result<Flow, Error> {
    if node.children.is_empty() {
        return Err(refused(format!("{} {:?}: a parent needs children", node.queue, node.payload)));
    }
    let id = match (node.id, id) {
        (Some(given), _) => given.parse::<JobId>()?,
        (None, Some(derived)) => derived,
        (None, None) => JobId::mint(),
    };
    let mut flow = Flow::new(node.payload.into_bytes()).priority(node.priority).id(id.clone());
    if let Some(group) = node.group {
        flow = flow.group(group);
    }
    for (at, child) in node.children.into_iter().enumerate() {
        let on_failure = on_failure(child.on_failure.as_deref())?;
        let queue = child.queue.clone();
        let derived = id.child(at, &queue, child.payload.as_bytes());
        if child.children.is_empty() {
            let own = child.id.map(|given| given.parse::<JobId>()).transpose()?;
            let mut options = EnqueueOptions::default().priority(child.priority).id(own.unwrap_or(derived));
            if let Some(group) = child.group {
                options = options.group(group);
            }
            flow = flow.child_with(&queue, child.payload.into_bytes(), options, on_failure);
        } else {
            flow = flow.child_flow(&queue, self::flow(child, Some(derived))?, on_failure);
        }
    }
    Ok(flow)
}

fn on_failure(word: Option<&str>) -> Result<OnFailure, Error> {
    Ok(match word {
        None | Some("fail") => OnFailure::Fail,
        Some("ignore") => OnFailure::Ignore,
        Some("continue") => OnFailure::Continue,
        Some(other) => {
            return Err(refused(format!("on_failure {other:?} is none of fail, ignore, continue")))
        }
    })
}

/// A flow file `emq` refuses as it is, before anything is sent: exit 5, as
/// an enqueue's bad input (nothing was written; the same file is refused again).
fn refused(message: String) -> Error {
    Box::new(crate::failure::Exit::new(crate::failure::Failure::Refused, message))
}
