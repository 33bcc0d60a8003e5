//! The one error type of the host library: an [`Error`] says what kind of
//! failure it is ([`ErrorKind`], with the protocol's [`Code`] for a refusal),
//! what the server or the check said, and where: the transition, the queue
//! and the job, as fields to match on rather than words in a message.
//!
//! Three kinds tell a caller what is safe to do after a failed call that
//! writes: [`ErrorKind::Unavailable`] (nothing was applied: sending it again
//! is safe), [`ErrorKind::MayHaveLanded`] (the connection broke after the
//! call was sent: it may have been applied) and a refusal (nothing changed).

use std::sync::Arc;

use echomq_core::version::Version;
use echomq_core::{Code, Name};

use crate::id::JobId;
use crate::queue::BatchOpened;

/// What went wrong with an EchoMQ call, and where. Two words wide: the
/// [`kind`](Error::kind) to match on, and the rest behind a box, read by
/// [`text`](Error::text), [`transition`](Error::transition),
/// [`queue`](Error::queue) and [`job`](Error::job).
///
/// ```
/// # use echomq::{Error, ErrorKind};
/// fn lost(err: &Error) -> bool {
///     matches!(err.kind, ErrorKind::Fence | ErrorKind::NoJob)
/// }
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Error {
    /// What kind of failure.
    pub kind: ErrorKind,
    said: Box<Said>,
}

/// What an [`Error`] says besides its kind.
#[derive(Clone, Debug)]
struct Said {
    text: String,
    transition: Option<Name>,
    queue: Option<String>,
    job: Option<JobId>,
    cause: Option<Cause>,
}

/// The error under an [`Error`], kept whole.
#[derive(Clone, Debug)]
enum Cause {
    Redis(redis::RedisError),
    Json(Arc<serde_json::Error>),
    Batch { batch: Box<BatchOpened>, cause: Box<Error> },
}

/// What kind of failure an [`Error`] is. Each protocol refusal (`EMQ<NAME>`,
/// PROTOCOL.md §10) is a kind of its own, whose [`code`](ErrorKind::code)
/// is the protocol's; the host's own checks of the same rules give the same
/// kinds without a round trip.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// `EMQKIND`: a transition got an id whose first three bytes are not `JOB`.
    Kind,
    /// `EMQFENCE`: the token does not hold the job's lease (a stale token, or
    /// the job is no longer active). Nothing changed; the caller lost the job.
    Fence,
    /// `EMQNOJOB`: there is no job with this id.
    NoJob,
    /// `EMQSTATE`: the job's state does not allow the transition.
    State,
    /// `EMQTYPE`: a key holds a value of the wrong Redis type.
    WrongType,
    /// `EMQARG`, or the host's own check of the same rule: a malformed call.
    Argument,
    /// `EMQSIZE`, or the host's own check: a payload or error text over its limit.
    TooLarge,
    /// `EMQDATA`: the queue's stored state is malformed (a record, a setting
    /// or a side key holds a value of the wrong shape). Nothing changed.
    Malformed,
    /// `EMQVERSION`: the queue was written by another major of the protocol.
    /// Nothing changed.
    Version,
    /// `EMQFULL`: the job's group holds as many pending jobs as its most
    /// (protocol 1.7). Nothing changed; enqueue again once it has room.
    Full,
    /// A queue name that is empty, longer than 255 bytes, or holds `{`, `}` or NUL.
    InvalidQueue,
    /// A job id the server's kind gate would refuse (not UTF-8, or its first
    /// three bytes are not `JOB`), or, from [`JobId::branded`](crate::JobId::branded),
    /// one without the full brand: `JOB_` and 26 Crockford base32 characters.
    InvalidId,
    /// A job that could not be written as JSON (`enqueue_json`); nothing was sent.
    Json,
    /// A record that breaks the protocol: a missing or unknown field, an unknown state.
    Record,
    /// A reply of a shape the protocol does not give.
    Reply,
    /// The transition was applied on the master, but fewer replicas than the
    /// executor's [`Replication`](crate::executor::Replication) asks for
    /// confirmed it within its time-out: a failover now could lose it.
    NotReplicated {
        /// Replicas that confirmed the write (WAIT's answer).
        confirmed: u64,
        /// Replicas asked for.
        wanted: u64,
    },
    /// A batch with a callback ([`Queue::enqueue_batch`](crate::Queue::enqueue_batch))
    /// not wholly done: its jobs were enqueued ([`Error::batch`] names them
    /// and the callback), and either the cause ([`std::error::Error::source`])
    /// is [`ErrorKind::NotReplicated`] (the batch is open: its callback comes;
    /// replicas did not confirm it in time), or the batch could not be
    /// opened, tried again, because of the cause: its jobs run without a
    /// callback. Sending the batch again would enqueue its jobs twice.
    Batch,
    /// The server speaks another major version of the protocol than this
    /// host: the host refuses it, and wrote nothing.
    OtherMajor {
        /// The version this host speaks, [`echomq_core::PROTOCOL`].
        host: Version,
        /// The version the server answered.
        found: Version,
    },
    /// The server speaks an earlier minor version of this host's major: it
    /// lacks calls the host makes, so the host refuses it, and wrote nothing.
    /// Upgrade the module.
    OlderMinor {
        /// The version this host speaks, [`echomq_core::PROTOCOL`].
        host: Version,
        /// The version the server answered.
        found: Version,
    },
    /// The call surely did nothing: the server was not reached (the
    /// connection was refused) or answered that it cannot serve now
    /// (loading, TRYAGAIN, CLUSTERDOWN, MASTERDOWN, READONLY) or refuses
    /// writes for now (OOM, MISCONF, BUSY, NOREPLICAS). Sending it again is safe.
    Unavailable,
    /// The connection broke or timed out after the call was sent: it may
    /// have been applied, or not. Reading the job tells; a fenced call sent
    /// again is refused (`EMQFENCE`) if the first one landed.
    MayHaveLanded,
    /// Any other failure of the connection or the server.
    Server,
    /// Not a failure: the job waits for the children that
    /// [`JobContext::wait_for`](crate::worker::JobContext::wait_for) named.
    /// Its handler returns it (`?`), and the job runs again once they have
    /// ended.
    Waiting,
}

