//! Golden vectors: every transition's behaviour as data. A case is a
//! keyspace before (built by running earlier transitions on a [`Memory`]
//! store, or written directly), one call, and what the core answers and
//! leaves. [`files`] renders every case as the JSON files of
//! `protocol/vectors/`, one per transition, which every executor and every
//! speaker in another language replays (`protocol/vectors/README.md` says
//! how to read them).
//!
//! The cases and the builder they are written with (`Case`, `Call`, …) are
//! the crate's own. Other crates see the files: [`files`] and
//! [`case_tests`] write them (the `vectors` example), [`read`] replays them
//! (the core's `tests/vectors.rs`).
//!
//! Regenerate the files with `cargo run -p echomq-core --example vectors`;
//! a test fails when they are stale.
//!
//! # Layout
//! - [`json`]: the files' encoding: bytes, times relative to the call's now.
//! - [`read`]: reading the files back and replaying a case on a [`Memory`].
//! - `list`: the list of the core's per-case tests, written with the files.
//! - `refused`: the refusals sent raw, with their exact errors.
//! - `enqueue`, `lease`, `finish`, `upkeep`, `control`, `schedule`,
//!   `batch`: the cases, by transition group.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::memory::{Dump, Entry, ManualClock};
use crate::{Code, Memory, Name, Role, Store};

pub use list::{case_tests, CASE_TESTS};

mod batch;
mod control;
mod enqueue;
mod finish;
mod flow;
mod groups;
pub mod json;
mod lease;
mod list;
mod permits;
pub mod read;
mod refused;
mod schedule;
mod upkeep;

/// The server time every case's call assumes, ms since the Unix epoch. The
/// files express every time relative to it (see [`json`]).
pub(crate) const NOW: u64 = 1_750_000_000_000;

/// When setup steps run unless a case says otherwise: a minute before the call.
pub(crate) const EARLIER: i64 = -60_000;

/// The queue every case works on: its keys are `emq:{q}:<role>`.
pub(crate) const PREFIX: &str = "emq:{q}:";

/// Job ids the cases use, in mint order.
pub(crate) const A: &str = "JOB_00000000000000000000000001";
/// The second id.
pub(crate) const B: &str = "JOB_00000000000000000000000002";
/// The third id.
pub(crate) const C: &str = "JOB_00000000000000000000000003";
/// The fourth id.
pub(crate) const D: &str = "JOB_00000000000000000000000004";

/// One transition call: the transition, its KEYS and ARGV.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Call {
    /// The transition.
    pub(crate) name: Name,
    /// KEYS, in order.
    pub(crate) keys: Vec<String>,
    /// ARGV, in order.
    pub(crate) args: Vec<Vec<u8>>,
}

/// A key written directly before a case's call.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Put {
    /// A hash of these fields.
    Hash(Vec<(String, Vec<u8>)>),
    /// A sorted set of these members and scores.
    Zset(Vec<(String, f64)>),
    /// A string (a key of the wrong type, for `EMQTYPE`).
    String(Vec<u8>),
    /// A list of these items (a key of the wrong type).
    List(Vec<Vec<u8>>),
    /// A set of these members (a key of the wrong type).
    Set(Vec<Vec<u8>>),
    /// A stream of these entries, their ids minted at [`EARLIER`].
    Stream(Vec<Vec<(String, Vec<u8>)>>),
}

/// One step building a case's keyspace before its call.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Setup {
    /// Run a transition `at` ms relative to the call's now (always before it);
    /// it must not be refused.
    Run {
        /// When, relative to [`NOW`]: negative.
        at: i64,
        /// The call.
        call: Call,
    },
    /// Write `key` directly, replacing what it held.
    Put {
        /// The full key.
        key: String,
        /// Its content.
        value: Put,
    },
}

/// What a case says its call does, checked when it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Expect {
    /// A reply (not a refusal of the call).
    Reply,
    /// A refusal with this code, which changes nothing.
    Refused(Code),
    /// Whatever the core answers; a refusal still changes nothing.
    Any,
}

/// One golden case.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Case {
    /// What it shows, unique within its transition.
    pub(crate) name: String,
    /// The keyspace before, in steps.
    pub(crate) setup: Vec<Setup>,
    /// The call, at [`NOW`].
    pub(crate) call: Call,
    /// What the call must do.
    pub(crate) expect: Expect,
    /// For a refusal, the whole error reply it must be (code, a space, text).
    pub(crate) error: Option<String>,
}

