//! `emq`, the EchoMQ command line: a zero set-up demo on the embedded
//! executor, the operations commands against Redis, and a worker for any
//! language (`emq work <queue> -- <command>`).
//!
//! ```text
//! cargo run --release -p emq -- demo                  # in-process, no Redis
//! emq --url redis://127.0.0.1:6390/ enqueue emails '{"to":"ada@example.com"}'
//! emq stats
//! emq work emails -- ./send-email.sh                  # payload on stdin
//! ```
//!
//! # Layout
//! - `main.rs`: the commands (clap derive: the doc comments are `--help`).
//! - `connect.rs`: the URL and the executor (`--via`).
//! - `failure.rs`: what a failed call did, in words, and what is safe next.
//! - `log.rs`: the log on stderr (`-v`, `-q`, `RUST_LOG`, `--log-format`).
//! - `otel.rs`: traces over OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (the `otel` feature).
//! - `enqueue.rs`: enqueue, one job or JSON lines, and what a failure did.
//! - `ops.rs`: inspect, list, queues, purge, drain, delete-queue.
//! - `stats.rs`: `emq stats`, a partitioned queue's partitions then its total.
//! - `change.rs`: retry, cancel and delete, by id or all that match.
//! - `find.rs`: find jobs by text or id prefix, a bounded search that says where it stopped.
//! - `select.rs`: selecting jobs in bulk (a bounded walk, an id prefix), and
//!   retry or cancel of a selection: for `find`, `retry --all-dead`, `cancel --all`, the dashboard.
//! - `work.rs`: a worker that runs a command per job, and its metrics (`--metrics`).
//! - `workers.rs`: the live workers, from the worker registry.
//! - `groups.rs`: a queue's fair groups, a page as a table.
//! - `dashboard.rs`: the web dashboard; its pages, snapshot and `/metrics` under `dashboard/`.
//! - `demo.rs`: the demo: producers, workers, retries, a summary.
//! - `scripts.rs`: the loadable Lua scripts and their SHA1s, for other speakers.
//! - `schedule.rs`: a queue's cron and interval schedules.

// The commands' doc comments are their --help text (clap derive), written
// for a terminal: `redis://[user:password@]…` and `all:<n>` are words there,
// not rustdoc links or HTML.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]
use clap::{Parser, Subcommand};

/// mimalloc, not glibc's malloc: the embedded executor allocates for every
/// job, and the demo ran 1.4x the jobs a second with it (100,000 jobs,
/// median of 5: 51,509 against 36,718).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A line on stdout from a command that only reads: `println!` that returns
/// the error instead of panicking when stdout is gone (`emq list q dead |
/// head -1`); main ends quietly on a closed pipe, and fails on another error.
macro_rules! say {
    ($($arg:tt)*) => {
        std::io::Write::write_fmt(&mut std::io::stdout(), format_args!("{}\n", format_args!($($arg)*)))?
    };
}

/// A line on stdout from a command that changes things (or the demo's).
/// Its reader going away (`emq retry a b c | head -1`) neither stops the
/// command (b and c are still retried) nor fails it: what it did went
/// through, and saying otherwise would invite doing it twice. A command
/// that only reads uses [`say!`], which ends it instead.
macro_rules! tell {
    ($($arg:tt)*) => {
        $crate::told(format_args!($($arg)*))
    };
}

/// [`tell!`]'s line: on another failure than a closed pipe (a full disk
/// under `> file`) the line goes to stderr instead (an enqueued job's id
/// must not be lost), and the command goes on.
fn told(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    if let Err(err) = writeln!(std::io::stdout(), "{line}") {
        if err.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("emq: cannot write to stdout ({err}): {line}");
        }
    }
}

mod change;
mod connect;
mod dashboard;
mod demo;
mod enqueue;
mod events;
mod failure;
mod fanout;
mod find;
mod flow;
mod flows;
mod groups;
mod inspect;
mod log;
mod ops;
#[cfg(feature = "otel")]
mod otel;
mod partitions;
mod schedule;
mod scripts;
mod select;
mod stats;
mod work;
mod workers;

