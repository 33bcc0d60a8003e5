//! `echomq-module`: the EchoMQ Redis module. It registers one command per
//! protocol transition, `EMQ.ENQUEUE` … `EMQ.STATS`, each taking a key count,
//! then the same KEYS and ARGV as its Lua script (as `EVALSHA` takes them),
//! and giving the same replies and error texts; and `EMQ.VERSION`, the
//! protocol's version.
//! The transitions themselves live in `echomq-core`; this crate only gives
//! them a [`Store`](echomq_core::Store) made of the Redis module API, and
//! adds what Lua cannot do: a CLAIM that blocks until a job arrives.
//!
//! ```text
//! $ redis-server --loadmodule target/debug/libechomq_module.so
//! > EMQ.VERSION
//! "1.11"
//! > EMQ.ENQUEUE 2 emq:{q}:job:JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1R emq:{q}:pending JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1R hello
//! (integer) 1
//! > EMQ.CLAIM 8 emq:{q}:pending emq:{q}:active emq:{q}:config emq:{q}:rate emq:{q}:policy emq:{q}:events emq:{q}:headers emq:{q}:wake 30000 COUNT 10 BLOCK 5000
//! 1) 1) "JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1R"
//!    2) (integer) 1
//!    3) "hello"
//! > EMQ.ACK 6 emq:{q}:job:JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1R emq:{q}:active emq:{q}:done emq:{q}:results emq:{q}:events emq:{q}:config JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1R 1
//! (integer) 1
//! ```
//!
//! Replicas and the AOF see plain `HSET`/`ZADD`/`ZREM`/`HDEL`/`DEL`, wrapped
//! in one MULTI/EXEC per command, so they need no module. Needs Redis ≥ 7.0.
//!
//! # Layout
//! - `command`: each command's registration from its transition's
//!   description, and one path for every call: argv into KEYS and ARGV by
//!   its key count, reply; and `EMQ.VERSION`.
//! - `block`: CLAIM and its `BLOCK <ms>` wait on the pending key.
//! - `store`: `RedisStore`, the core's `Store` over the low-level key API,
//!   with replication, keyspace events and wake-ups.
//! - `reply`: the core's replies and refusals as RESP.
//! - `api`: small safe wrappers over the raw module API.
//! - `slot`: hash tags, to keep derived keys in the declared keys' slot.

// Unit tests build the crate without registering the module, so the command
// paths are unused there; the integration tests in tests/ drive them.
#![warn(missing_docs, unreachable_pub)]
#![cfg_attr(test, allow(dead_code))]

mod api;
mod block;
mod command;
mod reply;
mod slot;
mod store;

#[cfg(not(test))]
use redis_module::{Context, RedisString};

/// Register every transition of [`echomq_core::Name::ALL`] as its command,
/// from its description (see `command::register`); refuse to load on a
/// server that lacks an API function the commands call; and take over the
/// "key modified" signal (see `store`).
#[cfg(not(test))]
fn init(ctx: &Context, _args: &[RedisString]) -> redis_module::Status {
    let missing = api::missing_functions();
    if !missing.is_empty() {
        ctx.log_warning(&format!("echomq: this server lacks RedisModule_{}", missing.join(", RedisModule_")));
        return redis_module::Status::Err;
    }
    ctx.set_module_options(redis_module::ModuleOptions::NO_IMPLICIT_SIGNAL_MODIFIED);
    let registered = echomq_core::Name::ALL
        .iter()
        .try_for_each(|name| command::register(ctx.ctx, *name))
        .and_then(|()| command::register_version(ctx.ctx));
    if let Err(why) = registered {
        ctx.log_warning(&format!("echomq: {why}"));
        return redis_module::Status::Err;
    }
    redis_module::Status::Ok
}

/// The entry points Redis calls by name (`RedisModule_OnLoad`), as
/// `redis_module!` writes them.
#[cfg(not(test))]
#[allow(missing_docs, unreachable_pub)]
mod entry {
    use super::init;

    redis_module::redis_module! {
        name: "echomq",
        // MODULE LIST's version: the protocol's, major * 10000 + minor * 100.
        version: echomq_core::PROTOCOL.major * 10000 + echomq_core::PROTOCOL.minor * 100,
        // The module's own heap is the system's, not RedisModule_Alloc:
        // Redis counts each of those allocations and frees with
        // malloc_usable_size, and a command's Rust temporaries (key names,
        // field lists: a hundred or more a call) then cost 5% of the server's
        // instructions (BENCHMARKS.md). They are freed before the command
        // returns, so `INFO memory` misses nothing that stays.
        allocator: (std::alloc::System, std::alloc::System),
        data_types: [],
        init: init,
    }
}
