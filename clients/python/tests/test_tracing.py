"""One trace from a Python producer to ``emq work`` and to a Python worker
(issue 55; :mod:`echomq.tracing`): a program that enqueues inside a span
and works a job whose first attempt fails exports its spans over OTLP/HTTP,
as ``emq work`` does, to a receiver in this test. The Rust producer's half
(a Rust producer, a Python worker) is crates/emq/tests/tracing.rs.

The program runs in a process of its own: an OpenTelemetry tracer
provider is set once per process, and the other tests' enqueues must not
carry a trace."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest

from conftest import RedisServer, emq_path, unique_queue, wait_until

pytest.importorskip("opentelemetry.sdk", reason="the otel test extras are not installed")
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402

PRODUCER = textwrap.dedent("""\
    import asyncio, sys
    import echomq
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    url, to_emq, to_python, endpoint = sys.argv[1:5]
    provider = TracerProvider(resource=Resource.create({"service.name": "python-app"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint + "/v1/traces")))
    trace.set_tracer_provider(provider)

    async def main():
        conn = await echomq.connect(url)
        emq_queue, python_queue = await conn.queue(to_emq), await conn.queue(to_python)
        with trace.get_tracer("test").start_as_current_span("order"):
            await emq_queue.enqueue(b"e")
            await python_queue.enqueue(b"p", attempts=2, backoff=0.01)
        worker = None
        async def handle(job):
            if job.token == 1:
                raise RuntimeError("the first attempt fails")
            worker.stop()
        worker = echomq.Worker(python_queue, handle, idle_wait=0.05, upkeep=0.01)
        await worker.run(handle_signals=False)
        provider.shutdown()

    asyncio.run(main())
""")


class Receiver:
    """An OTLP/HTTP receiver on a free loopback port: every span it is sent."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        spans = self.spans

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                request = ExportTraceServiceRequest.FromString(self.rfile.read(int(self.headers["Content-Length"])))
                for resource in request.resource_spans:
                    service = next(a.value.string_value for a in resource.resource.attributes
                                   if a.key == "service.name")
                    for scope in resource.scope_spans:
                        for span in scope.spans:
                            spans.append({
                                "service": service, "name": span.name, "kind": span.kind,
                                "trace": span.trace_id.hex(), "id": span.span_id.hex(),
                                "parent": span.parent_span_id.hex(),
                                "links": [link.span_id.hex() for link in span.links],
                                "attributes": {a.key: a.value.string_value or a.value.int_value
                                               for a in span.attributes},
                            })
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def named(self, name: str) -> list[dict[str, Any]]:
        return [span for span in list(self.spans) if span["name"] == name]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.server.shutdown()


@pytest.mark.parametrize("kind", ["lua"])
def test_a_python_producers_trace_goes_on_in_emq_work_and_a_python_worker(
        server: RedisServer, kind: str, receiver: Receiver, tmp_path: Path) -> None:
    to_emq, to_python = unique_queue("to-emq"), unique_queue("to-python")
    script = tmp_path / "command.sh"
    script.write_text('#!/bin/sh\ncat >/dev/null\nprintf %s "$TRACEPARENT" > "$0.traceparent"\n')
    script.chmod(0o755)
    environment = {**os.environ, "ECHOMQ_URL": server.url, "ECHOMQ_VIA": kind,
                   "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "50"}
    environment.pop("OTEL_SERVICE_NAME", None)
    work = subprocess.Popen([str(emq_path()), "work", to_emq, "--", str(script)], env=environment,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        program = tmp_path / "producer.py"
        program.write_text(PRODUCER)
        done = subprocess.run([sys.executable, str(program), server.url, to_emq, to_python, receiver.endpoint],
                              capture_output=True, timeout=120)
        assert done.returncode == 0, done.stderr.decode()
        wait_until(lambda: receiver.named(f"process {to_emq}"), what="emq work's span is received")
    finally:
        work.terminate()
        work.communicate(timeout=60)

    [order] = receiver.named("order")
    spans = list(receiver.spans)
    assert {span["trace"] for span in spans} == {order["trace"]}, "one trace, the order's"
    for queue, service, attempts in [(to_emq, "emq", [(1, "completed")]),
                                     (to_python, "python-app", [(1, "failed"), (2, "completed")])]:
        [send] = receiver.named(f"send {queue}")
        assert (send["service"], send["parent"], send["kind"]) == ("python-app", order["id"], 4)
        assert send["attributes"]["messaging.destination.name"] == queue
        runs = receiver.named(f"process {queue}")
        for run in runs:
            assert (run["service"], run["kind"]) == (service, 5)
            assert run["parent"] == send["id"], "each attempt is the producer's child, never nested"
            assert run["links"] == [send["id"]], "and linked to it"
            assert run["attributes"]["messaging.system"] == "echomq"
            assert run["attributes"]["messaging.operation.type"] == "process"
            assert run["attributes"]["messaging.message.id"].startswith("JOB_")
        assert sorted((int(run["attributes"]["messaging.echomq.message.attempt"]),
                       run["attributes"]["messaging.echomq.outcome"]) for run in runs) == attempts
    # emq work's command got the context of its run's span.
    [emq_run] = receiver.named(f"process {to_emq}")
    given = Path(f"{script}.traceparent").read_text()
    assert given == f"00-{order['trace']}-{emq_run['id']}-01"
