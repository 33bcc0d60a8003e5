//! CLAIM, and its native-only `BLOCK <ms>`: when nothing is pending, the
//! client waits on the pending key, without polling, until a job arrives or
//! the time is up (`BLOCK 0`: no limit).
//!
//! The wait is `RedisModule_BlockClientOnKeys` on the pending key and, when
//! the claim passed it, the wake-up key. Every write that adds to a set
//! signals that key as ready (see [`RedisStore`]), so an ENQUEUE, PROMOTE,
//! RELEASE or REAP into pending wakes the waiters, as a `ZADD` wakes a
//! `BZPOPMIN`. A resume through the scripts adds nothing to pending (it
//! re-adds the head, which signals nothing while pending holds more): it
//! sets the wake-up key anew, which the server signals, so a native waiter
//! wakes for it as a Lua one does. A claim about to wait takes the wake-up
//! key's member first, as a `BZPOPMIN` would: a script's `ZADD` of it
//! then creates the key, which the server signals (a key that exists is
//! not). A woken client claims again; one that lost the
//! race to another worker finds nothing it can take and **stays blocked**
//! (the callback declines, and Redis keeps the client waiting on the same
//! keys with the same deadline), unless that claim wrote (a record found
//! missing) or a wake-up member is there: then it answers the empty claim,
//! and the host's next claim, a command of its own, takes the member. A
//! declined callback never writes: Redis cannot propagate its writes to
//! replicas and the AOF (7.0 aborts). On time-out the reply is an empty array, the same
//! as a claim of an empty queue. Inside MULTI or a script, where a client
//! cannot block, the claim answers at once.

use std::os::raw::{c_int, c_longlong};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

use echomq_core::transition::Claim;
use echomq_core::{Answer, Reply, Store};
use redis_module::raw;

use crate::api::{self, rm, RString};
use crate::command::{finish, internal_error, split_keys};
use crate::reply;
use crate::store::RedisStore;

/// Contexts in which a client cannot block.
const NO_BLOCKING: u32 = raw::REDISMODULE_CTX_FLAGS_MULTI
    | raw::REDISMODULE_CTX_FLAGS_LUA
    | raw::REDISMODULE_CTX_FLAGS_DENY_BLOCKING;

/// `EMQ.CLAIM 8 <pending> <active> <config> <rate> <policy> <events> <headers> <wake> <lease> [COUNT n] [BLOCK ms]`.
pub(crate) fn claim(ctx: *mut raw::RedisModuleCtx, keys: &[&[u8]], args: &[&[u8]]) {
    let claim = match Claim::parse(keys, args) {
        Ok(claim) => claim,
        Err(refusal) => return reply::send(ctx, &Err(refusal)),
    };
    let (mut store, outcome) = claim_now(ctx, &claim, claim.block.is_some());
    match claim.block {
        Some(timeout) if nothing_claimed(&store, &outcome) && api::context_flags(ctx) & NO_BLOCKING == 0 => {
            // Take the wake-up key's member, as a `BZPOPMIN` would (a native
            // claim pops none, so one set while no one waited stays): a key
            // that exists is not signalled by a script's `ZADD` that changes
            // nothing; one taken is created again by the next, which the
            // server signals to this wait (PROTOCOL.md §9).
            store.del(claim.wake_key());
            drop(store);
            wait(ctx, claim.pending_key(), claim.wake_key(), timeout)
        }
        _ => finish(ctx, &store, &outcome),
    }
}

/// Claim now. Ids whose records are missing are dropped from pending without
/// being claimed, so a claim can come back empty while pending is not. A
/// claim that may block claims again while that makes progress, so it never
/// sleeps on a ready job; one that may not answers as the Lua script would.
fn claim_now(ctx: *mut raw::RedisModuleCtx, claim: &Claim, blocking: bool) -> (RedisStore, Answer) {
    let pending = claim.pending_key();
    let mut store = RedisStore::new(ctx, pending);
    loop {
        let before = store.zcard(pending);
        let outcome = claim.apply(&mut store);
        let after = store.zcard(pending);
        if !blocking || !nothing_claimed(&store, &outcome) || after == 0 || after >= before {
            return (store, outcome);
        }
    }
}

/// Whether a claim came back empty (not refused, not crossing a slot) in a
/// way an arrival may change: nothing pending, or the queue paused (a resume
/// re-adds the head of pending, which signals the key). A claim held back by
/// the concurrency or the rate limit answers at once: no arrival frees a
/// slot, and the rate's reply says how long until one opens.
fn nothing_claimed(store: &RedisStore, outcome: &Answer) -> bool {
    !store.crossed_slot()
        && matches!(outcome, Ok(Reply::Array(jobs)) if jobs.is_empty() || matches!(jobs[..], [Reply::Int(-1)]))
}

/// Block the client on `pending` and the wake-up key `wake` for `timeout` ms
/// (0: no limit).
fn wait(ctx: *mut raw::RedisModuleCtx, pending: &[u8], wake: &[u8], timeout: u64) {
    let watched: Vec<RString> = [pending, wake].into_iter().map(RString::new).collect();
    let mut keys: Vec<_> = watched.iter().map(RString::as_ptr).collect();
    let timeout = c_longlong::try_from(timeout).unwrap_or(c_longlong::MAX);
    let blocked = rm!(RedisModule_BlockClientOnKeys(
        ctx,
        Some(on_ready),
        Some(on_timeout),
        None,
        timeout,
        keys.as_mut_ptr(),
        keys.len() as c_int,
        ptr::null_mut(),
    ) or ptr::null_mut());
    if blocked.is_null() {
        reply::send_reply(ctx, &Reply::Array(Vec::new()));
    }
}

/// The pending key was signalled: claim again with the original arguments.
/// `REDISMODULE_OK` when the client got its answer, `REDISMODULE_ERR` to keep
/// it blocked (another client took the job first).
unsafe extern "C" fn on_ready(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    let served = catch_unwind(AssertUnwindSafe(|| {
        let words = api::words(argv, argc);
        let words = words.get(1..).unwrap_or_default();
        // The keys as the call counted them (PROTOCOL.md §8).
        let parsed = split_keys(&Claim::DESCRIPTION, words);
        match parsed.and_then(|(keys, args)| Claim::parse(keys, args)) {
            Err(refusal) => reply::send(ctx, &Err(refusal)),
            Ok(claim) => {
                let (mut store, outcome) = claim_now(ctx, &claim, true);
                // Woken for nothing it can take: it stays blocked only if this
                // callback wrote nothing (Redis cannot propagate a declined
                // callback's writes: 7.0 aborts on them) and no wake-up member
                // is there (one would keep a script's ZADD from signalling
                // the wait). Else the empty claim's answer: the host claims
                // again, and that claim takes the member before it waits.
                if nothing_claimed(&store, &outcome) && !store.wrote() && store.zcard(claim.wake_key()) == 0 {
                    return false;
                }
                finish(ctx, &store, &outcome);
            }
        }
        true
    }));
    let served = served.unwrap_or_else(|_| {
        reply::send_error(ctx, &internal_error());
        true
    });
    (if served { raw::REDISMODULE_OK } else { raw::REDISMODULE_ERR }) as c_int
}

/// The wait is over with nothing claimed: the empty claim's reply.
unsafe extern "C" fn on_timeout(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    reply::send_reply(ctx, &Reply::Array(Vec::new()));
    raw::REDISMODULE_OK as c_int
}
