//! `emq work` under faults, as an operator meets them (issue 13): Redis
//! restarting while a job finishes, a worker frozen past its lease, a worker
//! started before its Redis, and what each of them says in the log.

mod common;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{client, eventually, signal, Emq, Scratch};
use echomq_test_support::{module_path, unique_queue, RedisServer, ServerOptions};

/// A server on its AOF, written before each reply: a restart keeps every write.
fn durable(module: bool) -> RedisServer {
    let args = ["--appendonly", "yes", "--appendfsync", "always"].map(String::from).to_vec();
    RedisServer::start_with(ServerOptions {
        module: module.then(module_path),
        args,
        ..ServerOptions::default()
    })
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970").as_millis() as u64
}

/// Sleep until the wall clock reads `ms` (at once when it has passed).
fn sleep_until_ms(ms: u64) {
    std::thread::sleep(Duration::from_millis(ms.saturating_sub(now_ms())));
}

/// A job's lease deadline on the server, in ms (its score in the active set).
fn lease_deadline(url: &str, queue: &str, id: &str) -> u64 {
    let keys = echomq::Keyspace::new(queue).expect("a valid queue name");
    let mut conn = client(url).get_connection().expect("connect");
    let score: f64 = redis::cmd("ZSCORE").arg(keys.active()).arg(id).query(&mut conn).expect("ZSCORE");
    score as u64
}

/// The state and attempts of a job, as `emq inspect` shows them.
fn state(emq: &Emq, id: &str) -> (String, u64) {
    let shown = emq.ok(&["inspect", id]);
    let field = |name: &str| {
        let line = shown.lines().find(|l| l.trim_start().starts_with(name)).unwrap_or_default();
        line.split_whitespace().nth(1).unwrap_or_default().to_owned()
    };
    (field("state"), field("attempts").parse().unwrap_or(0))
}

/// Finding 1. One job under a 3 s lease ends while redis-server is down; the
/// server comes back on its AOF 0.6 s before the lease ends, after the last
/// of the retries an ack used to get (it gave up when its next back-off would
/// pass the lease's end). The ack goes through: the job is done on its first
/// attempt, and its command ran once.
#[test]
fn an_ack_waits_for_a_restart_within_the_lease() {
    for (module, via) in [(false, "lua"), (true, "native")] {
        let mut server = durable(module);
        let emq = Emq { url: server.url(), via };
        let scratch = Scratch::new("restart");
        let go = scratch.path("go");
        assert!(std::process::Command::new("mkfifo").arg(&go).status().unwrap().success());
        let q = unique_queue("restart");
        let id = emq.ok(&["enqueue", &q, "once"]).trim().to_owned();
        // The first attempt waits for the test to open `go`; any later one ends at once.
        let script = r#"cat >/dev/null; echo "$ECHOMQ_JOB_ATTEMPT" >> "$DIR/runs"
            if [ "$ECHOMQ_JOB_ATTEMPT" = 1 ]; then cat "$DIR/go" >/dev/null; fi"#;
        let _worker =
            emq.work(&[&q, "--lease", "3s", "--", "sh", "-c", script], &scratch.0, &scratch.path("log"));
        eventually("the command runs", || scratch.lines("runs").len() == 1);
        let deadline = lease_deadline(&server.url(), &q, &id);

        server.kill();
        // The job ends 2.55 s before its lease does: an ack used to be tried
        // for the last time about 0.75 s before the end.
        sleep_until_ms(deadline - 2550);
        drop(std::fs::OpenOptions::new().write(true).open(&go).expect("open the fifo"));
        sleep_until_ms(deadline - 600);
        server.revive();

        eventually("the job is done", || state(&emq, &id).0 == "done");
        let log = std::fs::read_to_string(scratch.path("log")).unwrap_or_default();
        assert_eq!(state(&emq, &id), ("done".into(), 1), "{via}: acked on its first attempt\n{log}");
        assert_eq!(scratch.lines("runs"), ["1"], "{via}: the command ran once\n{log}");
        // Finding 3: the outage and its end, each said once, the ack's with the job's id.
        let read_log = || std::fs::read_to_string(scratch.path("log")).unwrap_or_default();
        eventually("claims work again", || read_log().contains("claims work again"));
        let log = read_log();
        for said in ["claim failed", "claims work again", "ack cannot reach the server", "ack went through"] {
            let lines: Vec<&str> = log.lines().filter(|line| line.contains(said)).collect();
            assert_eq!(lines.len(), 1, "{via}: one line says {said:?}:\n{log}");
            assert!(
                !said.starts_with("ack") || lines[0].contains(&id),
                "{via}: {said:?} names the job: {log}"
            );
        }
        // And nothing else is said again and again while the server is down
        // (the worker's upkeep ticks every 250 ms): no warning twice, its
        // error's words aside (a claim's new kind of error is said once
        // each, three at most).
        let again = log.lines().filter(|line| line.contains("now with another error")).count();
        assert!(again <= 3, "{via}: {again} new kinds of error:\n{log}");
        let warnings: Vec<&str> = log
            .lines()
            .filter(|line| !line.contains("now with another error"))
            .filter_map(|line| line.split_once(" WARN ").map(|(_, said)| said))
            .map(|said| said.split(" error=").next().unwrap_or(said))
            .collect();
        let distinct: std::collections::BTreeSet<&str> = warnings.iter().copied().collect();
        assert_eq!(warnings.len(), distinct.len(), "{via}: a warning said twice:\n{log}");
    }
}

