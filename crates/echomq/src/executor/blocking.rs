//! Connections of their own for commands that block: `EMQ.CLAIM … BLOCK`
//! and `XREAD … BLOCK` hold their connection until they answer, so each
//! waiting command gets one (a multiplexed connection would stall every
//! other call behind it).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::future::BoxFuture;
use redis::aio::ConnectionLike;
use redis::Value;

use crate::Result;

/// Opens one more connection for blocking commands.
pub(super) type Open<C> = Box<dyn Fn() -> BoxFuture<'static, redis::RedisResult<C>> + Send + Sync>;

/// The connections blocking commands wait on: one per command waiting at
/// once (a worker over several queues waits on each), opened as needed and kept.
pub(super) struct Blocking<C> {
    idle: std::sync::Mutex<Vec<Pooled<C>>>,
    /// Opens another when all are busy; without it, a command that finds
    /// every connection busy does not wait.
    open: Option<Open<C>>,
    /// The server's client id of each connection blocked right now, by
    /// ticket: what `CLIENT UNBLOCK` needs to end a wait.
    waiting: std::sync::Mutex<HashMap<u64, i64>>,
    tickets: AtomicU64,
}

/// A blocking connection, and its client id once asked for (`Some(None)`:
/// the server would not say, so it is not asked again).
struct Pooled<C> {
    conn: C,
    id: Option<Option<i64>>,
}

impl<C> Pooled<C> {
    fn new(conn: C) -> Pooled<C> {
        Pooled { conn, id: None }
    }
}

/// A blocked command's entry in [`Blocking::waiting`], removed on drop.
struct Waiting<'a, C> {
    blocking: &'a Blocking<C>,
    ticket: u64,
}

impl<C> Drop for Waiting<'_, C> {
    fn drop(&mut self) {
        self.blocking.waiting.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.ticket);
    }
}

impl<C> Blocking<C> {
    /// A pool of `idle` connections, and `open` to make more.
    pub(super) fn new(idle: Vec<C>, open: Option<Open<C>>) -> Blocking<C> {
        Blocking {
            idle: std::sync::Mutex::new(idle.into_iter().map(Pooled::new).collect()),
            open,
            waiting: std::sync::Mutex::default(),
            tickets: AtomicU64::new(0),
        }
    }

    /// The client ids of the connections blocked right now.
    pub(super) fn waiting_ids(&self) -> Vec<i64> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner()).values().copied().collect()
    }

    /// An idle connection, or a new one; `None` when every one is busy and no
    /// more can be opened.
    async fn take(&self) -> Result<Option<Pooled<C>>> {
        if let Some(pooled) = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop() {
            return Ok(Some(pooled));
        }
        match &self.open {
            Some(open) => Ok(Some(Pooled::new(open().await?))),
            None => Ok(None),
        }
    }

    fn put_back(&self, pooled: Pooled<C>) {
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).push(pooled);
    }

    /// Note that the connection with client id `id` is about to block.
    fn waiting(&self, id: i64) -> Waiting<'_, C> {
        let ticket = self.tickets.fetch_add(1, Ordering::Relaxed);
        self.waiting.lock().unwrap_or_else(|p| p.into_inner()).insert(ticket, id);
        Waiting { blocking: self, ticket }
    }
}

impl<C: ConnectionLike + Send> Blocking<C> {
    /// Send the blocking `command` on a connection of its own: its reply, or
    /// `None` when every connection is busy and no more can be opened.
    pub(super) async fn query(&self, command: &redis::Cmd) -> Result<Option<redis::RedisResult<Value>>> {
        Ok(self.query_then(command, None).await?.map(|(reply, _)| reply))
    }

    /// [`query`](Blocking::query), and `then` right after it on the same
    /// connection, in one pipeline (a WAIT, which covers what this
    /// connection wrote): both replies, `then`'s none when the connection broke.
    pub(super) async fn query_then(
        &self,
        command: &redis::Cmd,
        then: Option<&redis::Cmd>,
    ) -> Result<Option<(redis::RedisResult<Value>, Option<redis::RedisResult<Value>>)>> {
        let Some(mut pooled) = self.take().await? else { return Ok(None) };
        // Its client id, asked once, so that a stopping worker can end the
        // wait with CLIENT UNBLOCK; without it (an ACL that denies CLIENT ID)
        // the wait runs its course.
        if pooled.id.is_none() {
            pooled.id = Some(redis::cmd("CLIENT").arg("ID").query_async(&mut pooled.conn).await.ok());
        }
        let waiting = pooled.id.flatten().map(|id| self.waiting(id));
        let (reply, after) = match then {
            None => (command.query_async(&mut pooled.conn).await, None),
            Some(then) => {
                let mut pipe = redis::pipe();
                pipe.add_command(command.clone()).add_command(then.clone());
                match pipe
                    .ignore_errors()
                    .query_async::<Vec<redis::RedisResult<Value>>>(&mut pooled.conn)
                    .await
                {
                    Ok(mut replies) if replies.len() == 2 => {
                        let after = replies.pop();
                        (replies.remove(0), after)
                    }
                    Ok(replies) => (Err(unexpected(replies.len())), None),
                    Err(err) => (Err(err), None),
                }
            }
        };
        drop(waiting);
        // A connection that broke is dropped, not kept, when another can be
        // opened; a refusal (TRYAGAIN during a resharding) leaves it sound.
        // One kept after it broke reconnects as another client: ask its id again.
        let broke = reply.as_ref().is_err_and(|err| err.is_io_error() || err.is_connection_dropped());
        if !broke {
            self.put_back(pooled);
        } else if self.open.is_none() {
            self.put_back(Pooled::new(pooled.conn));
        }
        Ok(Some((reply, after)))
    }
}

/// A pipeline of two commands that answered another number of replies.
fn unexpected(replies: usize) -> redis::RedisError {
    redis::RedisError::from((
        redis::ErrorKind::UnexpectedReturnType,
        "a pipeline of two commands",
        format!("{replies} replies"),
    ))
}
