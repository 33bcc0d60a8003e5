//! A worker over `rediss://`, on Lua and on Native, against a redis-server
//! that speaks only TLS (no plain port), its certificate signed by a CA the
//! test makes with openssl and hands to the redis crate's TLS config.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use echomq::{Executor, Lua, Queue};
use echomq_test_support::{module_path, unique_queue};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::{full_run, Via};

/// A redis-server listening for TLS only, on a free loopback port; killed
/// (and its directory removed) on drop.
struct TlsServer {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl TlsServer {
    /// Certificates in a directory of its own, then the server; a port taken
    /// before the server binds it is tried again.
    fn start(module: Option<PathBuf>) -> TlsServer {
        let dir = std::env::temp_dir().join(format!("echomq-{}", unique_queue("tls")));
        std::fs::create_dir_all(&dir).unwrap();
        certificates(&dir);
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            if port == 6379 {
                continue;
            }
            let mut child = spawn(&dir, port, module.as_deref());
            if ready(&client(&dir, port), &mut child) {
                return TlsServer { child, port, dir };
            }
            let _ = child.kill();
            let _ = child.wait();
            let log = std::fs::read_to_string(dir.join("redis.log")).unwrap_or_default();
            eprintln!("a TLS redis-server did not start on port {port}; its log:\n{log}");
        }
        panic!("a TLS redis-server did not start in five tries");
    }

    fn url(&self) -> String {
        format!("rediss://127.0.0.1:{}/", self.port)
    }

    fn client(&self) -> redis::Client {
        client(&self.dir, self.port)
    }
}

/// A client of the server on `port` that trusts the test's CA, and only it.
fn client(dir: &Path, port: u16) -> redis::Client {
    let root_cert = std::fs::read(dir.join("ca.pem")).unwrap();
    let certificates = redis::TlsCertificates { client_tls: None, root_cert: Some(root_cert) };
    redis::Client::build_with_tls(format!("rediss://127.0.0.1:{port}/"), certificates).unwrap()
}

/// PING over TLS answers (true), or the server exits, or 20 s pass.
fn ready(client: &redis::Client, child: &mut Child) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return false;
        }
        let pong = client
            .get_connection_with_timeout(Duration::from_millis(500))
            .and_then(|mut conn| redis::cmd("PING").query::<String>(&mut conn));
        if pong.is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn spawn(dir: &Path, port: u16, module: Option<&Path>) -> Child {
    let binary = std::env::var("ECHOMQ_REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
    let file = |name: &str| dir.join(name);
    let mut command = Command::new(&binary);
    command
        .args(["--port", "0", "--tls-port", &port.to_string(), "--bind", "127.0.0.1"])
        .arg("--tls-cert-file")
        .arg(file("server.pem"))
        .arg("--tls-key-file")
        .arg(file("server.key"))
        .arg("--tls-ca-cert-file")
        .arg(file("ca.pem"))
        .args(["--tls-auth-clients", "no", "--save", "", "--appendonly", "no", "--daemonize", "no"])
        .arg("--dir")
        .arg(dir)
        .arg("--logfile")
        .arg(file("redis.log"));
    if let Some(module) = module {
        command.arg("--loadmodule").arg(module);
    }
    command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    command.spawn().unwrap_or_else(|err| panic!("cannot run {binary}: {err}"))
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl").args(args).current_dir(dir).output().expect("run openssl");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A CA, and a certificate for 127.0.0.1 it signed.
fn certificates(dir: &Path) {
    let ca = "req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 -subj /CN=EchoMQ-test-CA";
    openssl(dir, &ca.split(' ').collect::<Vec<_>>());
    let csr = "req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1";
    openssl(dir, &csr.split(' ').collect::<Vec<_>>());
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n").unwrap();
    let sign = "x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 1 -extfile san.ext";
    openssl(dir, &sign.split(' ').collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_over_rediss_on_lua_and_native() {
    // rustls with ring, as the emq CLI installs it.
    let _ = rustls::crypto::ring::default_provider().install_default();
    for via in [Via::Lua, Via::Native] {
        let server = TlsServer::start((via == Via::Native).then(module_path));
        let executor: std::sync::Arc<dyn Executor> = match via {
            // With the module loaded, connect picks Native; without, Lua.
            Via::Native => echomq::connect(&server.client()).await.expect("connect over TLS"),
            Via::Lua => {
                let config = ConnectionManagerConfig::new().set_response_timeout(None);
                let conn = ConnectionManager::new_with_config(server.client(), config).await.unwrap();
                std::sync::Arc::new(Lua::new(conn))
            }
        };
        assert_eq!(executor.waits(), via == Via::Native, "{via:?}");
        full_run(Queue::with_executor(executor, &unique_queue("tls")).unwrap()).await;

        // Only TLS: a plain connection to the port gets no answer, and a
        // client without the CA does not trust the server.
        let plain = redis::Client::open(format!("redis://127.0.0.1:{}/", server.port)).unwrap();
        let pong = plain
            .get_connection_with_timeout(Duration::from_secs(2))
            .and_then(|mut conn| redis::cmd("PING").query::<String>(&mut conn));
        assert!(pong.is_err(), "{via:?}: a plain-text PING was answered");
        let untrusted = redis::Client::open(server.url()).unwrap();
        let Err(err) = untrusted.get_multiplexed_async_connection().await else {
            panic!("{via:?}: a client without the CA trusted the server");
        };
        assert!(err.to_string().contains("certificate"), "{via:?}: {err}");
    }
}
