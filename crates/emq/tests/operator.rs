//! What an on-call operator reads (issue 31): `inspect`'s times, `list
//! dead`'s errors, `result` finding the queue as `inspect` does, and a
//! misspelt queue noted on stderr by every verb that lists or waits.

mod common;

use std::process::Stdio;

use common::{eventually, show, Emq, Scratch};
use echomq_test_support::{unique_queue, RedisServer};

/// The due time, and when a job finished; with the module's stamps (a
/// native birth writes `enqueued_at`), how long it took from enqueue.
#[test]
fn inspect_shows_the_due_time_and_when_a_job_finished() {
    for (server, via) in [(RedisServer::start(), "lua"), (RedisServer::start_with_module(), "native")] {
        let emq = Emq { url: server.url(), via };
        let q = unique_queue("times");
        let delayed = emq.ok(&["enqueue", &q, "later", "--delay", "1h"]).trim().to_owned();
        let shown = emq.ok(&["inspect", &delayed]);
        assert!(shown.contains("  due       20"), "{via}: {shown}");

        let id = emq.ok(&["enqueue", &q, "now"]).trim().to_owned();
        emq.ok(&["cancel", &id]);
        let shown = emq.ok(&["inspect", &id]);
        assert!(shown.contains("  finished  20"), "{via}: {shown}");
        if via == "native" {
            assert!(shown.contains("  enqueued  20") && shown.contains("  took      "), "{via}: {shown}");
        }
    }
}

#[test]
fn list_dead_shows_each_jobs_error_and_result_finds_the_queue() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let scratch = Scratch::new("dead");
    let q = unique_queue("dead");
    let dead = emq.ok(&["enqueue", &q, "x", "--attempts", "1"]).trim().to_owned();
    let mut worker = emq.work(
        &[&q, "--", "sh", "-c", "echo 'the disk\nis full' >&2; exit 3"],
        &scratch.0,
        &scratch.path("log"),
    );
    eventually("the job is dead", || emq.ok(&["list", &q, "dead"]).contains(&dead));
    assert!(worker.stop());
    let (listed, footer) = emq.ok_said(&["list", &q, "dead"]);
    assert!(
        listed.contains(&format!("{dead}  since "))
            && listed.contains("error: exit status: 3: the disk is full"),
        "{listed}"
    );
    assert!(footer.contains("1 of 1 dead"), "{footer}");

    // No --queue: found by its record, as inspect finds it.
    let output = emq.command(&["result", &dead]).output().unwrap();
    assert_eq!(output.status.code(), Some(6), "{}", show(&output));
    let output = emq.command(&["result", "JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1R"]).output().unwrap();
    assert_eq!(output.status.code(), Some(9), "{}", show(&output));
}

#[test]
fn a_misspelt_queue_is_noted_by_every_verb_that_lists_or_waits() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let known = unique_queue("emails");
    emq.ok(&["enqueue", &known, "x"]);
    let typo = unique_queue("emials");
    let note = format!("queue {typo} holds no job and has never been seen");
    for args in [
        vec!["list", typo.as_str(), "pending"],
        vec!["stats", typo.as_str()],
        vec!["schedule", "list", typo.as_str()],
        vec!["events", typo.as_str(), "--idle", "100ms"],
    ] {
        let (_, said) = emq.ok_said(&args);
        assert!(said.contains(&note), "{args:?}: {said}");
        let known_args: Vec<&str> =
            args.iter().map(|a| if *a == typo { known.as_str() } else { a }).collect();
        let (_, said) = emq.ok_said(&known_args);
        assert!(!said.contains("never been seen"), "{known_args:?}: {said}");
    }

    // A worker on it says so too, and waits on, for a queue yet to come.
    let scratch = Scratch::new("typo-worker");
    let mut worker = emq
        .command(&["work", &typo, "--", "true"])
        .stdin(Stdio::null())
        .stderr(std::fs::File::create(scratch.path("log")).unwrap())
        .spawn()
        .map(common::Worker)
        .unwrap();
    let log = || std::fs::read_to_string(scratch.path("log")).unwrap_or_default();
    eventually("the worker notes the queue", || log().contains(&note));
    assert!(worker.0.try_wait().unwrap().is_none(), "it goes on waiting");
    assert!(worker.stop());
}

