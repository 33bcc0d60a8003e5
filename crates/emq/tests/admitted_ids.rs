//! The case that found it (issue 12): a speaker in another language enqueues
//! `JOBX` and `JOB-not-a-ulid`, which the server admits (PROTOCOL.md §1).
//! `emq work` runs them, and `emq inspect`, `retry` and `cancel` take them,
//! on Lua and on Native. (`emq work` once claimed them again and again
//! without running them until they died, and the rest refused the ids.)

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use echomq_test_support::{module_path, unique_queue, RedisServer, ServerOptions};

fn emq(url: &str, via: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_emq")).args(["--url", url, "--via", via]).args(args).output().unwrap()
}

fn ok(url: &str, via: &str, args: &[&str]) -> String {
    let output = emq(url, via, args);
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "emq {args:?}: {text}\n{}", String::from_utf8_lossy(&output.stderr));
    text
}

#[test]
fn emq_runs_inspects_retries_and_cancels_a_foreign_speakers_ids() {
    let server =
        RedisServer::start_with(ServerOptions { module: Some(module_path()), ..ServerOptions::default() });
    let mut conn = server.client().get_connection().unwrap();
    for via in ["lua", "native"] {
        let q = unique_queue("foreign");
        let prefix = format!("emq:{{{q}}}:");
        for id in ["JOBX", "JOB-not-a-ulid"] {
            let admitted: i64 = redis::cmd("EMQ.ENQUEUE")
                .arg(2)
                .arg(format!("{prefix}job:{id}"))
                .arg(format!("{prefix}pending"))
                .arg(id)
                .arg("sloppy")
                .query(&mut conn)
                .unwrap();
            assert_eq!(admitted, 1);
        }
        let url = server.url();
        let mut worker = Command::new(env!("CARGO_BIN_EXE_emq"))
            .args(["--url", &url, "--via", via, "work", &q, "--lease", "1s", "--max-attempts", "2"])
            .args(["--", "sh", "-c", "cat >/dev/null; echo ran"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while !ok(&url, via, &["inspect", "JOBX", "--queue", &q]).contains("state     done")
            || !ok(&url, via, &["inspect", "JOB-not-a-ulid", "--queue", &q]).contains("state     done")
        {
            assert!(Instant::now() < deadline, "{via}: the jobs were not run");
            std::thread::sleep(Duration::from_millis(50));
        }
        worker.kill().unwrap();
        worker.wait().unwrap();
        let inspected = ok(&url, via, &["inspect", "JOBX", "--queue", &q]);
        assert!(
            inspected.contains(&format!("JOBX in {q}")) && inspected.contains("attempts  1"),
            "{inspected}"
        );

        // A dead one goes back by hand, then out of the flow.
        let _: () = redis::pipe()
            .hset_multiple(
                format!("{prefix}job:JOB:dead"),
                &[("state", "dead"), ("attempts", "2"), ("payload", "p")],
            )
            .zadd(format!("{prefix}dead"), "JOB:dead", 5)
            .query(&mut conn)
            .unwrap();
        assert!(ok(&url, via, &["retry", "JOB:dead", "--queue", &q]).contains("retried JOB:dead"));
        assert!(ok(&url, via, &["cancel", "JOB:dead", "--queue", &q]).contains("cancelled JOB:dead"));
        assert!(ok(&url, via, &["inspect", "JOB:dead", "--queue", &q]).contains("state     cancelled"));
        // What the kind gate refuses, emq refuses before sending.
        let refused = emq(&url, via, &["inspect", "XYZ"]);
        assert!(
            !refused.status.success() && String::from_utf8_lossy(&refused.stderr).contains("invalid job id")
        );
    }
}
