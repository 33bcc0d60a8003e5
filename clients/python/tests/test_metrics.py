"""The Python worker's metrics for Prometheus (issue 51), named as the Rust
worker's (docs/metrics.md), from a Worker and from ``echomq worker --metrics``."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import prometheus_client

import echomq
from echomq.metrics import Metrics

from conftest import Servers, wait_until, working
from test_cli import ECHOMQ, Project


def _value(registry: Any, name: str, queue: str) -> float:
    found = registry.get_sample_value(name, {"queue": queue})
    return 0.0 if found is None else float(found)


async def test_a_worker_counts_each_end_as_the_rust_worker_names_it(queue: echomq.Queue) -> None:
    registry = prometheus_client.CollectorRegistry()
    metrics = Metrics(registry)

    async def handle(job: echomq.Job) -> bytes:
        if job.payload == b"fail":
            raise RuntimeError("no")
        if job.payload == b"later" and job.token == 1:
            raise echomq.RetryAfter(0.01)
        return b"ok"

    jobs = [await queue.enqueue(body, attempts=1) for body in (b"a", b"b", b"fail", b"later")]
    async with working(echomq.Worker(queue, handle, metrics=metrics)):
        for job in jobs:
            await queue.wait(job.id, timeout=60)
    name = queue.name
    assert _value(registry, "emq_jobs_processed_total", name) == 3
    assert _value(registry, "emq_jobs_failed_total", name) == 1
    assert _value(registry, "emq_jobs_dead_total", name) == 1
    assert _value(registry, "emq_jobs_retried_total", name) == 0
    assert _value(registry, "emq_jobs_deferred_total", name) == 1
    assert _value(registry, "emq_job_run_seconds_count", name) == 5
    assert _value(registry, "emq_job_wait_seconds_count", name) == 5


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_the_worker_command_serves_its_metrics(tmp_path: Path, servers: Servers) -> None:
    server = servers["lua"]  # what it counts is the executor's either way: once is enough
    project = Project(tmp_path, server.url, "lua")
    port = _free_port()
    queue = echomq.SyncQueue.open(server.url, project.queue)
    job = queue.enqueue(b'{"task": "add", "args": [1, 2]}')
    worker = project.worker("--metrics", f"127.0.0.1:{port}")
    try:
        assert queue.wait(job.id, timeout=60).state == "done"
        line = f'emq_jobs_processed_total{{queue="{project.queue}"}} 1.0'

        def scraped() -> bool:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
                    return line in answer.read().decode()
            except OSError:
                return False

        wait_until(scraped, timeout=30, what=line)
    finally:
        worker.terminate()
        worker.communicate(timeout=60)
        queue.close()


def test_metrics_on_an_address_in_use_are_refused_with_status_2(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        # Refused before any connection: nothing listens on port 1.
        project = Project(tmp_path, "redis://127.0.0.1:1/0", "lua")
        done = subprocess.run([str(ECHOMQ), "worker", "tasks:app", "--metrics", f"127.0.0.1:{port}"],
                              cwd=project.root, env=project.env, capture_output=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert f"cannot serve metrics on --metrics 127.0.0.1:{port}" in done.stderr.decode()


async def test_a_timed_out_attempt_is_failed_and_dead_or_retried_too(queue: echomq.Queue) -> None:
    # As the Rust worker counts a timeout: failed, and retried or dead, and timed out.
    registry = prometheus_client.CollectorRegistry()

    async def handle(job: echomq.Job) -> None:
        await asyncio.sleep(30)

    job = await queue.enqueue(b"slow", attempts=1, timeout=0.05)
    async with working(echomq.Worker(queue, handle, metrics=Metrics(registry))):
        assert (await queue.wait(job.id, timeout=60)).state == "dead"
    name = queue.name
    assert _value(registry, "emq_jobs_timed_out_total", name) == 1
    assert _value(registry, "emq_jobs_failed_total", name) == 1
    assert _value(registry, "emq_jobs_dead_total", name) == 1
    assert _value(registry, "emq_job_run_seconds_count", name) == 1