/// One key's content, as the files write it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    /// A hash's fields, sorted.
    Hash(BTreeMap<Vec<u8>, Vec<u8>>),
    /// A sorted set's members with their scores, in (score, member) order.
    Zset(Vec<(Vec<u8>, f64)>),
    /// A stream's entries, in order.
    Stream(Vec<Entry>),
    /// A string.
    String(Vec<u8>),
    /// A list's items, in order.
    List(Vec<Vec<u8>>),
    /// A set's members, sorted.
    Set(Vec<Vec<u8>>),
}

/// Every key of a database with its content, sorted by key.
pub(crate) type Keyspace = BTreeMap<Vec<u8>, Value>;

/// What the core did with a case.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Outcome {
    /// The keyspace before the call.
    pub(crate) before: Keyspace,
    /// The reply, or the refusal.
    pub(crate) reply: crate::Answer,
    /// The keyspace after the call.
    pub(crate) after: Keyspace,
}

impl Case {
    /// A case of `call` on an empty keyspace that must answer.
    pub(crate) fn new(name: &str, call: Call) -> Case {
        Case { name: name.to_owned(), setup: Vec::new(), call, expect: Expect::Reply, error: None }
    }

    /// The same case with `steps` run first, at [`EARLIER`].
    pub(crate) fn after(mut self, steps: impl IntoIterator<Item = Call>) -> Case {
        self.setup.extend(steps.into_iter().map(|call| Setup::Run { at: EARLIER, call }));
        self
    }

    /// The same case with `call` run first, `at` ms relative to the call's now.
    pub(crate) fn at(mut self, at: i64, call: Call) -> Case {
        self.setup.push(Setup::Run { at, call });
        self
    }

    /// The same case with `key` (after the prefix) written directly first.
    pub(crate) fn put(mut self, key: &str, value: Put) -> Case {
        self.setup.push(Setup::Put { key: format!("{PREFIX}{key}"), value });
        self
    }

    /// The same case, which must be refused with `code`.
    pub(crate) fn refused(mut self, code: Code) -> Case {
        self.expect = Expect::Refused(code);
        self
    }

    /// The same case, which must be refused with exactly `error`: its
    /// code, a space, its text.
    pub(crate) fn refused_with(mut self, error: &str) -> Case {
        let code = error.split(' ').next().and_then(Code::parse);
        self.expect = Expect::Refused(code.unwrap_or_else(|| panic!("{error:?} names no code")));
        self.error = Some(error.to_owned());
        self
    }

    /// Build the keyspace, run the call at [`NOW`], and check it did what the
    /// case says: a refusal with its code, and nothing changed.
    pub(crate) fn run(&self) -> Result<Outcome, String> {
        let clock = Arc::new(ManualClock::new(0));
        let mut store = Memory::new(clock.clone());
        // The content of the keys the store keeps only as a type.
        let mut others = BTreeMap::new();
        for step in &self.setup {
            match step {
                Setup::Run { at, call } => {
                    if *at >= 0 {
                        return Err(format!("{}: a setup step at {at}, not before the call", self.name));
                    }
                    clock.set(NOW.saturating_add_signed(*at));
                    if let Err(refusal) = run(&mut store, call) {
                        return Err(format!("{}: setup {} refused: {refusal}", self.name, call.name));
                    }
                }
                Setup::Put { key, value } => put(&mut store, &clock, &mut others, key.as_bytes(), value),
            }
        }
        let before = keyspace(&store, &others)?;
        clock.set(NOW);
        let reply = run(&mut store, &self.call);
        let after = keyspace(&store, &others)?;
        self.check(&reply, before != after)?;
        Ok(Outcome { before, reply, after })
    }

    /// Whether `reply` is what the case expects, and a refusal changed
    /// nothing (`wrote`: the keyspace after differs from before).
    fn check(&self, reply: &crate::Answer, wrote: bool) -> Result<(), String> {
        match (self.expect, reply) {
            (Expect::Reply | Expect::Any, Ok(_)) => {}
            (Expect::Any, Err(refusal)) => {
                if wrote {
                    return Err(format!("{}: refused ({refusal}) but wrote", self.name));
                }
            }
            (Expect::Refused(code), Err(refusal)) if refusal.code == code => {
                if wrote {
                    return Err(format!("{}: refused ({refusal}) but wrote", self.name));
                }
                if let Some(error) = self.error.as_ref().filter(|error| **error != refusal.to_string()) {
                    return Err(format!("{}: refused with {refusal:?}, not {error:?}", self.name));
                }
            }
            (want, got) => return Err(format!("{}: expected {want:?}, got {got:?}", self.name)),
        }
        Ok(())
    }
}

