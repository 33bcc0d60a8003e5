//! The one error type of the host library. Protocol refusals (`EMQ<NAME>`
//! replies) become their own variants through [`Code`]; input the host can
//! judge before sending fails the same way without a round trip.

use echomq_core::{Code, Name};

use crate::id::JobId;

/// What can go wrong with an EchoMQ call.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `EMQKIND`: a transition got an id whose first three bytes are not `JOB`.
    #[error("EMQKIND {0}")]
    Kind(String),
    /// `EMQFENCE`: the token does not hold the job's lease (a stale token, or
    /// the job is no longer active). Nothing changed; the caller lost the job.
    #[error("EMQFENCE {0}")]
    Fence(String),
    /// `EMQNOJOB`: there is no job with this id.
    #[error("EMQNOJOB {0}")]
    NoJob(String),
    /// `EMQSTATE`: the job's state does not allow the transition.
    #[error("EMQSTATE {0}")]
    State(String),
    /// `EMQTYPE`: a key holds a value of the wrong Redis type.
    #[error("EMQTYPE {0}")]
    WrongType(String),
    /// `EMQARG`, or the host's own check of the same rule: a malformed call.
    #[error("EMQARG {0}")]
    Argument(String),
    /// `EMQSIZE`, or the host's own check: a payload or error text over its limit.
    #[error("EMQSIZE {0}")]
    TooLarge(String),
    /// `EMQDATA`: the queue's stored state is malformed (a record, a setting
    /// or a side key holds a value of the wrong shape). Nothing changed.
    #[error("EMQDATA {0}")]
    Malformed(String),
    /// `EMQVERSION`: the queue was written by another major of the protocol.
    /// Nothing changed.
    #[error("EMQVERSION {0}")]
    Version(String),
    /// A queue name that is empty, longer than 255 bytes, or holds `{`, `}` or NUL.
    #[error("invalid queue name: {0}")]
    InvalidQueue(String),
    /// A job id the server's kind gate would refuse (not UTF-8, or its first
    /// three bytes are not `JOB`), or, from [`JobId::branded`](crate::JobId::branded),
    /// one without the full brand: `JOB_` and 26 Crockford base32 characters.
    #[error("invalid job id: {0}")]
    InvalidId(String),
    /// A job that could not be written as JSON (`enqueue_json`); nothing was sent.
    #[error("cannot encode the job as JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A record that breaks the protocol: a missing or unknown field, an unknown state.
    #[error("malformed record: {0}")]
    Record(String),
    /// A reply of a shape the protocol does not give.
    #[error("unexpected reply: {0}")]
    Reply(String),
    /// The transition was applied on the master, but fewer replicas than the
    /// executor's [`Replication`](crate::executor::Replication) asks for
    /// confirmed it within its time-out: a failover now could lose it.
    #[error("written, but only {confirmed} of {wanted} replicas confirmed it in time")]
    NotReplicated {
        /// Replicas that confirmed the write (WAIT's answer).
        confirmed: u64,
        /// Replicas asked for.
        wanted: u64,
    },
    /// A batch with a callback
    /// ([`Queue::enqueue_batch_with_callback`](crate::Queue::enqueue_batch_with_callback))
    /// not wholly done: its jobs were enqueued (`batch` names them and the
    /// callback), and either `cause` is [`Error::NotReplicated`] (the batch
    /// is open: its callback comes; replicas did not confirm it in time), or
    /// the batch could not be opened, tried again, because of `cause`: its
    /// jobs run without a callback. Sending the batch again would enqueue
    /// its jobs twice.
    #[error("batch {} ({} jobs enqueued): {}{cause}", .batch.id, .batch.jobs.len(), opened(.cause))]
    Batch {
        /// The batch's id, jobs and callback, as they would have been opened.
        batch: Box<crate::queue::BatchOpened>,
        /// Why it is not wholly done.
        cause: Box<Error>,
    },
    /// The server speaks another major version of the protocol than this
    /// host (`found`, from `by`: the module's `EMQ.VERSION`): the host
    /// refuses it, and wrote nothing.
    #[error("{by} speaks protocol {found}, this host {host}: another major, so nothing was written")]
    OtherMajor {
        /// The version this host speaks, [`echomq_core::PROTOCOL`].
        host: echomq_core::version::Version,
        /// The version the server answered.
        found: echomq_core::version::Version,
        /// What answered it: `the echomq module`.
        by: &'static str,
    },
    /// The server speaks an earlier minor version of this host's major
    /// (`found`, from `by`): it lacks calls the host makes, so the host
    /// refuses it, and wrote nothing. Upgrade the module.
    #[error("{by} speaks protocol {found}, earlier than this host's {host}: it lacks calls this host makes, so nothing was written; upgrade the module")]
    OlderMinor {
        /// The version this host speaks, [`echomq_core::PROTOCOL`].
        host: echomq_core::version::Version,
        /// The version the server answered.
        found: echomq_core::version::Version,
        /// What answered it: `the echomq module`.
        by: &'static str,
    },
    /// The connection or the server failed (anything not an `EMQ` code).
    #[error(transparent)]
    Redis(redis::RedisError),
}

/// What [`Error::Batch`] says of its batch before its cause.
fn opened(cause: &Error) -> &'static str {
    match cause {
        Error::NotReplicated { .. } => "opened, but ",
        _ => "not opened: ",
    }
}

