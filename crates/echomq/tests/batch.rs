//! Batches: many enqueues or acks in one round trip, on every executor. Each
//! call keeps its own outcome: a refused one does not stop the others, and a
//! server that forgot the Lua scripts gets them again mid-batch. A batch
//! with the producer's ids can be sent again safely.

use echomq::ErrorKind;
use std::sync::Arc;
use std::time::Duration;

use echomq::{limits, Embedded, EnqueueOptions, Enqueued, Error, Executor, JobId, Lua, Native, Queue};
use echomq_test_support::{module_path, unique_queue, RedisServer, ServerOptions};
use redis::aio::MultiplexedConnection;

const LEASE: Duration = Duration::from_secs(600);

async fn executors() -> (RedisServer, MultiplexedConnection, Vec<(&'static str, Arc<dyn Executor>)>) {
    let server =
        RedisServer::start_with(ServerOptions { module: Some(module_path()), ..ServerOptions::default() });
    let conn = server.connection().await;
    let executors: Vec<(&str, Arc<dyn Executor>)> = vec![
        ("lua", Arc::new(Lua::new(conn.clone()))),
        ("native", Arc::new(Native::new(conn.clone()))),
        ("embedded", Arc::new(Embedded::new())),
    ];
    (server, conn, executors)
}

#[tokio::test]
async fn a_batch_enqueues_each_job_and_refuses_only_the_bad_one() {
    let (_server, mut conn, executors) = executors().await;
    for (name, via) in executors {
        let q = Queue::new(via, &unique_queue("batch")).unwrap();
        // The server forgets every script: the batch must load them again.
        let _: () = redis::cmd("SCRIPT").arg("FLUSH").query_async(&mut conn).await.unwrap();
        let mut payloads: Vec<Vec<u8>> = (0..100u8).map(|n| vec![n]).collect();
        payloads[40] = vec![b'x'; limits::MAX_PAYLOAD + 1];
        let outcomes = q.enqueue_batch(payloads).await.unwrap();
        assert_eq!(outcomes.len(), 100, "{name}");
        assert!(
            matches!(outcomes[40], Err(Error { kind: ErrorKind::TooLarge, .. })),
            "{name}: {:?}",
            outcomes[40]
        );
        assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), 99, "{name}");
        assert_eq!(q.stats().await.unwrap().pending, 99, "{name}");

        // Claimed in mint order: the batch kept the payloads' order.
        let jobs = q.claim_many(LEASE, 1000, None).await.unwrap().jobs;
        let ids: Vec<_> = outcomes.into_iter().filter_map(Result::ok).collect();
        assert_eq!(jobs.iter().map(|j| j.id.clone()).collect::<Vec<_>>(), ids, "{name}");
        assert_eq!(jobs[40].payload, vec![41], "{name}: the refused job left no gap");
    }
}

/// A batch of jobs with the producer's ids and options, sent twice as a
/// producer that does not know whether its first try went in would: each
/// job is enqueued once, as its options say, and the second try answers
/// `duplicate` for each; an oversized payload is refused alone.
#[tokio::test]
async fn a_batch_with_ids_and_options_sent_twice_enqueues_each_job_once() {
    let (_server, _conn, executors) = executors().await;
    for (name, via) in executors {
        let q = Queue::new(via, &unique_queue("many")).unwrap();
        let ids: Vec<JobId> = (0..6).map(|_| JobId::mint()).collect();
        let with_id = |n: usize| EnqueueOptions::default().id(ids[n].clone());
        let too_large = vec![b'x'; limits::MAX_PAYLOAD + 1];
        let jobs = || {
            vec![
                (b"plain".to_vec(), with_id(0)),
                (b"first".to_vec(), with_id(1).priority(-1)),
                (b"later".to_vec(), with_id(2).delay(Duration::from_secs(600))),
                (too_large.clone(), with_id(3)),
                (b"headed".to_vec(), with_id(4).header("tenant", "t1")),
                (too_large.clone(), with_id(5).priority(2)),
            ]
        };
        for (round, duplicate) in [(1, false), (2, true)] {
            let outcomes = q.enqueue_many(jobs()).await.unwrap();
            assert_eq!(outcomes.len(), 6, "{name}");
            for n in [0, 1, 2, 4] {
                let want = Enqueued { id: ids[n].clone(), duplicate };
                assert_eq!(outcomes[n].as_ref().ok(), Some(&want), "{name}, try {round}, job {n}");
            }
            for n in [3, 5] {
                assert!(
                    matches!(outcomes[n], Err(Error { kind: ErrorKind::TooLarge, .. })),
                    "{name}: {:?}",
                    outcomes[n]
                );
            }
            let stats = q.stats().await.unwrap();
            assert_eq!((stats.pending, stats.delayed), (3, 1), "{name}, try {round}");
        }
        let claimed = q.claim_many(LEASE, 10, None).await.unwrap().jobs;
        let order: Vec<&[u8]> = claimed.iter().map(|job| job.payload.as_slice()).collect();
        assert_eq!(
            order,
            [b"first".as_slice(), b"plain", b"headed"],
            "{name}: priority, then the ids' order"
        );
        assert_eq!(claimed[2].headers.get("tenant").map(String::as_str), Some("t1"), "{name}");
    }
}

