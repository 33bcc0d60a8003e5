//! The queue's event log on Redis: a stream read with `XREAD` (blocking on
//! a connection of its own when one is free) and its newest entry with
//! `XREVRANGE`, their replies read into [`StreamEntry`]s.

use crate::ErrorKind;
use std::time::Duration;

use redis::Value;

use super::blocking::Blocking;
use crate::{Error, Result};

/// One entry of a stream: its id (`<ms>-<seq>`) and its fields, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamEntry {
    /// The entry's id.
    pub id: String,
    /// Its fields and values.
    pub fields: Vec<(String, Vec<u8>)>,
}

/// How long a stream read naps between polls when it has no connection of
/// its own to block on.
const STREAM_POLL: Duration = Duration::from_millis(50);

/// [`Plain::read_stream`](super::Plain::read_stream) on Redis: `XREAD … BLOCK` on a connection of
/// its own from `blocking`; without one free, a plain `XREAD` on `conn` and
/// a nap when it found nothing.
pub(super) async fn read_stream_on<C>(
    conn: &C,
    blocking: Option<&Blocking<C>>,
    key: &str,
    after: &str,
    count: usize,
    wait: Duration,
) -> Result<Vec<StreamEntry>>
where
    C: redis::aio::ConnectionLike + Clone + Send,
{
    let mut read = redis::cmd("XREAD");
    read.arg("COUNT").arg(count.max(1));
    if wait.is_zero() {
        read.arg("STREAMS").arg(key).arg(after);
        return stream_entries(read.query_async(&mut conn.clone()).await?);
    }
    let mut blocked = read.clone();
    // BLOCK 0 would wait without limit: wait at least a millisecond instead.
    blocked.arg("BLOCK").arg(wait.as_millis().max(1) as u64).arg("STREAMS").arg(key).arg(after);
    if let Some(blocking) = blocking {
        if let Some(reply) = blocking.query(&blocked).await? {
            return stream_entries(reply?);
        }
    }
    read.arg("STREAMS").arg(key).arg(after);
    let entries = stream_entries(read.query_async(&mut conn.clone()).await?)?;
    if entries.is_empty() {
        tokio::time::sleep(wait.min(STREAM_POLL)).await;
    }
    Ok(entries)
}

/// XREAD's reply, `[[key, entries]]` or nil, as entries.
fn stream_entries(reply: Value) -> Result<Vec<StreamEntry>> {
    match reply {
        Value::Nil => Ok(Vec::new()),
        Value::Array(streams) => match streams.into_iter().next() {
            Some(Value::Array(stream)) => entries_of(stream.into_iter().nth(1).unwrap_or(Value::Nil)),
            Some(Value::Map(mut stream)) if !stream.is_empty() => entries_of(stream.swap_remove(0).1),
            _ => Ok(Vec::new()),
        },
        Value::Map(mut streams) if !streams.is_empty() => entries_of(streams.swap_remove(0).1),
        other => Err(Error::new(ErrorKind::Reply, format!("XREAD answered {other:?}"))),
    }
}

/// A list of stream entries, `[[id, [field, value, …]], …]`.
pub(super) fn entries_of(reply: Value) -> Result<Vec<StreamEntry>> {
    let bad = |what: &Value| Error::new(ErrorKind::Reply, format!("a stream entry: got {what:?}"));
    let text = |value: Value| match value {
        Value::BulkString(bytes) => Ok(bytes),
        Value::SimpleString(text) => Ok(text.into_bytes()),
        other => Err(bad(&other)),
    };
    let Value::Array(entries) = reply else {
        return if reply == Value::Nil { Ok(Vec::new()) } else { Err(bad(&reply)) };
    };
    entries
        .into_iter()
        .map(|entry| {
            let Value::Array(parts) = entry else { return Err(bad(&entry)) };
            let mut parts = parts.into_iter();
            let id = String::from_utf8_lossy(&text(parts.next().unwrap_or(Value::Nil))?).into_owned();
            let words = match parts.next() {
                Some(Value::Array(words)) => words,
                other => return Err(bad(&other.unwrap_or(Value::Nil))),
            };
            let mut words = words.into_iter();
            let mut fields = Vec::new();
            while let (Some(field), Some(value)) = (words.next(), words.next()) {
                fields.push((String::from_utf8_lossy(&text(field)?).into_owned(), text(value)?));
            }
            Ok(StreamEntry { id, fields })
        })
        .collect()
}
