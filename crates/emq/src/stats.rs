//! `emq stats`: each queue's jobs by state and its flow settings, a
//! partitioned queue's partitions (protocol 1.8) in order and then its
//! total; and what the dashboard shares of it (the partitioned queues
//! among the registry's names, counts added).

use std::collections::BTreeSet;

use crate::connect::{Conn, Error, Server};
use crate::ops::{discover, note_if_unknown};

#[derive(clap::Args, Debug)]
pub struct StatsArgs {
    /// The queues (all of them when none is named).
    queues: Vec<String>,
}

/// A row of `emq stats`: a queue, and the partitioned queue (protocol 1.8)
/// it is a partition of (or the ordinary queue of the name of), whose
/// total follows the last of its rows.
type StatsRow = (String, Option<echomq::Partitioned>);

/// The queues named, a partitioned queue's as its partitions and the
/// ordinary queue of its name; or, none named, every queue the registry
/// names, a partitioned queue's together and in that order.
async fn stats_rows(
    executor: &std::sync::Arc<dyn echomq::Executor>,
    named: Vec<String>,
    discovered: bool,
) -> Result<Vec<StatsRow>, Error> {
    let mut rows: Vec<StatsRow> = Vec::new();
    let mut seen = BTreeSet::new();
    for name in named {
        // A discovered partition names its partitioned queue: `<p>~<k>~<s>`.
        let home = match discovered {
            true => partitioned_home(&name),
            false => Some(name.clone()),
        };
        let found = match home {
            Some(home) if !seen.contains(&home) => echomq::Partitioned::find(executor.clone(), &home).await?,
            _ => None,
        };
        match found {
            Some(p) if !discovered || p.partitions().iter().any(|q| q.name() == name) => {
                seen.insert(p.name().to_owned());
                // Its partitions, then the ordinary queue of its name, which its workers work too.
                rows.retain(|(row, _)| row != p.name());
                let queues = p.partitions().iter().map(|q| q.name().to_owned()).chain([p.name().to_owned()]);
                rows.extend(queues.map(|name| (name, Some(p.clone()))));
            }
            _ if rows.iter().any(|(row, _)| *row == name) => {}
            _ => rows.push((name, None)),
        }
    }
    Ok(rows)
}

/// The partitioned queues (protocol 1.8) some of `names` are partitions
/// of, by name: one definition read for each name `<p>~<k>~<s>`'s `p`.
pub async fn partitioned_among(
    executor: &std::sync::Arc<dyn echomq::Executor>,
    names: &[String],
) -> Result<Vec<echomq::Partitioned>, Error> {
    let homes: BTreeSet<String> = names.iter().filter_map(|name| partitioned_home(name)).collect();
    let mut found = Vec::new();
    for home in homes {
        if let Some(p) = echomq::Partitioned::find(executor.clone(), &home).await? {
            if p.partitions().iter().any(|q| names.iter().any(|name| name == q.name())) {
                found.push(p);
            }
        }
    }
    Ok(found)
}

/// The partitioned queue a partition's name `<p>~<k>~<s>` names.
pub fn partitioned_home(name: &str) -> Option<String> {
    let mut parts = name.rsplitn(3, '~');
    let (s, k, home) = (parts.next()?, parts.next()?, parts.next()?);
    let digits = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    (digits(s) && digits(k)).then(|| home.to_owned())
}

