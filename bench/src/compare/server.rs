//! The server's own figures over a measurement: the µs it spent in commands
//! (`INFO commandstats`, every command but the benchmark's own bookkeeping),
//! the CPU its main thread used (`INFO cpu`), and `used_memory`.
//!
//! Both time figures are kept because they disagree on scripts: commandstats
//! counts the commands a Lua script calls once inside the script's own µs and
//! again under their own names, and it counts time the machine kept the
//! server off its core mid-command. The CPU is what decides how many jobs one
//! server carries; the commands' µs say where it went.

use std::sync::Mutex;
use std::time::Instant;

use redis::aio::MultiplexedConnection;

/// Commands the benchmark itself sends, left out of the server's cost.
const BOOKKEEPING: [&str; 7] = ["info", "config", "flushall", "ping", "client", "hello", "select"];

/// A connection for the server's figures; none for the embedded executor.
pub(crate) struct Stats {
    conn: Option<MultiplexedConnection>,
    /// The main thread's CPU µs when the clock started.
    cpu_at_start: Mutex<f64>,
}

/// What the server spent on each job of a measurement, µs.
#[derive(Clone, Copy)]
pub(crate) struct Spent {
    /// The commands' µs (`INFO commandstats`).
    pub(crate) commands: f64,
    /// The main thread's CPU, user and system (`INFO cpu`).
    pub(crate) cpu: f64,
}

impl Stats {
    pub(crate) async fn connect(url: &str, server: bool) -> Stats {
        let conn = if server {
            let client = redis::Client::open(url).expect("a URL");
            Some(client.get_multiplexed_async_connection().await.expect("connect"))
        } else {
            None
        };
        Stats { conn, cpu_at_start: Mutex::new(0.0) }
    }

    /// Reset the server's command statistics and note its CPU; the clock
    /// starts now.
    pub(crate) async fn start(&self) -> Instant {
        if let Some(conn) = &self.conn {
            let _: () = redis::cmd("CONFIG")
                .arg("RESETSTAT")
                .query_async(&mut conn.clone())
                .await
                .expect("RESETSTAT");
            *self.cpu_at_start.lock().expect("the CPU noted") = self.cpu().await;
        }
        Instant::now()
    }

    /// What the server spent on each of `jobs` since [`Stats::start`].
    pub(crate) async fn spent_since_start(&self, jobs: usize) -> Option<Spent> {
        let conn = self.conn.as_ref()?;
        let info: String =
            redis::cmd("INFO").arg("commandstats").query_async(&mut conn.clone()).await.expect("INFO");
        let cpu = self.cpu().await - *self.cpu_at_start.lock().expect("the CPU noted");
        Some(Spent { commands: usec(&info) / jobs as f64, cpu: cpu / jobs as f64 })
    }

    /// The CPU the server's main thread has used, µs.
    async fn cpu(&self) -> f64 {
        let conn = self.conn.as_ref().expect("a server");
        let info: String = redis::cmd("INFO").arg("cpu").query_async(&mut conn.clone()).await.expect("INFO");
        let field = |name: &str| -> f64 {
            info.lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|value| value.trim().parse::<f64>().ok())
                .unwrap_or_else(|| panic!("no {name} in INFO cpu"))
        };
        (field("used_cpu_user_main_thread:") + field("used_cpu_sys_main_thread:")) * 1e6
    }

    pub(crate) async fn used_memory(&self) -> f64 {
        let conn = self.conn.as_ref().expect("a server");
        let info: String =
            redis::cmd("INFO").arg("memory").query_async(&mut conn.clone()).await.expect("INFO");
        info.lines()
            .find_map(|l| l.strip_prefix("used_memory:"))
            .and_then(|v| v.trim().parse().ok())
            .expect("used_memory")
    }
}

/// The `usec=` of every command in an `INFO commandstats` but the bookkeeping.
fn usec(info: &str) -> f64 {
    info.lines()
        .filter_map(|line| line.strip_prefix("cmdstat_"))
        .filter(|line| !BOOKKEEPING.iter().any(|name| line.starts_with(&format!("{name}:"))))
        .filter_map(|line| line.split([':', ',']).find_map(|field| field.strip_prefix("usec=")))
        .filter_map(|usec| usec.parse::<f64>().ok())
        .sum()
}

pub(crate) async fn flush(url: &str) {
    let mut conn =
        redis::Client::open(url).expect("a URL").get_multiplexed_async_connection().await.expect("connect");
    let _: () = redis::cmd("FLUSHALL").query_async(&mut conn).await.expect("FLUSHALL");
}
