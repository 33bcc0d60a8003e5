//! Progress from a handler, on Lua and on Native: each report is seen by
//! INSPECT while the job runs and after it is done, a report after the lease
//! was lost is fenced, and a purge takes the progress with the job.

use echomq::ErrorKind;
use echomq::Upkeep;
use std::sync::Arc;
use std::time::Duration;

use echomq::worker::{HandlerError, JobContext, Worker, WorkerOptions};
use echomq::{Error, Executor, JobId, Lua, Native, Queue, State};
use echomq_test_support::{eventually, unique_queue, RedisServer};
use tokio::sync::Notify;

async fn queues(server: &RedisServer) -> Vec<Queue> {
    let conn = server.client().get_multiplexed_async_connection().await.unwrap();
    let executors: [Arc<dyn Executor>; 2] = [Arc::new(Lua::new(conn.clone())), Arc::new(Native::new(conn))];
    executors.into_iter().map(|via| Queue::new(via, &unique_queue("progress")).unwrap()).collect()
}

async fn seen(queue: &Queue, id: &JobId) -> Option<(State, Option<String>)> {
    let job = queue.inspect(id).await.unwrap()?;
    Some((job.record.state, job.progress.map(|p| String::from_utf8(p).unwrap())))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_from_a_handler_is_seen_by_inspect_until_the_purge() {
    let server = RedisServer::start_with_module();
    for q in queues(&server).await {
        let id = q.enqueue(b"work".to_vec()).await.unwrap();
        let go_on = Arc::new(Notify::new());
        let resume = go_on.clone();
        let worker = Worker::with_options(
            q.clone(),
            move |job: JobContext| {
                let resume = resume.clone();
                async move {
                    job.progress("1/2").await?;
                    resume.notified().await;
                    job.progress(r#"{"done":2,"of":2}"#).await?;
                    Ok::<_, HandlerError>(())
                }
            },
            WorkerOptions::default().upkeep(Duration::from_millis(50)),
        );
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let running = tokio::spawn(worker.run_until(async move {
            let _ = stopped.await;
        }));

        eventually("the first report, while the job runs", || async {
            seen(&q, &id).await == Some((State::Active, Some("1/2".into())))
        })
        .await;
        go_on.notify_one();
        eventually("the last report, once the job is done", || async {
            seen(&q, &id).await == Some((State::Done, Some(r#"{"done":2,"of":2}"#.into())))
        })
        .await;
        stop.send(()).unwrap();
        running.await.unwrap().unwrap();

        // The lease is over: a report now is fenced and changes nothing.
        let late = echomq::Lease::held(&q, id.clone(), 1);
        assert!(matches!(late.progress("late").await, Err(Error { kind: ErrorKind::Fence, .. })));
        assert_eq!(seen(&q, &id).await.unwrap().1.as_deref(), Some(r#"{"done":2,"of":2}"#));

        assert_eq!(Upkeep::of(&q).purge(State::Done, Duration::ZERO).await.unwrap(), 1);
        assert_eq!(seen(&q, &id).await, None);
        let mut conn = server.client().get_multiplexed_async_connection().await.unwrap();
        let left: bool =
            redis::cmd("EXISTS").arg(q.keyspace().progress()).query_async(&mut conn).await.unwrap();
        assert!(!left, "the purge took the progress with the job");
    }
}
