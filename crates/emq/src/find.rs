//! `emq find`: a bounded search of one queue's jobs (a partitioned
//! queue's, each partition in turn), by the text their
//! payload or last error holds or by the start of their id, that says how
//! far it looked and where to resume.

use echomq::State;

use crate::change::usage;
use crate::connect::{Conn, Error, Server};
use crate::ops::{note_if_unknown, queues_named, state};
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
/// A partitioned queue's name: each partition in turn (and the ordinary
/// queue of its name), the budget and the limit shared.
pub async fn run(server: &Server, args: Args) -> Result<(), Error> {
    let queues = queues_named(server, &args.queue).await?;
    let mut conn = server.connection().await?;
    if let Some(prefix) = &args.id {
        return by_id(&mut conn, &args, &queues, prefix).await;
    }
    if queues.len() > 1 && args.from > 0 {
        let why = format!(
            "--from is a rank in one queue's set, and {} is partitioned: find in one of its partitions \
             (`emq partition show {}` names them)",
            args.queue, args.queue
        );
        return Err(Box::new(crate::failure::Exit::usage(why)));
    }
    let (mut found, mut examined, mut total, mut resume, mut looked) = (0, 0, 0, None, 0);
    for queue in &queues {
        let part = Selection { queue: queue.clone(), state: args.state, matching: args.text.clone() };
        let budget = args.budget.saturating_sub(examined);
        let step =
            select::walk(&mut conn, &part, args.from, budget, args.limit - found).await.map_err(usage)?;
        for id in &step.ids {
            say!("{id}{}", home(&queues, queue));
        }
        (found, examined, total, looked) =
            (found + step.ids.len(), examined + step.examined, total + step.total, looked + 1);
        resume = resume.or(step.next);
        if found >= args.limit || examined >= args.budget {
            break;
        }
    }
    let (state, queue, upto) = (args.state, &args.queue, args.from + examined);
    match resume {
        Some(next) if queues.len() == 1 => eprintln!(
            "{found} found; examined {upto} of {total} {state} jobs of {queue}; resume with --from {next}"
        ),
        None if looked == queues.len() => {
            eprintln!("{found} found; examined {upto} of {total} {state} jobs of {queue}: all")
        }
        _ => eprintln!(
            "{found} found; examined {upto} of {total} {state} jobs of {queue} (in {looked} of its {} queues): \
             raise --budget or --limit for more",
            queues.len()
        ),
    }
    if total == 0 {
        note_if_unknown(server, queue).await;
    }
    Ok(())
}

/// `emq find --id PREFIX`: the jobs of `queues` whose id starts with `prefix`.
async fn by_id(conn: &mut Conn, args: &Args, queues: &[String], prefix: &str) -> Result<(), Error> {
    let (mut found, mut complete) = (0, true);
    for queue in queues {
        let (ids, whole) =
            select::by_prefix(conn, queue, prefix, args.budget, args.limit - found).await.map_err(usage)?;
        for (id, state) in &ids {
            say!("{id}  {state}{}", home(queues, queue));
        }
        (found, complete) = (found + ids.len(), complete && whole);
        if found >= args.limit {
            break;
        }
    }
    let how = if complete {
        "every set looked through".to_owned()
    } else {
        format!("stopped after about {} members: raise --budget or --limit for more", args.budget)
    };
    eprintln!("{found} found in {} ({how})", args.queue);
    Ok(())
}

/// Where a job found is, when the name stands for several queues.
fn home(queues: &[String], queue: &str) -> String {
    if queues.len() > 1 {
        format!("  in {queue}")
    } else {
        String::new()
    }
}
