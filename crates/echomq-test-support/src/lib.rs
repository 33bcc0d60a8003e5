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
//! `$ECHOMQ_MODULE`, or the workspace's debug build (see [`module_path`]).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long a server may take to answer PING after it starts.
const START_DEADLINE: Duration = Duration::from_secs(20);

static COUNTER: AtomicU64 = AtomicU64::new(0);

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

    /// A server started with `options`. Panics with the server's log when it cannot start.
    pub fn start_with(options: ServerOptions) -> RedisServer {
        let mut last_log = String::new();
        // A port found free can be taken before the server binds it: try again.
        for _ in 0..5 {
            let port = free_port();
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let dir = std::env::temp_dir().join(format!("echomq-redis-{}-{n}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("create the server's directory");
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
        let _ = self.child.kill();
        let _ = self.child.wait();
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

    /// `redis://127.0.0.1:<port>/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// A client for this server.
    pub fn client(&self) -> redis::Client {
        redis::Client::open(self.url()).expect("a loopback URL is valid")
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
            let pong = self
                .client()
                .get_connection_with_timeout(Duration::from_millis(250))
                .and_then(|mut conn| redis::cmd("PING").query::<String>(&mut conn));
            if pong.is_ok() {
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

/// The EchoMQ module to load: `$ECHOMQ_MODULE` when set, else
/// `<workspace>/target/debug/libechomq_module.so` (or under `$CARGO_TARGET_DIR`).
/// Panics, saying how to build it, when the file is not there.
pub fn module_path() -> PathBuf {
    let path = match std::env::var_os("ECHOMQ_MODULE") {
        Some(path) => PathBuf::from(path),
        None => {
            let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
            let target = std::env::var_os("CARGO_TARGET_DIR").map_or(workspace.join("target"), PathBuf::from);
            target.join("debug").join(format!(
                "{}echomq_module{}",
                std::env::consts::DLL_PREFIX,
                std::env::consts::DLL_SUFFIX
            ))
        }
    };
    assert!(
        path.is_file(),
        "the EchoMQ module is not at {}: build it with cargo build -p echomq-module (or set ECHOMQ_MODULE)",
        path.display()
    );
    // The server resolves it after moving into its own directory.
    std::fs::canonicalize(&path).unwrap_or(path)
}

fn free_port() -> u16 {
    loop {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().expect("a bound address").port();
        if port != 6379 {
            return port;
        }
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
