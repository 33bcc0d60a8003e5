//! The EchoMQ module a server loads.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The EchoMQ module to load: `$ECHOMQ_MODULE` when set; else the
/// workspace's own, built first. The host crate does not depend on the
/// module, so `cargo test -p echomq` would not rebuild it and a server
/// could load a stale `.so`: the first call in a process runs `cargo build
/// -p echomq-module` (quiet, about a tenth of a second when it is fresh)
/// into the calling binary's own target directory and profile, and
/// returns what that wrote. Panics with cargo's output when the build fails.
///
/// From inside `cargo test` this does not wait on cargo's lock: `cargo
/// test` gives the build directory up once its binaries are built, before
/// it runs them (checked: the tests that load the module pass under `cargo
/// test`, each binary building it once).
pub fn module_path() -> PathBuf {
    if let Some(path) = std::env::var_os("ECHOMQ_MODULE") {
        let path = PathBuf::from(path);
        assert!(path.is_file(), "ECHOMQ_MODULE names no file: {}", path.display());
        // The server resolves it after moving into its own directory.
        return std::fs::canonicalize(&path).unwrap_or(path);
    }
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(build_module).clone()
}

/// `cargo build -p echomq-module` with the caller's target directory and
/// profile: a test binary is `<target>/<profile>/deps/<name>`, a program
/// (the chaos runner) `<target>/<profile>/<name>`.
fn build_module() -> PathBuf {
    let exe = std::env::current_exe().expect("the running binary's path");
    let mut profile_dir = exe.parent().expect("a binary in a directory");
    if profile_dir.file_name().is_some_and(|name| name == "deps") {
        profile_dir = profile_dir.parent().expect("deps/ in a profile's directory");
    }
    let target = profile_dir.parent().expect("a profile's directory in a target directory");
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(&cargo);
    command.args(["build", "--quiet", "-p", "echomq-module"]).current_dir(&workspace);
    command.env("CARGO_TARGET_DIR", target);
    match profile_dir.file_name().and_then(|name| name.to_str()) {
        Some("debug") => {}
        Some("release") => {
            command.arg("--release");
        }
        Some(other) => {
            command.args(["--profile", other]);
        }
        None => panic!("cannot tell the profile of {}", exe.display()),
    }
    let out = command.stdin(Stdio::null()).output().unwrap_or_else(|err| {
        panic!(
            "cannot run {} to build the EchoMQ module: {err} (or set ECHOMQ_MODULE)",
            cargo.to_string_lossy()
        )
    });
    assert!(
        out.status.success(),
        "cargo build -p echomq-module failed (or set ECHOMQ_MODULE to a built module):\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let name = format!("{}echomq_module{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX);
    let path = profile_dir.join(name);
    assert!(path.is_file(), "cargo built the EchoMQ module, but not at {}", path.display());
    std::fs::canonicalize(&path).unwrap_or(path)
}
