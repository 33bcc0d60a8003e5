//! `emq groups`: a queue's fair groups (protocol 1.7), a page by name, as
//! a table (or JSON lines): each group's depth, running jobs, where it
//! stands and its settings. `emq limit --group` changes them.

use echomq::{GroupInfo, Groups, QueueGroups};

use crate::connect::{Error, Server};
use crate::flow::rate_text;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The queue.
    queue: String,
    /// Start after this group (the last of the page before: a note on
    /// stderr says it when more follow).
    #[arg(long, value_parser = crate::flow::group)]
    after: Option<String>,
    /// At most this many groups (1 to 1000).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=1000))]
    limit: u64,
    /// One JSON object per group and line: its name, pending, running,
    /// state, weight, cap, rate (claims per `per_ms`), max and paused; a
    /// setting it lacks is null.
    #[arg(long)]
    json: bool,
}

pub async fn run(server: &Server, args: Args) -> Result<(), Error> {
    let why = "a group's jobs are all in the partition its name routes to, whose groups this lists";
    crate::ops::one_queue(server, &args.queue, why).await?;
    let queue = server.queue(&args.queue).await?;
    let mut page = Groups::new().limit(args.limit);
    let after = args.after.clone();
    if let Some(after) = args.after {
        page = page.after(after);
    }
    let page = QueueGroups::of(&queue).page(page).await?;
    if args.json {
        for group in &page.groups {
            say!("{}", json(group));
        }
    } else {
        table(&page.groups)?;
    }
    match page.next {
        Some(next) => eprintln!("emq: note: more groups follow: emq groups {} --after {next}", args.queue),
        None if page.groups.is_empty() => match after {
            Some(after) => eprintln!("emq: note: {} has no group after {after}", args.queue),
            None => eprintln!("emq: note: {} has no group", args.queue),
        },
        None => {}
    }
    // A group's state is its own: the queue's pause holds every one of them.
    let settings = crate::flow::settings(&mut server.connection().await?, queue.keyspace()).await;
    if settings.is_ok_and(|settings| settings.paused) {
        eprintln!(
            "emq: note: queue {0} is paused: none of its groups runs, whatever its state, until `emq resume {0}`",
            args.queue
        );
    }
    Ok(())
}

/// The groups as a table, a header first, columns aligned.
fn table(groups: &[GroupInfo]) -> std::io::Result<()> {
    let none = || "-".to_owned();
    let rows: Vec<[String; 8]> = groups
        .iter()
        .map(|group| {
            [
                group.group.clone(),
                group.pending.to_string(),
                group.running.to_string(),
                group.standing.as_str().to_owned(),
                group.weight.to_string(),
                group.cap.map_or_else(none, |cap| cap.to_string()),
                group.rate.map_or_else(none, rate_text),
                group.max.map_or_else(none, |max| max.to_string()),
            ]
        })
        .collect();
    let header = ["GROUP", "PENDING", "RUNNING", "STATE", "WEIGHT", "CAP", "RATE", "MAX"];
    crate::workers::aligned(&header, &rows)
}

/// One group as a JSON object.
fn json(group: &GroupInfo) -> serde_json::Value {
    let rate = group.rate.map(|rate| {
        let per_ms = u64::try_from(rate.per.as_millis()).unwrap_or(u64::MAX);
        serde_json::json!({ "claims": rate.claims, "per_ms": per_ms })
    });
    serde_json::json!({
        "group": group.group,
        "pending": group.pending,
        "running": group.running,
        "state": group.standing.as_str(),
        "weight": group.weight,
        "cap": group.cap,
        "rate": rate,
        "max": group.max,
        "paused": group.paused,
    })
}