/// Write `key` directly as `value` says, replacing what it held: on the
/// store, or in `others` for the types the store keeps only as a type. A
/// stream's entries get their ids at [`EARLIER`].
fn put(
    store: &mut Memory,
    clock: &ManualClock,
    others: &mut BTreeMap<Vec<u8>, Value>,
    key: &[u8],
    value: &Put,
) {
    store.del(key);
    others.remove(key);
    match value {
        Put::Hash(fields) => {
            let fields: Vec<(&[u8], &[u8])> =
                fields.iter().map(|(f, v)| (f.as_bytes(), v.as_slice())).collect();
            store.hset(key, &fields);
        }
        Put::Zset(members) => {
            for (member, score) in members {
                store.zadd(key, *score, member.as_bytes());
            }
        }
        Put::String(text) => {
            store.put_other(key, "string");
            others.insert(key.to_vec(), Value::String(text.clone()));
        }
        Put::List(items) => {
            store.put_other(key, "list");
            others.insert(key.to_vec(), Value::List(items.clone()));
        }
        Put::Set(members) => {
            let mut members = members.clone();
            members.sort();
            members.dedup();
            store.put_other(key, "set");
            others.insert(key.to_vec(), Value::Set(members));
        }
        Put::Stream(entries) => {
            clock.set(NOW.saturating_add_signed(EARLIER));
            for fields in entries {
                let fields: Vec<(&[u8], &[u8])> =
                    fields.iter().map(|(f, v)| (f.as_bytes(), v.as_slice())).collect();
                store.xadd(key, u64::MAX, &fields);
            }
        }
    }
}

fn run(store: &mut Memory, call: &Call) -> crate::Answer {
    let keys: Vec<&[u8]> = call.keys.iter().map(|key| key.as_bytes()).collect();
    let args: Vec<&[u8]> = call.args.iter().map(Vec::as_slice).collect();
    call.name.run(store, &keys, &args)
}

/// The store's keys as the files write them; `others` holds the content of
/// the strings, lists and sets, which the store keeps only as a type.
pub(crate) fn keyspace(store: &Memory, others: &BTreeMap<Vec<u8>, Value>) -> Result<Keyspace, String> {
    store
        .dump()
        .into_iter()
        .map(|(key, dump)| {
            let value = match dump {
                Dump::Hash(fields) => Value::Hash(fields),
                Dump::Zset(members) => Value::Zset(members),
                Dump::Stream(entries) => Value::Stream(entries),
                Dump::Other(kind @ ("string" | "list" | "set")) => match others.get(&key) {
                    Some(value) => value.clone(),
                    None => {
                        return Err(format!("{} is a {kind} no case wrote", String::from_utf8_lossy(&key)))
                    }
                },
                Dump::Other(other) => return Err(format!("{} is a {other}", String::from_utf8_lossy(&key))),
            };
            Ok((key, value))
        })
        .collect()
}

/// A key of the queue: `emq:{q}:<name>`.
pub(crate) fn key(name: &str) -> String {
    format!("{PREFIX}{name}")
}

/// The KEYS of `name`'s full form, from its description: the record of `id`
/// for [`Role::Job`], `set` for [`Role::Finished`], [`Role::Unfinished`] and [`Role::AnySet`].
pub(crate) fn keys_of(name: Name, id: &str, set: &str) -> Vec<String> {
    name.describe()
        .keys
        .iter()
        .map(|role| match role {
            Role::Job => key(&format!("job:{id}")),
            Role::Children => key(&format!("children:{id}")),
            Role::Finished | Role::Unfinished | Role::AnySet => key(set),
            other => key(other.fixed().unwrap_or_default()),
        })
        .collect()
}

/// A call of `name` with its full form's KEYS for `id` and these ARGV.
pub(crate) fn call(name: Name, id: &str, args: &[&str]) -> Call {
    call_on(name, id, "", args)
}

