//! A producer: enqueues typed jobs (JSON) onto the `emails` queue.
//!
//! ```text
//! redis-server --port 6390 &                        # or any Redis ≥ 7
//! REDIS_URL=redis://127.0.0.1:6390/ cargo run --example producer -- 100
//! ```

use std::time::Duration;

use echomq::{EnqueueOptions, Queue};
use serde::Serialize;

/// The job, as the worker reads it back.
#[derive(Serialize)]
struct Email {
    to: String,
    subject: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/".into());
    let count: u32 = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(10);
    // The native module when the server has it loaded, else the Lua scripts.
    let queue = Queue::new(echomq::connect(&redis::Client::open(url)?).await?, "emails")?;

    for n in 0..count {
        let email = Email { to: format!("user{n}@example.com"), subject: format!("Hello #{n}") };
        let id = queue.enqueue_json(&email).await?;
        println!("enqueued {id}");
    }
    // One more, due in five seconds, before everything else of priority 0.
    let later = serde_json::to_vec(&Email { to: "late@example.com".into(), subject: "Later".into() })?;
    let options = EnqueueOptions::default().delay(Duration::from_secs(5)).priority(-1);
    println!("scheduled {}", queue.enqueue_with(later, options).await?.id);
    println!("{:?}", queue.stats().await?);
    Ok(())
}
