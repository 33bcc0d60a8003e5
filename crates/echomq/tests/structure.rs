//! The worker's shape holds, read from its files (`src/worker.rs` and
//! everything under `src/worker/`) as a reviewer reads them (issue 48):
//! - its files depend on one another one way: no file imports from a file
//!   that imports from it, nor around a longer circle ([`one_way`]); a job's
//!   path reads claim loop → runner → sink → slots, and the jobs an ACKNEXT
//!   claimed go back to the claim loop over a channel, not by a call;
//! - no function is longer than [`LONGEST_FN`] lines, from its `fn` line to
//!   its closing brace as rustfmt lays it out, `#[cfg(test)]` code aside.
//!
//! A file depends on another when a path in it (a `use`, or a path in the
//! code: `super::sink::Outcome`, `crate::worker::lease::Heart`) names an
//! item of that file; a module and its parent count as files too, so a
//! child naming an item of `worker.rs` (`super::Shared`) while `worker.rs`
//! names one of the child's is a circle. Declaring a module (`mod sink;`)
//! and a visibility (`pub(in crate::worker)`) name nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The longest a function of the worker may be, in lines.
const LONGEST_FN: usize = 60;

fn source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// A token of Rust code, comments and literals left out: an identifier,
/// `::`, or one punctuation character; with its line, from 1.
#[derive(Clone, Debug, PartialEq)]
struct Token {
    text: String,
    line: usize,
}

/// `code`'s tokens, without its comments, strings and characters.
fn tokens(code: &str) -> Vec<Token> {
    let chars: Vec<char> = code.chars().collect();
    let (mut found, mut line, mut at) = (Vec::new(), 1, 0);
    let newlines = |from: usize, to: usize| chars[from..to].iter().filter(|&&c| c == '\n').count();
    while at < chars.len() {
        let (c, next) = (chars[at], chars.get(at + 1).copied());
        let start = at;
        if c == '/' && next == Some('/') {
            while at < chars.len() && chars[at] != '\n' {
                at += 1;
            }
        } else if c == '/' && next == Some('*') {
            at = skip_block_comment(&chars, at);
        } else if c == 'r' && (next == Some('"') || (next == Some('#') && chars.get(at + 2) == Some(&'"'))) {
            at = skip_raw_string(&chars, at + 1);
        } else if c == '"' {
            at = skip_string(&chars, at);
        } else if c == '\'' && is_char_literal(&chars, at) {
            at = skip_char(&chars, at);
        } else if c.is_alphabetic() || c == '_' {
            while at < chars.len() && (chars[at].is_alphanumeric() || chars[at] == '_') {
                at += 1;
            }
            found.push(Token { text: chars[start..at].iter().collect(), line });
        } else if c == ':' && next == Some(':') {
            found.push(Token { text: "::".into(), line });
            at += 2;
        } else {
            if !c.is_whitespace() {
                found.push(Token { text: c.to_string(), line });
            }
            at += 1;
        }
        line += newlines(start, at);
    }
    found
}

fn skip_block_comment(chars: &[char], mut at: usize) -> usize {
    let mut depth = 0;
    while at < chars.len() {
        if chars[at] == '/' && chars.get(at + 1) == Some(&'*') {
            depth += 1;
            at += 2;
        } else if chars[at] == '*' && chars.get(at + 1) == Some(&'/') {
            depth -= 1;
            at += 2;
            if depth == 0 {
                return at;
            }
        } else {
            at += 1;
        }
    }
    at
}

/// From the `#`s or the quote after an `r`: past the raw string's end.
fn skip_raw_string(chars: &[char], mut at: usize) -> usize {
    let mut hashes = 0;
    while chars[at] == '#' {
        hashes += 1;
        at += 1;
    }
    at += 1;
    while at < chars.len() {
        if chars[at] == '"' && (0..hashes).all(|i| chars.get(at + 1 + i) == Some(&'#')) {
            return at + 1 + hashes;
        }
        at += 1;
    }
    at
}

fn skip_string(chars: &[char], mut at: usize) -> usize {
    at += 1;
    while at < chars.len() && chars[at] != '"' {
        at += if chars[at] == '\\' { 2 } else { 1 };
    }
    at + 1
}

