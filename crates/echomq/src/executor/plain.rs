//! The plain commands beside the transitions: what the registries, the
//! event log and the upkeep's reads send (PROTOCOL.md §2, §7.5, §11.3).
//! Each is a Redis command a few words long; Lua and Native send them on
//! their shared transport, Embedded answers them on its store, and the code
//! that uses them (the registries, [`upkeep_due`](super::upkeep_due)) is
//! written once, over [`Plain`]. Here too: each command as Redis spells it
//! and its reply read back (`plain_command`, `answer`), so a new command is
//! this file and Embedded's answer to it.

use std::time::Duration;

use async_trait::async_trait;
use redis::Value;

use super::stream::entries_of;
use super::StreamEntry;
use crate::{Error, ErrorKind, Result};

/// Sends plain commands to the server an executor runs transitions on
/// (see [`Executor::plain`](super::Executor::plain)).
#[async_trait]
pub trait Plain: Send + Sync {
    /// Send `commands` in one round trip (a pipeline; on Embedded, under
    /// one lock), each answered on its own: its [`Answer`], or the
    /// server's refusal (`WRONGTYPE`, `NOPERM`). The outer error is the
    /// connection's.
    async fn send(&self, commands: &[Command]) -> Result<Vec<Result<Answer>>>;

    /// Up to `count` entries of the stream `key` after the entry id `after`
    /// (`0-0` for its start); when there are none yet, wait up to `wait` for
    /// the first (an empty list when none came). The queue's event log
    /// (`emq:{q}:events`) is read this way: [`QueueEvents`](crate::events::QueueEvents).
    async fn read_stream(
        &self,
        key: &str,
        after: &str,
        count: usize,
        wait: Duration,
    ) -> Result<Vec<StreamEntry>>;
}

/// One plain command, as Redis spells it.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// `TIME`: the server's clock. Answers [`Answer::Int`], ms.
    Time,
    /// `ZADD key [XX] [GT] score member`, `score` in ms, `None` for now on
    /// the answering executor's clock (this process's for a server, the
    /// store's for Embedded). Answers [`Answer::Int`].
    ZAdd {
        /// The sorted set.
        key: String,
        /// The score; `None` for now.
        score: Option<u64>,
        /// The member.
        member: String,
        /// Only ever raise the member's score (`GT`).
        raise_only: bool,
        /// Only a member already there (`XX`): never add one.
        existing_only: bool,
    },
    /// `ZRANGE key 0 <count - 1> [REV] WITHSCORES`: the first `count`
    /// members by score, or the last when `latest`. Answers [`Answer::Scored`].
    ZRange {
        /// The sorted set.
        key: String,
        /// How many members.
        count: usize,
        /// The highest scores first (`REV`).
        latest: bool,
    },
    /// `ZCARD key`. Answers [`Answer::Int`].
    ZCard(String),
    /// `ZREM key members…`. Answers [`Answer::Int`].
    ZRem(String, Vec<String>),
    /// `ZREMRANGEBYSCORE key -inf (below`: every member scored under
    /// `below`. Answers [`Answer::Int`].
    ZRemBelow(String, u64),
    /// `EXISTS key`. Answers [`Answer::Int`].
    Exists(String),
    /// `HSET key field value…`. Answers [`Answer::Int`].
    HSet(String, Vec<(String, String)>),
    /// `HSETNX key field value`: the field, unless the hash has it. Answers
    /// [`Answer::Int`]: 1 when written, 0 when it was there.
    HSetNx(String, String, String),
    /// `PEXPIRE key ms`: the key goes after `ms` (at least 1). Answers [`Answer::Int`].
    PExpire(String, u64),
    /// `HGETALL key`. Answers [`Answer::Fields`].
    HGetAll(String),
    /// `HGET key field`. Answers [`Answer::Text`]: the value, or none.
    HGet(String, String),
    /// `DEL key`. Answers [`Answer::Int`].
    Del(String),
    /// `GET key`: a string's value. Answers [`Answer::Text`]: the value, or none.
    Get(String),
    /// `SET key value NX PX ms GET` (Redis 7.0+): the string, unless the key
    /// is there, going after `ms` (at least 1); an upkeep lease taken
    /// (PROTOCOL.md §11.3). Answers [`Answer::Text`]: what the key held
    /// (none when this set it).
    SetIfAbsent {
        /// The key.
        key: String,
        /// Its value, when set.
        value: String,
        /// How long it lives once set, ms.
        ms: u64,
    },
    /// `XREVRANGE key + - COUNT 1`: the id of the stream's newest entry.
    /// Answers [`Answer::Text`].
    StreamLast(String),
    /// `XLEN key`: how many entries a stream holds. Answers [`Answer::Int`].
    StreamLen(String),
    /// `XDEL key ids…`: delete entries of a stream by id (a queue's
    /// notices, once the relay applied them). Answers [`Answer::Int`].
    StreamDelete(String, Vec<String>),
    /// `INFO sections…`. Answers [`Answer::Text`]; `None` where there is no
    /// server (Embedded).
    Info(&'static [&'static str]),
    /// `CONFIG GET name`: the setting's value. Answers [`Answer::Text`];
    /// `None` where there is no server.
    ConfigGet(&'static str),
}

