//! `emq scripts --out DIR`: the protocol's Lua scripts as a server loads
//! them, for speakers in other languages (PROTOCOL.md §11). The files in
//! `crates/echomq/lua/` share code through `--@include` lines, which only
//! the host expands; these are expanded, one `<transition>.lua` per
//! transition, byte for byte what `SCRIPT LOAD` takes, and `SHA1SUMS` lists
//! each one's SHA1: the name `EVALSHA` calls it by (`sha1sum -c SHA1SUMS`
//! checks them). `manifest.json` says the same for a program: the protocol's
//! version and, per script, its transition, file, number of keys and SHA1.

use std::path::{Path, PathBuf};

use echomq::executor::script_source;
use echomq::Name;

use crate::connect::Error;

/// Where to write.
#[derive(clap::Args)]
pub struct Args {
    /// The directory to write the scripts and SHA1SUMS into (created when missing).
    #[arg(long)]
    out: PathBuf,
}

/// One loadable script: its transition, file name, text and SHA1.
pub struct Script {
    /// The transition it runs.
    pub name: Name,
    /// `<transition>.lua`, as the reference files are named.
    pub file: String,
    /// The script, its includes expanded.
    pub source: String,
    /// The SHA1 of `source`, lower-case hex: what `EVALSHA` takes.
    pub sha1: String,
}

/// Every transition's loadable script, in the protocol's order.
pub fn scripts() -> Vec<Script> {
    Name::ALL
        .iter()
        .map(|name| {
            let source = script_source(*name);
            let file = name.describe().script();
            let sha1 = redis::Script::new(&source).get_hash().to_owned();
            Script { name: *name, file, source, sha1 }
        })
        .collect()
}

/// Write every script, `SHA1SUMS` and `manifest.json` into `args.out`;
/// print `SHA1SUMS`.
pub fn run(args: Args) -> Result<(), Error> {
    let written = write(&args.out)?;
    print!("{written}");
    Ok(())
}

/// Write the scripts, `SHA1SUMS` and `manifest.json` into `dir`; the
/// `SHA1SUMS` text.
fn write(dir: &Path) -> Result<String, Error> {
    std::fs::create_dir_all(dir).map_err(|err| format!("{}: {err}", dir.display()))?;
    let put = |file: &str, text: &str| -> Result<(), Error> {
        let path = dir.join(file);
        std::fs::write(&path, text).map_err(|err| format!("{}: {err}", path.display()).into())
    };
    let scripts = scripts();
    let mut sums = String::new();
    for script in &scripts {
        put(&script.file, &script.source)?;
        sums.push_str(&format!("{}  {}\n", script.sha1, script.file));
    }
    put("SHA1SUMS", &sums)?;
    put("manifest.json", &manifest(&scripts))?;
    Ok(sums)
}

/// `manifest.json`: `{"protocol": "1.11", "scripts": [{"transition",
/// "file", "keys", "key_counts", "sha1"}, …]}`, the scripts in the
/// protocol's order: `keys` all of a transition's keys, `key_counts` every
/// count a call may send (ENQUEUE's `[2, 11]`).
fn manifest(scripts: &[Script]) -> String {
    let entries: Vec<serde_json::Value> = scripts
        .iter()
        .map(|script| {
            serde_json::json!({
                "transition": script.name.as_str(),
                "file": script.file,
                "keys": script.name.describe().keys.len(),
                "key_counts": script.name.describe().forms,
                "sha1": script.sha1,
            })
        })
        .collect();
    let manifest = serde_json::json!({ "protocol": echomq::PROTOCOL.to_string(), "scripts": entries });
    let mut text = serde_json::to_string_pretty(&manifest).expect("a JSON value always serializes");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference files' names, from `crates/echomq/lua/`.
    fn reference_files() -> Vec<String> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../echomq/lua");
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.ends_with(".lua"))
            .collect();
        names.sort();
        names
    }

    #[test]
    fn every_reference_script_is_written_expanded_under_its_own_name() {
        let mut files: Vec<String> = scripts().into_iter().map(|s| s.file).collect();
        files.sort();
        assert_eq!(files, reference_files());
        for script in scripts() {
            assert!(!script.source.contains("--@include"), "{}", script.file);
            assert_eq!(script.sha1.len(), 40, "{}", script.file);
        }
    }

    #[test]
    fn the_directory_holds_each_script_and_its_sha1() {
        let dir = std::env::temp_dir().join(format!("emq-scripts-{}", std::process::id()));
        let sums = write(&dir).unwrap();
        for (line, script) in sums.lines().zip(scripts()) {
            assert_eq!(line, format!("{}  {}", script.sha1, script.file));
            assert_eq!(std::fs::read_to_string(dir.join(&script.file)).unwrap(), script.source);
        }
        assert_eq!(std::fs::read_to_string(dir.join("SHA1SUMS")).unwrap(), sums);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unwritable_directory_is_a_clear_error() {
        let file = std::env::temp_dir().join(format!("emq-scripts-file-{}", std::process::id()));
        std::fs::write(&file, "in the way").unwrap();
        let err = write(&file.join("sub")).unwrap_err().to_string();
        assert!(err.contains(&file.display().to_string()), "{err}");
        std::fs::remove_file(&file).unwrap();
    }
}
