//! One `redis-server` on a free loopback port, killed (and its directory
//! removed) on drop; or the one every test of a binary shares.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::{free_port, module_path, COUNTER};

/// How long a server may take to answer PING after it starts.
const START_DEADLINE: Duration = Duration::from_secs(20);

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
    #[must_use]
    pub fn start() -> RedisServer {
        RedisServer::start_with(ServerOptions::default())
    }

    /// A server with the EchoMQ module loaded (see [`module_path()`]).
    #[must_use]
    pub fn start_with_module() -> RedisServer {
        RedisServer::start_with(ServerOptions { module: Some(module_path()), ..ServerOptions::default() })
    }

    /// The one server with the module loaded that every test of this
    /// process shares, started by the first that asks: for the tests of a
    /// table, one test per row, each on a queue of its own
    /// ([`unique_queue`](crate::unique_queue)), which must not flush or stop it. It outlives
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

    /// Stop the server with SIGSTOP until [`thaw`](RedisServer::thaw): it
    /// answers nothing, yet the kernel still takes its connections' bytes,
    /// so no client sees a connection break.
    pub fn freeze(&self) {
        self.signal("-STOP");
    }

    /// Let a [`freeze`](RedisServer::freeze)n server go on (SIGCONT).
    pub fn thaw(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args([signal, &pid]).status().expect("run kill");
        assert!(sent.success(), "kill {signal} {pid} failed");
    }

    /// The port the server listens on, on 127.0.0.1.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:<port>/`, or `rediss://` for a TLS server.
    #[must_use]
    pub fn url(&self) -> String {
        let scheme = if self.options.tls { "rediss" } else { "redis" };
        format!("{scheme}://127.0.0.1:{}/", self.port)
    }

    /// A client for this server; for a TLS server, one that trusts its CA and only it.
    #[must_use]
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
    #[must_use]
    pub fn ca_cert(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// The server's working directory (its log, RDB and AOF files).
    #[must_use]
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
