//! The function budget of issue 48: no function of the workspace's Rust
//! source is over [`BUDGET`] lines, counted from its `fn` line to its
//! closing brace as rustfmt lays it out. A function that long is doing
//! more than one thing: split it into named steps that read top-down.
//!
//! What is read: every `*.rs` file of the workspace (`crates/*/src`,
//! build scripts, `examples/`, `fuzz/`, `bench/src`), except those under a
//! `tests/` directory (integration tests), a `target/` directory or a
//! hidden one. What is left out:
//! - test code: every item that follows `#[cfg(test)]` (a `mod tests { … }`,
//!   a helper), and every file such an item includes (`#[cfg(test)] mod
//!   round_trip;` includes `transition/round_trip.rs`, and its own
//!   submodules with it);
//! - the golden vector tables ([`TABLES`]): `cases()` in
//!   `crates/echomq-core/src/vectors/`, one `Case` a line, the data from
//!   which `protocol/vectors/*.json` and the core's
//!   `tests/vectors/cases.rs` are generated. A table is read down, a case
//!   a line; cutting one by length would only scatter a transition's cases
//!   (and the generated files stay out of reach: `cases.rs` is under
//!   `tests/`, the build scripts' output under `target/`);
//! - the functions named in [`STILL_LONG`], while they are still long.
//!
//! Rustfmt's layout makes a reader by lines reliable: a function whose
//! `fn` line is indented N spaces ends at the first later line that is N
//! spaces and `}`; a declaration that ends with `;` (a trait's method, an
//! extern function) has no body.

use std::path::{Path, PathBuf};

/// The most lines a function may take.
const BUDGET: usize = 60;

/// `(path, function)`: long functions a change may leave while it splits
/// them, none today. The list only shrinks: the test fails while it names a
/// function that is not over the budget (or no longer exists).
const STILL_LONG: &[(&str, &str)] = &[];

/// `(directory, function)`: the tables of data left out, a function of
/// that name in any file under that directory (see the top of this file).
const TABLES: &[(&str, &str)] = &[("crates/echomq-core/src/vectors/", "cases")];

#[test]
fn no_function_is_over_the_budget() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut long = Vec::new();
    for file in workspace_sources(&root) {
        let text = std::fs::read_to_string(&file.path).unwrap_or_else(|err| panic!("{}: {err}", file.name));
        let functions = functions(&text).unwrap_or_else(|err| panic!("{}:{err}", file.name));
        long.extend(functions.into_iter().filter(|f| f.lines > BUDGET).map(|f| (file.name.clone(), f)));
    }
    let table =
        |path: &str, name: &str| TABLES.iter().any(|(dir, table)| path.starts_with(dir) && name == *table);
    let exempt = |path: &str, name: &str| STILL_LONG.contains(&(path, name));
    let over: Vec<String> = long
        .iter()
        .filter(|(path, f)| !table(path, &f.name) && !exempt(path, &f.name))
        .map(|(path, f)| format!("{path}:{} {} ({} lines)", f.line, f.name, f.lines))
        .collect();
    let stale: Vec<String> = STILL_LONG
        .iter()
        .filter(|(path, name)| !long.iter().any(|(at, f)| at == path && f.name == *name))
        .map(|(path, name)| format!("{path} {name}"))
        .collect();
    let mut problems = Vec::new();
    if !over.is_empty() {
        problems.push(format!(
            "{} function(s) over {BUDGET} lines; split each into named steps that read top-down:\n{}",
            over.len(),
            over.join("\n")
        ));
    }
    if !stale.is_empty() {
        problems.push(format!(
            "STILL_LONG names function(s) no longer over {BUDGET} lines (or gone); remove them:\n{}",
            stale.join("\n")
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// The reader, on the shapes rustfmt gives: a where clause, a trait's
/// declaration, a one-line body, a nested function, test code.
#[test]
fn the_reader_measures_functions_as_rustfmt_lays_them_out() {
    let text = "\
pub(crate) async fn outer<T>(t: T) -> u8
where
    T: Clone,
{
    fn inner() {
        let _ = 1;
    }
    0
}

pub trait Door {
    fn declared(
        &self,
    ) -> u8;
    fn empty(&self) {}
}

#[cfg(test)]
#[allow(dead_code)]
mod tests {
    fn hidden() {
        let _ = 1;
    }
}

#[cfg(test)]
fn helper() {
    let _ = 1;
}
";
    let found: Vec<(String, usize, usize)> =
        functions(text).unwrap().into_iter().map(|f| (f.name, f.line, f.lines)).collect();
    let want =
        [("outer", 1, 9), ("inner", 5, 3), ("empty", 15, 1)].map(|(n, at, lines)| (n.to_owned(), at, lines));
    assert_eq!(found, want);
    assert!(functions("fn cut() {\n    let _ = 1;\n").is_err(), "a body that never closes is an error");
}

/// A function, as the reader found it.
#[derive(Debug)]
struct Function {
    name: String,
    /// Its `fn` line, from 1.
    line: usize,
    /// From its `fn` line to its closing brace.
    lines: usize,
}

/// A source file: its path, and its name from the workspace's root.
struct Source {
    path: PathBuf,
    name: String,
}

/// Every `.rs` file under `root` outside `tests/`, `target/` and hidden
/// directories, and not test code included by `#[cfg(test)] mod …;`.
fn workspace_sources(root: &Path) -> Vec<Source> {
    let mut files = Vec::new();
    walk(root, &mut files);
    files.sort();
    let test_modules: Vec<PathBuf> = files.iter().flat_map(|file| test_modules(file)).collect();
    files
        .into_iter()
        .filter(|file| {
            !test_modules.iter().any(|module| file == module || file.starts_with(module.with_extension("")))
        })
        .map(|path| {
            let name = path.strip_prefix(root).expect("under the root").to_string_lossy().replace('\\', "/");
            Source { path, name }
        })
        .collect()
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|err| panic!("{}: {err}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        let name = path.file_name().and_then(|name| name.to_str()).unwrap_or_default().to_owned();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" && name != "tests" {
                walk(&path, files);
            }
        } else if name.ends_with(".rs") {
            files.push(path);
        }
    }
}

/// The files `file` includes as test code: `mod name;` after
/// `#[cfg(test)]` (at `#[path = …]`, else where rustc looks for it). One
/// that cannot be found fails the test, so that none is read as source.
fn test_modules(file: &Path) -> Vec<PathBuf> {
    let text = std::fs::read_to_string(file).unwrap_or_else(|err| panic!("{}: {err}", file.display()));
    let lines: Vec<&str> = text.lines().collect();
    let mut modules = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        if line.trim() != "#[cfg(test)]" {
            continue;
        }
        let (attributes, item) = item_after(&lines, at + 1);
        let item = lines.get(item).copied().unwrap_or_default();
        let Some(name) = item.trim().strip_prefix("mod ").and_then(|rest| rest.strip_suffix(';')) else {
            continue;
        };
        let dir = file.parent().expect("a file in a directory");
        let path = attributes.iter().find_map(|attribute| {
            attribute.trim().strip_prefix("#[path = \"").and_then(|rest| rest.strip_suffix("\"]"))
        });
        let candidates = match path {
            Some(path) => vec![dir.join(path)],
            None => {
                let stem = file.file_stem().and_then(|stem| stem.to_str()).unwrap_or_default();
                let root = ["lib", "main", "mod", "build"].contains(&stem)
                    || ["examples", "fuzz_targets", "bin"].iter().any(|d| dir.ends_with(d));
                let base = if root { dir.to_path_buf() } else { dir.join(stem) };
                vec![base.join(format!("{name}.rs")), base.join(name).join("mod.rs")]
            }
        };
        let found = candidates.iter().find(|candidate| candidate.is_file());
        let found =
            found.unwrap_or_else(|| panic!("{}: no file for #[cfg(test)] mod {name};", file.display()));
        modules.push(found.clone());
    }
    modules
}

/// The attributes from `from` on, then the index of the item they are on
/// (comments skipped).
fn item_after<'a>(lines: &[&'a str], from: usize) -> (Vec<&'a str>, usize) {
    let mut attributes = Vec::new();
    for (at, line) in lines.iter().enumerate().skip(from) {
        let trimmed = line.trim();
        if trimmed.starts_with("#[") {
            attributes.push(*line);
        } else if !trimmed.starts_with("//") {
            return (attributes, at);
        }
    }
    (attributes, lines.len())
}

