"""OpenTelemetry: one trace from a job's producer to each attempt's run.

Active when ``opentelemetry-api`` is installed (``pip install echomq[otel]``)
and the program has set a tracer provider; else every function here costs
an import check (a worker's, a look at the provider) and does nothing. The same spans as the Rust speaker's
(docs/tracing.md), so a trace crosses languages either way:

- an enqueue runs in a producer span, ``send <queue>``, whose W3C context
  goes into the job's headers (``traceparent``, ``tracestate``) unless the
  caller gave a ``traceparent``;
- each attempt runs its handler in a consumer span, ``process <queue>``,
  a child of the context in the job's headers and linked to it (as
  OpenTelemetry's messaging conventions ask of a process span): a retry is
  a sibling of the attempt that failed, never nested in it.

Attributes: ``messaging.system`` (``echomq``), ``messaging.operation.type``,
``messaging.destination.name`` (the queue), ``messaging.message.id``, and
EchoMQ's ``messaging.echomq.message.attempt`` and ``messaging.echomq.outcome``.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Awaitable, Iterator, TypeVar

try:
    from opentelemetry import propagate, trace  # type: ignore[import-not-found,unused-ignore]
    from opentelemetry.trace import (  # type: ignore[import-not-found,unused-ignore]
        Link, SpanKind, Status, StatusCode)
except ImportError:  # the extra is not installed: nothing is traced
    trace = None  # type: ignore[assignment,unused-ignore]

if TYPE_CHECKING:
    from .job import Job

T = TypeVar("T")

SYSTEM = "echomq"


@contextlib.contextmanager
def send(queue: str, job_id: str, options: Any) -> Iterator[None]:
    """Run an enqueue of ``job_id`` to ``queue`` in a producer span, its
    context added to the headers of ``options``, the enqueue's keyword
    options as a dict (unless they name a traceparent)."""
    if trace is None or options.get("traceparent") or "traceparent" in (options.get("headers") or {}):
        yield
        return
    tracer = trace.get_tracer("echomq")
    attributes = {
        "messaging.system": SYSTEM,
        "messaging.operation.type": "send",
        "messaging.destination.name": queue,
        "messaging.message.id": job_id,
    }
    with tracer.start_as_current_span(f"send {queue}", kind=SpanKind.PRODUCER, attributes=attributes):
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        if "traceparent" in carrier:
            options["headers"] = {**(options.get("headers") or {}), **carrier}
        yield


def active() -> bool:
    """Whether jobs are traced: the API is installed and the program set a tracer provider."""
    return trace is not None and not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


async def run(job: Job, handler: Awaitable[T]) -> T:
    """Await ``handler``, the run of ``job``'s attempt, in its consumer span
    (none while the program has set no tracer provider: a span of the
    default proxy records nothing, and costs some microseconds a job)."""
    if not active():
        return await handler
    producer = propagate.extract(job.headers)
    creation = trace.get_current_span(producer).get_span_context()
    links = [Link(creation)] if creation.is_valid else []
    attributes: dict[str, str | int] = {
        "messaging.system": SYSTEM,
        "messaging.operation.type": "process",
        "messaging.destination.name": job.queue.name,
        "messaging.message.id": job.id,
        "messaging.echomq.message.attempt": job.token,
    }
    tracer = trace.get_tracer("echomq")
    with tracer.start_as_current_span(f"process {job.queue.name}", context=producer, kind=SpanKind.CONSUMER,
                                      attributes=attributes, links=links, record_exception=False,
                                      set_status_on_exception=False) as span:
        try:
            result = await handler
        except Exception as err:
            # Not failures: a deferral, and a parent that now waits for its children.
            outcome = {"RetryAfter": "deferred", "WaitingForChildren": "waits"}.get(type(err).__name__, "failed")
            span.set_attribute("messaging.echomq.outcome", outcome)
            if outcome == "failed":
                span.set_attribute("error.type", type(err).__qualname__)
                span.set_status(Status(StatusCode.ERROR, str(err)))
            raise
        except BaseException:  # cancelled: a timeout, a lost lease, the grace
            span.set_attribute("messaging.echomq.outcome", "stopped")
            raise
        span.set_attribute("messaging.echomq.outcome", "completed")
        return result
