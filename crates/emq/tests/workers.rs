//! `emq workers` and `emq work --metrics`: a running `emq work` is listed
//! (table and JSON) with the job it runs, filtered by --queue, and gone
//! after its graceful stop; its metrics, scraped while it works, count its
//! jobs and time their waits and runs.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::{eventually, show, Emq, Scratch};
use echomq_test_support::{free_port, promtool_check_metrics, unique_queue, RedisServer};

/// The command of a job that runs until the file `go` appears in `$DIR`.
const WAIT_FOR_GO: &str = "while [ ! -e \"$DIR/go\" ]; do sleep 0.02; done";

/// The `emq workers --json` object of worker process `pid`, if listed.
fn listed(emq: &Emq, pid: u32, extra: &[&str]) -> Option<serde_json::Value> {
    let mut args = vec!["workers", "--json"];
    args.extend_from_slice(extra);
    let lines = emq.ok(&args);
    lines
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("a JSON line"))
        .find(|worker| worker["pid"] == pid)
}

#[test]
fn emq_workers_lists_a_running_worker_and_its_job() {
    let server = RedisServer::start_with_module();
    for via in ["lua", "native"] {
        let emq = Emq { url: server.url(), via };
        let scratch = Scratch::new("workers");
        let q = unique_queue("listed");
        let job = emq.ok(&["enqueue", &q, "x"]).trim().to_owned();
        let mut worker = emq.work(
            &[&q, "--concurrency", "2", "--", "sh", "-c", WAIT_FOR_GO],
            &scratch.0,
            &scratch.path("log"),
        );
        let pid = worker.id();
        eventually("emq workers lists the worker running its job", || {
            listed(&emq, pid, &[]).is_some_and(|me| me["running"].as_array().is_some_and(|r| r.len() == 1))
        });
        let me = listed(&emq, pid, &["--queue", &q]).expect("listed under its queue");
        assert_eq!(me["queues"], serde_json::json!([q]), "{via}");
        assert_eq!(me["concurrency"], 2, "{via}");
        assert_eq!(me["protocol"], echomq::PROTOCOL.to_string(), "{via}");
        assert!(me["id"].as_str().unwrap().contains(&format!(":{pid}:")), "{via}: {me}");
        let running = &me["running"][0];
        assert_eq!(
            (running["queue"].as_str(), running["id"].as_str()),
            (Some(q.as_str()), Some(job.as_str()))
        );
        assert_eq!(running["token"], 1, "{via}");
        let lease_until = running["lease_until"].as_u64().unwrap();
        assert!(lease_until > me["beat"].as_u64().unwrap(), "{via}: {me}");

        // The table: a header, and the worker's row with its queue and one job running.
        let table = emq.ok(&["workers"]);
        let header = table.lines().next().unwrap();
        assert!(header.starts_with("ID") && header.contains("LAST BEAT"), "{table}");
        let row = table.lines().find(|line| line.contains(&format!(":{pid}:"))).expect("its row");
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(&cells[2..6], [pid.to_string().as_str(), q.as_str(), "2", "1"], "{via}: {row}");
        assert!(row.ends_with("s ago"), "{row}");

        // Another queue's workers: none, and a note says so.
        let other = unique_queue("unworked");
        let (rows, said) = emq.ok_said(&["workers", "--queue", &other]);
        assert_eq!(rows.lines().count(), 1, "the header alone: {rows}");
        assert!(said.contains(&format!("no live worker works {other}")), "{said}");

        // Stopped gracefully, after its job: no longer listed.
        std::fs::write(scratch.path("go"), "").unwrap();
        assert!(worker.stop(), "{via}: stopped cleanly");
        assert!(listed(&emq, pid, &[]).is_none(), "{via}: gone after a graceful stop");
    }
}

#[test]
fn emq_workers_refuses_a_bad_queue_name_and_sends_nothing() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let output = emq.command(&["workers", "--queue", "a{b"]).output().unwrap();
    assert_eq!(output.status.code(), Some(5), "{}", show(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("invalid queue name"), "{}", show(&output));
    assert!(output.stdout.is_empty(), "{}", show(&output));
}

