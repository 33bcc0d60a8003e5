//! Input `emq` cannot act on is refused before anything is sent (issue 31):
//! a usage error, exit 2, in the user's words (never a server's code or a
//! parser's internals), and the server untouched. Messages about the server
//! itself (not Redis, a host that does not resolve) are in words too.

mod common;

use std::io::Write;
use std::net::TcpListener;
use std::process::{Command, Stdio};

use common::{client, show, Emq};
use echomq_test_support::{unique_queue, RedisServer};

fn emq(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_emq")).args(args).output().unwrap()
}

fn keys(url: &str) -> Vec<String> {
    let mut conn = client(url).get_connection().unwrap();
    redis::cmd("KEYS").arg("*").query(&mut conn).unwrap()
}

#[test]
fn bad_input_is_a_usage_error_and_sends_nothing() {
    let server = RedisServer::start();
    let url = server.url();
    let q = unique_queue("inputs");
    let cases: [(&[&str], &str); 6] = [
        (&["--url", "http://127.0.0.1:6379/", "stats"], "--url is not a Redis URL (http:// is not one)"),
        (&["--url", &url, "limit", &q, "--rate", "5/0s"], "\"0s\" is not a period"),
        (&["--url", &url, "limit", &q], "--rate <RATE>|--concurrency <CONCURRENCY>"),
        (&["--url", &url, "enqueue", &q, "x", "--attempts", "0"], "0 is not in 1.."),
        (&["--url", &url, "schedule", "add", &q, "beat", "x", "--every", "1ms"], "at least 1s"),
        (&["--url", &url, "schedule", "add", &q, "beat", "x", "--every", "1500us"], "whole ms"),
    ];
    for (args, said) in cases {
        let output = emq(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", show(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(said), "{args:?}: {stderr}");
        assert!(!stderr.contains("EMQ") && !stderr.contains("InvalidClientConfig"), "{stderr}");
    }
    assert_eq!(keys(&url), Vec::<String>::new(), "nothing was written");

    // A password in a bad URL is not echoed.
    let output = emq(&["--url", "http://user:s3cret@127.0.0.1:6379/", "stats"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(!String::from_utf8_lossy(&output.stderr).contains("s3cret"), "{}", show(&output));
}

#[test]
fn blank_lines_in_json_lines_are_skipped() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let q = unique_queue("blank");
    let mut child = emq
        .command(&["enqueue", &q, "--jsonl"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"{\"a\":1}\n\n  \n{\"b\":2}\n\n").unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", show(&output));
    assert_eq!(String::from_utf8_lossy(&output.stdout).lines().count(), 2, "{}", show(&output));
}

/// Something else on the port, or a host that does not resolve: said as such.
#[test]
fn a_server_that_is_not_redis_or_not_there_is_said_in_words() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let http = std::thread::spawn({
        let done = done.clone();
        move || {
            // Answers each connection as a web server would, until told or 30 s.
            let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while !done.load(std::sync::atomic::Ordering::SeqCst) && std::time::Instant::now() < until {
                match listener.accept() {
                    Ok((mut conn, _)) => {
                        let _ = conn.write_all(b"HTTP/1.0 400 Bad Request\r\n\r\n<html></html>");
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(5)),
                }
            }
        }
    });
    let output = emq(&["--url", &format!("redis://127.0.0.1:{port}/"), "stats"]);
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    http.join().unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("did not answer as Redis does") && !stderr.contains("Unexpected"), "{stderr}");

    let output = emq(&["--url", "redis://no-such-host.invalid:6379/", "stats"]);
    assert_eq!(output.status.code(), Some(3), "{}", show(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("is not known (its name does not resolve)"), "{stderr}");
}

/// `--help` shows a command's own flags apart from the global ones.
#[test]
fn help_puts_the_global_flags_apart() {
    let output = emq(&["list", "--help"]);
    let help = String::from_utf8_lossy(&output.stdout);
    let (own, global) = help.split_once("Global options:").unwrap_or_else(|| panic!("{help}"));
    assert!(own.contains("--limit") && !own.contains("--url"), "{help}");
    assert!(global.contains("--url") && global.contains("--log-format"), "{help}");
    assert!(help.contains("Usage: emq list [OPTIONS] <QUEUE> <STATE>"), "{help}");
}
