//! docs/metrics.md and docs/grafana/echomq.json stay true: every metric the
//! worker records is listed, and every metric the Grafana dashboard queries
//! is one the page lists (a renamed metric fails here, not in a blank panel).

use std::collections::BTreeSet;
use std::path::PathBuf;

use echomq::worker::metric;

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The names in the first column of docs/metrics.md's tables.
fn documented() -> BTreeSet<String> {
    let page = std::fs::read_to_string(repository().join("docs/metrics.md")).unwrap();
    page.lines()
        .filter_map(|line| line.strip_prefix("| `")?.split_once('`').map(|(name, _)| name.to_owned()))
        .collect()
}

/// Every `emq_…` metric named in `expr`, a histogram's series by its name.
fn metrics_in(expr: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = expr;
    while let Some(at) = rest.find("emq_") {
        let name: String = rest[at..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        rest = &rest[at + name.len()..];
        let name = ["_bucket", "_count", "_sum"]
            .iter()
            .find_map(|suffix| name.strip_suffix(suffix))
            .map_or(name.clone(), str::to_owned);
        found.push(name);
    }
    found
}

#[test]
fn every_worker_metric_is_documented() {
    let documented = documented();
    let recorded = [
        metric::PROCESSED,
        metric::FAILED,
        metric::RETRIED,
        metric::DEAD,
        metric::DEFERRED,
        metric::TIMED_OUT,
        metric::LEASES_LOST,
        metric::RUN_SECONDS,
        metric::WAIT_SECONDS,
        echomq::worker::UNHANDLED,
    ];
    for name in recorded {
        assert!(documented.contains(name), "{name} is missing from docs/metrics.md");
    }
}

#[test]
fn the_grafana_dashboard_queries_only_documented_metrics() {
    let text = std::fs::read_to_string(repository().join("docs/grafana/echomq.json")).unwrap();
    let dashboard: serde_json::Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    let documented = documented();
    let panels = dashboard["panels"].as_array().expect("panels");
    let mut queried = BTreeSet::new();
    for panel in panels.iter().filter(|panel| panel["type"] != "row") {
        let targets = panel["targets"].as_array().unwrap_or_else(|| panic!("{}: no targets", panel["title"]));
        assert!(!targets.is_empty(), "{}: no query", panel["title"]);
        for target in targets {
            let expr = target["expr"].as_str().expect("a PromQL expression");
            let names = metrics_in(expr);
            assert!(!names.is_empty(), "{}: {expr} reads no EchoMQ metric", panel["title"]);
            queried.extend(names);
        }
    }
    let undocumented: Vec<_> = queried.difference(&documented).collect();
    assert!(undocumented.is_empty(), "queried but not in docs/metrics.md: {undocumented:?}");
    // The worker's histograms are read, and the dashboard's per-queue counts.
    for name in ["emq_job_wait_seconds", "emq_job_run_seconds", "emq_jobs", "emq_workers"] {
        assert!(queried.contains(name), "the dashboard does not read {name}");
    }
}

#[test]
fn a_histograms_series_are_read_by_its_name() {
    assert_eq!(
        metrics_in("histogram_quantile(0.5, rate(emq_job_run_seconds_bucket[5m])) / emq_jobs{state=\"x\"}"),
        ["emq_job_run_seconds", "emq_jobs"]
    );
}
