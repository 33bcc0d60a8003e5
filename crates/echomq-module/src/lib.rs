//! `echomq-module`: the EchoMQ Redis module. It registers one command per
//! protocol transition, `EMQ.ENQUEUE` … `EMQ.STATS`, each taking the same KEYS
//! then ARGV as its Lua script and giving the same replies and error texts.
//! The transitions themselves live in `echomq-core`; this crate only gives
//! them a [`Store`](echomq_core::Store) made of the Redis module API, and
//! adds what Lua cannot do: a CLAIM that blocks until a job arrives.
//!
//! ```text
//! $ redis-server --loadmodule target/debug/libechomq_module.so
//! > EMQ.ENQUEUE emq:{q}:job:JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1R emq:{q}:pending JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1R hello
//! (integer) 1
//! > EMQ.CLAIM emq:{q}:pending emq:{q}:active 30000 COUNT 10 BLOCK 5000
//! 1) 1) "JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1R"
//!    2) (integer) 1
//!    3) "hello"
//! > EMQ.ACK emq:{q}:job:JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1R emq:{q}:active emq:{q}:done JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1R 1
//! (integer) 1
//! ```
//!
//! Replicas and the AOF see plain `HSET`/`ZADD`/`ZREM`/`HDEL`/`DEL`, wrapped
//! in one MULTI/EXEC per command, so they need no module. Needs Redis ≥ 7.0.
//!
//! # Layout
//! - `command`: argv into KEYS and ARGV, arity, key positions, reply; one path for every command.
//! - `block`: CLAIM and its `BLOCK <ms>` wait on the pending key.
//! - `store`: `RedisStore`, the core's `Store` over the low-level key API,
//!   with replication, keyspace events and wake-ups.
//! - `reply`: the core's replies and refusals as RESP.
//! - `api`: small safe wrappers over the raw module API.
//! - `slot`: hash tags, to keep derived keys in the declared keys' slot.

// Unit tests build the crate without registering the module, so the command
// paths are unused there; the integration tests in tests/ drive them.
#![cfg_attr(test, allow(dead_code))]

mod api;
mod block;
mod command;
mod reply;
mod slot;
mod store;

use command::{Keys, Spec};
use redis_module::{Context, RedisResult, RedisString};

/// A thin wrapper per command: its transition and its KEYS, nothing else.
macro_rules! commands {
    ($($handler:ident: $transition:literal, $keys:expr;)*) => {
        $(
            fn $handler(ctx: &Context, argv: Vec<RedisString>) -> RedisResult {
                command::execute(ctx, Spec { transition: $transition, keys: $keys }, &argv)
            }
        )*
    };
}

commands! {
    enqueue: "enqueue", Keys::Enqueue;
    claim: "claim", Keys::Fixed(2);
    ack: "ack", Keys::Fixed(3);
    fail: "fail", Keys::Fixed(5);
    extend: "extend", Keys::Fixed(2);
    release: "release", Keys::Fixed(4);
    reap: "reap", Keys::Fixed(5);
    promote: "promote", Keys::Fixed(3);
    purge: "purge", Keys::Fixed(3);
    cancel: "cancel", Keys::Fixed(6);
    retry: "retry", Keys::Fixed(4);
    inspect: "inspect", Keys::Fixed(2);
    stats: "stats", Keys::Fixed(6);
}

/// Refuse to load on a server that lacks an API function the commands call,
/// and take over the "key modified" signal (see `store`).
#[cfg(not(test))]
fn init(ctx: &Context, _args: &[RedisString]) -> redis_module::Status {
    let missing = api::missing_functions();
    if !missing.is_empty() {
        ctx.log_warning(&format!("echomq: this server lacks RedisModule_{}", missing.join(", RedisModule_")));
        return redis_module::Status::Err;
    }
    ctx.set_module_options(redis_module::ModuleOptions::NO_IMPLICIT_SIGNAL_MODIFIED);
    // The two readers declare their keys read-only, so a monitoring user
    // with read-only keys (`%R~emq:*`, SECURITY.md) may run them.
    for (command, keys) in [(c"emq.inspect", 2), (c"emq.stats", 6)] {
        if !api::declare_read_only(ctx.ctx, command, keys) {
            ctx.log_warning(&format!("echomq: cannot declare {command:?}'s keys read-only"));
            return redis_module::Status::Err;
        }
    }
    redis_module::Status::Ok
}

// Each command: name, handler, flags, then the KEYS' argv positions (first,
// last, step) for cluster routing and ACLs. ENQUEUE has 2 or 4 keys, so it
// answers key-position requests itself (`getkeys-api`). Writers are
// `deny-oom` except PURGE, which only frees memory. Arity: a call with fewer
// arguments than KEYS gets Redis's arity error; a missing ARGV gets the
// core's `EMQARG`, as the Lua script answers it.
#[cfg(not(test))]
redis_module::redis_module! {
    name: "echomq",
    version: 1,
    allocator: (redis_module::alloc::RedisAlloc, redis_module::alloc::RedisAlloc),
    data_types: [],
    init: init,
    commands: [
        ["emq.enqueue", enqueue, "write deny-oom getkeys-api", 1, 2, 1, ""],
        ["emq.claim", claim, "write deny-oom blocking", 1, 2, 1, ""],
        ["emq.ack", ack, "write deny-oom", 1, 3, 1, ""],
        ["emq.fail", fail, "write deny-oom", 1, 5, 1, ""],
        ["emq.extend", extend, "write deny-oom", 1, 2, 1, ""],
        ["emq.release", release, "write deny-oom", 1, 4, 1, ""],
        ["emq.reap", reap, "write deny-oom", 1, 5, 1, ""],
        ["emq.promote", promote, "write deny-oom", 1, 3, 1, ""],
        ["emq.purge", purge, "write", 1, 3, 1, ""],
        ["emq.cancel", cancel, "write deny-oom", 1, 6, 1, ""],
        ["emq.retry", retry, "write deny-oom", 1, 4, 1, ""],
        ["emq.inspect", inspect, "readonly", 1, 2, 1, ""],
        ["emq.stats", stats, "readonly", 1, 6, 1, ""],
    ],
}