/// A plain command's answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// A count, a flag, or TIME's ms.
    Int(i64),
    /// Members and their scores, in the order asked for.
    Scored(Vec<(String, f64)>),
    /// A hash's fields and values.
    Fields(Vec<(String, String)>),
    /// Text, or none.
    Text(Option<String>),
}

impl Answer {
    /// The integer, or [`ErrorKind::Reply`].
    ///
    /// # Errors
    /// [`ErrorKind::Reply`] for any other answer.
    pub fn int(self) -> Result<i64> {
        match self {
            Answer::Int(n) => Ok(n),
            other => Err(other.unexpected("an integer")),
        }
    }

    /// The members and scores, or [`ErrorKind::Reply`].
    ///
    /// # Errors
    /// [`ErrorKind::Reply`] for any other answer.
    pub fn scored(self) -> Result<Vec<(String, f64)>> {
        match self {
            Answer::Scored(members) => Ok(members),
            other => Err(other.unexpected("members with scores")),
        }
    }

    /// The fields, or [`ErrorKind::Reply`].
    ///
    /// # Errors
    /// [`ErrorKind::Reply`] for any other answer.
    pub fn fields(self) -> Result<Vec<(String, String)>> {
        match self {
            Answer::Fields(fields) => Ok(fields),
            other => Err(other.unexpected("a hash's fields")),
        }
    }

    /// The text, or [`ErrorKind::Reply`].
    ///
    /// # Errors
    /// [`ErrorKind::Reply`] for any other answer.
    pub fn text(self) -> Result<Option<String>> {
        match self {
            Answer::Text(text) => Ok(text),
            other => Err(other.unexpected("text")),
        }
    }

    fn unexpected(&self, wanted: &str) -> Error {
        Error::new(ErrorKind::Reply, format!("{wanted}: got {self:?}"))
    }
}

impl dyn Plain + '_ {
    /// Send one command and take its answer (see [`Plain::send`]).
    ///
    /// # Errors
    /// The connection's failure, or the command's refusal.
    pub async fn one(&self, command: Command) -> Result<Answer> {
        let answers = self.send(std::slice::from_ref(&command)).await?;
        answers.into_iter().next().unwrap_or_else(|| Err(Error::new(ErrorKind::Reply, "no answer")))
    }
}

impl Command {
    /// The command's name, as Redis spells it.
    fn name(&self) -> &'static str {
        match self {
            Command::Time => "TIME",
            Command::ZAdd { .. } => "ZADD",
            Command::ZRange { .. } => "ZRANGE",
            Command::ZCard(_) => "ZCARD",
            Command::ZRem(..) => "ZREM",
            Command::ZRemBelow(..) => "ZREMRANGEBYSCORE",
            Command::Exists(_) => "EXISTS",
            Command::HSet(..) => "HSET",
            Command::HSetNx(..) => "HSETNX",
            Command::PExpire(..) => "PEXPIRE",
            Command::HGetAll(_) => "HGETALL",
            Command::HGet(..) => "HGET",
            Command::Del(_) => "DEL",
            Command::Get(_) => "GET",
            Command::SetIfAbsent { .. } => "SET",
            Command::StreamLast(_) => "XREVRANGE",
            Command::StreamLen(_) => "XLEN",
            Command::StreamDelete(..) => "XDEL",
            Command::Info(_) => "INFO",
            Command::ConfigGet(_) => "CONFIG",
        }
    }
}

/// A plain command as Redis spells it; `now` gives a score of now.
pub(super) fn plain_command(command: &Command, now: impl Fn() -> u64) -> redis::Cmd {
    let mut out = redis::cmd(command.name());
    match command {
        Command::Time => {}
        Command::ZAdd { key, score, member, raise_only, existing_only } => {
            out.arg(key).arg(existing_only.then_some("XX")).arg(raise_only.then_some("GT"));
            out.arg(score.unwrap_or_else(now)).arg(member);
        }
        Command::ZRange { key, count, latest } => {
            out.arg(key).arg(0).arg(count.saturating_sub(1)).arg(latest.then_some("REV")).arg("WITHSCORES");
        }
        Command::ZCard(key)
        | Command::Exists(key)
        | Command::HGetAll(key)
        | Command::Del(key)
        | Command::Get(key)
        | Command::StreamLen(key) => {
            out.arg(key);
        }
        Command::ZRem(key, members) | Command::StreamDelete(key, members) => {
            out.arg(key).arg(members);
        }
        Command::ZRemBelow(key, below) => {
            out.arg(key).arg("-inf").arg(format!("({below}"));
        }
        Command::HSet(key, fields) => {
            out.arg(key).arg(fields);
        }
        Command::HSetNx(key, field, value) => {
            out.arg(key).arg(field).arg(value);
        }
        Command::HGet(key, field) => {
            out.arg(key).arg(field);
        }
        Command::PExpire(key, ms) => {
            out.arg(key).arg((*ms).max(1));
        }
        Command::SetIfAbsent { key, value, ms } => {
            out.arg(key).arg(value).arg("NX").arg("PX").arg((*ms).max(1)).arg("GET");
        }
        Command::StreamLast(key) => {
            out.arg(key).arg("+").arg("-").arg("COUNT").arg(1);
        }
        Command::Info(sections) => {
            out.arg(*sections);
        }
        Command::ConfigGet(name) => {
            out.arg("GET").arg(*name);
        }
    }
    out
}

