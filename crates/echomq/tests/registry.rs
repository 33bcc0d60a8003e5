//! The queue registry (PROTOCOL.md §2, `emq:queues`), on Lua, Native and
//! Embedded: a queue is noted there when it first holds a job (an enqueue,
//! a batch, a schedule) and while a worker works it; a refused enqueue
//! notes nothing; a deleted queue leaves it.

mod common;

use std::time::Duration;

use echomq::worker::{HandlerError, JobContext, Worker, WorkerOptions};
use echomq::{Delete, EnqueueOptions, Queue};
use echomq_test_support::{eventually, unique_queue};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queues_are_found_in_the_registry_without_a_scan() {
    let (_server, executors) = common::three_executors().await;
    for (via, executor) in executors {
        let listed = || async { echomq::queue::registry::list(&*executor, 10_000).await.unwrap() };
        let (produced, refused, worked) =
            (unique_queue("produced"), unique_queue("refused"), unique_queue("worked"));

        // A refused enqueue (a priority out of range) notes nothing.
        let q = Queue::new(executor.clone(), &refused).unwrap();
        let bad = EnqueueOptions::default().priority(1 << 40);
        assert!(q.enqueue_with(b"x".to_vec(), bad).await.is_err(), "{via}");
        assert!(!listed().await.contains(&refused), "{via}: a refused enqueue wrote nothing");

        // A job in it, by one enqueue or a batch: noted.
        let q = Queue::new(executor.clone(), &produced).unwrap();
        q.enqueue_batch([b"a".to_vec(), b"b".to_vec()]).await.unwrap();
        assert!(listed().await.contains(&produced), "{via}: a batch noted it");

        // A worker notes the queues it works, jobs or not.
        let idle = Queue::new(executor.clone(), &worked).unwrap();
        let options = WorkerOptions::default().idle_wait(Duration::from_millis(50));
        let worker =
            Worker::with_options(idle, |_job: JobContext| async { Ok::<_, HandlerError>(()) }, options);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let running = tokio::spawn(worker.run_until(async move {
            let _ = stopped.await;
        }));
        eventually("the worker notes its queue", || async { listed().await.contains(&worked) }).await;
        let _ = stop.send(());
        running.await.unwrap().unwrap();

        // Deleted, a queue leaves it; enqueued again, it is back.
        q.delete(Delete::Force).await.unwrap();
        assert!(!listed().await.contains(&produced), "{via}: a deleted queue is forgotten");
        q.enqueue(b"again".to_vec()).await.unwrap();
        assert!(listed().await.contains(&produced), "{via}: noted again");
        let names = listed().await;
        assert!(names.windows(2).all(|pair| pair[0] <= pair[1]), "{via}: in name order");
    }
}
