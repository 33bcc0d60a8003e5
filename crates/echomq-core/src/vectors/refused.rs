//! The refusals sent raw, as any speaker could send them: what is written
//! first, the call's KEYS and ARGV as words, and the exact error it must
//! get; a refusal changes nothing. They were the host's `REFUSALS` and
//! `MALFORMED` tables (`crates/echomq/tests/transitions.rs`), which ran on
//! a redis-server only; as cases the core runs them on its own, and every
//! executor replays them from the files.
//!
//! In every field, `$q:` is the queue's prefix ([`PREFIX`]), `$A` and `$B`
//! the ids [`A`] and [`B`], and, inside a word, `~` a space. `given` is
//! lines of `HSET`, `ZADD`, `SET`, `RPUSH`, `SADD` and `XADD key * field
//! value…`, written directly in order; lines on one key add to it.
//!
//! # Layout
//! One file per transition group, each with `ARGS` (arguments and keys
//! refused) and `STORED` (malformed stored state, PROTOCOL.md §5: a record,
//! a setting or a side key of the right type holding a value of the wrong
//! shape, or a queue of another protocol major, refused before any write).

use super::*;

mod batch;
mod births;
mod control;
mod enqueue;
mod finish;
mod lease;
mod schedule;
mod upkeep;

/// One refusal, as written in the tables.
pub(super) struct Raw {
    /// What it shows, unique within its transition.
    pub name: &'static str,
    /// What is written first.
    pub given: &'static [&'static str],
    /// The transition.
    pub call: Name,
    /// KEYS, as words.
    pub keys: &'static str,
    /// ARGV, as words.
    pub args: &'static str,
    /// The whole error reply: its code, a space, its text.
    pub error: &'static str,
}

/// A job active under token 1, its lease long expired.
const ACTIVE_A: &[&str] = &["HSET $q:job:$A state active attempts 1 payload p", "ZADD $q:active 5 $A"];
/// A job pending.
const PENDING_A: &[&str] = &["HSET $q:job:$A state pending attempts 0 payload p", "ZADD $q:pending 0 $A"];
/// A good job pending ahead of one whose attempts is no integer.
const PENDING_B_BAD_A: &[&str] = &[
    "HSET $q:job:$B state pending attempts 0 payload b",
    "ZADD $q:pending 0 $B",
    "HSET $q:job:$A state pending attempts x payload a",
    "ZADD $q:pending 1 $A",
];

// The keys of the full forms.
const ENQUEUE_KEYS: &str = "$q:job:$A $q:pending $q:delayed $q:priority $q:policy $q:unique $q:unique_until \
                            $q:events $q:config $q:headers $q:wake";
const ACK_KEYS: &str = "$q:job:$A $q:active $q:done $q:results $q:events $q:config";
const CLAIM_KEYS: &str = "$q:pending $q:active $q:config $q:rate $q:policy $q:events $q:headers $q:wake";
const CONFIG_KEYS: &str = "$q:config $q:pending $q:priority $q:rate $q:events $q:wake";
const REAP_KEYS: &str =
    "$q:active $q:pending $q:dead $q:errors $q:priority $q:policy $q:events $q:config $q:wake";

/// A queue written by another major of the protocol.
const VERSION_2: &str = "EMQVERSION queue written by protocol 2.0; this speaker is 1.11";

/// Every table, in the order the cases are written.
const TABLES: [&[Raw]; 14] = [
    enqueue::ARGS,
    enqueue::STORED,
    lease::ARGS,
    lease::STORED,
    finish::ARGS,
    finish::STORED,
    upkeep::ARGS,
    upkeep::STORED,
    control::ARGS,
    control::STORED,
    schedule::ARGS,
    schedule::STORED,
    batch::ARGS,
    batch::STORED,
];

/// Every raw refusal as a case.
pub(super) fn cases() -> Vec<Case> {
    TABLES.iter().flat_map(|table| table.iter()).map(Raw::case).collect()
}

/// A record without a birth field, at every place a transition reads one.
pub(super) fn births() -> Vec<Case> {
    births::cases()
}

