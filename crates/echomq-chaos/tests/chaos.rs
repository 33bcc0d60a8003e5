//! The chaos program at CI size, on Lua and on Native: 2,000 jobs and 15
//! flows (18 parents, over 50 children in three queues) over 8 s through
//! three workers, four of them killed with SIGKILL, one paused past its
//! lease, each killing itself after a RESOLVE with a chance of 0.2 (before
//! the relay's XDEL), and redis-server killed and restarted twice; every
//! fifth job in one of four fair groups (cap 2, 10 claims a second). The
//! program judges the run itself; this checks that it found no violation
//! and that the chaos really happened. The seed comes from the clock, so each run
//! tries a new plan; the test prints it first, and every failure names it
//! with the command that replays that plan:
//! `ECHOMQ_CHAOS_SEED=<seed> cargo test -p echomq-chaos --test chaos`.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The flows of a run.
const FLOWS: u64 = 15;

/// Far beyond a run's ~10 s; the program has deadlines of its own, this only
/// keeps a hang from holding the suite.
const DEADLINE: Duration = Duration::from_secs(240);

/// The seed of a run: `$ECHOMQ_CHAOS_SEED` to replay one, else from the clock.
fn seed() -> u64 {
    match std::env::var("ECHOMQ_CHAOS_SEED") {
        Ok(seed) => seed.trim().parse().unwrap_or_else(|_| panic!("ECHOMQ_CHAOS_SEED={seed:?} is no u64")),
        Err(_) => SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |since| since.as_nanos() as u64),
    }
}

/// Run the program with `--via via` at CI size and `--seed seed`; its exit
/// status and report.
fn chaos(via: &str, seed: u64) -> (std::process::ExitStatus, String) {
    let dir = std::env::temp_dir().join(format!("echomq-chaos-test-{via}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (out, err) = (dir.join("stdout"), dir.join("stderr"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_echomq-chaos"))
        .args(["run", "--via", via, "--jobs", "2000", "--workers", "3", "--concurrency", "8"])
        .args(["--seconds", "8", "--kills", "4", "--pauses", "1", "--restarts", "2"])
        .args(["--flows", &FLOWS.to_string(), "--resolve-kills", "0.2", "--groups", "4"])
        .args(["--seed", &seed.to_string()])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("run echomq-chaos");
    let began = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if began.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "echomq-chaos --via {via} --seed {seed} ran past {DEADLINE:?}:\n{}",
                std::fs::read_to_string(&err).unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let report = std::fs::read_to_string(&out).unwrap() + &std::fs::read_to_string(&err).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    (status, report)
}

/// The numbers on the report's line that starts with `label`, after its colon.
fn numbers(report: &str, label: &str) -> Vec<u64> {
    let line = report.lines().find(|line| line.starts_with(label));
    let line = line.unwrap_or_else(|| panic!("no {label:?} line in:\n{report}"));
    let (_, counts) = line.split_once(": ").unwrap_or_else(|| panic!("no counts in {line:?}"));
    counts
        .split(|c: char| !c.is_ascii_digit())
        .filter(|word| !word.is_empty())
        .map(|n| n.parse().unwrap())
        .collect()
}

fn judge(via: &str) {
    let seed = seed();
    let replay = format!(
        "seed {seed}; replay it: ECHOMQ_CHAOS_SEED={seed} cargo test -p echomq-chaos --test chaos chaos_on_{via}"
    );
    eprintln!("chaos on {via}: {replay}");
    let (status, report) = chaos(via, seed);
    assert!(status.success(), "echomq-chaos --via {via} exited with {status} ({replay}):\n{report}");
    let count = |label: &str| numbers(&report, label)[0];
    assert_eq!(count("violations"), 0, "{replay}\n{report}");
    assert_eq!(count("enqueues acknowledged"), 2000, "{replay}\n{report}");
    assert_eq!(count("jobs done"), 2000, "{replay}\n{report}");
    assert_eq!(count("worker kills"), 4, "{replay}\n{report}");
    assert_eq!(count("server restarts"), 2, "{replay}\n{report}");
    let pauses = numbers(&report, "worker pauses");
    assert_eq!(pauses[0], 1, "the pause found a running handler to catch ({replay}):\n{report}");
    // Each token a pause made stale had to be refused when its worker woke.
    let caught = pauses[1];
    assert!(caught >= 1, "{replay}\n{report}");
    assert!(count("stale tokens refused") >= caught, "{replay}\n{report}");
    // Flows: every one added, every job of each done; no parent stuck, none
    // run twice, every result byte for byte; and the kills between a
    // RESOLVE and its XDEL happened (the program fails a run without any).
    assert_eq!(count("flows acknowledged"), FLOWS, "{replay}\n{report}");
    let flows = numbers(&report, "flows acknowledged");
    // Every fifth flow nests one; a nested parent is its parent's child too.
    let (parents, children, done) = (flows[4], flows[6], flows[7]);
    assert_eq!((parents, done), (FLOWS + FLOWS / 5, FLOWS + children), "{replay}\n{report}");
    assert_eq!(count("parents stuck"), 0, "{replay}\n{report}");
    assert_eq!(count("parents run twice"), 0, "{replay}\n{report}");
    assert_eq!(count("results not byte for byte"), 0, "{replay}\n{report}");
    assert!(count("kills between RESOLVE and XDEL") >= 1, "{replay}\n{report}");
    // Groups: every fifth job in one of 4 groups (cap 2, 10 claims a
    // second), 100 a group arriving faster than its rate; the replayed
    // event log found neither broken (the violations above), and every
    // grouped job was claimed and done (the jobs above).
    let groups = numbers(&report, "groups");
    assert!(groups[0] >= 400, "every grouped job claimed ({replay}):\n{report}");
    assert!(groups[1] <= 2 && groups[3] <= 10, "{replay}\n{report}");
    assert!(
        report.contains(&format!("--seed {seed} ")),
        "the program ran another plan ({replay}):\n{report}"
    );
}

#[test]
fn chaos_on_lua_breaks_no_promise() {
    judge("lua");
}

#[test]
fn chaos_on_native_breaks_no_promise() {
    judge("native");
}
