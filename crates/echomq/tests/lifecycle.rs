//! The protocol's promises end to end on a real server: the seed's record
//! shape, idempotent enqueue, fencing after a reap, the whole lifecycle
//! through the Queue API, and NOSCRIPT recovery.

mod common;

use echomq::ErrorKind;
use echomq::Upkeep;
use std::time::Duration;

use common::{harness, A};
use echomq::{EnqueueOptions, Error, Failed, JobId, Lease, RetryPolicy, State};
use redis::AsyncCommands;

const SHORT: Duration = Duration::from_millis(20);
const LONG: Duration = Duration::from_secs(600);

#[tokio::test]
async fn enqueue_writes_exactly_the_seeds_record() {
    let h = harness().await;
    let mut conn = h.conn.clone();
    let payload = b"hello \0\xff world".to_vec();
    let id = h.queue.enqueue(payload.clone()).await.unwrap();

    let record: Vec<(String, Vec<u8>)> = conn.hgetall(h.keys.job(&id)).await.unwrap();
    let mut record = record;
    record.sort();
    assert_eq!(
        record,
        vec![
            ("attempts".into(), b"0".to_vec()),
            ("payload".into(), payload.clone()),
            ("state".into(), b"pending".to_vec())
        ]
    );
    let score: f64 = conn.zscore(h.keys.pending(), id.as_str()).await.unwrap();
    assert_eq!(score, 0.0);

    // The same id again is a duplicate and changes nothing.
    let before = h.snapshot().await;
    let again = h.queue.enqueue_with(b"other".to_vec(), EnqueueOptions::default().id(id.clone())).await;
    assert!(again.unwrap().duplicate);
    assert_eq!(before, h.snapshot().await);
}

#[tokio::test]
async fn the_enqueue_script_as_loaded_answers_the_seeds_call() {
    let h = harness().await;
    let mut conn = h.conn.clone();
    let script = echomq::executor::script_source(echomq::Name::Enqueue);
    let sha: String = redis::cmd("SCRIPT").arg("LOAD").arg(&script).query_async(&mut conn).await.unwrap();

    let evalsha = |id: &str| {
        let job = format!("{}job:{id}", h.prefix());
        redis::cmd("EVALSHA").arg(&sha).arg(2).arg(job).arg(h.keys.pending()).arg(id).arg("hi").clone()
    };
    let admitted: i64 = evalsha(A).query_async(&mut conn).await.unwrap();
    assert_eq!(admitted, 1);
    let duplicate: i64 = evalsha(A).query_async(&mut conn).await.unwrap();
    assert_eq!(duplicate, 0);

    let before = h.dbsize().await;
    let err = evalsha("XYZ").query_async::<i64>(&mut conn).await.unwrap_err();
    assert_eq!(err.code(), Some("EMQKIND"));
    assert_eq!(err.detail(), Some("job id must be JOB-namespaced"));
    assert_eq!(h.dbsize().await, before);
}

#[tokio::test]
async fn a_reaped_worker_is_fenced_and_the_new_holder_acks() {
    let h = harness().await;
    let q = &h.queue;
    let id = q.enqueue(b"work".to_vec()).await.unwrap();

    // Worker one claims under a short lease and stalls past it.
    let stale = q.claim(SHORT).await.unwrap().unwrap();
    assert_eq!((stale.id.clone(), stale.token), (id.clone(), 1));
    let mut conn = h.conn.clone();
    let deadline: f64 = conn.zscore(h.keys.active(), id.as_str()).await.unwrap();
    h.wait_past(deadline as u64).await;
    assert_eq!(Upkeep::of(q).reap(5).await.unwrap().requeued, 1);

    // Worker two claims it again and gets the next token.
    let fresh = q.claim(LONG).await.unwrap().unwrap();
    assert_eq!((fresh.id.clone(), fresh.token), (id.clone(), 2));

    // Everything worker one tries is fenced, and changes nothing.
    let before = h.snapshot().await;
    // Each call ends a lease handle; the stale holder's token, handed again.
    let stale = || Lease::held(q, id.clone(), 1);
    let fenced = stale().ack().await.unwrap_err();
    assert_eq!(fenced.code(), Some(echomq::Code::Fence));
    // It says where, as an operator reads it in a log.
    let place = format!("(ack of {id} in queue {})", q.name());
    assert_eq!(fenced.to_string(), format!("EMQFENCE token does not hold the lease {place}"));
    assert!(matches!(stale().extend(LONG).await, Err(Error { kind: ErrorKind::Fence, .. })));
    assert!(matches!(stale().release(&RetryPolicy::new()).await, Err(Error { kind: ErrorKind::Fence, .. })));
    assert!(matches!(
        stale().fail("late", &RetryPolicy::new()).await,
        Err(Error { kind: ErrorKind::Fence, .. })
    ));
    assert_eq!(before, h.snapshot().await);

    // The new holder's ack stands.
    fresh.ack().await.unwrap();
    let job = q.inspect(&id).await.unwrap().unwrap();
    assert_eq!((job.record.state, job.record.attempts), (State::Done, 2));
    // A second ack of the same lease does not compile; its token, sent again, is fenced.
    assert!(
        matches!(Lease::held(q, id.clone(), 2).ack().await, Err(Error { kind: ErrorKind::Fence, .. })),
        "a second ack is fenced too"
    );
}

