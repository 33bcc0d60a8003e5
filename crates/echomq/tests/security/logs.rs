//! No password in an error or a log: every error a URL with a password can
//! lead to (a bad URL, no server, a wrong password, a password changed under
//! a running worker) is shown, Display and Debug, and every span and event
//! the worker traces meanwhile is captured; none holds the password.
//!
//! The capture is a small `tracing::Subscriber` of its own (the lockfile has
//! no tracing-subscriber), installed for the whole test binary: it writes each
//! span's and event's fields as text.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use echomq::worker::{HandlerError, JobContext, Worker, WorkerOptions};
use echomq::{Queue, RetryPolicy};
use echomq_test_support::unique_queue;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

use super::{admin, create_user, eventually, server, url_as, Via, WORKER_LUA, WORKER_NATIVE};

/// Every span and event, as text, since the capture was installed.
struct Capture {
    lines: Mutex<Vec<String>>,
    next_id: AtomicU64,
}

/// Writes fields as `name=value`.
struct Fields<'a>(&'a mut String);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={value:?}", field.name());
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut line = format!("span {}:", span.metadata().name());
        span.record(&mut Fields(&mut line));
        self.lines.lock().unwrap().push(line);
        Id::from_u64(self.next_id.fetch_add(1, Ordering::Relaxed) + 1)
    }

    fn record(&self, _: &Id, values: &Record<'_>) {
        let mut line = "span record:".to_owned();
        values.record(&mut Fields(&mut line));
        self.lines.lock().unwrap().push(line);
    }

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut line = format!("{} {}:", event.metadata().level(), event.metadata().target());
        event.record(&mut Fields(&mut line));
        self.lines.lock().unwrap().push(line);
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// The binary's one capture, installed on first use.
fn capture() -> &'static Arc<Capture> {
    static CAPTURE: OnceLock<Arc<Capture>> = OnceLock::new();
    CAPTURE.get_or_init(|| {
        let capture = Arc::new(Capture { lines: Mutex::default(), next_id: AtomicU64::new(0) });
        tracing::subscriber::set_global_default(capture.clone()).expect("the only subscriber");
        capture
    })
}

fn logged(what: &str) -> bool {
    capture().lines.lock().unwrap().iter().any(|line| line.contains(what))
}

fn assert_hidden(secret: &str, shown: &str) {
    assert!(!shown.contains(secret), "the password {secret:?} shows in: {shown}");
}

/// Display and Debug of a failed connect (tried once: retries would only
/// wait to fail the same way).
async fn connect_error(url: &str) -> String {
    let once = redis::aio::ConnectionManagerConfig::new().set_number_of_retries(0);
    let err = match redis::Client::open(url) {
        Err(err) => echomq::Error::from(err),
        Ok(client) => match echomq::connect_with(&client, once).await {
            Ok(_) => panic!("a connect that had to fail succeeded"),
            Err(err) => err,
        },
    };
    format!("{err} {err:?}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_password_in_errors() {
    let secret = "Pa55-in-the-URL";
    // URLs that do not parse, with the password inside.
    for url in [
        format!("redis://u:{secret}@127.0.0.1:99999/"),
        format!("redis://u:{secret}@127.0.0.1:1/not-a-db"),
        format!("redis://u:{secret}@127.0.0.1:1/?protocol=9"),
        format!("rediss://u:{secret}@127.0.0.1:1/#nope"),
        format!("redis://u:{secret}@0.0.0.0:1/"),
        format!("http://u:{secret}@127.0.0.1:1/"),
    ] {
        assert_hidden(secret, &connect_error(&url).await);
    }
    // No server there.
    let free = echomq_test_support::free_port();
    assert_hidden(secret, &connect_error(&format!("redis://u:{secret}@127.0.0.1:{free}/")).await);
    // The client itself, as a program might debug-print it.
    let client = redis::Client::open(format!("redis://u:{secret}@127.0.0.1:{free}/")).unwrap();
    assert_hidden(secret, &format!("{client:?} {:?}", client.get_connection_info()));
    // A server that refuses the password: an ACL user's, and the default user's.
    let server = server(Via::Lua, &[]);
    create_user(&server, "worker", "the-real-one", WORKER_LUA).await;
    let () = redis::cmd("ACL")
        .arg(&["SETUSER", "default", "resetpass", ">the-real-one"])
        .query_async(&mut admin(&server).await)
        .await
        .unwrap();
    assert_hidden(secret, &connect_error(&url_as(&server, "worker", secret)).await);
    assert_hidden(secret, &connect_error(&url_as(&server, "default", secret)).await);
    assert_hidden(secret, &connect_error(&format!("redis://:{secret}@127.0.0.1:{}/", server.port())).await);
}

/// A worker runs as an ACL user; its handler fails (so it logs the failure),
/// then its password is changed and its connections killed, so every
/// reconnect is refused and the worker logs its failing claims. No line
/// of any log holds the password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_password_in_tracing_logs() {
    let capture = capture();
    for (via, rules) in [(Via::Lua, WORKER_LUA), (Via::Native, WORKER_NATIVE)] {
        let secret = format!("L0gged-{via:?}-secret");
        let server = server(via, &[]);
        create_user(&server, "logger", &secret, rules).await;
        let client = redis::Client::open(url_as(&server, "logger", &secret)).unwrap();
        // One retry of a refused reconnect, not the six (about 10 s) redis-rs
        // makes by default: the test waits for the refusal to be logged.
        let retry_once = redis::aio::ConnectionManagerConfig::new().set_number_of_retries(1);
        let executor = echomq::connect_with(&client, retry_once).await.unwrap();
        let queue = Queue::new(executor, &unique_queue("logs")).unwrap();
        let options = WorkerOptions::default()
            .upkeep(Duration::from_millis(50))
            .idle_wait(Duration::from_millis(100))
            .retry(RetryPolicy::new().max_attempts(1));
        let handler = |_: JobContext| async { Err::<(), _>(HandlerError::from("the handler failed")) };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let run = tokio::spawn(Worker::with_options(queue.clone(), handler, options).run_until(async {
            let _ = stopped.await;
        }));
        queue.enqueue(b"fails".to_vec()).await.unwrap();
        eventually("the failure is logged", || async { logged("the handler failed") }).await;

        let mut admin = admin(&server).await;
        let () = redis::cmd("ACL")
            .arg("SETUSER")
            .arg("logger")
            .arg("resetpass")
            .arg(">another-one")
            .query_async(&mut admin)
            .await
            .unwrap();
        let _: u64 =
            redis::cmd("CLIENT").arg("KILL").arg("USER").arg("logger").query_async(&mut admin).await.unwrap();
        let before = capture.lines.lock().unwrap().len();
        eventually("a refused reconnect is logged", || async {
            capture.lines.lock().unwrap()[before..]
                .iter()
                .any(|line| line.contains("failed") && line.contains("error="))
        })
        .await;
        let _ = stop.send(());
        tokio::time::timeout(Duration::from_secs(30), run).await.expect("the worker stops").unwrap().unwrap();
        let lines = capture.lines.lock().unwrap().clone();
        for line in &lines {
            assert_hidden(&secret, line);
        }
        assert!(lines.iter().any(|line| line.contains("span emq.job:")), "spans are captured: {lines:?}");
    }
}
