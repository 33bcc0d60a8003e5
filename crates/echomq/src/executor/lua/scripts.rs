//! The scripts the Lua executor runs: every file under `lua/`, embedded by
//! `build.rs`; each transition's script found from its description
//! (`<name>.lua`), its `--@include` lines expanded once per process
//! and `--@include limits` filled in from [`echomq_core::limits`].

use std::sync::LazyLock;

use echomq_core::Name;
use redis::Script;

// Every file under lua/, by stem (`claim`, `includes/common`): `FILES`.
include!(concat!(env!("OUT_DIR"), "/lua_files.rs"));

/// The scripts, expanded once per process, in [`Name::ALL`]'s order.
static SCRIPTS: LazyLock<Vec<Script>> =
    LazyLock::new(|| Name::ALL.iter().map(|name| Script::new(&script_source(*name))).collect());

/// The script a transition runs, `lua/<name>.lua` as its description
/// names it, its includes expanded and the limits filled in: what the
/// server loads.
#[must_use]
pub fn script_source(name: Name) -> String {
    expand(file(name.as_str()).unwrap_or_else(|| panic!("lua/{} is missing", name.describe().script())))
}

fn file(stem: &str) -> Option<&'static str> {
    FILES.iter().find(|(name, _)| *name == stem).map(|(_, text)| *text)
}

/// The protocol's limits as Lua, from [`echomq_core::limits`]: the scripts
/// name them and never spell a number of their own. A size is one local,
/// `MAX_PAYLOAD`; a range two, `LEASE_MS_MIN` and `LEASE_MS_MAX` (numbers: a
/// table would be built on every call). Each is `(name, its locals)`.
fn limits() -> Vec<(&'static str, String)> {
    let version = vec![
        // The protocol's version (not a limit): what a queue's `protocol` is checked against.
        size("PROTOCOL_MAJOR", echomq_core::PROTOCOL.major as usize),
        size("PROTOCOL_MINOR", echomq_core::PROTOCOL.minor as usize),
        size("MODULE_MINOR", echomq_core::MODULE_SINCE.minor as usize),
    ];
    [sizes(), ranges(), group_limits(), version].concat()
}

/// The sizes and counts of [`limits`].
fn sizes() -> Vec<(&'static str, String)> {
    use echomq_core::limits::*;
    vec![
        size("MAX_PAYLOAD", MAX_PAYLOAD),
        size("MAX_ERROR_TEXT", MAX_ERROR_TEXT),
        size("MAX_PROGRESS", MAX_PROGRESS),
        size("MAX_RESULT", MAX_RESULT),
        size("MAX_HEADERS", MAX_HEADERS),
        size("MAX_BATCH_ID", MAX_BATCH_ID),
        size("SETTLE_BATCHES", SETTLE_BATCHES),
        unsigned("BATCH_SIZE", &BATCH_SIZE),
        size("MAX_EVENT_ERROR", MAX_EVENT_ERROR),
        size("EVENTS_KEEP", EVENTS_KEEP as usize),
        size("COUNT_MINUTES", COUNT_MINUTES as usize),
        size("COUNT_HOURS", COUNT_HOURS as usize),
        size("MINUTE_MS", MINUTE_MS as usize),
        size("HOUR_MS", HOUR_MS as usize),
        unsigned("EVENTS", &EVENTS),
        size("MAX_SCHEDULE_NAME", MAX_SCHEDULE_NAME),
        size("MAX_DEFINITION", MAX_DEFINITION),
        size("MAX_DIGITS", MAX_DIGITS),
        size("MAX_UNIQUE_KEY", MAX_UNIQUE_KEY),
        size("KEEP_DONE_MS", KEEP_DONE_MS as usize),
        size("KEEP_DONE_COUNT", KEEP_DONE_COUNT as usize),
        size("KEEP_DEAD_MS", KEEP_DEAD_MS as usize),
        size("KEEP_DEAD_COUNT", KEEP_DEAD_COUNT as usize),
        size("KEEP_CANCELLED_MS", KEEP_CANCELLED_MS as usize),
        size("KEEP_CANCELLED_COUNT", KEEP_CANCELLED_COUNT as usize),
        unsigned("KEEP_MS", &KEEP_MS),
        unsigned("KEEP_COUNT", &KEEP_COUNT),
        size("UNIQUE_SWEEP", UNIQUE_SWEEP),
        unsigned("UNIQUE_MS", &UNIQUE_MS),
    ]
}

