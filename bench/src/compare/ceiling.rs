//! The ceiling, sent from this same client (the `redis` crate's
//! `ConnectionManager`, as the executors use) in the same batch shape as
//! `add-bulk` (pipelines of 100 jobs, one round trip each), so that
//! `add-bulk / hset-zadd` measures EchoMQ and not the client:
//! - `hset-zadd`: the record (`state`, `attempts`, `payload`) and the pending
//!   set, nothing checked: the least any queue must write;
//! - `seed-lua`: EVALSHA of the ENQUEUE script as the Lua executor loads it
//!   (includes expanded), with keys and arguments built once per job.

use echomq::executor::Call;
use echomq::transition::Due;
use echomq::transition::Enqueue;
use echomq::{JobId, Keyspace, Name};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::{server, BULK};

/// Jobs per second of `workload` over `jobs` jobs, and the server's µs per job.
pub(crate) async fn run(url: &str, workload: &str, jobs: usize, size: usize) -> (f64, Option<server::Spent>) {
    let client = redis::Client::open(url).expect("a Redis URL");
    let config = ConnectionManagerConfig::new().set_response_timeout(None);
    let mut conn = ConnectionManager::new_with_config(client, config).await.expect("connect");
    let keys = Keyspace::new(&echomq_test_support::unique_queue("ceiling")).expect("a valid name");
    let payload = vec![b'x'; size];
    let script = redis::Script::new(&echomq::executor::script_source(Name::Enqueue));
    script.load_async(&mut conn).await.expect("SCRIPT LOAD");
    let stats = server::Stats::connect(url, true).await;
    let started = stats.start().await;
    let mut left = jobs;
    while left > 0 {
        let n = left.min(BULK);
        let mut pipe = redis::pipe();
        for _ in 0..n {
            let id = JobId::mint();
            match workload {
                "hset-zadd" => {
                    pipe.cmd("HSET")
                        .arg(keys.job(&id))
                        .arg("state")
                        .arg("pending")
                        .arg("attempts")
                        .arg(0)
                        .arg("payload")
                        .arg(&payload)
                        .ignore();
                    pipe.cmd("ZADD").arg(keys.pending()).arg(0).arg(id.as_str()).ignore();
                }
                "seed-lua" => {
                    let enqueue = Enqueue {
                        id,
                        payload: payload.clone(),
                        priority: 0,
                        due: Due::Now,
                        policy: None,
                        unique: None,
                        headers: Default::default(),
                        parent: None,
                        group: None,
                    };
                    let call = Call::new(&keys, &enqueue).expect("an enqueue");
                    pipe.cmd("EVALSHA")
                        .arg(script.get_hash())
                        .arg(call.keys.len())
                        .arg(&call.keys)
                        .arg(&call.args);
                }
                other => panic!("no ceiling {other}"),
            }
        }
        let _: redis::Value = pipe.query_async(&mut conn).await.expect("the pipeline");
        left -= n;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let spent = stats.spent_since_start(jobs).await;
    (jobs as f64 / elapsed, spent)
}
