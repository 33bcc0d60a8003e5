//! Test support for EchoMQ: a real `redis-server` on a free loopback port,
//! started per test and killed on drop, with a module loaded when asked; and
//! a unique queue name per test.
//!
//! ```no_run
//! let server = echomq_test_support::RedisServer::start();
//! let client = server.client();
//! let queue = echomq_test_support::unique_queue("emails");
//! # let _ = (client, queue);
//! ```
//!
//! The server binary is `$ECHOMQ_REDIS_SERVER`, or `redis-server` on PATH.
//! It never listens anywhere but 127.0.0.1 and never on 6379. The module is
//! `$ECHOMQ_MODULE`, or the workspace's own, built by the first test that
//! asks for it (see [`module_path()`]).
//!
//! # Layout
//! - `server`: [`RedisServer`], one `redis-server` killed on drop (or the
//!   one a test binary shares), and how to start it ([`ServerOptions`]).
//! - `module`: [`module_path()`], the EchoMQ module, built before it is used.
//! - `cluster`: [`RedisCluster`], masters sharing the slots, and moving a
//!   slot between them ([`SlotMove`]).
//! - `ports`: [`free_port`], loopback ports never handed out twice.
//! - `wait`: [`eventually`], waiting for a condition against a deadline.
//! - `promtool`: [`promtool_check_metrics`], Prometheus' check of a `/metrics` body.

#![warn(missing_docs, unreachable_pub)]

use std::sync::atomic::{AtomicU64, Ordering};

mod cluster;
mod module;
mod ports;
mod promtool;
mod server;
mod wait;

pub use cluster::{RedisCluster, SlotMove};
pub use module::module_path;
pub use ports::free_port;
pub use promtool::promtool_check_metrics;
pub use server::{RedisServer, ServerOptions};
pub use wait::{eventually, eventually_blocking};

/// Numbers names (queues, server directories) unique within this process.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A queue name no other test in this run uses.
pub fn unique_queue(prefix: &str) -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}-{}-{n}", std::process::id())
}

/// Now, ms since the Unix epoch, on this process's clock: the clock a
/// worker's beat in the worker registry is written by.
pub fn now_ms() -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    u64::try_from(now.as_millis()).unwrap_or(u64::MAX)
}
