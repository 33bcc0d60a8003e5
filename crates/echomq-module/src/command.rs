//! Each command's registration, from its transition's description, and one
//! path for every call: split argv into KEYS and ARGV, answer Redis's
//! key-position and arity questions, run the core's transition on a
//! [`RedisStore`], and reply. Nothing here knows what a transition does.

use std::ffi::CString;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use echomq_core::{Answer, Description, Effect, Name};
use redis_module::raw;

use crate::api::{self, rm};
use crate::block;
use crate::reply;
use crate::store::RedisStore;

/// Register `name`'s command as its description says: `EMQ.<NAME>`, its
/// flags, its key positions (for cluster routing and ACLs), and for a
/// transition that only reads, a key spec that declares its keys read-only
/// (so a monitoring user with `%R~emq:*` may run it, SECURITY.md).
///
/// Flags: a reader is `readonly`; a writer `write deny-oom`, except one
/// that only frees memory (PURGE), which is `write`; a command with a
/// `BLOCK` option is `blocking`; one whose trailing keys may be left out
/// (ENQUEUE) answers key-position requests itself (`getkeys-api`). Arity: a
/// call with fewer arguments than its required KEYS gets Redis's arity
/// error; a missing ARGV gets the core's `EMQARG`, as the Lua script answers.
pub(crate) fn register(ctx: *mut raw::RedisModuleCtx, name: Name) -> Result<(), String> {
    let described = name.describe();
    let mut flags = match described.effect {
        Effect::Reads => "readonly",
        Effect::Writes => "write deny-oom",
        Effect::Frees => "write",
    }
    .to_owned();
    if described.options.contains(&"BLOCK") {
        flags += " blocking";
    }
    if described.required_keys() < described.keys.len() {
        flags += " getkeys-api";
    }
    let command = CString::new(described.command.to_ascii_lowercase()).map_err(|e| e.to_string())?;
    let flags = CString::new(flags).map_err(|e| e.to_string())?;
    let last_key = described.required_keys() as c_int;
    let created = rm!(RedisModule_CreateCommand(ctx, command.as_ptr(), Some(on_command), flags.as_ptr(), 1, last_key, 1)
        or raw::Status::Err as c_int);
    if created != raw::Status::Ok as c_int {
        return Err(format!("cannot register {}", described.command));
    }
    if described.reads_only() && !api::declare_read_only(ctx, &command, described.keys.len() as c_int) {
        return Err(format!("cannot declare {}'s keys read-only", described.command));
    }
    Ok(())
}

/// Every `EMQ.*` command's entry point: argv[0] names the transition (as
/// [`register`] registered it), the rest is its KEYS then ARGV. Every reply,
/// error or none (a blocked claim, a key-position request) is written here. A
/// panic (a bug: the core and this crate are written not to) becomes an error
/// reply instead of aborting the server, which is what a panic across the C
/// boundary would do.
unsafe extern "C" fn on_command(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    let served = catch_unwind(AssertUnwindSafe(|| {
        let words = api::words(argv, argc);
        match words.split_first() {
            Some((command, words)) => match Name::from_command(command) {
                Some(name) => dispatch(ctx, name, words),
                None => reply::send_error(ctx, &internal_error()),
            },
            None => reply::send_error(ctx, &internal_error()),
        }
    }));
    if served.is_err() {
        reply::send_error(ctx, &internal_error());
    }
    raw::REDISMODULE_OK as c_int
}

/// How many of `words` (argv without the command name) are KEYS, for a
/// transition whose last keys are optional (ENQUEUE's 2 to 11, FAIL's 5, 6
/// or 8, CLAIM's 5 to 8). When its first argument is a job id, that id comes
/// right after the keys, and no key begins with `JOB`, so the keys end at
/// the first word (from the second on) that passes the kind gate;
/// with no such word, all of them when the call is long enough to hold
/// them, else the required ones. Any other word in a key's place is that
/// key, right or wrong, so a wrong one gets the script's `EMQARG`. When its
/// first argument is not an id (CLAIM's lease, REAP's max attempts,
/// PROMOTE's and CONFIG's options), the optional keys are the words after
/// the required ones that hold a colon, as every key does (`emq:{q}:…`) and
/// no argument of theirs (a number, an option's name) can (PROTOCOL.md §8).
pub(crate) fn key_count(described: &Description, words: &[&[u8]]) -> usize {
    let required = described.required_keys();
    let all = described.keys.len();
    if described.args.first() != Some(&"id") {
        let keyed = |word: &&&[u8]| word.contains(&b':');
        let optional = words.iter().skip(required).take(all - required).take_while(keyed).count();
        return required + optional;
    }
    let is_id = |at: usize| words.get(at).is_some_and(|word| echomq_core::parse::kind(Some(word)).is_ok());
    // From the first key: a call with fewer keys than its forms allow is
    // still read up to its id, and refused for its number of keys.
    match (1..=all).find(|at| is_id(*at)) {
        Some(at) => at,
        None if words.len() >= all => all,
        None => required,
    }
}

