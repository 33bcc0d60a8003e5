//! Partitioned queues from the command line (protocol 1.8), on Lua and on
//! Native: `emq partition create` and `show`; `emq enqueue` (one job, with
//! a group, JSON lines) sending each job to its partition; `emq inspect
//! --queue` and `emq cancel --queue` finding a job by the partitioned
//! queue's name; `emq limit` splitting a queue's limits, or holding an
//! exact rate across the partitions; `emq pause`,
//! `resume` and `stats` taking its name; `emq list`, `find`, and `retry`,
//! `cancel` and `delete` of every job of a state, over every partition;
//! `emq work` working every partition; another count, a bad count and an ordinary queue refused
//! with exit 5, nothing written.

mod common;

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{show, Emq, Scratch};
use echomq::partition::{partition_index, partition_name};
use echomq_test_support::{unique_queue, RedisServer};

/// `emq partition show`'s row whose first cell is `first`, cell by cell.
fn row(shown: &str, first: &str) -> Vec<String> {
    let row = shown.lines().find(|line| line.split_whitespace().next() == Some(first));
    row.unwrap_or_else(|| panic!("no row {first} in {shown}")).split_whitespace().map(str::to_owned).collect()
}

/// The partition `emq inspect` says job `id` is in.
fn home(emq: &Emq, id: &str, queue: &str) -> String {
    let shown = emq.ok(&["inspect", id, "--queue", queue]);
    let first = shown.lines().next().unwrap_or_default();
    first.split(" in ").nth(1).unwrap_or_else(|| panic!("{shown}")).trim().to_owned()
}

