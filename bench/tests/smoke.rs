//! The benchmark programs at a smoke size, so CI proves they run and print
//! every figure; the full comparison (`bench/compare`) is run on purpose.

use std::process::Command;

use echomq_test_support::{module_path, RedisServer, ServerOptions};

#[test]
fn echomq_compare_prints_every_figure_for_every_executor() {
    let server =
        RedisServer::start_with(ServerOptions { module: Some(module_path()), ..ServerOptions::default() });
    for via in ["lua", "native", "embedded"] {
        let output = Command::new(env!("CARGO_BIN_EXE_echomq-compare"))
            .args([
                "--url",
                &server.url(),
                "--via",
                via,
                "--jobs",
                "200",
                "--rounds",
                "1",
                "--seconds",
                "0.3",
            ])
            .output()
            .expect("run echomq-compare");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{via}: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
        let mut workloads = vec![
            "add-50",
            "add-bulk",
            "process-c1",
            "process-c10",
            "process-c100",
            "end-to-end",
            "queues-100",
            "process-c100-1ms",
            "latency-p99",
            "latency-started",
        ];
        if via != "embedded" {
            workloads.push("bytes-per-pending-job");
        }
        for workload in workloads {
            let line = stdout
                .lines()
                .find(|l| l.contains(&format!("\"workload\":\"{workload}\"")))
                .unwrap_or_else(|| panic!("{via}: no {workload} in {stdout}"));
            let value: f64 = line
                .split("\"value\":")
                .nth(1)
                .and_then(|v| v.split(',').next())
                .and_then(|v| v.parse().ok())
                .unwrap();
            assert!(value > 0.0, "{via}: {line}");
        }
    }
}

#[test]
fn four_worker_processes_share_one_queue() {
    let server =
        RedisServer::start_with(ServerOptions { module: Some(module_path()), ..ServerOptions::default() });
    for via in ["lua", "native"] {
        let output = Command::new(env!("CARGO_BIN_EXE_echomq-compare"))
            .args(["--url", &server.url(), "--via", via, "--workload", "process-4x25", "--jobs", "400"])
            .output()
            .expect("run echomq-compare");
        let stdout = String::from_utf8_lossy(&output.stdout);
        // The parent asserts that the children finished every job once.
        assert!(output.status.success(), "{via}: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
        assert!(
            stdout.contains(&format!(r#"{{"system":"echomq-{via}","workload":"process-4x25","value":"#))
                && stdout.contains("server_us"),
            "{stdout}"
        );
    }
}

#[test]
fn the_ceiling_runs_from_the_same_client() {
    let server = RedisServer::start();
    for workload in ["hset-zadd", "seed-lua"] {
        let output = Command::new(env!("CARGO_BIN_EXE_echomq-compare"))
            .args(["--url", &server.url(), "--via", "raw", "--workload", workload, "--jobs", "200"])
            .output()
            .expect("run echomq-compare");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{workload}: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
        assert!(
            stdout.contains(&format!(r#""workload":"{workload}""#)) && stdout.contains("server_us"),
            "{stdout}"
        );
    }
}

#[test]
fn echomq_bench_runs_its_table() {
    let output = Command::new(env!("CARGO_BIN_EXE_echomq-bench"))
        .args(["--jobs", "200", "--rounds", "1", "--in-flight", "8"])
        .output()
        .expect("run echomq-bench");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("native/lua") && stdout.contains("server µs per job"), "{stdout}");
}
