//! Every `emq` command against a real redis-server, on Lua and on Native:
//! enqueue, inspect, list, stats, queues, retry, cancel, purge, and `emq work`
//! running a shell command per job, acking on exit 0 and failing with stderr;
//! pause, resume, limit and config; and the same against a Redis Cluster
//! with `--cluster`.

use std::process::{Child, Command, Stdio};

use echomq_test_support::{module_path, unique_queue, RedisCluster, RedisServer, ServerOptions};

mod common;

use common::{eventually, show};

struct Cli {
    url: String,
    via: &'static str,
    /// `--cluster`: the URL is one node of a Redis Cluster.
    cluster: bool,
}

impl Cli {
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_emq"));
        command.args(["--url", &self.url, "--via", self.via]);
        if self.cluster {
            command.arg("--cluster");
        }
        command.args(args);
        command
    }

    /// Run and expect success; stdout.
    fn ok(&self, args: &[&str]) -> String {
        self.ok_said(args).0
    }

    /// [`ok`](Self::ok)'s stdout, and its stderr.
    fn ok_said(&self, args: &[&str]) -> (String, String) {
        let output = self.command(args).output().expect("run emq");
        assert!(output.status.success(), "emq {args:?}: {}", show(&output));
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        (text(&output.stdout), text(&output.stderr))
    }

    /// Run and expect failure; stderr.
    fn fails(&self, args: &[&str]) -> String {
        let output = self.command(args).output().expect("run emq");
        assert!(!output.status.success(), "emq {args:?} should fail: {}", show(&output));
        String::from_utf8_lossy(&output.stderr).into_owned()
    }

    fn stats_row(&self, queue: &str) -> Vec<u64> {
        let out = self.ok(&["stats", queue]);
        let row = out.lines().find(|l| l.starts_with(queue)).unwrap_or_else(|| panic!("no row in {out}"));
        row.split_whitespace().skip(1).take(6).map(|n| n.parse().unwrap()).collect()
    }
}

