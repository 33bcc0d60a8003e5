//! One trace from a producer to every worker (issue 55): jobs enqueued
//! inside a span are run by the Rust worker (in this process), by `emq
//! work` and by the Python worker, each exporting over OTLP/HTTP to a
//! receiver in this test; the receiver finds one trace, the producer's
//! span the ancestor of every run's, a retry a sibling of the attempt that
//! failed (linked to the producer, not nested), and the messaging
//! conventions' attributes on each.
//!
//! The Python worker runs when `ECHOMQ_PYTHON` names a Python with the
//! echomq package and `opentelemetry-sdk` and
//! `opentelemetry-exporter-otlp-proto-http` installed (scripts/test sets
//! it); else the test says it left that worker out. With
//! `ECHOMQ_TRACE_TREE=<file>` the trace is written there as a text tree,
//! and with `ECHOMQ_TRACE_HTML=<file>` as an HTML timeline (docs/tracing.md
//! shows both).

#![cfg(feature = "otel")]

mod common;

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Emq, Scratch, Worker as EmqWork};
use echomq::worker::{HandlerError, JobContext, Worker};
use echomq::{EnqueueOptions, Queue};
use echomq_test_support::{eventually, unique_queue, RedisServer};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_sdk::trace::SdkTracerProvider;
use prost::Message as _;
use tracing::Instrument as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::Layer as _;

/// A span as the receiver got it.
#[derive(Clone, Debug)]
struct Got {
    service: String,
    trace: Vec<u8>,
    id: Vec<u8>,
    parent: Vec<u8>,
    name: String,
    /// 1 internal, 4 producer, 5 consumer (OTLP's `SpanKind`).
    kind: i32,
    attributes: BTreeMap<String, String>,
    links: Vec<Vec<u8>>,
    /// Its start and end, ns since the Unix epoch.
    start: u64,
    end: u64,
}

/// The OTLP/HTTP receiver: `POST /v1/traces`, protobuf, every span kept.
#[derive(Clone, Default)]
struct Receiver {
    spans: Arc<Mutex<Vec<Got>>>,
}

impl Receiver {
    /// Serve on a free loopback port; its base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    async fn start(&self) -> String {
        let spans = self.spans.clone();
        let route = axum::routing::post(move |body: axum::body::Bytes| {
            let spans = spans.clone();
            async move {
                let request = ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf export");
                spans.lock().unwrap().extend(received(request));
                ([("content-type", "application/x-protobuf")], Vec::new())
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let app = axum::Router::new().route("/v1/traces", route);
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("http://{address}")
    }

    fn spans(&self) -> Vec<Got> {
        self.spans.lock().unwrap().clone()
    }

    /// The spans named `name` (`process <queue>`, `send <queue>`).
    fn named(&self, name: &str) -> Vec<Got> {
        self.spans().into_iter().filter(|span| span.name == name).collect()
    }
}

/// An export's spans, flattened.
fn received(request: ExportTraceServiceRequest) -> Vec<Got> {
    let text = |value: Option<Value>| match value {
        Some(Value::StringValue(text)) => text,
        Some(Value::IntValue(n)) => n.to_string(),
        Some(Value::BoolValue(b)) => b.to_string(),
        Some(Value::DoubleValue(x)) => x.to_string(),
        other => format!("{other:?}"),
    };
    let mut spans = Vec::new();
    for resource in request.resource_spans {
        let service = resource
            .resource
            .iter()
            .flat_map(|resource| &resource.attributes)
            .find(|kv| kv.key == "service.name")
            .map(|kv| text(kv.value.clone().and_then(|v| v.value)))
            .unwrap_or_default();
        for span in resource.scope_spans.into_iter().flat_map(|scope| scope.spans) {
            spans.push(Got {
                service: service.clone(),
                trace: span.trace_id,
                id: span.span_id,
                parent: span.parent_span_id,
                name: span.name,
                kind: span.kind,
                attributes: span
                    .attributes
                    .into_iter()
                    .map(|kv| (kv.key, text(kv.value.and_then(|v| v.value))))
                    .collect(),
                links: span.links.into_iter().map(|link| link.span_id).collect(),
                start: span.start_time_unix_nano,
                end: span.end_time_unix_nano,
            });
        }
    }
    spans
}

/// Whether `ancestor` is `span`'s parent, or its parent's, and so on.
fn descends(spans: &[Got], span: &Got, ancestor: &Got) -> bool {
    let mut at = span.parent.clone();
    while !at.is_empty() {
        if at == ancestor.id {
            return true;
        }
        at = spans.iter().find(|s| s.id == at).map(|s| s.parent.clone()).unwrap_or_default();
    }
    false
}

/// This process's exporter: hyper on the test's runtime, as `emq`'s is.
#[derive(Debug)]
struct OnRuntime(opentelemetry_http::hyper::HyperClient, tokio::runtime::Handle);

#[async_trait::async_trait]
impl HttpClient for OnRuntime {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.0.clone();
        self.1.spawn(async move { client.send_bytes(request).await }).await?
    }
}

/// Export this process's spans to `endpoint`, as service `rust-app` (the producer, and the Rust worker).
fn export_to(endpoint: &str) -> SdkTracerProvider {
    let client =
        opentelemetry_http::hyper::HyperClient::with_default_connector(Duration::from_secs(10), None);
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(format!("{endpoint}/v1/traces"))
        .with_http_client(OnRuntime(client, tokio::runtime::Handle::current()))
        .build()
        .unwrap();
    let resource = opentelemetry_sdk::Resource::builder_empty().with_service_name("rust-app").build();
    let provider = SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource).build();
    // At info, as emq's: not the transitions' debug spans.
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("test"))
        .with_filter(tracing_subscriber::filter::LevelFilter::INFO);
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))
        .expect("the only subscriber of this test binary");
    provider
}

