//! Fair groups from the command line (protocol 1.7), on Lua and on Native:
//! `emq enqueue --group` (one job and JSON lines), `emq flow add` with
//! groups, `emq limit --group` setting and removing a group's weight, cap,
//! rate, most pending and pause, `emq groups` listing them a page at a
//! time; a group at its most pending refusing with exit 3; bad input a
//! usage error that sends nothing.

mod common;

use std::io::Write;
use std::process::Stdio;

use common::{client, show, Emq, Scratch};
use echomq_test_support::{unique_queue, RedisServer};

fn servers() -> [(RedisServer, &'static str); 2] {
    [(RedisServer::start(), "lua"), (RedisServer::start_with_module(), "native")]
}

/// `emq groups`' row for `group`, cell by cell.
fn row(listed: &str, group: &str) -> Vec<String> {
    let row = listed.lines().find(|line| line.starts_with(&format!("{group} ")));
    row.unwrap_or_else(|| panic!("no {group} in {listed}")).split_whitespace().map(str::to_owned).collect()
}

/// Enqueue JSON lines with `--group`.
fn enqueue_lines(emq: &Emq, queue: &str, group: &str, lines: &str) {
    let mut child = emq
        .command(&["enqueue", queue, "--jsonl", "--group", group])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(lines.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", show(&output));
}

#[test]
fn groups_are_enqueued_limited_and_listed() {
    for (server, via) in servers() {
        let emq = Emq { url: server.url(), via };
        let q = unique_queue("groups");
        let mut ids = Vec::new();
        for group in ["tenant-7", "tenant-7", "tenant-8"] {
            ids.push(emq.ok(&["enqueue", &q, "job", "--group", group]));
        }
        // emq inspect shows a job's group (INSPECT's seventh key).
        let id = ids[2].split_whitespace().find(|word| word.starts_with("JOB")).expect("the id enqueued");
        let inspected = emq.ok(&["inspect", id, "--queue", &q]);
        assert!(inspected.contains("\n  group     tenant-8\n"), "{via}: {inspected}");
        // Its priority as given, not its pending score (2^32 past it).
        let listed = emq.ok(&["list", &q, "pending"]);
        assert!(listed.contains(&format!("{id}  priority 0 in its group")), "{via}: {listed}");
        enqueue_lines(&emq, &q, "tenant-9", "{\"n\":1}\n{\"n\":2}\n");
        let set = ["--weight", "3", "--cap", "2", "--rate", "10/1s", "--max", "1000"];
        let limited = emq.ok(&[&["limit", &q, "--group", "tenant-7"][..], &set[..]].concat());
        let said = "group tenant-7: ready, 2 pending, 0 running; weight 3, cap 2, rate 10/1s, max 1000";
        assert!(limited.contains(said), "{via}: {limited}");
        let paused = emq.ok(&["limit", &q, "--group", "tenant-8", "--pause"]);
        assert!(paused.contains("group tenant-8: paused, 1 pending"), "{via}: {paused}");
        let cleared = emq.ok(&["limit", &q, "--group", "tenant-7", "--cap", "none", "--max", "none"]);
        assert!(cleared.contains("running; weight 3, rate 10/1s\n"), "{via}: {cleared}");

        let listed = emq.ok(&["groups", &q]);
        let header: Vec<&str> = listed.lines().next().unwrap().split_whitespace().collect();
        assert_eq!(header, ["GROUP", "PENDING", "RUNNING", "STATE", "WEIGHT", "CAP", "RATE", "MAX"], "{via}");
        assert_eq!(
            row(&listed, "tenant-7"),
            ["tenant-7", "2", "0", "ready", "3", "-", "10/1s", "-"],
            "{via}"
        );
        assert_eq!(row(&listed, "tenant-8"), ["tenant-8", "1", "0", "paused", "1", "-", "-", "-"], "{via}");
        assert_eq!(row(&listed, "tenant-9")[..4], ["tenant-9", "2", "0", "ready"], "{via}");
        // A page at a time, the next one named on stderr.
        let (page, note) = emq.ok_said(&["groups", &q, "--limit", "1"]);
        assert_eq!(page.lines().count(), 2, "{via}: {page}");
        assert!(note.contains(&format!("emq groups {q} --after tenant-7")), "{via}: {note}");
        let (page, note) = emq.ok_said(&["groups", &q, "--after", "tenant-8"]);
        assert_eq!((page.lines().count(), note.as_str()), (2, ""), "{via}: {page}");
        row(&page, "tenant-9");
        let (_, note) = emq.ok_said(&["groups", &q, "--after", "zzz"]);
        assert!(note.contains(&format!("{q} has no group after zzz")), "{via}: {note}");
        // As JSON lines, a setting it lacks as null.
        let lines = emq.ok(&["groups", &q, "--json"]);
        let groups: Vec<serde_json::Value> =
            lines.lines().map(|line| serde_json::from_str(line).expect("a JSON line")).collect();
        let want = serde_json::json!({"group": "tenant-7", "pending": 2, "running": 0, "state": "ready",
            "weight": 3, "cap": null, "rate": {"claims": 10, "per_ms": 1000}, "max": null, "paused": false});
        assert_eq!((groups.len(), &groups[0]), (3, &want), "{via}: {lines}");
        assert_eq!(
            (groups[1]["state"].as_str(), groups[1]["paused"].as_bool()),
            (Some("paused"), Some(true))
        );
        let resumed = emq.ok(&["limit", &q, "--group", "tenant-8", "--resume"]);
        assert!(resumed.contains("group tenant-8: ready"), "{via}: {resumed}");
        // The queue's own pause holds every group, whatever its state says.
        emq.ok(&["pause", &q]);
        let (listed, note) = emq.ok_said(&["groups", &q]);
        assert_eq!(row(&listed, "tenant-8")[3], "ready", "{via}");
        assert!(note.contains(&format!("queue {q} is paused: none of its groups runs")), "{via}: {note}");
    }
}

#[test]
fn a_full_group_refuses_an_enqueue_with_exit_3() {
    for (server, via) in servers() {
        let emq = Emq { url: server.url(), via };
        let q = unique_queue("full");
        emq.ok(&["limit", &q, "--group", "g", "--max", "1"]);
        emq.ok(&["enqueue", &q, "one", "--group", "g"]);
        let output = emq.command(&["enqueue", &q, "two", "--group", "g"]).output().unwrap();
        assert_eq!(output.status.code(), Some(3), "{via}: {}", show(&output));
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(said.contains("not enqueued") && said.contains("Nothing was written"), "{via}: {said}");
        assert!(said.contains("once the group's pending jobs are claimed"), "{via}: {said}");
        // Another group is not held by it.
        emq.ok(&["enqueue", &q, "three", "--group", "h"]);
        assert_eq!(row(&emq.ok(&["groups", &q]), "g")[1], "1", "{via}");
    }
}

#[test]
fn a_flow_files_nodes_carry_their_groups() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let scratch = Scratch::new("flowgroups");
    let (parents, children) = (unique_queue("parents"), unique_queue("kids"));
    let flow = serde_json::json!({
        "queue": parents, "payload": "merge", "group": "acme",
        "children": [
            {"queue": children, "payload": "a", "group": "acme"},
            {"queue": children, "payload": "b", "group": "globex", "priority": 1},
        ],
    });
    std::fs::write(scratch.path("flow.json"), flow.to_string()).unwrap();
    emq.ok(&["flow", "add", scratch.path("flow.json").to_str().unwrap()]);
    let listed = emq.ok(&["groups", &children]);
    assert_eq!(row(&listed, "acme")[1], "1", "{listed}");
    assert_eq!(row(&listed, "globex")[1], "1", "{listed}");
}

#[test]
fn bad_groups_are_usage_errors_that_send_nothing() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let q = unique_queue("badgroups");
    let long = "g".repeat(201);
    let cases: [(&[&str], &str); 7] = [
        (&["enqueue", &q, "x", "--group", ""], "1 to 200 bytes, not empty"),
        (&["enqueue", &q, "x", "--group", &long], "1 to 200 bytes, not 201"),
        (&["limit", &q, "--group", "g", "--weight", "0"], "0 is not in 1..=1000"),
        (&["limit", &q, "--group", "g", "--max", "0"], "none"),
        (&["limit", &q, "--weight", "3"], "--group <GROUP>"),
        (&["limit", &q, "--group", "g", "--concurrency", "3"], "cannot be used with"),
        (&["groups", &q, "--limit", "0"], "0 is not in 1..=1000"),
    ];
    for (args, said) in cases {
        let output = emq.command(args).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", show(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(said), "{args:?}: {stderr}");
    }
    let mut conn = client(&server.url()).get_connection().unwrap();
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut conn).unwrap();
    assert_eq!(keys, Vec::<String>::new(), "nothing was written");
}
