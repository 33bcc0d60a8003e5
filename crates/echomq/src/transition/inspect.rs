//! INSPECT: read one job (record, last error, progress, result, policy,
//! headers, group). It writes nothing.

use crate::ErrorKind;
use echomq_core::Name;
use echomq_core::Reply;

use super::headers::{decode_headers, Headers};
use super::reply::{array_reply, bytes_reply};
use super::Transition;
use crate::id::JobId;
use crate::record::Record;
use crate::{Error, Result};

/// Read one job's record and what is kept beside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inspect {
    /// The job's id.
    pub id: JobId,
}

/// One job as INSPECT sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inspection {
    /// The record.
    pub record: Record,
    /// The last error a FAIL or REAP left, if any.
    pub error: Option<String>,
    /// The last value its holder reported with PROGRESS, if any.
    pub progress: Option<Vec<u8>>,
    /// What its handler returned, kept by ACK, if anything.
    pub result: Option<Vec<u8>>,
    /// Its own policy (attempts, back-off, timeout), if it was enqueued with one.
    pub policy: Option<echomq_core::Policy>,
    /// Its headers, as its producer set them (empty: none).
    pub headers: Headers,
    /// Its group (protocol 1.7, PROTOCOL.md §7.9), if it was enqueued into
    /// one; a group that is not UTF-8 is shown lossily.
    pub group: Option<String>,
}

impl Transition for Inspect {
    const NAME: Name = Name::Inspect;
    /// `None` when there is no such job.
    type Output = Option<Inspection>;

    fn job(&self) -> Option<&JobId> {
        Some(&self.id)
    }

    fn args(&self) -> Result<Vec<Vec<u8>>> {
        Ok(vec![self.id.as_str().into()])
    }

    fn parse(reply: Reply) -> Result<Option<Inspection>> {
        let mut parts = array_reply("the reply", reply)?.into_iter();
        let mut next = || parts.next().filter(|part| *part != Reply::Nil);
        let (Some(fields), error, progress, result, policy, headers, group) =
            (next(), next(), next(), next(), next(), next(), next())
        else {
            return Err(Error::new(ErrorKind::Reply, "the reply: got an empty array"));
        };
        let fields = array_reply("record", fields)?
            .into_iter()
            .map(|field| bytes_reply("field", field))
            .collect::<Result<Vec<_>>>()?;
        if fields.is_empty() {
            return Ok(None);
        }
        if fields.len() % 2 != 0 {
            return Err(Error::new(
                ErrorKind::Reply,
                format!("the reply: {} record words, not field-value pairs", fields.len()),
            ));
        }
        let pairs = fields.chunks_exact(2).map(|pair| (&pair[0], &pair[1]));
        let bytes = |what, value: Option<Reply>| value.map(|value| bytes_reply(what, value)).transpose();
        let error = bytes("error", error)?.map(|text| String::from_utf8_lossy(&text).into_owned());
        let progress = bytes("the progress", progress)?;
        let result = bytes("result", result)?;
        let policy = bytes("policy", policy)?.map(|text| echomq_core::Policy::read(&text));
        let headers = bytes("headers", headers)?.map_or_else(Headers::new, |text| decode_headers(&text));
        let group = bytes("group", group)?.map(|name| String::from_utf8_lossy(&name).into_owned());
        let record = Record::from_fields(pairs)?;
        Ok(Some(Inspection { record, error, progress, result, policy, headers, group }))
    }

    #[cfg(test)]
    fn edges() -> Vec<Self> {
        use super::edges::id;
        Vec::from_iter([Inspect { id: id(1) }])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(words: &[&str]) -> Reply {
        Reply::Array(words.iter().map(|w| Reply::Bulk(w.as_bytes().to_vec())).collect())
    }

    #[test]
    fn inspect_reads_no_record_as_none_and_refuses_an_odd_record() {
        assert!(matches!(Inspect::parse(Reply::Array(vec![words(&[]), Reply::Nil])), Ok(None)));
        let odd = Reply::Array(vec![words(&["state", "pending", "attempts"]), Reply::Nil]);
        assert!(matches!(Inspect::parse(odd), Err(Error { kind: ErrorKind::Reply, .. })));
    }
}