/// `$q:`, `$A`, `$B` and `~` put in.
fn expand(text: &str) -> String {
    text.replace("$q:", PREFIX).replace("$A", A).replace("$B", B).replace('~', " ")
}

fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(expand).collect()
}

impl Raw {
    fn case(&self) -> Case {
        raw(self.name, self.given, self.call, self.keys, self.args).refused_with(&expand(self.error))
    }
}

/// A case of `call` with KEYS and ARGV as words, after the `given` lines,
/// that must answer (a refusal says so on the case it gives).
fn raw(name: &str, given_lines: &[&str], call: Name, keys: &str, args: &str) -> Case {
    let args = words(args).into_iter().map(String::into_bytes).collect();
    let mut case = Case::new(name, Call { name: call, keys: words(keys), args });
    case.setup = given(given_lines);
    case
}

/// The `given` lines as steps: one [`Setup::Put`] per key, in the order the
/// keys first appear, holding every line on it.
fn given(lines: &[&str]) -> Vec<Setup> {
    let mut puts: Vec<(String, Put)> = Vec::new();
    for line in lines {
        let words = words(line);
        let (command, key, rest) = (words[0].as_str(), words[1].clone(), &words[2..]);
        let bytes = |items: &[String]| items.iter().map(|w| w.as_bytes().to_vec()).collect::<Vec<_>>();
        let put = match command {
            "HSET" => Put::Hash(rest.chunks(2).map(|p| (p[0].clone(), p[1].as_bytes().to_vec())).collect()),
            "ZADD" => {
                Put::Zset(rest.chunks(2).map(|p| (p[1].clone(), p[0].parse().expect("a score"))).collect())
            }
            "SET" => Put::String(rest[0].as_bytes().to_vec()),
            "RPUSH" => Put::List(bytes(rest)),
            "SADD" => Put::Set(bytes(rest)),
            "XADD" if rest[0] == "*" => Put::Stream(vec![rest[1..]
                .chunks(2)
                .map(|p| (p[0].clone(), p[1].as_bytes().to_vec()))
                .collect()]),
            other => panic!("{line}: cannot write {other}"),
        };
        match puts.iter_mut().find(|(k, _)| *k == key) {
            None => puts.push((key, put)),
            Some((_, held)) => match (held, put) {
                (Put::Hash(held), Put::Hash(more)) => {
                    for (field, value) in more {
                        held.retain(|(f, _)| *f != field);
                        held.push((field, value));
                    }
                }
                (Put::Zset(held), Put::Zset(more)) => {
                    for (member, score) in more {
                        held.retain(|(m, _)| *m != member);
                        held.push((member, score));
                    }
                }
                (Put::List(held), Put::List(more)) => held.extend(more),
                (Put::Set(held), Put::Set(more)) => held.extend(more),
                (Put::Stream(held), Put::Stream(more)) => held.extend(more),
                _ => panic!("{line}: a key written as two types"),
            },
        }
    }
    puts.into_iter().map(|(key, value)| Setup::Put { key, value }).collect()
}

/// How many raw refusals were written here after the host's 165.
#[cfg(test)]
const ADDED: usize = 6;

#[cfg(test)]
mod tests {
    use super::*;

    /// The 165 refusals the host's tables held, none lost on the way, and
    /// those written here since (issue 47's answers).
    #[test]
    fn every_raw_refusal_is_a_case() {
        const RAW: usize = 165 + ADDED;
        assert_eq!(TABLES.iter().map(|table| table.len()).sum::<usize>(), RAW);
        let all = cases();
        assert_eq!(all.len(), RAW);
        assert!(all.iter().all(|case| matches!(case.expect, Expect::Refused(_)) && case.error.is_some()));
    }

    #[test]
    fn lines_on_one_key_add_to_it() {
        let steps = given(&["HSET $q:config paused 1", "ZADD $q:pending 0 $A", "HSET $q:config rate 2~3"]);
        assert_eq!(
            steps,
            vec![
                Setup::Put { key: key("config"), value: hash(&[("paused", "1"), ("rate", "2 3")]) },
                Setup::Put { key: key("pending"), value: zset(&[(A, 0.0)]) },
            ]
        );
    }
}