#[test]
fn schedules_are_added_listed_with_their_next_tick_and_removed() {
    for (server, via) in servers() {
        let cli = Cli { url: server.url(), via, cluster: false };
        let q = unique_queue("cron");
        let added = cli.ok(&[
            "schedule",
            "add",
            &q,
            "digest",
            "{}",
            "--cron",
            "0 9 * * MON-FRI",
            "--tz",
            "Europe/Paris",
        ]);
        assert!(added.contains(&format!("scheduled digest in {q}: next at ")), "{via}: {added}");
        cli.ok(&["schedule", "add", &q, "beat", "b", "--every", "30s", "--missed", "all:5"]);
        let (listed, footer) = cli.ok_said(&["schedule", "list", &q]);
        assert!(
            listed.contains("beat  next ") && listed.contains("every 30s  missed all:5"),
            "{via}: {listed}"
        );
        assert!(listed.contains(r#"cron "0 9 * * MON-FRI" Europe/Paris"#), "{via}: {listed}");
        assert!(footer.contains("2 schedules in") && !listed.contains("schedules in"), "{via}: {footer}");
        // Bad input: a clear error, nothing written.
        for bad in [
            vec!["schedule", "add", &q, "x", "p", "--cron", "61 * * * *"],
            vec!["schedule", "add", &q, "x", "p", "--cron", "* * * * *", "--tz", "Mars/Olympus"],
            vec!["schedule", "add", &q, "x", "p", "--every", "0s"],
            vec!["schedule", "add", &q, "x", "p", "--every", "1s", "--missed", "all:0"],
        ] {
            cli.fails(&bad);
        }
        // Neither --cron nor --every: the error names both.
        let neither = cli.fails(&["schedule", "add", &q, "x", "p"]);
        assert!(neither.contains("--cron") && neither.contains("--every"), "{via}: {neither}");
        let both = cli.fails(&["schedule", "add", &q, "x", "p", "--cron", "* * * * *", "--every", "1s"]);
        assert!(both.contains("cannot be used with"), "{via}: {both}");
        // Trigger: the schedule's job now, its id alone on stdout.
        let triggered = cli.ok(&["schedule", "trigger", &q, "beat"]).trim().to_owned();
        assert!(triggered.starts_with("JOB_"), "{via}: {triggered}");
        let shown = cli.ok(&["inspect", &triggered]);
        assert!(shown.contains("pending") && shown.contains(&q), "{via}: {shown}");
        let nothing = cli.fails(&["schedule", "trigger", &q, "nightly"]);
        assert!(nothing.contains("no schedule nightly"), "{via}: {nothing}");
        assert!(cli.fails(&["schedule", "trigger", &q, ""]).contains("schedule name must be"), "{via}");
        assert!(cli.ok(&["schedule", "remove", &q, "digest"]).contains("removed digest"));
        assert!(cli.fails(&["schedule", "remove", &q, "digest"]).contains("no schedule digest"));
        assert!(cli.ok_said(&["schedule", "list", &q]).1.contains("1 schedules in"), "{via}");
    }
}

#[test]
fn a_schedule_is_paused_listed_as_paused_and_resumed() {
    for (server, via) in servers() {
        let cli = Cli { url: server.url(), via, cluster: false };
        let q = unique_queue("pause");
        cli.ok(&["schedule", "add", &q, "beat", "b", "--every", "1h"]);
        cli.ok(&["schedule", "add", &q, "digest", "{}", "--cron", "0 9 * * *"]);
        let paused = cli.ok(&["schedule", "pause", &q, "beat"]);
        assert!(paused.contains(&format!("paused beat in {q}")), "{via}: {paused}");
        let listed = cli.ok(&["schedule", "list", &q]);
        let line = |name: &str| listed.lines().find(|l| l.starts_with(name)).unwrap_or_default().to_owned();
        assert!(line("beat").ends_with("missed last  paused"), "{via}: {listed}");
        assert!(!line("digest").contains("paused"), "{via}: only the one paused: {listed}");
        // Paused already: said the same, still paused.
        cli.ok(&["schedule", "pause", &q, "beat"]);
        assert!(cli.ok(&["schedule", "list", &q]).contains("paused"), "{via}");
        let resumed = cli.ok(&["schedule", "resume", &q, "beat"]);
        assert!(resumed.contains(&format!("resumed beat in {q}: next at ")), "{via}: {resumed}");
        assert!(!cli.ok(&["schedule", "list", &q]).contains("paused"), "{via}");
        // No such schedule, or a bad name: a clear error, nothing written.
        for command in ["pause", "resume"] {
            let nothing = cli.fails(&["schedule", command, &q, "nightly"]);
            assert!(nothing.contains(&format!("no schedule nightly in {q}")), "{via}: {nothing}");
            let bad = cli.fails(&["schedule", command, &q, ""]);
            assert!(bad.contains("schedule name must be"), "{via}: {bad}");
        }
        let (listed, footer) = cli.ok_said(&["schedule", "list", &q]);
        assert!(!listed.contains("paused") && footer.contains("2 schedules in"), "{via}: {footer}");
    }
}

fn servers() -> Vec<(RedisServer, &'static str)> {
    vec![
        (RedisServer::start(), "lua"),
        (
            RedisServer::start_with(ServerOptions {
                module: Some(module_path()),
                ..ServerOptions::default()
            }),
            "native",
        ),
    ]
}

/// One damaged queue (a key of the wrong type) is named by `emq stats`,
/// which goes on to the others and then fails.
#[test]
fn stats_names_a_damaged_queue_and_counts_the_others() {
    for (server, via) in servers() {
        let cli = Cli { url: server.url(), via, cluster: false };
        let (good, broken) = (unique_queue("good"), unique_queue("broken"));
        cli.ok(&["enqueue", &good, "x"]);
        let mut conn = server.client().get_connection().unwrap();
        let () =
            redis::cmd("SET").arg(format!("emq:{{{broken}}}:pending")).arg("x").query(&mut conn).unwrap();
        // A queue the registry names (as a producer noted it), its key since damaged.
        let () = redis::cmd("ZADD").arg("emq:queues").arg(1).arg(&broken).query(&mut conn).unwrap();
        let output = cli.command(&["stats"]).output().unwrap();
        let (out, err) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        assert_eq!(output.status.code(), Some(1), "{via}: {out} {err}");
        assert!(out.lines().any(|l| l.starts_with(&broken) && l.contains("unreadable: ")), "{via}: {out}");
        assert!(
            out.lines().any(|l| l.starts_with(&good) && l.split_whitespace().nth(1) == Some("1")),
            "{via}: {out}"
        );
        assert!(err.contains("1 queue(s) could not be read"), "{via}: {err}");
        // A read of the damaged key, and a transition refused by it, say what to do.
        for args in [vec!["list", broken.as_str(), "pending"], vec!["drain", broken.as_str()]] {
            let output = cli.command(&args).output().unwrap();
            let err = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(5), "{via} {args:?}: {err}");
            assert!(err.contains("rename or delete that key"), "{via} {args:?}: {err}");
        }
        let err =
            String::from_utf8_lossy(&cli.command(&["list", &broken, "pending"]).output().unwrap().stderr)
                .into_owned();
        assert!(err.contains("holds another type") && err.contains("emq stats QUEUE"), "{via}: {err}");
    }
}

#[test]
fn the_operations_commands() {
    for (server, via) in servers() {
        let cli = Cli { url: server.url(), via, cluster: false };
        let q = unique_queue("ops");
        let id = cli.ok(&["enqueue", &q, "hello world", "--priority", "-2"]).trim().to_owned();
        assert!(id.starts_with("JOB_") && id.len() == 30, "{via}: {id}");
        let (again, said) = cli.ok_said(&["enqueue", &q, "other", "--id", &id]);
        assert_eq!(again.trim(), id, "{via}: the id alone on stdout");
        assert!(said.contains("duplicate"), "{via}: {said}");
        let later = cli.ok(&["enqueue", &q, "-", "--delay", "1h"]);
        assert!(later.starts_with("JOB_"));
        // Dedup by a key, in a queue of its own: the second job is refused with the first one's id.
        // A job's own policy is shown by inspect.
        let pq = unique_queue("policy");
        let own = cli.ok(&["enqueue", &pq, "own", "--attempts", "3", "--timeout", "5m"]).trim().to_owned();
        let shown = cli.ok(&["inspect", &own]);
        assert!(shown.contains("policy    attempts 3, timeout 5m"), "{via}: {shown}");
        let plain = cli.ok(&["inspect", &id]);
        assert!(!plain.contains("policy"), "{via}");
        assert!(plain.contains("priority  -2 (lower first)"), "{via}: {plain}");
        assert!(!shown.contains("priority"), "{via}: priority 0 is not shown: {shown}");
        let dq = unique_queue("dedup");
        let unique = ["--unique", "user:42", "--unique-for", "10m"];
        let held = cli.ok(&[&["enqueue", &dq, "a"][..], &unique].concat()).trim().to_owned();
        let (refused, said) = cli.ok_said(&[&["enqueue", &dq, "b"][..], &unique].concat());
        assert_eq!(refused.trim(), held, "{via}: the holder's id alone on stdout");
        assert!(said.contains("holds the --unique key"), "{via}: {said}");
        assert_eq!(cli.stats_row(&dq), [1, 0, 0, 0, 0, 0], "{via}");
        assert!(cli.fails(&["enqueue", &dq, "c", "--unique", "k"]).contains("--unique-for"), "{via}");
        // Drain, then delete: the queue and its dedup key are gone.
        cli.ok(&["enqueue", &dq, "later", "--delay", "1h"]);
        assert!(cli.ok(&["drain", &dq]).contains("drained 2 pending, delayed and waiting jobs"), "{via}");
        cli.ok(&["enqueue", &dq, "x"]);
        assert!(
            cli.ok(&["delete-queue", &dq]).contains(&format!("deleted queue {dq} and its 1 jobs")),
            "{via}"
        );
        let mut raw = server.client().get_connection().unwrap();
        let keys: Vec<String> = redis::cmd("KEYS").arg(format!("emq:{{{dq}}}:*")).query(&mut raw).unwrap();
        assert!(keys.is_empty(), "{via}: {keys:?}");

        let inspected = cli.ok(&["inspect", &id]);
        for line in
            [format!("{id} in {q}"), "state     pending".into(), "payload   hello world (11 bytes)".into()]
        {
            assert!(inspected.contains(&line), "{via}: {line:?} not in {inspected}");
        }
        // A progress report beside the record (a handler's PROGRESS writes it).
        let mut conn = server.client().get_connection().unwrap();
        let () = redis::cmd("HSET")
            .arg(format!("emq:{{{q}}}:progress"))
            .arg(&id)
            .arg("3 of 4")
            .query(&mut conn)
            .unwrap();
        assert!(cli.ok(&["inspect", &id]).contains("progress  3 of 4"), "{via}");
        let (listed, footer) = cli.ok_said(&["list", &q, "pending"]);
        assert!(
            listed.contains(&format!("{id}  priority -2")) && footer.contains("1 of 1 pending"),
            "{listed}"
        );
        assert!(!listed.contains(" of "), "the footer is on stderr: {listed}");
        assert!(cli.ok(&["list", &q, "delayed"]).contains("due "), "{via}");
        assert_eq!(cli.stats_row(&q), [1, 0, 1, 0, 0, 0], "{via}");
        assert!(cli.ok(&["queues"]).lines().any(|l| l == q), "{via}");
        // A queue written before the registry (its keys alone) is found by
        // --scan, and noted: then the registry alone lists it.
        let old = unique_queue("unregistered");
        let () = redis::cmd("ZADD")
            .arg(format!("emq:{{{old}}}:pending"))
            .arg(0)
            .arg("JOB_x")
            .query(&mut conn)
            .unwrap();
        assert!(!cli.ok(&["queues"]).lines().any(|l| l == old), "{via}: not in the registry");
        assert!(cli.ok(&["queues", "--scan"]).lines().any(|l| l == old), "{via}: found by the scan");
        assert!(cli.ok(&["queues"]).lines().any(|l| l == old), "{via}: noted by the scan");

        // Cancel, refuse a retry of a job that is not dead, purge.
        assert!(cli.ok(&["cancel", &id]).contains(&format!("cancelled {id}")));
        assert!(cli.ok(&["cancel", &id, "--queue", &q]).contains("cancelled already"));
        assert!(cli.fails(&["retry", &id]).contains("EMQSTATE"), "{via}");
        assert!(cli.ok(&["purge", &q, "--state", "cancelled"]).contains("purged 1 cancelled"));
        assert!(cli.fails(&["inspect", &id]).contains("no job"), "{via}");
        // A job that is not there exits 9, as emq result's does: found by no scan, or by the server.
        for args in [vec!["inspect", &id], vec!["retry", &id], vec!["retry", &id, "--queue", &q]] {
            let gone = cli.command(&args).output().unwrap();
            assert_eq!(gone.status.code(), Some(9), "{via}: {args:?} {}", show(&gone));
        }
        // Every id is tried: a job that is gone does not stop the others.
        let later = later.trim();
        let output = cli.command(&["cancel", &id, later]).output().unwrap();
        let (out, err) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        assert!(!output.status.success() && out.contains(&format!("cancelled {later}")), "{via}: {out}{err}");
        assert!(err.contains(&id) && err.contains("1 of 2 job(s) not cancelled"), "{via}: {err}");

        // Bad input: a clear error, nothing written.
        assert!(cli.fails(&["enqueue", "bad{name}", "x"]).contains("invalid queue name"));
        assert!(cli.fails(&["inspect", "XYZ"]).contains("invalid job id"));
        assert_eq!(cli.stats_row(&q), [0, 0, 0, 0, 0, 1], "{via}");
    }
}

/// Pause, resume, limit and config on Lua and Native: each is one CONFIG, shown
/// by `emq stats`; `emq work` claims nothing from a paused queue and runs its
/// jobs once resumed; bad limits are refused and change nothing.
#[test]
fn the_flow_control_commands() {
    for (server, via) in servers() {
        let cli = Cli { url: server.url(), via, cluster: false };
        let q = unique_queue("flow");
        // Paused before its first job: done, with a note in case the name is misspelt.
        let paused = cli.command(&["pause", &q]).output().unwrap();
        assert!(String::from_utf8_lossy(&paused.stdout).contains(&format!("paused {q}")), "{via}");
        assert!(String::from_utf8_lossy(&paused.stderr).contains("holds no job (a misspelt name?)"), "{via}");
        cli.ok(&["enqueue", &q, "ok"]);
        let again = cli.command(&["pause", &q]).output().unwrap();
        assert!(again.status.success() && again.stderr.is_empty(), "{via}: a queue with a job gets no note");
        let stats = cli.ok(&["stats", &q]);
        assert!(
            stats.contains("flow") && stats.lines().any(|l| l.starts_with(&q) && l.ends_with("paused")),
            "{via}: {stats}"
        );

        let limited = cli.ok(&["limit", &q, "--rate", "100/1s", "--concurrency", "10"]);
        assert!(limited.contains("paused, concurrency 10, rate 100/1s"), "{via}: {limited}");
        let shown = cli.ok(&["config", &q]);
        for line in ["paused         true", "concurrency    10", "rate           100/1s"] {
            assert!(shown.contains(line), "{via}: {line:?} not in {shown}");
        }
        // Bad input: refused before anything is sent, the settings unchanged.
        assert!(cli.fails(&["limit", &q, "--rate", "0/1s"]).contains("1 to 100000 claims"), "{via}");
        assert!(cli.fails(&["limit", &q, "--rate", "5"]).contains("<claims>/<period>"), "{via}");
        assert!(cli.fails(&["limit", &q, "--rate", "5/2d"]).contains("from 1ms to 24h"), "{via}");
        assert!(cli.fails(&["limit", &q, "--concurrency", "0"]).contains("none"), "{via}");
        assert!(cli.fails(&["limit", &q]).contains("--rate <RATE>|--concurrency <CONCURRENCY>"), "{via}");
        assert!(cli.ok(&["config", &q]).contains("concurrency    10"), "{via}");

        // A worker over the paused queue claims nothing; resumed, it runs the job.
        let mut worker = work(&cli, &q);
        assert_eq!(cli.stats_row(&q), [1, 0, 0, 0, 0, 0], "{via}");
        assert!(cli.ok(&["resume", &q]).contains(&format!("resumed {q}")), "{via}");
        eventually("the job is done", || cli.stats_row(&q) == [0, 0, 0, 1, 0, 0]);
        let _ = worker.kill();
        let _ = worker.wait();

        let cleared = cli.ok(&["config", &q, "--rate", "none", "--concurrency", "none"]);
        assert!(
            cleared.contains("concurrency    none") && cleared.contains("rate           none"),
            "{via}: {cleared}"
        );
        assert!(cli.ok(&["stats", &q]).lines().any(|l| l.starts_with(&q) && l.ends_with("-")), "{via}");

        // Retention: the defaults shown, then changed; bad input refused.
        assert!(cli.ok(&["config", &q]).contains("keep done      1day, at most 10000"), "{via}");
        let kept = cli.ok(&["config", &q, "--keep-done", "none/1", "--keep-dead", "7days/none"]);
        for line in ["keep done      any age, at most 1", "keep dead      7days, any number"] {
            assert!(kept.contains(line), "{via}: {line:?} not in {kept}");
        }
        assert!(cli.fails(&["config", &q, "--keep-done", "1h"]).contains("AGE/COUNT"), "{via}");
        // The worker's upkeep trims done to the newest 1.
        cli.ok(&["enqueue", &q, "ok"]);
        let mut worker = work(&cli, &q);
        eventually("done is trimmed to 1", || cli.stats_row(&q) == [0, 0, 0, 1, 0, 0]);
        let _ = worker.kill();
        let _ = worker.wait();
    }
}

/// The job script: `ok` succeeds; `flaky` fails its first attempt; anything else always fails.
const SCRIPT: &str = r#"payload=$(cat)
case "$payload" in
  ok) exit 0 ;;
  flaky) if [ "$ECHOMQ_JOB_ATTEMPT" = 1 ]; then echo "first try of $ECHOMQ_JOB_ID fails" >&2; exit 3; fi ;;
  slow) sleep 30 ;;
  *) echo "cannot do $payload" >&2; exit 1 ;;