/// The job of the lease tests: on its first attempt, a command that starts a
/// child (`bash -c`) which would take five minutes and then do its side
/// effect, and notes SIGTERM when it gets one; on later attempts, the side
/// effect at once. Each process notes its pid.
const CHILD_WITH_SIDE_EFFECT: &str = r#"cat >/dev/null; echo $$ >> "$DIR/pids"
if [ "$ECHOMQ_JOB_ATTEMPT" = 1 ]; then
  bash -c 'trap "echo term >> \"$DIR/signals\"; exit 143" TERM
    echo $$ >> "$DIR/pids"; sleep 300 & echo $! >> "$DIR/pids"; wait $!
    echo "effect $ECHOMQ_JOB_ATTEMPT" >> "$DIR/effects"'
else
  echo "effect $ECHOMQ_JOB_ATTEMPT" >> "$DIR/effects"
fi"#;

/// Finding 2. A worker frozen (SIGSTOP) past its lease while its command
/// runs; another worker reaps the job and does it. Woken (SIGCONT), the first
/// worker finds its lease lost: its command and the command's child get
/// SIGTERM and are gone, and the side effect is not done a second time.
#[test]
fn a_lost_lease_stops_the_command_and_its_children() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let scratch = Scratch::new("lost");
    let q = unique_queue("lost");
    let worker = |log: &str| {
        let args = [q.as_str(), "--lease", "2s", "--", "sh", "-c", CHILD_WITH_SIDE_EFFECT];
        emq.work(&args, &scratch.0, &scratch.path(log))
    };
    let mut frozen = worker("frozen.log");
    let id = emq.ok(&["enqueue", &q, "side effect"]).trim().to_owned();
    eventually("the command and its child run", || scratch.lines("pids").len() == 3);
    let pids = scratch.lines("pids");

    signal(frozen.id(), "STOP");
    let mut other = worker("other.log");
    eventually("the other worker did the job", || state(&emq, &id) == ("done".into(), 2));
    signal(frozen.id(), "CONT");
    let woken = Instant::now();

    eventually("the first attempt's processes are gone", || pids.iter().all(|pid| common::gone(pid)));
    // At the first renewal after waking (a beat is a third of the lease),
    // not when the five-minute child would have ended: 10 s is generous.
    assert!(woken.elapsed() < Duration::from_secs(10), "gone {:.1?} after waking", woken.elapsed());
    assert_eq!(scratch.lines("signals"), ["term"], "the child got SIGTERM");
    assert_eq!(scratch.lines("effects"), ["effect 2"], "the side effect was done once");
    // Finding 3: the lost lease is said, once, with the job's id.
    let log = std::fs::read_to_string(scratch.path("frozen.log")).unwrap();
    let lost: Vec<&str> = log.lines().filter(|line| line.contains("lease lost")).collect();
    assert!(lost.len() == 1 && lost[0].contains(&id) && lost[0].contains("WARN"), "{log}");
    for worker in [&mut frozen, &mut other] {
        assert!(worker.stop(), "a graceful stop");
    }
}

