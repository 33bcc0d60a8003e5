//! Selecting jobs in bulk (issue 30), against a real redis-server on Lua
//! and on Native: `emq retry --all-dead` and `emq cancel --all` over more
//! than a page, their count without `--yes`, `emq find` resumed where it
//! stopped and by id prefix, glob characters taken literally, and bad
//! input refused with nothing changed.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{show, Emq};
use echomq::{EnqueueOptions, Queue, RetryPolicy};
use echomq_test_support::{module_path, unique_queue, RedisCluster, RedisServer};

/// The text the selected jobs hold: glob characters, to be taken literally.
const NEEDLE: &str = "smtp 550*[x]?";

fn servers() -> [(RedisServer, &'static str); 2] {
    [(RedisServer::start(), "lua"), (RedisServer::start_with_module(), "native")]
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime")
}

/// `n` dead jobs in `queue`: job i's payload and last error; every third
/// holds the needle in its payload, every fifth (not third) in its error.
/// Returns the ids of those holding it.
fn seed_dead(server: &RedisServer, queue: &str, n: usize) -> BTreeSet<String> {
    runtime().block_on(async {
        let executor = echomq::connect(&server.client()).await.expect("connect");
        let queue = Queue::new(executor, queue).expect("a queue name");
        let payload =
            |i: usize| if i.is_multiple_of(3) { format!("job {i} {NEEDLE}") } else { format!("job {i}") };
        let enqueued = queue
            .enqueue_many((0..n).map(|i| (payload(i), EnqueueOptions::default())))
            .await
            .expect("enqueue");
        let mut needles = BTreeSet::new();
        for (i, outcome) in enqueued.into_iter().enumerate() {
            if i.is_multiple_of(3) || i.is_multiple_of(5) {
                needles.insert(outcome.expect("enqueued").id.as_str().to_owned());
            }
        }
        let policy = RetryPolicy::new().max_attempts(1);
        let mut dead = 0;
        while dead < n {
            let leases = queue.claim_many(Duration::from_secs(600), 100, None).await.expect("claim");
            assert!(!leases.jobs.is_empty(), "{dead} of {n} dead, none left to claim");
            for lease in leases.jobs {
                let i: usize = String::from_utf8_lossy(&lease.payload)
                    .split_whitespace()
                    .nth(1)
                    .and_then(|i| i.parse().ok())
                    .expect("job i");
                let error = if i.is_multiple_of(5) && !i.is_multiple_of(3) {
                    format!("{NEEDLE} refused")
                } else {
                    "disk full".into()
                };
                lease.fail(&error, &policy).await.expect("fail");
                dead += 1;
            }
        }
        needles
    })
}

/// The members of one of `queue`'s state sets.
fn members(server: &RedisServer, queue: &str, state: &str) -> BTreeSet<String> {
    let mut conn = server.client().get_connection().expect("connect");
    redis::cmd("ZRANGE")
        .arg(format!("emq:{{{queue}}}:{state}"))
        .arg(0)
        .arg(-1)
        .query(&mut conn)
        .expect("ZRANGE")
}

/// Everything a change would touch: each set's members and the event log's length.
fn snapshot(server: &RedisServer, queue: &str) -> (Vec<BTreeSet<String>>, u64) {
    let sets = ["pending", "active", "delayed", "done", "dead", "cancelled"]
        .iter()
        .map(|state| members(server, queue, state))
        .collect();
    let mut conn = server.client().get_connection().expect("connect");
    let events: u64 =
        redis::cmd("XLEN").arg(format!("emq:{{{queue}}}:events")).query(&mut conn).expect("XLEN");
    (sets, events)
}

/// 250 dead jobs, 117 holding the needle in their payload or error: the
/// count without --yes changes nothing; with it, exactly those are retried,
/// over three pages; then the rest are cancelled by state alone.
#[test]
fn every_matching_dead_job_is_retried_after_a_count_and_the_rest_cancelled() {
    for (server, via) in servers() {
        let emq = Emq { url: server.url(), via };
        let q = unique_queue("retry-all");
        let needles = seed_dead(&server, &q, 250);
        assert_eq!(needles.len(), 117, "{via}: 84 payloads, 33 errors");
        let before = snapshot(&server, &q);

        let said = emq.ok(&["retry", "--all-dead", "--queue", &q, "--matching", NEEDLE]);
        assert!(
            said.starts_with("would retry 117 dead jobs of ") && said.contains("add --yes"),
            "{via}: {said}"
        );
        assert_eq!(snapshot(&server, &q), before, "{via}: a count changes nothing");

        let said = emq.ok(&["retry", "--all-dead", "--queue", &q, "--matching", NEEDLE, "--yes"]);
        assert!(
            said.contains("retried 117 dead jobs") && said.contains("(250 looked at, 133 left dead, 0 gone"),
            "{via}: {said}"
        );
        assert_eq!(members(&server, &q, "pending"), needles, "{via}: exactly the matching jobs");
        assert_eq!(members(&server, &q, "dead").len(), 133, "{via}");

        let said = emq.ok(&["cancel", "--all", "dead", "--queue", &q]);
        assert!(said.starts_with("would cancel 133 dead jobs of "), "{via}: {said}");
        assert_eq!(members(&server, &q, "dead").len(), 133, "{via}");
        let said = emq.ok(&["cancel", "--all", "dead", "--queue", &q, "--yes"]);
        assert!(said.contains("cancelled 133 dead jobs"), "{via}: {said}");
        assert_eq!(members(&server, &q, "cancelled").len(), 133, "{via}");
        assert!(members(&server, &q, "dead").is_empty(), "{via}");
        assert_eq!(members(&server, &q, "pending"), needles, "{via}: the retried ones untouched");
    }
}

/// Pending jobs all of priority 0 (equal scores, in id order): cancelling
/// the matching ones walks past those it leaves, page after page.
#[test]
fn matching_pending_jobs_of_equal_priority_are_cancelled_and_the_rest_kept() {
    for (server, via) in servers() {
        let emq = Emq { url: server.url(), via };
        let q = unique_queue("cancel-all");
        let ids: Vec<String> = runtime().block_on(async {
            let queue = Queue::new(echomq::connect(&server.client()).await.unwrap(), &q).unwrap();
            let jobs = (0..250u32).map(|i| {
                (
                    if i.is_multiple_of(2) { format!("{i} {NEEDLE}") } else { i.to_string() },
                    EnqueueOptions::default(),
                )
            });
            queue
                .enqueue_many(jobs)
                .await
                .unwrap()
                .into_iter()
                .map(|e| e.unwrap().id.as_str().to_owned())
                .collect()
        });
        let matching: BTreeSet<String> = ids.iter().step_by(2).cloned().collect();
        let said = emq.ok(&["cancel", "--all", "pending", "--queue", &q, "--matching", NEEDLE, "--yes"]);
        assert!(
            said.contains("cancelled 125 pending jobs") && said.contains("125 left pending"),
            "{via}: {said}"
        );
        assert_eq!(members(&server, &q, "cancelled"), matching, "{via}");
        assert_eq!(members(&server, &q, "pending").len(), 125, "{via}");
        // Nothing left to match: the count says so.
        let said = emq.ok(&["cancel", "--all", "pending", "--queue", &q, "--matching", NEEDLE]);
        assert!(said.starts_with("would cancel 0 pending jobs"), "{via}: {said}");
    }
}

/// A bulk cancel cut short (here by a member of pending that is no job id,
/// met on its third page) says how far it got and that running it again
/// takes what is left; the jobs before the cut are cancelled, the rest kept.
#[test]
fn a_bulk_cancel_cut_short_says_how_far_it_got() {
    let (server, via) = (RedisServer::start(), "lua");
    let emq = Emq { url: server.url(), via };
    let q = unique_queue("cut-short");
    runtime().block_on(async {
        let queue = Queue::new(echomq::connect(&server.client()).await.unwrap(), &q).unwrap();
        let jobs = (0..250u32).map(|i| (i.to_string(), EnqueueOptions::default()));
        for outcome in queue.enqueue_many(jobs).await.unwrap() {
            outcome.unwrap();
        }
    });
    let mut conn = server.client().get_connection().unwrap();
    // Past every job id in byte order (all of one score): the third page's.
    let () = redis::cmd("ZADD")
        .arg(format!("emq:{{{q}}}:pending"))
        .arg(0)
        .arg("not-a-job")
        .query(&mut conn)
        .unwrap();
    let output = emq.command(&["cancel", "--all", "pending", "--queue", &q, "--yes"]).output().unwrap();
    let said = show(&output);
    assert!(!output.status.success(), "{said}");
    assert!(said.contains("stopped there, after 200 cancelled"), "{said}");
    assert!(said.contains("the same command again takes what is left"), "{said}");
    assert_eq!(members(&server, &q, "cancelled").len(), 200, "{said}");
    assert_eq!(members(&server, &q, "pending").len(), 51, "{said}");
}

/// `emq delete` (REMOVE, protocol 1.4): the matching pending jobs deleted
/// over several pages, records and all; ids named in another state left.
#[test]
fn matching_jobs_are_deleted_and_the_rest_kept() {
    for (server, via) in servers() {
        let emq = Emq { url: server.url(), via };
        let q = unique_queue("delete-all");
        let ids: Vec<String> = runtime().block_on(async {
            let queue = Queue::new(echomq::connect(&server.client()).await.unwrap(), &q).unwrap();
            let jobs = (0..250u32).map(|i| {
                (
                    if i.is_multiple_of(2) { format!("{i} {NEEDLE}") } else { i.to_string() },
                    EnqueueOptions::default(),
                )
            });
            queue
                .enqueue_many(jobs)
                .await
                .unwrap()
                .into_iter()
                .map(|e| e.unwrap().id.as_str().to_owned())
                .collect()
        });
        let said = emq.ok(&["delete", "--all", "pending", "--queue", &q, "--matching", NEEDLE]);
        assert!(said.starts_with("would delete 125 pending jobs"), "{via}: {said}");
        assert_eq!(members(&server, &q, "pending").len(), 250, "{via}: a count changes nothing");
        let said = emq.ok(&["delete", "--all", "pending", "--queue", &q, "--matching", NEEDLE, "--yes"]);
        assert!(said.contains("deleted 125 pending jobs"), "{via}: {said}");
        let kept: BTreeSet<String> = ids.iter().skip(1).step_by(2).cloned().collect();
        assert_eq!(members(&server, &q, "pending"), kept, "{via}");
        let mut conn = server.client().get_connection().unwrap();
        let record: bool =
            redis::cmd("EXISTS").arg(format!("emq:{{{q}}}:job:{}", ids[0])).query(&mut conn).unwrap();
        assert!(!record, "{via}: the record went with it");
        // By id: one pending deleted, one named in the wrong state left.
        let said = emq.ok(&["delete", "--queue", &q, "--state", "pending", &ids[1], &ids[0]]);
        assert!(said.starts_with("deleted 1 of 2 pending job(s)"), "{via}: {said}");
        assert_eq!(members(&server, &q, "pending").len(), 124, "{via}");
    }
}

/// `emq find` looks at its budget and says where to resume: three steps
/// find every matching job once, newest first; `--limit` stops early.
#[test]
fn a_find_resumed_where_it_stopped_finds_each_job_once() {
    for (server, via) in servers() {
        let emq = Emq { url: server.url(), via };
        let q = unique_queue("find");
        let needles = seed_dead(&server, &q, 250);
        let mut found = Vec::new();
        let mut from = "0".to_owned();
        for (step, resume) in [(1, Some("100")), (2, Some("200")), (3, None)] {
            let (out, footer) =
                emq.ok_said(&["find", &q, NEEDLE, "--budget", "100", "--limit", "1000", "--from", &from]);
            found.extend(out.lines().map(str::to_owned));
            match resume {
                Some(next) => {
                    assert!(
                        footer.contains(&format!("of 250 dead jobs of {q}; resume with --from {next}")),
                        "{via} {step}: {footer}"
                    );
                    from = next.to_owned();
                }
                None => assert!(
                    footer.contains("examined 250 of 250 dead jobs") && footer.contains(": all"),
                    "{via}: {footer}"
                ),
            }
        }
        assert_eq!(found.len(), needles.len(), "{via}: each once");
        assert_eq!(found.iter().cloned().collect::<BTreeSet<_>>(), needles, "{via}");

        // Newest first: the first the walk gives is the last to have died.
        let mut conn = server.client().get_connection().unwrap();
        let newest: Vec<String> = redis::cmd("ZRANGE")
            .arg(format!("emq:{{{q}}}:dead"))
            .arg(0)
            .arg(0)
            .arg("REV")
            .query(&mut conn)
            .unwrap();
        assert_eq!(emq.ok(&["find", &q, "--limit", "1"]).trim(), newest[0], "{via}");

        let (out, footer) = emq.ok_said(&["find", &q, NEEDLE, "--limit", "5"]);
        assert_eq!(out.lines().count(), 5, "{via}: {out}");
        assert!(
            footer.starts_with("5 found; examined ") && footer.contains("resume with --from "),
            "{via}: {footer}"
        );
        // The text is bytes, not a pattern: `smtp*x`, as a glob, would match the needle.
        let (out, footer) = emq.ok_said(&["find", &q, "smtp*x"]);
        assert!(
            out.is_empty() && footer.starts_with("0 found; examined 250 of 250"),
            "{via}: {out} {footer}"
        );
    }
}

/// `emq find --id PREFIX` searches every state's set; glob characters in
/// the prefix are literal; a small budget says it stopped.
#[test]
fn an_id_prefix_is_found_in_any_state_and_taken_literally() {
    for (server, via) in servers() {
        let emq = Emq { url: server.url(), via };
        let q = unique_queue("prefix");
        for id in ["JOB*a", "JOB*b", "JOBxa", "JOB?c"] {
            emq.ok(&["enqueue", &q, "x", "--id", id]);
        }
        emq.ok(&["cancel", "JOB*b", "--queue", &q]);
        let (out, footer) = emq.ok_said(&["find", &q, "--id", "JOB*"]);
        let found: BTreeSet<&str> = out.lines().collect();
        assert_eq!(found, BTreeSet::from(["JOB*a  pending", "JOB*b  cancelled"]), "{via}: {out}");
        assert!(footer.contains("2 found") && footer.contains("every set looked through"), "{via}: {footer}");
        assert_eq!(emq.ok(&["find", &q, "--id", "JOB?"]).trim(), "JOB?c  pending", "{via}");

        // A minted id by a prefix of it, and whole.
        let minted = emq.ok(&["enqueue", &q, "y"]).trim().to_owned();
        assert_eq!(
            emq.ok(&["find", &q, "--id", &minted[..12]]).trim(),
            format!("{minted}  pending"),
            "{via}"
        );
        assert_eq!(emq.ok(&["find", &q, "--id", &minted]).trim(), format!("{minted}  pending"), "{via}");

        // A set too large to scan in one call, a budget too small for it.
        let big = unique_queue("prefix-big");
        seed_dead(&server, &big, 250);
        let (_, footer) = emq.ok_said(&["find", &big, "--id", "JOB_", "--budget", "10", "--limit", "1000"]);
        assert!(footer.contains("stopped after about 10 members"), "{via}: {footer}");
        let (out, footer) =
            emq.ok_said(&["find", &big, "--id", "JOB_", "--budget", "100000", "--limit", "1000"]);
        assert_eq!(out.lines().count(), 250, "{via}: {footer}");
    }
}

/// Bad input is refused with a clear error, and nothing changes.
#[test]
fn bad_input_is_refused_and_changes_nothing() {
    for (server, via) in servers() {
        let emq = Emq { url: server.url(), via };
        let q = unique_queue("refused");
        seed_dead(&server, &q, 5);
        let before = snapshot(&server, &q);
        let refused = |args: &[&str], code: i32, says: &str| {
            let output = emq.command(args).output().expect("run emq");
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(code), "{via}: {args:?}: {}", show(&output));
            assert!(stderr.contains(says), "{via}: {args:?}: {stderr}");
            assert_eq!(snapshot(&server, &q), before, "{via}: {args:?} changed something");
        };
        // A bad queue name: refused by the host before anything is sent.
        refused(&["retry", "--all-dead", "--queue", "a{b}", "--yes"], 5, "queue name");
        refused(&["cancel", "--all", "dead", "--queue", "a{b}", "--yes"], 5, "queue name");
        refused(&["find", "a{b}", "x"], 5, "queue name");
        // A bad state, or one the action does not take.
        refused(&["cancel", "--all", "done", "--queue", &q, "--yes"], 2, "cannot cancel done jobs");
        refused(&["cancel", "--all", "dying", "--queue", &q, "--yes"], 2, "is not a state");
        refused(&["find", &q, "x", "--state", "dying"], 2, "is not a state");
        // A job id of the wrong kind, by id or as a prefix.
        refused(&["retry", "NOTAJOB", "--queue", &q], 2, "JOB");
        refused(&["cancel", "NOTAJOB", "--queue", &q], 2, "JOB");
        refused(&["find", &q, "--id", "XYZ"], 2, "no job id starts with \"XYZ\"");
        // An empty text, a budget of 0, flags apart from what they qualify.
        refused(&["retry", "--all-dead", "--queue", &q, "--matching", "", "--yes"], 2, "empty");
        refused(&["find", &q, "x", "--budget", "0"], 2, "budget of 0");
        refused(&["cancel", "--all", "dead", "--yes"], 2, "--queue");
        refused(&["cancel", "--yes", "--queue", &q], 2, "--all");
        refused(&["retry", "--yes", "--queue", &q], 2, "--all-dead");
    }
}

