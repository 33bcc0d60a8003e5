//! One job's command: run in a process group of its own, fed the payload,
//! stopped with its children when the job is taken from it, its exit read
//! as the job's outcome.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use echomq::worker::{HandlerError, JobContext};
use tokio::io::AsyncWriteExt;

use super::guard::Guard;
use super::STDERR_TAIL;

/// What `emq work` runs per job: the command line, the variables that
/// let an `emq` it starts reach the same server, and the guard told of its
/// process group.
pub(super) struct Command {
    pub(super) argv: Vec<String>,
    pub(super) environment: Vec<(&'static str, String)>,
    pub(super) guard: Guard,
}

/// How long a command whose job was taken from it (its lease lost, or the
/// shutdown's grace over) has from SIGTERM to SIGKILL, with its children.
/// Shorter than the worker's window for a cancelled handler (1 s), after
/// which the handler is aborted and the group killed at once.
const KILL_GRACE: Duration = Duration::from_millis(500);

/// Run the command for one job, in a process group of its own, so that
/// stopping it stops what it started too. When the job is taken away (its
/// lease lost, or shutdown's grace over), the group gets SIGTERM at once and
/// SIGKILL after [`KILL_GRACE`]; dropped, it is SIGKILLed at once. With
/// `keep_result`, its stdout is the job's result.
pub(super) async fn run_command(
    command: Arc<Command>,
    job: JobContext,
    keep_result: bool,
) -> Result<Option<Vec<u8>>, HandlerError> {
    let mut child = spawn(&command, &job, keep_result)?;
    let mut group = Group::of(&child, &command.guard);
    let stdin = child.stdin.take();
    let run = async {
        if let Some(mut stdin) = stdin {
            // A command that does not read its stdin is fine: ignore a broken pipe.
            let _ = stdin.write_all(&job.payload).await;
        }
        child.wait_with_output().await
    };
    tokio::pin!(run);
    let output = tokio::select! {
        output = &mut run => output?,
        () = job.cancelled() => {
            group.stop(run).await;
            return Err("the job was taken away: its command was stopped".into());
        }
    };
    // It ended by itself: whatever it left running is its own business.
    group.finished();
    outcome(output, keep_result)
}

/// Start `command` for `job`, in a process group of its own: its stdin
/// piped (for the payload), its stderr piped (for a failure's error), its
/// stdout piped with `keep_result`, else the worker's; the job in its
/// environment.
fn spawn(
    command: &Command,
    job: &JobContext,
    keep_result: bool,
) -> Result<tokio::process::Child, HandlerError> {
    let stdout = if keep_result { Stdio::piped() } else { Stdio::inherit() };
    let argv = &command.argv;
    let mut process = tokio::process::Command::new(&argv[0]);
    process.envs(command.environment.iter().map(|(name, value)| (name, value)));
    // The job's trace context, OpenTelemetry's environment carrier; never
    // the worker's own. With an exporter on, the context is the run's (its
    // job span, a child of the producer's); else the producer's, as it came.
    process.env_remove("TRACEPARENT").env_remove("TRACESTATE");
    #[cfg(feature = "otel")]
    let (traceparent, tracestate) = crate::otel::run_context(job);
    #[cfg(not(feature = "otel"))]
    let (traceparent, tracestate) = (
        job.traceparent().map(str::to_owned),
        job.traceparent().and_then(|_| job.headers.get("tracestate").cloned()),
    );
    if let Some(traceparent) = traceparent {
        process.env("TRACEPARENT", traceparent);
    }
    if let Some(tracestate) = tracestate {
        process.env("TRACESTATE", tracestate);
    }
    let headers = serde_json::to_string(&job.headers).map_err(|err| format!("the job's headers: {err}"))?;
    let child = process
        .args(&argv[1..])
        .env("ECHOMQ_HEADERS", headers)
        .env("ECHOMQ_QUEUE", &job.queue)
        .env("ECHOMQ_JOB_ID", job.id.as_str())
        .env("ECHOMQ_JOB_TOKEN", job.attempt.to_string())
        .env("ECHOMQ_JOB_ATTEMPT", job.attempt.to_string())
        // The payload's length, so that a command can tell a cut one.
        .env("ECHOMQ_PAYLOAD_BYTES", job.payload.len().to_string())
        .stdin(Stdio::piped())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|err| format!("cannot run {}: {err}", argv[0]))?;
    Ok(child)
}

