//! Embeds every file under `lua/` by its stem (`claim`,
//! `includes/common`), so the Lua executor finds a transition's script from
//! its description (`<name>.lua`) and no list of scripts is kept by hand.
//! A described transition without its script fails the build, not a test.
//!
//! Each script's KEYS prologue is written from its description: the block
//! between `--@keys` and `--@keys end`, after its includes, binds each key
//! to a local named by its role (`local active_key = KEYS[2]`) and gives the
//! names and counts its key check takes. The build fails when a checked-in
//! block is not what the description gives; `ECHOMQ_BLESS=1 cargo build -p
//! echomq` rewrites every block (or writes one where a script has none).

use std::fmt::Write;
use std::path::Path;

use echomq_core::{Description, Name, Role};

/// The first line of a script's prologue begins so; the last is [`END`].
const BEGIN: &str = "--@keys ";
const END: &str = "--@keys end";
/// The longest line of `key_names` before it wraps.
const WIDTH: usize = 110;
/// The command that rewrites the prologues.
const BLESS: &str = "ECHOMQ_BLESS=1 cargo build -p echomq";

fn main() {
    let root = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let lua = Path::new(&root).join("lua");
    println!("cargo:rerun-if-changed=lua");
    println!("cargo:rerun-if-env-changed=ECHOMQ_BLESS");
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
    let missing: Vec<String> = Name::ALL
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
    let bless = std::env::var_os("ECHOMQ_BLESS").is_some();
    let stale: Vec<String> =
        Name::ALL.iter().filter_map(|name| check_prologue(&lua, name.describe(), bless)).collect();
    if !stale.is_empty() {
        panic!(
            "{}\n\n{BLESS} rewrites every script's KEYS prologue from its description.",
            stale.join("\n\n")
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

/// The local a key of `role` is bound to: its fixed name (`pending_key`),
/// `job_key` for the record, and `set_key` for the state set a call names
/// (PURGE's, DRAIN's, REMOVE's and TRIM's first key), as the core's `keys!`
/// names it.
fn local(role: Role) -> String {
    let name = match role {
        Role::Job => "job",
        Role::Children => "children",
        Role::Finished | Role::Unfinished | Role::AnySet => "set",
        fixed => fixed.fixed().expect("every other role has a fixed name"),
    };
    format!("{name}_key")
}

/// The name `queue_prefix` (includes/common) checks a key of `role` against:
/// its fixed name; `job` for the record of the call's id; and for a state
/// set, its pattern (`done|dead|cancelled`), which the script replaces with
/// the set the call named before the check.
fn checked_name(role: Role) -> &'static str {
    match role {
        Role::Job => "job",
        Role::Children => "children",
        other => other.fixed().unwrap_or(other.pattern()),
    }
}

/// A transition's KEYS prologue, from its description: each key bound to
/// its local (nil when a call may leave it off and did), then `key_names`
/// and `key_forms`, what the script's key check takes.
fn prologue(described: &Description) -> String {
    let upper = described.name.to_ascii_uppercase();
    let mut out = format!("{BEGIN}{upper}'s KEYS by role (generated from its description: {BLESS})\n");
    let fewest = described.forms[0];
    let bindings: Vec<(String, Option<String>)> = described
        .keys
        .iter()
        .enumerate()
        .map(|(at, role)| {
            let n = at + 1;
            let note = if n > fewest {
                let sending: Vec<String> =
                    described.forms.iter().filter(|form| **form >= n).map(usize::to_string).collect();
                Some(format!("nil unless the call sends {} keys", sending.join(" or ")))
            } else if role.fixed().is_none() && !matches!(role, Role::Job | Role::Children) {
                Some(format!("{}: the one the call names", role.pattern()))
            } else {
                None
            };
            (format!("local {} = KEYS[{n}]", local(*role)), note)
        })
        .collect();
    let width = bindings.iter().filter(|(_, note)| note.is_some()).map(|(line, _)| line.len()).max();
    for (line, note) in bindings {
        match note {
            Some(note) => writeln!(out, "{line:<0$} -- {note}", width.unwrap_or(0)),
            None => writeln!(out, "{line}"),
        }
        .expect("writing to a String");
    }
    let mut names = String::from("local key_names = {");
    let mut row = names.len();
    for (at, role) in described.keys.iter().enumerate() {
        let name = format!("'{}'", checked_name(*role));
        let sep = if at == 0 { "" } else { "," };
        if row + sep.len() + 1 + name.len() + 1 > WIDTH {
            names.push_str(sep);
            names.push_str("\n  ");
            row = 2;
        } else if at > 0 {
            names.push_str(", ");
            row += 2;
        }
        names.push_str(&name);
        row += name.len();
    }
    let forms: Vec<String> = described.forms.iter().map(usize::to_string).collect();
    writeln!(out, "{names}}}\nlocal key_forms = {{{}}}", forms.join(", ")).expect("writing to a String");
    out.push_str(END);
    out.push('\n');
    out
}

/// Check `described`'s script's prologue against its description: `None`
/// when it matches (or, with `bless`, once rewritten), else what is wrong.
fn check_prologue(lua: &Path, described: &Description, bless: bool) -> Option<String> {
    let path = lua.join(described.script());
    let source = std::fs::read_to_string(&path).expect("the script exists: checked above");
    let want = prologue(described);
    let lines: Vec<&str> = source.split_inclusive('\n').collect();
    let block = lines.iter().position(|line| line.starts_with(BEGIN)).and_then(|begin| {
        let length = lines[begin..].iter().position(|line| line.trim_end() == END)?;
        Some(begin..begin + length + 1)
    });
    let (found, spliced) = match block {
        Some(block) => {
            let found = lines[block.clone()].concat();
            (Some(found), [lines[..block.start].concat(), want.clone(), lines[block.end..].concat()].concat())
        }
        None => {
            // None yet: after the last include, a blank line before it.
            let after = lines.iter().rposition(|line| line.starts_with("--@include ")).map_or(0, |at| at + 1);
            (None, [lines[..after].concat(), format!("\n{want}"), lines[after..].concat()].concat())
        }
    };
    if found.as_deref() == Some(want.as_str()) {
        return None;
    }
    if bless {
        std::fs::write(&path, spliced).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
        println!("cargo:warning=rewrote the KEYS prologue of lua/{}", described.script());
        return None;
    }
    let what = if found.is_some() { "is not what its description gives" } else { "is missing" };
    Some(format!(
        "lua/{}: its KEYS prologue (`{BEGIN}…` to `{END}`, after its includes) {what}; it should read:\n{want}",
        described.script()
    ))
}