/// `emq --version`: the program's version and the protocol's it speaks,
/// `emq 0.1.0 (protocol 1.0)`.
fn version() -> &'static str {
    static LINE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    LINE.get_or_init(|| format!("{} (protocol {})", env!("CARGO_PKG_VERSION"), echomq::PROTOCOL))
}

/// EchoMQ: a job queue whose state lives in Redis, spoken as a small fixed protocol.
#[derive(Parser)]
#[command(version = version(), about)]
struct Cli {
    #[command(flatten, next_help_heading = "Global options")]
    server: connect::Server,
    #[command(flatten, next_help_heading = "Global options")]
    logging: log::Logging,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run jobs through a queue and print what happened: in-process by default, no server needed.
    Demo(demo::Options),
    /// Enqueue a job: its payload as an argument, or `-` to read it from stdin;
    /// or many, with --jsonl.
    ///
    /// Exit codes: 0 enqueued (or a duplicate of an existing id); 3 not
    /// enqueued (the server was down, loading, failing over or full, or the
    /// job's --group holds its most pending: enqueue again later); 4 maybe enqueued (the connection broke on the way, no answer within --response-timeout, or Ctrl-C before the server answered: enqueue
    /// again with the --id it printed, a duplicate changes nothing); 5
    /// refused (bad input, no permission: the same job would be refused
    /// again); 2 a malformed command line (a bad --id, --delay or
    /// --priority: nothing was sent). With --jsonl, the code is that of the
    /// lines the message names; the lines before them were enqueued.
    Enqueue(enqueue::Args),
    /// Show a job: its record, its last error, progress and result, its
    /// policy, and in a flow its parent and its children's states.
    Inspect(inspect::InspectArgs),
    /// Flows: a parent job that runs once its children, in any queues, have ended.
    #[command(subcommand)]
    Flow(flows::Command),
    /// Print a job's result (what its handler returned), waiting for it with --wait.
    ///
    /// Exit codes: 0 done (its result printed, if one was kept); 6 dead; 7
    /// cancelled; 8 not finished (yet); 9 no such job; 3 the server could
    /// not be reached; 5 it refused the call; 1 anything else.
    Result(events::ResultArgs),
    /// Follow a queue's event log: one JSON line per event (enqueued, active,
    /// progress, completed, failed, dead, …), as it happens.
    Events(events::EventsArgs),
    /// List a queue's jobs in one state, first to be served first.
    List(ops::ListArgs),
    /// Find jobs, newest first: those of a state whose payload or last error
    /// contains a text, or (--id) those whose id starts with a prefix; a
    /// bounded search that says where it stopped and how to resume.
    Find(find::Args),
    /// Count each queue's jobs by state, and show its flow settings (paused, limits).
    Stats(stats::StatsArgs),
    /// List the queues on the server, from its queue registry.
    Queues(ops::QueuesArgs),
    /// List the live workers, from the worker registry: host, pid, queues,
    /// jobs running, when each started and last beat.
    Workers(workers::Args),
    /// Send dead jobs back to pending (a flow's parent with children still
    /// open: to waiting for them): by id, or every dead job of a queue
    /// (--all-dead, optionally --matching a text; --yes to do it, else the count).
    Retry(change::RetryArgs),
    /// Cancel jobs (any state but done); a running job's worker loses its lease.
    /// By id, or every job of a queue in a state (--all STATE, optionally
    /// --matching a text; --yes to do it, else the count).
    Cancel(change::CancelArgs),
    /// Delete jobs of a state, with all kept beside them (REMOVE): by id,
    /// or every job of a queue in a state (--all, optionally --matching a
    /// text; --yes to do it, else the count). A running job's worker loses its lease.
    Delete(change::DeleteArgs),
    /// Delete finished jobs (done, dead or cancelled), optionally only old ones.
    Purge(ops::PurgeArgs),
    /// Delete a queue's pending, delayed and waiting jobs (flows' parents; --active: its running ones too).
    Drain(ops::DrainArgs),
    /// Delete a queue and every key it owns; refused while jobs are active, unless --force.
    DeleteQueue(ops::DeleteQueueArgs),
    /// Pause queues: their workers claim nothing (enqueue, ack and the rest go on).
    Pause(flow::QueuesArgs),
    /// Resume paused queues: waiting workers wake at once.
    Resume(flow::QueuesArgs),
    /// Limit a queue for every worker at once: --rate 100/1s, --concurrency 10 (none removes);
    /// or one of its fair groups: --group G with --weight 3, --cap 2, --rate 10/1s, --max 1000,
    /// --pause, --resume.
    Limit(flow::LimitArgs),
    /// List a queue's fair groups, by name: pending, running, state (ready, idle, paused,
    /// capped, limited), weight, cap, rate, max.
    Groups(groups::Args),
    /// Partitioned queues: one queue over N ordinary queues in their own slots (protocol 1.8):
    /// create one, show its partitions with their slots and depths.
    #[command(subcommand)]
    Partition(partitions::Command),
    /// Show a queue's settings (paused, limits, retention), changing those given first.
    Config(flow::ConfigArgs),
    /// Work queues by running a command per job: the payload on stdin, exit 0 acks.
    ///
    /// Exit codes: 0 stopped (SIGINT, SIGTERM, SIGHUP) after its jobs; 3 the server
    /// did not answer within --connect-timeout (without it, the worker waits);
    /// 5 the server refused it (a bad password, a certificate not trusted,
    /// an ACL, no echomq module with --via native); 4 a write's connection
    /// broke on the way; 1 anything else.
    Work(work::Args),
    /// Report the progress of the job whose command runs this (from inside `emq work`), for `emq inspect`.
    ///
    /// Exit codes: 0 reported; 2 not run from a job's command, or a value
    /// over 4096 bytes (nothing was sent); 5 refused (the job's lease was
    /// lost); 3 the server could not be reached.
    Progress(work::ProgressArgs),
    /// Serve a web dashboard: queues, jobs, search, retry and cancel, live counts, /metrics.
    Dashboard(dashboard::Args),
    /// Write each transition's Lua script, includes expanded, SHA1SUMS and manifest.json: for speakers in other languages.
    Scripts(scripts::Args),
    /// A queue's schedules: add (cron or interval), list with next fire times, remove,
    /// trigger, pause, resume.
    Schedule(schedule::Args),
    /// What `emq work` starts to stop its commands when it is killed (not for people).
    #[command(name = work::guard::SUBCOMMAND, hide = true)]
    WorkGuard,
}

