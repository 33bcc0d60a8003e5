//! OpenTelemetry (the `otel` feature): one trace from a job's producer to
//! each attempt's run.
//!
//! - An enqueue ([`Queue::enqueue_with`](crate::Queue::enqueue_with), and
//!   [`enqueue`](crate::Queue::enqueue) through it) runs in a producer span,
//!   `send <queue>`, a child of the span it is called in; that span's W3C
//!   context goes into the job's headers (`traceparent`, and `tracestate`
//!   when there is one), unless the caller set a `traceparent` itself.
//!   ENQUEUEMANY carries no headers: a batch's jobs carry no context.
//! - The worker's job span (`emq.job`, exported as `process <queue>`, kind
//!   consumer) is a child of the context in the job's headers, whichever
//!   speaker wrote them, and links to it too, as OpenTelemetry's messaging
//!   conventions ask of a process span. Every attempt is its own span under
//!   the producer's: a retry is a sibling of the attempt that failed, never
//!   nested in it.
//! - The job span's attributes follow those conventions:
//!   `messaging.system` (`echomq`), `messaging.operation.type`
//!   (`send`/`process`), `messaging.destination.name` (the queue),
//!   `messaging.message.id` (the job's id); and EchoMQ's own,
//!   `messaging.echomq.message.attempt` and `messaging.echomq.outcome`
//!   (`completed`, `failed`, `deferred`, `released`, `lost`, `waits`), with
//!   `error.type` and an error status on a failure.
//!
//! None of it does anything until the program installs a
//! [`tracing_opentelemetry`] layer: without one a span has no OpenTelemetry
//! context, and nothing is injected, linked or exported. Exporting is the
//! program's business; `emq` exports over OTLP when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` is set (docs/tracing.md).

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{Status, TraceContextExt};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::queue::TRACEPARENT;
use crate::transition::Headers;

/// The W3C trace context's second header, beside [`TRACEPARENT`].
pub const TRACESTATE: &str = "tracestate";

/// Write `span`'s W3C context into `headers` (`traceparent`, and
/// `tracestate` when it has one): what a process does to pass its trace on
/// in a job, or to a program it starts (`emq work`'s `TRACEPARENT`).
/// Nothing is written when `span` has no OpenTelemetry context (no
/// `tracing_opentelemetry` layer is installed, or the span is disabled),
/// nor over a `traceparent` already there.
pub fn inject(span: &tracing::Span, headers: &mut Headers) {
    if headers.contains_key(TRACEPARENT) {
        return;
    }
    let context = span.context();
    if !context.span().span_context().is_valid() {
        return;
    }
    // Only when the job's headers still fit with it: tracing on must not
    // refuse an enqueue that it off would take (HEADERS' limit).
    let mut traced = headers.clone();
    TraceContextPropagator::new().inject_context(&context, &mut Carrier(&mut traced));
    match serde_json::to_vec(&traced) {
        Ok(encoded) if encoded.len() <= echomq_core::limits::MAX_HEADERS => *headers = traced,
        _ => tracing::debug!("the job's headers leave no room for its trace context: sent without it"),
    }
}

/// A producer span for an enqueue to `queue` of the job `id`, the current
/// span its parent.
pub(crate) fn producer(queue: &str, id: &str) -> tracing::Span {
    tracing::info_span!(
        "emq.enqueue",
        otel.name = format!("send {queue}"),
        otel.kind = "producer",
        messaging.system = "echomq",
        messaging.operation.type = "send",
        messaging.destination.name = queue,
        messaging.message.id = id,
    )
}

/// Make the job span `span` a consumer's: a child of the context in the
/// job's `headers` (when there is one) and linked to it, with the
/// conventions' attributes. Called before the span is first entered: once
/// started, a span's parent is fixed.
pub(crate) fn consumer(span: &tracing::Span, queue: &str, id: &str, attempt: u64, headers: &Headers) {
    // A root unless the headers name a parent; and with no layer to make
    // it an OpenTelemetry span (or the span disabled), nothing more to do.
    if span.set_parent(opentelemetry::Context::new()).is_err() {
        return;
    }
    span.record("otel.name", format!("process {queue}"));
    span.record("otel.kind", "consumer");
    span.set_attribute("messaging.system", "echomq");
    span.set_attribute("messaging.operation.type", "process");
    span.set_attribute("messaging.destination.name", queue.to_owned());
    span.set_attribute("messaging.message.id", id.to_owned());
    span.set_attribute("messaging.echomq.message.attempt", i64::try_from(attempt).unwrap_or(i64::MAX));
    let producer = TraceContextPropagator::new().extract(&Reader(headers));
    let creation = producer.span().span_context().clone();
    if creation.is_valid() {
        span.add_link(creation);
        let _ = span.set_parent(producer);
    }
}