/// `emq flow add` writes a parent and its children from JSON; `inspect`
/// shows the parent's children and each child's parent; once the children
/// have run (`emq work`) and the relay told the parent, it runs too.
#[test]
fn a_flow_added_from_json_is_inspected_and_runs_its_parent_last() {
    let server = RedisServer::start_with_module();
    let emq = Emq { url: server.url(), via: "native" };
    let scratch = Scratch::new("flow");
    let (parents, children) = (unique_queue("parents"), unique_queue("children"));
    let flow = format!(
        r#"{{"queue": "{parents}", "payload": "merge", "children": [
            {{"queue": "{children}", "payload": "page 1"}},
            {{"queue": "{children}", "payload": "page 2", "on_failure": "ignore"}}]}}"#
    );
    std::fs::write(scratch.path("flow.json"), flow).unwrap();
    let added: serde_json::Value =
        serde_json::from_str(&emq.ok(&["flow", "add", scratch.path("flow.json").to_str().unwrap()])).unwrap();
    let parent = added["parent"].as_str().unwrap().split_once('}').unwrap().1.to_owned();
    let child = added["children"][0].as_str().unwrap().split_once('}').unwrap().1.to_owned();
    let shown = emq.ok(&["inspect", &parent, "--queue", &parents]);
    assert!(shown.contains("  state     waiting") && shown.contains("  children  2 open of 2"), "{shown}");
    assert!(shown.contains("open, pending in its queue"), "{shown}");
    let shown = emq.ok(&["inspect", &child, "--queue", &children]);
    assert!(shown.contains(&format!("  parent    {{{parents}}}{parent}")), "{shown}");
    // The reference flow add printed names the job and its queue at once.
    let named = added["children"][0].as_str().unwrap();
    assert_eq!(emq.ok(&["inspect", named]), shown, "{named}");
    let mismatch = emq.command(&["inspect", named, "--queue", &parents]).output().unwrap();
    assert_eq!(mismatch.status.code(), Some(2), "{}", show(&mismatch));
    assert!(show(&mismatch).contains(&format!("--queue says {parents}")), "{}", show(&mismatch));
    // `emq stats` counts the waiting parent (its seventh column).
    let stats = emq.ok(&["stats", &parents]);
    let row = stats.lines().find(|line| line.starts_with(&parents)).unwrap_or_default().to_owned();
    assert!(stats.lines().next().is_some_and(|header| header.contains("waiting")), "{stats}");
    assert_eq!(row.split_whitespace().nth(7), Some("1"), "{stats}");

    let mut workers: Vec<_> = [&children, &parents]
        .iter()
        .map(|q| emq.work(&[q, "--result", "--", "cat"], &scratch.0, &scratch.path(&format!("{q}.log"))))
        .collect();
    eventually("the parent ran", || {
        emq.ok(&["inspect", &parent, "--queue", &parents]).contains("state     done")
    });
    for worker in &mut workers {
        assert!(worker.stop());
    }
    let shown = emq.ok(&["inspect", &parent, "--queue", &parents]);
    assert!(shown.contains("  children  0 open of 2") && shown.contains(" done, result page 1"), "{shown}");
    assert_eq!(emq.ok(&["result", named]).trim(), "page 1", "a child's result by its reference");
}

/// A flow file whose top parent has an id adds nothing twice: its other
/// nodes derive their ids from their parents', so a producer that died
/// half-way adds the file again.
#[test]
fn a_flow_file_with_its_parent_s_id_added_twice_adds_nothing_twice() {
    let server = RedisServer::start_with_module();
    let emq = Emq { url: server.url(), via: "native" };
    let scratch = Scratch::new("flow-again");
    let (parents, children) = (unique_queue("parents"), unique_queue("children"));
    let flow = format!(
        r#"{{"queue": "{parents}", "payload": "merge", "id": "JOB_FILE_1", "children": [
            {{"queue": "{children}", "payload": "page 1"}},
            {{"queue": "{parents}", "payload": "sum", "children": [{{"queue": "{children}", "payload": "a"}}]}}]}}"#
    );
    std::fs::write(scratch.path("flow.json"), flow).unwrap();
    let add = || -> serde_json::Value {
        serde_json::from_str(&emq.ok(&["flow", "add", scratch.path("flow.json").to_str().unwrap()])).unwrap()
    };
    let (first, again) = (add(), add());
    assert_eq!((&first["created"], &again["created"]), (&true.into(), &false.into()), "{first} {again}");
    assert_eq!(first["children"], again["children"], "the same children: {first} {again}");
    let nested = again["children"][1].as_str().unwrap().split_once('}').unwrap().1.to_owned();
    let shown = emq.ok(&["inspect", &nested, "--queue", &parents]);
    assert!(shown.contains("  children  1 open of 1"), "the nested parent's one child, once: {shown}");
    // The queue's row: its name, then pending first of the counts.
    let stats = emq.ok(&["stats", &children]);
    let row = stats.lines().find(|line| line.starts_with(&children)).unwrap_or_else(|| panic!("{stats}"));
    assert_eq!(row.split_whitespace().nth(1), Some("2"), "two children pending, not four: {stats}");
}

