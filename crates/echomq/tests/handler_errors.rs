//! A handler whose error type is `anyhow::Error`, end to end on the embedded
//! executor: its failure keeps the causes as the job's error, and a
//! `RetryAfter` inside it defers the job rather than failing it.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use echomq::worker::{JobContext, RetryAfter, Worker, WorkerOptions};
use echomq::{Embedded, Queue, RetryPolicy, State};
use echomq_test_support::{eventually, unique_queue};

fn one_attempt() -> WorkerOptions {
    WorkerOptions::default()
        .retry(RetryPolicy::new().max_attempts(1))
        .upkeep(Duration::from_millis(20))
        .idle_wait(Duration::from_millis(50))
}

/// Run `worker` until the job `id` is in `state`, then stop it.
async fn work_until(worker: Worker, q: &Queue, id: &echomq::JobId, state: State) -> echomq::Inspection {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(worker.run_until(async move {
        let _ = stopped.await;
    }));
    eventually("the job reached its state", || async {
        q.inspect(id).await.unwrap().is_some_and(|job| job.record.state == state)
    })
    .await;
    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
    q.inspect(id).await.unwrap().expect("its record")
}

#[tokio::test]
async fn an_anyhow_failure_keeps_its_causes_as_the_job_s_error() {
    let q = Queue::new(Arc::new(Embedded::new()), &unique_queue("anyhow")).unwrap();
    let id = q.enqueue(b"ada@example.com".to_vec()).await.unwrap();
    async fn send(job: JobContext) -> anyhow::Result<()> {
        let to = String::from_utf8(job.payload)?;
        Err(anyhow::anyhow!("connection refused")).with_context(|| format!("sending to {to}"))
    }
    let dead = work_until(Worker::with_options(q.clone(), send, one_attempt()), &q, &id, State::Dead).await;
    assert_eq!(dead.error.as_deref(), Some("sending to ada@example.com: connection refused"));
}

/// One attempt allowed: the job is done only if the first run's `RetryAfter`
/// deferred it without spending it.
#[tokio::test]
async fn a_retry_after_in_an_anyhow_error_defers_the_job() {
    let q = Queue::new(Arc::new(Embedded::new()), &unique_queue("anyhow-defer")).unwrap();
    let id = q.enqueue(b"ada@example.com".to_vec()).await.unwrap();
    let runs = Arc::new(AtomicU32::new(0));
    let handler = {
        let runs = runs.clone();
        move |_: JobContext| {
            let first = runs.fetch_add(1, Ordering::SeqCst) == 0;
            async move {
                if first {
                    return Err(anyhow::Error::from(RetryAfter::job(Duration::from_millis(50))));
                }
                Ok(())
            }
        }
    };
    let done =
        work_until(Worker::with_options(q.clone(), handler, one_attempt()), &q, &id, State::Done).await;
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert_eq!(done.record.attempts, 2, "two claims, one attempt spent");
}
