//! Traces over OTLP (the `otel` feature, docs/tracing.md): when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`)
//! is set, `emq`'s spans go to that collector as OTLP over HTTP with
//! protobuf bodies: `emq enqueue`'s producer spans, and `emq work`'s job
//! spans, whose context each command gets in `TRACEPARENT`. The exporter
//! reads OpenTelemetry's other variables too (`OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_SERVICE_NAME`, `OTEL_BSP_*`). With
//! no endpoint set nothing is built: no layer, no thread, no span exported.

use std::collections::HashMap;
use std::time::Duration;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{SpanExporter, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::{Layer, Registry};

/// The exporter's wait for the collector, when `OTEL_EXPORTER_OTLP_TIMEOUT` says none.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The exporter's wait for the collector: `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`,
/// else `OTEL_EXPORTER_OTLP_TIMEOUT` (ms, as the specification reads them),
/// else [`TIMEOUT`]. Read here, since a timeout given the builder in code
/// wins over the variables, and the HTTP client needs it too.
fn timeout() -> Duration {
    ["OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"]
        .iter()
        .find_map(|name| std::env::var(name).ok()?.trim().parse::<u64>().ok())
        .map_or(TIMEOUT, Duration::from_millis)
}

/// The process's span exporter, while there is one: flushed and shut down
/// by [`Exporting::end`] before `emq` exits.
#[derive(Debug, Default)]
pub struct Exporting {
    provider: Option<SdkTracerProvider>,
}

/// The layer that makes `emq`'s and the library's spans OpenTelemetry's,
/// and the exporter behind it; `None` when no endpoint is set. A failure to
/// build the exporter is said on stderr, and `emq` goes on without it.
pub fn layer() -> (Option<Box<dyn Layer<Registry> + Send + Sync>>, Exporting) {
    let set = |name: &str| std::env::var(name).is_ok_and(|value| !value.trim().is_empty());
    let disabled = std::env::var("OTEL_SDK_DISABLED").is_ok_and(|value| value.eq_ignore_ascii_case("true"))
        || std::env::var("OTEL_TRACES_EXPORTER").is_ok_and(|value| value == "none");
    if disabled || !(set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) {
        return (None, Exporting::default());
    }
    let timeout = timeout();
    let exporter = SpanExporter::builder()
        .with_http()
        .with_http_client(OnRuntime::new(timeout))
        .with_timeout(timeout)
        .build();
    let exporter = match exporter {
        Ok(exporter) => exporter,
        Err(err) => {
            eprintln!("emq: OTLP traces are off: {err}");
            return (None, Exporting::default());
        }
    };
    let resource = match std::env::var("OTEL_SERVICE_NAME") {
        Ok(_) => Resource::builder().build(),
        Err(_) => Resource::builder().with_service_name("emq").build(),
    };
    let provider = SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource).build();
    let tracer = provider.tracer("emq");
    // Only EchoMQ's spans, at info and above whatever the log's level: a
    // `-q` quiets stderr, not the trace.
    let spans = Targets::new().with_target("echomq", LevelFilter::INFO).with_target("emq", LevelFilter::INFO);
    let layer = tracing_opentelemetry::layer().with_tracer(tracer).with_filter(spans);
    (Some(Box::new(layer)), Exporting { provider: Some(provider) })
}

impl Exporting {
    /// Send the spans still batched, then stop the exporter: at `emq`'s
    /// end, on its runtime (the exporter's requests run there).
    pub async fn end(self) {
        if let Some(provider) = self.provider {
            let ended = tokio::task::spawn_blocking(move || provider.shutdown()).await;
            if let Ok(Err(err)) = ended {
                eprintln!("emq: OTLP traces: {err}");
            }
        }
    }
}

/// A span for the command `emq` runs (`emq enqueue`), in the trace of
/// the program that started it: W3C `TRACEPARENT` and `TRACESTATE` in the
/// environment, as `emq work` passes them to its command; a trace of its
/// own when they are unset or not well formed.
pub fn command() -> tracing::Span {
    let span = tracing::info_span!("emq.command", otel.name = "emq enqueue");
    let mut carrier = HashMap::new();
    for (variable, header) in [("TRACEPARENT", "traceparent"), ("TRACESTATE", "tracestate")] {
        if let Ok(value) = std::env::var(variable) {
            carrier.insert(header.to_owned(), value);
        }
    }
    let parent = TraceContextPropagator::new().extract(&carrier);
    if opentelemetry::trace::TraceContextExt::span(&parent).span_context().is_valid() {
        let _ = span.set_parent(parent);
    }
    span
}

/// The trace context `emq work` hands its command for the job it runs
/// now: its job span's (in which the handler runs), when an exporter is
/// on; else the producer's from the job's headers, as it came.
pub fn run_context(job: &echomq::worker::JobContext) -> (Option<String>, Option<String>) {
    let mut headers = echomq::Headers::new();
    echomq::otel::inject(&tracing::Span::current(), &mut headers);
    if headers.is_empty() {
        let traceparent = job.traceparent().map(str::to_owned);
        let tracestate =
            traceparent.as_ref().and_then(|_| job.headers.get(echomq::otel::TRACESTATE).cloned());
        return (traceparent, tracestate);
    }
    (headers.remove(echomq::TRACEPARENT), headers.remove(echomq::otel::TRACESTATE))
}

/// The hyper client, run on the runtime `emq` runs on: the SDK's batch
/// exporter sends from a thread of its own, which has no runtime.
#[derive(Debug)]
struct OnRuntime {
    client: opentelemetry_http::hyper::HyperClient,
    runtime: tokio::runtime::Handle,
}

impl OnRuntime {
    /// Called on the runtime, as `emq` starts.
    fn new(timeout: Duration) -> OnRuntime {
        let client = opentelemetry_http::hyper::HyperClient::with_default_connector(timeout, None);
        OnRuntime { client, runtime: tokio::runtime::Handle::current() }
    }
}

#[async_trait::async_trait]
impl HttpClient for OnRuntime {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.client.clone();
        self.runtime.spawn(async move { client.send_bytes(request).await }).await?
    }
}
