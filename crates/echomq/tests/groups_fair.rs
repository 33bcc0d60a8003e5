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
