//! `emq schedule add|list|remove|trigger|pause|resume`: a queue's
//! schedules, cron or interval. The queue's workers fire them (`emq work`
//! or any EchoMQ worker); `trigger` enqueues one's job at once, outside its
//! ticks; a paused one's ticks fire nothing until it is resumed.

use std::time::{Duration, UNIX_EPOCH};

use echomq::{Missed, Schedule, When};

use crate::connect::{Error, Server};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

impl Args {
    /// Whether it only reads (`list`): then it prints with `say!`.
    pub fn only_reads(&self) -> bool {
        matches!(self.command, Command::List { .. })
    }
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Add a schedule, or replace the one of that name.
    Add(AddArgs),
    /// List a queue's schedules with their next fire times.
    List {
        /// The queue.
        queue: String,
    },
    /// Remove a schedule; the jobs it fired stay.
    Remove {
        /// The queue.
        queue: String,
        /// The schedule's name.
        name: String,
    },
    /// Enqueue a schedule's job now, outside its ticks (a new id; the next tick stays); prints its id.
    Trigger {
        /// The queue.
        queue: String,
        /// The schedule's name.
        name: String,
    },
    /// Pause a schedule: its ticks fire no job until it is resumed (the queue's other schedules go on).
    Pause {
        /// The queue.
        queue: String,
        /// The schedule's name.
        name: String,
    },
    /// Resume a paused schedule from its first tick after now; the ticks missed while paused never fire.
    Resume {
        /// The queue.
        queue: String,
        /// The schedule's name.
        name: String,
    },
}

#[derive(clap::Args, Debug)]
// One of the two, said together when neither is given.
#[command(group(clap::ArgGroup::new("when").required(true).args(["cron", "every"])))]
struct AddArgs {
    /// The queue.
    queue: String,
    /// The schedule's name, unique in the queue.
    name: String,
    /// Each tick's job's payload.
    payload: String,
    /// A cron expression: 5 fields, or 6 with seconds first, e.g. "0 9 * * MON-FRI".
    #[arg(long)]
    cron: Option<String>,
    /// The cron expression's IANA time zone.
    #[arg(long, default_value = "UTC", requires = "cron")]
    tz: String,
    /// A fixed interval instead, e.g. 30s or 1h (ticks at its multiples since
    /// the epoch): at least 1s, in whole ms.
    #[arg(long, value_parser = interval)]
    every: Option<Duration>,
    /// Ticks missed while no worker ran: last (fire the latest once), none, or all:<n> (at most the latest n).
    #[arg(long, default_value = "last", value_parser = missed)]
    missed: Missed,
}

/// An interval as --every takes it: at least a second (a cron's finest
/// tick too), a whole number of ms.
fn interval(text: &str) -> Result<Duration, String> {
    let every = humantime::parse_duration(text).map_err(|err| format!("{text:?}: {err}"))?;
    if every < Duration::from_secs(1) || every.subsec_nanos() % 1_000_000 != 0 {
        return Err(format!(
            "{text:?}: an interval is at least 1s, in whole ms (a faster job wants a worker, not a schedule)"
        ));
    }
    Ok(every)
}

/// `missed` as --missed takes it.
fn missed_text(missed: Missed) -> String {
    match missed {
        Missed::Last => "last".to_owned(),
        Missed::Skip => "none".to_owned(),
        Missed::All(n) => format!("all:{n}"),
    }
}

fn missed(text: &str) -> Result<Missed, String> {
    match text {
        "last" => Ok(Missed::Last),
        "none" => Ok(Missed::Skip),
        all => all
            .strip_prefix("all:")
            .and_then(|n| n.parse().ok())
            .map(Missed::All)
            .ok_or_else(|| format!("{text:?}: last, none or all:<n>")),
    }
}

fn at(ms: u64) -> String {
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

pub async fn run(server: &Server, args: Args) -> Result<(), Error> {
    match args.command {
        Command::Add(add) => {
            let schedule = match (&add.cron, add.every) {
                (Some(expr), _) => Schedule::cron(&add.name, expr, &add.tz, add.payload.clone())?,
                (None, Some(every)) => Schedule::every(&add.name, every, add.payload.clone())?,
                (None, None) => return Err("give --cron or --every".into()),
            };
            let schedule = schedule.missed(add.missed)?;
            let scheduled = home(server, &add.queue, &add.name).await?.schedules().add(&schedule).await?;
            tell!("scheduled {} in {}: next at {}", add.name, add.queue, at(scheduled.next));
        }
        Command::List { queue } => {
            let mut listed = Vec::new();
            for q in every_queue(server, &queue).await? {
                listed.extend(q.schedules().list().await?);
            }
            for scheduled in &listed {
                let s = &scheduled.schedule;
                let when = match &s.when {
                    When::Every(every) => format!("every {}", humantime::format_duration(*every)),
                    When::Cron { expr, zone } => format!("cron {expr:?} {zone}"),
                };
                let paused = if s.paused { "  paused" } else { "" };
                say!(
                    "{}  next {}  {when}  missed {}{paused}",
                    s.name,
                    at(scheduled.next),
                    missed_text(s.missed)
                );
            }
            // On stderr, out of the way of a pipe reading the lines.
            eprintln!("{} schedules in {queue}", listed.len());
            if listed.is_empty() {
                crate::ops::note_if_unknown(server, &queue).await;
            }
        }
        Command::Remove { queue, name } => {
            if home(server, &queue, &name).await?.schedules().remove(&name).await? {
                tell!("removed {name} from {queue}");
            } else {
                return Err(format!("no schedule {name} in {queue}").into());
            }
        }
        Command::Trigger { queue, name } => {
            match home(server, &queue, &name).await?.schedules().trigger(&name).await? {
                Some(id) => tell!("{id}"),
                None => return Err(format!("no schedule {name} in {queue}").into()),
            }
        }
        Command::Pause { queue, name } => set_paused(server, &queue, &name, true).await?,
        Command::Resume { queue, name } => set_paused(server, &queue, &name, false).await?,
    }
    Ok(())
}

/// Where schedule `name` of `queue` lives: the queue, or the partition of a
/// partitioned queue (protocol 1.8) that routing by the name names.
async fn home(server: &Server, queue: &str, name: &str) -> Result<echomq::Queue, Error> {
    Ok(match server.partitioned(queue).await? {
        Some(partitioned) => partitioned.partition_for(name).clone(),
        None => server.queue(queue).await?,
    })
}

/// The queue, or every partition of a partitioned queue.
async fn every_queue(server: &Server, queue: &str) -> Result<Vec<echomq::Queue>, Error> {
    Ok(match server.partitioned(queue).await? {
        Some(partitioned) => partitioned.partitions().to_vec(),
        None => vec![server.queue(queue).await?],
    })
}

/// `pause` (`paused`) or `resume`: say what it is now, or that there is no such schedule.
async fn set_paused(server: &Server, queue: &str, name: &str, paused: bool) -> Result<(), Error> {
    let q = home(server, queue, name).await?;
    let schedules = q.schedules();
    let found = if paused { schedules.pause(name).await? } else { schedules.resume(name).await? };
    let Some(scheduled) = found else {
        return Err(format!("no schedule {name} in {queue}").into());
    };
    if paused {
        tell!("paused {name} in {queue}: its ticks fire nothing until it is resumed");
    } else {
        tell!("resumed {name} in {queue}: next at {}", at(scheduled.next));
    }
    Ok(())
}
