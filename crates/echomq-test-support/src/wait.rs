//! Waiting for a condition, against a deadline: never a fixed sleep.

use std::time::{Duration, Instant};

/// How long [`eventually`] waits: generous, since a deadline only matters
/// when a test is failing anyway, and CI machines are busy.
const EVENTUALLY: Duration = Duration::from_secs(60);

/// Wait until `check` holds, asking every 10 ms; panics naming `what` after a minute.
pub async fn eventually<F, Fut>(what: &str, check: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + EVENTUALLY;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// [`eventually`] for a test without a runtime: asks every 5 ms, blocking
/// the thread between tries.
pub fn eventually_blocking(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + EVENTUALLY;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}
