//! The shape budgets of issue 48, read from the source as a maintainer
//! reads it, so that a budget met stays met:
//! - the `Executor` trait is one door: at most [`DOOR_METHODS`] methods,
//!   none with a default body (a wrapper forwards each, so the chaos witness
//!   drives production's path), and no `redis` type crosses it or the
//!   [`Plain`](echomq::executor::Plain) handle beside it.

use std::path::{Path, PathBuf};

/// The most methods the `Executor` trait may have.
const DOOR_METHODS: usize = 6;

fn source(path: &str) -> String {
    let path: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// The body of the trait `name` in `text`: from its `pub trait` line to
/// the `}` that closes it at the start of a line.
fn trait_body<'a>(text: &'a str, name: &str) -> &'a str {
    let start = text.find(&format!("pub trait {name}")).unwrap_or_else(|| panic!("no trait {name}"));
    let end = text[start..].find("\n}\n").expect("the trait closes") + start;
    &text[start..end]
}

/// Each method of a trait body: its declaration from `fn` to the `;` or `{`
/// that ends it (doc comments and attributes left out).
fn methods(body: &str) -> Vec<String> {
    let mut methods = Vec::new();
    let mut current: Option<String> = None;
    for line in body.lines().skip(1) {
        let line = line.trim();
        if line.starts_with("//") || line.starts_with("#[") {
            continue;
        }
        if current.is_none() && (line.starts_with("fn ") || line.starts_with("async fn ")) {
            current = Some(String::new());
        }
        if let Some(declaration) = current.as_mut() {
            declaration.push_str(line);
            declaration.push(' ');
            if line.ends_with(';') || line.ends_with('{') {
                methods.push(current.take().expect("a declaration"));
            }
        }
    }
    methods
}

#[test]
fn the_executor_is_one_door_with_no_default_and_no_redis_type() {
    let text = source("src/executor.rs");
    let door = methods(trait_body(&text, "Executor"));
    assert!(door.len() <= DOOR_METHODS, "the Executor trait has {} methods: {door:#?}", door.len());
    assert!(door.len() >= 2, "the trait was read: {door:#?}");
    for method in &door {
        assert!(method.trim_end().ends_with(';'), "a default body lets a wrapper skip it: {method}");
        assert!(
            !method.contains("redis") && !method.contains("Value"),
            "a redis type crosses the door: {method}"
        );
    }
    let plain = source("src/executor/plain.rs");
    for method in methods(trait_body(&plain, "Plain")) {
        assert!(!method.contains("redis") && !method.contains("Value"), "a redis type in Plain: {method}");
    }
}

#[test]
fn the_reader_finds_defaults_and_counts_methods() {
    let body = "pub trait T {\n    /// a\n    fn a(&self) -> u8;\n    async fn b(\n        &self,\n    ) -> u8 {\n        1\n    }\n}\n";
    let found = methods(trait_body(body, "T"));
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].ends_with("; ") && found[1].ends_with("{ "), "{found:?}");
}