/// One job under `emq work --grace 1s` running `script` (which notes the
/// pids of the command and its child's processes, three in all), the worker
/// stopped gracefully once they run: the scratch directory, how long after
/// the stop they were all gone, and the job's state then.
fn stopped_after_the_grace(name: &str, script: &str) -> (Scratch, Duration, (String, u64)) {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let scratch = Scratch::new(name);
    let q = unique_queue(name);
    let id = emq.ok(&["enqueue", &q, name]).trim().to_owned();
    let args = [q.as_str(), "--grace", "1s", "--", "sh", "-c", script];
    let mut worker = emq.work(&args, &scratch.0, &scratch.path("log"));
    eventually("the command and its child run", || scratch.lines("pids").len() == 3);
    let pids = scratch.lines("pids");

    let stopping = Instant::now();
    assert!(worker.stop(), "a graceful stop");
    eventually("the command's processes are gone", || pids.iter().all(|pid| common::gone(pid)));
    let gone = stopping.elapsed();
    (scratch, gone, state(&emq, &id))
}

/// Finding 2, at shutdown: a command still running when `--grace` is over
/// gets SIGTERM with its children, they are gone, and the job is released.
#[test]
fn shutdown_after_the_grace_stops_the_command_and_its_children() {
    let (scratch, _, state) = stopped_after_the_grace("grace", CHILD_WITH_SIDE_EFFECT);
    assert_eq!(scratch.lines("signals"), ["term"], "the child got SIGTERM");
    assert!(scratch.lines("effects").is_empty());
    assert_eq!(state, ("pending".into(), 1), "released");
    // Ended by the SIGTERM: no SIGKILL said (an orphan zombie no init reaps,
    // in a container, made it warn that the group outlived SIGTERM).
    let log = std::fs::read_to_string(scratch.path("log")).unwrap_or_default();
    assert!(!log.contains("outlived SIGTERM"), "{log}");
}

/// Finding 2, the hard way: a command and a child that ignore SIGTERM are
/// killed (SIGKILL to the group) half a second after it, when the grace is over.
#[test]
fn a_command_that_ignores_sigterm_is_killed_after_the_grace() {
    // An ignored signal stays ignored across fork and exec: the child and its
    // sleep ignore SIGTERM too.
    let script = r#"cat >/dev/null; trap "" TERM; echo $$ >> "$DIR/pids"
        bash -c 'echo $$ >> "$DIR/pids"; sleep 300 & echo $! >> "$DIR/pids"; wait $!'"#;
    let (scratch, gone, state) = stopped_after_the_grace("stubborn", script);
    assert!(gone < Duration::from_secs(10), "gone {gone:.1?} after the stop");
    let log = std::fs::read_to_string(scratch.path("log")).unwrap_or_default();
    assert!(log.contains("outlived SIGTERM"), "the SIGKILL is said: {log}");
    assert_eq!(state, ("pending".into(), 1), "released");
}

