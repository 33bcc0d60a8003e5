//! Batches with a callback, on Lua, Native and Embedded: a batch of 100 jobs,
//! some of which die, is called back once, after its last job, with its
//! counts in the callback's headers; settling again changes nothing.

mod common;

use echomq::Upkeep;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use echomq::worker::{HandlerError, JobContext, Worker, WorkerOptions};
use echomq::{Headers, Queue, RetryPolicy, State};
use echomq_test_support::{eventually, unique_queue};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_100_is_called_back_once_with_its_counts() {
    let (_server, executors) = common::three_executors().await;
    for (name, via) in executors {
        let q = Queue::new(via, &unique_queue("batch")).unwrap();
        let payloads: Vec<Vec<u8>> = (0..100)
            .map(|n| if n % 10 == 3 { b"die".to_vec() } else { format!("ok {n}").into_bytes() })
            .collect();
        let opened = q.enqueue_batch_with_callback(payloads, "all done").await.unwrap();
        assert_eq!(opened.jobs.len(), 100, "{name}");

        // Every run of the callback, with the headers it was handed.
        let callbacks: Arc<Mutex<Vec<Headers>>> = Arc::default();
        let seen = callbacks.clone();
        let options = WorkerOptions::default()
            .concurrency(8)
            .upkeep(Duration::from_millis(50))
            .retry(RetryPolicy::new().max_attempts(1));
        let worker = Worker::with_options(
            q.clone(),
            move |job: JobContext| {
                let seen = seen.clone();
                async move {
                    match job.payload.as_slice() {
                        b"die" => Err(HandlerError::from("this one dies")),
                        b"all done" => {
                            seen.lock().unwrap().push(job.headers.clone());
                            Ok(())
                        }
                        _ => Ok(()),
                    }
                }
            },
            options,
        );
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let running = tokio::spawn(worker.run_until(async move {
            let _ = stopped.await;
        }));
        eventually("the callback ran", || async { !callbacks.lock().unwrap().is_empty() }).await;
        // A few more upkeep rounds: nothing calls back again.
        tokio::time::sleep(Duration::from_millis(300)).await;
        stop.send(()).unwrap();
        running.await.unwrap().unwrap();

        let runs = callbacks.lock().unwrap().clone();
        assert_eq!(runs.len(), 1, "{name}: called back once");
        let want: Headers = [
            ("batch", opened.id.as_str()),
            ("total", "100"),
            ("done", "90"),
            ("dead", "10"),
            ("cancelled", "0"),
            ("gone", "0"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        assert_eq!(runs[0], want, "{name}");
        // Only after every job of the batch had finished.
        let callback = q.inspect(&opened.callback).await.unwrap().expect("the callback");
        assert_eq!(callback.record.state, State::Done, "{name}");
        for id in &opened.jobs {
            let state = q.inspect(id).await.unwrap().unwrap().record.state;
            assert!(matches!(state, State::Done | State::Dead), "{name}: {id} is {state}");
        }
        let settled = Upkeep::of(&q).settle(1000).await.unwrap();
        assert_eq!((settled.closed, settled.looked), (0, 0), "{name}: the batch is closed");
        // A batch of no jobs, or of too many, is refused before anything is sent.
        assert!(q.enqueue_batch_with_callback(Vec::<Vec<u8>>::new(), "cb").await.is_err(), "{name}");
    }
}

/// What the client can check, it checks before the jobs go: a batch of too
/// many jobs, a payload over the limit or a callback over it enqueues no
/// job (which would otherwise run without the callback it was enqueued for).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_refused_by_the_client_enqueues_nothing() {
    let (_server, executors) = common::three_executors().await;
    let over = vec![b'x'; echomq_core::limits::MAX_PAYLOAD + 1];
    for (name, via) in executors {
        let q = Queue::new(via, &unique_queue("refused-batch")).unwrap();
        let too_many = vec![b"job".to_vec(); 1001];
        let err = q.enqueue_batch_with_callback(too_many, "cb").await.unwrap_err();
        assert!(matches!(err, echomq::Error { kind: echomq::ErrorKind::Argument, .. }), "{name}: {err}");
        let with_a_big_one = vec![b"a".to_vec(), over.clone(), b"c".to_vec()];
        let err = q.enqueue_batch_with_callback(with_a_big_one, "cb").await.unwrap_err();
        assert!(err.kind == echomq::ErrorKind::TooLarge && err.text().contains("payload 1"), "{name}: {err}");
        let err = q.enqueue_batch_with_callback([b"a".to_vec()], over.clone()).await.unwrap_err();
        assert!(matches!(err, echomq::Error { kind: echomq::ErrorKind::TooLarge, .. }), "{name}: {err}");
        assert_eq!(q.stats().await.unwrap().pending, 0, "{name}: no job went");
        assert_eq!(Upkeep::of(&q).settle(1000).await.unwrap().looked, 0, "{name}: no batch is open");
    }
}

/// More open batches than a SETTLE looks at (100): a newer batch whose jobs
/// have all finished is called back although the 100 older ones still wait
/// on their jobs (each SETTLE moves the batches it passed over behind).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_batch_is_called_back_behind_a_hundred_waiting_ones() {
    let (_server, executors) = common::three_executors().await;
    for (name, via) in executors {
        let q = Queue::new(via, &unique_queue("many-batches")).unwrap();
        for n in 0..100 {
            q.enqueue_batch_with_callback([format!("waits {n}")], format!("old {n}")).await.unwrap();
        }
        let newer = q.enqueue_batch_with_callback(["finishes"], "newer").await.unwrap();
        q.cancel(&newer.jobs[0]).await.unwrap();
        // A SETTLE puts the batches it passes over at now's score; in the
        // millisecond the newer batch was made they would tie with it and
        // sort by id, ahead of it. The machine's clock is the server's (a
        // loopback one) and the embedded executor's: wait for its next
        // millisecond.
        let made = wall_ms();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while wall_ms() <= made {
            assert!(std::time::Instant::now() < deadline, "the clock did not move in 5 s");
            tokio::task::yield_now().await;
        }
        let mut closed = 0;
        for _ in 0..3 {
            closed += Upkeep::of(&q).settle(1000).await.unwrap().closed;
        }
        assert_eq!(closed, 1, "{name}: the newer batch closed");
        let callback = q.inspect(&newer.callback).await.unwrap();
        assert!(callback.is_some_and(|job| job.record.payload == b"newer"), "{name}: its callback");
        assert_eq!(q.stats().await.unwrap().pending, 101, "{name}: the old jobs and the callback");
    }
}