/// A batch of more than a call holds goes as several ENQUEUEMANY calls in
/// one round trip: a thousand jobs a call, or 8 MiB of payloads; a job with
/// options beyond an id goes as its own ENQUEUE. Counted on the module,
/// whose commands the server counts.
#[tokio::test]
async fn a_large_batch_goes_as_calls_of_a_thousand_jobs_or_8_mib() {
    let (_server, mut conn, _) = executors().await;
    let q = Queue::new(Arc::new(Native::new(conn.clone())), &unique_queue("split")).unwrap();
    let calls = |command: &str, stats: &str| {
        let prefix = format!("cmdstat_emq.{command}:");
        let line = stats.lines().find(|line| line.starts_with(&prefix)).unwrap_or_default();
        line.split("calls=").nth(1).and_then(|rest| rest.split(',').next()?.parse::<u64>().ok()).unwrap_or(0)
    };
    for (jobs, size, want) in [(2_500, 1, 3), (9, 1 << 20, 2)] {
        let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query_async(&mut conn).await.unwrap();
        let before = q.stats().await.unwrap().pending;
        let outcomes = q.enqueue_batch((0..jobs).map(|_| vec![b'p'; size])).await.unwrap();
        assert!(outcomes.iter().all(Result::is_ok), "{jobs} jobs of {size} bytes");
        assert_eq!(q.stats().await.unwrap().pending - before, jobs as u64);
        let stats: String = redis::cmd("INFO").arg("commandstats").query_async(&mut conn).await.unwrap();
        assert_eq!(calls("enqueuemany", &stats), want, "{jobs} jobs of {size} bytes");
    }
    // Jobs with the producer's ids go the same way; a job with more options
    // than an id is an ENQUEUE of its own.
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query_async(&mut conn).await.unwrap();
    let plain = (0..1_500).map(|_| (b"p".to_vec(), EnqueueOptions::default().id(JobId::mint())));
    let urgent = (0..2).map(|_| (b"u".to_vec(), EnqueueOptions::default().priority(-5)));
    let outcomes = q.enqueue_many(plain.chain(urgent)).await.unwrap();
    assert!(outcomes.iter().all(|outcome| outcome.as_ref().is_ok_and(|job| !job.duplicate)));
    let stats: String = redis::cmd("INFO").arg("commandstats").query_async(&mut conn).await.unwrap();
    assert_eq!((calls("enqueuemany", &stats), calls("enqueue", &stats)), (2, 2), "{stats}");
}

#[tokio::test]
async fn a_batch_of_acks_fences_each_stale_token_alone() {
    let (_server, mut conn, executors) = executors().await;
    for (name, via) in executors {
        let q = Queue::new(via, &unique_queue("batch")).unwrap();
        q.enqueue_batch((0..10u8).map(|n| vec![n])).await.unwrap();
        let leases = q.claim_many(LEASE, 10, None).await.unwrap().jobs;
        let mut jobs: Vec<_> = leases.into_iter().map(echomq::Lease::into_job).collect();
        jobs[3].token += 1;
        let _: () = redis::cmd("SCRIPT").arg("FLUSH").query_async(&mut conn).await.unwrap();
        // A stale token as a holder of an old lease sends it: ACKMANY itself.
        let acks =
            echomq::transition::AckMany { acks: jobs.iter().map(echomq::transition::Ack::of).collect() };
        let outcomes = echomq::executor::execute(&**q.executor(), q.keyspace(), &acks).await.unwrap();
        assert!(
            matches!(outcomes[3], Err(Error { kind: ErrorKind::Fence, .. })),
            "{name}: {:?}",
            outcomes[3]
        );
        assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), 9, "{name}");
        let stats = q.stats().await.unwrap();
        assert_eq!((stats.done, stats.active), (9, 1), "{name}");
    }
}
