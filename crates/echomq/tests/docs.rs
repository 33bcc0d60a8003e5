//! What the pages say of the tree holds, read from the files as a
//! maintainer reads them:
//! - the README's "Ten lines" are `examples/ten_lines.rs`, built here;
//! - the budgets hold: `Queue`'s public methods ([`QUEUE_METHODS`]) and
//!   BENCHMARKS.md's length ([`BENCHMARKS_LINES`]);
//! - every count of the tree that README.md, CHANGELOG.md, ARCHITECTURE.md
//!   and CONTRIBUTING.md quote is the tree's ([`quoted`]), and no script is
//!   named by its key count (`claim-8.lua`): a script is `<transition>.lua`.
//!
//! A count of the tree (cases, transitions, keys, methods, files, tests,
//! lines) that [`quoted`] does not list has no place in those pages: give
//! it a row, or leave it out. Not checked here: measurements, which name
//! their run and do not drift, and the protocol's limits and defaults.

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

/// The pages whose counts [`quoted`] checks.
const PAGES: [&str; 4] = ["README.md", "CHANGELOG.md", "ARCHITECTURE.md", "CONTRIBUTING.md"];

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

/// A count a page quotes, and the tree's.
struct Quoted {
    page: &'static str,
    /// The words just before the figure, once in the page (its line breaks
    /// read as spaces). The figure is in digits (`1,000`) or a word (`eight`).
    after: &'static str,
    /// What it counts, for the failure.
    counts: &'static str,
    truth: fn() -> usize,
}

/// Every count of the tree the pages quote.
fn quoted() -> Vec<Quoted> {
    fn row(page: &'static str, after: &'static str, counts: &'static str, truth: fn() -> usize) -> Quoted {
        Quoted { page, after, counts, truth }
    }
    vec![
        row("README.md", "every golden vector case (", "the cases in protocol/vectors/*.json", vector_cases),
        row("CHANGELOG.md", "Every transition (", "echomq::Name::ALL", || echomq::Name::ALL.len()),
        row("CHANGELOG.md", "`Clone`, ", "words in size_of::<echomq::Error>()", error_words),
        row("ARCHITECTURE.md", "payload] }`: all ", "ENQUEUE's description's keys", enqueue_keys),
        row("ARCHITECTURE.md", "`Queue` keeps to at most ", "QUEUE_METHODS, tests/docs.rs", || QUEUE_METHODS),
        row("ARCHITECTURE.md", "It took ", "the rows of its table of files", files_to_add_a_transition),
        row("ARCHITECTURE.md", "Then ", "the failures listed after it", failures_to_add_a_transition),
        row(
            "ARCHITECTURE.md",
            "no function of theirs longer than ",
            "LONGEST_FN, tests/structure.rs",
            || number_in("crates/echomq/tests/structure.rs", "const LONGEST_FN", "= "),
        ),
        row(
            "CONTRIBUTING.md",
            "conformance's random sequences ",
            "lua_native_and_embedded_agree…'s cases",
            conformance_sequences,
        ),
        row(
            "CONTRIBUTING.md",
            "its raw calls ",
            "raw_calls_get_the_same_reply…'s cases",
            conformance_raw_calls,
        ),
        row(
            "CONTRIBUTING.md",
            "Lua and native in turn ",
            "a_queue_worked_by_lua_and_native…'s cases",
            in_turn,
        ),
        row("CONTRIBUTING.md", "the model's sequences ", "tests/model.rs's cases", model_sequences),
        row("CONTRIBUTING.md", "the gate's cases ", "tests/gate.rs's cases", gate_cases),
        row("CONTRIBUTING.md", "and on Valkey ", "PROPTEST_CASES in scripts/test's Valkey stage", on_valkey),
        row("CONTRIBUTING.md", "BENCHMARKS.md stays under ", "BENCHMARKS_LINES, tests/docs.rs", || {
            BENCHMARKS_LINES
        }),
    ]
}

const CONFORMANCE: &str = "crates/echomq/tests/conformance.rs";

fn conformance_sequences() -> usize {
    number_in(CONFORMANCE, "fn lua_native_and_embedded_agree", "for_random_sequences(")
}

fn conformance_raw_calls() -> usize {
    number_in(CONFORMANCE, "fn raw_calls_get_the_same_reply", "unwrap_or(")
}

fn in_turn() -> usize {
    number_in(CONFORMANCE, "fn a_queue_worked_by_lua_and_native", "for_random_sequences(")
}

fn model_sequences() -> usize {
    number_in("crates/echomq/tests/model.rs", "proptest_config", "unwrap_or(")
}

fn gate_cases() -> usize {
    number_in("crates/echomq/tests/gate.rs", "const CASES", "= ")
}

fn on_valkey() -> usize {
    number_in("scripts/test", "ECHOMQ_REDIS_CLI=", "PROPTEST_CASES=")
}

fn error_words() -> usize {
    std::mem::size_of::<echomq::Error>() / std::mem::size_of::<usize>()
}

fn enqueue_keys() -> usize {
    echomq::Name::Enqueue.describe().keys.len()
}

/// The rows of "Adding a transition"'s table of files (`| 1 | …`).
fn files_to_add_a_transition() -> usize {
    let section = adding_a_transition();
    section.lines().filter(|line| line.starts_with("| ") && line[2..].starts_with(char::is_numeric)).count()
}

/// The list after "Adding a transition"'s paragraph that starts `Then `.
fn failures_to_add_a_transition() -> usize {
    let section = adding_a_transition();
    let after = section.split_once("\nThen ").expect("a paragraph starting `Then `").1;
    let list = after.split_once("\n\n").map_or(after, |(list, _)| list);
    list.lines().filter(|line| line.starts_with("- ")).count()
}

