//! A worker: runs the `emails` jobs the producer enqueues, ten at a time,
//! until Ctrl-C or SIGTERM, then finishes or releases what it holds.
//!
//! ```text
//! REDIS_URL=redis://127.0.0.1:6390/ cargo run --example worker
//! ```

use std::time::Duration;

use echomq::worker::{HandlerError, JobContext, Worker, WorkerOptions};
use echomq::{Queue, RetryPolicy};
use serde::Deserialize;

#[derive(Deserialize)]
struct Email {
    to: String,
    subject: String,
}

async fn send(job: JobContext) -> Result<(), HandlerError> {
    let email: Email = job.json()?;
    println!("{} (attempt {}): sending {:?} to {}", job.id, job.attempt, email.subject, email.to);
    tokio::time::sleep(Duration::from_millis(50)).await;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/".into());
    // The native module (claims wait on the server) when loaded, else Lua.
    let queue = Queue::new(echomq::connect(&redis::Client::open(url)?).await?, "emails")?;
    let options = WorkerOptions::default().concurrency(10).retry(RetryPolicy::new().max_attempts(5));
    println!("working the emails queue; Ctrl-C to stop");
    Worker::with_options(queue, send, options).run().await.unwrap();
    println!("stopped");
    Ok(())
}