/// Finding 3: `emq work` logs to stderr, at info by default: its start (the
/// queues, the executor, the concurrency), the server's eviction warning,
/// and its shutdown; as JSON lines with `--log-format json`; `-q` keeps only
/// warnings and errors.
#[test]
fn the_log_says_start_warnings_and_shutdown() {
    let server = RedisServer::start_with(ServerOptions {
        args: ["--maxmemory-policy", "allkeys-lru"].map(String::from).to_vec(),
        ..ServerOptions::default()
    });
    let emq = Emq { url: server.url(), via: "lua" };
    let scratch = Scratch::new("log");
    let q = unique_queue("log");
    let log = |name: &str| std::fs::read_to_string(scratch.path(name)).unwrap_or_default();

    let mut json = emq.work(
        &["--log-format", "json", &q, "--concurrency", "3", "--", "true"],
        &scratch.0,
        &scratch.path("json"),
    );
    eventually("the worker has started", || log("json").contains("allkeys-lru"));
    assert!(json.stop(), "a graceful stop");
    let lines: Vec<serde_json::Value> =
        log("json").lines().map(|line| serde_json::from_str(line).expect("a JSON line")).collect();
    let said = |message: &str| {
        lines.iter().find(|line| line["fields"]["message"].as_str().is_some_and(|m| m.contains(message)))
    };
    let started = said("emq work started").unwrap_or_else(|| panic!("{lines:?}"));
    assert_eq!(started["level"], "INFO");
    assert_eq!(started["fields"]["queues"], q.as_str());
    assert_eq!(started["fields"]["executor"], "lua");
    assert_eq!(started["fields"]["concurrency"], 3);
    let eviction = said("maxmemory-policy").unwrap_or_else(|| panic!("{lines:?}"));
    assert_eq!(eviction["level"], "WARN");
    assert!(said("stopping").is_some_and(|line| line["fields"]["signal"] == "SIGTERM"), "{lines:?}");
    assert!(said("emq work stopped").is_some(), "{lines:?}");

    let mut quiet = emq.work(&["-q", &q, "--", "true"], &scratch.0, &scratch.path("quiet"));
    eventually("the quiet worker has started", || log("quiet").contains("allkeys-lru"));
    assert!(quiet.stop(), "a graceful stop");
    assert!(!log("quiet").contains("INFO") && log("quiet").contains("WARN"), "{}", log("quiet"));
}

/// Finding 4. A worker started while its Redis is down waits for it, says so,
/// and runs jobs once it is up; with `--connect-timeout`, it gives up instead.
#[test]
fn a_worker_started_before_its_redis_waits_for_it() {
    let mut server = RedisServer::start();
    server.kill();
    let emq = Emq { url: server.url(), via: "lua" };
    let scratch = Scratch::new("early");
    let q = unique_queue("early");

    let impatient = emq.command(&["work", &q, "--connect-timeout", "1s", "--", "true"]).output().unwrap();
    let said = String::from_utf8_lossy(&impatient.stderr);
    assert_eq!(impatient.status.code(), Some(3), "not there (yet): {said}");
    assert!(said.contains("did not answer within --connect-timeout 1s"), "{said}");

    let script = r#"cat >/dev/null; echo ran >> "$DIR/runs""#;
    let _worker = emq.work(&[&q, "--", "sh", "-c", script], &scratch.0, &scratch.path("log"));
    let log = || std::fs::read_to_string(scratch.path("log")).unwrap_or_default();
    eventually("the worker says it waits", || log().contains("waiting for the server"));
    server.revive();
    emq.ok(&["enqueue", &q, "after the wait"]);
    eventually("the job ran", || scratch.lines("runs") == ["ran"]);
    assert!(log().contains("the server answers"), "{}", log());
    assert_eq!(log().matches("waiting for the server").count(), 1, "said once: {}", log());
}

