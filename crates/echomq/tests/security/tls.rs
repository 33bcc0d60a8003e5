//! A worker over `rediss://`, on Lua and on Native, against a redis-server
//! that speaks only TLS (no plain port), its certificate signed by a CA the
//! test makes with openssl and hands to the redis crate's TLS config.

use std::time::Duration;

use echomq::{Executor, Lua, Queue};
use echomq_test_support::{module_path, unique_queue, RedisServer, ServerOptions};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::{full_run, Via};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_over_rediss_on_lua_and_native() {
    for via in [Via::Lua, Via::Native] {
        let module = (via == Via::Native).then(module_path);
        let server = RedisServer::start_with(ServerOptions { module, tls: true, ..ServerOptions::default() });
        let executor: std::sync::Arc<dyn Executor> = match via {
            // With the module loaded, connect picks Native; without, Lua.
            Via::Native => echomq::connect(&server.client()).await.expect("connect over TLS"),
            Via::Lua => {
                let config = ConnectionManagerConfig::new().set_response_timeout(None);
                let conn = ConnectionManager::new_with_config(server.client(), config).await.unwrap();
                std::sync::Arc::new(Lua::new(conn))
            }
        };
        assert_eq!(executor.setup().waits, via == Via::Native, "{via:?}");
        full_run(Queue::new(executor, &unique_queue("tls")).unwrap()).await;

        // Only TLS: a plain connection to the port gets no answer, and a
        // client without the CA does not trust the server.
        let plain = redis::Client::open(format!("redis://127.0.0.1:{}/", server.port())).unwrap();
        let pong = plain
            .get_connection_with_timeout(Duration::from_secs(2))
            .and_then(|mut conn| redis::cmd("PING").query::<String>(&mut conn));
        assert!(pong.is_err(), "{via:?}: a plain-text PING was answered");
        let untrusted = redis::Client::open(server.url()).unwrap();
        let Err(err) = untrusted.get_multiplexed_async_connection().await else {
            panic!("{via:?}: a client without the CA trusted the server");
        };
        assert!(err.to_string().contains("certificate"), "{via:?}: {err}");
    }
}