/// The Python worker: one job of `queue`, its spans exported to `endpoint`.
const PYTHON_WORKER: &str = r#"
import asyncio, sys
import echomq
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

url, name, endpoint = sys.argv[1:4]
provider = TracerProvider(resource=Resource.create({"service.name": "python-worker"}))
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint + "/v1/traces")))
trace.set_tracer_provider(provider)

async def main():
    queue = await echomq.Queue.open(url, name)
    worker = None
    async def handle(job):
        worker.stop()
    worker = echomq.Worker(queue, handle, idle_wait=0.05)
    await worker.run(handle_signals=False)
    provider.shutdown()

asyncio.run(main())
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_trace_from_the_producer_through_every_worker() {
    let receiver = Receiver::default();
    let endpoint = receiver.start().await;
    let provider = export_to(&endpoint);
    let server = RedisServer::start();
    let client = redis::Client::open(server.url()).unwrap();
    let via = echomq::connect(&client).await.unwrap();
    let (rust, emq_q, python_q) = (unique_queue("rust"), unique_queue("emq"), unique_queue("python"));
    let python = std::env::var("ECHOMQ_PYTHON").ok().filter(|p| !p.is_empty());

    // The producer: three jobs enqueued inside one span, the Rust one to
    // fail its first attempt.
    let checkout = tracing::info_span!("checkout");
    let root_context = {
        use tracing_opentelemetry::OpenTelemetrySpanExt as _;
        opentelemetry::trace::TraceContextExt::span(&checkout.context()).span_context().clone()
    };
    async {
        let retried = EnqueueOptions::default().attempts(3).backoff(Duration::from_millis(10));
        Queue::new(via.clone(), &rust).unwrap().enqueue_with(b"r".to_vec(), retried).await.unwrap();
        Queue::new(via.clone(), &emq_q).unwrap().enqueue(b"e".to_vec()).await.unwrap();
        if python.is_some() {
            Queue::new(via.clone(), &python_q).unwrap().enqueue(b"p".to_vec()).await.unwrap();
        }
    }
    .instrument(checkout.clone())
    .await;
    drop(checkout);

    let running = rust_worker(Queue::new(via.clone(), &rust).unwrap());
    let scratch = Scratch::new("tracing");
    let follow_up = unique_queue("follow-up");
    let mut work = emq_work(&server, &scratch, &emq_q, &follow_up, &endpoint);

    // The Python worker, when there is one to run (killed on drop, as `emq work` is).
    let mut python_worker = python.as_ref().map(|python| {
        std::fs::write(scratch.path("worker.py"), PYTHON_WORKER).unwrap();
        let command = std::process::Command::new(python)
            .arg(scratch.path("worker.py"))
            .args([server.url().as_str(), &python_q, &endpoint])
            .stdin(Stdio::null())
            .spawn();
        EmqWork(command.unwrap())
    });
    if python.is_none() {
        eprintln!(
            "the Python worker is left out: set ECHOMQ_PYTHON to a Python with echomq and opentelemetry-sdk"
        );
    }

    running.await.unwrap().unwrap();
    let flushed = tokio::task::spawn_blocking(move || provider.force_flush()).await.unwrap();
    flushed.expect("this process's spans are exported");
    let (rust_runs, emq_runs) = (format!("process {rust}"), format!("process {emq_q}"));
    eventually("every run's span is received", || {
        let receiver = receiver.clone();
        let (rust_runs, emq_runs, python_runs) =
            (rust_runs.clone(), emq_runs.clone(), format!("process {python_q}"));
        let python = python.is_some();
        let follow_up = format!("send {follow_up}");
        async move {
            receiver.named(&rust_runs).len() == 2
                && receiver.named(&emq_runs).len() == 1
                && receiver.named(&follow_up).len() == 1
                && (!python || receiver.named(&python_runs).len() == 1)
        }
    })
    .await;
    assert!(work.stop(), "emq work stops on SIGTERM");
    if let Some(mut python_worker) = python_worker.take() {
        assert!(python_worker.0.wait().unwrap().success(), "the Python worker ends after its job");
    }

    let spans = receiver.spans();
    let tree = render(&spans);
    if let Ok(file) = std::env::var("ECHOMQ_TRACE_TREE") {
        std::fs::write(file, &tree).unwrap();
    }
    if let Ok(file) = std::env::var("ECHOMQ_TRACE_HTML") {
        std::fs::write(file, timeline(&spans)).unwrap();
    }
    // One trace: the checkout's.
    let trace = root_context.trace_id().to_bytes().to_vec();
    let root = spans.iter().find(|s| s.name == "checkout").expect("the producer's root span");
    assert_eq!(root.trace, trace, "{tree}");
    assert!(spans.iter().all(|s| s.trace == trace), "every span is in the checkout's trace:\n{tree}");
    let mut queues = vec![(rust.as_str(), "rust-app"), (emq_q.as_str(), "emq")];
    if python.is_some() {
        queues.push((python_q.as_str(), "python-worker"));
    }
    for (queue, service) in queues {
        check_runs(&receiver, root, queue, service, &tree);
    }
    let outcome = |run: &Got| {
        (
            run.attributes["messaging.echomq.message.attempt"].clone(),
            run.attributes["messaging.echomq.outcome"].clone(),
        )
    };
    let mut attempts: Vec<_> = receiver.named(&rust_runs).iter().map(outcome).collect();
    attempts.sort();
    assert_eq!(attempts, [("1".into(), "failed".into()), ("2".into(), "completed".into())], "{tree}");
    // emq work's command got its run's context, and its `emq enqueue` went on in it.
    let emq_run = &receiver.named(&emq_runs)[0];
    let given = scratch.lines("traceparent");
    assert_eq!(given.len(), 1, "{given:?}");
    assert_eq!(given[0][36..52], hex(&emq_run.id), "TRACEPARENT names the run's span");
    let follow_up = &receiver.named(&format!("send {follow_up}"))[0];
    assert!(descends(&spans, follow_up, emq_run), "the command's enqueue is under its run:\n{tree}");
    println!("{tree}");
}

