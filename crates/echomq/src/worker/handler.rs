//! What a handler is and what it returns: any `Fn(JobContext) -> Future`
//! whose output is a [`JobOutput`] or an error, and the error that says
//! "retry later" ([`RetryAfter`]).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use super::JobContext;

/// What a handler returns when a job failed: any error, kept as its text.
/// A [`RetryAfter`] is not a failure: the job waits and runs again.
pub type HandlerError = Box<dyn std::error::Error + Send + Sync>;

/// A handler's answer when a downstream said "not now, retry after D" (an
/// HTTP 429 or 503 with Retry-After): the job goes back to wait `after`
/// without spending its attempt, and with `pause_queue` the whole queue's
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
    /// Pause the queue too, not only this job.
    pub pause_queue: bool,
}

impl RetryAfter {
    /// Only this job waits.
    pub fn job(after: Duration) -> RetryAfter {
        RetryAfter { after, pause_queue: false }
    }

    /// This job and the queue's claims wait.
    pub fn queue(after: Duration) -> RetryAfter {
        RetryAfter { after, pause_queue: true }
    }
}

impl std::fmt::Display for RetryAfter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = if self.pause_queue { "the queue" } else { "the job" };
        write!(f, "retry after {:?} ({what} waits)", self.after)
    }
}

impl std::error::Error for RetryAfter {}

/// The handler's future: on success, the result to keep, if any.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<Option<Vec<u8>>, HandlerError>> + Send>>;

/// Runs a job. Any `Fn(JobContext) -> impl Future<Output = Result<R, E>>`
/// is one, where `R` is a [`JobOutput`] (`()` for no result, bytes, a
/// `String`, or [`Json`] of any serde value) and `E` is any error that
/// converts into a [`HandlerError`]: `anyhow::Error`, a `thiserror` enum,
/// `std::io::Error`, or the boxed error itself.
///
/// A closure whose every return is `Ok(..)` or `?` leaves `E` unconstrained,
/// and Rust cannot pick one for it ("type annotations needed"). Name the
/// error on the last `Ok`, or write the handler as an `async fn`:
///
/// ```
/// use echomq::worker::{HandlerError, JobContext};
///
/// let log = |job: JobContext| async move {
///     println!("{}", job.id);
///     Ok::<_, HandlerError>(())
/// };
///
/// async fn send(job: JobContext) -> std::io::Result<()> {
///     std::io::stdout().lock().write_all(&job.payload)
/// }
/// # use std::io::Write;
/// # fn is_handler(_: impl echomq::worker::Handler) {}
/// # is_handler(log);
/// # is_handler(send);
/// ```
pub trait Handler: Send + Sync + 'static {
    /// Run the job: `Ok` acks it (keeping its result, if any), `Err` fails it
    /// (retry or dead), a panic fails it too.
    fn handle(&self, job: JobContext) -> HandlerFuture;
}

impl<F, Fut, R, E> Handler for F
where
    F: Fn(JobContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, E>> + Send + 'static,
    R: JobOutput,
    E: Into<HandlerError>,
{
    fn handle(&self, job: JobContext) -> HandlerFuture {
        let run = self(job);
        Box::pin(async move { run.await.map_err(Into::into)?.into_result() })
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
