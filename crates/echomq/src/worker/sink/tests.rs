//! The sink's tests: outcomes sent again through an outage within the
//! lease, beside the heart's rounds, and a test double that renews slowly.

use std::sync::atomic::{AtomicU32, Ordering};

use async_trait::async_trait;
use echomq_core::Reply;

use tokio::sync::Notify;

use super::super::lease::Heart;
use super::*;
use crate::executor::{Call, Executor, Plain, Ran, Setup};
use crate::{Embedded, JobId};

fn unreachable_server() -> Error {
    let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "the server is down");
    Error::from(redis::RedisError::from(refused))
}

/// A call that cannot reach the server until `back`, then goes through.
fn down_until(back: Instant, tries: &AtomicU32) -> impl Fn() -> std::future::Ready<Result<()>> + '_ {
    move || {
        tries.fetch_add(1, Ordering::SeqCst);
        std::future::ready(if Instant::now() < back { Err(unreachable_server()) } else { Ok(()) })
    }
}

fn queue() -> Queue {
    Queue::new(Arc::new(Embedded::new()), "persist").unwrap()
}

/// The heart of `queue`'s leases of `length`, beating in a task of its own.
fn heart(queue: &Queue, length: Duration) -> Arc<Heart> {
    let heart = Heart::new(queue.clone(), length);
    tokio::spawn(heart.clone().run());
    heart
}

/// A job this queue never had: its heartbeat finds the lease gone at the
/// first beat, so the lease's end stays where the claim put it.
fn unknown_job() -> Claimed {
    Claimed { id: JobId::mint(), token: 1, payload: Vec::new(), policy: None, headers: Default::default() }
}

/// The embedded executor, whose rounds of renewals take 200 ms to come
/// back: it says when one is sent, and how many are on their way.
struct SlowRenewals {
    inner: Embedded,
    sent: Notify,
    on_their_way: AtomicU32,
}

#[async_trait]
impl Executor for SlowRenewals {
    async fn run(&self, calls: &[Call]) -> Result<Ran> {
        if !calls.iter().all(|call| call.name == Name::Extend) {
            return self.inner.run(calls).await;
        }
        self.on_their_way.fetch_add(1, Ordering::SeqCst);
        self.sent.notify_waiters();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let replies = self.inner.run(calls).await;
        self.on_their_way.fetch_sub(1, Ordering::SeqCst);
        replies
    }

    async fn claim_waiting(&self, claim: &Call, wait: Duration) -> Result<Reply> {
        self.inner.claim_waiting(claim, wait).await
    }

    async fn wait_on_many(&self, wakes: &[String], wait: Duration) -> Result<Option<usize>> {
        self.inner.wait_on_many(wakes, wait).await
    }

    async fn interrupt_waits(&self) {
        self.inner.interrupt_waits().await;
    }

    fn setup(&self) -> Setup {
        self.inner.setup()
    }

    fn plain(&self) -> &dyn Plain {
        self.inner.plain()
    }
}

/// A handler that ends just as the heart sends a renewal: the ack waits
/// for the renewal to come back. Sent at once, it would land first, and
/// the renewal after it be refused with the job's own token, as if
/// another worker had taken the job.
#[tokio::test]
async fn a_finishing_call_waits_for_a_renewal_on_its_way() {
    let slow = Arc::new(SlowRenewals {
        inner: Embedded::new(),
        sent: Notify::new(),
        on_their_way: AtomicU32::new(0),
    });
    let queue = Queue::new(slow.clone(), "persist").unwrap();
    queue.enqueue(b"x".to_vec()).await.unwrap();
    let job = queue.claim(Duration::from_secs(60)).await.unwrap().expect("a job");
    let (length, started) = (Duration::from_millis(300), Instant::now());
    let mut lease = Lease::new(&heart(&queue, length), &job, started);
    lease.hold(slow.sent.notified()).await.expect("the lease holds");
    let on_their_way_at_the_ack = AtomicU32::new(u32::MAX);
    let ack = || {
        on_their_way_at_the_ack.store(slow.on_their_way.load(Ordering::SeqCst), Ordering::SeqCst);
        std::future::ready(Ok(()))
    };
    persist(&mut lease, Name::Ack, None, ack).await.unwrap();
    assert_eq!(on_their_way_at_the_ack.load(Ordering::SeqCst), 0, "the ack went after the renewal came back");
    assert!(lease.until() > started + length, "and the renewal went through");
}

