//! `emq workers`: the live workers, from the worker registry
//! (`emq:workers`, PROTOCOL.md §2): who works which queues, how many jobs
//! each runs now, when it started and when it last beat. A killed worker
//! is marked late once it missed two beats, and drops out once its
//! entry's TTL (three beats) runs out.

use std::time::Duration;

use echomq::WorkerInfo;

use crate::connect::{Error, Server};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only the workers that work this queue.
    #[arg(long)]
    queue: Option<String>,
    /// One JSON object per worker and line, each running job with its
    /// queue, id, token and lease deadline (ms since the Unix epoch).
    #[arg(long)]
    json: bool,
}

pub async fn run(server: &Server, args: Args) -> Result<(), Error> {
    // A bad name is refused before anything is sent.
    if let Some(queue) = &args.queue {
        echomq::Keyspace::new(queue)?;
    }
    let executor = server.executor().await?;
    let mut workers = echomq::workers(&*executor).await?;
    if let Some(queue) = &args.queue {
        workers.retain(|worker| worker.works(queue));
    }
    let now = crate::now_ms();
    if args.json {
        for worker in &workers {
            say!("{}", json(worker));
        }
    } else {
        table(&workers, now)?;
    }
    let late = workers.iter().filter(|worker| late(now, worker)).count();
    if late > 0 {
        eprintln!(
            "emq: note: {late} worker(s) late to beat, killed or stalled: listed until their entries' TTL runs out; \
             the jobs they ran come back to pending when their leases do"
        );
    }
    if let (Some(queue), true) = (&args.queue, workers.is_empty()) {
        eprintln!("emq: note: no live worker works {queue}");
    }
    // A full server refuses the registry's beats: its workers may be missing here.
    if let Ok(mut conn) = server.connection().await {
        crate::ops::note_if_full(&mut conn).await;
    }
    Ok(())
}

/// The workers as a table, a header first, columns aligned.
fn table(workers: &[WorkerInfo], now: u64) -> std::io::Result<()> {
    let header = ["ID", "HOST", "PID", "QUEUES", "CONCURRENCY", "RUNNING", "STARTED", "LAST BEAT"];
    let rows: Vec<[String; 8]> = workers
        .iter()
        .map(|worker| {
            [
                worker.id.clone(),
                worker.host.clone(),
                worker.pid.to_string(),
                worker.queues.join(","),
                worker.concurrency.to_string(),
                worker.running.len().to_string(),
                ago(now, worker.started),
                match late(now, worker) {
                    true => format!("{} (late)", ago(now, worker.beat)),
                    false => ago(now, worker.beat),
                },
            ]
        })
        .collect();
    aligned(&header, &rows)
}

/// A table on stdout: the header, then the rows, each column as wide as its
/// widest cell, two spaces between columns (`emq workers`, `emq groups`).
pub fn aligned<const N: usize>(header: &[&str; N], rows: &[[String; N]]) -> std::io::Result<()> {
    let mut widths = header.map(str::len);
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> =
            cells.iter().zip(widths).map(|(cell, width)| format!("{cell:<width$}")).collect();
        padded.join("  ").trim_end().to_owned()
    };
    say!("{}", line(header.to_vec()));
    for row in rows {
        say!("{}", line(row.iter().map(String::as_str).collect()));
    }
    Ok(())
}

/// How long before `now` the time `at` was (both ms): `0.4s ago`, `3m 12s ago`.
fn ago(now: u64, at: u64) -> String {
    let since = Duration::from_millis(now.saturating_sub(at));
    if since < Duration::from_secs(60) {
        format!("{:.1}s ago", since.as_secs_f64())
    } else {
        format!("{} ago", humantime::format_duration(Duration::from_secs(since.as_secs())))
    }
}

/// Whether worker `worker` has missed two beats: its entry's TTL holds
/// three (PROTOCOL.md §2), so a live worker's last beat is never older
/// than one, but when its process was killed or stalls.
fn late(now: u64, worker: &WorkerInfo) -> bool {
    let ttl = u64::try_from(worker.ttl.as_millis()).unwrap_or(u64::MAX);
    now.saturating_sub(worker.beat).saturating_mul(3) > ttl.saturating_mul(2)
}

/// A worker as one JSON object.
fn json(worker: &WorkerInfo) -> serde_json::Value {
    serde_json::json!({
        "id": worker.id,
        "host": worker.host,
        "pid": worker.pid,
        "queues": worker.queues,
        "concurrency": worker.concurrency,
        "version": worker.version,
        "protocol": worker.protocol,
        "started": worker.started,
        "beat": worker.beat,
        "ttl_ms": u64::try_from(worker.ttl.as_millis()).unwrap_or(u64::MAX),
        "late": late(crate::now_ms(), worker),
        "running": worker.running,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_in_tenths_then_in_units() {
        assert_eq!(ago(10_000, 9_600), "0.4s ago");
        assert_eq!(ago(10_000, 20_000), "0.0s ago", "a beat from a clock ahead of ours");
        assert_eq!(ago(200_000, 8_000), "3m 12s ago");
    }

    #[test]
    fn a_worker_is_late_once_two_of_its_three_beats_are_missed() {
        let worker = |beat| WorkerInfo {
            id: "w".into(),
            host: "h".into(),
            pid: 1,
            queues: Vec::new(),
            concurrency: 1,
            version: String::new(),
            protocol: String::new(),
            started: 0,
            beat,
            ttl: Duration::from_secs(15),
            running: Vec::new(),
        };
        assert!(!late(20_000, &worker(15_000)), "one beat (5 s) old");
        assert!(!late(20_000, &worker(10_000)), "two beats old, to the ms");
        assert!(late(20_000, &worker(9_999)));
        assert!(!late(20_000, &worker(30_000)), "a beat from a clock ahead of ours");
    }
}
