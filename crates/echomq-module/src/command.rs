//! One command's path: split argv into KEYS and ARGV, answer Redis's
//! key-position and arity questions, run the core's transition on a
//! [`RedisStore`], and reply. Nothing here knows what a transition does.

use std::ffi::CString;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use echomq_core::Outcome;
use redis_module::{raw, Context, RedisResult, RedisString, RedisValue};

use crate::api::rm;
use crate::block;
use crate::reply;
use crate::store::RedisStore;

/// How many leading arguments of a command are KEYS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keys {
    /// Always this many.
    Fixed(usize),
    /// ENQUEUE: four (job, pending, delayed, priority) when the third
    /// argument is the queue's delayed key, else two (job, pending).
    Enqueue,
}

impl Keys {
    /// How many of `words` (argv without the command name) are keys.
    pub fn count(self, words: &[&[u8]]) -> usize {
        match self {
            Keys::Fixed(n) => n,
            Keys::Enqueue if four_key_enqueue(words) => 4,
            Keys::Enqueue => 2,
        }
    }
}

/// The 4-key ENQUEUE: argv[3] is the pending key's prefix followed by `delayed`.
fn four_key_enqueue(words: &[&[u8]]) -> bool {
    let (Some(pending), Some(third)) = (words.get(1), words.get(2)) else { return false };
    let prefix = pending.strip_suffix(b"pending".as_slice());
    prefix.is_some_and(|prefix| third.strip_prefix(prefix) == Some(b"delayed".as_slice()))
}

/// One `EMQ.<NAME>` command: the transition it runs and how its keys are laid out.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// The transition's protocol name, as `echomq_core::run` knows it.
    pub transition: &'static str,
    /// Its KEYS.
    pub keys: Keys,
}

/// Run `spec` for one call and reply. Always answers `NoReply` to the
/// `redis-module` wrapper: every reply, error or none (a blocked claim, a
/// key-position request) is written here. A panic (a bug: the core and this
/// crate are written not to) becomes an error reply instead of aborting the
/// server, which is what a panic across the C boundary would do.
pub fn execute(context: &Context, spec: Spec, argv: &[RedisString]) -> RedisResult {
    let ctx = context.ctx;
    let words: Vec<&[u8]> = argv.iter().skip(1).map(|arg| arg.as_slice()).collect();
    if catch_unwind(AssertUnwindSafe(|| dispatch(ctx, spec, &words))).is_err() {
        reply::send_error(ctx, &internal_error());
    }
    Ok(RedisValue::NoReply)
}

fn dispatch(ctx: *mut raw::RedisModuleCtx, spec: Spec, words: &[&[u8]]) {
    let key_count = spec.keys.count(words);
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
    if spec.transition == "claim" {
        return block::claim(ctx, keys, args);
    }
    let mut store = RedisStore::new(ctx, keys.first().copied().unwrap_or_default());
    let outcome = echomq_core::run(&mut store, spec.transition, keys, args);
    finish(ctx, &store, &outcome);
}

/// Reply with `outcome`, or `CROSSSLOT` when the store refused a key of
/// another slot (and so wrote nothing).
pub fn finish(ctx: *mut raw::RedisModuleCtx, store: &RedisStore, outcome: &Outcome) {
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
pub fn internal_error() -> CString {
    CString::from(c"ERR echomq-module internal error (a bug): see the server's log")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enqueue_takes_four_keys_only_when_the_third_is_the_delayed_key() {
        let four: [&[u8]; 6] = [
            b"emq:{q}:job:JOB_1",
            b"emq:{q}:pending",
            b"emq:{q}:delayed",
            b"emq:{q}:priority",
            b"JOB_1",
            b"x",
        ];
        assert_eq!(Keys::Enqueue.count(&four), 4);
        let two: [&[u8]; 4] = [b"emq:{q}:job:JOB_1", b"emq:{q}:pending", b"JOB_1", b"x"];
        assert_eq!(Keys::Enqueue.count(&two), 2);
        let other_queue: [&[u8]; 3] = [b"emq:{q}:job:JOB_1", b"emq:{q}:pending", b"emq:{r}:delayed"];
        assert_eq!(Keys::Enqueue.count(&other_queue), 2);
        assert_eq!(Keys::Enqueue.count(&[b"only".as_slice()]), 2);
        assert_eq!(Keys::Enqueue.count(&[]), 2);
        assert_eq!(Keys::Fixed(6).count(&[]), 6);
    }
}
