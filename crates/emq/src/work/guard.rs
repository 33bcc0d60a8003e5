//! The guard of `emq work`: one small process per worker that outlives it,
//! to SIGKILL the process groups of the commands it left running, however
//! it ended. A worker that is SIGKILLed (`kill -9`, the OOM killer, a
//! container runtime out of patience) can do nothing itself; its guard can.
//!
//! The worker starts it as this same program, `emq work-guard` (hidden),
//! with a pipe for stdin whose write end only the worker holds (close on
//! exec: no command inherits it). The worker writes `+PGID` when a command
//! starts and `-PGID` when it is done with the command's group (it ended by
//! itself, or was stopped), so that a group id the system hands out again
//! is never killed. The pipe ends (EOF) when the worker is gone, whether it
//! exited or was killed: the guard then SIGKILLs every group still listed,
//! says so in the log, and exits. Per job this costs two writes to a pipe
//! (about 0.6 µs each, where spawning and reaping the command takes about
//! 1 ms).
//!
//! The guard runs in a process group of its own and ignores the signals a
//! terminal or a supervisor sends a worker (SIGINT, SIGTERM, SIGHUP,
//! SIGQUIT, and the terminal's stop signals) from its start, so that
//! neither a Ctrl-C nor a signal to the worker's group ends it before it
//! has done its job. Out of its reach: a process that left its command's
//! group (`setsid`, a daemon's double fork), and a worker killed in the
//! microseconds between a command's start and its `+PGID`.
//!
//! Not `prctl(PR_SET_PDEATHSIG)` on each command: it needs a `pre_exec`
//! hook, which makes the standard library fork the whole worker instead of
//! `posix_spawn`ing the command (one spawn took 1.4 ms instead of 0.7 ms at
//! 30 MiB resident, 4.6 ms at 200 MiB); it would stop the command alone,
//! not what the command started; and it fires when the spawning *thread*
//! ends (a tokio worker thread here, which a `block_in_place` can retire).
//! Nor `PR_SET_CHILD_SUBREAPER` on the worker: it gathers orphans only
//! while the worker lives, and a killed worker's go to init all the same.

use std::collections::BTreeSet;
use std::io::{BufRead, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The hidden subcommand that runs the guard: `emq work-guard`.
pub const SUBCOMMAND: &str = "work-guard";

/// The signals the guard ignores, inherited as ignored through `exec`.
const IGNORED: [libc::c_int; 7] =
    [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT, libc::SIGTSTP, libc::SIGTTIN, libc::SIGTTOU];

/// How long the guard goes on killing a group that is still there: a
/// process that forked as the first SIGKILL landed may have missed it
/// (Linux sees to it that it does not; POSIX does not say).
const SWEEP: Duration = Duration::from_secs(1);

/// How long a worker that ends waits for its guard to exit: it has nothing
/// left to kill then, and exits at once, unless stopped (SIGSTOP).
const EXIT: Duration = Duration::from_secs(1);

/// One line the worker tells its guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Told {
    /// A command started, in the process group of this id (its pid).
    Started(libc::pid_t),
    /// The worker is done with this group: the guard forgets it.
    Done(libc::pid_t),
}

/// The longest line: a sign, an `i32` with its own sign, a newline.
const LINE: usize = 13;

impl Told {
    /// The line, `+PGID\n` or `-PGID\n`, in `buffer`.
    fn line(self, buffer: &mut [u8; LINE]) -> &[u8] {
        let (sign, group) = match self {
            Told::Started(group) => ('+', group),
            Told::Done(group) => ('-', group),
        };
        let mut rest = &mut buffer[..];
        // An i32 and two bytes always fit.
        let _ = writeln!(rest, "{sign}{group}");
        let left = rest.len();
        &buffer[..LINE - left]
    }

    /// A line as [`line`](Self::line) writes it, without its newline.
    fn parse(line: &str) -> Option<Told> {
        let (sign, group) = line.split_at_checked(1)?;
        let group: libc::pid_t = group.parse().ok().filter(|group| *group > 0)?;
        match sign {
            "+" => Some(Told::Started(group)),
            "-" => Some(Told::Done(group)),
            _ => None,
        }
    }
}

/// The worker's side: the guard's process, and the pipe that tells it which
/// process groups are running. Dropped, the pipe closes and the guard
/// (having nothing left to kill after a graceful end) exits; it is waited for.
#[derive(Debug)]
pub struct Guard {
    pipe: Option<std::io::PipeWriter>,
    process: Child,
    /// Whether the guard was found gone, which is said once.
    lost: AtomicBool,
}