/// A batch the server refuses to open after its jobs went in (its state's
/// key holds a string) is an error that names the jobs, enqueued without a
/// callback, and does not say that sending it again is safe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_refused_after_its_jobs_names_them() {
    let server = echomq_test_support::RedisServer::start();
    let conn = server.client().get_multiplexed_async_connection().await.unwrap();
    let embedded = echomq::Embedded::new();
    let executors: [(&str, Arc<dyn echomq::Executor>); 2] =
        [("lua", Arc::new(echomq::Lua::new(conn.clone()))), ("embedded", Arc::new(embedded.clone()))];
    for (name, via) in executors {
        let q = Queue::new(via, &unique_queue("unopened")).unwrap();
        let batches = q.keyspace().role(echomq::keyspace::Role::Batches, None).unwrap();
        if name == "embedded" {
            embedded.store().put_other(batches.as_bytes(), "string");
        } else {
            let () = redis::cmd("SET")
                .arg(&batches)
                .arg("in the way")
                .query_async(&mut conn.clone())
                .await
                .unwrap();
        }
        let err = q.enqueue_batch_with_callback(["a", "b"], "cb").await.unwrap_err();
        let (Some(batch), Some(cause)) = (err.batch(), err.cause()) else { panic!("{name}: {err}") };
        assert_eq!(cause.code(), Some(echomq::Code::Type), "{name}: {err}");
        assert!(err.to_string().contains("not opened"), "{name}: {err}");
        assert!(!err.surely_did_nothing(), "{name}: the jobs are in");
        assert_eq!(batch.jobs.len(), 2, "{name}");
        for id in &batch.jobs {
            assert!(q.inspect(id).await.unwrap().is_some(), "{name}: {id} was enqueued");
        }
    }
}

/// An executor whose first ENQUEUEMANY is applied and then answered with a
/// connection reset: the jobs are in, and the caller does not know it.
struct ResetOnce {
    inner: echomq::Embedded,
    reset: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl echomq::Executor for ResetOnce {
    async fn run(&self, calls: &[echomq::executor::Call]) -> echomq::Result<echomq::executor::Ran> {
        let replies = self.inner.run(calls).await?;
        let many = calls.iter().any(|call| call.name == echomq::Name::EnqueueMany);
        if many && !self.reset.swap(true, std::sync::atomic::Ordering::SeqCst) {
            let reset = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset on the way back");
            return Err(redis::RedisError::from(reset).into());
        }
        Ok(replies)
    }

    async fn claim_waiting(
        &self,
        claim: &echomq::executor::Call,
        wait: std::time::Duration,
    ) -> echomq::Result<echomq_core::Reply> {
        self.inner.claim_waiting(claim, wait).await
    }

    async fn wait_on_many(
        &self,
        wakes: &[String],
        wait: std::time::Duration,
    ) -> echomq::Result<Option<usize>> {
        self.inner.wait_on_many(wakes, wait).await
    }

    async fn interrupt_waits(&self) {
        self.inner.interrupt_waits().await;
    }

    fn setup(&self) -> echomq::executor::Setup {
        self.inner.setup()
    }

    fn plain(&self) -> &dyn echomq::executor::Plain {
        self.inner.plain()
    }
}

/// The jobs' round trip broke after the server took them: the batch sends
/// them again under the same ids (each is in once) and opens the batch, so
/// its callback comes; the caller is told it opened.
#[tokio::test]
async fn a_batch_whose_jobs_round_trip_broke_sends_them_again_and_opens() {
    let executor = Arc::new(ResetOnce { inner: echomq::Embedded::new(), reset: Default::default() });
    let q = Queue::new(executor.clone(), &unique_queue("reset")).unwrap();
    let opened = q.enqueue_batch_with_callback(["a", "b"], "cb").await.unwrap();
    assert!(executor.reset.load(std::sync::atomic::Ordering::SeqCst), "the first try was reset");
    assert_eq!(q.stats().await.unwrap().pending, 2, "each job once, no callback yet");
    for id in &opened.jobs {
        assert!(q.inspect(id).await.unwrap().is_some(), "{id} was enqueued");
    }
    for job in q.claim_many(Duration::from_secs(60), 2, None).await.unwrap().jobs {
        job.ack().await.unwrap();
    }
    assert_eq!(
        Upkeep::of(&q).settle(1000).await.unwrap().closed,
        1,
        "the batch was open, and is called back"
    );
    let callback = q.inspect(&opened.callback).await.unwrap().expect("its callback");
    assert_eq!(callback.record.payload, b"cb");
}

/// The machine's clock, in ms since the Unix epoch.
fn wall_ms() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after 1970").as_millis()
}