/// The server comes back 0.3 s before a 1 s lease ends, later than the
/// back-off alone (50, 100, 200, 400 ms, …) would try again.
#[tokio::test]
async fn a_finishing_call_is_tried_up_to_the_leases_last_safe_moment() {
    let (queue, job) = (queue(), unknown_job());
    let claimed = Instant::now();
    let mut lease = Lease::new(&heart(&queue, Duration::from_secs(1)), &job, claimed);
    let tries = AtomicU32::new(0);
    let done = persist(&mut lease, Name::Ack, None, down_until(claimed + Duration::from_millis(700), &tries));
    assert!(done.await.is_ok(), "the call went through once the server was back");
    assert!(tries.load(Ordering::SeqCst) > 1);
}

#[tokio::test]
async fn a_call_that_never_gets_through_gives_up_at_the_last_safe_moment() {
    let (queue, job) = (queue(), unknown_job());
    let claimed = Instant::now();
    let mut lease = Lease::new(&heart(&queue, Duration::from_secs(1)), &job, claimed);
    let last = lease.last_safe_moment();
    let tries = AtomicU32::new(0);
    let never = down_until(claimed + Duration::from_secs(3600), &tries);
    assert!(persist(&mut lease, Name::Ack, None, never).await.is_err());
    assert!(Instant::now() >= last, "not before the last safe moment");
    // A refusal is final at once.
    let refused = || std::future::ready(Err::<(), _>(Error::new(ErrorKind::Fence, "stale")));
    assert!(persist(&mut lease, Name::Ack, None, refused).await.unwrap_err().is_lost_lease());
}

/// While a direct call waits after tries that surely did not reach the
/// server, the heartbeat renews the lease, and the call is tried for
/// longer than the lease the claim gave.
#[tokio::test]
async fn the_heartbeat_goes_on_while_a_finishing_call_waits() {
    let queue = queue();
    queue.enqueue(b"x".to_vec()).await.unwrap();
    let length = Duration::from_secs(3);
    let claimed = Instant::now();
    let job = queue.claim(length).await.unwrap().expect("a job");
    let mut lease = Lease::new(&heart(&queue, length), &job, claimed);
    let tries = AtomicU32::new(0);
    let done = persist(&mut lease, Name::Ack, None, down_until(claimed + length + length / 3, &tries));
    assert!(done.await.is_ok(), "tried past the first lease's end");
    assert!(lease.until() > claimed + length, "renewed");
}

/// No renewal once a try may have reached the server (a renewal after a
/// landed call would be refused with the job's own token): not after a
/// broken connection, even when later tries were refused the connection.
#[tokio::test]
async fn no_renewal_once_a_try_may_have_landed() {
    let queue = queue();
    queue.enqueue(b"x".to_vec()).await.unwrap();
    let length = Duration::from_secs(1);
    let claimed = Instant::now();
    let job = queue.claim(length).await.unwrap().expect("a job");
    let mut lease = Lease::new(&heart(&queue, length), &job, claimed);
    let tries = AtomicU32::new(0);
    let broken_then_refused = || {
        let first = tries.fetch_add(1, Ordering::SeqCst) == 0;
        let broken = std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the connection broke");
        let error = if first { Error::from(redis::RedisError::from(broken)) } else { unreachable_server() };
        std::future::ready(Err::<(), _>(error))
    };
    let done = persist(&mut lease, Name::Fail, None, broken_then_refused).await;
    assert!(done.is_err(), "given up at the lease's end");
    assert_eq!(lease.until(), claimed + length, "never renewed");
}
