//! `emq events <queue>`: a queue's event log as JSON lines, followed live;
//! `emq result <id>`: what a job's handler returned, waiting for it if asked.

use echomq::EventsFrom;
use std::io::Write;
use std::time::Duration;

use echomq::{Event, Finished, JobId};

use crate::connect::{Error, Server};
use crate::failure::Exit;

#[derive(clap::Args, Debug)]
pub struct EventsArgs {
    /// The queue.
    queue: String,
    /// Start with the oldest event the log keeps (by default, only new ones).
    #[arg(long, conflicts_with = "after")]
    from_start: bool,
    /// Resume after this event (the `event_id` of a line printed before).
    #[arg(long)]
    after: Option<String>,
    /// Only this job's events.
    #[arg(long)]
    job: Option<JobId>,
    /// Stop after this many events.
    #[arg(long)]
    count: Option<u64>,
    /// Stop when no event came for this long (by default, follow until stopped).
    #[arg(long, value_parser = humantime::parse_duration)]
    idle: Option<Duration>,
}

pub async fn events(server: &Server, args: EventsArgs) -> Result<(), Error> {
    crate::ops::one_queue(server, &args.queue, "events follows one queue's log").await?;
    let queue = server.queue(&args.queue).await?;
    crate::ops::note_if_unknown(server, &args.queue).await;
    let mut events = match (&args.after, args.from_start) {
        (Some(after), _) => queue.events(EventsFrom::After(after.parse()?)).await?,
        (None, true) => queue.events(EventsFrom::Oldest).await?,
        (None, false) => {
            tracing::info!(
                "following {}'s new events (--from-start: the ones its log keeps too)",
                args.queue
            );
            queue.events(EventsFrom::Now).await?
        }
    };
    let mut printed = 0;
    let mut out = std::io::stdout().lock();
    while args.count.is_none_or(|count| printed < count) {
        let next = match args.idle {
            Some(idle) => events.next_within(idle).await,
            None => events.next().await.map(Some),
        };
        let event = match next {
            Ok(Some(event)) => event,
            Ok(None) => break,
            // Where a follow that broke resumes: after the last event read, or its start.
            Err(err) => return Err(resumable(err, &args, &events.after().to_string())),
        };
        if args.job.as_ref().is_some_and(|job| event.job.as_ref() != Some(job)) {
            continue;
        }
        writeln!(out, "{}", json_line(&args.queue, &event))?;
        out.flush()?;
        printed += 1;
    }
    Ok(())
}

/// A follow that broke, with the command that resumes it where it stopped
/// (the log keeps what came meanwhile, as far as its length allows).
fn resumable(err: echomq::Error, args: &EventsArgs, after: &str) -> Error {
    let code = crate::failure::exit_code(&err, true);
    let from = format!("--after {after}");
    let job = args.job.as_ref().map_or(String::new(), |job| format!(" --job {job}"));
    let message = format!(
        "{}\nto go on where it stopped: emq events {}{job} {from}",
        crate::failure::explain(&err),
        args.queue
    );
    Box::new(crate::failure::Exit::with_code(code, message))
}

/// One event as a JSON object: its id, time, queue, name and job, then its
/// own fields (as text; bytes that are not UTF-8 are replaced).
fn json_line(queue: &str, event: &Event) -> serde_json::Value {
    let mut line = serde_json::Map::new();
    line.insert("event_id".into(), event.id.to_string().into());
    line.insert("time".into(), humantime::format_rfc3339_millis(event.time()).to_string().into());
    line.insert("queue".into(), queue.into());
    line.insert("event".into(), event.kind.as_str().into());
    if let Some(job) = &event.job {
        line.insert("job".into(), job.as_str().into());
    }
    for (field, value) in &event.fields {
        line.entry(field.clone()).or_insert_with(|| String::from_utf8_lossy(value).into_owned().into());
    }
    line.into()
}

#[derive(clap::Args, Debug)]
pub struct ResultArgs {
    /// The job's id, or `{queue}JOB_…` (as `emq flow add` names a child).
    #[arg(value_parser = crate::inspect::job_arg)]
    id: crate::inspect::JobArg,
    /// Its queue (found by a scan when not given).
    #[arg(long)]
    queue: Option<String>,
    /// Wait this long for the job to finish (following the queue's event log).
    #[arg(long, value_parser = humantime::parse_duration)]
    wait: Option<Duration>,
}

/// `emq result`'s exit codes beyond 0 (done) and 1 (anything else).
impl ResultArgs {
    /// Whether it waits for the job (`--wait`): then for as long as that says.
    pub fn waits(&self) -> bool {
        self.wait.is_some()
    }
}

pub mod exit {
    /// The job is dead: out of attempts.
    pub const DEAD: i32 = 6;
    /// The job was cancelled.
    pub const CANCELLED: i32 = 7;
    /// The job has not finished (yet): pending, delayed or active.
    pub const NOT_FINISHED: i32 = 8;
    /// There is no such job (never enqueued, or purged since): `emq
    /// result`'s, and `inspect`'s, `retry`'s and `cancel`'s of a job by id,
    /// whether the scan for its queue or the server found none.
    pub const NO_JOB: i32 = 9;
}

/// How `emq result` ends when the job did not end done: its exit code says which.
fn not_done(code: i32, message: String) -> Error {
    Box::new(Exit::with_code(code, message))
}

/// The result's bytes on stdout, as they are; a job that did not finish
/// done is an error that says how it ended, or that it has not yet.
pub async fn result(server: &Server, args: ResultArgs) -> Result<(), Error> {
    let name = match args.id.queue_given(server, args.queue.clone()).await? {
        // A partitioned queue's name: the job's partition.
        Some(name) => crate::ops::queue_for(server, &args.id, Some(name)).await?,
        None if crate::ops::queues_holding(server, &args.id).await?.is_empty() => {
            let message =
                format!("{} is gone: no such job on the server (never enqueued, or purged)", args.id);
            return Err(not_done(exit::NO_JOB, message));
        }
        None => crate::ops::queue_for(server, &args.id, None).await?,
    };
    let queue = server.queue(&name).await?;
    let gone = || {
        let message = format!("{} is gone: no such job in {name} (never enqueued, or purged)", args.id);
        not_done(exit::NO_JOB, message)
    };
    let finished = match queue.wait(&args.id, args.wait.unwrap_or(Duration::ZERO)).await {
        Err(err) if err.code() == Some(echomq::Code::NoJob) => return Err(gone()),
        finished => finished?,
    };
    match finished {
        Some(Finished::Done(Some(result))) => {
            let mut out = std::io::stdout().lock();
            out.write_all(&result)?;
            out.flush()?;
            Ok(())
        }
        Some(Finished::Done(None)) => {
            eprintln!("emq: {} is done, with no result kept (none returned, or trimmed since)", args.id);
            Ok(())
        }
        Some(Finished::Dead(error)) => Err(not_done(
            exit::DEAD,
            format!("{} is dead: {}", args.id, error.as_deref().unwrap_or("no error kept")),
        )),
        Some(Finished::Cancelled) => Err(not_done(exit::CANCELLED, format!("{} was cancelled", args.id))),
        None => {
            let Some(job) = queue.inspect(&args.id).await? else { return Err(gone()) };
            let waited = args
                .wait
                .map_or(String::new(), |wait| format!(" after {}", humantime::format_duration(wait)));
            let hint = if args.wait.is_some() { "" } else { " (--wait <duration> waits for it)" };
            let message = format!("{} is {}{waited}: not finished{hint}", args.id, job.record.state);
            Err(not_done(exit::NOT_FINISHED, message))
        }
    }
}