/// Finding 5. A command learns its payload's length from ECHOMQ_PAYLOAD_BYTES;
/// the example command (crates/echomq/examples/work-job.sh) acts on a whole
/// payload and refuses a cut one.
#[test]
fn a_command_can_tell_a_cut_payload() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let scratch = Scratch::new("bytes");
    let q = unique_queue("bytes");
    let payload = "héllo wörld ✓\nline two";
    let id = emq.ok(&["enqueue", &q, payload]).trim().to_owned();
    let script = r#"cat > "$DIR/payload"; echo "$ECHOMQ_PAYLOAD_BYTES" > "$DIR/bytes""#;
    let mut worker = emq.work(&[&q, "--", "sh", "-c", script], &scratch.0, &scratch.path("log"));
    eventually("the job is done", || state(&emq, &id).0 == "done");
    assert!(worker.stop());
    assert_eq!(std::fs::read(scratch.path("payload")).unwrap(), payload.as_bytes());
    assert_eq!(scratch.lines("bytes"), [payload.len().to_string()]);

    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../echomq/examples/work-job.sh");
    let run = |bytes: usize, stdin: &str| {
        let mut child = std::process::Command::new("sh")
            .arg(example)
            .env("ECHOMQ_QUEUE", &q)
            .env("ECHOMQ_JOB_ID", &id)
            .env("ECHOMQ_JOB_ATTEMPT", "1")
            .env("ECHOMQ_PAYLOAD_BYTES", bytes.to_string())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run the example");
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), stdin.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    };
    let whole = run(payload.len(), payload);
    assert!(whole.status.success() && String::from_utf8_lossy(&whole.stdout).contains("héllo"), "{whole:?}");
    let cut = run(payload.len(), &payload[..6]);
    assert!(!cut.status.success(), "a cut payload fails the job");
    assert!(String::from_utf8_lossy(&cut.stderr).contains("payload cut: 6 of"), "{cut:?}");
    let empty = run(payload.len(), "");
    assert!(!empty.status.success() && empty.stdout.is_empty(), "nothing done on an empty payload");

    // And through emq work: the example acks a whole payload.
    let next = emq.ok(&["enqueue", &q, "{\"to\":\"ada\"}"]).trim().to_owned();
    let _worker = emq.work(&[&q, "--", "sh", example], &scratch.0, &scratch.path("example.log"));
    eventually("the example did the job", || state(&emq, &next).0 == "done");
}

