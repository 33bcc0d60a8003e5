//! What a handler is and what it returns: any `Fn(JobContext) -> Future`
//! whose output is a [`JobOutput`] or an error, and the error that says
//! "retry later" ([`RetryAfter`]).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use super::context::JobContext;
use crate::queue::Wait;

/// What a handler's error becomes, whatever its type: the worker keeps its
/// text and its causes' as the job's error. A [`RetryAfter`] anywhere in it
/// is not a failure: the job waits and runs again.
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
    #[must_use]
    pub fn job(after: Duration) -> RetryAfter {
        RetryAfter { after, wait: Wait::Job }
    }

    /// This job and the queue's claims wait.
    #[must_use]
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

impl std::error::Error for RetryAfter {
    /// Itself, as a `Deferral`: a wrapper that hides the `RetryAfter`'s
    /// type but forwards its `source` (`anyhow::Error` once boxed, a
    /// `#[error(transparent)]` variant, `io::Error::other`) still shows the
    /// worker a deferral, not a failure.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(Deferral::of(self))
    }
}

/// A [`RetryAfter`] as the last link of its own source chain, where the
/// worker looks for it ([`deferral`]).
#[derive(Debug)]
#[repr(transparent)]
struct Deferral(RetryAfter);

impl Deferral {
    fn of(told: &RetryAfter) -> &Deferral {
        // SAFETY: `Deferral` is `repr(transparent)` over `RetryAfter`, so
        // both have one layout, and the borrow keeps `told`'s lifetime.
        unsafe { &*std::ptr::from_ref(told).cast::<Deferral>() }
    }
}

impl std::fmt::Display for Deferral {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a deferral, not a failure")
    }
}

impl std::error::Error for Deferral {}

/// The [`RetryAfter`] a handler's error carries anywhere in its source
/// chain: what the worker defers by, instead of failing the job.
pub(super) fn deferral(error: &HandlerError) -> Option<RetryAfter> {
    let top: &(dyn std::error::Error + 'static) = &**error;
    std::iter::successors(Some(top), |link| link.source())
        .find_map(|link| link.downcast_ref::<Deferral>())
        .map(|Deferral(told)| *told)
}

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
    /// The bytes to keep, if any.
    ///
    /// # Errors
    /// A [`HandlerError`] fails the job: a value that would not serialize.
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

/// A failed job's error as the worker keeps it: its text, then each cause's
/// it does not show already ("sending to ada: connection refused"). A boxed
/// `anyhow::Error` shows only its outermost context; a `thiserror` message
/// that names its source (`"io: {0}"`) is not repeated.
pub(super) fn error_text(error: &HandlerError) -> String {
    let top: &(dyn std::error::Error + 'static) = &**error;
    let mut text = top.to_string();
    for cause in std::iter::successors(top.source(), |link| link.source()) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text = format!("{text}: {cause}");
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{deferral, error_text, HandlerError, RetryAfter};

    const TOLD: RetryAfter = RetryAfter { after: Duration::from_secs(30), wait: crate::queue::Wait::Queue };

    #[derive(Debug, thiserror::Error)]
    enum Downstream {
        #[error(transparent)]
        Busy(#[from] RetryAfter),
        #[error("mail server busy")]
        Wrapped(#[source] RetryAfter),
        #[error("refused")]
        Refused,
    }

    /// However a handler's error type wraps a `RetryAfter`, the worker finds it.
    #[test]
    fn a_retry_after_is_found_inside_any_wrapper() {
        let wrapped: [(&str, HandlerError); 6] = [
            ("boxed", TOLD.into()),
            ("anyhow", anyhow::Error::from(TOLD).into()),
            ("anyhow with context", anyhow::Error::from(TOLD).context("sending").into()),
            ("thiserror transparent", Downstream::from(TOLD).into()),
            ("thiserror source", Downstream::Wrapped(TOLD).into()),
            ("io::Error", std::io::Error::other(TOLD).into()),
        ];
        for (how, error) in wrapped {
            assert_eq!(deferral(&error), Some(TOLD), "{how}");
        }
    }

    #[test]
    fn any_other_error_is_a_failure() {
        let failures: [HandlerError; 3] =
            [Downstream::Refused.into(), anyhow::anyhow!("no").context("sending").into(), "no".into()];
        for error in failures {
            assert_eq!(deferral(&error), None, "{error}");
        }
    }

    #[derive(Debug, thiserror::Error)]
    enum Mail {
        #[error("mail: {0}")]
        Says(#[source] std::io::Error),
        #[error("mail server down")]
        Down(#[source] std::io::Error),
    }

    #[test]
    fn a_failure_text_shows_each_cause_once() {
        let refused = || std::io::Error::other("connection refused");
        let texts: [(HandlerError, &str); 4] = [
            (
                anyhow::Error::new(refused()).context("sending to ada").into(),
                "sending to ada: connection refused",
            ),
            (Mail::Says(refused()).into(), "mail: connection refused"),
            (Mail::Down(refused()).into(), "mail server down: connection refused"),
            ("no".into(), "no"),
        ];
        for (error, text) in texts {
            assert_eq!(error_text(&error), text);
        }
    }
}
