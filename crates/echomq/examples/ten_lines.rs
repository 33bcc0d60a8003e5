use echomq::worker::{JobContext, Worker};
use echomq::Queue;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

async fn send(email: &Email) -> anyhow::Result<()> {
    println!("sending to {}", email.to); // your mail API here
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let client = redis::Client::open("redis://127.0.0.1:6390/")?;
    let q = Queue::new(echomq::connect(&client).await?, "emails")?; // native module, else Lua
    q.enqueue_json(&Email { to: "ada@example.com".into() }).await?; // JOB_01…, FIFO per priority

    // Leases, heartbeats, retries, fencing: the worker's; the job is yours.
    let worker = Worker::new(q, |job: JobContext| async move {
        let email: Email = job.json()?;
        send(&email).await // Err: retried with back-off, then dead
    });
    worker.run().await?; // until SIGINT/SIGTERM, then finishes or releases its jobs
    Ok(())
}
