//! A chaos run's parts before it starts: its own redis-server (AOF on every
//! write), its queues on the executor asked for, and the fleet of workers.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use echomq::transition::Retention;
use echomq::{EventLog, Queue};
use echomq_test_support::{module_path, RedisServer, ServerOptions};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use crate::fleet::{Fleet, Spec};
use crate::flows;
use crate::run::{via_name, Options, Via, QUEUE};

/// Start the run's own redis-server, which writes every command to its AOF
/// before answering, with the module loaded for `via` native.
pub(crate) async fn start_server(via: Via) -> Result<RedisServer, String> {
    let native = via == Via::Native;
    tokio::task::spawn_blocking(move || {
        let args = ["--appendonly", "yes", "--appendfsync", "always"].map(str::to_owned).to_vec();
        RedisServer::start_with(ServerOptions {
            module: native.then(module_path),
            args,
            ..ServerOptions::default()
        })
    })
    .await
    .map_err(|e| format!("redis-server did not start: {e}"))
}

/// The queues `names` on the server, on the executor of `via` (the server
/// must have the module exactly when it is native), each configured to keep
/// every finished job, the flows' queues their whole event log too.
pub(crate) async fn open_queues(
    client: &redis::Client,
    via: Via,
    names: &[&str],
    groups: bool,
) -> Result<Vec<Queue>, String> {
    let native = via == Via::Native;
    let mut conn = client.get_multiplexed_async_connection().await.map_err(|e| e.to_string())?;
    let modules: Vec<redis::Value> =
        redis::cmd("MODULE").arg("LIST").query_async(&mut conn).await.map_err(|e| e.to_string())?;
    if modules.is_empty() == native {
        let via = via_name(via);
        return Err(format!("--via {via}, but the server has {} module(s) loaded", modules.len()));
    }
    // The producer's and the checks' connection never blocks on the server,
    // so it keeps a response time-out (`connect_with` lifts it, for blocking
    // claims): a request lost across a restart is answered with an error
    // and sent again, instead of holding the run past every deadline. (A
    // run in the full suite once sat after its last restart until its test
    // gave up; not seen since, in 20 runs alone and side by side.)
    let config = ConnectionManagerConfig::new().set_response_timeout(Some(Duration::from_secs(10)));
    let conn = ConnectionManager::new_with_config(client.clone(), config).await.map_err(|e| e.to_string())?;
    let executor: Arc<dyn echomq::Executor> =
        if native { Arc::new(echomq::Native::new(conn)) } else { Arc::new(echomq::Lua::new(conn)) };
    let mut queues = Vec::new();
    for name in names {
        let queue = Queue::new(executor.clone(), name).map_err(|e| e.to_string())?;
        // Every finished job kept, so that the audit finds each: the default
        // retention keeps the newest 10,000 done jobs (PROTOCOL.md §7.4), and a
        // run of more jobs would count the older ones lost.
        let all = Retention { age: None, count: None };
        let mut config = echomq::Config::default().keep_done(all).keep_dead(all);
        // The flows' queues keep their whole log: each parent's `resolved`
        // entries are its evidence (it holds only the flows' jobs); with
        // groups, the plain jobs' too: its claims and lease ends are theirs.
        if *name != QUEUE || groups {
            config = config.events(EventLog::Keep(*echomq::limits::EVENTS.end()));
        }
        queue.configure(config).await.map_err(|e| e.to_string())?;
        queues.push(queue);
    }
    Ok(queues)
}

/// Start the fleet: `o.workers` processes of this binary (at least one) on
/// the server at `url`, journaling into `dir`: each a `Worker` of the plain
/// jobs' queue alone (its acks fetch its next jobs) and, with flows, one of
/// the flows' queues together.
pub(crate) fn start_fleet(o: &Options, seed: u64, url: String, dir: &Path) -> Result<Fleet, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut groups = vec![QUEUE.to_owned()];
    if o.flows > 0 {
        groups.push([flows::PARENTS, flows::NESTED].join(","));
    }
    let spec = Spec {
        exe,
        url,
        lease_ms: o.lease_ms,
        concurrency: o.concurrency,
        work_ms: o.work_ms,
        groups,
        resolve_kills: if o.flows > 0 { o.resolve_kills } else { 0.0 },
        seed,
        dir: dir.to_path_buf(),
    };
    let mut fleet = Fleet::new(spec);
    for _ in 0..o.workers.max(1) {
        fleet.start().map_err(|e| format!("start a worker: {e}"))?;
    }
    Ok(fleet)
}
