//! What a handler gets: [`JobContext`], the job and a way to learn it was
//! taken from the handler, and to report its progress.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde::de::DeserializeOwned;
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

use crate::executor::execute;
use crate::id::JobId;
use crate::queue::{ChildJobs, Queue, TRACEPARENT};
use crate::transition::{ChildrenReply, Claimed, Headers, JobRef, Progress};

/// What a handler gets: the job, and a way to learn its lease was lost.
#[derive(Clone, Debug)]
pub struct JobContext {
    /// The job's id.
    pub id: JobId,
    /// Which attempt this is, from 1: the claim's token.
    pub attempt: u64,
    /// The job's bytes.
    pub payload: Vec<u8>,
    /// The queue's name.
    pub queue: String,
    /// The headers its producer set (`EnqueueOptions::header`); empty: none.
    pub headers: Headers,
    cancel: CancellationToken,
    holder: Holder,
}

/// The claim a handler runs under, for the transitions it may send itself
/// (PROGRESS, ADOPT), fenced by its token: with the worker's maximum
/// attempts, and whether the job now waits for children it named.
#[derive(Clone)]
struct Holder {
    queue: Queue,
    token: u64,
    max_attempts: u64,
    waits: Arc<AtomicBool>,
}

impl std::fmt::Debug for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Holder")
            .field("queue", &self.queue.name())
            .field("token", &self.token)
            .field("waits", &self.waits.load(Ordering::Acquire))
            .finish()
    }
}

impl JobContext {
    /// The context of `job`, claimed from `queue` by a worker whose jobs
    /// have `max_attempts` unless their own say otherwise: its payload and
    /// headers move into it (no copy of them stays with the worker);
    /// `cancel` is what tells the handler its job was taken from it.
    pub(super) fn new(
        job: &mut Claimed,
        queue: &Queue,
        max_attempts: u64,
        cancel: CancellationToken,
    ) -> JobContext {
        JobContext {
            id: job.id.clone(),
            attempt: job.token,
            payload: std::mem::take(&mut job.payload),
            queue: queue.name().to_owned(),
            headers: std::mem::take(&mut job.headers),
            cancel,
            holder: Holder { queue: queue.clone(), token: job.token, max_attempts, waits: Arc::default() },
        }
    }

    /// Whether the job waits for children its handler named
    /// ([`wait_for`](JobContext::wait_for)): its claim is over, and the
    /// worker sends nothing more for it.
    pub(super) fn waits(&self) -> Arc<AtomicBool> {
        self.holder.waits.clone()
    }

    /// The producer's W3C trace context (`traceparent` header), when it set
    /// a well-formed one: the job's span records it, so that a tracing
    /// layer (OpenTelemetry's) can join the job's trace to its producer's.
    pub fn traceparent(&self) -> Option<&str> {
        self.headers.get(TRACEPARENT).map(String::as_str).filter(|value| well_formed_traceparent(value))
    }

    /// The payload read as JSON into `T`: typed jobs.
    ///
    /// # Errors
    /// serde_json's error when the payload is not JSON, or not a `T`.
    pub fn json<T: DeserializeOwned>(&self) -> serde_json::Result<T> {
        serde_json::from_slice(&self.payload)
    }