/// [`call`] for a transition that names a set (PURGE, TRIM, DRAIN).
pub(crate) fn call_on(name: Name, id: &str, set: &str, args: &[&str]) -> Call {
    Call { name, keys: keys_of(name, id, set), args: args.iter().map(|a| a.as_bytes().to_vec()).collect() }
}

impl Call {
    /// The same call with these KEYS instead.
    pub(crate) fn with_keys(mut self, keys: Vec<String>) -> Call {
        self.keys = keys;
        self
    }

    /// The same call with an argument of raw bytes added.
    pub(crate) fn arg(mut self, arg: &[u8]) -> Call {
        self.args.push(arg.to_vec());
        self
    }
}

/// A time `ms` relative to the call's now, as an argument.
pub(crate) fn at(ms: i64) -> String {
    NOW.saturating_add_signed(ms).to_string()
}

/// ENQUEUE of `id` with `payload` and options, full form.
pub(crate) fn enqueue(id: &str, payload: &str, options: &[&str]) -> Call {
    let mut args = vec![id, payload];
    args.extend_from_slice(options);
    call(Name::Enqueue, id, &args)
}

/// CLAIM of up to `count` jobs under a minute's lease.
pub(crate) fn claim(count: u32) -> Call {
    call(Name::Claim, "", &["60000", "COUNT", &count.to_string()])
}

/// FAIL of `id` by its holder `token`, to be tried again after a second.
pub(crate) fn fail(id: &str, token: &str, max_attempts: &str) -> Call {
    call(Name::Fail, id, &[id, token, max_attempts, "1000", "boom"])
}

/// RELEASE of `id` by its holder `token`, in its seven-key form (no REFUND).
pub(crate) fn release(id: &str, token: &str) -> Call {
    let mut call = call(Name::Release, id, &[id, token]);
    call.keys.truncate(7);
    call
}

/// RELEASE of `id` by its holder `token` with `REFUND max_attempts`: all eight keys.
pub(crate) fn refund(id: &str, token: &str, max_attempts: &str) -> Call {
    call(Name::Release, id, &[id, token, "REFUND", max_attempts])
}

/// ACK of `id` by its holder `token`.
pub(crate) fn ack(id: &str, token: &str) -> Call {
    call(Name::Ack, id, &[id, token])
}

/// CONFIG with these options.
pub(crate) fn config(options: &[&str]) -> Call {
    call(Name::Config, "", options)
}

/// A hash of these fields, for [`Case::put`].
pub(crate) fn hash(fields: &[(&str, &str)]) -> Put {
    Put::Hash(fields.iter().map(|(f, v)| (f.to_string(), v.as_bytes().to_vec())).collect())
}

/// A sorted set of these members, for [`Case::put`].
pub(crate) fn zset(members: &[(&str, f64)]) -> Put {
    Put::Zset(members.iter().map(|(m, s)| (m.to_string(), *s)).collect())
}

/// A string, for [`Case::put`]: a key of the wrong type.
pub(crate) fn string() -> Put {
    Put::String(b"x".to_vec())
}

/// The cases every transition shares: its KEYS wrong (too few, one too
/// many, another queue's, another name), and each of its keys holding a string.
fn shared(call: &Call, setup: &Case) -> Vec<Case> {
    let mut cases = Vec::new();
    let with = |name: &str, keys: Vec<String>| {
        let mut case = setup.clone();
        case.name = name.to_owned();
        case.call = call.clone().with_keys(keys);
        case.refused(Code::Arg)
    };
    if call.keys.len() > 1 {
        cases.push(with("one key only", call.keys[..1].to_vec()));
    }
    let mut more = call.keys.clone();
    more.push(key("stray"));
    cases.push(with("one key too many", more));
    let last = call.keys.len() - 1;
    // A call of one key names its queue by that key: another queue's is fine.
    if last > 0 {
        let mut other = call.keys.clone();
        other[last] = other[last].replace("{q}", "{other}");
        cases.push(with("the last key another queue's", other));
    }
    if last > 0 {
        let mut swapped = call.keys.clone();
        swapped.swap(last - 1, last);
        cases.push(with("the last two keys swapped", swapped));
    }
    for (n, key) in call.keys.iter().enumerate() {
        let mut case = setup.clone();
        case.name = format!("KEYS[{}] holds a string", n + 1);
        case.call = call.clone();
        case.setup.push(Setup::Put { key: key.clone(), value: string() });
        case.expect = Expect::Any;
        cases.push(case);
    }
    cases
}