/// Every function of `text` with a body, outside test code, nested ones
/// too. An error names the line of a body that never closes.
fn functions(text: &str) -> Result<Vec<Function>, String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    let mut at = 0;
    while at < lines.len() {
        if lines[at].trim() == "#[cfg(test)]" {
            // The item the attribute is on, skipped whole when it has a body.
            let (_, item) = item_after(&lines, at + 1);
            if let Some(end) = body_end(&lines, item)? {
                at = end + 1;
                continue;
            }
        }
        if let Some(name) = fn_name(lines[at]) {
            if let Some(end) = body_end(&lines, at)? {
                found.push(Function { name: name.to_owned(), line: at + 1, lines: end - at + 1 });
            }
        }
        at += 1;
    }
    Ok(found)
}

/// The name of the function declared on `line`, if it declares one.
fn fn_name(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    loop {
        if let Some(after) = rest.strip_prefix("pub(") {
            rest = after.split_once(") ")?.1;
        } else if let Some(after) = rest.strip_prefix("extern \"") {
            rest = after.split_once("\" ")?.1;
        } else if let Some(after) = ["pub ", "const ", "async ", "unsafe ", "default "]
            .iter()
            .find_map(|word| rest.strip_prefix(word))
        {
            rest = after;
        } else {
            break;
        }
    }
    let rest = rest.strip_prefix("fn ")?;
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '#')).unwrap_or(rest.len());
    Some(&rest[..end]).filter(|name| !name.is_empty())
}

/// Where the item that starts at `start` ends: the first later line that
/// is its indent and `}`, once a line of its head ended with `{` (the same
/// line when the body is `{}`). `None`: a declaration (its head ends with
/// `;`), or no item.
fn body_end(lines: &[&str], start: usize) -> Result<Option<usize>, String> {
    let Some(first) = lines.get(start) else { return Ok(None) };
    let indent = first.len() - first.trim_start().len();
    let close = format!("{}}}", " ".repeat(indent));
    let mut open = None;
    for (at, line) in lines.iter().enumerate().skip(start) {
        let line = line.trim_end();
        if line.ends_with('{') {
            open = Some(at);
            break;
        }
        if line.ends_with(';') {
            return Ok(None);
        }
        if line.ends_with('}') && line.contains('{') {
            return Ok(Some(at));
        }
    }
    let Some(open) = open else { return Ok(None) };
    match lines.iter().enumerate().skip(open + 1).find(|(_, line)| line.trim_end() == close) {
        Some((end, _)) => Ok(Some(end)),
        None => Err(format!("{}: no `}}` at its indent closes it (is the file rustfmt's?)", start + 1)),
    }
}
