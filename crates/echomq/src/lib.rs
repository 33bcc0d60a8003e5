//! EchoMQ: a job queue whose state lives in Redis, spoken as a small, fixed
//! protocol (see `PROTOCOL.md`): one record hash per job (`state`, `attempts`,
//! `payload`), a sorted set per state, all of a queue under one `{queue}`
//! hashtag, and atomic transitions. The `attempts` counter is a fencing token:
//! each claim mints a new one, and a worker holding an old one changes nothing.
//!
//! ```no_run
//! # async fn demo() -> echomq::Result<()> {
//! use std::time::Duration;
//! let client = redis::Client::open("redis://127.0.0.1:6390/")?;
//! let q = echomq::Queue::new(echomq::connect(&client).await?, "emails")?; // the module, else Lua
//! let id = q.enqueue(b"hello".to_vec()).await?;
//! if let Some(job) = q.claim(Duration::from_secs(30)).await? {
//!     assert_eq!(job.id, id);
//!     job.ack().await?; // ErrorKind::Fence if the lease was lost meanwhile
//! }
//! # Ok(()) }
//! ```
//!
//! # Layout
//! - [`keyspace`]: queue names and every key; nothing else formats a key.
//! - [`id`]: [`JobId`], branded and minted.
//! - [`record`]: the record's fields and [`State`].
//! - [`transition`]: one type per transition (keys, arguments, reply parser).
//! - [`executor`]: the [`Executor`] trait (the `via` a queue runs on),
//!   [`execute`](executor::execute) for a typed transition, and the three
//!   executors: Lua scripts, the native module, embedded in-process.
//! - [`queue`]: [`Queue`], the API built on them; [`Lease`], a claimed
//!   job's handle; [`Schedules`], a queue's schedules; [`QueueGroups`],
//!   its fair groups (a tenant's jobs take turns with the others').
//! - [`schedule`]: [`Schedule`]: cron and interval schedules, their
//!   definitions, tick times and tick ids (the host's half; the server stores).
//! - [`worker`]: [`Worker`](worker::Worker): concurrency, heartbeats, retries, shutdown.
//! - [`events`]: [`QueueEvents`], a reader of a queue's event log.
//! - the worker registry: [`workers()`] lists the live workers
//!   ([`WorkerInfo`]), their queues and the jobs they run now
//!   ([`workers_read_only`]: the same, writing nothing).
//! - [`error`]: [`Error`], what went wrong and where, and its [`ErrorKind`].
//! - `otel` (the `otel` feature): a job's OpenTelemetry trace, from its
//!   producer's span to each attempt's run (docs/tracing.md).

// Without the `protocol` feature, the raw layer's items are the crate's
// own: the docs name them without a link (`cargo doc --features protocol`,
// as scripts/test builds them, checks every link).
#![cfg_attr(
    not(feature = "protocol"),
    allow(rustdoc::private_intra_doc_links, rustdoc::broken_intra_doc_links)
)]
#![warn(
    missing_docs,
    unreachable_pub,
    missing_debug_implementations,
    clippy::must_use_candidate,
    clippy::missing_errors_doc
)]

pub mod error;
pub mod events;
pub mod executor;
pub mod id;
pub mod keyspace;
#[cfg(feature = "otel")]
pub mod otel;
pub mod partition;
pub mod queue;
pub mod record;
pub mod schedule;
#[cfg(feature = "protocol")]
pub mod transition;
#[cfg(not(feature = "protocol"))]
#[allow(unreachable_pub)]
mod transition;
pub mod worker;
#[allow(unreachable_pub)]
mod workers;

/// The protocol's limits (PROTOCOL.md §11.1), which the host checks before
/// it sends. The raw protocol layer: with the `protocol` feature.
#[cfg(feature = "protocol")]
pub use echomq_core::limits;
/// The transitions, by name. The raw protocol layer: with the `protocol` feature.
#[cfg(feature = "protocol")]
pub use echomq_core::Name;
pub use echomq_core::{Backoff, Code, Policy, Version, PROTOCOL};
pub use error::{Error, ErrorKind, Result};
pub use events::{Event, EventKind, QueueEvents, StreamId};
pub use executor::{connect, connect_with, Embedded, Executor, Lua, Native, Replication};
#[cfg(feature = "cluster")]
pub use executor::{connect_cluster, ByFirstKey};
pub use id::JobId;
pub use keyspace::Keyspace;
pub use partition::Partitioned;
pub use queue::{
    BatchOpened, ChildJobs, Delete, Drain, EnqueueOptions, Enqueued, EventsFrom, Finished, Flow, FlowAdded,
    Flows, Lease, Leases, Queue, QueueGroups, RetryPolicy, Schedules, Upkeep, Wait, SWEEP_GRACE, TRACEPARENT,
};
pub use record::{Record, State};
pub use schedule::{Missed, Schedule, Scheduled, When};
pub use transition::{
    Admission, Child, ChildrenReply, Claimed, Config, CountsReply, EventLog, Failed, Group, GroupInfo,
    Groups, GroupsPage, Headers, Held, Inspection, JobRef, Limit, Link, OnFailure, Outcome, Rate, Retention,
    Settings, Span, Standing, StatsReply, Tally, Unique,
};
pub use workers::{workers, workers_read_only, RunningJob, WorkerInfo};
