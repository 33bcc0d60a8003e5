//! `emq inspect`: one job as it is stored, beside its record (error,
//! progress, result, policy, headers), and its place in a flow; and the
//! job a command line names, `JOB_…` or `{queue}JOB_…`.

use std::time::Duration;

use echomq::{JobId, JobRef, Keyspace, Outcome, State};

use crate::connect::{Conn, Error, Server};
use crate::ops::{printable, queue_for, timestamp};

#[derive(clap::Args, Debug)]
pub struct InspectArgs {
    /// The job's id, or `{queue}JOB_…` (as `emq flow add` names a child).
    #[arg(value_parser = job_arg)]
    id: JobArg,
    /// Its queue (found by a scan when not given).
    #[arg(long)]
    queue: Option<String>,
}

/// A job named on the command line: its id, and its queue when the name
/// carried one (`{queue}JOB_…`, a flow's job reference).
#[derive(Clone, Debug)]
pub struct JobArg {
    pub queue: Option<String>,
    pub id: JobId,
}

impl std::ops::Deref for JobArg {
    type Target = JobId;

    fn deref(&self) -> &JobId {
        &self.id
    }
}

impl JobArg {
    /// The job's queue as given: `--queue` (`given`), or the queue of its
    /// `{queue}JOB_…`; the two must agree (a usage error, exit 2), a
    /// partitioned queue's name agreeing with the partition the id is in.
    pub async fn queue_given(&self, server: &Server, given: Option<String>) -> Result<Option<String>, Error> {
        match (given, &self.queue) {
            (Some(given), Some(named)) if given != *named => {
                let partitioned = server.partitioned(&given).await?;
                if partitioned.is_some_and(|p| p.partition_of(&self.id).name() == named) {
                    return Ok(Some(named.clone()));
                }
                Err(Box::new(crate::failure::Exit::usage(format!(
                    "{{{named}}}{} is in queue {named}, and --queue says {given}",
                    self.id
                ))))
            }
            (given, named) => Ok(given.or_else(|| named.clone())),
        }
    }
}

impl std::fmt::Display for JobArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.id.fmt(f)
    }
}

/// A job id, or a job reference `{queue}JOB_…`.
pub fn job_arg(text: &str) -> Result<JobArg, String> {
    if text.starts_with('{') {
        let found: echomq::JobRef = text.parse().map_err(|err: echomq::Error| err.to_string())?;
        return Ok(JobArg { queue: Some(found.queue), id: found.id });
    }
    let id: JobId = text.parse().map_err(|err: echomq::Error| err.to_string())?;
    Ok(JobArg { queue: None, id })
}

pub async fn inspect(server: &Server, args: InspectArgs) -> Result<(), Error> {
    let id = &args.id.id;
    let queue = queue_for(server, id, args.id.queue_given(server, args.queue).await?).await?;
    let Some(job) = server.queue(&queue).await?.inspect(&args.id).await? else {
        let message = format!("no job {} in queue {queue}", args.id);
        return Err(Box::new(crate::failure::Exit::with_code(crate::events::exit::NO_JOB, message)));
    };
    let record = &job.record;
    let priority = priority(&mut server.connection().await?, &queue, &args.id).await?;
    say!("{} in {queue}", args.id);
    say!("  state     {}", record.state);
    say!("  attempts  {}", record.attempts);
    if let Some(priority) = priority {
        say!("  priority  {priority}");
    }
    if let Some(group) = &job.group {
        say!("  group     {group}");
    }
    say!("  payload   {} ({} bytes)", printable(&record.payload), record.payload.len());
    if let Some(at) = record.enqueued_at {
        say!("  enqueued  {}", timestamp(at as f64));
    }
    if let Some(at) = record.updated_at {
        say!("  updated   {}", timestamp(at as f64));
    }
    // The state set's score: when the job is due, its lease ends, or it finished.
    let score: Option<f64> = redis::cmd("ZSCORE")
        .arg(Keyspace::new(&queue)?.state(record.state))
        .arg(args.id.as_str())
        .query_async(&mut server.connection().await?)
        .await?;
    if let Some(score) = score {
        match record.state {
            State::Delayed => say!("  due       {}", timestamp(score)),
            State::Active => {
                let now = crate::dashboard::server_ms(&mut server.connection().await?).await?;
                say!("  lease     until {}{}", timestamp(score), lease_left(score, now));
            }
            State::Done | State::Dead | State::Cancelled => {
                say!("  finished  {}", timestamp(score));
                if let Some(at) = record.enqueued_at {
                    let took = Duration::from_millis((score as u64).saturating_sub(at));
                    say!("  took      {} from enqueue", humantime::format_duration(took));
                }
            }
            State::Waiting => say!("  waiting   since {}", timestamp(score)),
            State::Pending => {}
        }
    }
    say_kept(&job)?;
    flow_of(server, &queue, &args.id, record.state).await
}

