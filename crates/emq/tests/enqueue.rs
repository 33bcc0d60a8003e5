//! `emq enqueue` when things go wrong (issue 13, finding 6): each failure
//! says what was done and what is safe next, with an exit code of its own
//! (3 not enqueued, 4 maybe enqueued, 5 refused); and many jobs at once, as
//! JSON lines on stdin, one id each out.

mod common;

use std::io::Write;
use std::process::{Output, Stdio};

use common::{client, eventually, Emq};
use echomq_test_support::{unique_queue, RedisServer, ServerOptions};

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `emq enqueue <queue> --jsonl` with `lines` on stdin.
fn jsonl(emq: &Emq, queue: &str, lines: &str) -> Output {
    let mut child = emq
        .command(&["enqueue", queue, "--jsonl"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run emq enqueue");
    child.stdin.take().unwrap().write_all(lines.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn pending(emq: &Emq, queue: &str) -> u64 {
    let out = emq.ok(&["stats", queue]);
    let row = out.lines().find(|l| l.starts_with(queue)).unwrap_or_else(|| panic!("{out}"));
    row.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn a_server_that_is_down_means_not_enqueued() {
    let mut server = RedisServer::start();
    let url = server.url();
    server.kill();
    let emq = Emq { url, via: "lua" };
    let q = unique_queue("down");
    let output = emq.command(&["enqueue", &q, "x"]).output().unwrap();
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let said = stderr(&output);
    assert!(said.contains("not enqueued") && said.contains("refused the connection"), "{said}");
    assert!(said.contains("enqueuing again is safe"), "{said}");
    let output = jsonl(&emq, &q, "1\n2\n");
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert!(output.stdout.is_empty());
}

/// A server loading its data (a `DEBUG RELOAD`, slowed to seconds by
/// `key-load-delay`) answers LOADING: not enqueued, said in words.
#[test]
fn a_server_loading_its_data_means_not_enqueued() {
    let args = [
        "--enable-debug-command",
        "local",
        "--loading-process-events-interval-bytes",
        "1024",
        "--key-load-delay",
        "500",
    ];
    let server = RedisServer::start_with(ServerOptions {
        args: args.map(String::from).to_vec(),
        ..ServerOptions::default()
    });
    let emq = Emq { url: server.url(), via: "lua" };
    let mut admin = client(&server.url()).get_connection().unwrap();
    let _: () = redis::cmd("DEBUG").arg(&["POPULATE", "20000"]).query(&mut admin).unwrap();
    // About ten seconds of loading; the server is killed before it is done.
    let reload = std::thread::spawn(move || redis::cmd("DEBUG").arg("RELOAD").query::<()>(&mut admin));
    eventually("the server is loading", || {
        let mut conn = client(&emq.url).get_connection().unwrap();
        let info: String = redis::cmd("INFO").arg("persistence").query(&mut conn).unwrap();
        info.contains("loading:1")
    });
    let q = unique_queue("loading");
    let output = emq.command(&["enqueue", &q, "x"]).output().unwrap();
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(3), "{said}");
    assert!(said.contains("not enqueued: the server is loading its data"), "{said}");
    drop(server);
    let _ = reload.join();
}

/// A server at its `maxmemory` (with `noeviction`, as a job store must run)
/// refuses writes for now: not enqueued, said in words, and safe to try
/// again once memory is freed; not "refused for good".
#[test]
fn a_full_server_means_not_enqueued() {
    let full = ServerOptions {
        args: ["--maxmemory", "1", "--maxmemory-policy", "noeviction"].map(String::from).to_vec(),
        ..ServerOptions::default()
    };
    let with_module = ServerOptions { module: Some(echomq_test_support::module_path()), ..full.clone() };
    for (options, via) in [(full, "lua"), (with_module, "native")] {
        let server = RedisServer::start_with(options);
        let emq = Emq { url: server.url(), via };
        let q = unique_queue("full");
        let output = emq.command(&["enqueue", &q, "x"]).output().unwrap();
        let said = stderr(&output);
        assert_eq!(output.status.code(), Some(3), "{via}: {said}");
        assert!(said.contains("not enqueued: the server is full (maxmemory)"), "{via}: {said}");
        let output = jsonl(&emq, &q, "1\n2\n");
        assert_eq!(output.status.code(), Some(3), "{via}: {}", stderr(&output));
        let mut admin = client(&server.url()).get_connection().unwrap();
        let () = redis::cmd("CONFIG").arg(&["SET", "maxmemory", "0"]).query(&mut admin).unwrap();
        assert!(emq.command(&["enqueue", &q, "x"]).output().unwrap().status.success(), "{via}: room again");
    }
}

/// The connection breaks while the enqueue waits on the server (held by
/// `CLIENT PAUSE`, then killed by `CLIENT KILL`): maybe enqueued, said with
/// the id to enqueue it again with, which is then safe.
#[test]
fn a_connection_broken_on_the_way_means_maybe_enqueued() {
    for (server, via) in [(RedisServer::start(), "lua"), (RedisServer::start_with_module(), "native")] {
        let emq = Emq { url: server.url(), via };
        let q = unique_queue("maybe");
        let mut admin = client(&server.url()).get_connection().unwrap();
        let _: () = redis::cmd("CLIENT").arg(&["PAUSE", "60000", "WRITE"]).query(&mut admin).unwrap();
        let enqueue =
            emq.command(&["enqueue", &q, "held"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn();
        let enqueue = enqueue.expect("run emq enqueue");
        eventually("the enqueue waits on the paused server", || {
            let mut conn = client(&server.url()).get_connection().unwrap();
            let clients: String = redis::cmd("CLIENT").arg("LIST").query(&mut conn).unwrap();
            clients.lines().any(|line| line.contains(" flags=b "))
        });
        let _: u64 =
            redis::cmd("CLIENT").arg(&["KILL", "TYPE", "normal", "SKIPME", "yes"]).query(&mut admin).unwrap();
        let output = enqueue.wait_with_output().unwrap();
        let _: () = redis::cmd("CLIENT").arg("UNPAUSE").query(&mut admin).unwrap();

        let said = stderr(&output);
        assert_eq!(output.status.code(), Some(4), "{via}: {said}");
        let id =
            said.split_whitespace().find(|word| word.starts_with("JOB_")).unwrap_or_else(|| panic!("{said}"));
        let id = id.trim_end_matches([':', ',', '.']);
        assert!(said.contains(&format!("enqueue it again with --id {id}")), "{via}: {said}");
        let again = emq.ok(&["enqueue", &q, "held", "--id", id]);
        assert_eq!(again.trim(), id, "{via}: the killed call never ran, so this one enqueued it");
        assert!(emq.ok_said(&["enqueue", &q, "held", "--id", id]).1.contains("duplicate"), "{via}");
        assert_eq!(pending(&emq, &q), 1, "{via}: one job");
    }
}

/// A server that takes the call and does not answer (writes paused) holds
/// `emq enqueue` until Ctrl-C, which says what is known: maybe enqueued,
/// under which id, and that sending it again with that id is safe (exit 4).
#[test]
fn ctrl_c_before_the_answer_says_maybe_enqueued() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let q = unique_queue("interrupted");
    let mut admin = client(&server.url()).get_connection().unwrap();
    let _: () = redis::cmd("CLIENT").arg(&["PAUSE", "60000", "WRITE"]).query(&mut admin).unwrap();
    let enqueue = emq.command(&["enqueue", &q, "held"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn();
    let enqueue = enqueue.expect("run emq enqueue");
    eventually("the enqueue waits on the paused server", || {
        let mut conn = client(&server.url()).get_connection().unwrap();
        let clients: String = redis::cmd("CLIENT").arg("LIST").query(&mut conn).unwrap();
        clients.lines().any(|line| line.contains(" flags=b "))
    });
    common::signal(enqueue.id(), "INT");
    let output = enqueue.wait_with_output().unwrap();
    let _: () = redis::cmd("CLIENT").arg("UNPAUSE").query(&mut admin).unwrap();
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(4), "{said}");
    assert!(said.contains("interrupted before the server answered: maybe enqueued"), "{said}");
    let id =
        said.split_whitespace().find(|word| word.starts_with("JOB_")).unwrap_or_else(|| panic!("{said}"));
    let id = id.trim_end_matches([':', ',', '.']);
    assert!(said.contains(&format!("enqueue it again with --id {id}")), "{said}");
    assert_eq!(emq.ok(&["enqueue", &q, "held", "--id", id]).trim(), id);
    assert_eq!(pending(&emq, &q), 1, "one job, whichever call put it there");
}

/// Many jobs from JSON lines, one id each out in order; a bad line refuses
/// the whole input and enqueues nothing; bad names and sizes are refused.
#[test]
fn json_lines_enqueue_many_and_bad_input_enqueues_nothing() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let q = unique_queue("bulk");
    let output = jsonl(&emq, &q, "{\"to\":\"ada\"}\n[1,2]\n\"three\"\n");
    assert!(output.status.success(), "{}", stderr(&output));
    let ids: Vec<String> = String::from_utf8_lossy(&output.stdout).lines().map(str::to_owned).collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    for (id, payload) in ids.iter().zip(["{\"to\":\"ada\"}", "[1,2]", "\"three\""]) {
        assert!(emq.ok(&["inspect", id, "--queue", &q]).contains(&format!("payload   {payload} (")), "{id}");
    }
    assert_eq!(pending(&emq, &q), 3);

    for (input, why) in [
        ("{\"ok\":1}\nnot json\n", "line 2 is not JSON"),
        ("1\n\nnot json\n", "line 3 is not JSON"),
        ("\n \n", "no jobs on stdin"),
        ("", "no jobs on stdin"),
    ] {
        let output = jsonl(&emq, &q, input);
        assert_eq!(output.status.code(), Some(5), "{input:?}: {}", stderr(&output));
        assert!(stderr(&output).contains(why), "{input:?}: {}", stderr(&output));
        assert!(output.stdout.is_empty());
    }
    let output = emq.command(&["enqueue", "bad{name}", "x"]).output().unwrap();
    assert_eq!(output.status.code(), Some(5), "{}", stderr(&output));
    assert!(stderr(&output).contains("refused: invalid queue name"), "{}", stderr(&output));
    let big = "x".repeat(echomq::limits::MAX_PAYLOAD + 1);
    let mut child =
        emq.command(&["enqueue", &q, "-"]).stdin(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(big.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(5), "{}", stderr(&output));
    assert_eq!(pending(&emq, &q), 3, "nothing more was enqueued");

    // A key of the wrong type refuses the lines' call whole.
    let typed = unique_queue("typed");
    let mut conn = client(&server.url()).get_connection().unwrap();
    let pending_key = echomq::Keyspace::new(&typed).unwrap().pending();
    let () = redis::cmd("SET").arg(&pending_key).arg("in the way").query(&mut conn).unwrap();
    let output = jsonl(&emq, &typed, "1\n2\n");
    assert_eq!(output.status.code(), Some(5), "{}", stderr(&output));
    let said = stderr(&output);
    assert!(
        said.contains("lines 1 to 2 of 2: refused: EMQTYPE") && said.contains("Nothing of them was written"),
        "{said}"
    );
    assert!(output.stdout.is_empty());
}

/// The server dies part-way through many JSON lines: the ids printed are
/// exactly the jobs enqueued (each is there after a restart on the AOF), the
/// message says which lines failed and how many before them were enqueued,
/// and the exit code says whether those may have been (then it lists their
/// ids, and a chunk goes in whole or not at all).
#[test]
fn json_lines_cut_short_by_an_outage_say_how_far_they_got() {
    use std::io::BufRead;
    let mut server = RedisServer::start_with(ServerOptions {
        args: ["--appendonly", "yes", "--appendfsync", "always"].map(String::from).to_vec(),
        ..ServerOptions::default()
    });
    let emq = Emq { url: server.url(), via: "lua" };
    let q = unique_queue("cut");
    let total = 100_000;
    let mut child = emq
        .command(&["enqueue", &q, "--jsonl"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run emq enqueue");
    let mut stdin = child.stdin.take().unwrap();
    let feeding = std::thread::spawn(move || stdin.write_all("1\n".repeat(total).as_bytes()));
    let mut ids = Vec::new();
    for line in std::io::BufReader::new(child.stdout.take().unwrap()).lines() {
        ids.push(line.expect("an id"));
        if ids.len() == 5 {
            server.kill();
        }
    }
    feeding.join().unwrap().unwrap();
    let output = child.wait_with_output().unwrap();
    let said = stderr(&output);
    let maybe = match output.status.code() {
        Some(3) => false,
        Some(4) => true,
        _ => panic!("not enqueued or maybe: {said}"),
    };
    assert_eq!(ids.len() % 1000, 0, "whole chunks of ids: {said}");
    let (from, to) = (ids.len() + 1, ids.len() + 1000);
    assert!(
        said.contains(&format!("lines {from} to {to} of {total}:"))
            && said.contains(&format!("the {} line(s) before them were enqueued", ids.len())),
        "{} ids printed: {said}",
        ids.len()
    );
    // What is left: the failed lines too, unless they may have been enqueued.
    let next = if maybe { to + 1 } else { from };
    assert!(said.contains(&format!("give lines {next} to {total} to --jsonl again")), "{said}");
    // Lines that may have gone in are listed with their ids.
    let listed: Vec<String> = said
        .lines()
        .filter_map(|line| line.trim().strip_prefix("line ")?.split_once(": ").map(|(_, id)| id.to_owned()))
        .collect();
    assert_eq!(listed.len(), if maybe { 1000 } else { 0 }, "{said}");
    server.revive();
    let keys = echomq::Keyspace::new(&q).unwrap();
    let mut conn = client(&server.url()).get_connection().expect("connect");
    for id in &ids {
        let score: Option<f64> = redis::cmd("ZSCORE").arg(keys.pending()).arg(id).query(&mut conn).unwrap();
        assert!(score.is_some(), "{id} was printed, so it is pending");
    }
    // The failed lines' jobs too, all or none, only when they may have been enqueued.
    let there: Vec<bool> = listed
        .iter()
        .map(|id| {
            let score: Option<f64> =
                redis::cmd("ZSCORE").arg(keys.pending()).arg(id).query(&mut conn).unwrap();
            score.is_some()
        })
        .collect();
    assert!(there.iter().all(|&t| t == there[0]) || there.is_empty(), "a chunk went in in part: {said}");
    let went_in = if there.first() == Some(&true) { listed.len() } else { 0 };
    assert_eq!(pending(&emq, &q) as usize, ids.len() + went_in, "{said}");
}

/// The connection breaks after the server applied a chunk of JSON lines and
/// before its answer arrived: `emq` sends the chunk again with the same ids,
/// the jobs that went in answer duplicate, and every line is one job, its
/// id printed once.
#[test]
fn json_lines_whose_answer_is_lost_are_sent_again_and_enqueued_once() {
    let server = RedisServer::start();
    let proxy = cut_after_a_big_answer(server.port(), 2048);
    let emq = Emq { url: format!("redis://127.0.0.1:{proxy}/"), via: "lua" };
    let q = unique_queue("resent");
    let total = 2500;
    let lines: String = (0..total).map(|n| format!("{n}\n")).collect();
    let output = jsonl(&emq, &q, &lines);
    let said = stderr(&output);
    assert!(output.status.success(), "{said}");
    assert!(
        said.contains("lines 1 to 1000 of 2500: maybe enqueued") && said.contains("sending them again"),
        "{said}"
    );
    let ids: Vec<String> = String::from_utf8_lossy(&output.stdout).lines().map(str::to_owned).collect();
    assert_eq!(ids.len(), total, "one id a line");
    assert_eq!(ids.iter().collect::<std::collections::HashSet<_>>().len(), total, "each id once");
    let direct = Emq { url: server.url(), via: "lua" };
    assert_eq!(pending(&direct, &q), total as u64, "each line one job");
    for (n, id) in ids.iter().enumerate().step_by(499) {
        assert!(
            direct.ok(&["inspect", id, "--queue", &q]).contains(&format!("payload   {n} (")),
            "line {n}: {id}"
        );
    }
}

/// A loopback TCP proxy to `port` that, once, cuts a connection whose server
/// has sent it more than `big` bytes, before passing on the bytes that went
/// over: a call the server applied, its answer lost. Its port.
fn cut_after_a_big_answer(port: u16, big: usize) -> u16 {
    use std::io::Read;
    use std::net::{Shutdown, TcpListener, TcpStream};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let listener = TcpListener::bind(("127.0.0.1", echomq_test_support::free_port())).unwrap();
    let local = listener.local_addr().unwrap().port();
    let cut = Arc::new(AtomicBool::new(false));
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { return };
            let Ok(mut server) = TcpStream::connect(("127.0.0.1", port)) else { return };
            let (mut requests, mut to_server) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut requests, &mut to_server);
                let _ = to_server.shutdown(Shutdown::Both);
            });
            let cut = cut.clone();
            std::thread::spawn(move || {
                let (mut buffer, mut passed) = (vec![0; 64 * 1024], 0);
                while let Ok(n @ 1..) = server.read(&mut buffer) {
                    passed += n;
                    if passed > big && !cut.swap(true, Ordering::SeqCst) {
                        break;
                    }
                    if client.write_all(&buffer[..n]).is_err() {
                        break;
                    }
                }
                let _ = client.shutdown(Shutdown::Both);
                let _ = server.shutdown(Shutdown::Both);
            });
        }
    });
    local
}