fn dispatch(ctx: *mut raw::RedisModuleCtx, name: Name, words: &[&[u8]]) {
    let key_count = key_count(name.describe(), words);
    if rm!(RedisModule_IsKeysPositionRequest(ctx) or 0) != 0 {
        // argv positions: 0 is the command name, so keys sit at 1..=key_count.
        for position in 1..=key_count.min(words.len()) {
            rm!(RedisModule_KeyAtPos(ctx, position as c_int) or ());
        }
        return;
    }
    let Some((keys, args)) = words.split_at_checked(key_count) else {
        rm!(RedisModule_WrongArity(ctx) or 0);
        return;
    };
    if name == Name::Claim {
        return block::claim(ctx, keys, args);
    }
    let mut store = RedisStore::new(ctx, keys.first().copied().unwrap_or_default());
    let outcome = name.run(&mut store, keys, args);
    finish(ctx, &store, &outcome);
}

/// Reply with `outcome`, or `CROSSSLOT` when the store refused a key of
/// another slot (and so wrote nothing).
pub(crate) fn finish(ctx: *mut raw::RedisModuleCtx, store: &RedisStore, outcome: &Answer) {
    if store.crossed_slot() {
        reply::send_error(ctx, &cross_slot());
    } else {
        reply::send(ctx, outcome);
    }
}

/// Redis's own words for a command whose keys span slots.
fn cross_slot() -> CString {
    CString::from(c"CROSSSLOT Keys in request don't hash to the same slot")
}

/// The reply to a call that hit a bug.
pub(crate) fn internal_error() -> CString {
    CString::from(c"ERR echomq-module internal error (a bug): see the server's log")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_keys_end_where_the_job_id_begins() {
        let enqueue = Name::Enqueue.describe();
        let four: [&[u8]; 6] = [
            b"emq:{q}:job:JOB_1",
            b"emq:{q}:pending",
            b"emq:{q}:delayed",
            b"emq:{q}:priority",
            b"JOB_1",
            b"x",
        ];
        assert_eq!(key_count(enqueue, &four), 4);
        let two: [&[u8]; 4] = [b"emq:{q}:job:JOB_1", b"emq:{q}:pending", b"JOB_1", b"x"];
        assert_eq!(key_count(enqueue, &two), 2);
        let other_queue: [&[u8]; 6] = [
            b"emq:{q}:job:JOB_1",
            b"emq:{q}:pending",
            b"emq:{r}:delayed",
            b"emq:{q}:priority",
            b"JOB_1",
            b"p",
        ];
        assert_eq!(key_count(enqueue, &other_queue), 4);
        let five: [&[u8]; 7] = [
            b"emq:{q}:job:JOB_1",
            b"emq:{q}:pending",
            b"emq:{q}:delayed",
            b"emq:{q}:priority",
            b"emq:{q}:policy",
            b"JOB_1",
            b"x",
        ];
        assert_eq!(key_count(enqueue, &five), 5);
        let fail = Name::Fail.describe();
        assert_eq!(key_count(fail, &[&five[..4], &five[..1], &five[5..6]].concat()), 5);
        assert_eq!(key_count(fail, &[&five[..5], &five[..1], &five[5..6]].concat()), 6);
        let not_a_job: [&[u8]; 3] = [b"emq:{q}:job:XYZ", b"emq:{q}:pending", b"XYZ"];
        assert_eq!(key_count(enqueue, &not_a_job), 2);
        assert_eq!(key_count(enqueue, &[b"only".as_slice()]), 2);
        assert_eq!(key_count(enqueue, &[]), 2);
        assert_eq!(key_count(Name::Stats.describe(), &[]), 6);
    }
}
