//! Writes the golden vectors, `protocol/vectors/<transition>.json`, from the
//! core's cases: `cargo run -p echomq-core --example vectors`. Files of
//! transitions that no longer exist are removed; the README stays. Writes
//! with them the list of the core's per-case tests,
//! `crates/echomq-core/tests/vectors/cases.rs`.

use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../protocol/vectors");
    let files = echomq_core::vectors::files().unwrap_or_else(|err| panic!("a case failed: {err}"));
    std::fs::create_dir_all(&dir).expect("protocol/vectors/");
    for entry in std::fs::read_dir(&dir).expect("protocol/vectors/") {
        let path = entry.expect("an entry").path();
        let stale = path.extension().is_some_and(|ext| ext == "json")
            && !files.iter().any(|(name, _)| path.file_name().is_some_and(|file| file == name.as_str()));
        if stale {
            std::fs::remove_file(&path).expect("a stale file removed");
        }
    }
    let mut cases = 0;
    for (name, content) in &files {
        std::fs::write(dir.join(name), content).expect("a vector file written");
        cases += content.matches("\"name\": ").count();
    }
    println!("wrote {} files, {cases} cases, to {}", files.len(), dir.display());
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join(echomq_core::vectors::CASE_TESTS);
    let list = echomq_core::vectors::case_tests().unwrap_or_else(|err| panic!("{err}"));
    std::fs::create_dir_all(tests.parent().expect("a folder")).expect("tests/vectors/");
    std::fs::write(&tests, list).expect("the list of tests written");
    println!("wrote one test per case to {}", tests.display());
}