esac"#;

fn work(cli: &Cli, queue: &str) -> Child {
    cli.command(&["work", queue, "--max-attempts", "2", "--backoff", "10ms", "--", "sh", "-c", SCRIPT])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run emq work")
}

#[test]
fn emq_work_runs_a_command_per_job_and_retries_on_failure() {
    for (server, via) in servers() {
        let cli = Cli { url: server.url(), via, cluster: false };
        let q = unique_queue("work");
        cli.ok(&["enqueue", &q, "ok"]);
        let flaky = cli.ok(&["enqueue", &q, "flaky"]).trim().to_owned();
        let broken = cli.ok(&["enqueue", &q, "broken"]).trim().to_owned();
        // Its own policy: one attempt of at most 300 ms (the worker allows 2, and no timeout).
        let slow =
            cli.ok(&["enqueue", &q, "slow", "--timeout", "300ms", "--attempts", "1"]).trim().to_owned();
        let refused = cli.fails(&["enqueue", &q, "never", "--timeout", "0s"]);
        assert!(refused.contains("TIMEOUT must be an integer in 1..=2147483647"), "{via}: {refused}");

        let mut worker = work(&cli, &q);
        eventually("two jobs are done and two are dead", || cli.stats_row(&q) == [0, 0, 0, 2, 2, 0]);
        let timed_out = cli.ok(&["inspect", &slow]);
        assert!(
            timed_out.contains("attempts  1") && timed_out.contains("timed out after 300ms"),
            "{via}: {timed_out}"
        );
        let inspected = cli.ok(&["inspect", &flaky]);
        assert!(
            inspected.contains("attempts  2") && inspected.contains("first try of"),
            "{via}: {inspected}"
        );
        let dead = cli.ok(&["inspect", &broken]);
        assert!(
            dead.contains("state     dead") && dead.contains("exit status: 1: cannot do broken"),
            "{dead}"
        );

        // SIGTERM: a graceful stop.
        let killed = Command::new("kill").args(["-TERM", &worker.id().to_string()]).status().unwrap();
        assert!(killed.success());
        let status = worker.wait().unwrap();
        assert!(status.success(), "{via}: emq work ended with {status}");
        assert!(cli.ok(&["retry", &broken]).contains(&format!("retried {broken}")));
        assert_eq!(cli.stats_row(&q), [1, 0, 0, 2, 1, 0], "{via}");
    }
}

