//! `emq work`: a worker for any language. It runs a command once per job,
//! with the payload on stdin and the job in environment variables; exit 0
//! acks the job, any other exit fails it with the tail of stderr as its error.
//! It is the library's [`Worker`]: leases, heartbeats, retries and a graceful
//! SIGTERM come with it. Each command runs in a process group of its own: a
//! job taken away (its lease lost, or shutdown's grace over) has the whole
//! group stopped, children included, SIGTERM first and SIGKILL soon after.
//! However the worker ends, SIGKILL included, its [`guard`] SIGKILLs the
//! groups of the commands it left running.
//!
//! Signals: SIGINT or SIGTERM stops claiming and gives running commands
//! `--grace`; a second one stops them at once and releases their jobs.
//! SIGHUP (the terminal or SSH session it ran in closed) is a SIGTERM: a
//! worker that dies with its terminal leaves its jobs to their leases;
//! unless SIGHUP was ignored at the start (`nohup emq work`), as asked.
//! SIGTSTP stops claiming for good (SIGCONT does not resume it): running
//! commands run to their end, and the worker waits, idle, for SIGINT or
//! SIGTERM, as Sidekiq's "quiet" before a deploy.
//! `emq progress` (here too) is run by a job's command to report progress.
//!
//! With `--metrics ADDR` the worker serves its own metrics (the library's
//! `emq_jobs_*_total` counters and `emq_job_*_seconds` histograms, by queue:
//! docs/metrics.md) for Prometheus at `http://ADDR/metrics`, through the
//! `metrics` ecosystem's exporter.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use echomq::worker::{Control, Handler, JobContext, Worker, WorkerOptions};
use echomq::RetryPolicy;

use crate::connect::{Error, Server};
use crate::failure::{explain, Exit, Failure};

mod command;
pub mod guard;

use command::{run_command, Command};
use guard::Guard;

/// The most of stderr a failed job keeps as its error.
const STDERR_TAIL: usize = 2048;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The queues to work.
    #[arg(required = true)]
    queues: Vec<String>,
    /// The command to run per job, after `--` (refused at start, exit 2, when
    /// it is not an executable file or not found on PATH). It gets the
    /// payload on stdin and ECHOMQ_QUEUE, ECHOMQ_JOB_ID, ECHOMQ_JOB_TOKEN,
    /// ECHOMQ_JOB_ATTEMPT, ECHOMQ_PAYLOAD_BYTES, ECHOMQ_HEADERS (the job's
    /// headers, a JSON object), TRACEPARENT and TRACESTATE (from the headers,
    /// when the producer sent a trace context), and the worker's ECHOMQ_URL
    /// and ECHOMQ_VIA, so that `emq progress VALUE` run from it reports the
    /// job's progress. It must check that it read ECHOMQ_PAYLOAD_BYTES bytes
    /// before acting, and fail otherwise: a worker killed while writing the
    /// payload leaves it an empty or cut one (crates/echomq/examples/work-job.sh).
    #[arg(last = true, required = true)]
    command: Vec<String>,
    /// Jobs run at once.
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// Each job's lease, renewed while the command runs.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "30s")]
    lease: Duration,
    /// Attempts before a job is dead (a job enqueued with its own --attempts
    /// goes by that).
    #[arg(long, default_value_t = 5)]
    max_attempts: u64,
    /// The back-off after the first failure; it doubles each time (a job
    /// enqueued with its own --backoff or --backoff-exp goes by that).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "1s")]
    backoff: Duration,
    /// How long one run of the command may take, for jobs enqueued with no
    /// --timeout of their own; past it the command's process group gets
    /// SIGTERM (SIGKILL 0.5 s later) and the job fails with a timeout error.
    #[arg(long, value_parser = humantime::parse_duration)]
    timeout: Option<Duration>,
    /// On SIGTERM, how long running commands may go on before their process
    /// groups get SIGTERM (SIGKILL 0.5 s later) and their jobs are released;
    /// a second SIGTERM or SIGINT ends the grace at once.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    grace: Duration,
    /// How long to wait for the server at start. A worker started while Redis
    /// is down (a restart, maintenance) tries again with back-off, saying so
    /// in the log, and starts once Redis answers; with this set, it gives up
    /// after this long instead.
    #[arg(long, value_parser = humantime::parse_duration)]
    connect_timeout: Option<Duration>,
    /// Keep what the command writes to stdout as the job's result, for `emq
    /// result` and `Queue::wait` (at most 1 MiB: more fails the job).
    /// Without it, the command's stdout is the worker's.
    #[arg(long)]
    result: bool,
    /// Serve this worker's metrics for Prometheus on ADDR (`127.0.0.1:9464`:
    /// loopback keeps them to this machine; `0.0.0.0:9464` opens them to
    /// the network), at any path, `/metrics` by custom: jobs processed,
    /// failed, retried, dead, deferred and timed out, leases lost, and the
    /// wait and run histograms, by queue (docs/metrics.md). Refused (exit 2)
    /// when it cannot listen there.
    #[arg(long, value_name = "ADDR")]
    metrics: Option<std::net::SocketAddr>,
}

