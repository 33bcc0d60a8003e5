//! Any id the server admitted is a job the host handles (PROTOCOL.md §1): an
//! id that passes the kind gate (its first three bytes are `JOB`) but is no
//! minted `JOB_` + ULID, enqueued by another speaker with a raw EVALSHA or
//! `EMQ.ENQUEUE`, is run by the worker, and can be inspected, retried and
//! cancelled, on Lua and on Native. (It once was claimed again and again,
//! never run, until it died of `lease expired`.)

use std::sync::{Arc, Mutex};
use std::time::Duration;

use echomq::executor::script_source;
use echomq::worker::{HandlerError, JobContext, Worker, WorkerOptions};
use echomq::{Executor, JobId, Lua, Name, Native, Queue, RetryPolicy, State};
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
            .arg(2)
            .arg(&record)
            .arg(keys.pending())
            .arg(id)
            .arg("p")
            .query_async(&mut conn)
            .await
    } else {
        let script = redis::Script::new(&script_source(Name::Enqueue));
        script.key(&record).key(keys.pending()).arg(id).arg("p").invoke_async(&mut conn).await
    }
    .unwrap_or_else(|err| panic!("enqueue {id}: {err}"))
}

/// Native on `conn`, or Lua.
fn executor(conn: &redis::aio::MultiplexedConnection, native: bool) -> Arc<dyn Executor> {
    if native {
        Arc::new(Native::new(conn.clone()))
    } else {
        Arc::new(Lua::new(conn.clone()))
    }
}

async fn state(queue: &Queue, id: &JobId) -> Option<State> {
    queue.inspect(id).await.unwrap().map(|job| job.record.state)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_with_any_admitted_id_is_run_inspected_retried_and_cancelled() {
    let server =
        RedisServer::start_with(ServerOptions { module: Some(module_path()), ..ServerOptions::default() });
    let conn = server.connection().await;
    for native in [false, true] {
        let via = executor(&conn, native);
        let queue = Queue::new(via, &unique_queue("admitted")).unwrap();
        for id in ODD {
            assert_eq!(raw_enqueue(&conn, &queue, id, native).await, 1, "{id}: the server admits it");
        }
        let minted = queue.enqueue(b"p".to_vec()).await.unwrap();

        // The worker runs every one of them, the odd ones and the minted one alike.
        let ran = Arc::new(Mutex::new(Vec::new()));
        let seen = ran.clone();
        let handler = move |job: JobContext| {
            seen.lock().unwrap().push(job.id.as_str().to_owned());
            async { Ok::<_, HandlerError>(()) }
        };
        let options = WorkerOptions::default()
            .lease(Duration::from_secs(30))
            .idle_wait(Duration::from_millis(100))
            .upkeep(Duration::from_millis(50))
            .retry(RetryPolicy::new().max_attempts(2));
        let worker = Worker::with_options(queue.clone(), handler, options);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(worker.run_until(async move {
            let _ = stopped.await;
        }));
        eventually("every admitted job is done", || async { queue.stats().await.unwrap().done == 5 }).await;
        let _ = stop.send(());
        task.await.unwrap().unwrap();
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

/// An id the server admits but this host cannot hold (not UTF-8) cannot run
/// here; it is logged and counted, and the jobs claimed with it in one batch
/// still run at once, on their first attempt, instead of waiting out their
/// leases beside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_the_host_cannot_hold_does_not_hold_up_its_batch() {
    let server =
        RedisServer::start_with(ServerOptions { module: Some(module_path()), ..ServerOptions::default() });
    let conn = server.connection().await;
    for native in [false, true] {
        let via = executor(&conn, native);
        let queue = Queue::new(via, &unique_queue("unheld")).unwrap();
        let keys = queue.keyspace();
        let bad: &[u8] = b"JOB\xff";
        let record = [keys.pending().trim_end_matches("pending").as_bytes(), b"job:", bad].concat();
        let mut c = conn.clone();
        let admitted: i64 = redis::cmd("EVAL")
            .arg(script_source(Name::Enqueue))
            .arg(2)
            .arg(&record)
            .arg(keys.pending())
            .arg(bad)
            .arg("p")
            .query_async(&mut c)
            .await
            .unwrap();
        assert_eq!(admitted, 1, "the server admits it");
        let good: Vec<JobId> =
            vec![queue.enqueue(b"1".to_vec()).await.unwrap(), queue.enqueue(b"2".to_vec()).await.unwrap()];

        // One claim of four takes all three; the lease is long, so a job held up
        // beside the bad one could not finish before the test gives up.
        let options = WorkerOptions::default()
            .concurrency(4)
            .lease(Duration::from_secs(600))
            .idle_wait(Duration::from_millis(100));
        let worker = Worker::with_options(
            queue.clone(),
            |_job: JobContext| async { Ok::<_, HandlerError>(()) },
            options,
        );
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(worker.run_until(async move {
            let _ = stopped.await;
        }));
        eventually("the jobs beside the bad one are done", || async {
            let mut done = 0;
            for id in &good {
                done += usize::from(state(&queue, id).await == Some(State::Done));
            }
            done == good.len()
        })
        .await;
        let _ = stop.send(());
        task.await.unwrap().unwrap();
        for id in &good {
            let job = queue.inspect(id).await.unwrap().unwrap();
            assert_eq!(job.record.attempts, 1, "native {native}: {id} ran on its first claim");
        }
        let held: Option<String> =
            redis::cmd("HGET").arg(&record).arg("state").query_async(&mut c).await.unwrap();
        assert_eq!(held.as_deref(), Some("active"), "claimed, not run, left for REAP");
    }
}
