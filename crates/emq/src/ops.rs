//! The operations commands: what an operator does by hand (enqueue has its own file).

use std::collections::BTreeSet;
use std::time::{Duration, UNIX_EPOCH};

use echomq::keyspace::{queue_of, state_pattern};
use echomq::{Delete, Drain, JobId, Keyspace, State};

use crate::connect::{Conn, Error, Server};
use crate::fanout::each_queue;

/// A state by its protocol name: pending, active, delayed, done, dead, cancelled, waiting.
pub fn state(name: &str) -> Result<State, String> {
    name.parse().map_err(|_| {
        format!("{name:?} is not a state: pending, active, delayed, done, dead, cancelled or waiting")
    })
}

/// A finished state, the only ones purge deletes: done, dead or cancelled.
fn finished(name: &str) -> Result<State, String> {
    match state(name)? {
        finished @ (State::Done | State::Dead | State::Cancelled) => Ok(finished),
        other => Err(format!("{other} jobs are not finished: purge takes done, dead or cancelled")),
    }
}

#[derive(clap::Args, Debug)]
pub struct ListArgs {
    /// The queue (a partitioned queue's name: every partition's jobs, each
    /// saying which it is in, by score: there is no order across them).
    queue: String,
    /// The state: pending, active, delayed, done, dead, cancelled, or
    /// waiting (a flow's parents waiting for their children).
    #[arg(value_parser = state)]
    state: State,
    /// How many at most.
    #[arg(long, default_value_t = 20)]
    limit: usize,
}

pub async fn list(server: &Server, args: ListArgs) -> Result<(), Error> {
    let (state, limit) = (args.state, args.limit.max(1));
    let queues = queues_named(server, &args.queue).await?;
    let mut conn = server.connection().await?;
    let (mut jobs, mut total) = (Vec::new(), 0);
    for queue in &queues {
        let (first, count) = first_of(&mut conn, queue, state, limit).await?;
        jobs.extend(first.into_iter().map(|(id, score, error)| (id, score, error, queue)));
        total += count;
    }
    // Across a partitioned queue's partitions there is no order to serve
    // in: by score, as one queue's set orders its own.
    jobs.sort_by(|a, b| a.1.total_cmp(&b.1));
    jobs.truncate(limit);
    for (id, score, error, queue) in &jobs {
        let when = match state {
            State::Pending => pending_place(*score),
            State::Active => format!("lease until {}", timestamp(*score)),
            State::Delayed => format!("due {}", timestamp(*score)),
            _ => format!("since {}", timestamp(*score)),
        };
        let home = if queues.len() > 1 { format!("  in {queue}") } else { String::new() };
        match error {
            Some(error) => say!("{id}  {when}{home}  error: {}", one_line(error)),
            None => say!("{id}  {when}{home}"),
        }
    }
    // On stderr, out of the way of a pipe reading the ids.
    let across = match queues.len() {
        1 => String::new(),
        n => format!(" ({} partitions and its own queue; no order across them)", n - 1),
    };
    eprintln!("{} of {total} {state} in {}{across}", jobs.len(), args.queue);
    if total == 0 {
        note_if_unknown(server, &args.queue).await;
    }
    Ok(())
}

/// Queue `queue`'s first `limit` jobs in `state`, each with its score and, a
/// dead one, its last error (why it died); and how many it holds.
async fn first_of(
    conn: &mut Conn,
    queue: &str,
    state: State,
    limit: usize,
) -> Result<(Vec<(String, f64, Option<String>)>, u64), Error> {
    let key = Keyspace::new(queue)?.state(state);
    let jobs: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(&key)
        .arg(0)
        .arg(limit as isize - 1)
        .arg("WITHSCORES")
        .query_async(conn)
        .await?;
    let total: u64 = redis::cmd("ZCARD").arg(&key).query_async(conn).await?;
    let mut errors: Vec<Option<String>> = Vec::new();
    if state == State::Dead && !jobs.is_empty() {
        let mut hmget = redis::cmd("HMGET");
        hmget.arg(Keyspace::new(queue)?.errors());
        for (id, _) in &jobs {
            hmget.arg(id);
        }
        errors = hmget.query_async(conn).await?;
    }
    errors.resize(jobs.len(), None);
    Ok((jobs.into_iter().zip(errors).map(|((id, score), error)| (id, score, error)).collect(), total))
}