#[tokio::test]
async fn a_job_lives_its_whole_life_through_the_queue_api() {
    let h = harness().await;
    let q = &h.queue;
    let policy = RetryPolicy::new().max_attempts(2).backoff(SHORT).max_backoff(SHORT).jitter(0.0);

    // Scheduled: delayed until due, then promoted.
    let id = q.enqueue_with(b"job".to_vec(), EnqueueOptions::default().delay(SHORT)).await.unwrap().id;
    assert_eq!(q.stats().await.unwrap().delayed, 1);
    assert!(q.claim(LONG).await.unwrap().is_none(), "not due yet");
    let due = h.now_ms().await + SHORT.as_millis() as u64;
    h.wait_past(due).await;
    assert_eq!(Upkeep::of(q).promote().await.unwrap(), 1);

    // First attempt fails: back to delayed with its error readable.
    let job = q.claim(LONG).await.unwrap().unwrap();
    assert_eq!(job.fail("first failure", &policy).await.unwrap(), Failed::Delayed);
    let seen = q.inspect(&id).await.unwrap().unwrap();
    assert_eq!((seen.record.state, seen.error.as_deref()), (State::Delayed, Some("first failure")));

    // Second attempt fails: out of attempts, dead.
    h.wait_past(h.now_ms().await + SHORT.as_millis() as u64).await;
    assert_eq!(Upkeep::of(q).promote().await.unwrap(), 1);
    let job = q.claim(LONG).await.unwrap().unwrap();
    assert_eq!(job.token, 2);
    assert_eq!(job.fail("second failure", &policy).await.unwrap(), Failed::Dead);
    assert_eq!(q.stats().await.unwrap().dead, 1);

    // Retried by hand, it completes.
    q.retry(&id).await.unwrap();
    let job = q.claim(LONG).await.unwrap().unwrap();
    assert_eq!(job.token, 3);
    job.ack().await.unwrap();
    let stats = q.stats().await.unwrap();
    assert_eq!((stats.done, stats.pending, stats.active, stats.delayed, stats.dead), (1, 0, 0, 0, 0));

    // Purged once old enough (age zero: at once).
    assert_eq!(Upkeep::of(q).purge(State::Done, Duration::ZERO).await.unwrap(), 1);
    assert!(q.inspect(&id).await.unwrap().is_none());
    // Nothing of the job is left: only the queue's own event log, which told
    // its life, its counters, which counted it, its wake-up key, set when the
    // retry made it pending, and the queue registry, which names the queue.
    let mut conn = h.conn.clone();
    let mut left: Vec<String> = redis::cmd("KEYS").arg("*").query_async(&mut conn).await.unwrap();
    left.sort();
    let wake = h.keys.role(echomq::keyspace::Role::Wake, None).unwrap();
    let registry = echomq::keyspace::REGISTRY.to_owned();
    let counts = h.keys.role(echomq::keyspace::Role::Counts, None).unwrap();
    let mut want = [registry, counts, h.keys.events(), wake];
    want.sort();
    assert_eq!(left, want, "purge leaves nothing of the job behind");
}

#[tokio::test]
async fn priorities_then_mint_order_decide_who_is_claimed_first() {
    let h = harness().await;
    let q = &h.queue;
    let mut ids = Vec::new();
    for n in 0..5 {
        ids.push(q.enqueue(vec![n]).await.unwrap());
    }
    let urgent = q.enqueue_with(b"!".to_vec(), EnqueueOptions::default().priority(-1)).await.unwrap().id;
    let batch = q.claim_many(LONG, 10, None).await.unwrap().jobs;
    let order: Vec<JobId> = batch.into_iter().map(|job| job.into_job().id).collect();
    let mut expected = vec![urgent];
    expected.extend(ids);
    assert_eq!(order, expected);
}

#[tokio::test]
async fn scripts_are_loaded_again_after_the_server_forgets_them() {
    let h = harness().await;
    h.queue.enqueue(b"one".to_vec()).await.unwrap();
    let mut conn = h.conn.clone();
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query_async(&mut conn).await.unwrap();
    h.queue.enqueue(b"two".to_vec()).await.unwrap();
    assert_eq!(h.queue.stats().await.unwrap().pending, 2);
}

#[tokio::test]
async fn cancelling_an_active_job_fences_its_holder() {
    let h = harness().await;
    let q = &h.queue;
    let id = q.enqueue(b"x".to_vec()).await.unwrap();
    let job = q.claim(LONG).await.unwrap().unwrap();
    assert!(q.cancel(&id).await.unwrap());
    assert!(!q.cancel(&id).await.unwrap(), "cancel is idempotent");
    assert!(matches!(job.ack().await, Err(Error { kind: ErrorKind::Fence, .. })));
    assert!(matches!(q.retry(&id).await, Err(Error { kind: ErrorKind::State, .. })));
    assert_eq!(q.stats().await.unwrap().cancelled, 1);
}