#[test]
fn a_partitioned_queue_is_created_fed_shown_and_worked() {
    for (server, via) in [(RedisServer::start(), "lua"), (RedisServer::start_with_module(), "native")] {
        let emq = Emq { url: server.url(), via };
        let q = unique_queue("orders");
        let made = emq.ok(&["partition", "create", &q, "4"]);
        assert!(made.starts_with(&format!("{q} is partitioned over 4 queues:\n")), "{via}: {made}");
        for k in 0..4 {
            assert!(made.contains(&format!("  {k} {} (slot ", partition_name(&q, k, 4))), "{via}: {made}");
        }
        assert_eq!(emq.ok(&["partition", "create", &q, "4"]), made, "{via}: creating again opens it");
        for (count, said) in [("8", "partitioned 4 ways, not 8"), ("0", "1 to 1024 partitions, not 0")] {
            let refused = emq.command(&["partition", "create", &q, count]).output().unwrap();
            assert_eq!(refused.status.code(), Some(5), "{via}: {}", show(&refused));
            assert!(show(&refused).contains(said), "{via}: {}", show(&refused));
        }

        // One job: its partition is its id's; with a group, its group's.
        let id = emq.ok(&["enqueue", &q, "one"]).trim().to_owned();
        assert_eq!(home(&emq, &id, &q), partition_name(&q, partition_index(&id, 4), 4), "{via}");
        let grouped = emq.ok(&["enqueue", &q, "two", "--group", "tenant-7"]).trim().to_owned();
        assert_eq!(home(&emq, &grouped, &q), partition_name(&q, partition_index("tenant-7", 4), 4), "{via}");
        // JSON lines: each chunk of a thousand in one partition, every job in its id's.
        let mut child = emq
            .command(&["enqueue", &q, "--jsonl"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let lines: String = (0..2500).map(|n| format!("{{\"n\":{n}}}\n")).collect();
        child.stdin.take().unwrap().write_all(lines.as_bytes()).unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{via}: {}", show(&output));
        let ids: Vec<String> = String::from_utf8_lossy(&output.stdout).lines().map(str::to_owned).collect();
        assert_eq!(ids.len(), 2500, "{via}");
        for chunk in ids.chunks(1000) {
            let k = partition_index(&chunk[0], 4);
            assert!(chunk.iter().all(|id| partition_index(id, 4) == k), "{via}: a chunk in one partition");
        }
        let shown = emq.ok(&["partition", "show", &q]);
        assert_eq!(row(&shown, "all")[..4], ["all", &q, "-", "2502"], "{via}: {shown}");
        let pending: u64 = (0..4).map(|k| row(&shown, &k.to_string())[3].parse::<u64>().unwrap()).sum();
        assert_eq!(pending, 2502, "{via}: {shown}");

        // A job found, and cancelled, by the partitioned queue's name.
        emq.ok(&["cancel", &id, "--queue", &q]);
        let shown = emq.ok(&["partition", "show", &q]);
        assert_eq!(row(&shown, "all")[3..], ["2501", "0", "0", "0", "0", "1", "0", "-"], "{via}: {shown}");

        // Limits split between the partitions; pause holds them all, stats shows each.
        let limited = emq.ok(&["limit", &q, "--concurrency", "8", "--rate", "6/1s"]);
        assert!(limited.starts_with(&format!("{q}: over 4 partitions, limits split")), "{via}: {limited}");
        for (k, rate) in [(0, 2), (1, 2), (2, 1), (3, 1)] {
            let line = format!("  {}: concurrency 2, rate {rate}/1s\n", partition_name(&q, k, 4));
            assert!(limited.contains(&line), "{via}: {limited}");
        }
        let refused = emq.command(&["limit", &q, "--concurrency", "3"]).output().unwrap();
        assert_eq!(refused.status.code(), Some(5), "{via}: {}", show(&refused));
        assert!(emq.ok(&["pause", &q]).contains("its 4 partitions"), "{via}");
        let stats = emq.ok(&["stats", &q]);
        assert_eq!(
            stats.lines().filter(|line| line.contains("paused, concurrency 2")).count(),
            4,
            "{via}: {stats}"
        );
        // The partitions' rows, then the queue's total; so too with no queue named.
        for stats in [stats.clone(), emq.ok(&["stats"])] {
            // The first count after a row's name: its pending jobs.
            let pending = |name: &str| -> Option<u64> {
                let line = stats.lines().find_map(|line| line.strip_prefix(&format!("{name} ")))?;
                line.split_whitespace().next()?.parse().ok()
            };
            let parts: u64 = (0..4)
                .map(|k| pending(&partition_name(&q, k, 4)))
                .map(|n| n.unwrap_or_else(|| panic!("{via}: a partition's row in {stats}")))
                .sum();
            assert_eq!(pending(&format!("{q} (all 4)")), Some(parts), "{via}: {stats}");
            assert!(parts > 0, "{via}: {stats}");
        }
        emq.ok(&["resume", &q]);
        emq.ok(&["limit", &q, "--concurrency", "none", "--rate", "none"]);
        // An exact rate across the partitions, shown, and lifted.
        let exact = emq.ok(&["limit", &q, "--rate", "50/1s", "--exact"]);
        assert_eq!(exact, format!("{q}: an exact rate of 50/1s across its 4 partitions\n"), "{via}");
        assert!(emq.ok(&["partition", "show", &q]).contains("\nexact rate 50/1s across the partitions\n"));
        let ordinary =
            emq.command(&["limit", "not-partitioned", "--rate", "5/1s", "--exact"]).output().unwrap();
        assert!(!ordinary.status.success(), "{via}: {}", show(&ordinary));
        assert!(show(&ordinary).contains("--exact is for a partitioned queue"), "{via}: {}", show(&ordinary));
        emq.ok(&["limit", &q, "--rate", "none", "--exact"]);
        assert!(!emq.ok(&["partition", "show", &q]).contains("exact rate"), "{via}");
        // An exact concurrency likewise; --exact alone says what it takes.
        let exact = emq.ok(&["limit", &q, "--concurrency", "3", "--exact"]);
        assert_eq!(exact, format!("{q}: an exact concurrency of 3 jobs at once across its 4 partitions\n"));
        assert!(emq
            .ok(&["partition", "show", &q])
            .contains("\nexact concurrency 3 across the partitions, 0 running now\n"));
        assert!(emq.ok(&["stats", &q]).contains("exact concurrency 3"), "{via}: the total's flow");
        let bare = emq.command(&["limit", &q, "--exact"]).output().unwrap();
        assert_eq!(bare.status.code(), Some(2), "{via}: {}", show(&bare));
        assert!(show(&bare).contains("--rate <RATE>|--concurrency <CONCURRENCY>"), "{via}: {}", show(&bare));
        emq.ok(&["limit", &q, "--concurrency", "none", "--exact"]);
        assert!(!emq.ok(&["partition", "show", &q]).contains("exact concurrency"), "{via}");

        // A schedule lives in the partition its name routes to; its jobs fire there.
        let home_of_beat = partition_name(&q, partition_index("beat", 4), 4);
        let added = emq.ok(&["schedule", "add", &q, "beat", "b", "--every", "1h"]);
        assert!(added.starts_with(&format!("scheduled beat in {q}: next at ")), "{via}: {added}");
        assert!(emq.ok(&["schedule", "list", &q]).starts_with("beat  next "), "{via}");
        assert!(emq.ok(&["schedule", "list", &home_of_beat]).starts_with("beat  next "), "{via}");
        let fired = emq.ok(&["schedule", "trigger", &q, "beat"]).trim().to_owned();
        assert_eq!(home(&emq, &fired, &home_of_beat), home_of_beat, "{via}: fired in its partition");
        emq.ok(&["schedule", "remove", &q, "beat"]);
        assert_eq!(emq.ok(&["schedule", "list", &q]), "", "{via}");

        // A job a speaker before 1.8 put in the ordinary queue of the name: said, and worked.
        let mut conn = server.client().get_connection().unwrap();
        let stray = "JOB_STRAY";
        let keys = [format!("emq:{{{q}}}:job:{stray}"), format!("emq:{{{q}}}:pending")];
        let _: redis::Value = redis::cmd("EVAL")
            .arg(echomq::executor::script_source(echomq::Name::Enqueue))
            .arg(2)
            .arg(&keys)
            .arg(stray)
            .arg("old")
            .query(&mut conn)
            .unwrap();
        let (_, warned) = emq.ok_said(&["partition", "show", &q]);
        assert!(warned.contains(&format!("the ordinary queue {q} holds 1 job(s)")), "{via}: {warned}");

        // One worker works every partition, and the ordinary queue.
        let scratch = Scratch::new("partitions");
        let mut worker =
            emq.work(&[&q, "--concurrency", "8", "--", "true"], &scratch.0, &scratch.path("log"));
        let deadline = Instant::now() + Duration::from_secs(120);
        // It keeps each partition's upkeep too, under the partition's lease.
        // One worker: the same id (not `-`, none; nor `?`, unread) on every partition.
        let kept = |shown: &str| {
            let keepers: Vec<String> = (0..4).map(|k| row(shown, &k.to_string())[10].clone()).collect();
            keepers.iter().all(|id| id == &keepers[0] && id != "-" && id != "?")
        };
        let shown = loop {
            let (shown, warned) = emq.ok_said(&["partition", "show", &q]);
            // 2502 of the partitions, the stray job of the ordinary queue.
            let ran = row(&shown, "all")[6] == "2503" && !warned.contains("warning");
            if (ran && kept(&shown)) || Instant::now() > deadline {
                break shown;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        assert!(kept(&shown), "{via}: a worker keeps each partition: {shown}");
        assert!(worker.stop(), "{via}: emq work stopped cleanly");
        let (given_back, warned) = emq.ok_said(&["partition", "show", &q]);
        assert!(!warned.contains("warning"), "{via}: the stray job ran: {warned}");
        assert_eq!(row(&shown, "all")[3..], ["0", "0", "0", "2503", "0", "1", "0", "-"], "{via}: {shown}");
        assert_eq!(
            row(&shown, "-")[1..3],
            [q.clone(), echomq::partition::queue_slot(&q).to_string()],
            "{via}"
        );
        let keepers: Vec<String> = (0..4).map(|k| row(&given_back, &k.to_string())[10].clone()).collect();
        assert_eq!(keepers, ["-"; 4], "{via}: the stopped worker gave its leases back: {given_back}");
    }
}

#[test]
fn list_find_and_the_bulk_commands_take_a_partitioned_queue_as_one() {
    for (server, via) in [(RedisServer::start(), "lua"), (RedisServer::start_with_module(), "native")] {
        let emq = Emq { url: server.url(), via };
        let q = unique_queue("parts");
        emq.ok(&["partition", "create", &q, "4"]);
        for n in 0..12 {
            let payload = if n < 6 { format!("alpha-{n}") } else { format!("beta-{n}") };
            // Three die on their one attempt, below.
            let attempts = if n % 4 == 0 { "1" } else { "5" };
            emq.ok(&["enqueue", &q, &payload, "--attempts", attempts]);
        }
        // Every partition's jobs, one list: each says where it is.
        let (listed, said) = emq.ok_said(&["list", &q, "pending", "--limit", "100"]);
        assert_eq!(listed.lines().count(), 12, "{via}: {listed}");
        let homes: std::collections::BTreeSet<&str> = listed
            .lines()
            .map(|line| line.split("  in ").nth(1).unwrap_or_else(|| panic!("{line}")))
            .collect();
        assert!(
            homes.len() > 1 && homes.iter().all(|home| home.starts_with(&format!("{q}~"))),
            "{via}: {listed}"
        );
        assert_eq!(
            said,
            format!("12 of 12 pending in {q} (4 partitions and its own queue; no order across them)\n")
        );
        assert_eq!(emq.ok(&["list", &q, "pending", "--limit", "5"]).lines().count(), 5, "{via}");

        // A search by text and by id, across them.
        let (found, said) = emq.ok_said(&["find", &q, "alpha", "--state", "pending"]);
        assert_eq!(found.lines().count(), 6, "{via}: {found}");
        assert!(
            said.ends_with(&format!("6 found; examined 12 of 12 pending jobs of {q}: all\n")),
            "{via}: {said}"
        );
        let (found, _) = emq.ok_said(&["find", &q, "--id", "JOB_"]);
        assert_eq!(found.lines().count(), 12, "{via}: {found}");
        let refused = emq.command(&["find", &q, "alpha", "--from", "3"]).output().unwrap();
        assert_eq!(refused.status.code(), Some(2), "{via}: {}", show(&refused));
        assert!(show(&refused).contains("is partitioned: find in one of its partitions"), "{via}");

        // Bulk changes: counted first, then done, over every partition.
        let said = emq.ok(&["cancel", "--queue", &q, "--all", "pending", "--matching", "beta-1"]);
        assert!(said.starts_with("would cancel 2 pending jobs of"), "{via}: {said}");
        let said = emq.ok(&["cancel", "--queue", &q, "--all", "pending", "--matching", "beta-1", "--yes"]);
        assert!(said.starts_with("cancelled 2 pending jobs of"), "{via}: {said}");
        let cancelled = emq.ok(&["list", &q, "cancelled"]);
        let ids: Vec<&str> = cancelled.lines().filter_map(|line| line.split_whitespace().next()).collect();
        assert_eq!(ids.len(), 2, "{via}: {cancelled}");
        // A job named as `{partition}JOB_…` with the partitioned queue's name.
        let shown = emq.ok(&["inspect", ids[0], "--queue", &q]);
        let partition = shown.lines().next().and_then(|line| line.split(" in ").nth(1)).unwrap_or_default();
        let named = format!("{{{partition}}}{}", ids[0]);
        assert_eq!(emq.ok(&["inspect", &named, "--queue", &q]), shown, "{via}: {named}");
        let mut delete = vec!["delete", "--queue", &q, "--state", "cancelled", &named];
        delete.extend(&ids[1..]);
        assert!(
            emq.ok(&delete).starts_with("deleted 2 of 2 cancelled job(s)"),
            "{via}: by id, in their partitions"
        );

        // Three jobs die on their one attempt; all of them are retried.
        let scratch = Scratch::new("partitions-dead");
        let mut worker =
            emq.work(&[&q, "--concurrency", "4", "--", "false"], &scratch.0, &scratch.path("log"));
        let deadline = Instant::now() + Duration::from_secs(120);
        while emq.ok(&["list", &q, "dead"]).lines().count() < 3 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(worker.stop(), "{via}: emq work stopped cleanly");
        let dead = emq.ok(&["list", &q, "dead"]);
        assert_eq!(dead.lines().count(), 3, "{via}: {dead}");
        assert!(dead.lines().all(|line| line.contains("  error: ")), "{via}: each with why it died: {dead}");
        assert!(emq.ok(&["retry", "--queue", &q, "--all-dead"]).starts_with("would retry 3 dead jobs of"));
        let said = emq.ok(&["retry", "--queue", &q, "--all-dead", "--yes"]);
        assert!(said.starts_with("retried 3 dead jobs of"), "{via}: {said}");
        let (_, said) = emq.ok_said(&["list", &q, "dead"]);
        assert!(said.starts_with(&format!("0 of 0 dead in {q} ")), "{via}: {said}");

        // Drain and purge every partition.
        let said = emq.ok(&["drain", &q]);
        let whole =
            format!(" pending, delayed and waiting jobs from {q} (its 4 partitions and its own queue)\n");
        assert!(said.starts_with("drained ") && said.ends_with(&whole), "{via}: {said}");
        for state in ["pending", "delayed"] {
            let (_, said) = emq.ok_said(&["list", &q, state]);
            assert!(said.starts_with(&format!("0 of 0 {state} in {q} ")), "{via}: {said}");
        }
        assert!(emq.ok(&["purge", &q, "--state", "dead"]).starts_with("purged 0 dead jobs from"), "{via}");
        // Commands that follow or list one queue's own refuse the name, saying which to give.
        for args in [vec!["events", &q, "--count", "1"], vec!["groups", &q]] {
            let refused = emq.command(&args).output().unwrap();
            assert_eq!(refused.status.code(), Some(2), "{via}: {args:?}: {}", show(&refused));
            assert!(show(&refused).contains("name one of its partitions"), "{via}: {}", show(&refused));
        }
        // A job's result by the partitioned queue's name: found in its partition.
        let id = emq.ok(&["enqueue", &q, "r"]).trim().to_owned();
        let waiting = emq.command(&["result", &id, "--queue", &q]).output().unwrap();
        assert_eq!(waiting.status.code(), Some(8), "{via}: not finished, not gone: {}", show(&waiting));

        // delete-queue deletes the partitions, the queue of the name and the definition.
        let said = emq.ok(&["delete-queue", &q]);
        let whole = format!("deleted partitioned queue {q}: its 4 partitions, the queue of its name and");
        assert!(said.starts_with(&whole) && said.ends_with(" and their 1 jobs\n"), "{via}: {said}");
        let missing = emq.command(&["partition", "show", &q]).output().unwrap();
        assert_eq!(missing.status.code(), Some(5), "{via}: the name is free: {}", show(&missing));
        assert!(!emq.ok(&["queues"]).contains(&format!("{q}~")), "{via}: no partition left registered");
    }
}

#[test]
fn an_ordinary_queue_holding_jobs_is_not_partitioned() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let q = unique_queue("plain");
    emq.ok(&["enqueue", &q, "job"]);
    let refused = emq.command(&["partition", "create", &q, "4"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(5), "{}", show(&refused));
    assert!(show(&refused).contains("is an ordinary queue holding jobs"), "{}", show(&refused));
    let missing = emq.command(&["partition", "show", &q]).output().unwrap();
    assert_eq!(missing.status.code(), Some(5), "{}", show(&missing));
    assert!(show(&missing).contains("is not a partitioned queue"), "{}", show(&missing));
}

/// Split and exact limits that both hold are said to, and `emq config`
/// shows the exact ones; a change that fails on one of the queues a
/// partitioned queue's name stands for, after others were changed, says
/// which were and exits 4 (here an ACL lets a user reach two partitions).
#[test]
fn limits_that_stack_are_said_and_a_change_partly_made_exits_4() {
    let server = RedisServer::start_with_module();
    let emq = Emq { url: server.url(), via: "native" };
    let q = unique_queue("stack");
    emq.ok(&["partition", "create", &q, "4"]);
    emq.ok(&["limit", &q, "--concurrency", "4"]);
    let (said, noted) = emq.ok_said(&["limit", &q, "--concurrency", "20", "--exact"]);
    assert!(said.contains("an exact concurrency of 20"), "{said}");
    assert!(noted.contains("split and exact limits both hold: the lower governs"), "{noted}");
    let shown = emq.ok(&["config", &q]);
    assert!(shown.contains("  exact across them: concurrency 20\n"), "{shown}");
    let (said, noted) = emq.ok_said(&["limit", &q, "--concurrency", "none"]);
    assert!(said.contains("  exact across them: concurrency 20\n"), "the exact one still holds: {said}");
    assert!(!noted.contains("both hold"), "{noted}");

    // A job is not put straight into a partition, nor a queue named as one.
    for name in [partition_name(&q, 1, 4), format!("{q}~0~99999")] {
        let refused = emq.command(&["enqueue", &name, "x"]).output().unwrap();
        assert_eq!(refused.status.code(), Some(5), "{}", show(&refused));
        assert!(
            show(&refused).contains(&format!("the partitioned queue {q}: enqueue to {q}")),
            "{}",
            show(&refused)
        );
    }

    // A user whose ACL reaches partitions 0 and 1 of 4, and the definition.
    let mut conn = server.client().get_connection().unwrap();
    let mut acl = redis::cmd("ACL");
    acl.arg(&["SETUSER", "two", "on", ">pw", "+@all", "~emq:queues"]).arg(format!("~emq:{{{q}}}:partitions"));
    for k in 0..2 {
        acl.arg(format!("~emq:{{{}}}:*", partition_name(&q, k, 4)));
    }
    let _: () = acl.query(&mut conn).unwrap();
    let limited = Emq { url: server.url().replacen("redis://", "redis://two:pw@", 1), via: "native" };
    let paused = limited.command(&["pause", &q]).output().unwrap();
    let said = show(&paused);
    assert_eq!(paused.status.code(), Some(4), "{said}");
    let (first, second) = (partition_name(&q, 0, 4), partition_name(&q, 1, 4));
    assert!(
        said.contains(&format!("changed 2 of the 5 queues of {q} ({first}, {second}); not the rest")),
        "{said}"
    );
    assert!(said.contains("running the same command again is safe"), "{said}");
    let stats = emq.ok(&["stats", &q]);
    assert_eq!(stats.lines().filter(|line| line.contains("paused")).count(), 2, "{stats}");
    // The whole of it, by a user who reaches every queue: its own queue paused too.
    assert!(emq.ok(&["pause", &q]).contains("its 4 partitions and its own queue"));
    let paused: Option<String> =
        redis::cmd("HGET").arg(format!("emq:{{{q}}}:config")).arg("paused").query(&mut conn).unwrap();
    assert_eq!(paused.as_deref(), Some("1"), "the ordinary queue of its name");
}
