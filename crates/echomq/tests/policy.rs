//! A job's own policy under real workers, on Lua, Native and Embedded: its
//! ATTEMPTS beat the worker's, its back-off is the server's, a handler past
//! its TIMEOUT is cancelled, failed with a timeout error and retried, and a
//! handler's "retry after" defers the job and the queue without spending an
//! attempt.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use echomq::worker::{HandlerError, JobContext, RetryAfter, Worker, WorkerOptions};
use echomq::{EnqueueOptions, Queue, RetryPolicy, State};
use echomq_test_support::{eventually, unique_queue};

fn options() -> WorkerOptions {
    // Leases far past the timeouts: an attempt ends by its timeout, never
    // by losing its lease.
    WorkerOptions::default()
        .concurrency(4)
        .lease(Duration::from_secs(30))
        .upkeep(Duration::from_millis(50))
        .idle_wait(Duration::from_millis(200))
        .grace(Duration::from_secs(5))
        .retry(RetryPolicy::new().max_attempts(5).backoff(Duration::from_millis(10)))
}

/// Run a worker in the background; the sender stops it gracefully.
fn spawn(worker: Worker) -> (tokio::sync::oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let stop_when = async move {
        let _ = stopped.await;
    };
    let task = tokio::spawn(async move { worker.run_until(stop_when).await.expect("the worker runs") });
    (stop, task)
}

/// A handler that never ends by itself runs past its job's 300 ms timeout:
/// the worker cancels it (the handler sees `cancelled()`), fails the job with
/// the timeout's error, and the job's own ATTEMPTS 2 (not the worker's 5)
/// make its second time-out its death.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_past_its_timeout_is_cancelled_failed_and_retried_by_its_policy() {
    let (_server, executors) = common::three_executors().await;
    for (via, executor) in executors {
        let q = Queue::new(executor, &unique_queue("timeout")).unwrap();
        let policy = EnqueueOptions::default().timeout(Duration::from_millis(300)).attempts(2);
        let id = q.enqueue_with(b"stall".to_vec(), policy).await.unwrap().id;
        let quick = q.enqueue(b"quick".to_vec()).await.unwrap();

        let (started, cancelled) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let handler = {
            let (started, cancelled) = (started.clone(), cancelled.clone());
            move |job: JobContext| {
                let (started, cancelled) = (started.clone(), cancelled.clone());
                async move {
                    if job.payload == b"stall" {
                        started.fetch_add(1, Ordering::SeqCst);
                        job.cancelled().await;
                        cancelled.fetch_add(1, Ordering::SeqCst);
                        // Past the cancel: the worker must not wait for this.
                        std::future::pending::<()>().await;
                    }
                    Ok::<_, HandlerError>(())
                }
            }
        };
        let (stop, task) = spawn(Worker::with_options(q.clone(), handler, options()));
        eventually("the stalled job is dead", || async {
            q.inspect(&id).await.unwrap().is_some_and(|job| job.record.state == State::Dead)
        })
        .await;
        stop.send(()).unwrap();
        task.await.unwrap();

        let job = q.inspect(&id).await.unwrap().expect("its record");
        assert_eq!(job.record.attempts, 2, "{via}: its own ATTEMPTS, not the worker's 5");
        assert_eq!(job.error.as_deref(), Some("timed out after 300ms"), "{via}");
        assert_eq!(started.load(Ordering::SeqCst), 2, "{via}: ran twice");
        assert_eq!(cancelled.load(Ordering::SeqCst), 2, "{via}: told to stop each time");
        let quick = q.inspect(&quick).await.unwrap().expect("its record");
        assert_eq!(quick.record.state, State::Done, "{via}: a job with no timeout runs to its end");
    }
}