/// A flow's parent that died of a child: retried while a child that died
/// runs again (retried), refused (it would read that child dead), let
/// through with --force; retried while another child still runs, it waits
/// for it (protocol 1.11), then runs, every child's end recorded: the
/// retried child's `done` over its death.
#[test]
fn a_dead_parent_retried_waits_for_its_children_still_running() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let scratch = Scratch::new("retry-parent");
    let (parents, children) = (unique_queue("parents"), unique_queue("children"));
    let flow = format!(
        r#"{{"queue": "{parents}", "payload": "merge", "children": [
            {{"queue": "{children}", "payload": "bad"}}, {{"queue": "{children}", "payload": "slow"}}]}}"#
    );
    std::fs::write(scratch.path("flow.json"), flow).unwrap();
    let added: serde_json::Value =
        serde_json::from_str(&emq.ok(&["flow", "add", scratch.path("flow.json").to_str().unwrap()])).unwrap();
    let parent = added["parent"].as_str().unwrap().split_once('}').unwrap().1.to_owned();
    let bad = added["children"][0].as_str().unwrap().split_once('}').unwrap().1.to_owned();
    // `bad` fails until it is fixed; each run lasts until the test lets it end.
    let script = r#"p=$(cat); [ "$p" = bad ] && [ ! -e "$DIR/fixed" ] && exit 1; echo "$p" >> "$DIR/running"
        while [ ! -e "$DIR/go" ]; do sleep 0.05; done; echo "$p done""#;
    let args = [
        children.as_str(),
        "--max-attempts",
        "1",
        "--concurrency",
        "2",
        "--result",
        "--",
        "sh",
        "-c",
        script,
    ];
    let _worker = emq.work(&args, &scratch.0, &scratch.path("log"));
    let state = || emq.ok(&["inspect", &parent, "--queue", &parents]);
    eventually("the parent died of its bad child", || state().contains("state     dead"));
    eventually("the slow child runs", || scratch.lines("running") == ["slow"]);
    let shown = emq.ok(&["inspect", &bad, "--queue", &children]);
    assert!(shown.contains("(told it died; told again if a retry of it ends)"), "{shown}");

    std::fs::write(scratch.path("fixed"), "").unwrap();
    // As flow add printed it: the job and its queue.
    emq.ok(&["retry", added["children"][0].as_str().unwrap()]);
    eventually("the bad child runs again", || scratch.lines("running") == ["slow", "bad"]);
    let refused = emq.command(&["retry", &parent, "--queue", &parents]).output().unwrap();
    let said = show(&refused);
    assert_eq!(refused.status.code(), Some(5), "{said}");
    assert!(said.contains("were retried") && said.contains(&bad) && said.contains("--force"), "{said}");
    assert!(state().contains(&format!("{bad} dead, runs again: active in its queue")), "{}", state());
    assert!(state().contains("state     dead"), "nothing changed");
    let bulk = emq.command(&["retry", "--all-dead", "--queue", &parents, "--yes"]).output().unwrap();
    let said = show(&bulk);
    assert_eq!(bulk.status.code(), Some(5), "{said}");
    assert!(
        said.contains("1 of them refused") && said.contains("were retried") && said.contains("--force"),
        "{said}"
    );

    let said = emq.ok(&["retry", &parent, "--queue", &parents, "--force"]);
    assert!(said.contains(&format!("{parent}: waits for 1 of its 2 children")), "{said}");
    let shown = state();
    assert!(shown.contains("state     waiting") && shown.contains("children  1 open of 2"), "{shown}");
    std::fs::write(scratch.path("go"), "").unwrap();
    eventually("the slow child's end made the parent pending", || state().contains("state     pending"));
    eventually("the bad child's second end replaced its death", || {
        let shown = state();
        shown.contains(&format!("{bad} done, result bad done")) && shown.contains("children  0 open of 2")
    });
}

