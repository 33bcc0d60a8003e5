//! How `emq` reaches a server: `rediss://` against a redis-server with TLS
//! (certificates made by openssl for the test, trusted through
//! `--tls-ca-cert`), and an ACL user's name and password in the URL.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};

use echomq_test_support::{unique_queue, RedisServer, ServerOptions};

fn emq(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_emq")).args(args).output().expect("run emq")
}

fn openssl(dir: &Path, args: &[&str]) {
    let status = Command::new("openssl").args(args).current_dir(dir).output().expect("openssl");
    assert!(status.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&status.stderr));
}

/// A CA and a server certificate it signed, for 127.0.0.1.
fn certificates(dir: &Path) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "1",
            "-subj",
            "/CN=EchoMQ test CA",
        ],
    );
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
    );
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n").unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "1",
            "-extfile",
            "san.ext",
        ],
    );
}

#[test]
fn rediss_with_the_servers_ca() {
    let dir = std::env::temp_dir().join(format!("emq-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    certificates(&dir);
    let tls_port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    let file = |name: &str| dir.join(name).display().to_string();
    let args = [
        "--tls-port",
        &tls_port,
        "--tls-cert-file",
        &file("server.pem"),
        "--tls-key-file",
        &file("server.key"),
        "--tls-ca-cert-file",
        &file("ca.pem"),
        "--tls-auth-clients",
        "no",
    ];
    let _server =
        RedisServer::start_with(ServerOptions { module: None, args: args.map(String::from).to_vec() });
    let url = format!("rediss://127.0.0.1:{tls_port}/");
    let queue = unique_queue("tls");

    let enqueued = emq(&["--url", &url, "--tls-ca-cert", &file("ca.pem"), "enqueue", &queue, "over TLS"]);
    assert!(enqueued.status.success(), "{}", String::from_utf8_lossy(&enqueued.stderr));
    let stats = emq(&["--url", &url, "--tls-ca-cert", &file("ca.pem"), "stats", &queue]);
    let out = String::from_utf8_lossy(&stats.stdout);
    assert!(out.lines().any(|l| l.starts_with(&queue) && l.split_whitespace().nth(1) == Some("1")), "{out}");

    // Without the CA, the server's certificate is not trusted: a clear failure.
    let untrusted = emq(&["--url", &url, "stats", &queue]);
    assert!(!untrusted.status.success());
    assert!(String::from_utf8_lossy(&untrusted.stderr).contains("emq:"), "an error message");
    let _ = std::fs::remove_dir_all(dir);
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
    assert!(!refused.status.success());
    assert!(!stderr.contains("wrong-pass") && !stderr.contains("s3cret"), "a secret leaked: {stderr}");
}

#[test]
fn help_never_shows_the_url_from_the_environment() {
    let free = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("redis://worker:h3lp-secret@127.0.0.1:{free}/");
    for args in
        [&["--help"][..], &["stats", "--help"], &["work", "--help"], &["dashboard", "--help"], &["stats"]]
    {
        let out =
            Command::new(env!("CARGO_BIN_EXE_emq")).args(args).env("ECHOMQ_URL", &url).output().unwrap();
        let shown =
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(!shown.contains("h3lp-secret"), "emq {args:?} shows the password: {shown}");
        assert!(!shown.is_empty(), "emq {args:?} says something");
    }
}