/// Refuse a partitioned queue's name (exit 2, nothing sent after the read of
/// its definition) for a command that takes one queue, saying `why` and how
/// to name a partition.
pub async fn one_queue(server: &Server, name: &str, why: &str) -> Result<(), Error> {
    match server.partitioned(name).await? {
        None => Ok(()),
        Some(partitioned) => Err(Box::new(crate::failure::Exit::usage(format!(
            "{name} is partitioned over {} queues, and {why}: name one of its partitions (`emq partition show \
             {name}` lists them)",
            partitioned.partitions().len()
        )))),
    }
}

/// The ordinary queues `name` stands for: a partitioned queue's partitions,
/// then the ordinary queue of its name (where a speaker before 1.8 puts
/// its jobs); an ordinary queue's name alone.
pub async fn queues_named(server: &Server, name: &str) -> Result<Vec<String>, Error> {
    Ok(match server.partitioned(name).await? {
        Some(partitioned) => {
            let partitions = partitioned.partitions().iter().map(|queue| queue.name().to_owned());
            partitions.chain([name.to_owned()]).collect()
        }
        None => vec![name.to_owned()],
    })
}

#[derive(clap::Args, Debug)]
pub struct QueuesArgs {
    /// Also scan the keyspace for queues missing from the registry (written
    /// by speakers before protocol 1.3), and note them there. A SCAN of
    /// every key: slow at millions of keys.
    #[arg(long)]
    scan: bool,
}

pub async fn queues(server: &Server, args: QueuesArgs) -> Result<(), Error> {
    let mut conn = server.connection().await?;
    let mut names: BTreeSet<String> = registered(&mut conn).await?.into_iter().collect();
    if args.scan {
        let executor = server.executor().await?;
        for name in scan_queues(&mut conn).await? {
            if !names.contains(&name) {
                echomq::queue::registry::note(&*executor, &name).await?;
                names.insert(name);
            }
        }
    }
    for name in names {
        say!("{name}");
    }
    Ok(())
}

#[derive(clap::Args, Debug)]
pub struct PurgeArgs {
    /// The queue.
    queue: String,
    /// Which finished jobs: done, dead or cancelled.
    #[arg(long, value_parser = finished)]
    state: State,
    /// Only jobs finished at least this long ago, e.g. 7d or 12h.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "0s")]
    older_than: Duration,
}

pub async fn purge(server: &Server, args: PurgeArgs) -> Result<(), Error> {
    let state = args.state;
    let queues = queues_named(server, &args.queue).await?;
    let (older, many) = (args.older_than, queues.len() > 1);
    let opened = queues_of(server, &queues).await?;
    let each = each_queue(&args.queue, &opened, "purged", |_, queue| async move {
        let purged = queue.purge(state, older).await?;
        if many {
            tell!("purged {purged} {state} jobs from {}", queue.name());
        }
        Ok(purged)
    });
    let total: u64 = each.await?.into_iter().sum();
    tell!("purged {total} {state} jobs from {}{}", args.queue, across(&queues));
    Ok(())
}

/// The queues named `names`, opened.
async fn queues_of(server: &Server, names: &[String]) -> Result<Vec<echomq::Queue>, Error> {
    let mut queues = Vec::with_capacity(names.len());
    for name in names {
        queues.push(server.queue(name).await?);
    }
    Ok(queues)
}

/// What a count over `queues`, the ones a name stands for, covers: nothing
/// to say for one queue; a partitioned queue's partitions and its own.
fn across(queues: &[String]) -> String {
    match queues.len() {
        1 => String::new(),
        n => format!(" (its {} partitions and its own queue)", n - 1),
    }
}

#[derive(clap::Args, Debug)]
pub struct DrainArgs {
    /// The queue.
    queue: String,
    /// Also delete the jobs running now; their workers lose their leases.
    #[arg(long)]
    active: bool,
}