impl ErrorKind {
    /// The protocol code of a refusal, `None` for the host's own kinds.
    #[must_use]
    pub const fn code(self) -> Option<Code> {
        Some(match self {
            ErrorKind::Kind => Code::Kind,
            ErrorKind::Fence => Code::Fence,
            ErrorKind::NoJob => Code::NoJob,
            ErrorKind::State => Code::State,
            ErrorKind::WrongType => Code::Type,
            ErrorKind::Argument => Code::Arg,
            ErrorKind::TooLarge => Code::Size,
            ErrorKind::Malformed => Code::Data,
            ErrorKind::Version => Code::Version,
            ErrorKind::Full => Code::Full,
            _ => return None,
        })
    }

    /// The kind of a protocol refusal. Cluster's `TRYAGAIN`, which the
    /// protocol names among its codes, is [`ErrorKind::Unavailable`].
    #[must_use]
    pub const fn of(code: Code) -> ErrorKind {
        match code {
            Code::Kind => ErrorKind::Kind,
            Code::Fence => ErrorKind::Fence,
            Code::NoJob => ErrorKind::NoJob,
            Code::State => ErrorKind::State,
            Code::Type => ErrorKind::WrongType,
            Code::Arg => ErrorKind::Argument,
            Code::Size => ErrorKind::TooLarge,
            Code::Data => ErrorKind::Malformed,
            Code::Version => ErrorKind::Version,
            Code::Full => ErrorKind::Full,
            Code::TryAgain => ErrorKind::Unavailable,
        }
    }
}