/// Every case, by transition, in [`Name::ALL`]'s order.
pub(crate) fn cases() -> Vec<(Name, Vec<Case>)> {
    let mut all: Vec<(Name, Vec<Case>)> = Name::ALL.iter().map(|name| (*name, Vec::new())).collect();
    let groups = [
        enqueue::cases(),
        lease::cases(),
        finish::cases(),
        upkeep::cases(),
        control::cases(),
        schedule::cases(),
        batch::cases(),
        flow::cases(),
        groups::cases(),
        permits::cases(),
        refused::cases(),
        refused::births(),
    ];
    for case in groups.into_iter().flatten() {
        let at = Name::ALL.iter().position(|name| *name == case.call.name).expect("a transition");
        all[at].1.push(case);
    }
    all
}

/// The cases that every transition gets from [`shared`]: called by each
/// group with its transitions' happy calls and their setups.
fn with_shared(happy: Vec<Case>) -> Vec<Case> {
    let mut out = Vec::new();
    let mut seen = Vec::new();
    for case in happy {
        if !seen.contains(&case.call.name) && case.expect == Expect::Reply {
            seen.push(case.call.name);
            out.extend(shared(&case.call, &case));
        }
        out.push(case);
    }
    out
}

/// Every file of `protocol/vectors/` but the README: its name and content.
///
/// # Errors
///
/// What is wrong with the cases, as text: two cases of a transition share
/// a name, a transition has no case, or a case does not do what it says: a
/// setup step at or after the call, or refused; a refusal that wrote; a
/// refusal with another code or text than the case's, or none.
pub fn files() -> Result<Vec<(String, String)>, String> {
    cases()
        .into_iter()
        .map(|(name, cases)| {
            let mut names: Vec<&str> = cases.iter().map(|case| case.name.as_str()).collect();
            names.sort_unstable();
            if let Some(twice) = names.windows(2).find(|pair| pair[0] == pair[1]) {
                return Err(format!("{name}: two cases named {:?}", twice[0]));
            }
            if cases.is_empty() {
                return Err(format!("{name} has no case"));
            }
            let outcomes = cases.iter().map(Case::run).collect::<Result<Vec<_>, _>>()?;
            Ok((format!("{name}.json"), json::file(name, &cases, &outcomes)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed files are what the cases give now.
    #[test]
    fn the_committed_vectors_are_up_to_date() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../protocol/vectors");
        let regenerate = "regenerate them: cargo run -p echomq-core --example vectors";
        let files = files().unwrap();
        for (name, content) in &files {
            let committed = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
            assert!(committed == *content, "protocol/vectors/{name} is stale: {regenerate}");
        }
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".json"))
            .collect();
        on_disk.sort();
        let mut made: Vec<String> = files.iter().map(|(name, _)| name.clone()).collect();
        made.sort();
        assert_eq!(on_disk, made, "protocol/vectors/ holds other files: {regenerate}");
        let tests = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(CASE_TESTS);
        let committed = std::fs::read_to_string(tests).unwrap_or_default();
        assert!(committed == case_tests().unwrap(), "{CASE_TESTS} is stale: {regenerate}");
    }

    #[test]
    fn every_transition_has_cases_and_there_are_enough() {
        let all = cases();
        for (name, cases) in &all {
            assert!(cases.len() >= 3, "{name} has {} cases", cases.len());
        }
        let total: usize = all.iter().map(|(_, cases)| cases.len()).sum();
        assert!(total >= 150, "{total} cases");
    }

    /// A case that says it is refused and is not fails, with its name.
    #[test]
    fn a_case_that_does_not_do_what_it_says_fails() {
        let wrong = Case::new("wrong", enqueue(A, "p", &[])).refused(Code::Arg);
        assert!(wrong.run().unwrap_err().contains("expected Refused(Arg)"));
        let late = Case::new("late", enqueue(A, "p", &[])).at(0, enqueue(B, "p", &[]));
        assert!(late.run().unwrap_err().contains("not before the call"));
        let text =
            Case::new("text", call(Name::Enqueue, A, &["XYZ", "p"])).refused_with("EMQKIND other words");
        assert!(text.run().unwrap_err().contains("not \"EMQKIND other words\""));
    }
}
