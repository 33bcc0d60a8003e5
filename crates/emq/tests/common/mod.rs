//! What the fault tests share: `emq` run against a test server, a scratch
//! directory per test, and waiting for a condition with a deadline.

#![allow(dead_code)] // each test file uses its own part

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// `emq` with `--url` and `--via` set.
pub struct Emq {
    pub url: String,
    pub via: &'static str,
}

impl Emq {
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_emq"));
        command.args(["--url", &self.url, "--via", self.via]).args(args);
        command
    }

    /// Run and expect success; stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        self.ok_said(args).0
    }

    /// [`ok`](Self::ok)'s stdout, and its stderr.
    pub fn ok_said(&self, args: &[&str]) -> (String, String) {
        let output = self.command(args).output().expect("run emq");
        assert!(output.status.success(), "emq {args:?}: {}", show(&output));
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        (text(&output.stdout), text(&output.stderr))
    }

    /// `emq work` in the background, `DIR` set to `dir` for its command and
    /// its stderr (the log) into `log`.
    pub fn work(&self, args: &[&str], dir: &Path, log: &Path) -> Worker {
        let mut all = vec!["work"];
        all.extend_from_slice(args);
        let child = self
            .command(&all)
            .env("DIR", dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).expect("create the log file"))
            .spawn()
            .expect("run emq work");
        Worker(child)
    }
}

/// An `emq work` process, killed on drop so that a failing test leaves none behind.
pub struct Worker(pub Child);

impl Worker {
    pub fn id(&self) -> u32 {
        self.0.id()
    }

    /// SIGTERM, and whether it then stopped with success.
    pub fn stop(&mut self) -> bool {
        signal(self.0.id(), "TERM");
        self.0.wait().expect("wait for emq work").success()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn show(output: &Output) -> String {
    format!("{}\n{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

#[allow(unused_imports)] // each test file uses its own part
pub use echomq_test_support::eventually_blocking as eventually;

/// A fresh directory for one test's files, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("emq-{name}-{}", echomq_test_support::unique_queue("t")));
        std::fs::create_dir_all(&dir).expect("create a scratch directory");
        Scratch(dir)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// The lines of file `name` (none when it does not exist yet).
    pub fn lines(&self, name: &str) -> Vec<String> {
        std::fs::read_to_string(self.path(name)).unwrap_or_default().lines().map(str::to_owned).collect()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The `redis::Client` of a URL, for reading keys directly.
pub fn client(url: &str) -> redis::Client {
    redis::Client::open(url).expect("a loopback URL")
}

/// Whether process `pid` is gone: no such process, or a zombie waiting to be reaped.
pub fn gone(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // `pid (name) S ...`: the state follows the last ')'.
        Ok(stat) => stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next()) == Some("Z"),
    }
}

/// Send `signal` (TERM, STOP, CONT, …) to process `pid`.
pub fn signal(pid: u32, signal: &str) {
    let sent = Command::new("kill").arg(format!("-{signal}")).arg(pid.to_string()).status().expect("kill");
    assert!(sent.success(), "kill -{signal} {pid}");
}
