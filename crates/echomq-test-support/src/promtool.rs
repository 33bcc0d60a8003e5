//! Prometheus' own check of an exposition: `promtool check metrics`.

use std::io::Write as _;
use std::process::{Command, Stdio};

/// What `promtool check metrics` says of `body` (a `/metrics` response's
/// body): `Ok` when it passes (every family with its HELP, names and types
/// as Prometheus' lint wants them), `Err` with its complaints when it does
/// not; `None` when `promtool` is not installed (Debian: the `prometheus`
/// package, which scripts/test installs), after saying so on stderr.
pub fn promtool_check_metrics(body: &str) -> Option<Result<(), String>> {
    let child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        eprintln!("promtool is not installed: the exposition is not checked by it");
        return None;
    };
    child.stdin.take().expect("piped").write_all(body.as_bytes()).expect("promtool reads its stdin");
    let output = child.wait_with_output().expect("promtool runs");
    let said =
        format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    Some(if output.status.success() && said.trim().is_empty() { Ok(()) } else { Err(said) })
}
