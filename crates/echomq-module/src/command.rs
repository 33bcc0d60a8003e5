//! Each command's registration, from its transition's description, and one
//! path for every call: split argv into KEYS and ARGV by its key count, run
//! the core's transition on a [`RedisStore`], and reply. Nothing here knows
//! what a transition does. Beside them, `EMQ.VERSION`: the protocol's version.

use std::ffi::CString;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use echomq_core::parse::wrong_number_of_keys;
use echomq_core::{Answer, Description, Effect, Name, Refusal, Reply};
use redis_module::raw;

use crate::api::{self, rm};
use crate::block;
use crate::reply;
use crate::store::RedisStore;

/// Register `name`'s command as its description says: `EMQ.<NAME>`, its
/// flags, and a key spec that finds its keys by the call's key count
/// (`EMQ.<NAME> numkeys key… arg…`, as `EVALSHA` takes them), read-only for
/// a transition that only reads (so a monitoring user with `%R~emq:*` may
/// run it, SECURITY.md), read-write for the others. The key spec answers
/// `COMMAND GETKEYS` and ACLs; the legacy first/last/step are 0, as for a
/// command whose keys move, and the command answers key-position requests
/// itself from the same count (`getkeys-api`), which is what Redis 7.0's
/// Cluster routing asks: without it a call would run on a node that does
/// not hold its slot.
///
/// Flags: a reader is `readonly`; one that grows the queue (ENQUEUE) `write
/// deny-oom`, refused at `maxmemory`; every other writer `write`, run at
/// `maxmemory` so that work in flight ends (PROTOCOL.md §8); a command with a
/// `BLOCK` option is `blocking`. Arity: a call without its key count gets
/// Redis's arity error; a key count that is none of the transition's forms
/// gets the core's `EMQARG wrong number of keys`, as the Lua script answers.
pub(crate) fn register(ctx: *mut raw::RedisModuleCtx, name: Name) -> Result<(), String> {
    let described = name.describe();
    let mut flags = match described.effect {
        Effect::Reads => "readonly",
        Effect::Grows => "write deny-oom",
        Effect::Writes | Effect::Frees => "write",
    }
    .to_owned();
    if described.options.contains(&"BLOCK") {
        flags += " blocking";
    }
    // Redis 7.0's Cluster routing reads a module command's keys from the
    // legacy positions or the command itself, never from its key specs.
    flags += " getkeys-api";
    let command = create(ctx, described.command, &flags, Some(on_command))?;
    if !api::declare_counted_keys(ctx, &command, described.reads_only()) {
        return Err(format!("cannot declare {}'s keys", described.command));
    }
    Ok(())
}

/// The command that answers the protocol's version.
pub(crate) const VERSION: &str = "EMQ.VERSION";

/// Register `EMQ.VERSION`: no keys, reads nothing, answers at once.
pub(crate) fn register_version(ctx: *mut raw::RedisModuleCtx) -> Result<(), String> {
    create(ctx, VERSION, "readonly fast", Some(on_version)).map(drop)
}

/// `RedisModule_CreateCommand` with no legacy key positions; the command's
/// name as Redis keeps it (lower case).
fn create(
    ctx: *mut raw::RedisModuleCtx,
    name: &str,
    flags: &str,
    handler: raw::RedisModuleCmdFunc,
) -> Result<CString, String> {
    let command = CString::new(name.to_ascii_lowercase()).map_err(|e| e.to_string())?;
    let flags = CString::new(flags).map_err(|e| e.to_string())?;
    let created = rm!(RedisModule_CreateCommand(ctx, command.as_ptr(), handler, flags.as_ptr(), 0, 0, 0)
        or raw::Status::Err as c_int);
    if created != raw::Status::Ok as c_int {
        return Err(format!("cannot register {name}"));
    }
    Ok(command)
}