/// The Rust worker, here, on `queue` until its job completes: its first
/// attempt fails, its second completes.
fn rust_worker(queue: Queue) -> tokio::task::JoinHandle<echomq::Result<()>> {
    let (done, finished) = tokio::sync::oneshot::channel();
    let done = Arc::new(Mutex::new(Some(done)));
    let worker = Worker::new(queue, move |job: JobContext| {
        let done = done.clone();
        async move {
            if job.attempt == 1 {
                return Err(HandlerError::from("the first attempt fails"));
            }
            let _ = done.lock().unwrap().take().map(|done| done.send(()));
            Ok::<_, HandlerError>(())
        }
    });
    tokio::spawn(worker.run_until(async {
        let _ = finished.await;
    }))
}

/// `emq work` on `queue`, exporting to `endpoint`: its command records the
/// TRACEPARENT it was given in `scratch`, and enqueues a job to `follow_up`
/// with `emq enqueue`, in the same trace.
fn emq_work(
    server: &RedisServer,
    scratch: &Scratch,
    queue: &str,
    follow_up: &str,
    endpoint: &str,
) -> EmqWork {
    let emq = Emq { url: server.url(), via: "lua" };
    let script = format!(
        r#"cat >/dev/null; printf '%s\n' "$TRACEPARENT" > "$DIR/traceparent"; "$EMQ" --url "$URL" enqueue {follow_up} f >/dev/null"#
    );
    let mut work = emq.command(&["work", queue, "--", "sh", "-c", &script]);
    work.env("DIR", &scratch.0)
        .env("EMQ", env!("CARGO_BIN_EXE_emq"))
        .env("URL", server.url())
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env("OTEL_BSP_SCHEDULE_DELAY", "50")
        .env_remove("OTEL_SERVICE_NAME")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(scratch.path("log")).unwrap());
    EmqWork(work.spawn().unwrap())
}

