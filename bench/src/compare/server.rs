//! The server's own figures: the µs it spent in commands over a measurement
//! (`INFO commandstats`, every command but the benchmark's own bookkeeping),
//! and `used_memory`.

use std::time::Instant;

use redis::aio::MultiplexedConnection;

/// Commands the benchmark itself sends, left out of the server's cost.
const BOOKKEEPING: [&str; 7] = ["info", "config", "flushall", "ping", "client", "hello", "select"];

/// A connection for the server's figures; none for the embedded executor.
pub(crate) struct Stats {
    conn: Option<MultiplexedConnection>,
}

impl Stats {
    pub(crate) async fn connect(url: &str, server: bool) -> Stats {
        let conn = if server {
            let client = redis::Client::open(url).expect("a URL");
            Some(client.get_multiplexed_async_connection().await.expect("connect"))
        } else {
            None
        };
        Stats { conn }
    }

    /// Reset the server's command statistics; the clock starts now.
    pub(crate) async fn start(&self) -> Instant {
        if let Some(conn) = &self.conn {
            let _: () = redis::cmd("CONFIG")
                .arg("RESETSTAT")
                .query_async(&mut conn.clone())
                .await
                .expect("RESETSTAT");
        }
        Instant::now()
    }

    /// The µs the server spent in commands since [`Stats::start`].
    pub(crate) async fn usec_since_start(&self) -> Option<f64> {
        let conn = self.conn.as_ref()?;
        let info: String =
            redis::cmd("INFO").arg("commandstats").query_async(&mut conn.clone()).await.expect("INFO");
        Some(usec(&info))
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