/// `emq retry --all-dead` retries a queue's dead jobs a page at a time,
/// only those whose error contains `--matching` when given; its flags are
/// refused apart from each other (exit 2, nothing sent).
#[test]
fn every_dead_job_matching_a_text_is_retried_in_one_command() {
    for (server, via) in servers() {
        let cli = Cli { url: server.url(), via, cluster: false };
        let q = unique_queue("all-dead");
        for payload in ["smtp", "smtp", "smtp", "disk"] {
            cli.ok(&["enqueue", &q, payload, "--attempts", "1"]);
        }
        let mut worker = work(&cli, &q);
        eventually("four jobs are dead", || cli.stats_row(&q) == [0, 0, 0, 0, 4, 0]);
        let _ = worker.kill();
        let _ = worker.wait();

        let said = cli.ok(&["retry", "--all-dead", "--queue", &q, "--matching", "cannot do smtp", "--yes"]);
        assert!(said.contains("retried 3 dead jobs") && said.contains("1 left dead"), "{via}: {said}");
        assert_eq!(cli.stats_row(&q), [3, 0, 0, 0, 1, 0], "{via}");
        // A retry refused (a key of the wrong type) is counted as left, and said.
        let mut conn = server.client().get_connection().unwrap();
        let priority = format!("emq:{{{q}}}:priority");
        let () = redis::cmd("SET").arg(&priority).arg("x").query(&mut conn).unwrap();
        let output = cli.command(&["retry", "--all-dead", "--queue", &q, "--yes"]).output().unwrap();
        let said = String::from_utf8_lossy(&output.stdout);
        assert!(!output.status.success(), "{via}: {said}");
        assert!(
            said.contains("(1 looked at, 1 left dead, 1 of them refused, 0 gone meanwhile)"),
            "{via}: {said}"
        );
        let () = redis::cmd("DEL").arg(&priority).query(&mut conn).unwrap();
        let said = cli.ok(&["retry", "--all-dead", "--queue", &q, "--yes"]);
        assert!(said.contains("retried 1 dead jobs"), "{via}: {said}");
        assert_eq!(cli.stats_row(&q), [4, 0, 0, 0, 0, 0], "{via}");

        for usage in [&["retry", "--all-dead"][..], &["retry", "--matching", "x", "--queue", &q]] {
            let output = cli.command(usage).output().unwrap();
            assert_eq!(output.status.code(), Some(2), "{via}: {usage:?}");
        }
    }
}

