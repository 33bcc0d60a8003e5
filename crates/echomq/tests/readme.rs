//! The README's "Ten lines" compile: its block is `examples/ten_lines.rs`,
//! which is built here, and this test fails when the two differ.

// Its `main` runs as the example, not here: built, not called.
#[allow(dead_code)]
#[path = "../examples/ten_lines.rs"]
mod ten_lines;

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