/// `GET /metrics` on `port`: the body.
fn scrape(port: u16) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let request = format!("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.to_owned())
}

/// The value of the sample `name{labels}` in a scrape.
fn sample(body: &str, series: &str) -> Option<f64> {
    body.lines().find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.trim().parse().ok())
}

#[test]
fn emq_work_serves_its_metrics_for_prometheus() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let scratch = Scratch::new("metrics");
    let q = unique_queue("metered");
    for payload in ["ok", "ok", "ok", "fail"] {
        emq.ok(&["enqueue", &q, payload]);
    }
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    // A job fails when its payload is `fail`; one attempt each.
    let command = ["sh", "-c", "test \"$(cat)\" != fail"];
    let mut args = vec![q.as_str(), "--metrics", &addr, "--max-attempts", "1", "--"];
    args.extend_from_slice(&command);
    let mut worker = emq.work(&args, &scratch.0, &scratch.path("log"));
    let label = format!("{{queue=\"{q}\"}}");
    let series = |name: &str| format!("{name}{label}");
    eventually("the worker's metrics count its four jobs", || {
        scrape(port).is_some_and(|body| {
            sample(&body, &series("emq_job_run_seconds_count")) == Some(4.0)
                && sample(&body, &series("emq_jobs_dead_total")) == Some(1.0)
        })
    });
    let body = scrape(port).unwrap();
    let value = |name: &str| sample(&body, &series(name)).unwrap_or_else(|| panic!("{name}: {body}"));
    assert_eq!(value("emq_jobs_processed_total"), 3.0);
    assert_eq!(value("emq_jobs_failed_total"), 1.0);
    assert_eq!(value("emq_jobs_dead_total"), 1.0);
    assert_eq!(value("emq_job_wait_seconds_count"), 4.0);
    assert!(value("emq_job_wait_seconds_sum") >= 0.0);
    assert!(value("emq_job_run_seconds_sum") > 0.0, "a command takes some time");
    // Histograms, with the job-time buckets: every run is under an hour.
    for name in ["emq_job_run_seconds", "emq_job_wait_seconds"] {
        assert!(body.contains(&format!("# TYPE {name} histogram")), "{body}");
        let hour = format!("{name}_bucket{{queue=\"{q}\",le=\"3600\"}}");
        assert_eq!(sample(&body, &hour), Some(4.0), "{hour}: {body}");
        assert!(body.contains(&format!("{name}_bucket{{queue=\"{q}\",le=\"0.005\"}}")), "{body}");
    }
    assert!(body.contains("# TYPE emq_jobs_processed_total counter"), "{body}");
    // Every family has its help text, as promtool asks.
    for family in body.lines().filter_map(|line| line.strip_prefix("# TYPE ")) {
        let name = family.split(' ').next().unwrap();
        assert!(body.contains(&format!("# HELP {name} ")), "no HELP for {name}: {body}");
    }
    // And Prometheus' own tool accepts it, where it is installed.
    if let Some(checked) = promtool_check_metrics(&body) {
        checked.unwrap_or_else(|said| panic!("promtool check metrics: {said}\n{body}"));
    }
    assert!(worker.stop(), "stopped cleanly: {}", std::fs::read_to_string(scratch.path("log")).unwrap());
}

#[test]
fn emq_work_refuses_a_metrics_address_it_cannot_listen_on() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let q = unique_queue("unmetered");
    let id = emq.ok(&["enqueue", &q, "x"]).trim().to_owned();
    let output = emq.command(&["work", &q, "--metrics", &addr, "--", "true"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", show(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&format!("cannot serve metrics on --metrics {addr}")), "{stderr}");
    // Nothing was claimed: the job waits, none of its attempts spent.
    let shown = emq.ok(&["inspect", &id]);
    assert!(shown.lines().any(|line| line.split_whitespace().eq(["state", "pending"])), "{shown}");
    assert!(shown.lines().any(|line| line.split_whitespace().eq(["attempts", "0"])), "{shown}");
}
