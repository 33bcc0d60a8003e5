//! Draining and deleting a queue, on Lua, Native and Embedded: a drain takes
//! pending and delayed jobs and leaves the rest; a delete is refused while a
//! job is active (and deletes nothing), and forced, it deletes every job and
//! every key the queue owns, fencing the active job's holder.

mod common;

use echomq::Delete;
use echomq::Drain;
use echomq::ErrorKind;
use std::time::Duration;

use echomq::{EnqueueOptions, Queue};
use echomq_test_support::unique_queue;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_is_drained_and_deleted_with_every_key_it_owns() {
    let (server, executors) = common::three_executors().await;
    let mut conn = server.connection().await;
    for (via, executor) in executors {
        let name = unique_queue("delete");
        let q = Queue::new(executor, &name).unwrap();
        // Two pending (one with a policy and a dedup key), one delayed, one
        // done, one active; settings and a schedule.
        let unique = EnqueueOptions::default().attempts(2).unique("u", Duration::from_secs(600));
        q.enqueue_with(b"a".to_vec(), unique).await.unwrap();
        q.enqueue_with(b"later".to_vec(), EnqueueOptions::default().delay(Duration::from_secs(600)))
            .await
            .unwrap();
        let done = q.claim(Duration::from_secs(60)).await.unwrap().expect("a job");
        done.ack().await.unwrap();
        q.enqueue(b"b".to_vec()).await.unwrap();
        q.enqueue(b"c".to_vec()).await.unwrap();
        let running = q.claim(Duration::from_secs(60)).await.unwrap().expect("a job");
        q.pause().await.unwrap();
        q.schedules()
            .add(&echomq::Schedule::every("tick", Duration::from_secs(60), b"t".to_vec()).unwrap())
            .await
            .unwrap();
        let before = q.stats().await.unwrap();
        assert_eq!((before.pending, before.active, before.delayed, before.done), (1, 1, 1, 1), "{via}");

        // Not while a job is active: refused, and nothing deleted.
        let refused = q.delete(Delete::IfIdle).await.unwrap_err();
        assert!(refused.kind == ErrorKind::State && refused.text().contains("1 jobs"), "{via}: {refused}");
        assert_eq!(q.stats().await.unwrap(), before, "{via}: nothing deleted");

        // A drain takes pending and delayed, and leaves the rest.
        assert_eq!(q.drain(Drain::Waiting).await.unwrap(), 2, "{via}");
        let drained = q.stats().await.unwrap();
        assert_eq!((drained.pending, drained.active, drained.delayed, drained.done), (0, 1, 0, 1), "{via}");

        // Forced: every job, and the active one's holder is fenced.
        assert_eq!(q.delete(Delete::Force).await.unwrap(), 2, "{via}");
        assert_eq!(q.stats().await.unwrap().pending + q.stats().await.unwrap().done, 0, "{via}");
        let late = running.ack().await.unwrap_err();
        assert!(late.is_lost_lease(), "{via}: {late}");
        assert!(!q.settings().await.unwrap().paused, "{via}: its settings went too");
        assert!(q.schedules().list().await.unwrap().is_empty(), "{via}: and its schedules");
        // The dedup key went with it: the same key is free again.
        let again = q
            .enqueue_with(b"again".to_vec(), EnqueueOptions::default().unique("u", Duration::from_secs(1)))
            .await;
        assert!(!again.unwrap().duplicate, "{via}");
        assert_eq!(q.delete(Delete::IfIdle).await.unwrap(), 1, "{via}");
        assert_eq!(q.stats().await.unwrap().pending, 0, "{via}");
        if via != "embedded" {
            let left: Vec<String> =
                redis::cmd("KEYS").arg(format!("emq:{{{name}}}:*")).query_async(&mut conn).await.unwrap();
            assert!(left.is_empty(), "{via}: keys left: {left:?}");
        }
    }
}