/// The result of every EchoMQ call.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error of `kind` saying `text`, at no particular place.
    #[must_use]
    pub fn new(kind: ErrorKind, text: impl Into<String>) -> Error {
        let said = Said { text: text.into(), transition: None, queue: None, job: None, cause: None };
        Error { kind, said: Box::new(said) }
    }

    /// The error for a protocol code and its text, as a transition answers.
    #[must_use]
    pub fn from_code(code: Code, text: impl Into<String>) -> Error {
        let text = text.into();
        if code == Code::TryAgain {
            // Redis Cluster's own code, which the redis crate reads as such.
            let err = redis::RedisError::from((
                redis::ErrorKind::Server(redis::ServerErrorKind::TryAgain),
                "TRYAGAIN",
                text,
            ));
            return Error::from(err);
        }
        Error::new(ErrorKind::of(code), text)
    }

    /// Replicas did not confirm a write in time ([`ErrorKind::NotReplicated`]).
    #[must_use]
    pub fn not_replicated(confirmed: u64, wanted: u64) -> Error {
        Error::new(ErrorKind::NotReplicated { confirmed, wanted }, "")
    }

    /// A batch not wholly done because of `cause` ([`ErrorKind::Batch`]).
    #[must_use]
    pub fn batch_not_done(batch: BatchOpened, cause: Error) -> Error {
        let mut err = Error::new(ErrorKind::Batch, "");
        err.said.cause = Some(Cause::Batch { batch: Box::new(batch), cause: Box::new(cause) });
        err
    }

    /// What the server or the host's check said, without the code: for
    /// `EMQFENCE token does not hold the lease`, `token does not hold the lease`.
    #[must_use]
    pub fn text(&self) -> &str {
        &self.said.text
    }

    /// The transition that failed, when the error came from one.
    #[must_use]
    pub fn transition(&self) -> Option<Name> {
        self.said.transition
    }

    /// The queue the failed call ran on, when it came from one.
    #[must_use]
    pub fn queue(&self) -> Option<&str> {
        self.said.queue.as_deref()
    }

    /// The job the failed call named, when it named one.
    #[must_use]
    pub fn job(&self) -> Option<&JobId> {
        self.said.job.as_ref()
    }

    /// The same error saying `text` instead.
    #[must_use]
    pub(crate) fn saying(mut self, text: String) -> Error {
        self.said.text = text;
        self
    }

    /// The protocol code this error carries, if it is a protocol refusal.
    #[must_use]
    pub fn code(&self) -> Option<Code> {
        self.kind.code()
    }

    /// The batch of an [`ErrorKind::Batch`]: its id, jobs and callback, as
    /// they would have been opened.
    #[must_use]
    pub fn batch(&self) -> Option<&BatchOpened> {
        match &self.said.cause {
            Some(Cause::Batch { batch, .. }) => Some(batch),
            _ => None,
        }
    }

    /// The EchoMQ error under this one: why an [`ErrorKind::Batch`] is not wholly done.
    #[must_use]
    pub fn cause(&self) -> Option<&Error> {
        match &self.said.cause {
            Some(Cause::Batch { cause, .. }) => Some(cause),
            _ => None,
        }
    }

    /// The `redis` crate's error under this one, for a failure of the
    /// connection or the server. For tools (the `protocol` feature); a
    /// user reads [`kind`](Error::kind) and [`std::error::Error::source`].
    #[cfg(feature = "protocol")]
    #[must_use]
    pub fn redis(&self) -> Option<&redis::RedisError> {
        self.redis_error()
    }

    /// [`Error::redis`], the crate's own.
    pub(crate) fn redis_error(&self) -> Option<&redis::RedisError> {
        match &self.said.cause {
            Some(Cause::Redis(err)) => Some(err),
            _ => None,
        }
    }

    /// This error as the caller of `transition` on `queue` (for `job`) sees
    /// it: the place is kept in its fields, and a protocol refusal's or an
    /// unreadable reply's text says it too, as in `EMQFENCE token does not
    /// hold the lease (ack of JOB_… in queue emails)`.
    #[must_use]
    pub fn at(mut self, transition: Name, queue: &str, job: Option<&JobId>) -> Error {
        self.said.transition = Some(transition);
        self.said.queue = Some(queue.to_owned());
        self.said.job = job.cloned();
        self
    }

    /// True when the call surely did nothing ([`ErrorKind::Unavailable`]):
    /// sending it again cannot apply it twice.
    #[must_use]
    pub fn surely_did_nothing(&self) -> bool {
        self.kind == ErrorKind::Unavailable
    }

    /// True when the caller no longer holds the job: a fence or a vanished record.
    #[must_use]
    pub fn is_lost_lease(&self) -> bool {
        matches!(self.kind, ErrorKind::Fence | ErrorKind::NoJob)
    }

    /// Where this error happened, as its message says it: `ack of JOB_… in queue q`.
    fn place(&self) -> Option<String> {
        let (transition, queue) = (self.said.transition?, self.said.queue.as_deref()?);
        Some(match &self.said.job {
            Some(job) => format!("{transition} of {job} in queue {queue}"),
            None => format!("{transition} in queue {queue}"),
        })
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = &self.said.text;
        match self.kind {
            kind if kind.code().is_some() => {
                let code = kind.code().map_or("", Code::as_str);
                write!(f, "{code} {text}")?;
            }
            ErrorKind::Reply => write!(f, "unexpected reply: {text}")?,
            // The place is said only for a refusal and an unreadable reply.
            ErrorKind::InvalidQueue => return write!(f, "invalid queue name: {text}"),
            ErrorKind::InvalidId => return write!(f, "invalid job id: {text}"),
            ErrorKind::Json => return write!(f, "cannot encode the job as JSON: {text}"),
            ErrorKind::Record => return write!(f, "malformed record: {text}"),
            ErrorKind::NotReplicated { confirmed, wanted } => {
                return write!(f, "written, but only {confirmed} of {wanted} replicas confirmed it in time")
            }
            ErrorKind::Batch => {
                let Some(Cause::Batch { batch, cause }) = &self.said.cause else { return write!(f, "batch: {text}") };
                let opened = match cause.kind {
                    ErrorKind::NotReplicated { .. } => "opened, but ",
                    _ => "not opened: ",
                };
                return write!(f, "batch {} ({} jobs enqueued): {opened}{cause}", batch.id, batch.jobs.len());
            }
            ErrorKind::OtherMajor { host, found } => {
                return write!(
                    f,
                    "the echomq module speaks protocol {found}, this host {host}: another major, so nothing was written"
                )
            }
            ErrorKind::OlderMinor { host, found } => {
                return write!(
                    f,
                    "the echomq module speaks protocol {found}, earlier than this host's {host}: it lacks calls this host makes, so nothing was written; upgrade the module"
                )
            }
            // A server's error is said as it said it, or as `saying` said it since.
            _ => return f.write_str(text),
        }
        match self.place() {
            Some(place) => write!(f, " ({place})"),
            None => Ok(()),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.said.cause {
            Some(Cause::Redis(err)) => Some(err),
            Some(Cause::Json(err)) => Some(err.as_ref()),
            Some(Cause::Batch { cause, .. }) => Some(cause.as_ref()),
            None => None,
        }
    }
}