/// Now, ms since the Unix epoch, on this process's clock: the clock a
/// worker's beat in the worker registry is written by.
fn now_ms() -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    u64::try_from(now.as_millis()).unwrap_or(u64::MAX)
}

fn main() {
    let cli = Cli::parse();
    let runtime = match cli.command {
        // The guard of `emq work` only blocks on its pipe: one thread, no
        // workers, the less to keep while it waits.
        Command::WorkGuard => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    }
    .enable_all()
    .build()
    .expect("build the tokio runtime");
    runtime.block_on(run(cli));
}

async fn run(cli: Cli) {
    // rediss:// URLs: rustls with the ring provider (one small C/asm dependency).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (usual, quieter) = cli.command.log_levels();
    #[cfg(feature = "otel")]
    let (spans, exporting) = otel::layer();
    #[cfg(not(feature = "otel"))]
    let spans = None;
    cli.logging.install(usual, quieter, spans);
    let printing = cli.command.only_prints();
    let server = cli.command.names_server().then(|| cli.server.address());
    // A URL the client cannot read is refused before anything is sent.
    if server.is_some() {
        if let Err(err) = cli.server.check() {
            eprintln!("emq: {err}");
            std::process::exit(err.code);
        }
    }
    let settings = if cli.command.waits() { cli.server.waiting() } else { cli.server };
    let ran = cli.command.run(&settings, &cli.logging).await;
    #[cfg(feature = "otel")]
    exporting.end().await;
    if let Err(err) = ran {
        let gone = err
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe);
        if printing && gone {
            return;
        }
        let code = failure::exit_code(err.as_ref(), printing);
        let mut said = failure::said(err.as_ref(), server.as_deref());
        // A command's own ending (an enqueue's) says what is safe itself.
        if code == failure::Failure::MaybeDone.exit_code() && err.downcast_ref::<failure::Exit>().is_none() {
            said.push_str(": it may have been done; look (emq stats, emq inspect) before doing it again");
        }
        eprintln!("emq: {said}");
        std::process::exit(code);
    }
}

