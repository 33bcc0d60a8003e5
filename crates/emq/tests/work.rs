//! `emq work` as people run it in production (issue 31): a command that
//! cannot run refused at start, a second Ctrl-C that ends at once, SIGTSTP
//! to stop claiming, the job's headers and trace context in the command's
//! environment, `emq progress` from inside a job, a log line for each
//! job's end, and deploys that spend no attempt; and (issue 47) no command
//! left running by a worker killed with SIGKILL.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{eventually, show, signal, Emq, Scratch, Worker};
use echomq_test_support::{unique_queue, RedisServer};

/// A job's state, as `emq inspect` shows it.
fn state(emq: &Emq, id: &str) -> String {
    field(&emq.ok(&["inspect", id]), "state")
}

/// The value of `emq inspect`'s line `name`, empty when it has none.
fn field(shown: &str, name: &str) -> String {
    let line = shown.lines().find(|l| l.trim_start().starts_with(&format!("{name} "))).unwrap_or_default();
    line.trim_start()[name.len()..].trim().to_owned()
}

/// `emq work` in the background with `args`, `DIR` and `EMQ` (this `emq`)
/// set for its command, its log into `scratch`'s `log`.
fn work(emq: &Emq, args: &[&str], scratch: &Scratch) -> Worker {
    let mut all = vec!["work"];
    all.extend_from_slice(args);
    let child = emq
        .command(&all)
        .env("DIR", &scratch.0)
        .env("EMQ", env!("CARGO_BIN_EXE_emq"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(scratch.path("log")).unwrap())
        .spawn()
        .unwrap();
    Worker(child)
}

fn log(scratch: &Scratch) -> String {
    std::fs::read_to_string(scratch.path("log")).unwrap_or_default()
}

/// A typo in the command (a path that does not exist, a name not on PATH)
/// is refused at start with a usage error: the worker claims nothing, and
/// the queue's job stays pending with none of its attempts spent.
#[test]
fn a_command_that_cannot_run_is_refused_before_any_job_is_claimed() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let q = unique_queue("typo");
    let id = emq.ok(&["enqueue", &q, "x"]).trim().to_owned();
    let scratch = Scratch::new("typo");
    let not_executable = scratch.path("plain.txt");
    std::fs::write(&not_executable, "echo hi").unwrap();
    let not_executable = not_executable.display().to_string();
    for (command, said) in [
        ("./does-not-exist.sh", "does not exist"),
        ("no-such-program-emq-test", "is not found on PATH"),
        (not_executable.as_str(), "is not an executable file"),
    ] {
        let started = Instant::now();
        let output = emq.command(&["work", &q, "--", command]).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{command}: {}", show(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(command) && stderr.contains(said), "{stderr}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }
    let shown = emq.ok(&["inspect", &id]);
    assert_eq!(
        (field(&shown, "state"), field(&shown, "attempts")),
        ("pending".into(), "0".into()),
        "{shown}"
    );
}

/// With `--grace 30s`, a second Ctrl-C ends the worker within a second:
/// its command is stopped, its job released back to pending and named in
/// the log. SIGHUP (its terminal closed) stops it as SIGINT and SIGTERM do.
#[test]
fn a_second_sigint_ends_at_once_and_releases_the_job() {
    for sig in ["INT", "HUP"] {
        a_second_signal_ends_at_once(sig);
    }
}

/// Under `nohup` (SIGHUP ignored at the start), SIGHUP leaves the worker
/// running, as asked; SIGTERM still stops it.
#[test]
fn nohup_keeps_the_worker_through_a_hangup() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let scratch = Scratch::new("nohup");
    let q = unique_queue("nohup");
    let emq_path = env!("CARGO_BIN_EXE_emq");
    let log = std::fs::File::create(scratch.path("log")).unwrap();
    let mut worker = std::process::Command::new("sh")
        .args(["-c", &format!("trap '' HUP; exec {emq_path} work {q} -- true")])
        .env("ECHOMQ_URL", server.url())
        .env("ECHOMQ_VIA", "lua")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let read = || std::fs::read_to_string(scratch.path("log")).unwrap_or_default();
    eventually("the worker started", || read().contains("emq work started"));
    signal(worker.id(), "HUP");
    let id = emq.ok(&["enqueue", &q, "after the hangup"]).trim().to_owned();
    eventually("the job is done by the worker that ignored SIGHUP", || state(&emq, &id) == "done");
    assert!(worker.try_wait().unwrap().is_none(), "still running: {}", read());
    signal(worker.id(), "TERM");
    assert!(worker.wait().unwrap().success(), "{}", read());
}