impl From<redis::RedisError> for Error {
    fn from(err: redis::RedisError) -> Error {
        if let Some(code) = err.code().and_then(Code::parse) {
            if code != Code::TryAgain {
                return Error::from_code(code, err.detail().unwrap_or_default());
            }
        }
        if let Some(command) = module_command_unknown(&err) {
            // Not the network: the server answers, without the module.
            let said = format!(
                "the server has no echomq module ({command} is an unknown command): \
                 a restart without --loadmodule? Load the module, or use the Lua executor"
            );
            // No cause kept: the words are this, not the server's.
            return Error::new(ErrorKind::Server, said);
        }
        let kind = if redis_did_nothing(&err) {
            ErrorKind::Unavailable
        } else if err.is_io_error() || err.is_timeout() || err.is_connection_dropped() {
            ErrorKind::MayHaveLanded
        } else {
            ErrorKind::Server
        };
        let mut wrapped = Error::new(kind, err.to_string());
        wrapped.said.cause = Some(Cause::Redis(err));
        wrapped
    }
}

impl From<serde_json::Error> for Error {
    fn from(err: serde_json::Error) -> Error {
        let mut wrapped = Error::new(ErrorKind::Json, err.to_string());
        wrapped.said.cause = Some(Cause::Json(Arc::new(err)));
        wrapped
    }
}

/// The module's command a server without the module refused as unknown
/// (`ERR unknown command 'EMQ.ACK', with args beginning with: …`).
fn module_command_unknown(err: &redis::RedisError) -> Option<String> {
    let said = err.to_string();
    let (_, rest) = said.split_once("unknown command '")?;
    let command = rest.split('\'').next()?;
    command.to_ascii_uppercase().starts_with("EMQ.").then(|| command.to_owned())
}