    /// Completes when the job is taken from this handler: its lease was lost
    /// (another worker may hold it now) or the worker is shutting down. The
    /// handler's task is aborted then anyway; this lets it stop tidily.
    pub fn cancelled(&self) -> WaitForCancellationFuture<'_> {
        self.cancel.cancelled()
    }

    /// Report how far the job got (at most 4096 bytes: a percentage, a JSON
    /// object): kept beside the record, read by `Queue::inspect`, `emq
    /// inspect` and the dashboard, until the job is purged. Fenced: once the
    /// lease is lost it answers [`ErrorKind::Fence`](crate::ErrorKind::Fence) and writes nothing.
    ///
    /// # Errors
    /// [`ErrorKind::Fence`](crate::ErrorKind::Fence) or [`ErrorKind::NoJob`](crate::ErrorKind::NoJob) when the lease was lost;
    /// [`ErrorKind::TooLarge`](crate::ErrorKind::TooLarge) over 4096 bytes, before anything is sent; a
    /// failure of the connection or the server.
    pub async fn progress(&self, value: impl Into<Vec<u8>>) -> crate::Result<()> {
        let progress = Progress { id: self.id.clone(), token: self.holder.token, value: value.into() };
        execute(&**self.holder.queue.executor(), self.holder.queue.keyspace(), &progress).await
    }

    /// A flow's parent's children (protocol 1.6): how each ended and what
    /// it returned, in the byte order of their references; `None` for a
    /// job that is no parent.
    ///
    /// # Errors
    /// A key of the wrong type, a failure of the connection or the server.
    pub async fn children(&self) -> crate::Result<Option<ChildrenReply>> {
        crate::Flows::of(&self.holder.queue).children(&self.id).await
    }

    /// What a flow's parent's children returned, by child: the results of
    /// those done with one (a child that failed, or returned nothing, is
    /// not among them). Empty for a job that is no parent.
    ///
    /// # Errors
    /// As [`children`](JobContext::children).
    pub async fn children_results(&self) -> crate::Result<Vec<(JobRef, Vec<u8>)>> {
        let children = self.children().await?.map(|reply| reply.children).unwrap_or_default();
        Ok(children.into_iter().filter_map(|child| Some((child.child, child.result?))).collect())
    }

    /// Make this job a parent of `children` and wait for them (protocol
    /// 1.6, ADOPT): those it has not named before are added, `open`, and
    /// enqueued, each linked to it; the job leaves its lease without
    /// spending its attempt, and runs again, from the top, once they have
    /// ended. Then this call, naming the same children (their ids are
    /// derived, [`ChildJobs`]), answers `Ok(())`: read their results
    /// ([`children_results`](JobContext::children_results)) and go on.
    ///
    /// ```no_run
    /// # use echomq::worker::{HandlerError, JobContext};
    /// # use echomq::ChildJobs;
    /// async fn render(job: JobContext) -> Result<Vec<u8>, HandlerError> {
    ///     let pages = ChildJobs::new().child("pages", b"1".to_vec()).child("pages", b"2".to_vec());
    ///     job.wait_for(pages).await?; // the first run ends here; the next one goes on
    ///     let results = job.children_results().await?;
    ///     Ok(results.into_iter().flat_map(|(_, bytes)| bytes).collect())
    /// }
    /// ```
    ///
    /// # Errors
    /// [`ErrorKind::Waiting`](crate::ErrorKind::Waiting), not a failure,
    /// when the job now waits: return it (`?`); whatever the handler
    /// returns then is discarded. [`ErrorKind::Argument`](crate::ErrorKind::Argument) for no
    /// children, more than 1000, one named twice, with a unique key or
    /// in a queue the protocol refuses; [`ErrorKind::TooLarge`](crate::ErrorKind::TooLarge) when the
    /// job would have more than 1000 children in all;
    /// [`ErrorKind::Fence`](crate::ErrorKind::Fence) once the lease is
    /// lost; a failure of the connection or the server (once the job
    /// waits, the children not enqueued are resolved `gone` by the
    /// sweep).
    pub async fn wait_for(&self, children: ChildJobs) -> crate::Result<()> {
        let Holder { queue, token, max_attempts, waits } = &self.holder;
        if !queue.adopt((&self.id, *token, *max_attempts), children, waits).await? {
            return Ok(());
        }
        Err(crate::Error::new(
            crate::ErrorKind::Waiting,
            format!("{} waits for its children: it runs again once they have ended", self.id),
        ))
    }

    /// Whether [`cancelled`](JobContext::cancelled) has completed.
    #[must_use]
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
}

/// A W3C `traceparent` of version 00: `00-<32 hex>-<16 hex>-<2 hex>`, lower
/// case, with neither id all zeros.
pub(super) fn well_formed_traceparent(value: &str) -> bool {
    let parts: Vec<&str> = value.split('-').collect();
    let hex = |part: &str, len: usize| {
        part.len() == len && part.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    matches!(parts[..], [version, trace, span, flags]
        if version == "00" && hex(trace, 32) && hex(span, 16) && hex(flags, 2)
            && trace.bytes().any(|b| b != b'0') && span.bytes().any(|b| b != b'0'))
}

#[cfg(test)]
mod tests {
    use super::well_formed_traceparent;

    #[test]
    fn only_a_well_formed_traceparent_is_taken() {
        assert!(well_formed_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        ] {
            assert!(!well_formed_traceparent(bad), "{bad}");
        }
    }
}