pub async fn drain(server: &Server, args: DrainArgs) -> Result<(), Error> {
    let queues = queues_named(server, &args.queue).await?;
    let how = if args.active { Drain::WithActive } else { Drain::Waiting };
    let many = queues.len() > 1;
    let opened = queues_of(server, &queues).await?;
    // Flows' parents waiting for their children are drained too: counted
    // first, so that their children, which run on, can be said.
    let mut parents = 0;
    for queue in &opened {
        parents += queue.stats().await.map_or(0, |stats| stats.waiting);
    }
    let each = each_queue(&args.queue, &opened, "drained", |_, queue| async move {
        let drained = queue.drain(how).await?;
        if many {
            tell!("drained {drained} jobs from {}", queue.name());
        }
        Ok(drained)
    });
    let drained: u64 = each.await?.into_iter().sum();
    let which =
        if args.active { "pending, delayed, waiting and active" } else { "pending, delayed and waiting" };
    tell!("drained {drained} {which} jobs from {}{}", args.queue, across(&queues));
    if parents > 0 {
        eprintln!(
            "emq: note: about {parents} of them were flows' parents waiting for their children: children in \
             other queues run on and tell no one (emq cancel of a parent by id takes its children with it)"
        );
    }
    Ok(())
}

#[derive(clap::Args, Debug)]
pub struct DeleteQueueArgs {
    /// The queue.
    queue: String,
    /// Delete it even while jobs are active; their workers lose their leases.
    #[arg(long)]
    force: bool,
}

pub async fn delete_queue(server: &Server, args: DeleteQueueArgs) -> Result<(), Error> {
    let how = if args.force { Delete::Force } else { Delete::IfIdle };
    if let Some(partitioned) = server.partitioned(&args.queue).await? {
        let deleted = partitioned.delete(how).await?;
        tell!(
            "deleted partitioned queue {}: its {} partitions, the queue of its name and its definition, and their \
             {deleted} jobs",
            args.queue,
            partitioned.partitions().len()
        );
        return Ok(());
    }
    let queue = server.queue(&args.queue).await?;
    let deleted = queue.delete(how).await?;
    tell!("deleted queue {} and its {deleted} jobs", args.queue);
    if deleted == 0 {
        eprintln!("emq: note: {} held no job (a misspelt name?)", args.queue);
    }
    Ok(())
}

/// Every queue on the server, from its queue registry (one read); only a
/// server with no registry at all (every queue written before protocol
/// 1.3) is scanned instead.
pub async fn discover(conn: &mut Conn) -> Result<Vec<String>, Error> {
    let names = registered(conn).await?;
    if names.is_empty() {
        return scan_queues(conn).await;
    }
    Ok(names)
}

/// The queue registry's names (PROTOCOL.md §2), in name order.
async fn registered(conn: &mut Conn) -> Result<Vec<String>, Error> {
    let mut names: Vec<String> =
        redis::cmd("ZRANGE").arg(echomq::keyspace::REGISTRY).arg(0).arg(-1).query_async(conn).await?;
    names.sort_unstable();
    Ok(names)
}

/// Every queue with a state set, by a SCAN of the keyspace (slow at
/// millions of keys: what the registry is for).
async fn scan_queues(conn: &mut Conn) -> Result<Vec<String>, Error> {
    let mut names = BTreeSet::new();
    for state in State::ALL {
        for key in conn.scan(&state_pattern(state)).await? {
            if let Some(name) = queue_of(&key) {
                names.insert(name.to_owned());
            }
        }
    }
    Ok(names.into_iter().collect())
}

/// The queues holding a record of job `id`, by a scan.
pub async fn queues_holding(server: &Server, id: &JobId) -> Result<BTreeSet<String>, Error> {
    let records = server.connection().await?.scan(&echomq::keyspace::job_pattern(id)).await?;
    Ok(records.iter().filter_map(|key| queue_of(key)).map(str::to_owned).collect())
}

/// The queue of job `id`: the one given (a partitioned queue's: the job's
/// partition), or the one whose record a scan finds.
pub async fn queue_for(server: &Server, id: &JobId, given: Option<String>) -> Result<String, Error> {
    if let Some(queue) = given {
        // A partitioned queue's name: the job's partition (protocol 1.8).
        return Ok(match server.partitioned(&queue).await? {
            Some(partitioned) => partitioned.partition_of(id).name().to_owned(),
            None => queue,
        });
    }
    let queues = queues_holding(server, id).await?;
    match queues.len() {
        1 => Ok(queues.into_iter().next().unwrap_or_default()),
        0 => {
            let message = format!("no job {id} on the server");
            Err(Box::new(crate::failure::Exit::with_code(crate::events::exit::NO_JOB, message)))
        }
        _ => {
            let queues = queues.into_iter().collect::<Vec<_>>().join(", ");
            Err(format!("{id} is in several queues ({queues}): say which with --queue").into())
        }
    }
}

