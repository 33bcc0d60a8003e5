//! What a handler is and what it returns: any `Fn(JobContext) -> Future`
//! whose output is a [`JobOutput`] or an error, and the error that says
//! "retry later" ([`RetryAfter`]).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use super::JobContext;
use crate::queue::Wait;

/// What a handler returns when a job failed: any error, kept as its text.
/// A [`RetryAfter`] is not a failure: the job waits and runs again.
pub type HandlerError = Box<dyn std::error::Error + Send + Sync>;

/// A handler's answer when a downstream said "not now, retry after D" (an
/// HTTP 429 or 503 with Retry-After): the job goes back to wait `after`
/// without spending its attempt, and with [`Wait::Queue`] the whole queue's
/// claims wait as long, for every worker (DEFER, PROTOCOL.md §7).
///
/// ```
/// # use std::time::Duration;
/// # use echomq::worker::{HandlerError, RetryAfter};
/// let told: HandlerError = RetryAfter::queue(Duration::from_secs(30)).into();
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryAfter {
    /// How long to wait.
    pub after: Duration,
    /// Who waits: the job, or the whole queue.
    pub wait: Wait,
}

impl RetryAfter {
    /// Only this job waits.
    pub fn job(after: Duration) -> RetryAfter {
        RetryAfter { after, wait: Wait::Job }
    }

    /// This job and the queue's claims wait.
    pub fn queue(after: Duration) -> RetryAfter {
        RetryAfter { after, wait: Wait::Queue }
    }
}

impl std::fmt::Display for RetryAfter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.wait {
            Wait::Job => "the job",
            Wait::Queue => "the queue",
        };
        write!(f, "retry after {:?} ({what} waits)", self.after)
    }
}

impl std::error::Error for RetryAfter {}

/// The handler's future: on success, the result to keep, if any.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<Option<Vec<u8>>, HandlerError>> + Send>>;

/// Runs a job. Any `Fn(JobContext) -> impl Future<Output = Result<R, HandlerError>>`
/// is one, where `R` is a [`JobOutput`]: `()` for no result, bytes, a
/// `String`, or [`Json`] of any serde value.
pub trait Handler: Send + Sync + 'static {
    /// Run the job: `Ok` acks it (keeping its result, if any), `Err` fails it
    /// (retry or dead), a panic fails it too.
    fn handle(&self, job: JobContext) -> HandlerFuture;
}

impl<F, Fut, R> Handler for F
where
    F: Fn(JobContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, HandlerError>> + Send + 'static,
    R: JobOutput,
{
    fn handle(&self, job: JobContext) -> HandlerFuture {
        let run = self(job);
        Box::pin(async move { run.await?.into_result() })
    }
}

/// What a handler returns when its job succeeded: ACK keeps it as the job's
/// result (`Queue::result`, `Queue::wait`), unless it is `()`.
pub trait JobOutput: Send + 'static {
    /// The bytes to keep, if any; an error fails the job (a value that would
    /// not serialize).
    fn into_result(self) -> Result<Option<Vec<u8>>, HandlerError>;
}

impl JobOutput for () {
    fn into_result(self) -> Result<Option<Vec<u8>>, HandlerError> {
        Ok(None)
    }
}

impl JobOutput for Vec<u8> {
    fn into_result(self) -> Result<Option<Vec<u8>>, HandlerError> {
        Ok(Some(self))
    }
}

impl JobOutput for String {
    fn into_result(self) -> Result<Option<Vec<u8>>, HandlerError> {
        Ok(Some(self.into_bytes()))
    }
}

impl<T: JobOutput> JobOutput for Option<T> {
    fn into_result(self) -> Result<Option<Vec<u8>>, HandlerError> {
        self.map_or(Ok(None), T::into_result)
    }
}

/// A result kept as JSON: `Ok(Json(value))` from a handler.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Json<T>(pub T);

impl<T: serde::Serialize + Send + 'static> JobOutput for Json<T> {
    fn into_result(self) -> Result<Option<Vec<u8>>, HandlerError> {
        Ok(Some(serde_json::to_vec(&self.0)?))
    }
}
