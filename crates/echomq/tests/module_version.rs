//! The host detects the module by `EMQ.VERSION`: a server whose module
//! answers this host's major (1.x) gets the native executor, a server with
//! no module the scripts. (A module answering another major is refused with
//! `ErrorKind::OtherMajor` and nothing written: the decision is unit-tested in
//! `executor/native.rs`, as no module of another major can be loaded here.)

use echomq::executor::detect;
use echomq::Queue;
use echomq_test_support::{unique_queue, RedisServer};

/// The fields of the record `queue` enqueues through the executor `detect` picks.
async fn record_fields(server: &RedisServer) -> Vec<String> {
    let conn = server.connection().await;
    let queue = Queue::new(detect(conn.clone()).await.unwrap(), &unique_queue("v")).unwrap();
    let id = queue.enqueue(b"p".to_vec()).await.unwrap();
    let mut fields: Vec<String> =
        redis::cmd("HKEYS").arg(queue.keyspace().job(&id)).query_async(&mut conn.clone()).await.unwrap();
    fields.sort();
    fields
}

#[tokio::test]
async fn a_module_of_this_major_is_used_and_no_module_means_the_scripts() {
    let native = RedisServer::start_with_module();
    let version: String =
        redis::cmd("EMQ.VERSION").query_async(&mut native.connection().await).await.unwrap();
    assert_eq!(version, echomq_core::PROTOCOL.to_string());
    // A native birth: the seed's five fields.
    assert_eq!(record_fields(&native).await, ["attempts", "enqueued_at", "payload", "state", "updated_at"]);
    // The scripts write the three birth fields only.
    assert_eq!(record_fields(&RedisServer::start()).await, ["attempts", "payload", "state"]);
}

/// The native executor on a server without the module (one restarted
/// without `--loadmodule`) says so, naming the command and what to do, as
/// a server error: not a connection that cannot reach the server.
#[tokio::test]
async fn a_server_without_the_module_is_said_so() {
    let plain = RedisServer::start();
    let native = echomq::Native::new(plain.connection().await);
    let queue = Queue::new(std::sync::Arc::new(native), &unique_queue("no-module")).unwrap();
    let err = queue.enqueue(b"p".to_vec()).await.unwrap_err();
    assert_eq!(err.kind, echomq::ErrorKind::Server, "{err}");
    let said = err.to_string();
    assert!(said.contains("the server has no echomq module (EMQ.ENQUEUE is an unknown command)"), "{said}");
    assert!(said.contains("Load the module, or use the Lua executor"), "{said}");
}