/// A worker whose server starts refusing it (a password set, its
/// connections dropped) says so at warning level, not only that its
/// connection broke: each new kind of error of an outage is said once.
#[test]
fn a_worker_says_when_its_server_starts_refusing_it() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let scratch = Scratch::new("refusing");
    let q = unique_queue("refusing");
    emq.ok(&["enqueue", &q, "one"]);
    let _worker = emq.work(&[&q, "--", "sh", "-c", r#"cat >> "$DIR/ran""#], &scratch.0, &scratch.path("log"));
    eventually("the job ran", || scratch.lines("ran") == ["one"]);
    let mut conn = client(&server.url()).get_connection().expect("connect");
    let () = redis::cmd("CONFIG").arg(&["SET", "requirepass", "now-secret"]).query(&mut conn).unwrap();
    let _: i64 = redis::cmd("CLIENT").arg(&["KILL", "TYPE", "normal"]).query(&mut conn).unwrap_or(0);
    let read_log = || std::fs::read_to_string(scratch.path("log")).unwrap_or_default();
    // The server answers an unauthenticated client NOAUTH, or, to a long
    // command, "unauthenticated multibulk length".
    eventually("the refusal is said", || {
        read_log().lines().any(|line| {
            line.contains(" WARN ")
                && line.contains("now with another error")
                && (line.contains("NOAUTH") || line.contains("unauthenticated"))
        })
    });
}

/// A server that restarts without persistence loses its jobs; a worker that
/// rode out the outage says so when claims work again, rather than go on
/// as if nothing had happened. On its AOF, the restart is only noted.
#[test]
fn a_worker_says_when_its_server_came_back_empty() {
    for (durable_server, said) in
        [(false, "keeps no AOF"), (true, "restarted during the outage (it keeps an AOF)")]
    {
        let mut server = if durable_server { durable(false) } else { RedisServer::start() };
        let emq = Emq { url: server.url(), via: "lua" };
        let scratch = Scratch::new("empty");
        let q = unique_queue("empty");
        emq.ok(&["enqueue", &q, "one"]);
        let _worker =
            emq.work(&[&q, "--", "sh", "-c", r#"cat >> "$DIR/ran""#], &scratch.0, &scratch.path("log"));
        eventually("the job ran", || scratch.lines("ran") == ["one"]);
        server.kill();
        let read_log = || std::fs::read_to_string(scratch.path("log")).unwrap_or_default();
        eventually("the outage is seen", || read_log().contains("claim failed"));
        server.revive();
        eventually("the restart is said", || read_log().contains(said));
    }
}

/// A server frozen (SIGSTOP: the kernel still takes the bytes, so no
/// connection breaks) does not hold a stopping worker: on SIGTERM it stops
/// waiting for its claims in flight 5 s after the stop, and for its job's
/// release 5 s after the grace, says so, and exits. The job is not lost:
/// once its lease ends, the next worker runs it.
#[test]
fn a_worker_stops_on_sigterm_while_its_server_is_frozen() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let scratch = Scratch::new("frozen-server");
    let q = unique_queue("frozen-server");
    let id = emq.ok(&["enqueue", &q, "held"]).trim().to_owned();
    // Two slots: one runs the job, the other waits for work.
    let script = r#"cat >/dev/null; echo run >> "$DIR/runs"; sleep 300"#;
    let args = [q.as_str(), "--concurrency", "2", "--lease", "5s", "--grace", "1s", "--", "sh", "-c", script];
    let mut worker = emq.work(&args, &scratch.0, &scratch.path("log"));
    eventually("the job runs", || scratch.lines("runs").len() == 1);

    server.freeze();
    signal(worker.id(), "TERM");
    let deadline = Instant::now() + Duration::from_secs(60);
    let exited = loop {
        match worker.0.try_wait().expect("wait for emq work") {
            Some(status) => break status,
            None if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            None => panic!("emq work still runs 60 s after SIGTERM with its server frozen"),
        }
    };
    let log = std::fs::read_to_string(scratch.path("log")).unwrap_or_default();
    assert!(exited.success(), "{exited}: {log}");
    assert!(log.contains("has not answered the claims in flight"), "{log}");
    assert!(log.contains("has not answered the jobs' release"), "{log}");

    server.thaw();
    assert_eq!(state(&emq, &id), ("active".into(), 1), "still held, by its lease");
    let _next = emq.work(&[&q, "--", "true"], &scratch.0, &scratch.path("next"));
    eventually("the next worker ran it", || state(&emq, &id) == ("done".into(), 2));
}

/// A busy worker whose server freezes (its renewals taken, never answered)
/// says so within a third of the lease, where it said nothing, and says
/// when the renewals go through again.
#[test]
fn a_busy_worker_says_when_its_server_stops_answering() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let scratch = Scratch::new("frozen-busy");
    let q = unique_queue("frozen-busy");
    emq.ok(&["enqueue", &q, "held"]);
    let script = r#"cat >/dev/null; echo run >> "$DIR/runs"; sleep 300"#;
    let args = [q.as_str(), "--concurrency", "1", "--lease", "6s", "--", "sh", "-c", script];
    let _worker = emq.work(&args, &scratch.0, &scratch.path("log"));
    eventually("the job runs", || scratch.lines("runs").len() == 1);
    let read_log = || std::fs::read_to_string(scratch.path("log")).unwrap_or_default();

    server.freeze();
    eventually("the silence is said", || read_log().contains("heartbeats get no answer from the server"));
    server.thaw();
    eventually("the renewals' return is said", || read_log().contains("heartbeats renew leases again"));
}

/// A server over its `maxmemory` (noeviction) from the job's start on: the
/// job, twice as long as its lease, is renewed, acked and run once, on
/// each executor (Lua refused its lease renewals, so it was reaped and run
/// again until it died of `lease expired`; native refused its ack), and a
/// new enqueue is refused with nothing written.
#[test]
fn a_full_server_ends_the_running_job_once_and_refuses_new_ones() {
    for (server, via) in [(RedisServer::start(), "lua"), (RedisServer::start_with_module(), "native")] {
        let emq = Emq { url: server.url(), via };
        let scratch = Scratch::new("full");
        let q = unique_queue("full");
        let id = emq.ok(&["enqueue", &q, "long"]).trim().to_owned();
        let script = r#"cat >/dev/null; echo run >> "$DIR/runs"; sleep 4"#;
        let args = [q.as_str(), "--lease", "2s", "--", "sh", "-c", script];
        let _worker = emq.work(&args, &scratch.0, &scratch.path("log"));
        eventually("the job runs", || scratch.lines("runs").len() == 1);
        let mut admin = client(&server.url()).get_connection().unwrap();
        let () = redis::cmd("CONFIG").arg(&["SET", "maxmemory", "1"]).query(&mut admin).unwrap();
        let refused = emq.command(&["enqueue", &q, "new"]).output().unwrap();
        assert_eq!(refused.status.code(), Some(3), "{via}: {}", common::show(&refused));
        let (_, said) = emq.ok_said(&["stats", &q]);
        assert!(said.contains("the server is full") && said.contains("maxmemory"), "{via}: {said}");
        eventually("the job is done", || state(&emq, &id).0 == "done");
        let () = redis::cmd("CONFIG").arg(&["SET", "maxmemory", "0"]).query(&mut admin).unwrap();
        let log = std::fs::read_to_string(scratch.path("log")).unwrap_or_default();
        assert_eq!(scratch.lines("runs").len(), 1, "{via}: run once: {log}");
        assert_eq!(state(&emq, &id), ("done".into(), 1), "{via}: {log}");
        assert!(!log.contains("lost its lease") && !log.contains("lease lost"), "{via}: {log}");
    }
}

/// `--via native` on a server without the module is refused at once
/// (exit 5, nothing sent), saying what to do: by `emq work` before it
/// claims, and by any other command.
#[test]
fn via_native_without_the_module_is_refused_in_words() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "native" };
    let q = unique_queue("no-module");
    for args in [vec!["stats", q.as_str()], vec!["enqueue", &q, "x"], vec!["work", &q, "--", "true"]] {
        let output = emq.command(&args).output().expect("run emq");
        let said = common::show(&output);
        assert_eq!(output.status.code(), Some(5), "{args:?}: {said}");
        assert!(said.contains("has no echomq module") && said.contains("--via lua"), "{args:?}: {said}");
    }
    let keys: Vec<String> =
        redis::cmd("KEYS").arg("*").query(&mut client(&server.url()).get_connection().unwrap()).unwrap();
    assert!(keys.is_empty(), "nothing written: {keys:?}");
}