/// What a command that ended by itself did for its job: exit 0 acks it,
/// with its stdout as the result when `keep_result` (at most
/// `MAX_RESULT` bytes); any other exit fails it with the tail of its
/// stderr as the error.
fn outcome(output: std::process::Output, keep_result: bool) -> Result<Option<Vec<u8>>, HandlerError> {
    if output.status.success() {
        if !keep_result {
            return Ok(None);
        }
        if output.stdout.len() > echomq::limits::MAX_RESULT {
            let (got, most) = (output.stdout.len(), echomq::limits::MAX_RESULT);
            return Err(format!("the command wrote {got} bytes to stdout: a result is at most {most}").into());
        }
        return Ok(Some(output.stdout));
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tail = stderr[stderr.ceil_char_boundary(stderr.len().saturating_sub(STDERR_TAIL))..].trim();
    Err(format!("{}: {tail}", output.status).into())
}

/// A command's process group (its id is the command's pid), SIGKILLed when
/// dropped before the command ended by itself, and told to the guard from
/// its start until the worker is done with it.
struct Group<'a> {
    id: Option<libc::pid_t>,
    guard: &'a Guard,
}

impl<'a> Group<'a> {
    /// The group of `child`, just spawned: told to `guard` at once, so that
    /// a worker killed from now on leaves it to the guard.
    fn of(child: &tokio::process::Child, guard: &'a Guard) -> Group<'a> {
        let id = child.id().and_then(|pid| libc::pid_t::try_from(pid).ok());
        if let Some(id) = id {
            guard.started(id);
        }
        Group { id, guard }
    }

    fn signal(&self, signal: libc::c_int) {
        if let Some(id) = self.id {
            // SAFETY: kill(2) with a negative pid signals that process group;
            // it touches no memory of ours.
            unsafe { libc::kill(-id, signal) };
        }
    }

    /// Whether a process of the group is left that has not exited: a zombie
    /// (ended, not yet reaped: its orphans wait on an init that may never
    /// reap them, in a container) runs nothing and takes no signal.
    fn alive(&self) -> bool {
        let Some(id) = self.id else { return false };
        // SAFETY: as in `signal`; signal 0 only checks that the group exists.
        if unsafe { libc::kill(-id, 0) } != 0 {
            return false;
        }
        // Where /proc tells each process's group and state (Linux), only a
        // member not yet exited counts; elsewhere, any member.
        live_members(id).unwrap_or(true)
    }

    /// SIGTERM now; SIGKILL to what is left after [`KILL_GRACE`]; `run`, the
    /// command's wait, driven meanwhile so that it is reaped.
    async fn stop<F: std::future::Future + Unpin>(mut self, mut run: F) {
        tracing::debug!(group = ?self.id, "the job was taken away: SIGTERM to its command's process group");
        self.signal(libc::SIGTERM);
        let deadline = tokio::time::Instant::now() + KILL_GRACE;
        let ended = tokio::time::timeout_at(deadline, &mut run).await.is_ok();
        while self.alive() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if self.alive() {
            let group = self.id.unwrap_or_default();
            tracing::warn!(group, "the command's process group outlived SIGTERM by {KILL_GRACE:?}: SIGKILL");
            self.signal(libc::SIGKILL);
        }
        if !ended {
            let _ = run.await;
        }
        self.finished();
    }

    /// Done with: the command ended by itself, or its group was stopped.
    fn finished(&mut self) {
        if let Some(id) = self.id.take() {
            self.guard.done(id);
        }
    }
}

/// Whether process group `group` has a member that has not exited, as
/// `/proc/<pid>/stat` says (its state, then its group: `pid (comm) S ppid
/// pgrp …`); `None` where there is no `/proc`.
fn live_members(group: libc::pid_t) -> Option<bool> {
    let entries = std::fs::read_dir("/proc").ok()?;
    let wanted = group.to_string();
    for entry in entries.flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // After the command's name, which may hold spaces and parentheses.
        let Some((_, rest)) = stat.rsplit_once(')') else { continue };
        let mut fields = rest.split_whitespace();
        let (state, _ppid, pgrp) = (fields.next(), fields.next(), fields.next());
        if pgrp == Some(wanted.as_str()) && !matches!(state, Some("Z" | "X")) {
            return Some(true);
        }
    }
    Some(false)
}

impl Drop for Group<'_> {
    fn drop(&mut self) {
        self.signal(libc::SIGKILL);
        self.finished();
    }
}