fn a_second_signal_ends_at_once(sig: &str) {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let scratch = Scratch::new("twice");
    let q = unique_queue("twice");
    let id = emq.ok(&["enqueue", &q, "x"]).trim().to_owned();
    let script = r#"cat >/dev/null; echo $$ > "$DIR/pid"; sleep 60"#;
    let mut worker = work(&emq, &[&q, "--grace", "30s", "--", "sh", "-c", script], &scratch);
    eventually("the command runs", || !scratch.lines("pid").is_empty());

    signal(worker.id(), sig);
    eventually("the first signal is said", || log(&scratch).contains("stopping: no new jobs"));
    assert!(log(&scratch).contains(&format!("SIG{sig}")), "{}", log(&scratch));
    let second = Instant::now();
    signal(worker.id(), sig);
    let status = worker.0.wait().unwrap();
    let took = second.elapsed();
    assert!(status.success(), "{status:?}: {}", log(&scratch));
    assert!(took < Duration::from_secs(1), "ended {took:.1?} after the second SIGINT");
    assert!(common::gone(&scratch.lines("pid")[0]), "the command is stopped");
    assert_eq!(state(&emq, &id), "pending", "released");
    let log = log(&scratch);
    let released = log.lines().find(|line| line.contains("job released")).unwrap_or_else(|| panic!("{log}"));
    assert!(released.contains(&id), "{released}");
}

/// The command's environment holds the job's headers as JSON, and its trace
/// context as OpenTelemetry's carrier reads it; a job with none gets no
/// TRACEPARENT, not even the worker's own.
#[test]
fn the_command_gets_the_headers_and_the_trace_context() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let scratch = Scratch::new("headers");
    let q = unique_queue("headers");
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let traced = emq
        .ok(&[
            "enqueue",
            &q,
            "x",
            "--header",
            "tenant=acme",
            "--header",
            &format!("traceparent={traceparent}"),
            "--header",
            "tracestate=vendor=1",
        ])
        .trim()
        .to_owned();
    let plain = emq.ok(&["enqueue", &q, "y"]).trim().to_owned();
    let script = r#"cat >/dev/null; printf '%s\n%s\n%s\n' "$ECHOMQ_HEADERS" "${TRACEPARENT-none}" "${TRACESTATE-none}" > "$DIR/$ECHOMQ_JOB_ID""#;
    let mut command = emq.command(&["work", &q, "--", "sh", "-c", script]);
    command
        .env("DIR", &scratch.0)
        .env("TRACEPARENT", "00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01");
    let mut worker = Worker(command.stdin(Stdio::null()).stderr(Stdio::null()).spawn().unwrap());
    eventually("both jobs ran", || scratch.lines(&traced).len() == 3 && scratch.lines(&plain).len() == 3);
    assert!(worker.stop());

    let lines = scratch.lines(&traced);
    let headers: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    let expected =
        serde_json::json!({"tenant": "acme", "traceparent": traceparent, "tracestate": "vendor=1"});
    assert_eq!(headers, expected);
    assert_eq!(lines[1..], [traceparent, "vendor=1"]);
    assert_eq!(scratch.lines(&plain), ["{}", "none", "none"]);
}

/// `emq progress VALUE`, run by a job's command, reports what `emq inspect`
/// then shows; outside a job it is a usage error, and nothing is sent.
#[test]
fn emq_progress_from_inside_a_job_is_seen_by_inspect() {
    for (server, via) in [(RedisServer::start(), "lua"), (RedisServer::start_with_module(), "native")] {
        let emq = Emq { url: server.url(), via };
        let scratch = Scratch::new("progress");
        let q = unique_queue("progress");
        let id = emq.ok(&["enqueue", &q, "x"]).trim().to_owned();
        let script = r#"cat >/dev/null; "$EMQ" progress 42% && touch "$DIR/reported""#;
        let mut worker = work(&emq, &[&q, "--", "sh", "-c", script], &scratch);
        eventually("the job is done", || scratch.path("reported").exists() && state(&emq, &id) == "done");
        assert!(worker.stop());
        assert_eq!(field(&emq.ok(&["inspect", &id]), "progress"), "42%", "{via}");
    }

    let outside = std::process::Command::new(env!("CARGO_BIN_EXE_emq"))
        .args(["--url", "redis://127.0.0.1:1/", "progress", "50%"])
        .env_remove("ECHOMQ_JOB_ID")
        .output()
        .unwrap();
    assert_eq!(outside.status.code(), Some(2), "{}", show(&outside));
    assert!(String::from_utf8_lossy(&outside.stderr).contains("ECHOMQ_"), "{}", show(&outside));
}

