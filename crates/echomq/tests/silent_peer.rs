//! A worker whose connections' peer goes silent: no reset, no answer, the
//! server's host simply gone for them (a failover that moved the address, a
//! NAT or load balancer that dropped the connections' state). Nothing tells
//! the client; only TCP keepalive and `TCP_USER_TIMEOUT` make the kernel drop
//! such a connection, and then it must reconnect and carry on.
//!
//! The test runs on a thread in a network namespace of its own (it needs
//! root, as CI has), whose loopback `tc` makes lose every packet of the
//! worker's connections, and only theirs: the server stays up, and new
//! connections get through, as after a failover to a new address.

use std::collections::HashMap;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use echomq::worker::{HandlerError, JobContext, Worker, WorkerOptions};
use echomq::{JobId, Queue};
use echomq_test_support::{eventually, module_path, unique_queue, RedisServer, ServerOptions};
use redis::io::tcp::socket2::TcpKeepalive;
use redis::io::tcp::TcpSettings;

mod log;
use log::Log;

/// How long the test's connections may be silent before their kernel drops
/// them (the library's default is `echomq::executor::SILENT_PEER`, 30 s): a keepalive
/// probe after a second of quiet, then every second (whole seconds, the
/// kernel's unit), and `TCP_USER_TIMEOUT`.
const SILENCE: Duration = Duration::from_secs(3);
const PROBE: Duration = Duration::from_secs(1);

#[test]
fn a_worker_whose_connections_go_silent_reconnects_and_runs_what_came_meanwhile() {
    // Found (and built, when it is not $ECHOMQ_MODULE) before the thread
    // leaves the host's network: cargo has no business in the test's own.
    let module = module_path();
    // The worker's log (debug and up), printed when the test fails.
    let log = Log::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(log.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::DEBUG)
        .finish();
    tracing::subscriber::set_global_default(subscriber).expect("the binary's only test sets the subscriber");
    let test = std::thread::spawn(|| {
        private_network();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            silenced_under_a_worker(RedisServer::start(), "lua").await;
            let native =
                RedisServer::start_with(ServerOptions { module: Some(module), ..ServerOptions::default() });
            silenced_under_a_worker(native, "native").await;
        });
    });
    if let Err(panic) = test.join() {
        eprintln!("the worker's log:\n{}", log.text());
        std::panic::resume_unwind(panic);
    }
}

