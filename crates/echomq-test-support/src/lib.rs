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
//! asks for it (see [`module_path`]).

#![warn(missing_docs, unreachable_pub)]

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long a server may take to answer PING after it starts.
const START_DEADLINE: Duration = Duration::from_secs(20);

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Every port this process handed out, never handed out again: a server a
/// test keeps down for a while (an outage) must get its own port back, not
/// find another test's new server on it (seen: a worker's ack answered by a
/// stranger's server, its job unknown there).
static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// A queue name no other test in this run uses.
pub fn unique_queue(prefix: &str) -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}-{}-{n}", std::process::id())
}

/// How to start a server.
#[derive(Clone, Debug, Default)]
pub struct ServerOptions {
    /// A module to load with `--loadmodule`.
    pub module: Option<PathBuf>,
    /// More `--name value` arguments, as separate words.
    pub args: Vec<String>,
    /// Speak only TLS, with a certificate for 127.0.0.1 signed by a CA made
    /// for this server by `openssl` (see [`RedisServer::ca_cert`]); no plain
    /// port. Starting one installs rustls's ring provider in the process.
    pub tls: bool,
}

/// A running `redis-server`, killed (and its directory removed) on drop.
pub struct RedisServer {
    child: Child,
    port: u16,
    dir: PathBuf,
    options: ServerOptions,
}

impl RedisServer {
    /// A plain server on a free loopback port.
    pub fn start() -> RedisServer {
        RedisServer::start_with(ServerOptions::default())
    }

    /// A server with the EchoMQ module loaded (see [`module_path`]).
    pub fn start_with_module() -> RedisServer {
        RedisServer::start_with(ServerOptions { module: Some(module_path()), ..ServerOptions::default() })
    }

