//! The fleet: the worker processes, each this same binary in worker mode
//! with a journal of its own. Workers are killed with SIGKILL and replaced,
//! paused with SIGSTOP and resumed with SIGCONT, and at the end stopped
//! gracefully by closing their stdin. A worker that killed itself between a
//! RESOLVE and the relay's XDEL (its journal says so, `witness.rs`) is
//! counted and replaced; one that ends any other way (it crashed, or would
//! not stop) is a violation. A worker keeps its place in the fleet through
//! its replacements, so a place names the same slot across a pause.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crate::journal::{self, Event};

/// What every worker process is started with.
pub struct Spec {
    /// This binary.
    pub exe: PathBuf,
    /// The server's URL.
    pub url: String,
    /// Each claim's lease, ms.
    pub lease_ms: u64,
    /// Jobs at once per worker.
    pub concurrency: usize,
    /// The longest handler sleep, ms.
    pub work_ms: u64,
    /// The queues of each `Worker` a process runs, comma-separated.
    pub groups: Vec<String>,
    /// The chance per RESOLVE that a worker kills itself before the XDEL.
    pub resolve_kills: f64,
    /// The run's seed; each worker's draws come from it and its number.
    pub seed: u64,
    /// Where journals and stderr files go.
    pub dir: PathBuf,
}

impl Spec {
    /// The file whose existence calms every worker: no more kills of their own.
    pub fn calm(&self) -> PathBuf {
        self.dir.join("calm")
    }

    /// The file that calms worker `n` alone.
    fn calm_one(&self, n: usize) -> PathBuf {
        self.dir.join(format!("calm-{n}"))
    }
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
    /// Workers that killed themselves between a RESOLVE and its XDEL.
    pub self_killed: u64,
}

impl Fleet {
    /// No workers yet.
    pub fn new(spec: Spec) -> Fleet {
        Fleet { spec, live: Vec::new(), journals: Vec::new(), crashes: Vec::new(), self_killed: 0 }
    }

    /// Start one more worker.
    pub fn start(&mut self) -> std::io::Result<()> {
        let member = self.spawn()?;
        self.live.push(member);
        Ok(())
    }

    /// Start a worker process, the next number.
    fn spawn(&mut self) -> std::io::Result<Member> {
        let n = self.journals.len();
        let journal = self.spec.dir.join(format!("worker-{n}.journal"));
        // There from the start, empty, so that a look at a worker that has
        // not opened it yet finds no line rather than no file.
        std::fs::File::create(&journal)?;
        let stderr = std::fs::File::create(self.spec.dir.join(format!("worker-{n}.stderr")))?;
        let mut child = Command::new(&self.spec.exe)
            .arg("worker")
            .args(["--url", &self.spec.url])
            .arg("--journal")
            .arg(&journal)
            .args(["--lease-ms", &self.spec.lease_ms.to_string()])
            .args(["--concurrency", &self.spec.concurrency.to_string()])
            .args(["--work-ms", &self.spec.work_ms.to_string()])
            .args(self.spec.groups.iter().flat_map(|group| ["--queues", group]))
            .args(["--resolve-kills", &self.spec.resolve_kills.to_string()])
            .args(["--seed", &crate::rng::mix(self.spec.seed ^ (n as u64 + 1)).to_string()])
            .arg("--calm")
            .arg(self.spec.calm())
            .arg("--calm")
            .arg(self.spec.calm_one(n))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(stderr)
            // A process group of its own, whose parent (this process) is in
            // another: never orphaned while the run lives. A stopped worker
            // in an orphaned group gets SIGHUP from the kernel, which ended
            // paused workers of runs whose own group was orphaned by the
            // shell that started them exiting first.
            .process_group(0)
            .spawn()?;
        let stdin = child.stdin.take();
        self.journals.push(journal.clone());
        Ok(Member { n, child, stdin, journal })
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

    /// SIGKILL live worker `i`, reap it, and start a replacement in its
    /// place. One found ended already is accounted for as [`check`](Fleet::check) does.
    pub fn kill(&mut self, i: usize) -> std::io::Result<()> {
        let replacement = self.spawn()?;
        let mut member = std::mem::replace(&mut self.live[i], replacement);
        match member.child.try_wait()? {
            Some(status) => self.ended(&member, status),
            None => {
                member.child.kill()?;
                member.child.wait()?;
            }
        }
        Ok(())
    }

    /// Calm live worker `i` (no kill of its own while calm), or not.
    pub fn calm(&self, i: usize, calm: bool) -> std::io::Result<()> {
        let path = self.spec.calm_one(self.live[i].n);
        match calm {
            true => std::fs::write(path, b""),
            false => std::fs::remove_file(path),
        }
    }

    /// Calm every worker, for good: the chaos is over.
    pub fn calm_all(&self) -> std::io::Result<()> {
        std::fs::write(self.spec.calm(), b"")
    }

    /// A worker that ended by itself: killed on purpose (its journal's
    /// `abort` line), counted; or a crash.
    fn ended(&mut self, member: &Member, status: std::process::ExitStatus) {
        use std::os::unix::process::ExitStatusExt;
        let aborted = || {
            journal::tail(&member.journal, 64 * 1024).is_ok_and(|tail| {
                tail.iter().rev().take(64).any(|entry| matches!(entry.event, Event::Abort(_)))
            })
        };
        if status.signal() == Some(libc::SIGKILL) && aborted() {
            self.self_killed += 1;
        } else {
            self.crashes.push(format!(
                "worker {} ended by itself ({status}){}",
                member.n,
                self.stderr(member)
            ));
        }
    }

    /// SIGSTOP (`pause`) or SIGCONT live worker `i`. A pause returns once
    /// every thread of the worker has stopped: kill(2) returns before a
    /// thread running on another core has, and until then it may still
    /// write its journal and send calls. A worker that ended meanwhile (it
    /// killed itself) is an error of kind `NotFound`.
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
            if ended(id)? {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("worker pid {id} ended"),
                ));
            }
            if Instant::now() > deadline {
                return Err(std::io::Error::other(format!("worker pid {id} did not stop")));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }

    /// Count and replace, each in its place, the workers that ended by themselves.
    pub fn check(&mut self) -> std::io::Result<()> {
        for i in 0..self.live.len() {
            if let Some(status) = self.live[i].child.try_wait()? {
                let replacement = self.spawn()?;
                let member = std::mem::replace(&mut self.live[i], replacement);
                self.ended(&member, status);
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
                Some(status) => self.ended(&member, status),
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

/// Whether process `pid` has ended (a zombie, not yet reaped), by `/proc`.
fn ended(pid: u32) -> std::io::Result<bool> {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next());
            Ok(matches!(state, Some('Z' | 'X')))
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(err) => Err(err),
    }
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
