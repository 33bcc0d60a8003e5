//! Any id the server admitted is a job the host handles (PROTOCOL.md §1): an
//! id that passes the kind gate (its first three bytes are `JOB`) but is no
//! minted `JOB_` + ULID, enqueued by another speaker with a raw EVALSHA or
//! `EMQ.ENQUEUE`, is run by the worker, and can be inspected, retried and
//! cancelled, on Lua and on Native. (It once was claimed again and again,
//! never run, until it died of `lease expired`.)

use std::sync::{Arc, Mutex};
use std::time::Duration;

use echomq::executor::script_source;
use echomq::worker::{JobContext, Worker, WorkerOptions};
use echomq::{Executor, JobId, Lua, Native, Queue, RetryPolicy, State};
use echomq_test_support::{eventually, module_path, unique_queue, RedisServer, ServerOptions};
use redis::aio::MultiplexedConnection;

/// Ids a speaker in another language may well send: the kind, and nothing of the brand.
const ODD: [&str; 4] = ["JOBX", "JOB-not-a-ulid", "JOB_lower_case_and_long_enough_to_be_no_ulid", "JOB"];

/// ENQUEUE as a foreign speaker sends it, by the script or by the module's command.
async fn raw_enqueue(conn: &MultiplexedConnection, queue: &Queue, id: &str, native: bool) -> i64 {
    let keys = queue.keyspace();
    let record = format!("{}job:{id}", keys.pending().trim_end_matches("pending"));
    let mut conn = conn.clone();
    if native {
        redis::cmd("EMQ.ENQUEUE")
            .arg(&record)
            .arg(keys.pending())
            .arg(id)
            .arg("p")
            .query_async(&mut conn)
            .await
    } else {
        let script = redis::Script::new(&script_source("enqueue").unwrap());
        script.key(&record).key(keys.pending()).arg(id).arg("p").invoke_async(&mut conn).await
    }
    .unwrap_or_else(|err| panic!("enqueue {id}: {err}"))
}

async fn state(queue: &Queue, id: &JobId) -> Option<State> {
    queue.inspect(id).await.unwrap().map(|job| job.record.state)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_with_any_admitted_id_is_run_inspected_retried_and_cancelled() {
    let server =
        RedisServer::start_with(ServerOptions { module: Some(module_path()), ..ServerOptions::default() });
    let conn = server.client().get_multiplexed_async_connection().await.unwrap();
    for native in [false, true] {
        let via: Arc<dyn Executor> =
            if native { Arc::new(Native::new(conn.clone())) } else { Arc::new(Lua::new(conn.clone())) };
        let queue = Queue::with_executor(via, &unique_queue("admitted")).unwrap();
        for id in ODD {
            assert_eq!(raw_enqueue(&conn, &queue, id, native).await, 1, "{id}: the server admits it");
        }
        let minted = queue.enqueue(b"p".to_vec()).await.unwrap();

        // The worker runs every one of them, the odd ones and the minted one alike.
        let ran = Arc::new(Mutex::new(Vec::new()));
        let seen = ran.clone();
        let handler = move |job: JobContext| {
            seen.lock().unwrap().push(job.id.as_str().to_owned());
            async { Ok(()) }
        };
        let options = WorkerOptions {
            lease: Duration::from_secs(30),
            idle_wait: Duration::from_millis(100),
            upkeep: Duration::from_millis(50),
            retry: RetryPolicy { max_attempts: 2, ..RetryPolicy::default() },
            ..WorkerOptions::default()
        };
        let worker = Worker::with_options(queue.clone(), handler, options);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(worker.run_until(async move {
            let _ = stopped.await;
        }));
        eventually("every admitted job is done", || async { queue.stats().await.unwrap().done == 5 }).await;
        let _ = stop.send(());
        task.await.unwrap();
        let mut ran = ran.lock().unwrap().clone();
        ran.sort();
        let mut want: Vec<String> = ODD.iter().map(|id| id.to_string()).chain([minted.to_string()]).collect();
        want.sort();
        assert_eq!(ran, want, "native {native}: each job ran once");

        // Inspect, retry and cancel take the ids as a person would type them.
        for id in ODD {
            let id: JobId = id.parse().unwrap_or_else(|err| panic!("{id}: {err}"));
            let job = queue.inspect(&id).await.unwrap().expect("the record");
            assert_eq!((job.record.state, job.record.attempts), (State::Done, 1), "{id:?}");
        }
        let dead: JobId = "JOB:dead".parse().unwrap();
        let record = queue.keyspace().pending().replace("pending", "job:JOB:dead");
        let mut c = conn.clone();
        let _: () = redis::pipe()
            .hset_multiple(&record, &[("state", "dead"), ("attempts", "2"), ("payload", "p")])
            .zadd(queue.keyspace().dead(), "JOB:dead", 5)
            .query_async(&mut c)
            .await
            .unwrap();
        queue.retry(&dead).await.unwrap();
        assert_eq!(state(&queue, &dead).await, Some(State::Pending));
        assert!(queue.cancel(&dead).await.unwrap());
        assert_eq!(state(&queue, &dead).await, Some(State::Cancelled));
    }
}
