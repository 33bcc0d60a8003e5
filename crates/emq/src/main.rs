//! `emq`, the EchoMQ command line. Its first command is the demo: EchoMQ
//! working in one command, on the embedded executor, with no server at all.
//!
//! ```text
//! cargo run --release -p emq -- demo                 # in-process, no Redis
//! cargo run --release -p emq -- demo --redis redis://127.0.0.1:6390/
//! ```
//!
//! # Layout
//! - `main.rs`: the commands (clap derive: the doc comments are `--help`).
//! - `demo.rs`: the demo: producers, workers, retries, a summary.

use clap::{Parser, Subcommand};

mod demo;

/// EchoMQ: a job queue whose state lives in Redis, spoken as a small fixed protocol.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run jobs through a queue and print what happened: in-process by default, no server needed.
    Demo(demo::Options),
}

#[tokio::main]
async fn main() {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Demo(options) => demo::run(options).await,
    };
    if let Err(err) = outcome {
        eprintln!("emq: {err}");
        std::process::exit(1);
    }
}