/// The histograms' buckets, in seconds: job waits and runs from a few ms to an hour.
const BUCKETS: [f64; 18] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0,
    3600.0,
];

/// Serve the metrics this process records on `addr`, for Prometheus.
fn serve_metrics(addr: std::net::SocketAddr) -> Result<(), Error> {
    let refused = |err: metrics_exporter_prometheus::BuildError| {
        Exit::usage(format!("cannot serve metrics on --metrics {addr}: {err}; no job was claimed"))
    };
    metrics_exporter_prometheus::PrometheusBuilder::new()
        .with_http_listener(addr)
        .set_buckets(&BUCKETS)
        .map_err(refused)?
        .install()
        .map_err(refused)?;
    Ok(())
}

/// Work the queues; `logging`, the options the worker's guard logs with.
pub async fn run(server: &Server, logging: &crate::log::Logging, mut args: Args) -> Result<(), Error> {
    check(&args)?;
    // Before any command runs: what stops them when this process is killed.
    let guard = Guard::start(&logging.options()).map_err(|err| {
        format!("cannot start the guard that stops commands with emq work: {err}; no job was claimed")
    })?;
    let argv = std::mem::take(&mut args.command);
    let command = Arc::new(Command { argv, environment: server.environment(), guard });
    let executor = connect(server, args.connect_timeout).await?;
    let running = Arc::new(AtomicUsize::new(0));
    let queues = partitions_of(&executor, &args.queues).await?;
    let worker = worker(&args, &queues, handler(command, args.result, running.clone()))?;
    // Caught from here on, before the start is said: a SIGTERM that follows
    // the first log lines at once stops the worker gracefully, not by default.
    let signals = Signals::catch();
    say_started(server, &worker, &args).await;
    let steering = tokio::spawn(steer(signals, worker.control(), args.grace, running));
    // The signals steer it: no other end.
    worker.run_until(std::future::pending()).await.unwrap();
    steering.abort();
    tracing::info!("emq work stopped");
    Ok(())
}

/// What is refused before anything else is done: a bad queue name, a
/// command that cannot run (it would fail every job it is given), metrics
/// that cannot be served.
fn check(args: &Args) -> Result<(), Error> {
    for name in &args.queues {
        echomq::Keyspace::new(name)?;
    }
    runnable(&args.command[0])?;
    if let Some(addr) = args.metrics {
        serve_metrics(addr)?;
    }
    Ok(())
}

/// Each job's handler: run `command` for it, counted in `running` while it
/// runs; with `keep_result`, its stdout is the job's result.
fn handler(command: Arc<Command>, keep_result: bool, running: Arc<AtomicUsize>) -> impl Handler {
    move |job: JobContext| {
        let (command, running) = (command.clone(), Running::count(running.clone()));
        async move {
            let _running = running;
            run_command(command, job, keep_result).await
        }
    }
}

/// The queues named: each one, or a partitioned queue's partitions and the
/// ordinary queue of its name (protocol 1.8: `Partitioned::worked`).
async fn partitions_of(
    executor: &Arc<dyn echomq::Executor>,
    names: &[String],
) -> Result<Vec<echomq::Queue>, Error> {
    let mut queues = Vec::new();
    for name in names {
        match echomq::Partitioned::find(executor.clone(), name).await? {
            Some(partitioned) => queues.extend(partitioned.worked()),
            None => queues.push(echomq::Queue::new(executor.clone(), name)?),
        }
    }
    Ok(queues)
}

/// The worker of `queues`, with the options `args` gives.
fn worker(args: &Args, queues: &[echomq::Queue], handler: impl Handler) -> Result<Worker, Error> {
    let mut options = WorkerOptions::default()
        .concurrency(args.concurrency)
        .lease(args.lease)
        .grace(args.grace)
        .retry(RetryPolicy::new().max_attempts(args.max_attempts).backoff(args.backoff));
    options.timeout = args.timeout;
    let mut queues = queues.iter().cloned();
    let first = queues.next().ok_or("no queue to work")?;
    Ok(queues.fold(Worker::with_options(first, handler, options), Worker::queue))
}