impl Command {
    /// The log's usual level, and the targets it quiets further. The demo
    /// prints its own summary: its failing and dying jobs are by design,
    /// not news.
    fn log_levels(&self) -> (tracing_subscriber::filter::LevelFilter, &'static str) {
        match self {
            Command::Demo(_) => (
                tracing_subscriber::filter::LevelFilter::WARN,
                "echomq::worker::runner=error,echomq::worker::sink=error",
            ),
            _ => (tracing_subscriber::filter::LevelFilter::INFO, ""),
        }
    }

    /// Whether the command only reads and prints: then it ends quietly when
    /// its reader goes away (`emq list q dead | head -1`), as Unix tools
    /// do: its broken pipe is no news. (SIGPIPE stays ignored, as Rust sets
    /// it: a socket's reset must be an error the connection recovers from,
    /// not the process's end.)
    fn only_prints(&self) -> bool {
        match self {
            Command::Inspect(_)
            | Command::Result(_)
            | Command::Events(_)
            | Command::List(_)
            | Command::Find(_)
            | Command::Stats(_)
            | Command::Queues(_)
            | Command::Workers(_)
            | Command::Groups(_) => true,
            Command::Config(args) => args.only_reads(),
            Command::Schedule(args) => args.only_reads(),
            Command::Partition(command) => command.only_reads(),
            _ => false,
        }
    }

    /// Whether the command waits on the server as long as its work takes (a
    /// blocking claim, a log followed, pages served): `--response-timeout` is not
    /// for it.
    fn waits(&self) -> bool {
        match self {
            Command::Work(_) | Command::Events(_) | Command::Dashboard(_) | Command::Demo(_) => true,
            Command::Result(args) => args.waits(),
            _ => false,
        }
    }

    /// Whether a failure names --url's server: not for a command that has
    /// its own (the demo's --redis) or none.
    fn names_server(&self) -> bool {
        !matches!(self, Command::Demo(_) | Command::Scripts(_) | Command::WorkGuard)
    }

    /// Run the command.
    async fn run(self, server: &connect::Server, logging: &log::Logging) -> Result<(), connect::Error> {
        match self {
            Command::Demo(options) => demo::run(server, options).await,
            Command::Enqueue(args) => enqueue::run(server, args).await,
            Command::Inspect(args) => inspect::inspect(server, args).await,
            Command::Flow(command) => flows::run(server, command).await,
            Command::Result(args) => events::result(server, args).await,
            Command::Events(args) => events::events(server, args).await,
            Command::List(args) => ops::list(server, args).await,
            Command::Find(args) => find::run(server, args).await,
            Command::Stats(args) => stats::stats(server, args).await,
            Command::Queues(args) => ops::queues(server, args).await,
            Command::Workers(args) => workers::run(server, args).await,
            Command::Retry(args) => change::retry(server, args).await,
            Command::Cancel(args) => change::cancel(server, args).await,
            Command::Delete(args) => change::delete(server, args).await,
            Command::Purge(args) => ops::purge(server, args).await,
            Command::Drain(args) => ops::drain(server, args).await,
            Command::DeleteQueue(args) => ops::delete_queue(server, args).await,
            Command::Pause(args) => flow::pause(server, args).await,
            Command::Resume(args) => flow::resume(server, args).await,
            Command::Limit(args) => flow::limit(server, args).await,
            Command::Groups(args) => groups::run(server, args).await,
            Command::Partition(command) => partitions::run(server, command).await,
            Command::Config(args) => flow::config(server, args).await,
            Command::Work(args) => work::run(server, logging, args).await,
            Command::Progress(args) => work::progress(server, args).await,
            Command::Dashboard(args) => dashboard::run(server, args).await,
            Command::Scripts(args) => scripts::run(args),
            Command::Schedule(args) => schedule::run(server, args).await,
            Command::WorkGuard => {
                work::guard::run();
                Ok(())
            }
        }
    }
}
