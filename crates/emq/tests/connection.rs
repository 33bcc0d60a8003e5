//! How `emq` reaches a server: `rediss://` against a redis-server that speaks
//! only TLS (its CA made for the test, trusted through `--tls-ca-cert`), and
//! an ACL user's name and password in the URL.

use std::process::{Command, Output};

use echomq_test_support::{unique_queue, RedisServer, ServerOptions};

fn emq(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_emq")).args(args).output().expect("run emq")
}

#[test]
fn rediss_with_the_servers_ca() {
    let server = RedisServer::start_with(ServerOptions { tls: true, ..ServerOptions::default() });
    let (url, ca) = (server.url(), server.ca_cert().display().to_string());
    let queue = unique_queue("tls");

    let enqueued = emq(&["--url", &url, "--tls-ca-cert", &ca, "enqueue", &queue, "over TLS"]);
    assert!(enqueued.status.success(), "{}", String::from_utf8_lossy(&enqueued.stderr));
    let stats = emq(&["--url", &url, "--tls-ca-cert", &ca, "stats", &queue]);
    let out = String::from_utf8_lossy(&stats.stdout);
    assert!(out.lines().any(|l| l.starts_with(&queue) && l.split_whitespace().nth(1) == Some("1")), "{out}");

    // Without the CA, the server's certificate is not trusted: a clear failure.
    let untrusted = emq(&["--url", &url, "stats", &queue]);
    assert!(!untrusted.status.success());
    assert!(String::from_utf8_lossy(&untrusted.stderr).contains("emq:"), "an error message");
    // A worker does not wait for a server it does not trust: it ends at once
    // (the time-out only bounds a wrong wait).
    let worker = emq(&["--url", &url, "work", &queue, "--connect-timeout", "60s", "--", "true"]);
    let said = String::from_utf8_lossy(&worker.stderr);
    assert!(!worker.status.success() && !said.contains("waiting for the server"), "{said}");
}

#[test]
fn an_acl_user_in_the_url_and_no_password_in_errors() {
    let server = RedisServer::start();
    let mut conn = server.client().get_connection().unwrap();
    // The recipe: a user limited to EchoMQ's keys and the commands it runs.
    let _: () = redis::cmd("ACL")
        .arg(&[
            "SETUSER",
            "worker",
            "on",
            ">s3cret-pass",
            "~emq:*",
            "&*",
            "-@all",
            "+@read",
            "+@write",
            "+evalsha",
            "+evalsha_ro",
            "+eval",
            "+script|load",
            "+time",
            "+ping",
            "+command|info",
            "+config|get",
            "+scan",
            "+info",
        ])
        .query(&mut conn)
        .unwrap();
    let queue = unique_queue("acl");
    let url = format!("redis://worker:s3cret-pass@127.0.0.1:{}/", server.port());
    let enqueued = emq(&["--url", &url, "enqueue", &queue, "as worker"]);
    assert!(enqueued.status.success(), "{}", String::from_utf8_lossy(&enqueued.stderr));
    let stats = emq(&["--url", &url, "stats", &queue]);
    assert!(stats.status.success(), "{}", String::from_utf8_lossy(&stats.stderr));

    let wrong = format!("redis://worker:wrong-pass@127.0.0.1:{}/", server.port());
    let refused = emq(&["--url", &wrong, "stats", &queue]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(5), "refused as it is: {stderr}");
    assert!(!stderr.contains("wrong-pass") && !stderr.contains("s3cret"), "a secret leaked: {stderr}");
    // Nor for one that refuses its password: a worker ends at once, an enqueue is refused (exit 5).
    let worker = emq(&["--url", &wrong, "work", &queue, "--connect-timeout", "60s", "--", "true"]);
    let said = String::from_utf8_lossy(&worker.stderr);
    assert!(worker.status.code() == Some(5) && !said.contains("waiting for the server"), "refused: {said}");
    assert!(!said.contains("wrong-pass"), "a secret leaked: {said}");
    let refused = emq(&["--url", &wrong, "enqueue", &queue, "x"]);
    assert_eq!(refused.status.code(), Some(5), "{}", String::from_utf8_lossy(&refused.stderr));
}

/// Every command says with its exit code what its failure did, as enqueue
/// does: 3 when the server could not be reached (nothing was done: run it
/// again later), whether it reads or writes; 5 when the server refused it
/// (above); 1 for the rest.
#[test]
fn a_command_that_cannot_reach_the_server_exits_3() {
    let url = format!("redis://127.0.0.1:{}/", echomq_test_support::free_port());
    for args in [&["stats"][..], &["list", "q", "pending"], &["queues"], &["pause", "q"], &["config", "q"]] {
        let out = emq(&[&["--url", &url][..], args].concat());
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {said}");
        assert!(said.contains("refused the connection"), "{args:?}: {said}");
    }
}

#[test]
fn help_never_shows_the_url_or_the_dashboard_token_from_the_environment() {
    let free = echomq_test_support::free_port();
    let url = format!("redis://worker:h3lp-secret@127.0.0.1:{free}/");
    for args in
        [&["--help"][..], &["stats", "--help"], &["work", "--help"], &["dashboard", "--help"], &["stats"]]
    {
        let out = Command::new(env!("CARGO_BIN_EXE_emq"))
            .args(args)
            .env("ECHOMQ_URL", &url)
            .env("ECHOMQ_DASHBOARD_TOKEN", "t0ken-secret")
            .output()
            .unwrap();
        let shown =
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(!shown.contains("h3lp-secret"), "emq {args:?} shows the password: {shown}");
        assert!(!shown.contains("t0ken-secret"), "emq {args:?} shows the dashboard's token: {shown}");
        assert!(!shown.is_empty(), "emq {args:?} says something");
    }
}

/// A command that cannot reach its server says which one, in an operator's
/// words, and never the password its URL holds.
#[test]
fn an_unreachable_server_is_named_without_its_password() {
    let port = echomq_test_support::free_port();
    let url = format!("redis://worker:s3cret-pass@127.0.0.1:{port}/");
    for command in [&["stats"][..], &["list", "some-queue", "dead"], &["queues"]] {
        let out = emq(&[&["--url", url.as_str()][..], command].concat());
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{command:?}: {said}");
        let named = format!("emq: 127.0.0.1:{port}: the server refused the connection");
        assert!(said.contains(&named), "{command:?}: {said}");
        assert!(!said.contains("s3cret"), "a secret leaked: {said}");
    }
}