/// A busy worker (every slot running a job, so no claim of its fails while
/// the server is down) whose server restarts without persistence says so
/// too: its acks find their jobs gone, and it asks whether the server
/// restarted. The jobs pending before the restart are gone.
#[test]
fn a_busy_worker_says_when_its_server_came_back_empty() {
    let mut server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let scratch = Scratch::new("busy-empty");
    let q = unique_queue("busy-empty");
    for n in 0..4 {
        emq.ok(&["enqueue", &q, &n.to_string()]);
    }
    let script = r#"cat >/dev/null; echo run >> "$DIR/ran"; sleep 2"#;
    let _worker =
        emq.work(&[&q, "--concurrency", "2", "--", "sh", "-c", script], &scratch.0, &scratch.path("log"));
    eventually("both slots run a job", || scratch.lines("ran").len() == 2);
    server.kill();
    server.revive();
    let read_log = || std::fs::read_to_string(scratch.path("log")).unwrap_or_default();
    eventually("the restart is said", || read_log().contains("keeps no AOF"));
    assert!(!read_log().contains("claim failed"), "no claim failed: {}", read_log());
}

/// A server that takes a call and does not answer (its writes paused, as a
/// frozen or overloaded server holds them) holds no one-shot command past
/// `--response-timeout`: a write says it may have been done (exit 4), an enqueue
/// under which id; a read, served meanwhile, goes through.
#[test]
fn a_server_that_does_not_answer_ends_a_command_at_its_timeout() {
    for (server, via) in [(RedisServer::start(), "lua"), (RedisServer::start_with_module(), "native")] {
        let emq = Emq { url: server.url(), via };
        let q = unique_queue("timeout");
        emq.ok(&["enqueue", &q, "before"]);
        let mut admin = client(&server.url()).get_connection().unwrap();
        let _: () = redis::cmd("CLIENT").arg(&["PAUSE", "60000", "WRITE"]).query(&mut admin).unwrap();
        for args in [vec!["pause", q.as_str()], vec!["limit", &q, "--concurrency", "2"]] {
            let output =
                emq.command(&[&["--response-timeout", "1s"], args.as_slice()].concat()).output().unwrap();
            let said = common::show(&output);
            assert_eq!(output.status.code(), Some(4), "{via} {args:?}: {said}");
            assert!(said.contains("did not answer in time") && said.contains("may have been done"), "{said}");
        }
        let output = emq.command(&["--response-timeout", "1s", "enqueue", &q, "held"]).output().unwrap();
        let said = common::show(&output);
        assert_eq!(output.status.code(), Some(4), "{via}: {said}");
        assert!(said.contains("maybe enqueued, as JOB_"), "{via}: {said}");
        // A read is served while writes are paused.
        assert!(emq.ok(&["--response-timeout", "1s", "stats", &q]).contains(&q), "{via}");

        let _: () = redis::cmd("CLIENT").arg("UNPAUSE").query(&mut admin).unwrap();
        emq.ok(&["resume", &q]);
    }
}

