//! What a failed call did, told so that an operator or a script knows what
//! is safe next: nothing was done (try again), it may have been done (try
//! again with the same id: a duplicate changes nothing), or it was refused
//! (the same call will be refused again).

use std::error::Error as StdError;

use redis::{ErrorKind, RedisError, ServerErrorKind};

/// What a failed call did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The server could not be reached, or said it cannot serve now
    /// (loading its data, failing over, a group at its most pending):
    /// nothing was written.
    NotDone,
    /// The connection broke while the call was on its way, or a write was not
    /// confirmed by replicas: the server may have done it.
    MaybeDone,
    /// The server, or `emq` before sending, refused the call as it is (bad
    /// input, no permission, a bad password): nothing was written, and the
    /// same call will be refused again.
    Refused,
}

impl Failure {
    /// What a call that failed with `err` did.
    pub fn of(err: &(dyn StdError + 'static)) -> Failure {
        use echomq::ErrorKind::{Full, MayHaveLanded, NotReplicated, Unavailable};
        if let Some(err) = err.downcast_ref::<echomq::Error>() {
            return match err.kind {
                // A group at its most pending: nothing written, and room
                // comes back as its jobs are claimed.
                Unavailable | Full => Failure::NotDone,
                MayHaveLanded | NotReplicated { .. } => Failure::MaybeDone,
                _ => Failure::Refused,
            };
        }
        match redis_error(err) {
            Some(err) if echomq::error::surely_did_nothing(err) => Failure::NotDone,
            Some(err) if err.is_io_error() => Failure::MaybeDone,
            _ => Failure::Refused,
        }
    }

    /// What connecting failed with `err` tells: nothing was sent yet, so
    /// either the server is not there (yet: refused, unreachable, its name
    /// not resolved, loading), or it refused us (a bad password, a
    /// certificate not trusted: an I/O error of invalid data).
    pub fn of_connecting(err: &(dyn StdError + 'static)) -> Failure {
        match redis_error(err) {
            Some(err) if echomq::error::surely_did_nothing(err) => Failure::NotDone,
            Some(err) if err.is_io_error() && io_kind(err) != Some(std::io::ErrorKind::InvalidData) => {
                Failure::NotDone
            }
            _ => Failure::Refused,
        }
    }
}

impl Failure {
    /// `emq`'s exit code for it: 3 not done, 4 maybe done, 5 refused (1 is
    /// any other failure, 2 a bad command line).
    pub fn exit_code(self) -> i32 {
        match self {
            Failure::NotDone => 3,
            Failure::MaybeDone => 4,
            Failure::Refused => 5,
        }
    }
}

/// `emq`'s exit code for a command that ended with `err`: the command's own
/// ([`Exit`]); else, when the server or EchoMQ said why, what the failed
/// call did (3 nothing done: the server could not be reached or is loading;
/// 4 maybe done; 5 refused as it is), where a command that only reads did
/// nothing whatever broke (3, never 4); else 1.
pub fn exit_code(err: &(dyn StdError + 'static), only_reads: bool) -> i32 {
    if let Some(exit) = err.downcast_ref::<Exit>() {
        return exit.code;
    }
    if let Some(Connecting(err)) = err.downcast_ref::<Connecting>() {
        return Failure::of_connecting(err.as_ref()).exit_code();
    }
    // What the server or EchoMQ said; an unreadable reply or record is not a refusal.
    let told = match err.downcast_ref::<echomq::Error>() {
        Some(
            echomq::Error { kind: echomq::ErrorKind::Reply, .. }
            | echomq::Error { kind: echomq::ErrorKind::Record, .. }
            | echomq::Error { kind: echomq::ErrorKind::Json, .. },
        ) => false,
        Some(_) => true,
        None => err.downcast_ref::<RedisError>().is_some(),
    };
    if !told {
        return 1;
    }
    if err.downcast_ref::<echomq::Error>().is_some_and(|err| err.kind == echomq::ErrorKind::NoJob) {
        return crate::events::exit::NO_JOB;
    }
    match Failure::of(err) {
        Failure::MaybeDone if only_reads => Failure::NotDone.exit_code(),
        failure => failure.exit_code(),
    }
}

/// A failure to connect (or to find the executor): nothing was sent yet, so
/// it is told as [`Failure::of_connecting`] tells it, never "maybe done".
#[derive(Debug)]
pub struct Connecting(pub Box<dyn StdError + Send + Sync>);

impl std::fmt::Display for Connecting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl StdError for Connecting {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.0.source()
    }
}

/// A failure that ends `emq` with its own exit code, and says why.
#[derive(Debug)]
pub struct Exit {
    pub code: i32,
    pub message: String,
}

impl Exit {
    /// What a failed call did, with its exit code (3, 4 or 5).
    pub fn new(failure: Failure, message: String) -> Exit {
        Exit::with_code(failure.exit_code(), message)
    }

    /// A command line `emq` will not act on, said before anything was sent:
    /// exit 2, as clap's own usage errors.
    pub fn usage(message: impl Into<String>) -> Exit {
        Exit::with_code(2, message.into())
    }

    /// A command's own ending, by code (`emq result`'s, say).
    pub fn with_code(code: i32, message: String) -> Exit {
        Exit { code, message }
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for Exit {}

/// The redis error in `err`, the client's own or inside an EchoMQ error.
fn redis_error<'a>(err: &'a (dyn StdError + 'static)) -> Option<&'a RedisError> {
    if let Some(Connecting(err)) = err.downcast_ref::<Connecting>() {
        return redis_error(err.as_ref());
    }
    match err.downcast_ref::<echomq::Error>() {
        Some(err) => err.redis(),
        None => err.downcast_ref::<RedisError>(),
    }
}

/// The kind of the I/O error behind `err`, when there is one (the client
/// keeps it behind an `Arc`).
fn io_kind(err: &RedisError) -> Option<std::io::ErrorKind> {
    let source = StdError::source(err)?;
    let io = source.downcast_ref::<std::io::Error>().or_else(|| {
        let shared = source.downcast_ref::<std::sync::Arc<dyn StdError + Send + Sync>>()?;
        shared.downcast_ref::<std::io::Error>()
    });
    io.map(std::io::Error::kind)
}

/// What `emq` says when a command ends with `err`: [`explain`]ed, and when
/// the server could not be reached, which one (`address`, when known).
pub fn said(err: &(dyn StdError + 'static), address: Option<&str>) -> String {
    match (redis_error(err), address) {
        (Some(redis), Some(address))
            if redis.is_connection_refusal() || redis.is_timeout() || redis.is_io_error() =>
        {
            format!("{address}: {}", explain(err))
        }
        _ => explain(err),
    }
}

/// What to do about a key of a queue's that holds another type.
const MISPLACED: &str = "rename or delete that key (after saving what it holds, \
    which is not EchoMQ's) and the queue works again";

/// `err` in words an operator reads, rather than the client's error names.
pub fn explain(err: &(dyn StdError + 'static)) -> String {
    if let Some(echomq::Error { kind: echomq::ErrorKind::WrongType, .. }) = err.downcast_ref() {
        return format!("{err}: {MISPLACED}");
    }
    let Some(redis) = redis_error(err) else { return err.to_string() };
    if redis.code() == Some("WRONGTYPE") || redis.to_string().contains("WRONGTYPE") {
        return format!(
            "a key of the queue holds another type than EchoMQ keeps there ({err}); \
             `emq stats QUEUE` names it: {MISPLACED}"
        );
    }
    let what = match redis.kind() {
        _ if redis.is_connection_refusal() => {
            "the server refused the connection: it is down or not listening"
        }
        _ if redis.is_timeout() => "the server did not answer in time",
        ErrorKind::Io if redis.to_string().contains("failed to lookup address") => {
            "the host named in --url is not known (its name does not resolve)"
        }
        ErrorKind::Io => "the connection to the server broke",
        ErrorKind::Parse | ErrorKind::UnexpectedReturnType
            if !matches!(err.downcast_ref(), Some(echomq::Error { kind: echomq::ErrorKind::Reply, .. })) =>
        {
            return "the server at --url did not answer as Redis does: is that port a Redis server's?"
                .to_owned();
        }
        ErrorKind::Server(ServerErrorKind::BusyLoading) => "the server is loading its data after a restart",
        ErrorKind::Server(ServerErrorKind::TryAgain) => "the cluster is moving the queue's slot",
        ErrorKind::Server(ServerErrorKind::ClusterDown | ServerErrorKind::MasterDown) => {
            "the cluster or its master is down"
        }
        ErrorKind::Server(ServerErrorKind::ReadOnly) => {
            "the server is a read-only replica (a failover under way?)"
        }
        ErrorKind::AuthenticationFailed => "the server refused the user or password",
        ErrorKind::Server(ServerErrorKind::NoPerm) => "the user may not run this command (ACL)",
        _ => match redis.code() {
            Some("OOM") => {
                "the server is full (maxmemory) and refuses writes until memory is freed or raised"
            }
            Some("MISCONF") => "the server refuses writes: it cannot save to disk (see its log)",
            Some("BUSY") => "the server is busy running a long script",
            Some("NOREPLICAS") => {
                "the server has too few replicas in sync to accept writes (min-replicas-to-write)"
            }
            _ => return err.to_string(),
        },
    };
    format!("{what} ({err})")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(kind: ServerErrorKind, code: &'static str) -> echomq::Error {
        echomq::Error::from(RedisError::from((ErrorKind::Server(kind), code, "detail".to_owned())))
    }

    fn io(kind: std::io::ErrorKind) -> echomq::Error {
        echomq::Error::from(RedisError::from(std::io::Error::from(kind)))
    }

    #[test]
    fn each_failure_says_what_was_done() {
        let oom = redis::make_extension_error("OOM".to_owned(), Some("command not allowed".to_owned()));
        let cases: [(echomq::Error, Failure); 10] = [
            (io(std::io::ErrorKind::ConnectionRefused), Failure::NotDone),
            (echomq::Error::from(oom), Failure::NotDone),
            (server(ServerErrorKind::BusyLoading, "LOADING"), Failure::NotDone),
            (server(ServerErrorKind::ReadOnly, "READONLY"), Failure::NotDone),
            (io(std::io::ErrorKind::BrokenPipe), Failure::MaybeDone),
            (echomq::Error::not_replicated(0, 1), Failure::MaybeDone),
            (
                echomq::Error::new(echomq::ErrorKind::MayHaveLanded, "the ack may have landed"),
                Failure::MaybeDone,
            ),
            (echomq::Error::new(echomq::ErrorKind::Full, "group g holds its most pending"), Failure::NotDone),
            (echomq::Error::new(echomq::ErrorKind::TooLarge, "payload"), Failure::Refused),
            (server(ServerErrorKind::NoPerm, "NOPERM"), Failure::Refused),
        ];
        for (err, failure) in cases {
            assert_eq!(Failure::of(&err), failure, "{err}");
        }
        assert_eq!(Failure::of_connecting(&io(std::io::ErrorKind::ConnectionReset)), Failure::NotDone);
        // A certificate not trusted: rustls's error, as I/O of invalid data.
        assert_eq!(Failure::of_connecting(&io(std::io::ErrorKind::InvalidData)), Failure::Refused);
        let loading = explain(&server(ServerErrorKind::BusyLoading, "LOADING"));
        assert!(loading.starts_with("the server is loading its data"), "{loading}");
    }

    #[test]
    fn every_command_exits_with_what_its_failure_did() {
        let timed_out = || Box::new(io(std::io::ErrorKind::TimedOut)) as Box<dyn StdError + Send + Sync>;
        // A write whose connection broke may have been done; a read did nothing.
        assert_eq!(exit_code(&io(std::io::ErrorKind::TimedOut), false), 4);
        assert_eq!(exit_code(&io(std::io::ErrorKind::TimedOut), true), 3);
        // Connecting sent nothing, whatever broke; a password refused is refused.
        assert_eq!(exit_code(&Connecting(timed_out()), false), 3);
        let auth = RedisError::from((ErrorKind::AuthenticationFailed, "auth"));
        assert_eq!(exit_code(&Connecting(Box::new(echomq::Error::from(auth))), false), 5);
        assert_eq!(exit_code(&server(ServerErrorKind::NoPerm, "NOPERM"), true), 5);
        // A reply it cannot read is no refusal; nor is emq's own failure.
        assert_eq!(exit_code(&echomq::Error::new(echomq::ErrorKind::Reply, "garbled"), false), 1);
        assert_eq!(exit_code(&Exit::with_code(9, "no such job".into()), true), 9);
        assert_eq!(exit_code(&std::io::Error::other("stdout closed"), true), 1);
    }
}