/// The result of every EchoMQ call.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The error for a protocol code and its text, as a transition answers.
    pub fn from_code(code: Code, text: impl Into<String>) -> Error {
        let text = text.into();
        match code {
            Code::Kind => Error::Kind(text),
            Code::Fence => Error::Fence(text),
            Code::NoJob => Error::NoJob(text),
            Code::State => Error::State(text),
            Code::Type => Error::WrongType(text),
            Code::Arg => Error::Argument(text),
            Code::Size => Error::TooLarge(text),
            Code::Data => Error::Malformed(text),
            Code::Version => Error::Version(text),
            // Redis Cluster's own code, which the redis crate reads as such.
            Code::TryAgain => Error::Redis(redis::RedisError::from((
                redis::ErrorKind::Server(redis::ServerErrorKind::TryAgain),
                "TRYAGAIN",
                text,
            ))),
        }
    }

    /// This error again, for each job of a call that failed as a whole (an
    /// error is not `Clone`): a refusal as the same refusal, a failure of the
    /// connection or the server as the same failure (a job of a call whose
    /// connection broke may have been written), any other as its text.
    pub(crate) fn for_each_of_many(&self) -> Error {
        match self {
            Error::Redis(err) => return Error::Redis(err.clone()),
            &Error::NotReplicated { confirmed, wanted } => return Error::NotReplicated { confirmed, wanted },
            _ => {}
        }
        let line = self.to_string();
        match self.code() {
            Some(code) => {
                let text = line.strip_prefix(code.as_str()).map_or(line.as_str(), str::trim_start);
                Error::from_code(code, text)
            }
            None => Error::Reply(line),
        }
    }

    /// The protocol code this error carries, if it is a protocol refusal.
    pub fn code(&self) -> Option<Code> {
        Some(match self {
            Error::Kind(_) => Code::Kind,
            Error::Fence(_) => Code::Fence,
            Error::NoJob(_) => Code::NoJob,
            Error::State(_) => Code::State,
            Error::WrongType(_) => Code::Type,
            Error::Argument(_) => Code::Arg,
            Error::TooLarge(_) => Code::Size,
            Error::Malformed(_) => Code::Data,
            Error::Version(_) => Code::Version,
            _ => return None,
        })
    }

    /// This error as the caller of `transition` on `queue` (for `job`) sees
    /// it: a protocol refusal's text then says where it happened, as in
    /// `EMQFENCE token does not hold the lease (ack of JOB_… in queue emails)`,
    /// and [`code`](Error::code) still gives the code; so does a reply the
    /// host cannot read. Other errors are returned as they are.
    pub fn at(self, transition: Name, queue: &str, job: Option<&JobId>) -> Error {
        let place = || match job {
            Some(job) => format!("{transition} of {job} in queue {queue}"),
            None => format!("{transition} in queue {queue}"),
        };
        // A reply the host cannot read names its transition the same way.
        if let Error::Reply(text) = self {
            return Error::Reply(format!("{text} ({})", place()));
        }
        let Some(code) = self.code() else { return self };
        let text = match self {
            Error::Kind(text)
            | Error::Fence(text)
            | Error::NoJob(text)
            | Error::State(text)
            | Error::WrongType(text)
            | Error::Argument(text)
            | Error::TooLarge(text) => text,
            other => return other,
        };
        Error::from_code(code, format!("{text} ({})", place()))
    }

    /// True when the call surely did nothing: the server was not reached
    /// (the connection was refused) or answered that it cannot serve now
    /// (loading, TRYAGAIN, CLUSTERDOWN, MASTERDOWN, READONLY), or that it
    /// refuses writes for now (OOM at `maxmemory`, MISCONF when it cannot
    /// save, BUSY while a script runs, NOREPLICAS). Retrying it cannot apply
    /// it twice.
    pub fn surely_did_nothing(&self) -> bool {
        matches!(self, Error::Redis(err) if surely_did_nothing(err))
    }

    /// True when the caller no longer holds the job: a fence or a vanished record.
    pub fn is_lost_lease(&self) -> bool {
        matches!(self, Error::Fence(_) | Error::NoJob(_))
    }
}

impl From<redis::RedisError> for Error {
    fn from(err: redis::RedisError) -> Error {
        match err.code().and_then(Code::parse) {
            Some(code) => Error::from_code(code, err.detail().unwrap_or_default()),
            None => Error::Redis(err),
        }
    }
}

/// [`Error::surely_did_nothing`] for the `redis` crate's own error.
pub fn surely_did_nothing(err: &redis::RedisError) -> bool {
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
        let fenced = Error::Fence("token does not hold the lease".into()).at(Name::Ack, "emails", Some(&job));
        assert_eq!(fenced.code(), Some(Code::Fence));
        assert_eq!(
            fenced.to_string(),
            format!("EMQFENCE token does not hold the lease (ack of {job} in queue emails)")
        );
        let unread = Error::Reply("the reply: got Int(2)".into()).at(Name::Stats, "emails", None);
        assert_eq!(unread.to_string(), "unexpected reply: the reply: got Int(2) (stats in queue emails)");
        assert_eq!(unread.code(), None);
        let bad = Error::Record("no state".into()).at(Name::Ack, "emails", Some(&job));
        assert_eq!(bad.to_string(), "malformed record: no state", "other errors as they are");
    }

    #[test]
    fn a_call_that_failed_whole_fails_each_of_its_jobs_the_same_way() {
        let broken = Error::Redis(std::io::Error::from(std::io::ErrorKind::BrokenPipe).into());
        assert!(matches!(broken.for_each_of_many(), Error::Redis(err) if err.is_io_error()), "maybe written");
        assert_eq!(Error::WrongType("pending".into()).for_each_of_many().code(), Some(Code::Type));
        let unconfirmed = Error::NotReplicated { confirmed: 0, wanted: 1 }.for_each_of_many();
        assert!(matches!(unconfirmed, Error::NotReplicated { confirmed: 0, wanted: 1 }));
    }
}