/// `--cluster`: a queue on another node than the URL's, its jobs found by
/// text and by id, and cancelled by state and text, over more than a page.
#[test]
fn a_selection_on_a_cluster_reaches_the_queues_node() {
    let cluster = RedisCluster::start(3, Some(module_path()));
    for via in ["lua", "native"] {
        let emq = Emq { url: cluster.urls()[0].clone(), via };
        let cli = |args: &[&str]| {
            let mut all = vec!["--cluster"];
            all.extend_from_slice(args);
            emq.ok_said(&all)
        };
        let node = |q: &str| cluster.owner(cluster.slot(&format!("{{{q}}}")));
        let q = std::iter::repeat_with(|| unique_queue("c-select")).find(|q| node(q) != 0).unwrap();
        let lines: String =
            (0..150).map(|i| format!("\"{i}{}\"\n", if i < 120 { " tenant-7" } else { "" })).collect();
        let mut enqueue = emq.command(&["--cluster", "enqueue", &q, "--jsonl"]);
        let mut child =
            enqueue.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), lines.as_bytes()).unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{via}: {}", show(&output));
        let ids: Vec<String> = String::from_utf8_lossy(&output.stdout).lines().map(str::to_owned).collect();
        assert_eq!(ids.len(), 150, "{via}");

        let (out, footer) = cli(&["find", &q, "tenant-7", "--state", "pending", "--limit", "1000"]);
        assert_eq!(out.lines().count(), 120, "{via}: {footer}");
        let (out, _) = cli(&["find", &q, "--id", &ids[0]]);
        assert_eq!(out.trim(), format!("{}  pending", ids[0]), "{via}");
        let (said, _) = cli(&["cancel", "--all", "pending", "--queue", &q, "--matching", "tenant-7"]);
        assert!(said.starts_with("would cancel 120 pending jobs"), "{via}: {said}");
        let (said, _) =
            cli(&["cancel", "--all", "pending", "--queue", &q, "--matching", "tenant-7", "--yes"]);
        assert!(
            said.contains("cancelled 120 pending jobs") && said.contains("30 left pending"),
            "{via}: {said}"
        );
        let (out, _) = cli(&["find", &q, "--state", "pending", "--limit", "1000"]);
        let left: BTreeSet<&str> = out.lines().collect();
        assert_eq!(left, ids[120..].iter().map(String::as_str).collect(), "{via}");
    }
}
