//! PROTOCOL.md cannot drift from the descriptions every layer reads: its
//! table of transitions (§7) is the descriptions written out, and each
//! transition's heading names the script and the command its description
//! names. On a difference this test prints the table as it should read;
//! `ECHOMQ_BLESS=1 cargo test -p echomq-core --test protocol_tables`
//! writes it in.

use echomq_core::{Description, Effect, Name};

const DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../PROTOCOL.md");
const BEGIN: &str = "<!-- The table of transitions: written from echomq-core's descriptions by crates/echomq-core/tests/protocol_tables.rs. -->";
const END: &str = "<!-- End of the table of transitions. -->";

/// One transition's row: what a speaker needs to build its call.
fn row(described: &Description) -> String {
    let keys: Vec<String> =
        described.keys.iter().map(|role| format!("`{}`", role.pattern().replace('|', "\\|"))).collect();
    let counts: Vec<String> = described.forms.iter().map(usize::to_string).collect();
    let or_none = |words: &[&str], quote: bool| match words {
        [] => "—".to_owned(),
        words if quote => words.iter().map(|w| format!("`{w}`")).collect::<Vec<_>>().join(" "),
        words => words.join(", "),
    };
    let effect = match described.effect {
        Effect::Reads => "reads",
        Effect::Writes => "writes",
        Effect::Grows => "grows",
        Effect::Frees => "only frees",
    };
    let flag = |set: bool, word: &str| if set { format!(", {word}") } else { String::new() };
    let properties = [
        flag(described.fenced, "fenced"),
        flag(described.hands_out_tokens, "hands out tokens"),
        flag(described.wakes_claims, "wakes claims"),
    ]
    .concat();
    format!(
        "| {} | `{}` | `{}` | {} | {} | {} | {} | {effect}{properties} |",
        described.name.to_ascii_uppercase(),
        described.script(),
        described.command,
        keys.join(" "),
        counts.join(" or "),
        or_none(described.args, false),
        or_none(described.options, true),
    )
}

fn table() -> String {
    let mut lines = vec![
        "| transition | script | native command | KEYS, in order (after `emq:{q}:`) | key counts | ARGV | options | effect |"
            .to_owned(),
        "|---|---|---|---|---|---|---|---|".to_owned(),
    ];
    lines.extend(Name::ALL.iter().map(|name| row(name.describe())));
    lines.join("\n")
}

#[test]
fn the_table_of_transitions_is_the_descriptions() {
    let doc = std::fs::read_to_string(DOC).expect("PROTOCOL.md");
    let (Some(begin), Some(end)) = (doc.find(BEGIN), doc.find(END)) else {
        panic!("PROTOCOL.md lacks the table's markers:\n{BEGIN}\n{END}");
    };
    let written = doc[begin + BEGIN.len()..end].trim();
    let want = table();
    if written == want {
        return;
    }
    if std::env::var_os("ECHOMQ_BLESS").is_some() {
        let updated = format!("{}{BEGIN}\n{want}\n{}", &doc[..begin], &doc[end..]);
        std::fs::write(DOC, updated).expect("write PROTOCOL.md");
        return;
    }
    panic!(
        "PROTOCOL.md's table of transitions differs from the descriptions; it should read:\n\n{want}\n\n\
         (ECHOMQ_BLESS=1 cargo test -p echomq-core --test protocol_tables writes it in)"
    );
}

#[test]
fn each_transition_has_its_section_under_its_script_and_command() {
    let doc = std::fs::read_to_string(DOC).expect("PROTOCOL.md");
    for name in Name::ALL {
        let described = name.describe();
        let title = format!(
            "{} — `{}`, `{}`",
            described.name.to_ascii_uppercase(),
            described.script(),
            described.command
        );
        // A section of its own, or a paragraph within its group's (CONFIG in §7.1).
        let opens = |line: &str| {
            line.strip_prefix("### ")
                .or_else(|| line.strip_prefix("**"))
                .is_some_and(|rest| rest.starts_with(&title))
        };
        assert!(doc.lines().any(opens), "PROTOCOL.md has no section or paragraph headed {title:?}");
    }
}
