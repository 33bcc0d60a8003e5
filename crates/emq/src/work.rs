//! `emq work`: a worker for any language. It runs a command once per job,
//! with the payload on stdin and the job in environment variables; exit 0
//! acks the job, any other exit fails it with the tail of stderr as its error.
//! It is the library's [`Worker`]: leases, heartbeats, retries and a graceful
//! SIGTERM come with it, and a job whose lease is lost has its command killed.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use echomq::worker::{HandlerError, JobContext, Worker, WorkerOptions};
use echomq::RetryPolicy;
use tokio::io::AsyncWriteExt;

use crate::connect::{Error, Server};

/// The most of stderr a failed job keeps as its error.
const STDERR_TAIL: usize = 2048;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The queues to work.
    #[arg(required = true)]
    queues: Vec<String>,
    /// The command to run per job, after `--`. It gets the payload on stdin and
    /// ECHOMQ_QUEUE, ECHOMQ_JOB_ID, ECHOMQ_JOB_TOKEN and ECHOMQ_JOB_ATTEMPT.
    #[arg(last = true, required = true)]
    command: Vec<String>,
    /// Jobs run at once.
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// Each job's lease, renewed while the command runs.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "30s")]
    lease: Duration,
    /// Attempts before a job is dead.
    #[arg(long, default_value_t = 5)]
    max_attempts: u64,
    /// The back-off after the first failure; it doubles each time.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "1s")]
    backoff: Duration,
    /// On SIGTERM, how long running commands may go on before they are killed
    /// and their jobs released.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    grace: Duration,
}

pub async fn run(server: &Server, args: Args) -> Result<(), Error> {
    let command: Arc<[String]> = args.command.into();
    let options = WorkerOptions {
        concurrency: args.concurrency,
        lease: args.lease,
        grace: args.grace,
        retry: RetryPolicy {
            max_attempts: args.max_attempts,
            backoff: args.backoff,
            ..RetryPolicy::default()
        },
        ..WorkerOptions::default()
    };
    let executor = server.executor().await?;
    let mut queues = args.queues.iter();
    let first = queues.next().ok_or("no queue to work")?;
    let handler = move |job: JobContext| run_command(command.clone(), job);
    let mut worker =
        Worker::with_options(echomq::Queue::with_executor(executor.clone(), first)?, handler, options);
    for name in queues {
        worker = worker.queue(echomq::Queue::with_executor(executor.clone(), name)?);
    }
    eprintln!("emq work: {} (SIGTERM or Ctrl-C stops gracefully)", args.queues.join(", "));
    worker.run().await;
    Ok(())
}

/// Run the command for one job. Dropping this future (a lost lease, the end
/// of the grace period) kills the command.
async fn run_command(command: Arc<[String]>, job: JobContext) -> Result<(), HandlerError> {
    let mut child = tokio::process::Command::new(&command[0])
        .args(&command[1..])
        .env("ECHOMQ_QUEUE", &job.queue)
        .env("ECHOMQ_JOB_ID", job.id.as_str())
        .env("ECHOMQ_JOB_TOKEN", job.attempt.to_string())
        .env("ECHOMQ_JOB_ATTEMPT", job.attempt.to_string())
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|err| format!("cannot run {}: {err}", command[0]))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its stdin is fine: ignore a broken pipe.
        let _ = stdin.write_all(&job.payload).await;
    }
    let output = child.wait_with_output().await?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tail = stderr[stderr.ceil_char_boundary(stderr.len().saturating_sub(STDERR_TAIL))..].trim();
    Err(format!("{}: {tail}", output.status).into())
}