/// What a lease ending at `deadline` (ms) has left at `now`: nothing to
/// say while it runs; once it ran out, that its worker is gone or stuck,
/// and what becomes of the job.
fn lease_left(deadline: f64, now: u64) -> String {
    let over = now.saturating_sub(deadline as u64);
    match over {
        0 => String::new(),
        over => format!(
            " (ran out {} ago: its worker stopped or stalls; the queue's upkeep, run by any of its workers, takes it \
             back to pending, or to dead when out of attempts)",
            humantime::format_duration(Duration::from_millis(over - over % 1000))
        ),
    }
}

/// What INSPECT found kept beside the record: its last error, progress,
/// result, own policy and headers.
fn say_kept(job: &echomq::Inspection) -> Result<(), Error> {
    if let Some(error) = &job.error {
        say!("  error     {error}");
    }
    if let Some(progress) = &job.progress {
        say!("  progress  {}", printable(progress));
    }
    if let Some(result) = &job.result {
        say!("  result    {} ({} bytes)", printable(result), result.len());
    }
    if let Some(policy) = &job.policy {
        say!("  policy    {}", describe_policy(policy));
    }
    for (name, value) in &job.headers {
        say!("  header    {name}: {value}");
    }
    Ok(())
}

/// Job `id`'s place in a flow (protocol 1.6): the parent it will tell, and,
/// for a parent, each child with what the parent heard of it and, while
/// it is open, the child's own state in its queue.
async fn flow_of(server: &Server, queue: &str, id: &JobId, state: State) -> Result<(), Error> {
    if let Some(text) = link_of(server, queue, id).await? {
        let link = parse_link(&text);
        let parent = link.as_ref().map_or(text.clone(), |link| link.parent.to_string());
        // Whether its parent still hears: a failure to look leaves it unsaid.
        let deaf = match (&link, state) {
            (Some(link), State::Dead) => deaf_parent(server, link).await.ok().flatten(),
            _ => None,
        };
        if state != State::Dead {
            say!("  parent    {parent} (told when this job ends)");
        } else if let Some(why) = deaf {
            say!("  parent    {parent} (told it died; {why}: a retry of it tells it nothing)");
        } else {
            // A child that died keeps its link (protocol 1.11).
            say!("  parent    {parent} (told it died; told again if a retry of it ends)");
        }
    }
    let parent_queue = server.queue(queue).await?;
    let Some(children) = echomq::Flows::of(&parent_queue).children(id).await? else { return Ok(()) };
    say!("  children  {} open of {}", children.open, children.children.len());
    for child in children.children {
        let now = match child.outcome {
            // Retried after it died: its parent hears of its next end.
            Some(Outcome::Dead) => match state_in_queue(server, &child.child).await? {
                Some(state) if !matches!(state, State::Done | State::Dead | State::Cancelled) => {
                    format!("dead, runs again: {state} in its queue")
                }
                Some(_) => "dead".to_owned(),
                None => "dead, gone from its queue since".to_owned(),
            },
            Some(outcome) => outcome.as_str().to_owned(),
            // A parent done or cancelled hears nothing more: the entry stays open.
            None if matches!(state, State::Done | State::Cancelled) => {
                match state_in_queue(server, &child.child).await? {
                    Some(theirs) => format!("never heard of (the parent ended first), {theirs} in its queue"),
                    None => "never heard of (the parent ended first), not in its queue".to_owned(),
                }
            }
            None => match state_in_queue(server, &child.child).await? {
                Some(state) => format!("open, {state} in its queue"),
                None => "open, not in its queue (yet)".to_owned(),
            },
        };
        let result = child.result.map_or(String::new(), |result| format!(", result {}", printable(&result)));
        say!("    {} {now}{result}", child.child);
    }
    Ok(())
}

