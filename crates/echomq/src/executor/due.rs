//! What each queue's upkeep has to do now, read before it is done: a
//! REAP, PROMOTE, TRIM, SETTLE and SCHEDULES that find nothing cost a
//! Lua server 30-50 µs each, a worker of a thousand queues runs them four
//! times a second, and the server had no time left for jobs. Seven plain
//! reads a queue (its sets' heads and sizes, PROTOCOL.md §2), a few µs in
//! all, in one round trip for many queues, say which of them would find
//! anything (§11.3).

use std::sync::atomic::{AtomicBool, Ordering};

use redis::aio::ConnectionLike;
use redis::Value;

use super::UpkeepDue;
use crate::keyspace::{Keyspace, Role};
use crate::record::State;

/// The reads for one queue, in the order [`read`] parses them.
const READS: usize = 7;

/// Read what each of `queues` has due, on `conn`, in one round trip. `None`
/// when it cannot be known: the round trip failed, or the user may not
/// read (an ACL without these commands: said once, through `refused`, and
/// not asked again).
pub(super) async fn read<C>(conn: &C, queues: &[Keyspace], refused: &AtomicBool) -> Option<Vec<UpkeepDue>>
where
    C: ConnectionLike + Clone + Send,
{
    if refused.load(Ordering::SeqCst) {
        return None;
    }
    let mut pipe = redis::pipe();
    pipe.cmd("TIME");
    for keys in queues {
        for set in [keys.delayed(), keys.active(), keys.ticks()] {
            pipe.cmd("ZRANGE").arg(set).arg(0).arg(0).arg("WITHSCORES");
        }
        pipe.cmd("EXISTS").arg(keys.role(Role::BatchOpen, None));
        for state in [State::Done, State::Dead, State::Cancelled] {
            pipe.cmd("ZCARD").arg(keys.state(state));
        }
    }
    let replies =
        pipe.ignore_errors().query_async::<Vec<redis::RedisResult<Value>>>(&mut conn.clone()).await.ok()?;
    if replies.iter().any(|reply| reply.as_ref().is_err_and(|err| err.code() == Some("NOPERM"))) {
        if !refused.swap(true, Ordering::SeqCst) {
            tracing::info!(
                "the server refused the upkeep's reads: every upkeep call is made each period (grant +time +zrange +exists +zcard to skip those with nothing to do, SECURITY.md)"
            );
        }
        return None;
    }
    let now = match replies.first() {
        Some(Ok(Value::Array(time))) => time_ms(time)?,
        _ => return None,
    };
    Some(replies[1..].chunks(READS).map(|reads| due(reads, now)).collect())
}

/// One queue's [`UpkeepDue`] from its seven reads; a read that failed (a key of
/// the wrong type) leaves its part due, so that the transition says what is wrong.
fn due(reads: &[redis::RedisResult<Value>], now: f64) -> UpkeepDue {
    let head_due = |at: usize| match reads.get(at) {
        Some(Ok(value)) => head_score(value).is_none_or(|score| score.is_some_and(|score| score <= now)),
        _ => true,
    };
    let size = |at: usize| match reads.get(at) {
        Some(Ok(Value::Int(n))) => u64::try_from(*n).ok(),
        _ => None,
    };
    UpkeepDue {
        promote: head_due(0),
        reap: head_due(1),
        fire: head_due(2),
        settle: !matches!(reads.get(3), Some(Ok(Value::Int(0)))),
        finished: [size(4), size(5), size(6)],
    }
}

/// A `ZRANGE … 0 0 WITHSCORES` reply's score: `Some(None)` for an empty
/// set, `None` for a reply that is neither (which counts as due).
fn head_score(value: &Value) -> Option<Option<f64>> {
    let Value::Array(items) = value else { return None };
    let score = match items.as_slice() {
        [] => return Some(None),
        // RESP2: member, score. RESP3: [[member, score]].
        [_, score] => score,
        [Value::Array(pair)] if pair.len() == 2 => &pair[1],
        _ => return None,
    };
    match score {
        Value::Double(score) => Some(Some(*score)),
        Value::BulkString(bytes) => std::str::from_utf8(bytes).ok()?.parse().ok().map(Some),
        _ => None,
    }
}

/// `TIME`'s seconds and microseconds as ms.
fn time_ms(time: &[Value]) -> Option<f64> {
    let part = |value: &Value| match value {
        Value::BulkString(bytes) => std::str::from_utf8(bytes).ok()?.parse::<f64>().ok(),
        Value::Int(n) => Some(*n as f64),
        _ => None,
    };
    match time {
        [seconds, micros] => Some(part(seconds)? * 1000.0 + (part(micros)? / 1000.0).floor()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(text: &str) -> Value {
        Value::BulkString(text.as_bytes().to_vec())
    }

    fn head(score: Option<&str>) -> redis::RedisResult<Value> {
        Ok(Value::Array(score.map_or_else(Vec::new, |score| vec![bulk("JOB_1"), bulk(score)])))
    }

    /// A set's head is due at or before now; an empty set has nothing
    /// due; a failed read (a key of the wrong type) counts as due, so the
    /// transition runs and says what is wrong.
    #[test]
    fn each_part_is_due_by_its_sets_head() {
        let wrong: redis::RedisResult<Value> = Err(redis::RedisError::from((
            redis::ErrorKind::Server(redis::ServerErrorKind::ResponseError),
            "WRONGTYPE",
        )));
        let reads = [
            head(Some("1000")),
            head(Some("1001")),
            head(None),
            Ok(Value::Int(1)),
            Ok(Value::Int(7)),
            wrong,
            Ok(Value::Int(0)),
        ];
        let due = due(&reads, 1000.0);
        assert_eq!(
            due,
            UpkeepDue {
                promote: true,
                reap: false,
                fire: false,
                settle: true,
                finished: [Some(7), None, Some(0)]
            }
        );
        let idle = [
            head(None),
            head(None),
            head(None),
            Ok(Value::Int(0)),
            Ok(Value::Int(0)),
            Ok(Value::Int(0)),
            Ok(Value::Int(0)),
        ];
        assert_eq!(super::due(&idle, 1000.0), UpkeepDue { finished: [Some(0); 3], ..UpkeepDue::default() });
        // RESP3's pair, and a double.
        let resp3 = Value::Array(vec![Value::Array(vec![bulk("JOB_1"), Value::Double(999.0)])]);
        assert_eq!(head_score(&resp3), Some(Some(999.0)));
        assert_eq!(time_ms(&[bulk("1764522000"), bulk("123456")]), Some(1_764_522_000_123.0));
    }
}