/// What a server over its `maxmemory` does, when it is: it refuses new
/// jobs and settings, while the jobs already there go on (PROTOCOL.md §5,
/// 1.10). Over it as Redis counts it (less its replicas' and AOF buffers),
/// under `noeviction` or a `volatile-*` policy (EchoMQ's keys have no TTL:
/// nothing is evicted, writes are refused). `None` when it has room, or
/// when `INFO memory` cannot be read as one server's (advice only: it never
/// fails a command; a Cluster's nodes answer apart, and are not read).
pub async fn full_note(conn: &mut Conn) -> Option<String> {
    let info: String = redis::cmd("INFO").arg("memory").query_async(conn).await.ok()?;
    let field =
        |name: &str| info.lines().find_map(|line| line.strip_prefix(name)?.strip_prefix(':')).map(str::trim);
    let number = |name: &str| field(name).and_then(|value| value.parse::<u64>().ok());
    let not_counted = number("mem_not_counted_for_evict").unwrap_or(0);
    let used = number("used_memory")?.saturating_sub(not_counted);
    let most = number("maxmemory")?;
    let policy = field("maxmemory_policy")?;
    let refuses = policy == "noeviction" || policy.starts_with("volatile-");
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    (most > 0 && used >= most && refuses).then(|| {
        format!(
            "the server is full: {:.1} MiB used of its maxmemory {:.1} MiB. It refuses new jobs, flows, \
             schedules and settings (and workers' registry entries) until memory is freed (emq purge, \
             emq delete) or maxmemory raised; the jobs already there are claimed, acked and renewed as \
             usual",
            mib(used),
            mib(most)
        )
    })
}

/// [`full_note`], said on stderr when the server is full.
pub async fn note_if_full(conn: &mut Conn) {
    if let Some(note) = full_note(conn).await {
        eprintln!("emq: note: {note}");
    }
}

/// A queue none of whose keys exist (no job, setting, event or schedule,
/// ever: a misspelt name?), said on stderr. Advice only: a script waiting
/// for a queue not made yet goes on, and a failed look says nothing.
pub async fn note_if_unknown(server: &Server, name: &str) {
    if unknown(server, name).await {
        eprintln!("emq: note: {}", unknown_note(name));
    }
}

/// Whether none of queue `name`'s keys exist; false when it cannot tell.
pub async fn unknown(server: &Server, name: &str) -> bool {
    let Ok(keys) = Keyspace::new(name) else { return false };
    let Ok(mut conn) = server.connection().await else { return false };
    let mut exists = redis::cmd("EXISTS");
    for state in State::ALL {
        exists.arg(keys.state(state));
    }
    exists.arg(keys.config()).arg(keys.events()).arg(keys.schedules()).arg(keys.results());
    // A partitioned queue's own name holds its definition, its jobs its partitions'.
    exists.arg(echomq::keyspace::partitions(name));
    exists.query_async::<u64>(&mut conn).await.is_ok_and(|found| found == 0)
}

/// What [`note_if_unknown`] says of queue `name`.
pub fn unknown_note(name: &str) -> String {
    format!("queue {name} holds no job and has never been seen on this server (a misspelt name?)")
}

/// `text` on one line: its line breaks as spaces.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A pending job's place in words: its priority; a grouped job's pending
/// score is 2^32 past it (PROTOCOL.md §7.9: grouped jobs are served by
/// their group's turn, by priority within the group).
fn pending_place(score: f64) -> String {
    let grouped = echomq::limits::GROUPED_SCORE as f64;
    if score > *echomq::limits::PRIORITY.end() as f64 {
        format!("priority {} in its group", score - grouped)
    } else {
        format!("priority {score}")
    }
}

/// A server time in ms as RFC 3339.
pub(crate) fn timestamp(ms: f64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms.max(0.0) as u64)).to_string()
}

/// The payload as text when it is short printable UTF-8 (a last newline
/// aside), else a summary.
pub(crate) fn printable(payload: &[u8]) -> String {
    // A command's output ends in a newline: that one is not worth a "(binary)".
    let payload = payload.strip_suffix(b"\n").unwrap_or(payload);
    match std::str::from_utf8(payload) {
        Ok(text) if text.len() <= 200 && !text.chars().any(char::is_control) => text.to_owned(),
        Ok(text) if !text.chars().any(char::is_control) => {
            format!("{}…", &text[..text.floor_char_boundary(200)])
        }
        _ => "(binary)".to_owned(),
    }
}
