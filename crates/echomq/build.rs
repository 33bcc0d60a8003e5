//! Embeds every file under `lua/` by its stem (`claim`,
//! `includes/common`), so the Lua executor finds a transition's script from
//! its description (`<name>.lua`) and no list of scripts is kept by hand.
//! A described transition without its script fails the build, not a test.

use std::fmt::Write;
use std::path::Path;

fn main() {
    let root = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let lua = Path::new(&root).join("lua");
    println!("cargo:rerun-if-changed=lua");
    let mut files = Vec::new();
    for dir in [lua.clone(), lua.join("includes")] {
        for entry in std::fs::read_dir(&dir).expect("lua/ and lua/includes/ exist") {
            let path = entry.expect("a readable lua/ entry").path();
            if path.extension().is_some_and(|ext| ext == "lua") {
                let stem = path.strip_prefix(&lua).expect("under lua/").with_extension("");
                files.push((stem.to_string_lossy().replace('\\', "/"), path.display().to_string()));
            }
        }
    }
    files.sort();
    let missing: Vec<String> = echomq_core::Name::ALL
        .iter()
        .filter(|name| !files.iter().any(|(stem, _)| stem == name.as_str()))
        .map(|name| format!("lua/{}", name.describe().script()))
        .collect();
    if !missing.is_empty() {
        panic!(
            "a described transition has no script: {} (PROTOCOL.md §7 says what each must do)",
            missing.join(", ")
        );
    }
    let mut out = String::from("/// Every file under lua/, by stem.\nconst FILES: &[(&str, &str)] = &[\n");
    for (stem, path) in files {
        writeln!(out, "    ({stem:?}, include_str!({path:?})),").expect("writing to a String");
    }
    out.push_str("];\n");
    let dest = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("lua_files.rs");
    std::fs::write(dest, out).expect("OUT_DIR is writable");
}