/// Whether the quote at `at` opens a character (`'x'`, `'\n'`), not a lifetime.
fn is_char_literal(chars: &[char], at: usize) -> bool {
    chars.get(at + 1) == Some(&'\\') || chars.get(at + 2) == Some(&'\'')
}

fn skip_char(chars: &[char], mut at: usize) -> usize {
    at += 1;
    while at < chars.len() && chars[at] != '\'' {
        at += if chars[at] == '\\' { 2 } else { 1 };
    }
    at + 1
}

/// The index of the token that closes the bracket opened at `open`.
fn closing(tokens: &[Token], open: usize) -> usize {
    let (opener, closer) = match tokens[open].text.as_str() {
        "{" => ("{", "}"),
        "(" => ("(", ")"),
        "[" => ("[", "]"),
        other => panic!("{other} opens nothing"),
    };
    let mut depth = 0;
    for (at, token) in tokens.iter().enumerate().skip(open) {
        if token.text == opener {
            depth += 1;
        } else if token.text == closer {
            depth -= 1;
            if depth == 0 {
                return at;
            }
        }
    }
    panic!("line {}: {opener} never closed", tokens[open].line)
}

/// Whether the tokens at `at` are `#[cfg(test)]`.
fn is_cfg_test(tokens: &[Token], at: usize) -> bool {
    let texts: Vec<&str> = tokens.iter().skip(at).take(7).map(|t| t.text.as_str()).collect();
    texts == ["#", "[", "cfg", "(", "test", ")", "]"]
}

/// The index past the item at `at` (after its attributes): its `;`, or
/// the `}` that closes its first block.
fn item_end(tokens: &[Token], at: usize) -> usize {
    let mut at = at;
    while at < tokens.len() {
        match tokens[at].text.as_str() {
            ";" => return at,
            "{" => return closing(tokens, at),
            _ => at += 1,
        }
    }
    at
}

/// A file of the worker: its module's path (`["sink", "acker"]`; `[]` for
/// `worker.rs`), its text's tokens, and whether all of it is test code.
struct File {
    name: String,
    module: Vec<String>,
    tokens: Vec<Token>,
    test_only: bool,
}

/// `worker.rs` and every file under `worker/`.
fn worker_files() -> Vec<File> {
    let mut found = Vec::new();
    let root = source();
    collect(&root.join("worker.rs"), &root.join("worker"), Vec::new(), false, &mut found);
    assert!(found.len() > 5, "the worker's files were not found under {}", root.display());
    found
}

