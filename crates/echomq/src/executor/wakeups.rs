//! Wake-ups for the Lua executor, which cannot block on the server: Redis's
//! keyspace notifications of its pending sets. Every write that adds to a
//! pending set (ENQUEUE, PROMOTE, RELEASE, REAP, RETRY) is a `ZADD` there,
//! and the server announces it on `__keyspace@<db>__:emq:{q}:pending` when
//! `notify-keyspace-events` holds `K` and `z` (or `A`). One subscription per
//! process feeds every idle claim; without it a Lua worker polls.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use tokio::sync::Notify;

use crate::Result;

/// The channel pattern of every queue's pending set, in any database.
const PATTERN: &str = "__keyspace@*__:emq:*:pending";

/// Arrivals in pending sets, as the server announces them.
pub struct Wakeups {
    by_key: Mutex<HashMap<String, Arc<Notify>>>,
    /// False once the subscription ended (the connection dropped): claims poll again.
    alive: AtomicBool,
}

impl Wakeups {
    /// Subscribe to the server's announcements, when it makes them: `None`
    /// when `notify-keyspace-events` lacks `K` and `z` (or the server will not say).
    pub async fn start(client: &redis::Client) -> Result<Option<Arc<Wakeups>>> {
        let mut conn = client.get_multiplexed_async_connection().await?;
        let config: redis::RedisResult<(String, String)> =
            redis::cmd("CONFIG").arg("GET").arg("notify-keyspace-events").query_async(&mut conn).await;
        let Ok((_, flags)) = config else { return Ok(None) };
        if !(flags.contains('K') && (flags.contains('z') || flags.contains('A'))) {
            return Ok(None);
        }
        let mut pubsub = client.get_async_pubsub().await?;
        pubsub.psubscribe(PATTERN).await?;
        let wakeups = Arc::new(Wakeups { by_key: Mutex::default(), alive: AtomicBool::new(true) });
        let listener = wakeups.clone();
        tokio::spawn(async move {
            let mut messages = pubsub.into_on_message();
            while let Some(message) = messages.next().await {
                if let Some((_, key)) = message.get_channel_name().split_once("__:") {
                    listener.arrival(key).notify_waiters();
                }
            }
            // The subscription is gone: wake everyone, and let them poll from now on.
            listener.alive.store(false, Ordering::SeqCst);
            for notify in listener.by_key.lock().unwrap_or_else(|p| p.into_inner()).values() {
                notify.notify_waiters();
            }
        });
        Ok(Some(wakeups))
    }

    /// Whether announcements still arrive.
    pub fn alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }

    /// The signal of one pending set.
    pub(crate) fn arrival(&self, pending_key: &str) -> Arc<Notify> {
        let mut by_key = self.by_key.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        by_key.entry(pending_key.to_owned()).or_default().clone()
    }
}
