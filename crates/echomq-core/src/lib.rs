//! The EchoMQ protocol's fixed vocabulary, in plain Rust with no Redis types:
//! the error codes every transition answers with and the limits on every
//! argument. The host library (`echomq`) and the native module both read
//! them from here, and a test proves the Lua scripts spell them the same way.
//!
//! ```
//! use echomq_core::{Code, limits};
//! assert_eq!(Code::Fence.as_str(), "EMQFENCE");
//! assert_eq!(Code::parse("EMQKIND"), Some(Code::Kind));
//! assert!(limits::LEASE_MS.contains(&30_000));
//! ```
//!
//! # Layout
//! - [`code`]: the `EMQ<NAME>` error codes.
//! - [`limits`]: the ranges of every numeric argument and the size limits.

pub mod code;
pub mod limits;

pub use code::Code;