/// The file at `path` as module `module`, and the modules it declares as
/// files under `dir`.
fn collect(path: &Path, dir: &Path, module: Vec<String>, test_only: bool, found: &mut Vec<File>) {
    let code = std::fs::read_to_string(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    let tokens = tokens(&code);
    let name = path.strip_prefix(source().parent().unwrap()).unwrap().display().to_string();
    for at in 0..tokens.len().saturating_sub(2) {
        if tokens[at].text == "mod" && tokens[at + 2].text == ";" {
            let child = tokens[at + 1].text.clone();
            let test = test_only || (at >= 7 && is_cfg_test(&tokens, at - 7));
            let mut path = module.clone();
            path.push(child.clone());
            let child_dir = dir.join(&child);
            collect(&dir.join(format!("{child}.rs")), &child_dir, path, test, found);
        }
    }
    found.push(File { name, module, tokens, test_only });
}

/// The worker's functions, `#[cfg(test)]` code aside: (file, name, first
/// line, lines).
fn functions(files: &[File]) -> Vec<(String, String, usize, usize)> {
    let mut found = Vec::new();
    for file in files.iter().filter(|file| !file.test_only) {
        let tokens = &file.tokens;
        let mut at = 0;
        while at < tokens.len() {
            if is_cfg_test(tokens, at) {
                at = item_end(tokens, at + 7) + 1;
                continue;
            }
            if tokens[at].text == "fn" && tokens.get(at + 1).is_some_and(|t| is_identifier(&t.text)) {
                let end = item_end(tokens, at);
                if tokens[end].text == "}" {
                    let lines = tokens[end].line - tokens[at].line + 1;
                    found.push((file.name.clone(), tokens[at + 1].text.clone(), tokens[at].line, lines));
                }
            }
            at += 1;
        }
    }
    found
}

fn is_identifier(text: &str) -> bool {
    text.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// Every path the tokens name, each as the module it is named from (an
/// inline module's path counted) and its segments: a `use` tree expanded
/// (`use super::{a, b::c}`: `super::a`, `super::b::c`), and the paths in the
/// code. Visibilities (`pub(in crate::worker)`) are left out.
fn paths(file: &File) -> Vec<(Vec<String>, Vec<String>)> {
    let tokens = &file.tokens;
    let mut found = Vec::new();
    // The inline modules the scan is in: each one's name and the depth of
    // braces it opened at.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let (mut depth, mut at) = (0, 0);
    while at < tokens.len() {
        let text = tokens[at].text.as_str();
        let here = || {
            let mut module = file.module.clone();
            module.extend(inline.iter().map(|(name, _)| name.clone()));
            module
        };
        match text {
            "{" => depth += 1,
            "}" => {
                depth -= 1;
                if inline.last().is_some_and(|(_, opened)| *opened == depth) {
                    inline.pop();
                }
            }
            "mod" if tokens.get(at + 2).is_some_and(|t| t.text == "{") => {
                inline.push((tokens[at + 1].text.clone(), depth));
            }
            "pub" if tokens.get(at + 1).is_some_and(|t| t.text == "(") => {
                at = closing(tokens, at + 1) + 1;
                continue;
            }
            "use" => {
                let end = (at..tokens.len()).find(|&i| tokens[i].text == ";").expect("a `use` ends");
                for path in use_tree(&tokens[at + 1..end], Vec::new()) {
                    found.push((here(), path));
                }
                at = end + 1;
                continue;
            }
            _ if is_identifier(text) && tokens.get(at + 1).is_some_and(|t| t.text == "::") => {
                let mut path = vec![text.to_owned()];
                at += 1;
                while tokens.get(at).is_some_and(|t| t.text == "::")
                    && tokens.get(at + 1).is_some_and(|t| is_identifier(&t.text))
                {
                    path.push(tokens[at + 1].text.clone());
                    at += 2;
                }
                found.push((here(), path));
                continue;
            }
            _ => {}
        }
        at += 1;
    }
    found
}

/// A `use` tree's paths, each after `prefix`.
fn use_tree(tokens: &[Token], prefix: Vec<String>) -> Vec<Vec<String>> {
    let mut path = prefix;
    let mut at = 0;
    while at < tokens.len() {
        match tokens[at].text.as_str() {
            "::" => at += 1,
            "{" => {
                let end = closing(tokens, at);
                let mut found = Vec::new();
                let mut start = at + 1;
                let mut depth = 0;
                for i in at + 1..=end {
                    match tokens[i].text.as_str() {
                        "{" => depth += 1,
                        "}" if depth > 0 => depth -= 1,
                        "," | "}" if depth == 0 => {
                            if start < i {
                                found.extend(use_tree(&tokens[start..i], path.clone()));
                            }
                            start = i + 1;
                        }
                        _ => {}
                    }
                }
                return found;
            }
            "as" => break,
            "self" if !path.is_empty() => at += 1,
            text => {
                path.push(text.to_owned());
                at += 1;
            }
        }
    }
    vec![path]
}

/// The file module a path names an item of, named from module `from`:
/// `None` when it is no worker file's, or the file it is named from.
fn resolve(from: &[String], path: &[String], modules: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    let mut segments = path.iter().peekable();
    let mut module: Vec<String> = match segments.peek().map(|s| s.as_str()) {
        Some("crate") => {
            segments.next();
            if segments.next().map(String::as_str) != Some("worker") {
                return None;
            }
            Vec::new()
        }
        Some("self") => {
            segments.next();
            from.to_vec()
        }
        Some("super") => {
            let mut module = from.to_vec();
            while segments.peek().is_some_and(|s| *s == "super") {
                segments.next();
                module.pop()?;
            }
            module
        }
        Some(first) => {
            // A child module named bare, as `worker.rs` names `claims::…`.
            let mut child = from.to_vec();
            child.push(first.to_string());
            if !modules.contains(&child) {
                return None;
            }
            from.to_vec()
        }
        None => return None,
    };
    for segment in segments {
        let mut deeper = module.clone();
        deeper.push(segment.clone());
        if modules.contains(&deeper) || !modules.contains(&module) {
            module = deeper;
        } else {
            break;
        }
    }
    // An inline module's path lies within its file's.
    while !modules.contains(&module) {
        module.pop()?;
    }
    Some(module)
}

/// Which files each file of the worker names an item of (itself aside).
fn imports(files: &[File]) -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeSet<Vec<String>> = files.iter().map(|file| file.module.clone()).collect();
    let name_of = |module: &Vec<String>| files.iter().find(|f| &f.module == module).unwrap().name.clone();
    let mut graph = BTreeMap::new();
    for file in files {
        let mut names = BTreeSet::new();
        for (from, path) in paths(file) {
            if let Some(module) = resolve(&from, &path, &modules) {
                if module != file.module {
                    names.insert(name_of(&module));
                }
            }
        }
        graph.insert(file.name.clone(), names);
    }
    graph
}

/// A circle in `graph`, if there is one: its files, the first again at the end.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        at: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        trail: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = trail.iter().position(|file| file == at) {
            let mut found = trail[start..].to_vec();
            found.push(at.to_owned());
            return Some(found);
        }
        if done.contains(at) {
            return None;
        }
        trail.push(at.to_owned());
        for next in graph.get(at).into_iter().flatten() {
            if let Some(found) = visit(next, graph, trail, done) {
                return Some(found);
            }
        }
        trail.pop();
        done.insert(at.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|file| visit(file, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_worker_files_depend_on_one_another_one_way() {
    let graph = imports(&worker_files());
    let mut both_ways = Vec::new();
    for (file, names) in &graph {
        for other in names {
            if file < other && graph[other].contains(file) {
                both_ways.push(format!("{file} <-> {other}"));
            }
        }
    }
    assert!(both_ways.is_empty(), "files of the worker that import each other:\n{}", both_ways.join("\n"));
    if let Some(found) = circle(&graph) {
        panic!("the worker's files import one another around a circle: {}", found.join(" -> "));
    }
}

#[test]
fn no_function_of_the_worker_is_longer_than_sixty_lines() {
    let long: Vec<String> = functions(&worker_files())
        .into_iter()
        .filter(|(_, _, _, lines)| *lines > LONGEST_FN)
        .map(|(file, name, line, lines)| format!("{file}:{line}: fn {name} is {lines} lines"))
        .collect();
    assert!(long.is_empty(), "over {LONGEST_FN} lines (split them):\n{}", long.join("\n"));
}

/// The reading itself, on code made up for it.
#[test]
fn the_reading_finds_paths_functions_and_circles() {
    let file = |name: &str, module: &[&str], code: &str| File {
        name: name.to_owned(),
        module: module.iter().map(|s| s.to_string()).collect(),
        tokens: tokens(code),
        test_only: false,
    };
    let parent = file(
        "worker.rs",
        &[],
        "mod a;\nmod b;\nuse a::{self, Run};\npub(in crate::worker) fn f() {\n    let s = \"super::b::X {\";\n}\n",
    );
    let a = file("worker/a.rs", &["a"], "use super::{b::{X, Y}, Shared as S};\n// super::c::Z\n");
    let b = file(
        "worker/b.rs",
        &["b"],
        "pub mod m {\n    fn g() { super::super::a::h(); }\n}\n#[cfg(test)]\nmod tests {\n    use super::*;\n    fn t() {\n\n\n    }\n}\n",
    );
    let files = [parent, a, b];
    let graph = imports(&files);
    let set = |names: &[&str]| names.iter().map(|name| format!("worker{name}.rs")).collect::<BTreeSet<_>>();
    assert_eq!(graph["worker.rs"], set(&["/a"]), "a bare child, `self` and `pub(in …)` left out");
    assert_eq!(graph["worker/a.rs"], set(&["", "/b"]), "a parent's item, a sibling's, comments left out");
    assert_eq!(graph["worker/b.rs"], set(&["/a"]), "from an inline module; a test's `super` is its file");
    assert!(circle(&graph).is_some());
    let fns: Vec<(String, usize)> =
        functions(&files).into_iter().map(|(_, name, _, lines)| (name, lines)).collect();
    assert_eq!(fns, [("f".to_owned(), 3), ("g".to_owned(), 1)], "the test's `t` is not counted");
}