async fn silenced_under_a_worker(server: RedisServer, via: &str) {
    let name = unique_queue("silent");
    // The test's own connection, never silenced: it enqueues and watches.
    let mut watch = server.connection().await;
    let watcher = Queue::new(std::sync::Arc::new(echomq::Lua::new(watch.clone())), &name).unwrap();
    let own_id: u64 = redis::cmd("CLIENT").arg("ID").query_async(&mut watch).await.unwrap();

    let probes = TcpKeepalive::new().with_time(PROBE).with_interval(PROBE).with_retries(2);
    let tcp = TcpSettings::default().set_keepalive(probes).set_user_timeout(SILENCE);
    let info = server.client().get_connection_info().clone().set_tcp_settings(tcp);
    let executor = echomq::connect(&redis::Client::open(info).unwrap()).await.unwrap();
    let queue = Queue::new(executor, &name).unwrap();

    // Each job's runs, by the attempt (the claim) each ran under.
    let runs: Arc<Mutex<HashMap<JobId, Vec<u64>>>> = Arc::default();
    let seen = runs.clone();
    let handler = move |job: JobContext| {
        seen.lock().unwrap().entry(job.id).or_default().push(job.attempt);
        async { Ok::<_, HandlerError>(()) }
    };
    // A claim the server answered into the silence is lost with its answer
    // (the module's blocked claim takes the first jobs enqueued): its jobs
    // wait out their lease, then run under the next claim.
    let options = WorkerOptions::default().concurrency(4).lease(Duration::from_secs(5));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let working = tokio::spawn(Worker::with_options(queue, handler, options).run_until(async move {
        let _ = stopped.await;
    }));

    let done = |n: u64| {
        let watcher = watcher.clone();
        async move { watcher.stats().await.unwrap().done == n }
    };
    watcher.enqueue_batch((0..20).map(|i| format!("before-{i}").into_bytes())).await.unwrap();
    eventually("the worker runs the first jobs", || done(20)).await;
    // The worker then waits for jobs, its claim blocked on the server (on a
    // connection of its own, opened when a claim first came back empty).
    eventually("the worker's claim waits on the server", || {
        let mut watch = watch.clone();
        async move {
            let info: String = redis::cmd("INFO").arg("clients").query_async(&mut watch).await.unwrap();
            info.lines().any(|line| line.strip_prefix("blocked_clients:").is_some_and(|n| n.trim() != "0"))
        }
    })
    .await;
    let ports = connections(&mut watch, own_id).await;
    assert!(ports.len() >= 2, "{via}: the worker's connections: {ports:?}");
    for &port in &ports {
        silence(port, server.port());
    }
    let silenced = Instant::now();
    watcher.enqueue_batch((0..20).map(|i| format!("after-{i}").into_bytes())).await.unwrap();
    let deadline = silenced + Duration::from_secs(60);
    while !done(40).await {
        if Instant::now() > deadline {
            let mut watch = watch.clone();
            let stats = watcher.stats().await;
            let clients: String = redis::cmd("CLIENT").arg("LIST").query_async(&mut watch).await.unwrap();
            // The sockets as this namespace's kernel holds them: their timers
            // (keepalive, retransmission) say why one was not dropped.
            let sockets = Command::new("ss").args(["-tnoi"]).output().map(|out| out.stdout);
            let sockets = String::from_utf8_lossy(&sockets.unwrap_or_default()).into_owned();
            panic!(
                "{via}: the jobs enqueued in the silence did not all run in 60 s; silenced {ports:?}; \
                 stats {stats:?}; the server's clients:\n{clients}\nthe sockets (ss -tnoi):\n{sockets}"
            );
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let took = silenced.elapsed();

    // The server still lists the silenced connections (nothing told it
    // either); the worker's are new ones.
    let new: Vec<u16> =
        connections(&mut watch, own_id).await.into_iter().filter(|p| !ports.contains(p)).collect();
    assert!(!new.is_empty(), "{via}: no new connection");
    let _ = stop.send(());
    working.await.unwrap().unwrap();
    let runs = runs.lock().unwrap();
    assert_eq!(runs.len(), 40, "{via}");
    assert!(runs.values().all(|attempts| attempts.len() == 1), "{via}: a job ran twice: {runs:?}");
    let lost = runs.values().filter(|attempts| attempts[0] > 1).count();
    println!(
        "{via}: the worker's {} connections silenced; the jobs enqueued then all ran {took:?} later, \
         on {} new connections; {lost} of them after a claim lost in the silence",
        ports.len(),
        new.len()
    );
}

/// Move this thread into a network namespace of its own, with only a
/// loopback; what the thread starts (servers, `tc`) is in it too. The root
/// of its loopback's queueing (htb) sends everything through class 1:10,
/// unless a filter of [`silence`] sends it to 1:20, a `blackhole`: every
/// packet there is lost, and its sender is told it went out, as on a wire
/// that loses it. (A queue that refuses it, `pfifo limit 0`, tells the
/// sender instead: TCP takes that for local congestion and does not count
/// the keepalive probe, retrying it every 500 ms for ever, so a connection
/// idle in the silence, a blocked claim whose answer was lost, was never
/// dropped and its worker never claimed again: 3 runs in 10 timed out so
/// under load, `timer:(keepalive,…,0)` in `ss` after 60 s.)
fn private_network() {
    // SAFETY: unshare(2) with CLONE_NEWNET moves only the calling thread.
    let moved = unsafe { libc::unshare(libc::CLONE_NEWNET) };
    assert_eq!(
        moved,
        0,
        "a network namespace of the test's own needs root (CAP_SYS_ADMIN): {}",
        std::io::Error::last_os_error()
    );
    run("ip link set lo up");
    run("tc qdisc add dev lo root handle 1: htb default 10");
    run("tc class add dev lo parent 1: classid 1:10 htb rate 10gbit");
    run("tc class add dev lo parent 1: classid 1:20 htb rate 8bit");
    run("tc qdisc add dev lo parent 1:20 handle 20: blackhole");
}

/// Lose every packet between the client port `client` and the server port
/// `server`, both ways, from now on: that connection only, not another that
/// gets the same client port later to another server.
fn silence(client: u16, server: u16) {
    for (from, to) in [(client, server), (server, client)] {
        run(&format!(
            "tc filter add dev lo parent 1: protocol ip prio 1 u32 \
             match ip sport {from} 0xffff match ip dport {to} 0xffff flowid 1:20"
        ));
    }
}

fn run(command: &str) {
    let words: Vec<&str> = command.split_whitespace().collect();
    let out = Command::new(words[0]).args(&words[1..]).output().unwrap_or_else(|e| panic!("{command}: {e}"));
    assert!(out.status.success(), "{command}: {}", String::from_utf8_lossy(&out.stderr));
}

/// The client ports of the server's connections, but the one whose id is `own`.
async fn connections(conn: &mut redis::aio::MultiplexedConnection, own: u64) -> Vec<u16> {
    let list: String = redis::cmd("CLIENT").arg("LIST").query_async(conn).await.unwrap();
    list.lines()
        .filter(|line| !line.starts_with(&format!("id={own} ")))
        .filter_map(|line| {
            let addr = line.split(' ').find_map(|field| field.strip_prefix("addr="))?;
            addr.rsplit(':').next()?.parse().ok()
        })
        .collect()
}
