//! Dedup keys under a real worker, on Lua, Native and Embedded: a key held
//! by a job refuses a second job and answers the first one's id; it frees
//! when its job finishes (if asked) or when its hold ends.

mod common;

use std::time::Duration;

use echomq::worker::{HandlerError, JobContext, Worker, WorkerOptions};
use echomq::{EnqueueOptions, Queue, State};
use echomq_test_support::{eventually, unique_queue};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unique_key_is_refused_while_held_then_freed() {
    let (_server, executors) = common::three_executors().await;
    for (via, executor) in executors {
        let q = Queue::new(executor, &unique_queue("unique")).unwrap();

        // Held until its job finishes: a second job is refused with the first one's id.
        let until_done =
            || EnqueueOptions::default().unique_until_finished("user:42", Duration::from_secs(600));
        let first = q.enqueue_with(b"first".to_vec(), until_done()).await.unwrap();
        assert!(!first.duplicate, "{via}");
        let second = q.enqueue_with(b"second".to_vec(), until_done()).await.unwrap();
        assert_eq!((second.duplicate, &second.id), (true, &first.id), "{via}: the holder's id");
        assert_eq!(q.stats().await.unwrap().pending, 1, "{via}: nothing enqueued");

        // Its job runs to done: the key is free for the next one.
        let options = WorkerOptions::default().upkeep(Duration::from_millis(50));
        let worker =
            Worker::with_options(q.clone(), |_job: JobContext| async { Ok::<_, HandlerError>(()) }, options);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(worker.run_until(async move {
            let _ = stopped.await;
        }));
        eventually("the first job is done", || async {
            q.inspect(&first.id).await.unwrap().is_some_and(|job| job.record.state == State::Done)
        })
        .await;
        stop.send(()).unwrap();
        task.await.unwrap().unwrap();
        let third = q.enqueue_with(b"third".to_vec(), until_done()).await.unwrap();
        assert!(!third.duplicate && third.id != first.id, "{via}: freed when its job finished");

        // Held for its time alone (a throttle): refused until the hold ends.
        let throttle = || EnqueueOptions::default().unique("digest", Duration::from_millis(300));
        let held = q.enqueue_with(b"a".to_vec(), throttle()).await.unwrap();
        assert!(!held.duplicate, "{via}");
        let again = q.enqueue_with(b"b".to_vec(), throttle()).await.unwrap();
        assert_eq!((again.duplicate, &again.id), (true, &held.id), "{via}");
        eventually("the hold ends and a new job is admitted", || async {
            !q.enqueue_with(b"c".to_vec(), throttle()).await.unwrap().duplicate
        })
        .await;
    }
}
