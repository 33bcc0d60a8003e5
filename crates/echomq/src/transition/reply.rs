//! Replies as they come back: the shapes every transition's parser reads
//! (an integer, a count, bytes, an array, exactly `1`), each failing with
//! [`ErrorKind::Reply`] naming what it read.

use crate::ErrorKind;
use echomq_core::Reply;

use crate::{Error, Result};

/// A reply of the wrong shape, saying what was read and what came.
pub(super) fn unexpected(what: &str, reply: &Reply) -> Error {
    Error::new(ErrorKind::Reply, format!("{what}: got {reply:?}"))
}

/// An integer.
pub(super) fn int_reply(what: &str, reply: Reply) -> Result<i64> {
    match reply {
        Reply::Int(n) => Ok(n),
        other => Err(unexpected(what, &other)),
    }
}

/// A count: an integer that is not negative.
pub(super) fn count_reply(what: &str, reply: Reply) -> Result<u64> {
    let n = int_reply(what, reply)?;
    u64::try_from(n).map_err(|_| Error::new(ErrorKind::Reply, format!("{what}: negative count {n}")))
}

/// Bytes: a bulk or simple string.
pub(super) fn bytes_reply(what: &str, reply: Reply) -> Result<Vec<u8>> {
    match reply {
        Reply::Bulk(bytes) => Ok(bytes),
        other => Err(unexpected(what, &other)),
    }
}

/// An array.
pub(super) fn array_reply(what: &str, reply: Reply) -> Result<Vec<Reply>> {
    match reply {
        Reply::Array(items) => Ok(items),
        other => Err(unexpected(what, &other)),
    }
}

/// A reply that must be exactly `1`.
pub(super) fn one_reply(what: &str, reply: Reply) -> Result<()> {
    match reply {
        Reply::Int(1) => Ok(()),
        other => Err(unexpected(what, &other)),
    }
}