impl Error {
    /// How a call that failed with this error and is tried again failed,
    /// for the log: the server answered an error, or could not be reached.
    pub(crate) fn failing_words(&self) -> &'static str {
        match self.kind {
            _ if self.redis_error().and_then(redis::RedisError::code) == Some("OOM") => {
                "finds the server full (maxmemory: it refuses writes until memory is freed or raised)"
            }
            ErrorKind::Server => "gets an error from the server",
            _ => "cannot reach the server",
        }
    }
}

/// [`Error::surely_did_nothing`] for the `redis` crate's own error. For
/// tools (the `protocol` feature).
#[cfg(feature = "protocol")]
#[must_use]
pub fn surely_did_nothing(err: &redis::RedisError) -> bool {
    redis_did_nothing(err)
}

/// [`surely_did_nothing`], the crate's own.
pub(crate) fn redis_did_nothing(err: &redis::RedisError) -> bool {
    use redis::{ErrorKind, ServerErrorKind};
    // Refused before the command ran: a script is stopped at its first write
    // (a transition checks everything before it writes), a module command
    // flagged `deny-oom` is not run at all.
    let refused_writes = matches!(err.code(), Some("OOM" | "MISCONF" | "BUSY" | "NOREPLICAS"));
    err.is_connection_refusal()
        || refused_writes
        || matches!(
            err.kind(),
            ErrorKind::Server(
                ServerErrorKind::BusyLoading
                    | ServerErrorKind::TryAgain
                    | ServerErrorKind::ClusterDown
                    | ServerErrorKind::MasterDown
                    | ServerErrorKind::ReadOnly
            )
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_and_an_unreadable_reply_name_their_transition_job_and_queue() {
        let job = JobId::mint();
        let fenced =
            Error::new(ErrorKind::Fence, "token does not hold the lease").at(Name::Ack, "emails", Some(&job));
        assert_eq!(fenced.code(), Some(Code::Fence));
        assert_eq!(
            (fenced.transition(), fenced.queue(), fenced.job()),
            (Some(Name::Ack), Some("emails"), Some(&job))
        );
        assert_eq!(
            fenced.to_string(),
            format!("EMQFENCE token does not hold the lease (ack of {job} in queue emails)")
        );
        let unread = Error::new(ErrorKind::Reply, "the reply: got Int(2)").at(Name::Stats, "emails", None);
        assert_eq!(unread.to_string(), "unexpected reply: the reply: got Int(2) (stats in queue emails)");
        assert_eq!(unread.code(), None);
        let bad = Error::new(ErrorKind::Record, "no state").at(Name::Ack, "emails", Some(&job));
        assert_eq!(bad.to_string(), "malformed record: no state", "other errors as they are");
        assert_eq!(bad.job(), Some(&job), "but their place is kept");
    }

    #[test]
    fn a_broken_connection_may_have_landed_a_refused_one_did_nothing() {
        let broken =
            Error::from(redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::BrokenPipe)));
        assert_eq!(broken.kind, ErrorKind::MayHaveLanded, "{broken}");
        assert!(!broken.surely_did_nothing());
        let refused =
            Error::from(redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused)));
        assert_eq!(refused.kind, ErrorKind::Unavailable, "{refused}");
        assert!(refused.redis_error().is_some_and(redis::RedisError::is_connection_refusal));
        let again = Error::from_code(Code::TryAgain, "slot moving");
        assert_eq!(again.kind, ErrorKind::Unavailable, "{again}");
        let fenced = Error::from(redis::make_extension_error(
            "EMQFENCE".to_owned(),
            Some("token does not hold the lease".to_owned()),
        ));
        assert_eq!((fenced.kind, fenced.text()), (ErrorKind::Fence, "token does not hold the lease"));
        assert!(std::mem::size_of::<Error>() <= 32, "an error is small: {}", std::mem::size_of::<Error>());
    }

    #[test]
    fn an_error_clones_whole() {
        let batch = Error::batch_not_done(
            BatchOpened { id: "b".into(), jobs: vec![JobId::mint()], callback: JobId::mint() },
            Error::not_replicated(0, 1),
        );
        let copy = batch.clone();
        assert_eq!(copy.to_string(), batch.to_string());
        assert!(copy.to_string().contains("opened, but written, but only 0 of 1"), "{copy}");
        assert!(std::error::Error::source(&copy).is_some());
    }
}