/// The ranges of [`limits`].
fn ranges() -> Vec<(&'static str, String)> {
    use echomq_core::limits::*;
    vec![
        range("PRIORITY", *PRIORITY.start(), *PRIORITY.end()),
        unsigned("LEASE_MS", &LEASE_MS),
        unsigned("TIMEOUT_MS", &TIMEOUT_MS),
        unsigned("DELAY_MS", &DELAY_MS),
        unsigned("AT_MS", &AT_MS),
        unsigned("AGE_MS", &AGE_MS),
        unsigned("TOKEN", &TOKEN),
        unsigned("INCARNATION", &INCARNATION),
        unsigned("MAX_ATTEMPTS", &MAX_ATTEMPTS),
        unsigned("CLAIM_COUNT", &CLAIM_COUNT),
        unsigned("ACKS", &ACKS),
        unsigned("ENQUEUES", &ENQUEUES),
        unsigned("FLOW_CHILDREN", &FLOW_CHILDREN),
        unsigned("SWEEP_LIMIT", &SWEEP_LIMIT),
        unsigned("CONCURRENCY", &CONCURRENCY),
        unsigned("SWITCH", &SWITCH),
        unsigned("RATE", &RATE),
        unsigned("RATE_PERIOD_MS", &RATE_PERIOD_MS),
        unsigned("EXACT_PERIOD_MS", &EXACT_PERIOD_MS),
        unsigned("EXACT_CONCURRENCY", &EXACT_CONCURRENCY),
        unsigned("RENEWS", &RENEWS),
        size("RUNNING_HOLD_MS", RUNNING_HOLD_MS as usize),
        unsigned("FLAG", &FLAG),
    ]
}

/// The fair groups' limits (protocol 1.7) of [`limits`].
fn group_limits() -> Vec<(&'static str, String)> {
    use echomq_core::limits::*;
    vec![
        size("MAX_GROUP", MAX_GROUP),
        unsigned("GROUP_WEIGHT", &GROUP_WEIGHT),
        size("GROUPED_SCORE", GROUPED_SCORE as usize),
        size("TAG_UNIT", TAG_UNIT as usize),
        size("GROUP_WAKE", GROUP_WAKE),
    ]
}

/// A size's local: `local MAX_PAYLOAD = 1048576`.
fn size(name: &'static str, n: usize) -> (&'static str, String) {
    (name, format!("local {name} = {n}\n"))
}

/// A range's two locals: `local LEASE_MS_MIN, LEASE_MS_MAX = 1, 2147483647`.
fn range(name: &'static str, lo: i64, hi: i64) -> (&'static str, String) {
    (name, format!("local {name}_MIN, {name}_MAX = {lo}, {hi}\n"))
}

/// [`range`] of a range of the unsigned.
fn unsigned(name: &'static str, range: &std::ops::RangeInclusive<u64>) -> (&'static str, String) {
    (name, format!("local {name}_MIN, {name}_MAX = {}, {}\n", range.start(), range.end()))
}

/// Where `--@include limits` stood, until the script is whole.
const LIMITS_HERE: &str = "--@limits\n";

/// Replace each `--@include <name>` line with `lua/includes/<name>.lua`,
/// itself expanded, each include once; `--@include limits` becomes a local
/// for each limit the script names (a script runs its locals on every call,
/// so it defines only those it reads).
fn expand(source: &str) -> String {
    let mut out = String::with_capacity(source.len() + 8192);
    expand_into(source, &mut out, &mut Vec::new());
    let Some(at) = out.find(LIMITS_HERE) else { return out };
    let rest = format!("{}{}", &out[..at], &out[at + LIMITS_HERE.len()..]);
    // A limit is named as a word of its own, or with _MIN or _MAX after it.
    let named = |name: &str| {
        rest.match_indices(name).any(|(i, _)| {
            let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
            let after = &rest[i + name.len()..];
            let after = after.strip_prefix("_MIN").or_else(|| after.strip_prefix("_MAX")).unwrap_or(after);
            !word(rest[..i].chars().next_back()) && !word(after.chars().next())
        })
    };
    let locals: String =
        limits().into_iter().filter(|(name, _)| named(name)).map(|(_, locals)| locals).collect();
    out.replacen(LIMITS_HERE, &locals, 1)
}