/// `EMQ.VERSION`: the protocol's version, `major.minor`, as a bulk string.
unsafe extern "C" fn on_version(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    if argc != 1 {
        let refusal = Refusal::arg("EMQ.VERSION takes no arguments");
        reply::send(ctx, &Err(refusal));
    } else {
        let version = echomq_core::PROTOCOL.to_string().into_bytes();
        reply::send_reply(ctx, &Reply::Bulk(version));
    }
    raw::REDISMODULE_OK as c_int
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

/// A call's KEYS and ARGV.
pub(crate) type Split<'w> = (&'w [&'w [u8]], &'w [&'w [u8]]);

/// Split `words` (argv without the command name) into KEYS and ARGV by the
/// key count that leads them, as `EVALSHA` splits a script's: a decimal
/// integer (digits only, no sign, no leading zero) no greater than the
/// words after it. Whether it is one of the transition's forms is the
/// transition's own check, made after the id's kind as the scripts make it
/// (PROTOCOL.md §5): a call with a bad id and a bad count gets `EMQKIND`
/// from both. A count that cannot split the words is refused with the text
/// a wrong count gets.
pub(crate) fn split_keys<'w>(described: &Description, words: &'w [&'w [u8]]) -> Result<Split<'w>, Refusal> {
    let wrong = || wrong_number_of_keys(described.forms);
    let (count, rest) = words.split_first().ok_or_else(wrong)?;
    let digits = matches!(count.len(), 1..=9)
        && count.iter().all(u8::is_ascii_digit)
        && (count.len() == 1 || count[0] != b'0');
    let count = digits.then(|| std::str::from_utf8(count).ok()?.parse::<usize>().ok()).flatten();
    count.and_then(|count| rest.split_at_checked(count)).ok_or_else(wrong)
}

fn dispatch(ctx: *mut raw::RedisModuleCtx, name: Name, words: &[&[u8]]) {
    if rm!(RedisModule_IsKeysPositionRequest(ctx) or 0) != 0 {
        // argv positions: 0 is the command name, 1 the count, so keys sit
        // at 2 on. A call whose count is none of the forms has none: it is
        // refused when run.
        let described = name.describe();
        let split = split_keys(described, words).ok().map(|(keys, _)| keys.len());
        let count = split.filter(|count| described.forms.contains(count)).unwrap_or(0);
        for position in 2..2 + count {
            api::key_at(ctx, position, described.reads_only());
        }
        return;
    }
    let (keys, args) = match split_keys(name.describe(), words) {
        Ok(split) => split,
        Err(refusal) => return reply::send(ctx, &Err(refusal)),
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
    fn the_key_count_leads_and_splits_the_words() {
        let enqueue = Name::Enqueue.describe();
        let call: [&[u8]; 5] = [b"2", b"emq:{q}:job:JOB_1", b"emq:{q}:pending", b"JOB_1", b"x"];
        let (keys, args) = split_keys(enqueue, &call).unwrap();
        assert_eq!((keys, args), (&call[1..3], &call[3..]));
        // A count of none of the forms splits as EVALSHA's would: the
        // transition refuses it, after the id's kind.
        let (keys, args) = split_keys(enqueue, &[b"3", b"a", b"b", b"c", b"JOB_1"]).unwrap();
        assert_eq!((keys.len(), args.len()), (3, 1));
        assert_eq!(split_keys(enqueue, &[b"0", b"JOB_1"]).unwrap().0.len(), 0);
        let wrong = "EMQARG wrong number of keys: takes 2 or 11 or 12 or 13";
        for count in
            [&b""[..], b"5", b"02", b"02x", b"-2", b"+2", b" 2", b"11", b"9999999999", b"emq:{q}:job:JOB_1"]
        {
            let call: [&[u8]; 5] = [count, b"emq:{q}:job:JOB_1", b"emq:{q}:pending", b"JOB_1", b"x"];
            let refused = split_keys(enqueue, &call).unwrap_err().to_string();
            assert_eq!(refused, wrong, "{}", String::from_utf8_lossy(count));
        }
        assert_eq!(split_keys(enqueue, &[]).unwrap_err().to_string(), wrong);
        let stats = Name::Stats.describe();
        assert_eq!(
            split_keys(stats, &[b"5"]).unwrap_err().to_string(),
            "EMQARG wrong number of keys: takes 6 or 7"
        );
    }
}
