//! The plain commands beside the transitions: what the registries, the
//! event log and the upkeep's reads send (PROTOCOL.md §2, §7.5, §11.3).
//! Each is a Redis command a few words long; Lua and Native send them on
//! their shared transport, Embedded answers them on its store, and the code
//! that uses them (the registries, [`upkeep_due`](super::upkeep_due)) is
//! written once, over [`Plain`].

use std::time::Duration;

use async_trait::async_trait;

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
    /// `ZADD key [GT] score member`, `score` in ms, `None` for now on the
    /// answering executor's clock (this process's for a server, the store's
    /// for Embedded). Answers [`Answer::Int`].
    ZAdd {
        /// The sorted set.
        key: String,
        /// The score; `None` for now.
        score: Option<u64>,
        /// The member.
        member: String,
        /// Only ever raise the member's score (`GT`).
        raise_only: bool,
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
    /// `PEXPIRE key ms`: the key goes after `ms` (at least 1). Answers [`Answer::Int`].
    PExpire(String, u64),
    /// `HGETALL key`. Answers [`Answer::Fields`].
    HGetAll(String),
    /// `DEL key`. Answers [`Answer::Int`].
    Del(String),
    /// `XREVRANGE key + - COUNT 1`: the id of the stream's newest entry.
    /// Answers [`Answer::Text`].
    StreamLast(String),
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