impl Guard {
    /// Start the guard: this program again, logging with `logging` (the
    /// worker's own options).
    pub fn start(logging: &[String]) -> std::io::Result<Guard> {
        let (told, pipe) = std::io::pipe()?;
        let mut guard = std::process::Command::new(this_program()?);
        if let Some(name) = std::env::args_os().next() {
            guard.arg0(name);
        }
        guard
            .args(logging)
            .arg(SUBCOMMAND)
            .stdin(told)
            .stdout(Stdio::null())
            // mimalloc's arena committed lazily: the guard allocates little,
            // and an eager arena in transparent huge pages made it 8.6 MB
            // resident instead of 3.2 MB (a debug build).
            .env("MIMALLOC_ARENA_EAGER_COMMIT", "0")
            // Its own group: a Ctrl-C, or a kill of the worker's group, does not reach it.
            .process_group(0);
        // With a hook, the standard library forks the whole worker rather
        // than posix_spawn: a millisecond, once, at start.
        // SAFETY: between fork and exec the hook only calls signal(2), which
        // is async-signal-safe, and allocates nothing.
        unsafe {
            guard.pre_exec(|| {
                for signal in IGNORED {
                    libc::signal(signal, libc::SIG_IGN);
                }
                Ok(())
            })
        };
        let process = guard.spawn()?;
        Ok(Guard { pipe: Some(pipe), process, lost: AtomicBool::new(false) })
    }

    /// A command started, in a process group of its own, `group`.
    pub fn started(&self, group: libc::pid_t) {
        self.tell(Told::Started(group));
    }

    /// The worker is done with `group`: it ended by itself, or was stopped.
    pub fn done(&self, group: libc::pid_t) {
        self.tell(Told::Done(group));
    }

    fn tell(&self, told: Told) {
        let Some(pipe) = &self.pipe else { return };
        let mut buffer = [0; LINE];
        // One write(2) of a few bytes, fewer than PIPE_BUF: it lands whole,
        // whichever other thread writes at the same time.
        if let Err(err) = (&*pipe).write_all(told.line(&mut buffer)) {
            if !self.lost.swap(true, Ordering::Relaxed) {
                tracing::error!(
                    error = %err,
                    "the guard of emq work is gone: a command still running when emq work is killed will go on running"
                );
            }
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        // EOF for the guard; then a moment for it to exit, never a hang.
        self.pipe = None;
        let deadline = Instant::now() + EXIT;
        while matches!(self.process.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// This program: on Linux the very file the worker runs, even when a deploy
/// has replaced or removed it since.
fn this_program() -> std::io::Result<std::path::PathBuf> {
    if cfg!(target_os = "linux") {
        return Ok("/proc/self/exe".into());
    }
    std::env::current_exe()
}

/// `emq work-guard`: the guard itself. It reads what the worker tells it
/// until EOF, then SIGKILLs the groups still running.
pub fn run() {
    // SAFETY: getppid(2) cannot fail and touches no memory of ours.
    let worker = unsafe { libc::getppid() };
    let mut running = BTreeSet::new();
    for line in std::io::stdin().lock().lines() {
        // A read that fails is taken as the worker gone.
        let Ok(line) = line else { break };
        match Told::parse(&line) {
            Some(Told::Started(group)) => {
                running.insert(group);
            }
            Some(Told::Done(group)) => {
                running.remove(&group);
            }
            None => tracing::warn!(%line, "the guard of emq work: not a line it knows; ignored"),
        }
    }
    if running.is_empty() {
        return;
    }
    for &group in &running {
        kill(group, libc::SIGKILL);
    }
    tracing::warn!(
        worker,
        groups = ?running,
        "emq work is gone with commands running (killed?): SIGKILL to their process groups"
    );
    let deadline = Instant::now() + SWEEP;
    loop {
        // A group is there until its last process is reaped.
        running.retain(|&group| kill(group, 0));
        if running.is_empty() || Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
        for &group in &running {
            kill(group, libc::SIGKILL);
        }
    }
}

/// `signal` to process group `group`; whether it was sent.
fn kill(group: libc::pid_t, signal: libc::c_int) -> bool {
    // SAFETY: kill(2) with a negative pid signals a process group; it
    // touches no memory of ours.
    unsafe { libc::kill(-group, signal) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_reads_back_as_what_was_told() {
        for told in [Told::Started(1), Told::Done(4_194_304), Told::Started(libc::pid_t::MAX)] {
            let mut buffer = [0; LINE];
            let line = std::str::from_utf8(told.line(&mut buffer)).unwrap();
            assert_eq!(Told::parse(line.strip_suffix('\n').unwrap()), Some(told), "{line:?}");
        }
    }

    #[test]
    fn a_line_it_does_not_know_is_none() {
        // No group id is 0 or negative: kill(-0) or kill(--1) would signal far more.
        for line in ["", "+", "*12", "+0", "+-1", "--5", "+12x", "+99999999999"] {
            assert_eq!(Told::parse(line), None, "{line:?}");
        }
    }
}
