//! The README's main command: the demo runs with no server anywhere and ends
//! with its summary. Its jobs' outcomes are fixed by their numbers, so the
//! counts are exact: of 500 jobs, 20 fail once (one of them, job 499, fails
//! every time and dies after 3 attempts).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn the_demo_runs_in_process_and_prints_its_summary() {
    let output = Command::new(env!("CARGO_BIN_EXE_emq"))
        .args(["demo", "--jobs", "500", "--concurrency", "7"])
        .output()
        .expect("run emq");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("embedded executor"), "{stdout}");
    for line in [
        "processed  499",
        "retried    21",
        "dead       1",
        "done 499, dead 1, pending 0, active 0, delayed 0",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in:\n{stdout}");
    }
    assert!(stdout.contains("jobs/s") && stdout.contains("p99"), "{stdout}");
    // Its failures are by design: no log line about them.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("WARN") && !stderr.contains("job"), "{stderr}");
}

/// On a Redis, `--via` picks the executor (here Lua, though the module is
/// loaded), the summary names it, and the demo's queue is deleted at the end.
#[test]
fn the_demo_on_redis_names_its_executor_and_cleans_up() {
    let server = echomq_test_support::RedisServer::start_with(echomq_test_support::ServerOptions {
        module: Some(echomq_test_support::module_path()),
        ..echomq_test_support::ServerOptions::default()
    });
    let output = Command::new(env!("CARGO_BIN_EXE_emq"))
        .args(["demo", "--jobs", "200", "--redis", &server.url(), "--via", "lua"])
        .output()
        .expect("run emq");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("Redis (lua) executor"), "{stdout}");
    assert!(stdout.contains("done 200, dead 0"), "{stdout}");
    assert!(stdout.contains("is deleted from the server"), "{stdout}");
    let mut conn = server.client().get_connection().unwrap();
    let keys: Vec<String> = redis::cmd("KEYS").arg("emq:*").query(&mut conn).unwrap();
    assert!(keys.is_empty(), "the demo's keys stayed: {keys:?}");
    let claims: String = redis::cmd("INFO").arg("commandstats").query(&mut conn).unwrap();
    assert!(!claims.contains("cmdstat_emq.claim"), "the module ran claims: {claims}");
}

/// More jobs than the default retention keeps done (10,000): the demo
/// counts every finished job, so it must keep them all, or it waits for ever
/// (it once did, at 10,040 of 20,000).
#[test]
fn the_demo_finishes_past_the_default_retention() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_emq"))
        .args(["demo", "--jobs", "10500"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("run emq");
    let deadline = Instant::now() + Duration::from_secs(300);
    while child.try_wait().expect("wait for the demo").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the demo of 10,500 jobs did not end in 5 minutes");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().expect("the demo's output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("pending 0, active 0, delayed 0"), "{stdout}");
}

#[test]
fn help_lists_every_command() {
    let output = Command::new(env!("CARGO_BIN_EXE_emq")).arg("--help").output().expect("run emq");
    let stdout = String::from_utf8_lossy(&output.stdout);
    for command in [
        "demo",
        "enqueue",
        "work",
        "inspect",
        "list",
        "stats",
        "queues",
        "retry",
        "cancel",
        "purge",
        "dashboard",
    ] {
        assert!(stdout.lines().any(|l| l.trim_start().starts_with(command)), "{command} missing:\n{stdout}");
    }
}