/// `emq events` shows a job's whole life as JSON lines, in order; `emq result
/// --wait` gets what `emq work --result` kept (the command's stdout), from
/// another process, as soon as the job is done; `--header` goes with the job.
#[test]
fn emq_events_follows_a_job_and_emq_result_waits_for_its_result() {
    for (server, via) in servers() {
        let cli = Cli { url: server.url(), via, cluster: false };
        let q = unique_queue("events");
        let id = cli.ok(&["enqueue", &q, "21", "--header", "tenant=acme"]).trim().to_owned();
        let bad = cli.fails(&["enqueue", &q, "21", "--header", "tenant"]);
        assert!(bad.contains("a header is name=value"), "{via}: {bad}");
        // Exit codes a script reads: 8 not finished, 9 no such job, 7 cancelled.
        let code = |args: &[&str]| cli.command(args).output().unwrap().status.code();
        let pending = cli.fails(&["result", &id, "--queue", &q]);
        assert!(pending.contains("is pending") && pending.contains("not finished"), "{via}: {pending}");
        assert_eq!(code(&["result", &id, "--queue", &q]), Some(8), "{via}");
        let unknown = "JOB_00000000000000000000000009";
        assert_eq!(code(&["result", unknown, "--queue", &q]), Some(9), "{via}");
        let cq = unique_queue("cancelled");
        let cancelled = cli.ok(&["enqueue", &cq, "0", "--delay", "1h"]).trim().to_owned();
        cli.ok(&["cancel", &cancelled, "--queue", &cq]);
        assert_eq!(code(&["result", &cancelled, "--queue", &cq]), Some(7), "{via}");
        let events = cli
            .command(&["events", &q, "--from-start", "--count", "3", "--idle", "30s"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run emq events");
        let waiting = cli
            .command(&["result", &id, "--queue", &q, "--wait", "30s"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run emq result");
        let _worker = Killed(
            cli.command(&["work", &q, "--result", "--", "sh", "-c", "n=$(cat); echo $((n * 2))"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("run emq work"),
        );

        let result = waiting.wait_with_output().unwrap();
        assert!(result.status.success(), "{via}: {}", show(&result));
        assert_eq!(String::from_utf8_lossy(&result.stdout), "42\n", "{via}");
        let followed = events.wait_with_output().unwrap();
        assert!(followed.status.success(), "{via}: {}", show(&followed));
        let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&followed.stdout)
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{via}: {line}: {e}")))
            .collect();
        let names: Vec<&str> = lines.iter().map(|line| line["event"].as_str().unwrap()).collect();
        assert_eq!(names, ["enqueued", "active", "completed"], "{via}: {lines:?}");
        assert!(lines.iter().all(|line| line["job"] == id.as_str() && line["queue"] == q.as_str()), "{via}");
        assert_eq!(lines[1]["attempt"], "1", "{via}");
        assert_eq!(lines[2]["result_bytes"], "3", "{via}");
        // Resuming after the second event gives the third.
        let after = lines[1]["event_id"].as_str().unwrap();
        let resumed = cli.ok(&["events", &q, "--after", after, "--count", "1", "--idle", "10s"]);
        assert!(resumed.contains(r#""event":"completed""#), "{via}: {resumed}");
        assert_eq!(cli.ok(&["result", &id, "--queue", &q]), "42\n", "{via}: a finished job's result at once");
        let inspected = cli.ok(&["inspect", &id]);
        assert!(inspected.contains("result    42 (3 bytes)"), "{via}: {inspected}");
        assert!(inspected.contains("header    tenant: acme"), "{via}: {inspected}");

        let quiet = cli.ok(&["config", &q, "--events", "off"]);
        assert!(quiet.contains("events         off"), "{via}: {quiet}");
    }
}

/// A child process killed when dropped, so that a failed assertion does not
/// leave it running.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `--cluster`: queues on different nodes, found by scans of every master;
/// a job inspected and cancelled without naming its queue; `emq work` over
/// two queues on two nodes.
#[test]
fn the_operations_commands_on_a_cluster() {
    let cluster = RedisCluster::start(3, Some(module_path()));
    for via in ["lua", "native"] {
        let cli = Cli { url: cluster.urls()[0].clone(), via, cluster: true };
        // Two queues: one on the node of the URL, one elsewhere, which only
        // the cluster's routing and a scan of every master find.
        let node = |q: &str| cluster.owner(cluster.slot(&format!("{{{q}}}")));
        let on = |wanted: bool| {
            std::iter::repeat_with(|| unique_queue("c-ops")).find(|q| (node(q) == 0) == wanted).unwrap()
        };
        let (first, second) = (on(true), on(false));

        let id = cli.ok(&["enqueue", &second, "far away"]).trim().to_owned();
        let inspected = cli.ok(&["inspect", &id]);
        assert!(inspected.contains(&format!("{id} in {second}")), "{via}: {inspected}");
        assert!(cli.ok_said(&["list", &second, "pending"]).1.contains("1 of 1 pending"), "{via}");
        assert!(cli.ok(&["cancel", &id]).contains(&format!("cancelled {id}")), "{via}");
        for queue in [&first, &second] {
            cli.ok(&["enqueue", queue, "ok"]);
        }
        let queues = cli.ok(&["queues"]);
        assert!(queues.lines().any(|l| l == first) && queues.lines().any(|l| l == second), "{via}: {queues}");

        let mut worker = cli
            .command(&["work", &first, &second, "--", "sh", "-c", SCRIPT])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run emq work");
        eventually("both queues' jobs are done", || {
            cli.stats_row(&first)[3] == 1 && cli.stats_row(&second)[3] == 1
        });
        let _ = worker.kill();
        let _ = worker.wait();
        let stats = cli.ok(&["stats"]);
        assert!(stats.contains(&first) && stats.contains(&second), "{via}: {stats}");
        assert_eq!(cli.stats_row(&second), [0, 0, 0, 1, 0, 1], "{via}");
    }
}

/// A reader that goes away (`emq events q | head -1`, `emq list q pending |
/// head -1`) ends a command that only prints quietly, as Unix tools end: not
/// with a "Broken pipe" error, nor (`emq list` printed with `println!`) a panic.
#[test]
fn a_printing_command_whose_reader_goes_away_ends_quietly() {
    use std::io::{BufRead, Write};
    let server = RedisServer::start();
    let cli = Cli { url: server.url(), via: "lua", cluster: false };
    let q = unique_queue("piped");
    // More lines than a pipe holds (64 KiB): the command is still writing when its reader leaves.
    let mut enqueue =
        cli.command(&["enqueue", &q, "--jsonl"]).stdin(Stdio::piped()).stdout(Stdio::null()).spawn().unwrap();
    enqueue.stdin.take().unwrap().write_all("{}\n".repeat(3000).as_bytes()).unwrap();
    assert!(enqueue.wait().unwrap().success());
    for args in
        [&["events", &q, "--from-start", "--idle", "60s"][..], &["list", &q, "pending", "--limit", "3000"]]
    {
        let mut child = cli.command(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let mut first = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
        assert!(!first.is_empty(), "{args:?}");
        // The reader is dropped here: the pipe closes.
        let output = child.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success() && said.is_empty(), "{args:?}: {:?}: {said}", output.status);
    }
}

/// A command that changes things whose reader is gone before it writes a
/// line still does all it was asked (each id, each queue), and succeeds: it
/// did. It printed with `println!` (a panic after the first job) or said
/// "Broken pipe" and failed.
#[test]
fn a_writing_command_whose_reader_is_gone_still_does_it_all() {
    let server = RedisServer::start();
    let cli = Cli { url: server.url(), via: "lua", cluster: false };
    let (q, other) = (unique_queue("closed"), unique_queue("closed"));
    let ids: Vec<String> =
        (0..3).map(|n| cli.ok(&["enqueue", &q, &n.to_string()]).trim().to_owned()).collect();
    cli.ok(&["enqueue", &other, "x"]);
    let closed = |args: &[&str]| {
        let mut child = cli.command(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        // The reader is gone before the command can connect, let alone write.
        drop(child.stdout.take());
        let output = child.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success() && said.is_empty(), "{args:?}: {:?}: {said}", output.status);
    };
    let mut cancel = vec!["cancel"];
    cancel.extend(ids.iter().map(String::as_str));
    closed(&cancel);
    for id in &ids {
        assert!(cli.ok(&["inspect", id]).contains("state     cancelled"), "{id}");
    }
    closed(&["pause", &q, &other]);
    for queue in [&q, &other] {
        assert!(cli.ok(&["config", queue]).contains("paused         true"), "{queue}");
    }
}
