//! `emq find`: a bounded search of one queue's jobs, by the text their
//! payload or last error holds or by the start of their id, that says how
//! far it looked and where to resume.

use echomq::State;

use crate::change::usage;
use crate::connect::{Error, Server};
use crate::ops::{note_if_unknown, state};
use crate::select::{self, Selection};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The queue.
    queue: String,
    /// The text a job's payload or last error contains, byte for byte (`*`
    /// is a star); none: every job of --state.
    #[arg(conflicts_with = "id")]
    text: Option<String>,
    /// The state whose jobs to look through.
    #[arg(long, value_parser = state, default_value = "dead")]
    state: State,
    /// Instead of a text: the jobs whose id starts with this, in any state.
    #[arg(long, value_name = "PREFIX")]
    id: Option<String>,
    /// Look at about this many jobs at most (a page a round trip).
    #[arg(long, default_value_t = 10_000)]
    budget: u64,
    /// Print this many at most.
    #[arg(long, default_value_t = 100)]
    limit: usize,
    /// Start at this rank, newest first: where a find that stopped said to resume.
    #[arg(long, default_value_t = 0, conflicts_with = "id")]
    from: u64,
}

/// Print the ids a bounded search finds, and on stderr how far it looked.
pub async fn run(server: &Server, args: Args) -> Result<(), Error> {
    let mut conn = server.connection().await?;
    if let Some(prefix) = &args.id {
        let (found, complete) = select::by_prefix(&mut conn, &args.queue, prefix, args.budget, args.limit)
            .await
            .map_err(usage)?;
        for (id, state) in &found {
            say!("{id}  {state}");
        }
        let how = if complete {
            "every set looked through".to_owned()
        } else {
            format!("stopped after about {} members: raise --budget or --limit for more", args.budget)
        };
        eprintln!("{} found in {} ({how})", found.len(), args.queue);
        return Ok(());
    }
    let selection = Selection { queue: args.queue.clone(), state: args.state, matching: args.text };
    let step =
        select::walk(&mut conn, &selection, args.from, args.budget, args.limit).await.map_err(usage)?;
    for id in &step.ids {
        say!("{id}");
    }
    let (state, queue, found) = (args.state, &args.queue, step.ids.len());
    let upto = args.from + step.examined;
    match step.next {
        Some(next) => eprintln!(
            "{found} found; examined {upto} of {} {state} jobs of {queue}; resume with --from {next}",
            step.total
        ),
        None => eprintln!("{found} found; examined {upto} of {} {state} jobs of {queue}: all", step.total),
    }
    if step.total == 0 {
        note_if_unknown(server, queue).await;
    }
    Ok(())
}
