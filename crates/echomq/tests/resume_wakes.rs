//! A resume wakes every claim waiting on a paused queue, whichever executor
//! resumes and whichever waits (PROTOCOL.md §9): a native `EMQ.CLAIM …
//! BLOCK` woken by a resume through the scripts, and a Lua worker waiting on
//! the wake-up key (BZPOPMIN) woken by a native resume. Each queue has two
//! jobs pending, so the resume's re-add of the head never empties pending
//! (which would signal the key by itself), and a stale wake-up member left
//! by the enqueues.

use std::sync::Arc;
use std::time::{Duration, Instant};

use echomq::{Executor, Lua, Native, Queue};
use echomq_test_support::{eventually, module_path, unique_queue, RedisServer, ServerOptions};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

/// Long enough that a waiter that was not woken is told apart from one that was.
const WAIT: Duration = Duration::from_secs(10);
/// How soon after the resume the waiter must have its job.
const PROMPT: Duration = Duration::from_secs(1);

struct Setup {
    _server: RedisServer,
    conn: ConnectionManager,
    lua: Arc<dyn Executor>,
    native: Arc<dyn Executor>,
}

async fn setup() -> Setup {
    let server =
        RedisServer::start_with(ServerOptions { module: Some(module_path()), ..ServerOptions::default() });
    let client = server.client();
    let config = ConnectionManagerConfig::new().set_response_timeout(None);
    let conn = ConnectionManager::new_with_config(client.clone(), config.clone()).await.unwrap();
    let blocking = ConnectionManager::new_with_config(client.clone(), config.clone()).await.unwrap();
    let open = move || ConnectionManager::new_with_config(client.clone(), config.clone());
    let lua: Arc<dyn Executor> = Arc::new(Lua::new(conn.clone()).with_blocking_connections(open));
    let native: Arc<dyn Executor> = Arc::new(Native::new(conn.clone()).with_blocking_connection(blocking));
    Setup { _server: server, conn, lua, native }
}

async fn blocked_clients(conn: &ConnectionManager) -> u64 {
    let info: String = redis::cmd("INFO").arg("clients").query_async(&mut conn.clone()).await.unwrap();
    info.lines()
        .find_map(|line| line.strip_prefix("blocked_clients:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// A paused queue with two jobs pending, as `waiter` and `resumer` see it.
async fn paused_queue(waiter: &Arc<dyn Executor>, resumer: &Arc<dyn Executor>) -> (Queue, Queue) {
    let name = unique_queue("resume");
    let waits = Queue::new(waiter.clone(), &name).unwrap();
    let resumes = Queue::new(resumer.clone(), &name).unwrap();
    resumes.pause().await.unwrap();
    for payload in [b"a", b"b"] {
        resumes.enqueue(payload).await.unwrap();
    }
    (waits, resumes)
}

/// The queue's wake-up key.
fn wake_key(queue: &Queue) -> String {
    format!("{}wake", queue.keyspace().pending().trim_end_matches("pending"))
}

/// The waiter claims (and waits, the queue paused) while `resumes` resumes
/// once it is blocked and the wake-up key is gone (its stale member taken);
/// it must have a job within [`PROMPT`] of the resume.
async fn resume_wakes(s: &Setup, waits: Queue, resumes: Queue) {
    let wake = wake_key(&resumes);
    let claim = tokio::spawn(async move {
        let jobs = waits.claim_many(Duration::from_secs(30), 1, Some(WAIT)).await.unwrap().jobs;
        (jobs, Instant::now())
    });
    let conn = s.conn.clone();
    eventually("the claim waits on the paused queue", || {
        let conn = conn.clone();
        let wake = wake.clone();
        async move {
            let set: bool = redis::cmd("EXISTS").arg(&wake).query_async(&mut conn.clone()).await.unwrap();
            blocked_clients(&conn).await == 1 && !set
        }
    })
    .await;
    resumes.resume().await.unwrap();
    let resumed = Instant::now();
    let (jobs, woke) = claim.await.unwrap();
    assert_eq!(jobs.len(), 1, "the woken claim took a job");
    let late = woke.saturating_duration_since(resumed);
    assert!(late < PROMPT, "the waiter had its job {late:?} after the resume");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lua_resume_wakes_a_native_blocked_claim() {
    let s = setup().await;
    let (waits, resumes) = paused_queue(&s.native, &s.lua).await;
    // The enqueues left a member in the wake-up key, which the native claim
    // takes before it waits (1.9, as a BZPOPMIN would): the resume sets the
    // key anew, and the server signals the waiter.
    resume_wakes(&s, waits, resumes).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_native_resume_wakes_a_lua_waiter_on_the_wake_up_key() {
    let s = setup().await;
    let (waits, resumes) = paused_queue(&s.lua, &s.native).await;
    // The Lua waiter pops the enqueues' stale member, claims nothing (paused)
    // and waits again, on a wake-up key that is now gone.
    resume_wakes(&s, waits, resumes).await;
}