/// Each job's end is a log line naming it: INFO with its run time when done,
/// WARN when dead (so that `-q` still shows it); as JSON fields too.
#[test]
fn a_done_job_and_a_dead_one_are_each_a_log_line() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let scratch = Scratch::new("ends");
    let q = unique_queue("ends");
    let done = emq.ok(&["enqueue", &q, "ok"]).trim().to_owned();
    let dead = emq.ok(&["enqueue", &q, "fail", "--attempts", "1"]).trim().to_owned();
    let script = r#"test "$(cat)" = ok"#;
    let mut worker = work(&emq, &["--log-format", "json", &q, "--", "sh", "-c", script], &scratch);
    eventually("both jobs ended", || state(&emq, &done) == "done" && state(&emq, &dead) == "dead");
    assert!(worker.stop());
    let lines: Vec<serde_json::Value> =
        log(&scratch).lines().map(|line| serde_json::from_str(line).expect("a JSON line")).collect();
    let said = |message: &str, id: &str| {
        lines
            .iter()
            .find(|line| line["fields"]["message"] == message && line["span"]["id"] == id)
            .unwrap_or_else(|| panic!("no {message:?} for {id}: {lines:?}"))
            .clone()
    };
    let finished = said("job done", &done);
    assert_eq!(finished["level"], "INFO");
    assert!(finished["fields"]["run_ms"].is_u64(), "{finished}");
    assert_eq!(
        said("job dead: out of attempts (`emq retry` sends it back to pending)", &dead)["level"],
        "WARN"
    );

    let id = emq.ok(&["enqueue", &q, "fail", "--attempts", "1"]).trim().to_owned();
    let mut quiet = work(&emq, &["-q", &q, "--", "sh", "-c", script], &scratch);
    eventually("the job is dead", || state(&emq, &id) == "dead");
    eventually("its death is said", || {
        log(&scratch).lines().any(|l| l.contains("job dead") && l.contains(&id))
    });
    assert!(quiet.stop());
}

/// SIGTSTP stops claiming: the running job runs to its end (past any grace),
/// a job enqueued after it stays pending, and SIGTERM then stops the worker.
#[test]
fn sigtstp_stops_claiming_and_lets_running_jobs_finish() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let scratch = Scratch::new("quiet");
    let q = unique_queue("quiet");
    let first = emq.ok(&["enqueue", &q, "x"]).trim().to_owned();
    let script =
        r#"cat >/dev/null; echo "$ECHOMQ_JOB_ID" >> "$DIR/ran"; until [ -e "$DIR/go" ]; do sleep 0.05; done"#;
    let mut worker = work(&emq, &[&q, "--grace", "1s", "--", "sh", "-c", script], &scratch);
    eventually("the first job runs", || scratch.lines("ran").len() == 1);
    signal(worker.id(), "TSTP");
    eventually("quiet is said", || log(&scratch).contains("quiet: no new jobs"));
    let second = emq.ok(&["enqueue", &q, "y"]).trim().to_owned();
    // Longer than the grace: a quiet worker counts none.
    std::thread::sleep(Duration::from_millis(1500));
    std::fs::write(scratch.path("go"), "").unwrap();
    eventually("the first job is done", || state(&emq, &first) == "done");
    // Past an idle claim's wait (1 s): a claiming worker would have taken it.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(state(&emq, &second), "pending");
    assert_eq!(scratch.lines("ran"), [first]);
    assert!(worker.0.try_wait().unwrap().is_none(), "a quiet worker waits for SIGTERM");
    assert!(worker.stop());
}