/// A job's own ATTEMPTS and back-off beat the worker's: with ATTEMPTS 3 and a
/// fixed back-off of 200 ms, a job that always fails dies at its third
/// attempt (the worker allows 5), and each retry waited its back-off (the
/// worker's is 10 ms).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_own_attempts_and_backoff_beat_the_workers() {
    let (_server, executors) = common::three_executors().await;
    for (via, executor) in executors {
        let q = Queue::new(executor, &unique_queue("policy")).unwrap();
        let policy = EnqueueOptions::default().attempts(3).backoff(Duration::from_millis(200));
        let id = q.enqueue_with(b"fail".to_vec(), policy).await.unwrap().id;

        let runs = Arc::new(std::sync::Mutex::new(Vec::new()));
        let handler = {
            let runs = runs.clone();
            move |_job: JobContext| {
                runs.lock().unwrap().push(std::time::Instant::now());
                async { Err::<(), HandlerError>("always".into()) }
            }
        };
        let (stop, task) = spawn(Worker::with_options(q.clone(), handler, options()));
        eventually("the job is dead", || async {
            q.inspect(&id).await.unwrap().is_some_and(|job| job.record.state == State::Dead)
        })
        .await;
        stop.send(()).unwrap();
        task.await.unwrap();

        let job = q.inspect(&id).await.unwrap().expect("its record");
        assert_eq!(job.record.attempts, 3, "{via}");
        let runs = runs.lock().unwrap().clone();
        assert_eq!(runs.len(), 3, "{via}");
        for pair in runs.windows(2) {
            let waited = pair[1] - pair[0];
            assert!(
                waited >= Duration::from_millis(190),
                "{via}: a retry after {waited:?}, before its back-off"
            );
        }
    }
}

/// A handler told "429, retry after 400 ms" returns `RetryAfter::queue`: its
/// job runs again after the wait without spending an attempt (the worker
/// allows one, and the job still completes), and no other job of the queue
/// starts meanwhile: the whole queue waited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_defers_the_job_and_pauses_the_queue_without_spending_an_attempt() {
    let (_server, executors) = common::three_executors().await;
    for (via, executor) in executors {
        let q = Queue::new(executor, &unique_queue("defer")).unwrap();
        let limited = q.enqueue(b"limited".to_vec()).await.unwrap();
        let runs = Arc::new(std::sync::Mutex::new(Vec::new()));
        let handler = {
            let runs = runs.clone();
            move |job: JobContext| {
                let first = {
                    let mut runs = runs.lock().unwrap();
                    runs.push((job.payload.clone(), std::time::Instant::now()));
                    runs.len() == 1
                };
                async move {
                    if first {
                        return Err(HandlerError::from(RetryAfter::queue(Duration::from_millis(400))));
                    }
                    Ok(())
                }
            }
        };
        let one_attempt = options().retry(RetryPolicy::new().max_attempts(1));
        let (stop, task) = spawn(Worker::with_options(q.clone(), handler, one_attempt));
        eventually("the first run deferred its job", || async {
            q.inspect(&limited).await.unwrap().is_some_and(|job| job.record.state == State::Delayed)
        })
        .await;
        let other = q.enqueue(b"other".to_vec()).await.unwrap();
        eventually("both jobs are done", || async {
            let states = [q.inspect(&limited).await.unwrap(), q.inspect(&other).await.unwrap()];
            states.iter().all(|job| job.as_ref().is_some_and(|job| job.record.state == State::Done))
        })
        .await;
        stop.send(()).unwrap();
        task.await.unwrap();

        let runs = runs.lock().unwrap().clone();
        assert_eq!(runs.len(), 3, "{via}: {runs:?}");
        let deferred_at = runs[0].1;
        for (payload, at) in &runs[1..] {
            let waited = *at - deferred_at;
            assert!(waited >= Duration::from_millis(390), "{via}: {payload:?} ran {waited:?} after the 429");
        }
        let job = q.inspect(&limited).await.unwrap().expect("its record");
        assert_eq!(job.record.attempts, 2, "{via}: two claims, one attempt spent");
    }
}
