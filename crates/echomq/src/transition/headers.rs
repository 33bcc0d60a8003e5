//! A job's headers: a small string map beside its record, kept as a JSON
//! object of strings (PROTOCOL.md §7.6); ENQUEUE sends them, CLAIM and
//! INSPECT hand them back.

use crate::ErrorKind;
use echomq_core::limits;

use crate::{Error, Result};

/// A job's headers: names to values, kept as a JSON object of strings in
/// `emq:{q}:headers` (PROTOCOL.md §7.6), at most
/// [`MAX_HEADERS`](limits::MAX_HEADERS) bytes so encoded.
pub type Headers = std::collections::BTreeMap<String, String>;

/// `headers` as they travel: a JSON object of strings, checked against the limit.
pub(crate) fn encode_headers(headers: &Headers) -> Result<Vec<u8>> {
    let encoded = serde_json::to_vec(headers)?;
    if encoded.len() > limits::MAX_HEADERS {
        return Err(Error::new(
            ErrorKind::Argument,
            format!("HEADERS must be 1 to {} bytes", limits::MAX_HEADERS),
        ));
    }
    Ok(encoded)
}

/// Headers as stored; text that is not a JSON object of strings (another
/// speaker's mistake) reads as none, with a warning.
pub(crate) fn decode_headers(encoded: &[u8]) -> Headers {
    serde_json::from_slice(encoded).unwrap_or_else(|err| {
        tracing::warn!(error = %err, "a job's headers are not a JSON object of strings; read as none");
        Headers::new()
    })
}
