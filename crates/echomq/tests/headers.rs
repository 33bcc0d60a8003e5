//! Headers: set by a producer, kept beside the record and handed to the
//! handler on Lua, Native and Embedded; a producer's W3C `traceparent` among
//! them is recorded on the job's span, the span what the handler logs is in.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use echomq::worker::{HandlerError, JobContext, Worker};
use echomq::{EnqueueOptions, Headers, Queue};
use echomq_test_support::unique_queue;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// Run one job through a worker on `q`; what its handler was handed.
async fn handed(q: &Queue) -> (Headers, Option<String>) {
    let (seen, got) = tokio::sync::oneshot::channel();
    let seen = Arc::new(Mutex::new(Some(seen)));
    let worker = Worker::new(q.clone(), move |job: JobContext| {
        let seen = seen.clone();
        async move {
            tracing::info!(job = %job.id, "in the handler");
            if let Some(seen) = seen.lock().unwrap().take() {
                let _ = seen.send((job.headers.clone(), job.traceparent().map(str::to_owned)));
            }
            Ok::<_, HandlerError>(())
        }
    });
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(worker.run_until(async move {
        let _ = stopped.await;
    }));
    let got = tokio::time::timeout(Duration::from_secs(30), got).await.expect("the job ran").unwrap();
    stop.send(()).unwrap();
    running.await.unwrap().unwrap();
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_reach_the_handler_on_every_executor() {
    let (_server, executors) = common::three_executors().await;
    for (name, via) in executors {
        let q = Queue::new(via, &unique_queue("headers")).unwrap();
        let options = EnqueueOptions::default().header("tenant", "acme").traceparent(TRACEPARENT);
        let id = q.enqueue_with(b"p".to_vec(), options).await.unwrap().id;
        let want: Headers =
            [("tenant".to_owned(), "acme".to_owned()), ("traceparent".to_owned(), TRACEPARENT.to_owned())]
                .into();
        assert_eq!(q.inspect(&id).await.unwrap().unwrap().headers, want, "{name}: kept beside the record");
        assert_eq!(handed(&q).await, (want.clone(), Some(TRACEPARENT.to_owned())), "{name}");
        // Too many: refused by the host in the server's words, nothing sent.
        let big = EnqueueOptions::default().header("big", "x".repeat(echomq::limits::MAX_HEADERS));
        let err = q.enqueue_with(b"p".to_vec(), big).await.unwrap_err();
        assert!(err.to_string().starts_with("EMQARG HEADERS must be 1 to 8192 bytes"), "{name}: {err}");
        assert_eq!(q.stats().await.unwrap().pending, 0, "{name}");
    }
}

/// Each span's fields as recorded, by span id; and the span of each event
/// whose message was "in the handler".
#[derive(Clone, Default)]
struct Recorder {
    fields: Arc<Mutex<BTreeMap<u64, BTreeMap<String, String>>>>,
    handler_spans: Arc<Mutex<Vec<u64>>>,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recorder {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _: Context<'_, S>) {
        let mut fields = self.fields.lock().unwrap();
        attrs.record(&mut Fields(fields.entry(id.into_u64()).or_default()));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        let mut fields = self.fields.lock().unwrap();
        values.record(&mut Fields(fields.entry(id.into_u64()).or_default()));
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        if fields.get("message").map(String::as_str) == Some("in the handler") {
            if let Some(span) = ctx.event_span(event) {
                self.handler_spans.lock().unwrap().push(span.id().into_u64());
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_producers_traceparent_is_on_the_span_the_handler_logs_in() {
    static RECORDER: OnceLock<Recorder> = OnceLock::new();
    let recorder = RECORDER.get_or_init(|| {
        let recorder = Recorder::default();
        let subscriber = tracing_subscriber::registry().with(recorder.clone());
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber of this test binary");
        recorder
    });
    let q = Queue::new(Arc::new(echomq::Embedded::new()), &unique_queue("trace")).unwrap();
    q.enqueue_with(b"p".to_vec(), EnqueueOptions::default().traceparent(TRACEPARENT)).await.unwrap();
    handed(&q).await;

    // This queue's handler spans (the other test's handlers log too).
    let all = recorder.fields.lock().unwrap().clone();
    let spans: Vec<&BTreeMap<String, String>> = recorder
        .handler_spans
        .lock()
        .unwrap()
        .iter()
        .filter_map(|id| all.get(id))
        .filter(|fields| fields.get("queue").map(String::as_str) == Some(q.name()))
        .collect();
    assert_eq!(spans.len(), 1, "the handler logged once, in its job's span");
    let fields = spans[0];
    assert_eq!(fields.get("traceparent").map(String::as_str), Some(TRACEPARENT), "{fields:?}");
    assert_eq!(
        fields.get("trace_id").map(String::as_str),
        Some("4bf92f3577b34da6a3ce929d0e0e4736"),
        "{fields:?}"
    );
    assert!(fields.contains_key("attempt"), "the job's own span: {fields:?}");

    // A malformed one is handed to the handler as a header, but not taken as
    // trace context.
    q.enqueue_with(b"p".to_vec(), EnqueueOptions::default().traceparent("00-not-a-trace-01")).await.unwrap();
    let (headers, traceparent) = handed(&q).await;
    assert_eq!(headers.get("traceparent").map(String::as_str), Some("00-not-a-trace-01"));
    assert_eq!(traceparent, None);
}