    /// The one server with the module loaded that every test of this
    /// process shares, started by the first that asks: for the tests of a
    /// table, one test per row, each on a queue of its own
    /// ([`unique_queue`]), which must not flush or stop it. It outlives
    /// every test and dies with the process, however that ends: a watchdog
    /// (`sh`, reading a pipe only this process holds) kills it, and removes
    /// its directory, when the pipe closes.
    pub fn shared_with_module() -> &'static RedisServer {
        static SHARED: OnceLock<(RedisServer, Child)> = OnceLock::new();
        let (server, _watchdog) = SHARED.get_or_init(|| {
            let server = RedisServer::start_with_module();
            let script =
                "read _; kill \"$1\"; while kill -0 \"$1\" 2>/dev/null; do sleep 0.05; done; rm -rf \"$2\"";
            let watchdog = Command::new("sh")
                .args(["-c", script, "watchdog", &server.child.id().to_string()])
                .arg(&server.dir)
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|err| panic!("cannot run sh to watch the shared server: {err}"));
            (server, watchdog)
        });
        server
    }

    /// A server started with `options`. Panics with the server's log when it cannot start.
    pub fn start_with(options: ServerOptions) -> RedisServer {
        if options.tls {
            // Clients need a crypto provider; ring, as the emq CLI installs it.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let mut last_log = String::new();
        // A port found free can be taken before the server binds it: try again.
        for _ in 0..5 {
            let port = free_port();
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let dir = std::env::temp_dir().join(format!("echomq-redis-{}-{n}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("create the server's directory");
            if options.tls {
                certificates(&dir);
            }
            let child = spawn(&dir, port, &options);
            let mut server = RedisServer { child, port, dir, options: options.clone() };
            if server.wait_ready() {
                return server;
            }
            last_log = std::fs::read_to_string(server.dir.join("redis.log")).unwrap_or_default();
        }
        panic!("redis-server did not start; its last log:\n{last_log}");
    }

    /// Kill the server with SIGKILL (no chance to save) and start it again on
    /// the same port and directory: what it kept is what its AOF or RDB had.
    pub fn restart(&mut self) {
        self.kill();
        self.revive();
    }

    /// Kill the server with SIGKILL and leave it down (see [`RedisServer::revive`]).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Start a killed server again on the same port and directory.
    pub fn revive(&mut self) {
        self.child = spawn(&self.dir, self.port, &self.options);
        if !self.wait_ready() {
            let log = std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default();
            panic!("redis-server did not come back on port {}; its log:\n{log}", self.port);
        }
    }

    /// The port the server listens on, on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:<port>/`, or `rediss://` for a TLS server.
    pub fn url(&self) -> String {
        let scheme = if self.options.tls { "rediss" } else { "redis" };
        format!("{scheme}://127.0.0.1:{}/", self.port)
    }

    /// A client for this server; for a TLS server, one that trusts its CA and only it.
    pub fn client(&self) -> redis::Client {
        if !self.options.tls {
            return redis::Client::open(self.url()).expect("a loopback URL is valid");
        }
        let root_cert = std::fs::read(self.ca_cert()).expect("the test CA's certificate");
        let certificates = redis::TlsCertificates { client_tls: None, root_cert: Some(root_cert) };
        redis::Client::build_with_tls(self.url(), certificates).expect("a loopback URL is valid")
    }

    /// A multiplexed connection to this server with no response time-out: a
    /// test's call waits for its answer however busy the machine is (the
    /// client's default gives up after 500 ms, which a loaded CI machine can
    /// take), and a dead server still fails it at once.
    pub async fn connection(&self) -> redis::aio::MultiplexedConnection {
        let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
        self.client()
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .expect("connect to the test's server")
    }

    /// The PEM file of the CA that signed a TLS server's certificate.
    pub fn ca_cert(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// The server's working directory (its log, RDB and AOF files).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + START_DEADLINE;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            // Ready when it answers PING (not while it loads its AOF) and
            // the server on the port is this one, by its directory: a server
            // that cannot bind its port exits (seen above), but another may
            // answer there meanwhile.
            let answered =
                self.client().get_connection_with_timeout(Duration::from_millis(250)).and_then(|mut conn| {
                    redis::cmd("PING").query::<String>(&mut conn)?;
                    redis::cmd("CONFIG").arg("GET").arg("dir").query::<Vec<String>>(&mut conn)
                });
            let ours = std::fs::canonicalize(&self.dir).unwrap_or_else(|_| self.dir.clone());
            if answered.is_ok_and(|config| config.get(1).is_some_and(|dir| Path::new(dir) == ours)) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The EchoMQ module to load: `$ECHOMQ_MODULE` when set; else the
/// workspace's own, built first. The host crate does not depend on the
/// module, so `cargo test -p echomq` would not rebuild it and a server
/// could load a stale `.so`: the first call in a process runs `cargo build
/// -p echomq-module` (quiet, about a tenth of a second when it is fresh)
/// into the calling binary's own target directory and profile, and
/// returns what that wrote. Panics with cargo's output when the build fails.
///
/// From inside `cargo test` this does not wait on cargo's lock: `cargo
/// test` gives the build directory up once its binaries are built, before
/// it runs them (checked: the tests that load the module pass under `cargo
/// test`, each binary building it once).
pub fn module_path() -> PathBuf {
    if let Some(path) = std::env::var_os("ECHOMQ_MODULE") {
        let path = PathBuf::from(path);
        assert!(path.is_file(), "ECHOMQ_MODULE names no file: {}", path.display());
        // The server resolves it after moving into its own directory.
        return std::fs::canonicalize(&path).unwrap_or(path);
    }
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(build_module).clone()
}

/// `cargo build -p echomq-module` with the caller's target directory and
/// profile: a test binary is `<target>/<profile>/deps/<name>`, a program
/// (the chaos runner) `<target>/<profile>/<name>`.
fn build_module() -> PathBuf {
    let exe = std::env::current_exe().expect("the running binary's path");
    let mut profile_dir = exe.parent().expect("a binary in a directory");
    if profile_dir.file_name().is_some_and(|name| name == "deps") {
        profile_dir = profile_dir.parent().expect("deps/ in a profile's directory");
    }
    let target = profile_dir.parent().expect("a profile's directory in a target directory");
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(&cargo);
    command.args(["build", "--quiet", "-p", "echomq-module"]).current_dir(&workspace);
    command.env("CARGO_TARGET_DIR", target);
    match profile_dir.file_name().and_then(|name| name.to_str()) {
        Some("debug") => {}
        Some("release") => {
            command.arg("--release");
        }
        Some(other) => {
            command.args(["--profile", other]);
        }
        None => panic!("cannot tell the profile of {}", exe.display()),
    }
    let out = command.stdin(Stdio::null()).output().unwrap_or_else(|err| {
        panic!(
            "cannot run {} to build the EchoMQ module: {err} (or set ECHOMQ_MODULE)",
            cargo.to_string_lossy()
        )
    });
    assert!(
        out.status.success(),
        "cargo build -p echomq-module failed (or set ECHOMQ_MODULE to a built module):\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let name = format!("{}echomq_module{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX);
    let path = profile_dir.join(name);
    assert!(path.is_file(), "cargo built the EchoMQ module, but not at {}", path.display());
    std::fs::canonicalize(&path).unwrap_or(path)
}

/// A Redis Cluster of masters on loopback, each a [`RedisServer`] with
/// `cluster-enabled yes` and its bus on a free port of its own, joined by
/// `redis-cli --cluster create`. Dropping it stops every node.
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
}

/// How long a cluster may take to agree on its slots after a change.
const CLUSTER_DEADLINE: Duration = Duration::from_secs(30);

impl RedisCluster {
    /// `masters` nodes (three at least, as `redis-cli` wants) sharing the 16384
    /// slots, each loading `module` when given. Returns once every node sees
    /// every slot served.
    pub fn start(masters: usize, module: Option<PathBuf>) -> RedisCluster {
        let nodes: Vec<RedisServer> = (0..masters)
            .map(|_| {
                let args = [
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    "5000",
                    "--cluster-port",
                    &free_port().to_string(),
                ];
                let args = args.iter().map(|a| a.to_string()).collect();
                RedisServer::start_with(ServerOptions {
                    module: module.clone(),
                    args,
                    ..ServerOptions::default()
                })
            })
            .collect();
        let cli = std::env::var("ECHOMQ_REDIS_CLI").unwrap_or_else(|_| "redis-cli".into());
        let out = Command::new(&cli)
            .arg("--cluster")
            .arg("create")
            .args(nodes.iter().map(|node| format!("127.0.0.1:{}", node.port())))
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|err| panic!("cannot run {cli}: {err} (is redis-tools installed?)"));
        assert!(
            out.status.success(),
            "redis-cli --cluster create failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let cluster = RedisCluster { nodes };
        cluster.wait_agreed();
        cluster
    }

    /// The nodes, in the order they were started.
    pub fn nodes(&self) -> &[RedisServer] {
        &self.nodes
    }

    /// `redis://127.0.0.1:<port>/` of every node: seeds for a cluster client.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    /// The slot of `key`, as the cluster computes it (`CLUSTER KEYSLOT`).
    pub fn slot(&self, key: &str) -> u16 {
        let mut conn = self.nodes[0].client().get_connection().expect("connect to a node");
        redis::cmd("CLUSTER").arg("KEYSLOT").arg(key).query(&mut conn).expect("CLUSTER KEYSLOT")
    }

    /// The index of the node serving `slot`, as the first node says.
    pub fn owner(&self, slot: u16) -> usize {
        let ids: Vec<String> = self.nodes.iter().map(node_id).collect();
        let mut conn = self.nodes[0].client().get_connection().expect("connect to a node");
        let slots: redis::Value = redis::cmd("CLUSTER").arg("SLOTS").query(&mut conn).expect("CLUSTER SLOTS");
        let redis::Value::Array(ranges) = slots else { panic!("CLUSTER SLOTS answered {slots:?}") };
        for range in ranges {
            let redis::Value::Array(range) = range else { continue };
            let (
                Some(redis::Value::Int(low)),
                Some(redis::Value::Int(high)),
                Some(redis::Value::Array(master)),
            ) = (range.first(), range.get(1), range.get(2))
            else {
                continue;
            };
            if (*low..=*high).contains(&i64::from(slot)) {
                let Some(redis::Value::BulkString(id)) = master.get(2) else { break };
                let id = String::from_utf8_lossy(id);
                return ids.iter().position(|known| *known == id).expect("a node of this cluster");
            }
        }
        panic!("no node serves slot {slot}");
    }

    /// Move `slot` and every key in it from its node to node `to`, the way
    /// Redis's docs describe a resharding: IMPORTING on the target, MIGRATING
    /// on the source, the keys, then the new owner told to every node. The
    /// keys go in one MIGRATE, which blocks the source until the target has
    /// them all, so no client ever sees part of a queue on each node. Returns
    /// how many keys moved.
    pub fn migrate_slot(&self, slot: u16, to: usize) -> usize {
        let mut moving = self.begin_move(slot, to);
        let moved = moving.rest();
        moving.finish();
        moved
    }

    /// Start moving `slot` to node `to`: IMPORTING there, MIGRATING on its
    /// owner. The keys then move as the returned [`SlotMove`] is told.
    pub fn begin_move(&self, slot: u16, to: usize) -> SlotMove<'_> {
        let from = self.owner(slot);
        assert_ne!(from, to, "slot {slot} is on node {to} already");
        let mut source = self.nodes[from].client().get_connection().expect("connect to the source");
        let mut target = self.nodes[to].client().get_connection().expect("connect to the target");
        let (source_id, target_id) = (node_id(&self.nodes[from]), node_id(&self.nodes[to]));
        setslot(&mut target, slot, "IMPORTING", &source_id);
        setslot(&mut source, slot, "MIGRATING", &target_id);
        SlotMove { cluster: self, slot, from, to, source, target_id }
    }

    /// Wait until every node reports `cluster_state:ok` with all slots served.
    fn wait_agreed(&self) {
        let deadline = Instant::now() + CLUSTER_DEADLINE;
        let mut last = String::new();
        while Instant::now() < deadline {
            let agreed = self.nodes.iter().all(|node| {
                let info: redis::RedisResult<String> = node
                    .client()
                    .get_connection()
                    .and_then(|mut conn| redis::cmd("CLUSTER").arg("INFO").query(&mut conn));
                match info {
                    Ok(info) => {
                        let ok = info.contains("cluster_state:ok")
                            && info.contains("cluster_slots_ok:16384")
                            && info.contains(&format!("cluster_known_nodes:{}", self.nodes.len()));
                        last = info;
                        ok
                    }
                    Err(_) => false,
                }
            });
            if agreed {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the cluster did not agree on its slots in {CLUSTER_DEADLINE:?}; last CLUSTER INFO:\n{last}");
    }
}

/// A slot on its way from one node to another (see [`RedisCluster::begin_move`]).
pub struct SlotMove<'c> {
    cluster: &'c RedisCluster,
    slot: u16,
    from: usize,
    to: usize,
    source: redis::Connection,
    target_id: String,
}

impl SlotMove<'_> {
    /// The index of the node the slot leaves.
    pub fn from(&self) -> usize {
        self.from
    }

    /// Move `keys`, and only them, in one MIGRATE: a resharding caught half way.
    pub fn keys(&mut self, keys: &[Vec<u8>]) {
        if keys.is_empty() {
            return;
        }
        redis::cmd("MIGRATE")
            .arg("127.0.0.1")
            .arg(self.cluster.nodes[self.to].port())
            .arg("")
            .arg(0)
            .arg(60_000)
            .arg("KEYS")
            .arg(keys)
            .query::<()>(&mut self.source)
            .unwrap_or_else(|err| panic!("MIGRATE of slot {}: {err}", self.slot));
    }

    /// The keys of the slot still on the source.
    pub fn left(&mut self) -> Vec<Vec<u8>> {
        redis::cmd("CLUSTER")
            .arg("GETKEYSINSLOT")
            .arg(self.slot)
            .arg(u32::MAX)
            .query(&mut self.source)
            .expect("CLUSTER GETKEYSINSLOT")
    }

    /// Move every key still on the source, in one MIGRATE; how many.
    pub fn rest(&mut self) -> usize {
        let mut moved = 0;
        loop {
            let keys = self.left();
            if keys.is_empty() {
                return moved;
            }
            self.keys(&keys);
            moved += keys.len();
        }
    }

    /// Give the slot to the target, telling the target first, then the
    /// source, then the others (the order Redis's docs give), and wait until
    /// every node agrees.
    pub fn finish(mut self) {
        let others = (0..self.cluster.nodes.len()).filter(|&i| i != self.from && i != self.to);
        for i in std::iter::once(self.to).chain(std::iter::once(self.from)).chain(others) {
            if i == self.from {
                setslot(&mut self.source, self.slot, "NODE", &self.target_id);
            } else {
                let mut conn = self.cluster.nodes[i].client().get_connection().expect("connect to a node");
                setslot(&mut conn, self.slot, "NODE", &self.target_id);
            }
        }
        self.cluster.wait_agreed();
    }
}

fn setslot(conn: &mut redis::Connection, slot: u16, state: &str, id: &str) {
    redis::cmd("CLUSTER")
        .arg("SETSLOT")
        .arg(slot)
        .arg(state)
        .arg(id)
        .query::<()>(conn)
        .unwrap_or_else(|err| panic!("CLUSTER SETSLOT {slot} {state}: {err}"))
}

/// A cluster node's own id (`CLUSTER MYID`).
fn node_id(node: &RedisServer) -> String {
    let mut conn = node.client().get_connection().expect("connect to a node");
    redis::cmd("CLUSTER").arg("MYID").query(&mut conn).expect("CLUSTER MYID")
}

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

/// A free loopback port never handed out before in this process (see
/// `HANDED_OUT`): for a test's own listener or a port it needs unused.
pub fn free_port() -> u16 {
    // The ports refused stay bound until one is found, so none comes back.
    let mut refused = Vec::new();
    loop {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().expect("a bound address").port();
        if port != 6379 && HANDED_OUT.lock().unwrap_or_else(|p| p.into_inner()).insert(port) {
            return port;
        }
        refused.push(listener);
    }
}

fn spawn(dir: &Path, port: u16, options: &ServerOptions) -> Child {
    let binary = std::env::var("ECHOMQ_REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
    let mut command = Command::new(&binary);
    command
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
        .arg("--dir")
        .arg(dir)
        .arg("--logfile")
        .arg(dir.join("redis.log"));
    if options.tls {
        command.args(["--tls-port", &port.to_string(), "--port", "0", "--tls-auth-clients", "no"]);
        command.arg("--tls-cert-file").arg(dir.join("server.pem"));
        command.arg("--tls-key-file").arg(dir.join("server.key"));
        command.arg("--tls-ca-cert-file").arg(dir.join("ca.pem"));
    }
    if let Some(module) = &options.module {
        command.arg("--loadmodule").arg(module);
    }
    command.args(&options.args);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|err| panic!("cannot run {binary}: {err} (is redis-server installed?)"))
}

/// In `dir`: a CA (`ca.pem`) and a certificate for 127.0.0.1 it signed
/// (`server.pem`, `server.key`), made with `openssl`.
fn certificates(dir: &Path) {
    let openssl = |args: &str| {
        let out = Command::new("openssl")
            .args(args.split(' '))
            .current_dir(dir)
            .output()
            .unwrap_or_else(|err| panic!("cannot run openssl: {err} (is it installed?)"));
        assert!(out.status.success(), "openssl {args}: {}", String::from_utf8_lossy(&out.stderr));
    };
    openssl("req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 -subj /CN=EchoMQ-test-CA");
    openssl("req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1");
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        .expect("write san.ext");
    openssl("x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 1 -extfile san.ext");
}
