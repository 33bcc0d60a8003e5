//! What a worker asks of the server it runs on, beside the transitions:
//! which run of it answers, and whether its set-up may lose jobs. Plain
//! commands ([`Command::Info`], [`Command::ConfigGet`]) that Embedded, with
//! no server, answers with nothing.

use super::{Command, Executor};

/// A run of a Redis server: its `run_id`, new at every start, and whether it
/// keeps an append-only file (without one, a restart loses what was written
/// since the last snapshot, if it takes any).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerRun {
    /// `INFO server`'s `run_id`.
    pub run_id: String,
    /// `INFO persistence`'s `aof_enabled`.
    pub aof: bool,
}

/// Which run of the server answers, for a worker to tell a restart after an
/// outage: one `INFO server persistence`. `None` when it will not say (INFO
/// denied) or there is no server.
pub async fn server_run(via: &dyn Executor) -> Option<ServerRun> {
    let info = via.plain().one(Command::Info(&["server", "persistence"])).await.ok()?.text().ok()??;
    let field =
        |name: &str| info.lines().find_map(|line| line.strip_prefix(name)?.strip_prefix(':').map(str::trim));
    Some(ServerRun { run_id: field("run_id")?.to_owned(), aof: field("aof_enabled")? == "1" })
}

/// Warnings about the server's set-up, for a worker to log at start: a job
/// store must never be evicted, so a `maxmemory-policy` other than
/// `noeviction`. A server that will not say (CONFIG denied by an ACL) gets
/// no warning.
pub async fn server_warnings(via: &dyn Executor) -> Vec<String> {
    let policy =
        via.plain().one(Command::ConfigGet("maxmemory-policy")).await.and_then(|answer| answer.text());
    match policy {
        Ok(Some(policy)) if policy != "noeviction" => vec![format!(
            "maxmemory-policy is {policy}: Redis may evict jobs under memory pressure; set it to noeviction"
        )],
        _ => Vec::new(),
    }
}
