//! The EchoMQ protocol in plain Rust, with no Redis types: the error codes,
//! the argument limits, and every transition over a small [`Store`] trait.
//! The native module runs these transitions inside Redis; the embedded
//! executor runs them in-process on [`Memory`]. The Lua scripts are the
//! independent second implementation, and conformance tests prove the two equal.
//!
//! ```
//! use std::sync::Arc;
//! use echomq_core::memory::{ManualClock, Memory};
//! use echomq_core::{Code, Name, Reply};
//!
//! let mut store = Memory::new(Arc::new(ManualClock::new(1_000)));
//! let id = b"JOB_00000000000000000000000001".as_slice();
//! let keys: [&[u8]; 2] = [b"emq:{q}:job:JOB_00000000000000000000000001", b"emq:{q}:pending"];
//! assert_eq!(Name::Enqueue.run(&mut store, &keys, &[id, b"hello"]), Ok(Reply::Int(1)));
//! assert_eq!(Name::Enqueue.run(&mut store, &keys, &[id, b"hello"]), Ok(Reply::Int(0)));
//! let refused = Name::Enqueue.run(&mut store, &keys, &[b"XYZ", b"hello"]).unwrap_err();
//! assert_eq!(refused.code, Code::Kind);
//! ```
//!
//! # Layout
//! - [`code`]: the `EMQ<NAME>` error codes.
//! - [`description`]: what each transition is (keys by role, arguments,
//!   command, effect), read by every layer.
//! - [`limits`]: the ranges of every numeric argument and the size limits.
//! - [`parse`]: argument parsing and validation shared by every transition.
//! - [`policy`]: a job's own policy (attempts, back-off, timeout), kept beside its record.
//! - [`store`]: the [`Store`] trait the transitions run on.
//! - [`transition`]: every transition (parse, then apply) and [`Name`], which lists and dispatches them.
//! - [`reply`]: [`Reply`] and [`Refusal`].
//! - [`memory`]: [`Memory`], an in-process store with an injectable clock.
//! - [`version`]: the protocol's version, [`PROTOCOL`].
//! - [`vectors`]: the golden vectors of `protocol/vectors/`, as cases the core runs.

#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]
#![warn(clippy::must_use_candidate, clippy::missing_errors_doc)]

pub mod code;
pub mod description;
pub mod limits;
pub mod memory;
pub mod parse;
pub mod policy;
pub mod reply;
pub mod store;
pub mod transition;
pub mod vectors;
pub mod version;

pub use code::Code;
pub use description::{Description, Effect, Role};
pub use memory::Memory;
pub use policy::{Backoff, Policy};
pub use reply::{Answer, Refusal, Reply};
pub use store::{KeyType, Store};
pub use transition::Name;
pub use version::{Version, MODULE_SINCE, PROTOCOL};
