//! What the pages say of the tree holds, read from the files as a
//! maintainer reads them:
//! - the README's "Ten lines" are `examples/ten_lines.rs`, built here;
//! - the budgets hold: `Queue`'s public methods ([`QUEUE_METHODS`]) and
//!   BENCHMARKS.md's length ([`BENCHMARKS_LINES`]).

use std::path::{Path, PathBuf};

// Its `main` runs as the example, not here: built, not called.
#[allow(dead_code)]
#[path = "../examples/ten_lines.rs"]
mod ten_lines;

/// The most public methods `Queue` may have (issue 34's budget). A new one
/// folds into another, or its family moves onto a handle of its own, as
/// `queue.schedules()`, `Upkeep::of(&queue)` and `Lease` did.
const QUEUE_METHODS: usize = 30;

/// BENCHMARKS.md stays shorter than this (STYLE.md 17): the current table,
/// the method and how to reproduce; earlier runs under `docs/benchmarks/`.
const BENCHMARKS_LINES: usize = 300;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The file at `path` from the repository's root.
fn read(path: &str) -> String {
    std::fs::read_to_string(repository().join(path)).unwrap_or_else(|err| panic!("{path}: {err}"))
}

/// The first `rust` block under the README's `## Ten lines`.
fn ten_lines_block(readme: &str) -> &str {
    let section = readme.split_once("\n## Ten lines\n").expect("a `## Ten lines` section").1;
    let block = section.split_once("```rust\n").expect("a rust block in it").1;
    block.split_once("```\n").expect("the block's end").0
}

#[test]
fn the_readme_shows_the_example_that_compiles() {
    let example = include_str!("../examples/ten_lines.rs");
    let readme = include_str!("../../../README.md");
    assert!(
        ten_lines_block(readme) == example,
        "README.md's `## Ten lines` block differs from crates/echomq/examples/ten_lines.rs: \
         change both, so the README shows code that compiles"
    );
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|err| panic!("{}: {err}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path);
        }
    }
}

/// `Queue`'s public methods as (file, name): in every file of the crate's
/// `src/`, each `pub fn` at the indentation of an inherent `impl Queue {`
/// block's items, up to the block's `}` in column 0 (as rustfmt writes
/// them). A `pub(crate)` method is not public; a trait's is not inherent.
fn queue_methods() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let mut methods = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let shown = file.strip_prefix(&src).unwrap().display().to_string();
        let mut inside = false;
        for line in text.lines() {
            let opens = line.starts_with("impl ") && !line.contains(" for ");
            if opens && (line.ends_with(" Queue {") || line.ends_with("::Queue {")) {
                inside = true;
            } else if line == "}" {
                inside = false;
            } else if let Some(item) = line.strip_prefix("    pub ").filter(|_| inside) {
                let item = ["const ", "async ", "unsafe "]
                    .iter()
                    .fold(item, |item, word| item.strip_prefix(word).unwrap_or(item));
                if let Some(signature) = item.strip_prefix("fn ") {
                    let name = signature.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap();
                    methods.push((shown.clone(), name.to_owned()));
                }
            }
        }
    }
    methods
}

#[test]
fn queue_keeps_to_its_budget_of_public_methods() {
    let methods = queue_methods();
    let listed: Vec<String> = methods.iter().map(|(file, name)| format!("{name} ({file})")).collect();
    assert!(
        methods.len() >= 10,
        "only {} public methods of `Queue` found ({}): has `impl Queue {{` changed shape?",
        methods.len(),
        listed.join(", ")
    );
    assert!(
        methods.len() <= QUEUE_METHODS,
        "`Queue` has {} public methods, over its budget of {QUEUE_METHODS}: {}. Fold one into \
         another, or move a family onto a handle of its own (as `queue.schedules()`, \
         `Upkeep::of(&queue)`, `Lease`), rather than raise the budget",
        methods.len(),
        listed.join(", ")
    );
}

#[test]
fn benchmarks_md_stays_under_its_budget_of_lines() {
    let lines = read("BENCHMARKS.md").lines().count();
    assert!(
        lines < BENCHMARKS_LINES,
        "BENCHMARKS.md is {lines} lines; it stays under {BENCHMARKS_LINES} (STYLE.md 17): it keeps \
         the current table, the method and how to reproduce, and an earlier run's write-up moves \
         to docs/benchmarks/<date>-<topic>.md, linked from its list of earlier runs"
    );
}