pub async fn stats(server: &Server, args: StatsArgs) -> Result<(), Error> {
    let args_named = args.queues.clone();
    let executor = server.executor().await?;
    let rows = match args.queues.is_empty() {
        true => stats_rows(&executor, discover(&mut server.connection().await?).await?, true).await?,
        false => stats_rows(&executor, args.queues, false).await?,
    };
    let total_name = |p: &echomq::Partitioned| format!("{} (all {})", p.name(), p.partitions().len());
    // In characters, as the padding counts them (not bytes: a name with an é).
    let width = rows
        .iter()
        .map(|(name, p)| p.as_ref().map_or(name.chars().count(), |p| total_name(p).chars().count()))
        .max()
        .unwrap_or(5)
        .max(5);
    let mut conn = server.connection().await?;
    say_header(width)?;
    let mut unreadable = 0;
    let mut total = echomq::transition::StatsReply::default();
    let mut partial = false;
    for (at, (name, partitioned)) in rows.iter().enumerate() {
        let queue = echomq::Queue::new(executor.clone(), name)?;
        let read =
            stats_row(server, &mut conn, &queue, width, !args_named.is_empty() && partitioned.is_none())
                .await?;
        unreadable += usize::from(read.is_none());
        let Some(p) = partitioned else { continue };
        match read {
            Some(s) => total = total + s,
            None => partial = true,
        }
        // After a partitioned queue's last partition: its total.
        if rows
            .get(at + 1)
            .is_none_or(|(_, next)| next.as_ref().map(echomq::Partitioned::name) != Some(p.name()))
        {
            say_total(p, &total_name(p), width, &std::mem::take(&mut total), std::mem::take(&mut partial))?;
        }
    }
    crate::ops::note_if_full(&mut conn).await;
    match unreadable {
        0 => Ok(()),
        n => {
            Err(crate::failure::Exit::with_code(1, format!("{n} queue(s) could not be read (said above)"))
                .into())
        }
    }
}

/// `emq stats`' header.
fn say_header(width: usize) -> Result<(), Error> {
    let [p, a, de, d, x, c, w] = ["pending", "active", "delayed", "done", "dead", "cancelled", "waiting"];
    say!("{:<width$} {p:>9} {a:>9} {de:>9} {d:>9} {x:>9} {c:>9} {w:>9}  flow", "queue");
    Ok(())
}

/// One row of `emq stats`.
fn say_counts(name: &str, width: usize, s: &echomq::transition::StatsReply, flow: &str) -> Result<(), Error> {
    let [p, a, de, d, x, c, w] = [s.pending, s.active, s.delayed, s.done, s.dead, s.cancelled, s.waiting];
    say!("{name:<width$} {p:>9} {a:>9} {de:>9} {d:>9} {x:>9} {c:>9} {w:>9}  {flow}");
    Ok(())
}

/// One queue's row of `emq stats`, and its counts; `None`, said, for a
/// damaged queue (a key of the wrong type), which does not hide the others.
/// `named`: a queue the user named, which is said when it seems unknown.
async fn stats_row(
    server: &Server,
    conn: &mut Conn,
    queue: &echomq::Queue,
    width: usize,
    named: bool,
) -> Result<Option<echomq::transition::StatsReply>, Error> {
    let name = queue.name();
    let s = match queue.stats().await {
        Ok(s) => s,
        Err(err) if err.code().is_some() => {
            say!("{name:<width$} unreadable: {}", crate::failure::explain(&err));
            return Ok(None);
        }
        Err(err) => return Err(err.into()),
    };
    if s == echomq::transition::StatsReply::default() && named {
        note_if_unknown(server, name).await;
    }
    // A user who may not read the config key still gets the counts.
    let flow = match crate::flow::settings(conn, queue.keyspace()).await {
        Ok(settings) => crate::flow::describe(&settings),
        Err(_) => "?".to_owned(),
    };
    say_counts(name, width, &s, &flow)?;
    Ok(Some(s))
}

/// A partitioned queue's total row, its exact limits as its flow; `partial`
/// when a partition could not be read (its counts are not in it).
fn say_total(
    p: &echomq::Partitioned,
    name: &str,
    width: usize,
    total: &echomq::transition::StatsReply,
    partial: bool,
) -> Result<(), Error> {
    let rate =
        p.exact().map(|rate| format!("exact rate {}/{}", rate.claims, humantime::format_duration(rate.per)));
    let cap = p.running_cap().map(|cap| format!("exact concurrency {cap}"));
    let exact: Vec<String> = rate.into_iter().chain(cap).collect();
    let flow = if exact.is_empty() { "-".into() } else { exact.join(", ") };
    match partial {
        true => {
            say_counts(name, width, total, &format!("{flow} (partial: a partition unreadable, said above)"))
        }
        false => say_counts(name, width, total, &flow),
    }
}