fn expand_into(source: &str, out: &mut String, included: &mut Vec<String>) {
    for line in source.lines() {
        let Some(wanted) = line.strip_prefix("--@include ").map(str::trim) else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        if included.iter().any(|done| done == wanted) {
            continue;
        }
        included.push(wanted.to_owned());
        if wanted == "limits" {
            out.push_str(LIMITS_HERE);
        } else {
            let text = file(&format!("includes/{wanted}"))
                .unwrap_or_else(|| panic!("no Lua include named {wanted:?}"));
            expand_into(text, out, included);
        }
    }
}

/// The loaded script of transition `name`.
pub(super) fn script(name: Name) -> &'static Script {
    &SCRIPTS[name as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PROTOCOL.md §11.1's table of the scripts' limits is what the scripts
    /// are given, name, value and order: a speaker that builds its scripts
    /// from it (the Python package) must get the same bytes, so the same SHA1s.
    #[test]
    fn the_protocol_s_table_of_limits_is_what_the_scripts_get() {
        let protocol = include_str!("../../../../../PROTOCOL.md");
        let start = protocol.find("The table, in order:").expect("§11.1's table");
        let end = start + protocol[start..].find("\n\n").expect("the paragraph's end");
        let words: Vec<&str> = protocol[start..end].split_whitespace().collect();
        let mut table = Vec::new();
        for pair in words.windows(2) {
            let name = pair[0].trim_matches(|c| c == '`' || c == ',');
            if pair[0].starts_with('`') && name.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
                let value = pair[1].trim_end_matches([',', ')', '.']);
                table.push(match value.split_once("..=") {
                    Some((lo, hi)) => format!("local {name}_MIN, {name}_MAX = {lo}, {hi}\n"),
                    None => format!("local {name} = {value}\n"),
                });
            }
        }
        let given: Vec<String> = limits().into_iter().map(|(_, locals)| locals).collect();
        assert_eq!(table, given, "PROTOCOL.md §11.1's table (\"The table, in order\") against limits()");
    }

    /// A limit added to the core but not here would leave its scripts
    /// naming a local that does not exist, or spelling the number again.
    #[test]
    fn every_limit_of_the_core_is_given_to_the_scripts() {
        let core = include_str!("../../../../echomq-core/src/limits.rs");
        let given: Vec<&str> = limits().iter().map(|(name, _)| *name).collect();
        let declared: Vec<&str> =
            core.lines().filter_map(|line| line.strip_prefix("pub const ")?.split(':').next()).collect();
        assert!(declared.len() > 30, "limits.rs read: {declared:?}");
        for name in declared {
            assert!(given.contains(&name), "{name} is in echomq_core::limits but not given to the scripts");
        }
    }

    /// The scripts' files, without the includes.
    fn scripts() -> impl Iterator<Item = (&'static str, &'static str)> {
        FILES.iter().copied().filter(|(stem, _)| !stem.starts_with("includes/"))
    }

    /// `(n, text)` for each `<what>[n]` line of a script's header.
    fn header(source: &str, what: &str) -> Vec<(usize, String)> {
        let header = source.split("]]").next().unwrap_or_default();
        header
            .lines()
            .filter_map(|line| {
                let rest = line.strip_prefix(what)?.strip_prefix('[')?;
                let (n, text) = rest.split_once(']')?;
                Some((n.parse().ok()?, text.trim().to_owned()))
            })
            .collect()
    }

    /// `(local, key)` for each key line of a script's header, in order:
    /// `active_key   emq:{q}:active   (zset) …`.
    fn header_keys(source: &str) -> Vec<(&str, &str)> {
        let header = source.split("]]").next().unwrap_or_default();
        header
            .lines()
            .filter_map(|line| {
                let mut words = line.split_whitespace();
                let (local, key) = (words.next()?, words.next()?);
                (local.ends_with("_key") && key.starts_with("emq:{q}:")).then_some((local, key))
            })
            .collect()
    }

    /// A script's KEYS prologue, its first and last lines included, as
    /// `build.rs` writes it: `(before, block, after)`.
    fn prologue(source: &str) -> Option<(&str, &str, &str)> {
        let begin = source.find("\n--@keys ")? + 1;
        let end = begin + source[begin..].find("\n--@keys end\n")? + "\n--@keys end\n".len();
        Some((&source[..begin], &source[begin..end], &source[end..]))
    }

    /// The locals a script's prologue binds, in KEYS order
    /// (`local active_key = KEYS[2]`).
    fn bound(block: &str) -> Vec<&str> {
        let bound: Vec<(&str, &str)> =
            block.lines().filter_map(|line| line.strip_prefix("local ")?.split_once(" = KEYS[")).collect();
        for (at, (local, rest)) in bound.iter().enumerate() {
            assert!(rest.starts_with(&format!("{}]", at + 1)), "{local} is not bound to KEYS[{}]", at + 1);
        }
        bound.into_iter().map(|(local, _)| local).collect()
    }

    /// Where `text` reads KEYS by position: `KEYS[` (or `KEYS [`) that does
    /// not open a refusal's text (`'KEYS[2] must be …'`, the protocol's
    /// words, naming a position); the line of each.
    fn positional_reads(text: &str) -> Vec<&str> {
        let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        text.match_indices("KEYS")
            .filter(|(at, _)| {
                let before = text[..*at].chars().next_back();
                let after = text[at + "KEYS".len()..].trim_start_matches([' ', '\t']);
                !word(before) && !word(after.chars().next()) && after.starts_with('[') && before != Some('\'')
            })
            .map(|(at, _)| {
                let start = text[..at].rfind('\n').map_or(0, |n| n + 1);
                text[start..].lines().next().unwrap_or_default()
            })
            .collect()
    }

    #[test]
    fn every_transition_has_its_script_and_every_script_a_transition() {
        for name in Name::ALL {
            let source = script_source(*name);
            assert!(!source.contains("--@include"), "{name}: an include left unexpanded");
        }
        assert_eq!(scripts().count(), Name::ALL.len());
        assert_eq!(SCRIPTS.len(), Name::ALL.len());
    }

    /// A script is named by its transition alone (`ack.lua`), never by its
    /// key count (`ack-7.lua`): a key added to a transition renames nothing.
    #[test]
    fn every_script_is_named_by_its_transition() {
        for (stem, _) in scripts() {
            assert!(
                Name::ALL.iter().any(|name| name.as_str() == stem),
                "lua/{stem}.lua is no transition's name: a script is `<transition>.lua`, as \
                 Description::script names it"
            );
        }
        for name in Name::ALL {
            assert_eq!(name.describe().script(), format!("{name}.lua"));
        }
    }

    /// Scripts and includes read their keys by role, from the locals each
    /// script's prologue binds: outside the prologues no Lua indexes KEYS
    /// (the key check, `queue_prefix`, takes the call's KEYS whole, and
    /// only a refusal's text names a position).
    #[test]
    fn keys_are_read_by_position_only_in_the_prologues() {
        assert_eq!(
            positional_reads("local a = KEYS[1]\nx(KEYS [i])\n'KEYS[' .. i\n#KEYS\nKEYSLOT"),
            ["local a = KEYS[1]", "x(KEYS [i])"]
        );
        let mut wrong = Vec::new();
        for (stem, source) in FILES {
            let outside = match prologue(source) {
                Some((before, block, after)) => {
                    assert!(!stem.starts_with("includes/"), "lua/{stem}.lua: an include has no prologue");
                    assert_eq!(prologue(after), None, "lua/{stem}.lua has two prologues");
                    assert!(!bound(block).is_empty(), "lua/{stem}.lua: its prologue binds no key");
                    format!("{before}{after}")
                }
                None => {
                    assert!(stem.starts_with("includes/"), "lua/{stem}.lua has no KEYS prologue");
                    (*source).to_owned()
                }
            };
            wrong
                .extend(positional_reads(&outside).into_iter().map(|line| format!("lua/{stem}.lua: {line}")));
        }
        assert!(wrong.is_empty(), "KEYS read by position outside a prologue:\n{}", wrong.join("\n"));
    }

    /// Each header's keys are the description's roles, in order, each
    /// under the local its prologue binds it to; its ARGV the description's
    /// arguments by name; its options the description's.
    #[test]
    fn every_script_header_matches_its_description() {
        for name in Name::ALL {
            let described = name.describe();
            let source = file(name.as_str()).unwrap();
            let (_, block, _) = prologue(source).unwrap_or_else(|| panic!("{name}: no KEYS prologue"));
            let bound = bound(block);
            assert_eq!(bound.len(), described.keys.len(), "{name}: the keys its prologue binds");
            let keys = header_keys(source);
            assert_eq!(keys.len(), described.keys.len(), "{name}: the keys in the header");
            for (at, ((local, key), role)) in keys.iter().zip(described.keys).enumerate() {
                assert_eq!(
                    *key,
                    format!("emq:{{q}}:{}", role.pattern()),
                    "{name}: the header's key {}",
                    at + 1
                );
                assert_eq!(*local, bound[at], "{name}: the header's key {} is not its prologue's", at + 1);
            }
            let args: Vec<(usize, String)> = header(source, "ARGV");
            let positional: Vec<&(usize, String)> =
                args.iter().filter(|(_, text)| !text.starts_with("options")).collect();
            assert_eq!(positional.len(), described.args.len(), "{name}: ARGV in the header");
            for ((n, text), arg) in positional.into_iter().zip(described.args) {
                let word: String =
                    text.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                assert_eq!(word, *arg, "{name}: ARGV[{n}]");
            }
            let header_text = source.split("]]").next().unwrap_or_default();
            let options: Vec<&str> = header_text
                .lines()
                .filter_map(|line| line.strip_prefix("         ")?.split_whitespace().next())
                .filter(|word| word.len() > 1 && word.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
                .collect();
            assert_eq!(options, described.options, "{name}: options in the header");
        }
    }

    /// The scripts spell no limit of their own: every number over 1000 in
    /// their code comes from `echomq_core::limits`, through `--@include limits`.
    #[test]
    fn scripts_take_their_limits_from_the_core() {
        for (stem, source) in FILES {
            let code = source.split_once("]]").map_or(*source, |(_, code)| code);
            for line in code.lines().filter(|line| !line.trim_start().starts_with("--")) {
                let mut numbers = line.split(|c: char| !c.is_ascii_digit());
                let limit = numbers.find(|word| word.parse::<u64>().is_ok_and(|n| n > 1000));
                assert_eq!(limit, None, "lua/{stem}.lua spells a limit of its own: {line}");
            }
        }
        let claim = script_source(Name::Claim);
        assert!(claim.contains("local LEASE_MS_MIN, LEASE_MS_MAX = 1, 2147483647\n"), "{claim}");
        assert!(!claim.contains("local MAX_UNIQUE_KEY"), "a script defines only the limits it names");
        let enqueue = script_source(Name::Enqueue);
        assert!(
            enqueue.contains("local PRIORITY_MIN, PRIORITY_MAX = -2147483648, 2147483647\n"),
            "{enqueue}"
        );
    }

    /// The codes the scripts answer with are exactly the codes of the table.
    #[test]
    fn scripts_and_the_code_table_agree() {
        use std::collections::BTreeSet;
        let mut in_scripts = BTreeSet::new();
        for (_, source) in FILES {
            for (at, _) in source.match_indices("EMQ") {
                let word: String = source[at..].chars().take_while(|c| c.is_ascii_uppercase()).collect();
                if word.len() > 3 {
                    in_scripts.insert(word);
                }
            }
        }
        let in_table: BTreeSet<String> =
            echomq_core::Code::ALL.iter().map(|code| code.as_str().to_owned()).collect();
        assert_eq!(in_scripts, in_table);
    }
}