/// A flow's child that died, whose parent ended since (here, cancelled):
/// inspect and a retry of it say that its end will reach no parent.
#[test]
fn a_retried_child_whose_parent_ended_is_said_to_tell_no_one() {
    let server = RedisServer::start_with_module();
    let emq = Emq { url: server.url(), via: "native" };
    let scratch = Scratch::new("deaf-parent");
    let (parents, children) = (unique_queue("parents"), unique_queue("children"));
    let flow = format!(
        r#"{{"queue": "{parents}", "payload": "merge", "children": [{{"queue": "{children}", "payload": "bad"}}]}}"#
    );
    std::fs::write(scratch.path("flow.json"), flow).unwrap();
    let added: serde_json::Value =
        serde_json::from_str(&emq.ok(&["flow", "add", scratch.path("flow.json").to_str().unwrap()])).unwrap();
    let (parent, bad) = (added["parent"].as_str().unwrap(), added["children"][0].as_str().unwrap());
    let args = [children.as_str(), "--max-attempts", "1", "--", "sh", "-c", "exit 1"];
    let worker = emq.work(&args, &scratch.0, &scratch.path("log"));
    eventually("the parent died of its child", || emq.ok(&["inspect", parent]).contains("state     dead"));
    drop(worker);
    let shown = emq.ok(&["inspect", bad]);
    assert!(shown.contains("told again if a retry of it ends"), "the parent still hears: {shown}");

    emq.ok(&["cancel", parent]);
    let shown = emq.ok(&["inspect", bad]);
    assert!(shown.contains("it was cancelled: a retry of it tells it nothing"), "{shown}");
    let said = emq.ok(&["retry", bad]);
    assert!(
        said.contains(&format!("its parent {parent} will not hear its end (it was cancelled)")),
        "{said}"
    );
}

/// A job whose worker died holds its lease until it runs out; then inspect
/// says so, and what becomes of the job.
#[test]
fn inspect_says_when_a_lease_ran_out() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let scratch = Scratch::new("lease-out");
    let q = unique_queue("leases");
    let id = emq.ok(&["enqueue", &q, "x"]).trim().to_owned();
    let args = [q.as_str(), "--lease", "5s", "--", "sh", "-c", "touch \"$DIR/began\"; sleep 60"];
    let worker = emq.work(&args, &scratch.0, &scratch.path("log"));
    let shown = || emq.ok(&["inspect", &id, "--queue", &q]);
    eventually("the job runs", || scratch.path("began").exists());
    assert!(!shown().contains("ran out"), "{}", shown());
    drop(worker); // SIGKILL: nothing renews the lease, nor reaps it
    eventually("the lease ran out", || shown().contains("ran out"));
    let shown = shown();
    assert!(shown.contains("state     active") && shown.contains("takes it back to pending"), "{shown}");
}