/// A graceful shutdown gives the job back without spending its attempt
/// (RELEASE with REFUND): a job of `--attempts 2` interrupted by two
/// deploys still has both its attempts, so one real failure retries it and
/// it then runs, on the scripts and on the module alike.
#[test]
fn deploys_spend_no_attempt_of_a_job() {
    for (server, via) in [(RedisServer::start(), "lua"), (RedisServer::start_with_module(), "native")] {
        let emq = Emq { url: server.url(), via };
        let scratch = Scratch::new("deploys");
        let q = unique_queue("deploys");
        let id = emq.ok(&["enqueue", &q, "x", "--attempts", "2", "--backoff", "1ms"]).trim().to_owned();
        for deploy in 1..=2 {
            let _ = std::fs::remove_file(scratch.path("pid"));
            let script = r#"cat >/dev/null; echo $$ > "$DIR/pid"; sleep 60"#;
            let mut worker = work(&emq, &[&q, "--grace", "1s", "--", "sh", "-c", script], &scratch);
            eventually("the command runs", || !scratch.lines("pid").is_empty());
            signal(worker.id(), "TERM");
            let status = worker.0.wait().unwrap();
            assert!(status.success(), "{via}, deploy {deploy}: {status:?}: {}", log(&scratch));
            let shown = emq.ok(&["inspect", &id]);
            assert_eq!(
                (field(&shown, "state"), field(&shown, "attempts")),
                ("pending".into(), deploy.to_string()),
                "{via}, deploy {deploy}: released, the token advanced: {shown}"
            );
        }
        // The first real run fails, the second succeeds.
        let script = r#"cat >/dev/null; [ -e "$DIR/failed" ] || { touch "$DIR/failed"; exit 1; }"#;
        let mut worker = work(&emq, &[&q, "--", "sh", "-c", script], &scratch);
        eventually("the job is done or dead", || matches!(state(&emq, &id).as_str(), "done" | "dead"));
        signal(worker.id(), "TERM");
        assert!(worker.0.wait().unwrap().success(), "{via}: {}", log(&scratch));
        let shown = emq.ok(&["inspect", &id]);
        assert_eq!(field(&shown, "state"), "done", "{via}: one failure after two deploys: {shown}");
    }
}

/// A worker SIGKILLed (`kill -9`, the OOM killer) takes its command with
/// it, and all the command started: nothing goes on running a job whose
/// lease will run out and which another worker will then run again. The
/// command starts a child, and a subshell in the background that starts
/// one of its own; all four are gone within 2 s of the kill. The command
/// that ran before it and ended is not among the groups killed.
#[cfg(target_os = "linux")]
#[test]
fn a_sigkilled_worker_leaves_no_command_running() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let scratch = Scratch::new("sigkill");
    let q = unique_queue("sigkill");
    let ends = emq.ok(&["enqueue", &q, "ends"]).trim().to_owned();
    emq.ok(&["enqueue", &q, "runs"]);
    let script = r#"[ "$(cat)" = ends ] && exit 0
echo $$ >> "$DIR/pids"
sleep 1000 & echo $! >> "$DIR/pids"
( sleep 1000 & echo $! >> "$DIR/pids"; wait ) & echo $! >> "$DIR/pids"
wait"#;
    let mut worker = work(&emq, &[&q, "--concurrency", "1", "--", "sh", "-c", script], &scratch);
    let running = |pids: &[String]| pids.iter().filter(|pid| !common::gone(pid)).cloned().collect::<Vec<_>>();
    eventually("the command and what it started run", || {
        let pids = scratch.lines("pids");
        pids.len() == 4 && running(&pids).len() == 4
    });
    let pids = scratch.lines("pids");
    // One at a time, in order: the command that ended ran first.
    eventually("the first job is done", || state(&emq, &ends) == "done");

    let killed = Instant::now();
    worker.0.kill().unwrap(); // SIGKILL
    worker.0.wait().unwrap();
    while !running(&pids).is_empty() && killed.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let left = running(&pids);
    assert!(
        left.is_empty(),
        "{left:?} of {pids:?} still run {:.1?} after the kill: {}",
        killed.elapsed(),
        log(&scratch)
    );
    // One group: the running command's (its pid, written first), not the ended one's.
    let said = format!("SIGKILL to their process groups worker={} groups={{{}}}", worker.id(), pids[0]);
    eventually("the kill is said", || log(&scratch).contains(&said));
}
