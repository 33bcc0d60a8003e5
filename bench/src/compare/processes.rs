//! `process-4x25`: four worker processes, each at concurrency 25, on one
//! queue, as a deployment scales out one queue's workers.
//!
//! The parent (this process) fills the queue, then starts four copies of
//! this program (`--workload worker-child`). Each child warms on a queue of
//! its own (its share of the jobs, as every workload warms in-process), says
//! `ready`, starts its worker at `go` and stops it at `stop`, then prints how
//! many jobs it finished, when its clock started and when its last one
//! finished (µs since the Unix epoch: one clock for every process on the
//! machine). The parent only decides when to say `stop` (the queue empty of
//! pending and active jobs, read every 10 ms); the window it reports is the
//! children's own, from the first start to the last completion, and the jobs
//! are counted in-process, as on BullMQ's side (`bench/bullmq.mjs`).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use echomq::{Executor, Queue};

use super::{counted, enqueue_bulk, queue, server, start_worker, Options};

/// Worker processes, and each one's concurrency.
pub(crate) const PROCESSES: usize = 4;
pub(crate) const CONCURRENCY: usize = 25;

/// Now, in µs since the Unix epoch.
fn wall_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970").as_micros() as u64
}

/// A line from the parent, on standard input.
async fn heard() -> String {
    tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).expect("the parent's line");
        line.trim().to_owned()
    })
    .await
    .expect("reading standard input")
}

/// One child: warm on a queue of its own, then work `--queue` from `go` to `stop`.
pub(crate) async fn child(via: &Arc<dyn Executor>, options: &Options) {
    let name = options.queue.as_deref().expect("--workload worker-child needs --queue");
    let payload = vec![b'x'; options.payload];
    let share = options.jobs / PROCESSES;
    let warm = queue(via, options).await;
    enqueue_bulk(&warm, share, &payload).await;
    let count = counted::expect(share);
    let (stop, task) = start_worker(std::slice::from_ref(&warm), CONCURRENCY, Duration::ZERO);
    count.await;
    let _ = stop.send(());
    task.await.expect("the warm-up worker");

    let shared = Queue::new(via.clone(), name).expect("a valid name");
    counted::restart();
    println!("ready");
    assert_eq!(heard().await, "go");
    let first = wall_us();
    let (stop, task) = start_worker(std::slice::from_ref(&shared), CONCURRENCY, Duration::ZERO);
    assert_eq!(heard().await, "stop");
    let _ = stop.send(());
    task.await.expect("the worker");
    let (done, last) = counted::so_far();
    // Its report, one line: jobs finished, its clock's start, its last completion.
    println!("{done} {first} {}", last.unwrap_or(first));
}

/// A child as the parent holds it: its process and its two pipes.
struct Worker {
    process: Child,
    to: ChildStdin,
    from: BufReader<ChildStdout>,
}

impl Worker {
    fn start(options: &Options, queue: &str) -> Worker {
        let mut command = Command::new(std::env::current_exe().expect("this program"));
        command.args(["--url", &options.url, "--via", &options.via, "--workload", "worker-child"]);
        command.args(["--queue", queue, "--jobs", &options.jobs.to_string()]);
        command.args(["--payload", &options.payload.to_string()]);
        if options.no_events {
            command.arg("--no-events");
        }
        let mut process =
            command.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("a worker process");
        let to = process.stdin.take().expect("its stdin");
        let from = BufReader::new(process.stdout.take().expect("its stdout"));
        Worker { process, to, from }
    }

    fn say(&mut self, line: &str) {
        writeln!(self.to, "{line}").and_then(|()| self.to.flush()).expect("a worker process listening");
    }

    fn hear(&mut self) -> String {
        let mut line = String::new();
        self.from.read_line(&mut line).expect("a worker process's line");
        assert!(!line.is_empty(), "a worker process ended early");
        line.trim().to_owned()
    }
}

/// A child's report: jobs finished, its clock's start and its last completion.
fn report(line: &str) -> [u64; 3] {
    let numbers: Vec<u64> = line.split(' ').map(|n| n.parse().expect("a number")).collect();
    numbers.try_into().unwrap_or_else(|_| panic!("three numbers, not {line:?}"))
}

/// Jobs per second over the children's window, and the server's µs per job.
pub(crate) async fn parent(via: &Arc<dyn Executor>, options: &Options) -> (f64, Option<server::Spent>) {
    let queue = queue(via, options).await;
    enqueue_bulk(&queue, options.jobs, &vec![b'x'; options.payload]).await;
    let mut workers: Vec<Worker> = (0..PROCESSES).map(|_| Worker::start(options, queue.name())).collect();
    for worker in &mut workers {
        assert_eq!(worker.hear(), "ready");
    }
    let stats = server::Stats::connect(&options.url, true).await;
    stats.start().await;
    for worker in &mut workers {
        worker.say("go");
    }
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let now = queue.stats().await.expect("STATS");
        if now.pending == 0 && now.active == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "the worker processes stalled: {now:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut reports = Vec::with_capacity(PROCESSES);
    for worker in &mut workers {
        worker.say("stop");
        reports.push(report(&worker.hear()));
        worker.process.wait().expect("a worker process's exit");
    }
    let spent = stats.spent_since_start(options.jobs).await;
    let done: u64 = reports.iter().map(|r| r[0]).sum();
    assert_eq!(done, options.jobs as u64, "every job finished once: {reports:?}");
    let first = reports.iter().map(|r| r[1]).min().expect("a worker");
    let last = reports.iter().map(|r| r[2]).max().expect("a worker");
    (done as f64 / ((last - first) as f64 / 1e6), spent)
}