/// The golden vectors' cases, every file's.
fn vector_cases() -> usize {
    let dir = repository().join("protocol/vectors");
    let mut cases = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "json") {
            let file: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            cases += file["cases"].as_array().unwrap_or_else(|| panic!("{}: no cases", path.display())).len();
        }
    }
    cases
}

/// ARCHITECTURE.md's "Adding a transition", to the next section.
fn adding_a_transition() -> String {
    let page = read("ARCHITECTURE.md");
    let section = page.split_once("\n## Adding a transition\n").expect("its section").1;
    section.split("\n## ").next().unwrap().to_owned()
}

/// The number right after the first `needle` that follows `marker` in `path`.
fn number_in(path: &str, marker: &str, needle: &str) -> usize {
    let text = read(path);
    let from = text.find(marker).unwrap_or_else(|| panic!("{path}: no {marker:?}"));
    let at = text[from..].find(needle).unwrap_or_else(|| panic!("{path}: no {needle:?} after {marker:?}"));
    figure(&text[from + at + needle.len()..]).unwrap_or_else(|| panic!("{path}: no number after {needle:?}"))
}

const WORDS: [&str; 21] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
];

/// The figure `text` starts with: digits, with commas between thousands,
/// or a number's word.
fn figure(text: &str) -> Option<usize> {
    let digits: String = text.chars().take_while(|c| c.is_ascii_digit() || *c == ',').collect();
    let digits = digits.trim_end_matches(',');
    if !digits.is_empty() {
        return digits.replace(',', "").parse().ok();
    }
    let word: String = text.chars().take_while(char::is_ascii_alphabetic).collect();
    WORDS.iter().position(|known| known.eq_ignore_ascii_case(&word))
}

/// The sentence of `text` around byte `at`, cut to about 100 characters
/// either side.
fn sentence(text: &str, at: usize) -> String {
    let start = text[..at].rfind(". ").map_or(0, |end| end + 2);
    let end = text[at..].find(". ").map_or(text.len(), |end| at + end + 1);
    let (before, after) = (&text[start..at], &text[at..end]);
    let cut = |part: &str, keep: usize, front: bool| -> String {
        let chars = part.chars().count();
        if chars <= keep {
            part.to_owned()
        } else if front {
            format!("…{}", part.chars().skip(chars - keep).collect::<String>())
        } else {
            format!("{}…", part.chars().take(keep).collect::<String>())
        }
    };
    format!("{}{}", cut(before, 100, true), cut(after, 100, false))
}

/// Each `<name>-<keys>.lua` a page names, as (byte offset, name, keys): the
/// scripts' names before they were named by their transition alone.
fn scripts_named(text: &str) -> Vec<(usize, String, usize)> {
    let mut named = Vec::new();
    for (end, _) in text.match_indices(".lua") {
        let before = &text[..end];
        let digits = before.len() - before.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let Some(stem) = before[..before.len() - digits].strip_suffix('-') else { continue };
        let letters = stem.len() - stem.trim_end_matches(|c: char| c.is_ascii_lowercase()).len();
        if digits > 0 && letters > 0 {
            let start = stem.len() - letters;
            named.push((start, stem[start..].to_owned(), before[before.len() - digits..].parse().unwrap()));
        }
    }
    named
}

#[test]
fn every_count_the_pages_quote_is_the_trees() {
    let flat = |text: String| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let pages: Vec<(&str, String)> = PAGES.iter().map(|page| (*page, flat(read(page)))).collect();
    let text_of = |page: &str| &pages.iter().find(|(name, _)| *name == page).expect("a page of PAGES").1;
    let mut wrong = Vec::new();
    for quoted in quoted() {
        let text = text_of(quoted.page);
        let found: Vec<usize> =
            text.match_indices(quoted.after).map(|(at, _)| at + quoted.after.len()).collect();
        let [at] = found[..] else {
            wrong.push(format!(
                "{}: {:?} is there {} times, not once: reword the page or its row in tests/docs.rs",
                quoted.page,
                quoted.after,
                found.len()
            ));
            continue;
        };
        let (said, truth) = (figure(&text[at..]), (quoted.truth)());
        if said != Some(truth) {
            let said = said.map_or("no figure".to_owned(), |said| said.to_string());
            let sentence = sentence(text, at);
            wrong.push(format!(
                "{}: \"{sentence}\" says {said}; the tree has {truth} ({})",
                quoted.page, quoted.counts
            ));
        }
    }
    for (page, text) in &pages {
        for (at, name, keys) in scripts_named(text) {
            let sentence = sentence(text, at);
            wrong.push(format!(
                "{page}: \"{sentence}\" names {name}-{keys}.lua; a script is named by its transition alone: {name}.lua"
            ));
        }
    }
    assert!(wrong.is_empty(), "counts the pages quote that the tree does not hold:\n{}", wrong.join("\n"));
}

#[test]
fn figures_are_read_in_digits_and_in_words() {
    assert_eq!(figure("1,000 random sequences"), Some(1000));
    assert_eq!(figure("780, refusals included"), Some(780));
    assert_eq!(figure("twelve keys"), Some(12));
    assert_eq!(figure("Eight files"), Some(8));
    assert_eq!(figure("many"), None);
    let named = scripts_named("EVALSHA of `enqueue-12.lua`, or claim-8.lua; includes/common.lua");
    let named: Vec<_> = named.into_iter().map(|(_, name, keys)| (name, keys)).collect();
    assert_eq!(named, [("enqueue".to_owned(), 12), ("claim".to_owned(), 8)]);
}