/// Check the runs of `queue`'s job: each a consumer span of `service`, the
/// child of the job's one send span (under `root`) and linked to it, with
/// the messaging attributes.
fn check_runs(receiver: &Receiver, root: &Got, queue: &str, service: &str, tree: &str) {
    let spans = receiver.spans();
    let sends = receiver.named(&format!("send {queue}"));
    let [send] = sends.as_slice() else { panic!("one send span for {queue}:\n{tree}") };
    assert_eq!(send.kind, 4, "send {queue} is a producer span");
    assert!(descends(&spans, send, root), "send {queue} is under the checkout:\n{tree}");
    let runs = receiver.named(&format!("process {queue}"));
    assert!(!runs.is_empty(), "{queue} ran:\n{tree}");
    for run in runs {
        assert_eq!(run.service, service, "{tree}");
        assert_eq!(run.kind, 5, "process {queue} is a consumer span");
        assert_eq!(run.parent, send.id, "each attempt is the producer's child, never nested:\n{tree}");
        assert_eq!(run.links, std::slice::from_ref(&send.id), "and linked to it:\n{tree}");
        for (name, value) in [
            ("messaging.system", "echomq"),
            ("messaging.operation.type", "process"),
            ("messaging.destination.name", queue),
        ] {
            assert_eq!(run.attributes.get(name).map(String::as_str), Some(value), "{name}: {run:?}");
        }
        assert!(run.attributes.get("messaging.message.id").is_some_and(|id| id.starts_with("JOB_")));
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The spans in the order [`render`] prints them, each with its depth.
fn in_tree_order(spans: &[Got]) -> Vec<(usize, &Got)> {
    fn walk<'a>(spans: &'a [Got], parent: &[u8], depth: usize, out: &mut Vec<(usize, &'a Got)>) {
        let mut children: Vec<&Got> = spans.iter().filter(|s| s.parent == parent).collect();
        children
            .sort_by_key(|s| (s.name.clone(), s.attributes.get("messaging.echomq.message.attempt").cloned()));
        for span in children {
            out.push((depth, span));
            walk(spans, &span.id, depth + 1, out);
        }
    }
    let mut out = Vec::new();
    walk(spans, &[], 0, &mut out);
    out
}

/// The trace as an HTML timeline, as a trace viewer draws one: a row per
/// span in tree order, its bar placed by its start and end.
fn timeline(spans: &[Got]) -> String {
    let first = spans.iter().map(|s| s.start).min().unwrap_or_default();
    let last = spans.iter().map(|s| s.end).max().unwrap_or_default();
    let width = (last - first).max(1) as f64;
    let mut rows = String::new();
    for (depth, span) in in_tree_order(spans) {
        let left = (span.start - first) as f64 / width * 100.0;
        let length = ((span.end - span.start) as f64 / width * 100.0).max(0.3);
        let outcome = span.attributes.get("messaging.echomq.outcome").map_or("", String::as_str);
        let attempt = span
            .attributes
            .get("messaging.echomq.message.attempt")
            .map_or(String::new(), |attempt| format!(" · attempt {attempt} {outcome}"));
        rows += &format!(
            "<tr><td style=\"padding-left:{}em\">{}<small> {}{attempt}</small></td><td class=t>\
             <div class=\"bar {}\" style=\"margin-left:{left:.2}%;width:{length:.2}%\"></div></td>\
             <td class=ms>{:.1} ms</td></tr>\n",
            depth * 2,
            span.name,
            span.service,
            span.service,
            (span.end - span.start) as f64 / 1e6,
        );
    }
    format!(
        "<!doctype html><meta charset=utf-8><title>trace {trace}</title><style>\
         body{{font:14px system-ui,sans-serif;margin:16px}} table{{border-collapse:collapse;width:100%}}\
         td{{padding:3px 6px;border-bottom:1px solid #eee;white-space:nowrap}} td.t{{width:55%}}\
         td.ms{{text-align:right;color:#555}} small{{color:#666}} .bar{{height:12px;border-radius:2px;background:#888}}\
         .rust-app{{background:#d9822b}} .emq{{background:#2b7bd9}} .python-worker{{background:#3a9a4a}}\
         </style><h3>trace {trace} · {:.1} ms · received by the test's OTLP receiver</h3><table>\n{rows}</table>",
        width / 1e6,
        trace = spans.first().map(|s| hex(&s.trace)).unwrap_or_default(),
    )
}

/// The trace as an indented tree: each span under its parent, with its
/// service, and its link when it has one.
fn render(spans: &[Got]) -> String {
    let mut out = format!("trace {}\n", spans.first().map(|s| hex(&s.trace)).unwrap_or_default());
    for (depth, span) in in_tree_order(spans) {
        out += &format!("{}{} [{}] span {}", "  ".repeat(depth + 1), span.name, span.service, hex(&span.id));
        for key in ["messaging.echomq.message.attempt", "messaging.echomq.outcome"] {
            if let Some(value) = span.attributes.get(key) {
                out += &format!(" {}={value}", key.trim_start_matches("messaging.echomq."));
            }
        }
        for link in &span.links {
            out += &format!(" (link → {})", hex(link));
        }
        out.push('\n');
    }
    out
}

/// The names of `pid`'s threads (Linux's `comm`, 15 bytes at most).
fn threads(pid: u32) -> Vec<String> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
    tasks.filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok()).collect()
}

