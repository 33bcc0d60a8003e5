//! bench/guard.py's tests (`bench/tests/test_guard.py`), run here so the
//! suite runs them: stdlib Python against the committed BENCHMARKS.md and
//! synthetic runs, no server and no timing.

use std::process::Command;

#[test]
fn guard_py_tests_pass() {
    let output = Command::new("python3")
        .args(["-m", "unittest", "discover", "-s", "tests", "-p", "test_guard.py"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run python3 -m unittest");
    assert!(
        output.status.success(),
        "bench/tests/test_guard.py failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
