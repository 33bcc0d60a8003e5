//! The fleet: the worker processes, each this same binary in worker mode
//! with a journal of its own. Workers are killed with SIGKILL and replaced,
//! paused with SIGSTOP and resumed with SIGCONT, and at the end stopped
//! gracefully by closing their stdin. A worker that ends any other way (it
//! crashed, or would not stop) is a violation.

use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// What every worker process is started with.
pub struct Spec {
    /// This binary.
    pub exe: PathBuf,
    /// The server's URL.
    pub url: String,
    /// The queue.
    pub queue: String,
    /// Each claim's lease, ms.
    pub lease_ms: u64,
    /// Jobs at once per worker.
    pub concurrency: usize,
    /// The longest handler sleep, ms.
    pub work_ms: u64,
    /// Where journals and stderr files go.
    pub dir: PathBuf,
}

struct Member {
    n: usize,
    child: Child,
    /// Closed to stop the worker gracefully.
    stdin: Option<ChildStdin>,
    journal: PathBuf,
}

/// The live workers, and the journals of every worker that ever ran.
pub struct Fleet {
    spec: Spec,
    live: Vec<Member>,
    journals: Vec<PathBuf>,
    /// Workers that ended without being told to, or would not stop.
    pub crashes: Vec<String>,
}

impl Fleet {
    /// No workers yet.
    pub fn new(spec: Spec) -> Fleet {
        Fleet { spec, live: Vec::new(), journals: Vec::new(), crashes: Vec::new() }
    }

    /// Start one more worker.
    pub fn start(&mut self) -> std::io::Result<()> {
        let n = self.journals.len();
        let journal = self.spec.dir.join(format!("worker-{n}.journal"));
        let stderr = std::fs::File::create(self.spec.dir.join(format!("worker-{n}.stderr")))?;
        let mut child = Command::new(&self.spec.exe)
            .arg("worker")
            .args(["--url", &self.spec.url, "--queue", &self.spec.queue])
            .arg("--journal")
            .arg(&journal)
            .args(["--lease-ms", &self.spec.lease_ms.to_string()])
            .args(["--concurrency", &self.spec.concurrency.to_string()])
            .args(["--work-ms", &self.spec.work_ms.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()?;
        let stdin = child.stdin.take();
        self.journals.push(journal.clone());
        self.live.push(Member { n, child, stdin, journal });
        Ok(())
    }

    /// How many workers are live.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// The journal of live worker `i`.
    pub fn journal(&self, i: usize) -> &Path {
        &self.live[i].journal
    }

    /// A name for live worker `i`: its number and pid.
    pub fn name(&self, i: usize) -> String {
        format!("worker {} (pid {})", self.live[i].n, self.live[i].child.id())
    }

    /// SIGKILL live worker `i`, reap it, and start a replacement.
    pub fn kill(&mut self, i: usize) -> std::io::Result<()> {
        let mut member = self.live.remove(i);
        member.child.kill()?;
        member.child.wait()?;
        self.start()
    }

    /// SIGSTOP (`pause`) or SIGCONT live worker `i`. A pause returns once
    /// every thread of the worker has stopped: kill(2) returns before a
    /// thread running on another core has, and until then it may still
    /// write its journal and send calls.
    pub fn pause(&self, i: usize, pause: bool) -> std::io::Result<()> {
        let id = self.live[i].child.id();
        let pid = libc::pid_t::try_from(id).map_err(std::io::Error::other)?;
        let signal = if pause { libc::SIGSTOP } else { libc::SIGCONT };
        // SAFETY: kill(2) on the pid of a child we have not reaped: it cannot
        // name another process, and it touches no memory of ours.
        if unsafe { libc::kill(pid, signal) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while pause && !stopped(id)? {
            if Instant::now() > deadline {
                return Err(std::io::Error::other(format!("worker pid {id} did not stop")));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }

    /// Count and replace the workers that ended by themselves.
    pub fn check(&mut self) -> std::io::Result<()> {
        let mut i = 0;
        while i < self.live.len() {
            if let Some(status) = self.live[i].child.try_wait()? {
                let member = self.live.remove(i);
                self.crashes.push(format!(
                    "worker {} ended by itself ({status}){}",
                    member.n,
                    self.stderr(&member)
                ));
                self.start()?;
            } else {
                i += 1;
            }
        }
        Ok(())
    }

    /// Close every worker's stdin and wait up to `within` for each to finish
    /// gracefully with status 0; kill those that do not.
    pub fn stop(&mut self, within: Duration) -> std::io::Result<()> {
        for member in &mut self.live {
            member.stdin = None;
        }
        let deadline = Instant::now() + within;
        for mut member in std::mem::take(&mut self.live) {
            let status = loop {
                if let Some(status) = member.child.try_wait()? {
                    break Some(status);
                }
                if Instant::now() > deadline {
                    break None;
                }
                std::thread::sleep(Duration::from_millis(20));
            };
            match status {
                Some(status) if status.success() => {}
                Some(status) => self.crashes.push(format!(
                    "worker {} stopped with {status}{}",
                    member.n,
                    self.stderr(&member)
                )),
                None => {
                    member.child.kill()?;
                    member.child.wait()?;
                    self.crashes.push(format!("worker {} did not stop within {within:?}", member.n));
                }
            }
        }
        Ok(())
    }

    /// The journals of every worker started, live or not.
    pub fn journals(&self) -> &[PathBuf] {
        &self.journals
    }

    /// The end of a worker's stderr, to explain how it ended.
    fn stderr(&self, member: &Member) -> String {
        let text = std::fs::read_to_string(self.spec.dir.join(format!("worker-{}.stderr", member.n)))
            .unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(5).collect();
        match tail.is_empty() {
            true => String::new(),
            false => format!(": {}", tail.into_iter().rev().collect::<Vec<_>>().join(" / ")),
        }
    }
}

/// Whether every thread of process `pid` is stopped, by `/proc` (Linux):
/// a thread's state is the first field after the `)` closing its name.
fn stopped(pid: u32) -> std::io::Result<bool> {
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let stat = match std::fs::read_to_string(task?.path().join("stat")) {
            Ok(stat) => stat,
            // A thread that ended meanwhile is not running either.
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(err) => return Err(err),
        };
        let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next());
        if state != Some('T') {
            return Ok(false);
        }
    }
    Ok(true)
}

impl Drop for Fleet {
    /// No worker outlives the fleet, whatever ended the run.
    fn drop(&mut self) {
        for member in &mut self.live {
            let _ = member.child.kill();
            let _ = member.child.wait();
        }
    }
}
