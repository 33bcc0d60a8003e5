//! Wake-ups for the Lua executor, which cannot block on the server: Redis's
//! keyspace notifications of its pending sets. Every write that adds to a
//! pending set (ENQUEUE, PROMOTE, RELEASE, REAP, RETRY) is a `ZADD` there,
//! and the server announces it on `__keyspace@<db>__:emq:{q}:pending` when
//! `notify-keyspace-events` holds `K` and `z` (or `A`). One subscription per
//! process feeds every idle claim; without it a Lua worker polls.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::Notify;

use crate::Result;

/// The channel pattern of every queue's pending set, in any database.
const PATTERN: &str = "__keyspace@*__:emq:*:pending";

/// The first and the longest wait before subscribing again after the
/// subscription ended.
const RESUBSCRIBE_MIN: Duration = Duration::from_millis(50);
const RESUBSCRIBE_MAX: Duration = Duration::from_secs(2);

/// Arrivals in pending sets, as the server announces them.
pub struct Wakeups {
    by_key: Mutex<HashMap<String, Arc<Notify>>>,
    /// False while the subscription is down (the connection dropped, the
    /// server restarted): claims poll until it is back.
    alive: AtomicBool,
}

impl Wakeups {
    /// Subscribe to the server's announcements, when it makes them: `None`
    /// when `notify-keyspace-events` lacks `K` and `z`, or the server will not
    /// say, or will not let this user subscribe.
    pub async fn start(client: &redis::Client) -> Result<Option<Arc<Wakeups>>> {
        let mut conn = client.get_multiplexed_async_connection().await?;
        let config: redis::RedisResult<(String, String)> =
            redis::cmd("CONFIG").arg("GET").arg("notify-keyspace-events").query_async(&mut conn).await;
        let Ok((_, flags)) = config else { return Ok(None) };
        if !(flags.contains('K') && (flags.contains('z') || flags.contains('A'))) {
            return Ok(None);
        }
        // A server that will not let this user subscribe (an ACL without
        // PSUBSCRIBE or the channel) gets polled instead.
        let pubsub = match subscribe(client).await {
            Ok(pubsub) => pubsub,
            Err(err) => {
                tracing::debug!(error = %err, "keyspace notifications: cannot subscribe; claims will poll");
                return Ok(None);
            }
        };
        let wakeups = Arc::new(Wakeups { by_key: Mutex::default(), alive: AtomicBool::new(true) });
        tokio::spawn(listen(Arc::downgrade(&wakeups), client.clone(), pubsub));
        Ok(Some(wakeups))
    }

    /// Whether announcements still arrive.
    pub fn alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }

    /// Wake every idle claim: announcements stopped, or came back after a gap.
    fn wake_all(&self) {
        for notify in self.by_key.lock().unwrap_or_else(|p| p.into_inner()).values() {
            notify.notify_waiters();
        }
    }

    /// The signal of one pending set.
    pub(crate) fn arrival(&self, pending_key: &str) -> Arc<Notify> {
        let mut by_key = self.by_key.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        by_key.entry(pending_key.to_owned()).or_default().clone()
    }
}

async fn subscribe(client: &redis::Client) -> Result<redis::aio::PubSub> {
    let mut pubsub = client.get_async_pubsub().await?;
    pubsub.psubscribe(PATTERN).await?;
    Ok(pubsub)
}

/// Pass each announcement to its pending set's claims. When the subscription
/// ends (the server restarted, the connection dropped), claims poll while it
/// subscribes again, backing off to [`RESUBSCRIBE_MAX`]. Ends once the
/// [`Wakeups`] are dropped.
async fn listen(wakeups: Weak<Wakeups>, client: redis::Client, mut pubsub: redis::aio::PubSub) {
    loop {
        let mut messages = pubsub.into_on_message();
        while let Some(message) = messages.next().await {
            let Some(wakeups) = wakeups.upgrade() else { return };
            if let Some((_, key)) = message.get_channel_name().split_once("__:") {
                wakeups.arrival(key).notify_waiters();
            }
        }
        drop(messages);
        // Gone: wake everyone, and let them poll until announcements are back.
        let Some(alive) = wakeups.upgrade() else { return };
        alive.alive.store(false, Ordering::SeqCst);
        alive.wake_all();
        drop(alive);
        let mut wait = RESUBSCRIBE_MIN;
        pubsub = loop {
            tokio::time::sleep(wait).await;
            if wakeups.strong_count() == 0 {
                return;
            }
            match subscribe(&client).await {
                Ok(pubsub) => break pubsub,
                Err(err) => {
                    tracing::debug!(error = %err, "keyspace notifications: subscribing again in {wait:?}");
                    wait = (wait * 2).min(RESUBSCRIBE_MAX);
                }
            }
        };
        let Some(alive) = wakeups.upgrade() else { return };
        alive.alive.store(true, Ordering::SeqCst);
        // Jobs may have come while nobody listened: every idle claim looks.
        alive.wake_all();
    }
}