/// Say in the log that `worker` started, and how to stop it; then warn of
/// each queue the server does not know yet (in the log, not on bare
/// stderr: a JSON log stays JSON).
async fn say_started(server: &Server, worker: &Worker, args: &Args) {
    tracing::info!(
        worker = worker.id(),
        queues = %args.queues.join(","),
        executor = server.executor_name().await,
        concurrency = args.concurrency,
        lease = %humantime::format_duration(args.lease),
        metrics = args.metrics.map(|addr| format!("http://{addr}/metrics")),
        "emq work started; SIGTERM or Ctrl-C stops it gracefully (a second one at once), SIGTSTP stops claiming"
    );
    for name in &args.queues {
        if crate::ops::unknown(server, name).await {
            tracing::warn!(queue = %name, "{}; waiting for its jobs", crate::ops::unknown_note(name));
        }
    }
}

/// The first wait between two tries to reach the server at start, and the longest.
const CONNECT_BACKOFF: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(5));

/// The executor, once the server answers: a worker started during a Redis
/// restart waits for it, as one already running rides it out, rather than
/// exiting into its supervisor's crash loop. Only errors that say the server
/// is not there yet (refused, loading, failing over) are waited out; any
/// other (a bad password, a bad certificate) ends it at once.
async fn connect(server: &Server, timeout: Option<Duration>) -> Result<Arc<dyn echomq::Executor>, Error> {
    let started = tokio::time::Instant::now();
    let (mut wait, longest) = CONNECT_BACKOFF;
    let mut said = false;
    loop {
        let err = match server.executor().await {
            Ok(executor) => {
                if said {
                    tracing::info!("the server answers, after {:.1?}", started.elapsed());
                }
                return Ok(executor);
            }
            Err(err) if Failure::of_connecting(err.as_ref()) == Failure::NotDone => err,
            // Refused as it is (a bad password, a certificate not trusted or
            // not readable): exit 5, as trying again would fail the same way.
            Err(err) => {
                let message = format!("cannot work with the server as configured: {}", explain(err.as_ref()));
                return Err(Box::new(Exit::new(Failure::Refused, message)));
            }
        };
        let waited = started.elapsed();
        if let Some(limit) = timeout {
            if waited >= limit {
                let message = format!(
                    "the server did not answer within --connect-timeout {}: {}",
                    humantime::format_duration(limit),
                    explain(err.as_ref())
                );
                // Not there (yet): exit 3, as a supervisor may start it again.
                return Err(Box::new(Exit::new(Failure::NotDone, message)));
            }
            wait = wait.min(limit - waited);
        }
        if !said {
            tracing::warn!(
                error = %explain(err.as_ref()),
                "waiting for the server: trying again with back-off until it answers (--connect-timeout to give up)"
            );
            said = true;
        } else {
            tracing::debug!(error = %err, "the server does not answer yet");
        }
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(longest);
    }
}

/// Commands running now, for the shutdown's line.
struct Running(Arc<AtomicUsize>);

impl Running {
    fn count(running: Arc<AtomicUsize>) -> Running {
        running.fetch_add(1, Ordering::SeqCst);
        Running(running)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Whether `program` names a file this process may run: as a path when it
/// holds a `/`, else on PATH, as `execvp` looks for it. Not: a usage error
/// (exit 2), before anything is claimed.
fn runnable(program: &str) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;
    let executable = |path: &Path| {
        path.metadata().is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    };
    let why = if program.contains('/') {
        let path = Path::new(program);
        match () {
            () if executable(path) => return Ok(()),
            () if path.exists() => "is not an executable file",
            () => "does not exist",
        }
    } else {
        let path = std::env::var_os("PATH").unwrap_or_default();
        if std::env::split_paths(&path).any(|dir| executable(&dir.join(program))) {
            return Ok(());
        }
        "is not found on PATH"
    };
    let message = format!("cannot run the command: {program} {why}; no job was claimed");
    Err(Box::new(Exit::usage(message)))
}

/// SIGINT, SIGTERM, SIGHUP and SIGTSTP, caught (their default action,
/// ending or stopping the process, replaced) from when this is made.
struct Signals {
    interrupt: Option<tokio::signal::unix::Signal>,
    terminate: Option<tokio::signal::unix::Signal>,
    hangup: Option<tokio::signal::unix::Signal>,
    quiet: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn catch() -> Signals {
        use tokio::signal::unix::{signal, SignalKind};
        Signals {
            interrupt: signal(SignalKind::interrupt()).ok(),
            terminate: signal(SignalKind::terminate()).ok(),
            // Left ignored when it was at the start: `nohup emq work` outlives its terminal.
            hangup: (!ignored_at_start(libc::SIGHUP)).then(|| signal(SignalKind::hangup()).ok()).flatten(),
            quiet: signal(SignalKind::from_raw(libc::SIGTSTP)).ok(),
        }
    }
}

/// Whether `signal` is ignored now, as this process started (`nohup`
/// ignores SIGHUP): the `SigIgn` mask of /proc/self/status; `false` where
/// it cannot be read.
fn ignored_at_start(signal: i32) -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else { return false };
    let mask = status.lines().find_map(|line| line.strip_prefix("SigIgn:"));
    let mask = mask.and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok());
    mask.is_some_and(|mask| signal > 0 && mask & (1 << (signal - 1)) != 0)
}