/// A flow whose adding fails after its parent was written (a child's group
/// at its MAX) exits 4, not 3 ("nothing was done"): it names the parent and
/// how to complete it, and adding it so adds only what was missing.
#[test]
fn a_flow_added_in_part_says_so_and_how_to_complete_it() {
    let server = RedisServer::start_with_module();
    let emq = Emq { url: server.url(), via: "native" };
    let scratch = Scratch::new("flow-part");
    let (parents, children, capped) =
        (unique_queue("parents"), unique_queue("children"), unique_queue("capped"));
    emq.ok(&["limit", &capped, "--group", "T", "--max", "1"]);
    emq.ok(&["enqueue", &capped, "first", "--group", "T"]);
    let flow = |id: &str| {
        format!(
            r#"{{"queue": "{parents}", {id}"payload": "merge", "children": [{{"queue": "{children}", "payload": "a"}},
                {{"queue": "{capped}", "payload": "b", "group": "T"}}]}}"#
        )
    };
    std::fs::write(scratch.path("flow.json"), flow("")).unwrap();
    let file = scratch.path("flow.json").to_str().unwrap().to_owned();
    let failed = emq.command(&["flow", "add", &file]).output().unwrap();
    let said = show(&failed);
    assert_eq!(failed.status.code(), Some(4), "{said}");
    assert!(said.contains("the flow was added in part") && said.contains("EMQFULL"), "{said}");
    let id =
        said.split("with \"id\": \"").nth(1).and_then(|rest| rest.split('"').next()).expect(&said).to_owned();
    assert!(emq.ok(&["inspect", &id, "--queue", &parents]).contains("state     waiting"), "{said}");

    emq.ok(&["limit", &capped, "--group", "T", "--max", "none"]);
    std::fs::write(scratch.path("flow.json"), flow(&format!(r#""id": "{id}", "#))).unwrap();
    let added: serde_json::Value = serde_json::from_str(&emq.ok(&["flow", "add", &file])).unwrap();
    assert_eq!(added["created"], false, "{added}");
    let shown = emq.ok(&["inspect", &id, "--queue", &parents]);
    assert!(shown.contains("children  2 open of 2") && !shown.contains("not in its queue"), "{shown}");
}

/// A drain deletes a flow's waiting parent too: it says so, and that its
/// children run on and tell no one.
#[test]
fn a_drain_says_it_took_a_flow_s_parent() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let scratch = Scratch::new("drain-parent");
    let (parents, children) = (unique_queue("parents"), unique_queue("children"));
    let flow = format!(
        r#"{{"queue": "{parents}", "payload": "merge", "children": [{{"queue": "{children}", "payload": "a"}}]}}"#
    );
    std::fs::write(scratch.path("flow.json"), flow).unwrap();
    emq.ok(&["flow", "add", scratch.path("flow.json").to_str().unwrap()]);
    let (said, noted) = emq.ok_said(&["drain", &parents]);
    assert!(said.contains("drained 1 pending, delayed and waiting jobs"), "{said}");
    assert!(noted.contains("1 of them were flows' parents") && noted.contains("tell no one"), "{noted}");
}

/// A setting on a group that holds no job notes a misspelt name; cancelling
/// a running job says its worker stops it at its next heartbeat.
#[test]
fn notes_on_a_group_with_no_job_and_a_cancelled_running_job() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let scratch = Scratch::new("notes");
    let q = unique_queue("notes");
    let id = emq.ok(&["enqueue", &q, "x", "--group", "A"]).trim().to_owned();
    let (_, noted) = emq.ok_said(&["limit", &q, "--group", "Aa", "--cap", "1"]);
    assert!(
        noted.contains(&format!("group Aa of {q} holds no job pending or running (a misspelt name?)")),
        "{noted}"
    );
    let (_, noted) = emq.ok_said(&["limit", &q, "--group", "A", "--cap", "1"]);
    assert!(!noted.contains("misspelt"), "{noted}");
    let _worker = emq.work(
        &[&q, "--", "sh", "-c", r#"touch "$DIR/began"; sleep 60"#],
        &scratch.0,
        &scratch.path("log"),
    );
    eventually("the job runs", || scratch.path("began").exists());
    let said = emq.ok(&["cancel", &id, "--queue", &q]);
    assert!(said.contains(&format!("{id} was running: its worker stops it at its next heartbeat")), "{said}");
}

/// A flow's notes: a child retried while its parent is dead says the parent
/// waits for a retry of its own; a cancelled parent's children it never
/// heard of are said so; deleting a waiting parent notes its children.
#[test]
fn notes_on_a_flow_s_parent_dead_cancelled_or_deleted() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let scratch = Scratch::new("flow-notes");
    let (parents, children) = (unique_queue("parents"), unique_queue("children"));
    let add = |payload: &str| -> serde_json::Value {
        let flow = format!(
            r#"{{"queue": "{parents}", "payload": "{payload}", "children": [{{"queue": "{children}", "payload": "c"}}]}}"#
        );
        std::fs::write(scratch.path("flow.json"), flow).unwrap();
        serde_json::from_str(&emq.ok(&["flow", "add", scratch.path("flow.json").to_str().unwrap()])).unwrap()
    };
    let first = add("one");
    let parent = first["parent"].as_str().unwrap();
    assert!(emq.ok(&["cancel", parent]).contains("cancelled"));
    let shown = emq.ok(&["inspect", parent]);
    assert!(shown.contains("never heard of (the parent ended first), cancelled in its queue"), "{shown}");

    let second = add("two");
    let (parent, child2) = (second["parent"].as_str().unwrap(), second["children"][0].as_str().unwrap());
    let worker = emq.work(
        &[&children, "--max-attempts", "1", "--", "sh", "-c", "exit 1"],
        &scratch.0,
        &scratch.path("log"),
    );
    eventually("the parent died of its child", || emq.ok(&["inspect", parent]).contains("state     dead"));
    drop(worker);
    let said = emq.ok(&["retry", child2]);
    assert!(said.contains(&format!("its parent {parent} is dead: it hears this job's end")), "{said}");

    let third = add("three");
    let refused = emq.command(&["retry", third["parent"].as_str().unwrap()]).output().unwrap();
    assert_eq!(refused.status.code(), Some(5), "{}", show(&refused));
    assert!(show(&refused).contains("it waits for 1 of its 1 children"), "{}", show(&refused));
    let id = third["parent"].as_str().unwrap().split_once('}').unwrap().1.to_owned();
    let (_, noted) = emq.ok_said(&["delete", "--queue", &parents, "--state", "waiting", &id]);
    assert!(noted.contains("a flow's parent deleted leaves its children"), "{noted}");
}
