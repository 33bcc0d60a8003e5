//! `emq partition`: partitioned queues (protocol 1.8, PROTOCOL.md §7.10):
//! one queue over N ordinary queues, each in its own range of Cluster
//! slots. `create` writes the definition; `show` lists the partitions with
//! their slots, depths and keepers (the worker that keeps each one's
//! upkeep), and the totals. `emq enqueue`, `emq work` and
//! `emq inspect --queue` take a partitioned queue's name as one queue.

use echomq::executor::{Answer, Command as Plain};
use echomq::partition::queue_slot;
use echomq::{Partitioned, StatsReply};

use crate::connect::{Error, Server};

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Partition a queue over COUNT queues (1 to 1024), or say it is so
    /// already; refused when it is partitioned another way, or is an
    /// ordinary queue holding jobs.
    Create {
        /// The partitioned queue's name (at most 240 bytes).
        queue: String,
        /// How many partitions: on a Cluster, a multiple of its primaries
        /// spreads them evenly (12 over 3 puts 4 on each).
        count: usize,
    },
    /// List a partitioned queue's partitions: each one's queue, slot, jobs
    /// by state and keeper (the worker that keeps its upkeep), and the totals.
    Show {
        /// The partitioned queue.
        queue: String,
    },
}

impl Command {
    /// Whether it only reads (`show`).
    pub fn only_reads(&self) -> bool {
        matches!(self, Command::Show { .. })
    }
}

pub async fn run(server: &Server, command: Command) -> Result<(), Error> {
    let via = server.executor().await?;
    match command {
        Command::Create { queue, count } => {
            let made = Partitioned::create(via, &queue, count).await?;
            tell!("{} is partitioned over {} queues:", made.name(), made.partitions().len());
            for (k, partition) in made.partitions().iter().enumerate() {
                tell!("  {k} {} (slot {})", partition.name(), queue_slot(partition.name()));
            }
            Ok(())
        }
        Command::Show { queue } => {
            let partitioned = Partitioned::open(via.clone(), &queue).await?;
            show(&partitioned).await?;
            stray(&echomq::Queue::new(via, &queue)?).await
        }
    }
}

/// The partitions as a table, and the totals; what a partitioned queue loses, on stderr.
async fn show(queue: &Partitioned) -> Result<(), Error> {
    let stats =
        futures_util::future::try_join_all(queue.partitions().iter().map(echomq::Queue::stats)).await?;
    let keepers = futures_util::future::join_all(queue.partitions().iter().map(keeper)).await;
    let mut rows: Vec<[String; 11]> = queue
        .partitions()
        .iter()
        .zip(&stats)
        .zip(keepers)
        .enumerate()
        .map(|(k, ((partition, stats), keeper))| {
            let slot = queue_slot(partition.name()).to_string();
            row([k.to_string(), partition.name().to_owned(), slot], stats, keeper)
        })
        .collect();
    // The ordinary queue of its name, which its workers work too: in the
    // total, and a row of its own when it holds a job.
    let own = queue.worked().pop().expect("worked ends with the ordinary queue");
    let own_stats = own.stats().await?;
    if own_stats != StatsReply::default() {
        rows.push(row(
            ["-".into(), own.name().to_owned(), queue_slot(own.name()).to_string()],
            &own_stats,
            "-".into(),
        ));
    }
    let total = stats.iter().fold(own_stats, |sum, stats| sum + *stats);
    rows.push(row(["all".into(), queue.name().to_owned(), "-".into()], &total, "-".into()));
    let header = [
        "PARTITION",
        "QUEUE",
        "SLOT",
        "PENDING",
        "ACTIVE",
        "DELAYED",
        "DONE",
        "DEAD",
        "CANCELLED",
        "WAITING",
        "KEPT BY",
    ];
    crate::workers::aligned(&header, &rows)?;
    if let Some(rate) = queue.exact() {
        tell!("exact rate {}/{} across the partitions", rate.claims, humantime::format_duration(rate.per));
    }
    if let Some(cap) = queue.running_cap() {
        tell!("exact concurrency {cap} across the partitions, {} running now", queue.running().await?);
    }
    eprintln!("emq: note: FIFO and priority hold within each partition, not across them");
    Ok(())
}

/// Jobs in the ordinary queue of the partitioned queue's own name: sent by a
/// speaker that does not know protocol 1.8, which no partitioned worker
/// claims. Said, with what to do, so that none waits unseen.
async fn stray(ordinary: &echomq::Queue) -> Result<(), Error> {
    let stats = ordinary.stats().await?;
    let held = stats.pending + stats.active + stats.delayed;
    if held > 0 {
        let name = ordinary.name();
        eprintln!(
            "emq: warning: the ordinary queue {name} holds {held} job(s) (pending {}, active {}, delayed {}): \
             sent by a speaker that does not know partitioned queues (protocol 1.8). A worker of the \
             partitioned queue (`emq work {name}`) runs them too, beside the partitions; none of a single \
             partition's does.",
            stats.pending, stats.active, stats.delayed
        );
    }
    Ok(())
}

fn row([partition, queue, slot]: [String; 3], stats: &StatsReply, keeper: String) -> [String; 11] {
    let s = stats;
    let counts = [s.pending, s.active, s.delayed, s.done, s.dead, s.cancelled, s.waiting];
    let [pending, active, delayed, done, dead, cancelled, waiting] = counts.map(|n| n.to_string());
    [partition, queue, slot, pending, active, delayed, done, dead, cancelled, waiting, keeper]
}

/// The worker that keeps `partition`'s upkeep now, by its upkeep lease
/// (PROTOCOL.md §11.3): `-` when none does (no worker runs, or none since
/// the lease ran out), `?` when it cannot be read (an ACL without `GET`).
async fn keeper(partition: &echomq::Queue) -> String {
    let lease = Plain::Get(partition.keyspace().upkeep());
    match partition.executor().plain().one(lease).await.and_then(Answer::text) {
        Ok(Some(worker)) => worker,
        Ok(None) => "-".into(),
        Err(_) => "?".into(),
    }
}