/// The next of `signal`, or never when it could not be caught.
async fn next(signal: &mut Option<tokio::signal::unix::Signal>) {
    match signal {
        Some(signal) => {
            signal.recv().await;
        }
        None => std::future::pending().await,
    }
}

/// The worker, steered by signals, each said in the log: SIGTSTP stops
/// claiming; the first SIGINT, SIGTERM or SIGHUP stops the worker, giving
/// running commands their grace; the second stops them at once.
async fn steer(mut signals: Signals, control: Control, grace: Duration, running: Arc<AtomicUsize>) {
    let mut stopping = false;
    loop {
        let signal = tokio::select! {
            () = next(&mut signals.interrupt) => "SIGINT",
            () = next(&mut signals.terminate) => "SIGTERM",
            () = next(&mut signals.hangup) => "SIGHUP",
            () = next(&mut signals.quiet) => "SIGTSTP",
        };
        let running = running.load(Ordering::SeqCst);
        if signal == "SIGTSTP" {
            tracing::info!(
                signal,
                running,
                "quiet: no new jobs (SIGCONT does not resume); running commands run to their end; SIGTERM or Ctrl-C stops the worker"
            );
            control.quiet();
        } else if !stopping {
            tracing::info!(
                signal,
                running,
                "stopping: no new jobs; running commands have --grace {} to end, then they are stopped and their jobs released (another SIGINT or SIGTERM: at once)",
                humantime::format_duration(grace)
            );
            control.stop();
            stopping = true;
        } else {
            tracing::warn!(
                signal,
                running,
                "stopping at once: running commands are stopped and their jobs released"
            );
            control.now();
            return;
        }
    }
}

/// `emq progress VALUE`: what a job's command runs to say how far it got.
#[derive(clap::Args, Debug)]
pub struct ProgressArgs {
    /// How far the job got, at most 4096 bytes: a percentage, a JSON object.
    value: String,
}

/// Report the progress of the job whose command runs this: its queue, id
/// and token from the environment `emq work` gave it. Outside a job, or
/// with a value too long, a usage error (exit 2) before anything is sent;
/// a job no longer held (its lease lost) is refused (exit 5).
pub async fn progress(server: &Server, args: ProgressArgs) -> Result<(), Error> {
    let var = |name: &str| {
        std::env::var(name).map_err(|_| {
            Exit::usage(format!(
                "emq progress reports for the job of `emq work` whose command runs it: {name} is not set"
            ))
        })
    };
    let (queue, id, token) = (var("ECHOMQ_QUEUE")?, var("ECHOMQ_JOB_ID")?, var("ECHOMQ_JOB_TOKEN")?);
    let not_a_job =
        |what: &str| Exit::usage(format!("emq progress: {what} is not a job's (not set by `emq work`?)"));
    let keys = echomq::Keyspace::new(&queue).map_err(|_| not_a_job("ECHOMQ_QUEUE"))?;
    let id: echomq::JobId = id.parse().map_err(|_| not_a_job("ECHOMQ_JOB_ID"))?;
    let token: u64 = token.parse().map_err(|_| not_a_job("ECHOMQ_JOB_TOKEN"))?;
    let most = echomq::limits::MAX_PROGRESS;
    if args.value.len() > most {
        let got = args.value.len();
        return Err(Box::new(Exit::usage(format!("a progress value is at most {most} bytes, not {got}"))));
    }
    let executor = server.executor().await?;
    let progress = echomq::transition::Progress { id, token, value: args.value.into_bytes() };
    match echomq::executor::execute(&*executor, &keys, &progress).await {
        Ok(()) => Ok(()),
        Err(err) if err.is_lost_lease() => {
            let message =
                format!("the job is no longer this command's to report on (its lease was lost): {err}");
            Err(Box::new(Exit::new(Failure::Refused, message)))
        }
        Err(err) => Err(Box::new(err)),
    }
}
