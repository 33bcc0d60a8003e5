//! Issue 50's flood on every executor (Lua, Native, Embedded): tenant A
//! enqueues 100,000 jobs, then tenant B one; with ten worker slots busy
//! with A's jobs, B's job is claimed within as many claims as there are
//! slots, as each slot frees and claims again. And a group at its cap does
//! not hold the others up, on every executor.

mod common;

use std::time::Duration;

use echomq::{EnqueueOptions, Group, Limit, Queue, QueueGroups};
use echomq_test_support::unique_queue;

const LEASE: Duration = Duration::from_secs(600);
const SLOTS: usize = 10;

fn grouped(group: &str) -> EnqueueOptions {
    EnqueueOptions::default().group(group)
}

/// A group's pending and running jobs.
async fn depth(q: &Queue, group: &str) -> (u64, u64) {
    let info = QueueGroups::of(q).get(group).await.unwrap();
    (info.pending, info.running)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_tenant_is_claimed_within_a_claim_a_slot_of_a_flood_on_every_executor() {
    let (_server, executors) = common::three_executors().await;
    for (name, via) in executors {
        let q = Queue::new(via, &unique_queue("flood")).unwrap();
        for chunk in 0..100 {
            let jobs = (0..1000).map(|k| (format!("a{}", chunk * 1000 + k).into_bytes(), grouped("a")));
            q.enqueue_many(jobs).await.unwrap();
        }
        let mut running = q.claim_many(LEASE, SLOTS as u64, None).await.unwrap().jobs;
        assert_eq!(running.len(), SLOTS, "{name}");
        q.enqueue_with(b"b".to_vec(), grouped("b")).await.unwrap();
        let mut claims = 0;
        let found = loop {
            let job = running.remove(0);
            job.ack().await.unwrap();
            let mut next = q.claim_many(LEASE, 1, None).await.unwrap().jobs;
            claims += 1;
            let job = next.pop().expect("a job: 100,000 are pending");
            if job.payload == b"b".to_vec() {
                break claims;
            }
            assert!(claims < SLOTS, "{name}: B not claimed within {SLOTS} claims");
            running.push(job);
        };
        assert!(found <= SLOTS, "{name}: B waited {found} claims");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_at_its_cap_does_not_hold_up_the_others_on_every_executor() {
    let (_server, executors) = common::three_executors().await;
    for (name, via) in executors {
        let q = Queue::new(via, &unique_queue("capped")).unwrap();
        QueueGroups::of(&q).set(Group::new("capped").cap(Limit::To(2))).await.unwrap();
        let capped = (0..50).map(|k| (format!("c{k}").into_bytes(), grouped("capped")));
        let free = (0..50).map(|k| (format!("f{k}").into_bytes(), grouped("free")));
        q.enqueue_many(capped.chain(free)).await.unwrap();
        let taken = q.claim_many(LEASE, 40, None).await.unwrap().jobs;
        let of_capped = taken.iter().filter(|job| job.payload.starts_with(b"c")).count();
        assert_eq!(of_capped, 2, "{name}: at most its cap running");
        assert_eq!(taken.len(), 40, "{name}: the free group fills the rest");
        // One of its leases ends: it may run one more, and no more.
        let one = taken.into_iter().find(|job| job.payload.starts_with(b"c")).unwrap();
        one.ack().await.unwrap();
        let next = q.claim_many(LEASE, 20, None).await.unwrap().jobs;
        assert_eq!(next.iter().filter(|job| job.payload.starts_with(b"c")).count(), 1, "{name}");
    }
}

/// A group's rate whose window is a day does not put the worker to sleep
/// for a day: its claim is told to come back then (the trailer), and an
/// ungrouped job and another group's that arrive meanwhile run within the
/// worker's idle wait (PROTOCOL.md §9: a worker naps at most that long), on
/// every executor, with one queue and with two (the claims in turns).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_groups_long_window_does_not_put_the_worker_to_sleep_on_every_executor() {
    use echomq::worker::{HandlerError, JobContext, Worker, WorkerOptions};
    let (_server, executors) = common::three_executors().await;
    for (name, via) in executors {
        for queues in [1, 2] {
            let q = Queue::new(via.clone(), &unique_queue("day-window")).unwrap();
            let rate = echomq::Rate { claims: 1, per: Duration::from_secs(24 * 3600) };
            QueueGroups::of(&q).set(Group::new("slow").rate(Limit::To(rate))).await.unwrap();
            for _ in 0..2 {
                q.enqueue_with(b"slow".to_vec(), grouped("slow")).await.unwrap();
            }
            let (ran, mut runs) = tokio::sync::mpsc::unbounded_channel();
            let handler = move |job: JobContext| {
                let ran = ran.clone();
                async move {
                    let _ = ran.send(job.payload.clone());
                    Ok::<_, HandlerError>(())
                }
            };
            let mut worker =
                Worker::with_options(q.clone(), handler, WorkerOptions::default().concurrency(1));
            if queues == 2 {
                worker = worker.queue(Queue::new(via.clone(), &unique_queue("day-window-other")).unwrap());
            }
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let running = tokio::spawn(worker.run_until(async move {
                let _ = stopped.await;
            }));
            assert_eq!(
                next_run(&mut runs).await.as_deref(),
                Some(&b"slow"[..]),
                "{name}/{queues}: the group's one"
            );
            // Its second job waits out the day; the worker acks the first, claims,
            // is told to come back in a day, and waits: then the arrivals.
            echomq_test_support::eventually("the first job acked", || {
                let q = q.clone();
                async move { depth(&q, "slow").await == (1, 0) }
            })
            .await;
            tokio::time::sleep(Duration::from_millis(200)).await;
            q.enqueue(b"ungrouped".to_vec()).await.unwrap();
            let got = next_run(&mut runs).await;
            assert_eq!(got.as_deref(), Some(&b"ungrouped"[..]), "{name}/{queues}: an arrival runs at once");
            q.enqueue_with(b"fast".to_vec(), grouped("fast")).await.unwrap();
            assert_eq!(
                next_run(&mut runs).await.as_deref(),
                Some(&b"fast"[..]),
                "{name}/{queues}: so does another group's"
            );
            assert_eq!(
                depth(&q, "slow").await,
                (1, 0),
                "{name}/{queues}: the slow group's second waits its day"
            );
            stop.send(()).unwrap();
            running.await.unwrap().unwrap();
        }
    }
}

/// The payload of the next job a handler ran, within 30 s.
async fn next_run(runs: &mut tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>) -> Option<Vec<u8>> {
    tokio::time::timeout(Duration::from_secs(30), runs.recv()).await.ok().flatten()
}