/// Say on the job span `span` how the attempt ended: `outcome`, and the
/// error's text when it failed.
pub(crate) fn ended(span: &tracing::Span, outcome: &'static str, error: Option<&str>) {
    span.set_attribute("messaging.echomq.outcome", outcome);
    if let Some(error) = error {
        span.set_attribute("error.type", "handler");
        span.set_status(Status::error(error.to_owned()));
    }
}

/// Headers written by the propagator, without empty values (no
/// `tracestate` header with nothing in it).
struct Carrier<'a>(&'a mut Headers);

/// Headers read by the propagator.
struct Reader<'a>(&'a Headers);

impl Injector for Carrier<'_> {
    fn set(&mut self, key: &str, value: String) {
        if !value.is_empty() {
            self.0.insert(key.to_owned(), value);
        }
    }
}

impl Extractor for Reader<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    use tracing_subscriber::layer::SubscriberExt;

    use super::{consumer, inject, producer, TRACESTATE};
    use crate::queue::TRACEPARENT;
    use crate::transition::Headers;

    /// Run `f` with an OpenTelemetry layer (an SDK tracer, no exporter).
    fn traced<T>(f: impl FnOnce() -> T) -> T {
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
        let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("test"));
        tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), f)
    }

    #[test]
    fn without_a_layer_nothing_is_written() {
        let mut headers = Headers::new();
        inject(&tracing::info_span!("checkout"), &mut headers);
        assert!(headers.is_empty(), "{headers:?}");
    }

    #[test]
    fn a_span_is_written_as_its_traceparent_and_no_empty_tracestate() {
        let (headers, trace_id) = traced(|| {
            let span = producer("emails", "JOB_1");
            let mut headers = Headers::new();
            inject(&span, &mut headers);
            (headers, span.context().span().span_context().trace_id())
        });
        let traceparent = &headers[TRACEPARENT];
        assert!(traceparent.starts_with(&format!("00-{trace_id}-")), "{traceparent}");
        assert!(!headers.contains_key(TRACESTATE), "no tracestate with nothing in it: {headers:?}");
    }

    #[test]
    fn headers_with_no_room_left_are_sent_without_the_trace_context() {
        // A value that brings the encoded headers to a few bytes under the limit.
        let filler = "x".repeat(echomq_core::limits::MAX_HEADERS - 20);
        let headers = traced(|| {
            let mut headers = Headers::from([("big".to_owned(), filler.clone())]);
            inject(&producer("emails", "JOB_1"), &mut headers);
            headers
        });
        assert_eq!(headers, Headers::from([("big".to_owned(), filler)]), "left as the caller made them");
        assert!(crate::transition::encode_headers(&headers).is_ok(), "within HEADERS' limit");
    }

    #[test]
    fn a_traceparent_the_caller_set_is_kept() {
        let given = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let headers = traced(|| {
            let mut headers = Headers::from([(TRACEPARENT.to_owned(), given.to_owned())]);
            inject(&tracing::info_span!("checkout"), &mut headers);
            headers
        });
        assert_eq!(headers[TRACEPARENT], given);
    }

    #[test]
    fn a_job_span_continues_the_trace_in_its_headers() {
        let given = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let (trace_id, span_id) = traced(|| {
            let span = tracing::info_span!(
                "emq.job",
                otel.name = tracing::field::Empty,
                otel.kind = tracing::field::Empty
            );
            let headers = Headers::from([(TRACEPARENT.to_owned(), given.to_owned())]);
            consumer(&span, "emails", "JOB_1", 2, &headers);
            let context = span.context();
            let span_context = context.span().span_context().clone();
            (span_context.trace_id().to_string(), span_context.span_id().to_string())
        });
        assert_eq!(trace_id, "4bf92f3577b34da6a3ce929d0e0e4736", "the producer's trace");
        assert_ne!(span_id, "00f067aa0ba902b7", "a span of its own in it");
    }
}