/// With no endpoint set, `emq work` builds no exporter (no batch thread)
/// and hands its command the producer's context as it came; with one, it
/// has the SDK's batch thread, and the command its run's context.
#[test]
fn an_exporter_only_when_an_endpoint_is_set() {
    let server = RedisServer::start();
    let emq = Emq { url: server.url(), via: "lua" };
    let producer = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    for endpoint in [None, Some("http://127.0.0.1:9/")] {
        let scratch = Scratch::new("exporter");
        let q = unique_queue("exporter");
        emq.ok(&["enqueue", &q, "x", "--header", &format!("traceparent={producer}")]);
        let script = r#"cat >/dev/null; printf '%s\n' "$TRACEPARENT" > "$DIR/traceparent""#;
        let mut work = emq.command(&["work", &q, "--", "sh", "-c", script]);
        work.env("DIR", &scratch.0)
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
        if let Some(endpoint) = endpoint {
            work.env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint);
        }
        let mut work =
            EmqWork(work.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap());
        common::eventually("the job ran", || !scratch.lines("traceparent").is_empty());
        let given = scratch.lines("traceparent").remove(0);
        let batching = threads(work.id()).iter().any(|name| name.starts_with("OpenTelemetry"));
        match endpoint {
            None => {
                assert!(!batching, "no exporter's thread: {:?}", threads(work.id()));
                assert_eq!(given, producer, "the producer's context, as it came");
            }
            Some(_) => {
                assert!(batching, "the exporter's batch thread: {:?}", threads(work.id()));
                assert_eq!(given[..36], producer[..36], "the producer's trace");
                assert_ne!(given[36..52], producer[36..52], "the run's own span");
            }
        }
        assert!(work.stop(), "emq work stops on SIGTERM");
    }
}