/// The link of job `id` of `queue` to a flow's parent (`<incarnation>
/// {queue}JOB_…`), when it has one.
pub async fn link_of(server: &Server, queue: &str, id: &JobId) -> Result<Option<String>, Error> {
    Ok(redis::cmd("HGET")
        .arg(Keyspace::new(queue)?.role(echomq::keyspace::Role::Parents, None).unwrap_or_default())
        .arg(id.as_str())
        .query_async(&mut server.connection().await?)
        .await?)
}

/// A link as `<q>parents` holds it, `<incarnation> {queue}JOB_…`, read;
/// `None` when it does not read as one.
pub fn parse_link(text: &str) -> Option<echomq::Link> {
    let (incarnation, parent) = text.split_once(' ')?;
    Some(echomq::Link { incarnation: incarnation.parse().ok()?, parent: parent.parse().ok()? })
}

/// Why the parent `link` names will not hear its child's next end, when it
/// will not: it is done or cancelled, gone, no parent any more, or another
/// flow now holds its id (RESOLVE changes nothing for them).
pub async fn deaf_parent(server: &Server, link: &echomq::Link) -> Result<Option<String>, Error> {
    let why = match state_in_queue(server, &link.parent).await? {
        None => "it is gone",
        Some(State::Done) => "it is done",
        Some(State::Cancelled) => "it was cancelled",
        Some(_) => {
            let theirs = server.queue(&link.parent.queue).await?;
            match echomq::Flows::of(&theirs).children(&link.parent.id).await? {
                Some(children) if children.incarnation == link.incarnation => return Ok(None),
                Some(_) => "another flow holds its id now",
                None => "it is no flow's parent now",
            }
        }
    };
    Ok(Some(why.to_owned()))
}

/// The state of job `job` in its own queue; `None` when it is not there.
pub async fn state_in_queue(server: &Server, job: &JobRef) -> Result<Option<State>, Error> {
    Ok(server.queue(&job.queue).await?.inspect(&job.id).await?.map(|found| found.record.state))
}

/// Job `id`'s priority in words, when it has one (not 0): it lives beside
/// the record (`<q>priority`), not in INSPECT's reply. Shown as stored, or
/// as unreadable, so that the rest of the job is still shown.
pub async fn priority(conn: &mut Conn, queue: &str, id: &JobId) -> Result<Option<String>, Error> {
    let read = redis::cmd("HMGET")
        .arg(Keyspace::new(queue)?.priority())
        .arg(id.as_str())
        .query_async::<[Option<String>; 1]>(conn)
        .await;
    Ok(match read {
        Ok([priority]) => priority.filter(|priority| priority != "0").map(|p| format!("{p} (lower first)")),
        Err(err) => Some(format!("unreadable: {}", crate::failure::explain(&err))),
    })
}

/// A job's own policy in an operator's words: `attempts 3, back-off 1s
/// doubling, timeout 5m`.
pub(crate) fn describe_policy(policy: &echomq::Policy) -> String {
    let ms = |ms: u64| humantime::format_duration(Duration::from_millis(ms)).to_string();
    let mut parts = Vec::new();
    if let Some(attempts) = policy.attempts {
        parts.push(format!("attempts {attempts}"));
    }
    match policy.backoff {
        Some(echomq::Backoff::Fixed(wait)) => parts.push(format!("back-off {}", ms(wait))),
        Some(echomq::Backoff::Exponential(base)) => parts.push(format!("back-off {} doubling", ms(base))),
        None => {}
    }
    if let Some(timeout) = policy.timeout {
        parts.push(format!("timeout {}", ms(timeout)));
    }
    parts.join(", ")
}
