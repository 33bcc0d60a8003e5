//! The queue's counters (protocol 1.4, PROTOCOL.md §7.5), on Lua, Native
//! and Embedded: each enqueue, completion, failure and death is counted by
//! the transition that makes it, in all and in now's minute and hour; a
//! duplicate or a refused call counts nothing; trimming the finished jobs
//! leaves the counts; deleting the queue deletes them.

mod common;

use std::time::{Duration, SystemTime};

use echomq::{Delete, EnqueueOptions, Failed, JobId, Queue, RetryPolicy, Span, Tally};
use echomq_test_support::unique_queue;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_transition_that_moves_a_job_counts_it() {
    let (_server, executors) = common::three_executors().await;
    for (via, executor) in executors {
        let q = Queue::new(executor.clone(), &unique_queue("counts")).unwrap();
        let none = q.counts(Span::Minutes).await.unwrap();
        assert_eq!(none.totals, Tally::default(), "{via}: a new queue");
        assert_eq!(none.slots.len(), 60, "{via}");
        assert!(none.slots.iter().all(|slot| *slot == Tally::default()), "{via}");
        let skew = SystemTime::now().duration_since(none.now).unwrap_or_else(|e| e.duration());
        assert!(skew < Duration::from_secs(5), "{via}: the reply's now is the server's clock");

        // Three enqueued (one alone, two in a batch); a duplicate and a
        // refused enqueue count nothing.
        let id: JobId = JobId::mint();
        q.enqueue_with(b"a".to_vec(), EnqueueOptions::default().id(id.clone())).await.unwrap();
        q.enqueue_with(b"a".to_vec(), EnqueueOptions::default().id(id.clone())).await.unwrap();
        assert!(q.enqueue_with(b"x".to_vec(), EnqueueOptions::default().priority(1 << 40)).await.is_err());
        q.enqueue_batch([b"b".to_vec(), b"c".to_vec()]).await.unwrap();

        // One completed, one failed with attempts left, one dead.
        let mut leases = q.claim_many(Duration::from_secs(60), 3, None).await.unwrap().jobs.into_iter();
        let (first, second, third) = (leases.next().unwrap(), leases.next().unwrap(), leases.next().unwrap());
        first.ack().await.unwrap();
        let again = RetryPolicy::new().max_attempts(3);
        assert_eq!(second.fail("boom", &again).await.unwrap(), Failed::Delayed, "{via}");
        let last = RetryPolicy::new().max_attempts(1);
        assert_eq!(third.fail("boom", &last).await.unwrap(), Failed::Dead, "{via}");

        let want = Tally { enqueued: 3, completed: 1, failed: 1, dead: 1 };
        let minutes = q.counts(Span::Minutes).await.unwrap();
        assert_eq!(minutes.totals, want, "{via}");
        let sum = |slots: &[Tally]| {
            slots.iter().fold(Tally::default(), |a, s| Tally {
                enqueued: a.enqueued + s.enqueued,
                completed: a.completed + s.completed,
                failed: a.failed + s.failed,
                dead: a.dead + s.dead,
            })
        };
        // All within a minute or two of now: the last two slots hold them.
        assert_eq!(sum(&minutes.slots[58..]), want, "{via}: {minutes:?}");
        let hours = q.counts(Span::Hours).await.unwrap();
        assert_eq!((hours.totals, hours.slots.len()), (want, 168), "{via}");
        assert_eq!(sum(&hours.slots), want, "{via}");
        assert_eq!(hours.slot, Duration::from_secs(3600), "{via}");

        // Finished jobs purged: the counts stay.
        q.purge(echomq::State::Done, Duration::ZERO).await.unwrap();
        assert_eq!(q.counts(Span::Minutes).await.unwrap().totals, want, "{via}: purging keeps the counts");

        // Deleted, the queue's counters go with it.
        q.delete(Delete::Force).await.unwrap();
        assert_eq!(q.counts(Span::Minutes).await.unwrap().totals, Tally::default(), "{via}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_counter_of_the_wrong_shape_is_refused_and_nothing_changes() {
    let (server, executors) = common::three_executors().await;
    let mut conn = server.connection().await;
    for (via, executor) in executors {
        if via == "embedded" {
            continue; // Its keyspace is its own: the core's vectors cover it.
        }
        let name = unique_queue("counts-bad");
        let q = Queue::new(executor.clone(), &name).unwrap();
        let key = format!("emq:{{{name}}}:counts");
        let _: () =
            redis::cmd("HSET").arg(&key).arg("enqueued").arg("lots").query_async(&mut conn).await.unwrap();
        let err = q.counts(Span::Minutes).await.unwrap_err();
        assert_eq!(err.code(), Some(echomq::Code::Data), "{via}: {err}");
        assert!(err.to_string().contains("enqueued is not an integer of 0 or more"), "{via}: {err}");
        // An enqueue reads its counters before it writes: refused, nothing
        // written. (An ack would not: `enqueued` is not its to count.)
        let refused = q.enqueue(b"x".to_vec()).await.unwrap_err();
        assert_eq!(refused.code(), Some(echomq::Code::Data), "{via}: {refused}");
        assert_eq!(q.stats().await.unwrap().pending, 0, "{via}");
        let _: () = redis::cmd("DEL").arg(&key).query_async(&mut conn).await.unwrap();
        let _: () = redis::cmd("SET").arg(&key).arg("x").query_async(&mut conn).await.unwrap();
        let err = q.counts(Span::Hours).await.unwrap_err();
        assert_eq!(err.code(), Some(echomq::Code::Type), "{via}: {err}");
    }
}

/// REMOVE (protocol 1.4): an operator deletes chosen jobs; those in
/// another state are left alone; the counters keep what they counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removed_jobs_are_gone_and_others_stay() {
    let (_server, executors) = common::three_executors().await;
    for (via, executor) in executors {
        let q = Queue::new(executor.clone(), &unique_queue("remove")).unwrap();
        let (a, b, c) = (
            q.enqueue(b"a".to_vec()).await.unwrap(),
            q.enqueue(b"b".to_vec()).await.unwrap(),
            q.enqueue(b"c".to_vec()).await.unwrap(),
        );
        let held = q.claim(Duration::from_secs(60)).await.unwrap().expect("a job");
        assert_eq!(held.id, a, "{via}");
        assert_eq!(q.remove(echomq::State::Pending, &[a.clone(), b.clone()]).await.unwrap(), 1, "{via}");
        assert!(q.inspect(&b).await.unwrap().is_none(), "{via}: b is gone");
        assert!(q.inspect(&a).await.unwrap().is_some(), "{via}: a, active, stays");
        assert!(q.inspect(&c).await.unwrap().is_some(), "{via}: c was not named");
        assert_eq!(q.remove(echomq::State::Active, std::slice::from_ref(&a)).await.unwrap(), 1, "{via}");
        let fenced = held.ack().await.unwrap_err();
        assert_eq!(fenced.code(), Some(echomq::Code::NoJob), "{via}: the holder is fenced: {fenced}");
        assert_eq!(q.counts(Span::Minutes).await.unwrap().totals.enqueued, 3, "{via}");
        let none: Vec<JobId> = Vec::new();
        assert!(q.remove(echomq::State::Dead, &none).await.is_ok(), "{via}: nothing to do");
    }
}
