//! What the dashboard's tests share: the dashboard as a child process (on a
//! free loopback port, its log in a file), raw HTTP/1.1 requests to it, and
//! jobs made dead fast through the host API.

#![allow(dead_code, unreachable_pub)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use echomq::{Queue, RetryPolicy};
use echomq_test_support::{free_port, RedisServer};

/// A child process killed on drop.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Wait until something listens on loopback `port`.
pub fn wait_for_port(port: u16, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "{what} did not listen on {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `emq dashboard` against `server`, with `args` (`--read-only`, `--token …`).
pub struct Dashboard {
    pub port: u16,
    log: PathBuf,
    _process: Running,
}

impl Dashboard {
    pub fn start(server: &RedisServer, args: &[&str]) -> Dashboard {
        Dashboard::start_at(&server.url(), args)
    }

    /// The same, against the server at `url` (a user of its own).
    pub fn start_at(url: &str, args: &[&str]) -> Dashboard {
        let port = free_port();
        let log = std::env::temp_dir().join(format!("emq-dashboard-{}-{port}.log", std::process::id()));
        let process = Command::new(env!("CARGO_BIN_EXE_emq"))
            .args(["--url", url, "dashboard", "--bind", &format!("127.0.0.1:{port}")])
            .args(args)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        wait_for_port(port, "the dashboard");
        Dashboard { port, log, _process: Running(process) }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Send it SIGINT (Ctrl-C), and whether it exited within a minute.
    pub fn interrupt(&mut self) -> bool {
        let pid = libc::pid_t::try_from(self._process.0.id()).unwrap();
        // SAFETY: kill(2) with a pid this test spawned and still holds.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if self._process.0.try_wait().unwrap().is_some() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Its log so far (stderr: the audit lines).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// One request; the whole response (status line, headers, body).
    pub fn request(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        let mut request =
            format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n", self.port);
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        if method == "POST" {
            request.push_str("Content-Type: application/x-www-form-urlencoded\r\n");
            request.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        request.push_str("\r\n");
        request.push_str(body);
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        Reply(response)
    }

    pub fn get(&self, path: &str) -> Reply {
        self.request("GET", path, &[], "")
    }

    pub fn post(&self, path: &str, body: &str) -> Reply {
        self.request("POST", path, &[], body)
    }

    /// The CSRF token its forms carry (from `/`'s page, which must show a form).
    pub fn csrf(&self, path: &str) -> String {
        let page = self.get(path).0;
        let at = page.find(r#"name="csrf" value=""#).unwrap_or_else(|| panic!("no form on {path}: {page}"));
        page[at + 19..at + 51].to_owned()
    }
}

/// A whole HTTP response.
#[derive(Debug)]
pub struct Reply(pub String);

impl Reply {
    pub fn status(&self) -> u16 {
        self.0.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
    }

    pub fn has(&self, text: &str) -> bool {
        self.0.contains(text)
    }
}

/// `n` dead jobs in `queue`: enqueued, claimed and failed with one
/// attempt; job `i`'s payload `{"to":"user<i>@example.com"}`, its error
/// `SMTP 421: try later` when `i` is a multiple of 100, else `SMTP 550: mailbox unavailable`.
/// Their ids, oldest first.
pub async fn dead_jobs(queue: &Queue, n: usize) -> Vec<echomq::JobId> {
    let payloads = (0..n).map(|i| format!(r#"{{"to":"user{i}@example.com"}}"#));
    let ids: Vec<echomq::JobId> =
        queue.enqueue_batch(payloads).await.unwrap().into_iter().map(Result::unwrap).collect();
    let once = RetryPolicy::new().max_attempts(1);
    let mut claimed = 0;
    while claimed < n {
        let leases = queue.claim_many(Duration::from_secs(600), 500, None).await.unwrap().jobs;
        assert!(!leases.is_empty(), "claimed {claimed} of {n}");
        for lease in leases {
            let i = ids.iter().position(|id| *id == lease.id).unwrap();
            let error = if i % 100 == 0 { "SMTP 421: try later" } else { "SMTP 550: mailbox unavailable" };
            lease.fail(error, &once).await.unwrap();
            claimed += 1;
        }
    }
    ids
}

/// A queue on `server` through the Lua executor.
pub async fn queue(server: &RedisServer, name: &str) -> Queue {
    Queue::new(Arc::new(echomq::Lua::new(server.connection().await)), name).unwrap()
}
