"""A Python worker's metrics for Prometheus, named as the Rust worker's
(``docs/metrics.md``: ``emq_jobs_processed_total``, ``emq_job_run_seconds``…,
labelled by ``queue``), so one dashboard reads both. They need the
optional ``prometheus_client`` (``pip install 'echomq[metrics]'``):

    metrics = echomq.metrics.Metrics()          # the default registry
    worker = echomq.Worker(queue, handle, metrics=metrics)
    metrics.serve(9464)                         # http://127.0.0.1:9464/metrics

``echomq worker … --metrics 127.0.0.1:9464`` does both. A worker tells its
:class:`Metrics` of each job's end (:meth:`Metrics.ended`); anything with
that method will do.
"""

from __future__ import annotations

import importlib
import time
from typing import Any, Literal

from .ids import PREFIX, decode_ulid, is_branded

Outcome = Literal["processed", "retried", "dead", "deferred", "timed_out", "lease_lost", "released"]
"""How a job's attempt ended, as a worker tells it: acked (``processed``),
failed and retried or dead (a timeout is told ``timed_out`` first, then
retried or dead, as the Rust worker counts it), deferred by
:class:`~echomq.RetryAfter`, its lease lost, or released at a stop."""

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
           1800.0, 3600.0)
"""The histograms' buckets, in seconds: the Rust worker's (``emq work``)."""


class Metrics:
    """The worker's counters and histograms, in ``registry`` (prometheus_client's
    default one unless given). ``ImportError`` naming the extra when
    prometheus_client is not installed."""

    def __init__(self, registry: Any = None) -> None:
        try:
            prometheus: Any = importlib.import_module("prometheus_client")
        except ImportError as missing:
            raise ImportError("echomq's metrics need prometheus_client: pip install 'echomq[metrics]'") from missing
        self._prometheus = prometheus
        self.registry = registry if registry is not None else prometheus.REGISTRY
        on = {"registry": self.registry, "labelnames": ("queue",)}

        def counter(name: str, text: str) -> Any:
            return prometheus.Counter(name, text, **on)

        self.processed = counter("emq_jobs_processed", "Jobs whose handler succeeded and whose ack went through.")
        self.failed = counter("emq_jobs_failed", "Attempts whose handler failed: an error or a timeout.")
        self.retried = counter("emq_jobs_retried", "Failed jobs FAIL sent to delayed for another attempt.")
        self.dead = counter("emq_jobs_dead", "Failed jobs out of attempts, sent to dead.")
        self.deferred = counter("emq_jobs_deferred", "Jobs whose handler said retry after (DEFER).")
        self.timed_out = counter("emq_jobs_timed_out", "Jobs stopped at their timeout (each also failed).")
        self.leases_lost = counter("emq_leases_lost", "Jobs whose lease was lost while they ran.")
        self.wait = prometheus.Histogram("emq_job_wait_seconds", "From enqueue (the branded id's mint time) to "
                                         "the start of this attempt.", buckets=BUCKETS, **on)
        self.run = prometheus.Histogram("emq_job_run_seconds", "From the claim to the end of the job's run.",
                                        buckets=BUCKETS, **on)

    def started(self, queue: str, job_id: str) -> None:
        """A job's attempt starts: its wait since its id was minted (a branded id only)."""
        if is_branded(job_id):
            self.wait.labels(queue).observe(max(0.0, time.time() - (decode_ulid(job_id[len(PREFIX):]) >> 80) / 1000))

    def ended(self, queue: str, outcome: Outcome, seconds: float) -> None:
        """A job's attempt ended as ``outcome``, ``seconds`` after its claim."""
        if outcome == "processed":
            self.processed.labels(queue).inc()
        elif outcome == "timed_out":
            # Told before the attempt's retried or dead, which counts it failed.
            self.timed_out.labels(queue).inc()
            return
        elif outcome in ("retried", "dead"):
            self.failed.labels(queue).inc()
            (self.retried if outcome == "retried" else self.dead).labels(queue).inc()
        elif outcome == "deferred":
            self.deferred.labels(queue).inc()
        elif outcome == "lease_lost":
            self.leases_lost.labels(queue).inc()
        self.run.labels(queue).observe(seconds)

    def serve(self, port: int, addr: str = "127.0.0.1") -> None:
        """Serve the registry for Prometheus at ``http://addr:port/`` (any path), in a thread."""
        self._prometheus.start_http_server(port, addr=addr, registry=self.registry)


__all__ = ["BUCKETS", "Metrics", "Outcome"]
