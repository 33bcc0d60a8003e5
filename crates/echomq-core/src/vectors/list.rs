//! The list of the core's per-case tests, `tests/vectors/cases.rs`: one
//! `#[test]` per case, in a module per transition, each replaying its case
//! from the committed file. Written with the files by the vectors example
//! and checked with them by the staleness test, so a case never lacks its
//! test and no test outlives its case.

use super::cases;

/// Where the list of per-case tests is written, from the crate's root.
pub const CASE_TESTS: &str = "tests/vectors/cases.rs";

/// A case's name as a Rust identifier: lower case, words joined by `_`.
fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9') => out.push(c),
            _ if out.ends_with('_') || out.is_empty() => {}
            _ => out.push('_'),
        }
    }
    let out = out.trim_end_matches('_').to_owned();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        format!("case_{out}")
    } else {
        out
    }
}

/// The file of `tests/vectors/cases.rs`: one `#[test]` per case, in a
/// module per transition, each replaying that case from its file. Written
/// with the files, and checked with them, so it cannot fall behind them.
///
/// # Errors
///
/// Two cases of a transition whose names make the same test name.
pub fn case_tests() -> Result<String, String> {
    let mut out = String::from(
        "// One test per golden vector case, each replaying its case from the\n\
         // committed file on the in-memory store. Written by `cargo run -p\n\
         // echomq-core --example vectors` with the files; never edit it by hand.\n",
    );
    for (name, cases) in cases() {
        out.push_str(&format!("\nmod {name} {{\n    use crate::replay;\n"));
        let mut seen = Vec::new();
        for case in cases {
            let test = slug(&case.name);
            if seen.contains(&test) {
                return Err(format!("{name}: two cases make the test name {test}; rename one"));
            }
            let quoted = format!("{:?}", case.name);
            out.push_str(&format!(
                "\n    #[test]\n    fn {test}() {{\n        replay(\"{name}\", {quoted});\n    }}\n"
            ));
            seen.push(test);
        }
        out.push_str("}\n");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_case_name_makes_a_test_name() {
        assert_eq!(slug("KEYS[1] holds a string"), "keys_1_holds_a_string");
        assert_eq!(slug("ack: a stale token"), "ack_a_stale_token");
        assert_eq!(slug("2 jobs"), "case_2_jobs");
    }
}
