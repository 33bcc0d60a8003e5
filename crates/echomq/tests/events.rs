//! Results and the event log, on Lua, Native and Embedded: a job's whole
//! life is in its queue's log in order; `Queue::wait` returns what a worker
//! elsewhere returned, without polling, or how the job ended; the log keeps
//! about its length, and a queue may turn it off.

mod common;

use echomq::ErrorKind;
use echomq::Upkeep;
use echomq::{EventKind, EventLog, EventsFrom};
use std::sync::Arc;
use std::time::Duration;

use echomq::transition::Config;
use echomq::worker::{HandlerError, JobContext, Json, Worker, WorkerOptions};
use echomq::{EnqueueOptions, Error, Event, Executor, Finished, JobId, Queue, RetryPolicy};
use echomq_test_support::unique_queue;

/// The queue's next `n` events, each within 10 s.
async fn next_events(events: &mut echomq::QueueEvents, n: usize) -> Vec<Event> {
    let mut got = Vec::new();
    while got.len() < n {
        match events.next_within(Duration::from_secs(10)).await.unwrap() {
            Some(event) => got.push(event),
            None => panic!("{} events came, not {n}: {got:?}", got.len()),
        }
    }
    got
}

/// `name job-suffix field=value…` for each event, its job as `$job`.
fn shown(events: &[Event], id: &JobId) -> Vec<String> {
    events
        .iter()
        .map(|event| {
            let job = match &event.job {
                Some(job) if job == id => "$job".to_owned(),
                Some(job) => job.to_string(),
                None => "-".to_owned(),
            };
            let fields: Vec<String> = event
                .fields
                .iter()
                .map(|(field, value)| format!("{field}={}", String::from_utf8_lossy(value)))
                .collect();
            [event.kind.to_string(), job].into_iter().chain(fields).collect::<Vec<_>>().join(" ")
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_whole_life_is_in_the_log_in_order() {
    let (_server, executors) = common::three_executors().await;
    for (name, via) in executors {
        let q = Queue::new(via, &unique_queue("life")).unwrap();
        let mut events = q.events(EventsFrom::Now).await.unwrap();
        let retry = RetryPolicy::new().max_attempts(3).backoff(Duration::ZERO);
        let id = q.enqueue_with(b"p".to_vec(), EnqueueOptions::default()).await.unwrap().id;
        let first = q.claim(Duration::from_secs(60)).await.unwrap().unwrap();
        first.progress("half").await.unwrap();
        first.fail("boom", &retry).await.unwrap();
        Upkeep::of(&q).promote().await.unwrap();
        let second = q.claim(Duration::from_secs(60)).await.unwrap().unwrap();
        second.ack_with("42").await.unwrap();
        q.pause().await.unwrap();
        let got = shown(&next_events(&mut events, 8).await, &id);
        assert_eq!(
            got,
            [
                "enqueued $job state=pending",
                "active $job attempt=1",
                "progress $job progress=half",
                "failed $job attempt=1 error=boom",
                "promoted $job",
                "active $job attempt=2",
                "completed $job result_bytes=2",
                "paused -",
            ],
            "{name}"
        );
        // The ids order the log; a reader made from the last one resumes after it.
        let q2 = q.clone();
        let mut resumed = q2.events(EventsFrom::After(events.after().to_owned())).await.unwrap();
        q.resume().await.unwrap();
        let got = next_events(&mut resumed, 1).await;
        assert_eq!(got[0].kind, EventKind::Resumed, "{name}");
        assert_eq!(q.result(&id).await.unwrap(), Some(b"42".to_vec()), "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_returns_what_a_worker_elsewhere_returned() {
    let (server, executors) = common::three_executors().await;
    for (name, via) in executors {
        let queue = unique_queue("wait");
        let waiter = Queue::new(via.clone(), &queue).unwrap();
        // The worker's side: its own connections (its own executor), as
        // another process has; the embedded one can only share its store.
        let elsewhere: Arc<dyn Executor> = match name {
            "embedded" => via.clone(),
            _ => echomq::connect(&server.client()).await.unwrap(),
        };
        let worked = Queue::new(elsewhere, &queue).unwrap();
        let id = waiter.enqueue(br#"{"n":20}"#.to_vec()).await.unwrap();
        let doomed = waiter.enqueue(b"doomed".to_vec()).await.unwrap();
        let waiting = tokio::spawn({
            let waiter = waiter.clone();
            let (id, doomed) = (id.clone(), doomed.clone());
            async move {
                let done = waiter.wait(&id, Duration::from_secs(30)).await;
                let dead = waiter.wait(&doomed, Duration::from_secs(30)).await;
                (done, dead)
            }
        });
        let options = WorkerOptions::default().retry(RetryPolicy::new().max_attempts(1));
        let worker = Worker::with_options(
            worked,
            |job: JobContext| async move {
                if job.payload == b"doomed" {
                    return Err(HandlerError::from("no good"));
                }
                let n: serde_json::Value = job.json()?;
                Ok(Some(Json(serde_json::json!({ "twice": n["n"].as_u64().unwrap() * 2 }))))
            },
            options,
        );
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let running = tokio::spawn(worker.run_until(async move {
            let _ = stopped.await;
        }));
        let (done, dead) = waiting.await.unwrap();
        assert_eq!(done.unwrap(), Some(Finished::Done(Some(br#"{"twice":40}"#.to_vec()))), "{name}");
        assert_eq!(dead.unwrap(), Some(Finished::Dead(Some("no good".into()))), "{name}");
        stop.send(()).unwrap();
        running.await.unwrap().unwrap();

        // A job that does not finish in time: None, after about the wait.
        let idle = waiter.enqueue(b"idle".to_vec()).await.unwrap();
        let started = std::time::Instant::now();
        assert_eq!(waiter.wait(&idle, Duration::from_millis(300)).await.unwrap(), None, "{name}");
        assert!(started.elapsed() >= Duration::from_millis(300), "{name}: waited its time");
        // No such job: NoJob, at once.
        let err = waiter.wait(&JobId::mint(), Duration::from_secs(30)).await.unwrap_err();
        assert!(matches!(err, Error { kind: ErrorKind::NoJob, .. }), "{name}: {err}");
        // Cancelled while waited for.
        let cancelled = tokio::spawn({
            let (waiter, idle) = (waiter.clone(), idle.clone());
            async move { waiter.wait(&idle, Duration::from_secs(30)).await }
        });
        waiter.cancel(&idle).await.unwrap();
        assert_eq!(cancelled.await.unwrap().unwrap(), Some(Finished::Cancelled), "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_whose_log_is_off_writes_no_events_and_wait_still_works() {
    let (_server, executors) = common::three_executors().await;
    for (name, via) in executors {
        let q = Queue::new(via, &unique_queue("quiet")).unwrap();
        let settings = q.configure(Config::default().events(EventLog::Off)).await.unwrap();
        assert_eq!(settings.events, EventLog::Off, "{name}");
        let mut events = q.events(EventsFrom::Now).await.unwrap();
        let id = q.enqueue(b"p".to_vec()).await.unwrap();
        let waiting = tokio::spawn({
            let (q, id) = (q.clone(), id.clone());
            async move { q.wait(&id, Duration::from_secs(30)).await }
        });
        let job = q.claim(Duration::from_secs(60)).await.unwrap().unwrap();
        job.ack_with("r").await.unwrap();
        assert_eq!(waiting.await.unwrap().unwrap(), Some(Finished::Done(Some(b"r".to_vec()))), "{name}");
        assert_eq!(events.next_within(Duration::from_millis(200)).await.unwrap(), None, "{name}: no event");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_keeps_about_its_length() {
    let (_server, executors) = common::three_executors().await;
    for (name, via) in executors {
        let q = Queue::new(via, &unique_queue("length")).unwrap();
        q.configure(Config::default().events(EventLog::Keep(100))).await.unwrap();
        let payloads: Vec<Vec<u8>> = (0..1000).map(|n| n.to_string().into_bytes()).collect();
        q.enqueue_batch(payloads).await.unwrap();
        let mut all = q.events(EventsFrom::Oldest).await.unwrap();
        let mut kept = Vec::new();
        while let Some(event) = all.next_within(Duration::ZERO).await.unwrap() {
            kept.push(event);
        }
        // At least the newest 100; Redis may keep part of a block more.
        assert!((100..=300).contains(&kept.len()), "{name}: {} entries kept", kept.len());
        if name == "embedded" {
            assert_eq!(kept.len(), 100, "{name}: the embedded log keeps exactly its length");
        }
        assert!(kept.iter().all(|event| event.kind == EventKind::Enqueued), "{name}");
        assert!(kept.windows(2).all(|pair| pair[0].time() <= pair[1].time()), "{name}: in order");
    }
}