/// A plain command's reply read as its [`Answer`].
pub(super) fn answer(command: &Command, value: Value) -> Result<Answer> {
    use redis::FromRedisValue;
    let bad = |value: &Value| Error::new(ErrorKind::Reply, format!("{command:?} answered {value:?}"));
    let read = |err: redis::ParsingError| Error::new(ErrorKind::Reply, format!("{command:?}: {err}"));
    Ok(match command {
        Command::Time => match &value {
            Value::Array(time) => Answer::Int(time_ms(time).ok_or_else(|| bad(&value))?),
            _ => return Err(bad(&value)),
        },
        Command::ZRange { .. } => Answer::Scored(scored(&value).ok_or_else(|| bad(&value))?),
        Command::HGetAll(_) => {
            let fields: Vec<(String, String)> = FromRedisValue::from_redis_value(value).map_err(read)?;
            Answer::Fields(fields)
        }
        Command::HGet(..) | Command::Get(_) | Command::SetIfAbsent { .. } => {
            Answer::Text(FromRedisValue::from_redis_value(value).map_err(read)?)
        }
        Command::StreamLast(_) => Answer::Text(entries_of(value)?.into_iter().next().map(|entry| entry.id)),
        Command::Info(_) => Answer::Text(Some(FromRedisValue::from_redis_value(value).map_err(read)?)),
        Command::ConfigGet(_) => {
            let pairs: Vec<(String, String)> = FromRedisValue::from_redis_value(value).map_err(read)?;
            Answer::Text(pairs.into_iter().next().map(|(_, value)| value))
        }
        _ => match value {
            Value::Int(n) => Answer::Int(n),
            Value::Okay => Answer::Int(1),
            other => return Err(bad(&other)),
        },
    })
}

/// `ZRANGE … WITHSCORES`'s members and scores: RESP2's flat list, or
/// RESP3's pairs.
fn scored(value: &Value) -> Option<Vec<(String, f64)>> {
    let Value::Array(items) = value else { return None };
    let text = |value: &Value| match value {
        Value::BulkString(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
        Value::SimpleString(text) => Some(text.clone()),
        _ => None,
    };
    let score = |value: &Value| match value {
        Value::Double(score) => Some(*score),
        Value::Int(n) => Some(*n as f64),
        Value::BulkString(bytes) => std::str::from_utf8(bytes).ok()?.parse().ok(),
        _ => None,
    };
    if items.iter().all(|item| matches!(item, Value::Array(pair) if pair.len() == 2)) {
        return items
            .iter()
            .map(|item| match item {
                Value::Array(pair) => Some((text(&pair[0])?, score(&pair[1])?)),
                _ => None,
            })
            .collect();
    }
    items.chunks(2).map(|pair| Some((text(pair.first()?)?, score(pair.get(1)?)?))).collect()
}

/// `TIME`'s seconds and microseconds as ms.
fn time_ms(time: &[Value]) -> Option<i64> {
    let part = |value: &Value| match value {
        Value::BulkString(bytes) => std::str::from_utf8(bytes).ok()?.parse::<i64>().ok(),
        Value::Int(n) => Some(*n),
        _ => None,
    };
    match time {
        [seconds, micros] => Some(part(seconds)? * 1000 + part(micros)? / 1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(text: &str) -> Value {
        Value::BulkString(text.as_bytes().to_vec())
    }

    #[test]
    fn plain_answers_read_resp2_and_resp3() {
        let range = Command::ZRange { key: "k".into(), count: 1, latest: false };
        let resp2 = Value::Array(vec![bulk("JOB_1"), bulk("999")]);
        let resp3 = Value::Array(vec![Value::Array(vec![bulk("JOB_1"), Value::Double(999.0)])]);
        for value in [resp2, resp3] {
            assert_eq!(answer(&range, value).unwrap(), Answer::Scored(vec![("JOB_1".into(), 999.0)]));
        }
        assert_eq!(answer(&range, Value::Array(Vec::new())).unwrap(), Answer::Scored(Vec::new()));
        let time = Value::Array(vec![bulk("1764522000"), bulk("123456")]);
        assert_eq!(answer(&Command::Time, time).unwrap(), Answer::Int(1_764_522_000_123));
        let config = Value::Array(vec![bulk("maxmemory-policy"), bulk("noeviction")]);
        assert_eq!(
            answer(&Command::ConfigGet("maxmemory-policy"), config).unwrap(),
            Answer::Text(Some("noeviction".into()))
        );
    }
}