/// `emq events` whose server goes away ends (exit 3) saying the command
/// that goes on after the last event it read, so that none is missed.
#[test]
fn a_broken_follow_of_events_says_where_to_resume() {
    use std::io::BufRead;
    let mut server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let q = unique_queue("follow");
    let mut follow = emq
        .command(&["events", &q, "--from-start"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    emq.ok(&["enqueue", &q, "one"]);
    let mut line = String::new();
    std::io::BufReader::new(follow.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let read: serde_json::Value = serde_json::from_str(&line).unwrap();
    let id = read["event_id"].as_str().unwrap().to_owned();
    server.kill();
    let ended = follow.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&ended.stderr);
    assert_eq!(ended.status.code(), Some(3), "{said}");
    assert!(said.contains(&format!("to go on where it stopped: emq events {q} --after {id}")), "{said}");
}

/// A job's lease that runs out while the server is out of reach is said,
/// once, with what it means for the run that goes on.
#[test]
fn a_lease_that_runs_out_in_an_outage_is_said() {
    let mut server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let scratch = Scratch::new("ran-out");
    let q = unique_queue("ranout");
    emq.ok(&["enqueue", &q, "one"]);
    let args = [q.as_str(), "--lease", "2s", "--", "sh", "-c", r#"touch "$DIR/began"; sleep 60"#];
    let _worker = emq.work(&args, &scratch.0, &scratch.path("log"));
    eventually("the job runs", || scratch.path("began").exists());
    server.kill();
    let read_log = || std::fs::read_to_string(scratch.path("log")).unwrap_or_default();
    eventually("the lease's end is said", || read_log().contains("by this worker's clock"));
    let log = read_log();
    assert_eq!(log.matches("by this worker's clock").count(), 1, "once: {log}");
    assert!(log.contains("this run's end is then refused"), "{log}");
}
