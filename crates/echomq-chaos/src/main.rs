//! `echomq-chaos`: runs jobs through EchoMQ while worker processes are
//! killed with SIGKILL and paused with SIGSTOP, and redis-server is killed
//! and restarted on its AOF (`appendonly yes`, `appendfsync always`); then
//! proves from what every worker journaled, and from the records, that:
//!
//! 1. **every acknowledged enqueue completed at least once**: each job whose
//!    ENQUEUE answered Ok is `done` at the end, and a handler holding its
//!    final token journaled `end`;
//! 2. **no ack with a stale token was accepted**: every accepted ACK carried
//!    the job's final token and came after its own handler's `end`; each
//!    job was acked once and each lease ended once; no token was handed out
//!    twice or forgotten by the server. An ACK whose answer was lost is
//!    judged by its consequences: a done job's final token has an `end`,
//!    and the final holder's own calls are never refused except as repeats
//!    of its own lost-answer tries (`verdict.rs` names the one case left unseen);
//! 3. **no job is active without a live lease**: after every chaos event an
//!    atomic audit of every acknowledged job finds its record in exactly the
//!    set its state names, and an active one with a lease deadline REAP will
//!    act on;
//! 4. **nothing is stuck**: the queue drains (pending, active and delayed
//!    empty, every job done) and every worker stops gracefully.
//!
//! With `--flows N` it also adds N flows (protocol 1.6, PROTOCOL.md §7.8):
//! parents waiting for children spread over three queues, some nested, ids
//! fixed when built, added again unchanged after a call that got no answer.
//! On top of the random kills, each worker kills itself, with the chance
//! `--resolve-kills` per RESOLVE (seeded), right after a RESOLVE of its
//! relay was answered and before the relay's XDEL: the notice stays, and
//! the next relay sends it again. Once the chaos is over no worker does, and:
//!
//! 5. **no parent is stuck**: none still waits `--flow-grace-ms` after its
//!    last child was done, and every one is done at the end, every notice
//!    relayed and deleted;
//! 6. **no parent ran twice**: none ran before every child had ended (each
//!    run read every child's result), none was made pending twice (its
//!    queue's log heard each child once, and made it pending once); a
//!    parent that ran again because its own lease was lost is at least
//!    once, no violation;
//! 7. **results byte for byte**: what each parent's `children_results()`
//!    gave it, and what the server kept for every job of a flow, is exactly
//!    what the job returned (some of it binary);
//! 8. **the kills happened**: a run whose plan called for them and saw none fails.
//!
//! With `--groups N` every fifth plain job joins one of N fair groups
//! (protocol 1.7), each capped at 2 running and 10 claims a second, and:
//!
//! 9. **a group's cap and rate hold**: replayed from the queue's event log,
//!    no group ever held more than 2 leases, nor was claimed more than 10
//!    times in any second; and every grouped job was done (no group stuck).
//!
//! It prints the counts and exits 1 on any violation (2 when it could not run).
//!
//! ```text
//! cargo run --release -p echomq-chaos -- run --via native --jobs 100000 --seconds 60 --kills 20
//! cargo run --release -p echomq-chaos -- run --via native --jobs 100000 --seconds 60 --kills 20 --flows 100
//! ```
//!
//! Why pauses: a killed worker never speaks again, so kills alone never send
//! a stale token. A worker paused past its lease wakes up holding tokens
//! someone else holds now, exactly the case fencing exists for; each pause
//! waits until the job it caught was reaped, and the resumed worker's ack or
//! heartbeat for it must be refused.
//!
//! The workers run the library's own `Worker`, unchanged, over a witness
//! executor that journals every token a claim hands out and every answer to
//! a call that carries one; the handler journals `start` and, before it
//! returns Ok, `end`. Each line is one `write` to a file opened for
//! appending, so a SIGKILL loses no line already written.
//!
//! # Layout
//! - `main.rs`: the command line: `run` (the orchestrator) and the hidden `worker`.
//! - `run.rs`: the orchestrator: server, fleet, producer, chaos, drain, audits, verdict.
//! - `chaos.rs`: the plan, and how a kill, a pause and a restart are done.
//! - `fleet.rs`: the worker processes.
//! - `produce.rs`: the producer, retrying unanswered enqueues under the same id.
//! - `flows.rs`: the flows: the plan (ids fixed), payloads and results, their
//!   producer, and the watch for stuck parents.
//! - `report.rs`: the counts it prints.
//! - `worker.rs`: worker mode: the library's `Worker` and the journaling handler.
//! - `witness.rs`: the executor that journals tokens and answers, and RESOLVEs,
//!   and kills its own process between a RESOLVE and its XDEL.
//! - `journal.rs`: the journal's lines, written and read.
//! - `audit.rs`: the atomic read of records and sets, and what a sound job is.
//! - `verdict.rs`: the journals judged against the records.
//! - `flow_verdict.rs`: the flows judged: what parents read, what the server
//!   kept, the parents' logs, the relay.
//! - `rng.rs`: the seeded generator.

use clap::{Parser, Subcommand};

mod audit;
mod chaos;
mod fleet;
mod flow_verdict;
mod flows;
mod groups;
mod journal;
mod produce;
mod report;
mod rng;
mod run;
mod setup;
mod verdict;
mod witness;
mod worker;

/// Chaos for EchoMQ: jobs run while workers are killed and paused and
/// redis-server restarts; then a proof that no promise broke.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start a redis-server and workers, run the jobs through the chaos, judge, print the counts.
    Run(run::Options),
    /// One worker process (the orchestrator starts these).
    #[command(hide = true)]
    Worker(worker::Options),
}

#[tokio::main]
async fn main() {
    let code = match Cli::parse().command {
        Command::Run(options) => match run::run(options).await {
            Ok(true) => 0,
            Ok(false) => 1,
            Err(err) => {
                eprintln!("echomq-chaos: {err}");
                2
            }
        },
        Command::Worker(options) => match worker::run(options).await {
            Ok(()) => 0,
            Err(err) => {
                eprintln!("echomq-chaos worker: {err}");
                2
            }
        },
    };
    std::process::exit(code);
}
