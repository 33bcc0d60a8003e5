"""A sync job's slot in its thread (issue 51), on Lua and on Native: the
thread that ran a plain ``def`` handler (or an App's plain ``def`` task)
acks the job and claims the slot's next one itself, one ACKNEXT on its own
connection, and runs it there, with no hand-off to the event loop; the loop
still ends what the thread cannot (failures, deferrals, timeouts, lost
leases, stops), and fencing keeps every job's end exactly once."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import prometheus_client

import echomq
from echomq.metrics import Metrics

from conftest import RedisServer, eventually, transitions_sent, working
from test_sync_handlers import ThreadedWorker


def _value(registry: prometheus_client.CollectorRegistry, name: str, queue: str) -> float:
    return registry.get_sample_value(name, {"queue": queue}) or 0.0


async def test_a_slot_runs_its_sync_jobs_while_the_loop_is_blocked(queue: echomq.Queue,
                                                                   server: RedisServer) -> None:
    """Two jobs of a slot have nothing of the loop between them: with the
    loop blocked, the slot's thread goes on acking, claiming and running,
    one ACKNEXT a job at concurrency 1."""
    ran: list[tuple[bytes, int]] = []

    def handle(job: echomq.Job) -> bytes:
        ran.append((job.payload, threading.get_ident()))
        time.sleep(0.3 if job.payload == b"first" else 0.01)
        return job.payload

    worker = echomq.Worker(queue, handle, concurrency=1, upkeep=3600)
    async with working(worker):
        first = await queue.enqueue(b"first")

        async def first_running() -> bool:
            return bool(ran)

        await eventually(first_running, what="the first job running")
        jobs = await queue.enqueue_many([b"%d" % i for i in range(20)])
        client = server.client()
        before = transitions_sent(client)
        time.sleep(1.0)  # the loop is blocked: no claim, no hand-off, no settling
        while_blocked = len(ran) - 1

        async def all_acked() -> bool:
            return worker.processed == 21

        await eventually(all_acked, what="21 jobs acked")
        sent = transitions_sent(client) - before
        client.close()
        finished = [await queue.wait(j.id, timeout=30) for j in [first, *jobs]]
    assert while_blocked >= 10, f"{while_blocked} of 20 jobs ran while the loop was blocked"
    assert [(f.state, f.result, f.token) for f in finished] == [
        ("done", body, 1) for body in [b"first", *(b"%d" % i for i in range(20))]]
    assert len({ident for _, ident in ran}) == 1 and threading.get_ident() not in {i for _, i in ran}
    # One ACKNEXT a job (the last one claims nothing), then the claimer's
    # CLAIM or two, which find the queue empty once the slot is free again.
    assert 21 <= sent <= 24, f"{sent} transitions for 21 jobs at concurrency 1"


async def test_an_app_s_sync_task_runs_in_its_slot_s_thread_with_current_job(queue: echomq.Queue,
                                                                             server: RedisServer) -> None:
    app = echomq.App(server.url, queue=queue.name)
    seen: list[tuple[str | None, int]] = []

    @app.task
    def add(a: int, b: int) -> int:
        current = echomq.current_job()
        seen.append((None if current is None else current.id, threading.get_ident()))
        time.sleep(0.3 if a < 0 else 0.01)
        return a + b

    async with working(echomq.Worker(queue, app.handler, concurrency=1)):
        first = await queue.enqueue(add.payload(-1, 1))

        async def first_running() -> bool:
            return bool(seen)

        await eventually(first_running, what="the first task running")
        jobs = await queue.enqueue_many([add.payload(i, i) for i in range(10)])
        time.sleep(0.8)  # the loop blocked: the slot's thread goes on
        while_blocked = len(seen) - 1
        finished = [await queue.wait(j.id, timeout=30) for j in jobs]
    app.close()
    assert while_blocked >= 6, f"{while_blocked} of 10 tasks ran while the loop was blocked"
    assert [f.result for f in finished] == [b"%d" % (2 * i) for i in range(10)]
    assert [job_id for job_id, _ in seen] == [first.id, *[j.id for j in jobs]]
    assert len({ident for _, ident in seen}) == 1


async def test_a_lost_lease_keeps_a_thread_s_ack_from_counting(queue: echomq.Queue, server: RedisServer) -> None:
    """The first worker's loop is blocked past the job's lease, so nothing
    renews it; a second worker reaps it and runs it again. The first run's
    thread then sends its ACKNEXT itself, with the old token: refused
    (EMQFENCE), its result dropped, nothing counted; the job ends once."""
    runs: list[str] = []
    started = threading.Event()

    def handle(job: echomq.Job) -> bytes:
        runs.append(f"{job.token}")
        if job.token == 1:
            started.set()
            time.sleep(2.0)
            return b"first, too late"
        return b"second"

    worker = echomq.Worker(queue, handle, concurrency=1, lease=1.0, upkeep=3600)
    other: ThreadedWorker | None = None
    try:
        async with working(worker):
            job = await queue.enqueue(b"x")
            await asyncio.get_running_loop().run_in_executor(None, started.wait, 30)
            other = ThreadedWorker(server.url, queue.name, handle, lease=1.0, upkeep=0.05)
            time.sleep(3.0)  # blocks this loop: no lease renewed, and the first run ends meanwhile
            done = await queue.wait(job.id, timeout=30)
            await eventually(lambda: _running_none(worker), what="the refused job dropped")
    finally:
        if other is not None:
            other.stop()
    assert (done.state, done.result, done.token) == ("done", b"second", 2)
    assert runs == ["1", "2"]
    assert worker.processed == 0


async def _running_none(worker: echomq.Worker) -> bool:
    return worker.running == 0


async def test_a_stop_finishes_the_running_sync_jobs_and_claims_nothing_new(queue: echomq.Queue) -> None:
    started: list[str] = []
    lock = threading.Lock()

    def handle(job: echomq.Job) -> bytes:
        with lock:
            started.append(job.id)
        time.sleep(0.3)
        return b"ran"

    jobs = await queue.enqueue_many([b"x"] * 10)
    worker = echomq.Worker(queue, handle, concurrency=2, grace=30)
    task = asyncio.create_task(worker.run(handle_signals=False))

    async def two_running() -> bool:
        return len(started) >= 2

    await eventually(two_running, what="two jobs running")
    worker.stop()
    await asyncio.wait_for(task, 60)
    infos = {j.id: await queue.inspect(j.id) for j in jobs}
    ran = set(started)
    assert 2 <= len(ran) <= 4
    for job_id, info in infos.items():
        assert info is not None
        if job_id in ran:  # it ran to its end within the grace, acked with its result
            assert (info.state, info.result) == ("done", b"ran")
        else:  # never claimed: the stop claims nothing new
            assert (info.state, info.token) == ("pending", 0)


async def test_a_sync_failure_keeps_its_type_and_traceback_and_the_slot_goes_on(queue: echomq.Queue) -> None:
    def lookup(job: echomq.Job) -> bytes:
        if job.payload == b"bad":
            return {"a": b"1"}[job.payload.decode()]
        return b"ok"

    bad = await queue.enqueue(b"bad", attempts=1)
    good = [await queue.enqueue(b"good") for _ in range(3)]
    async with working(echomq.Worker(queue, lookup, concurrency=1)):
        failed = await queue.wait(bad.id, timeout=30)
        done = [await queue.wait(j.id, timeout=30) for j in good]
    assert failed.state == "dead"
    assert failed.error is not None
    head, _, trace = failed.error.partition("\n\n")
    assert head == "KeyError: 'bad'"
    assert trace.startswith("Traceback (most recent call last):") and "in lookup" in trace
    assert [(d.state, d.result) for d in done] == [("done", b"ok")] * 3


async def test_what_only_the_loop_can_end_is_ended_there(queue: echomq.Queue) -> None:
    """A result JSON cannot encode, one over the limit, an awaitable, a
    RetryAfter: the thread hands the job to the loop, which ends it as it
    ends an async handler's."""
    from datetime import datetime

    async def later() -> bytes:
        return b"awaited"

    def handle(job: echomq.Job) -> Any:
        if job.payload == b"date":
            return datetime(2026, 12, 6)
        if job.payload == b"huge":
            return b"x" * (echomq.worker.MAX_RESULT + 1)
        if job.payload == b"await":
            return later()
        if job.payload == b"defer" and job.token == 1:
            raise echomq.RetryAfter(0.01)
        return b"ok"

    registry = prometheus_client.CollectorRegistry()
    jobs = {body: await queue.enqueue(body, attempts=1) for body in (b"date", b"huge", b"await", b"defer", b"ok")}
    async with working(echomq.Worker(queue, handle, concurrency=1, metrics=Metrics(registry))):
        ended = {body: await queue.wait(job.id, timeout=30) for body, job in jobs.items()}
    assert ended[b"date"].state == "dead" and "cannot be encoded as JSON" in (ended[b"date"].error or "")
    assert ended[b"huge"].state == "dead" and "a result is at most" in (ended[b"huge"].error or "")
    assert (ended[b"await"].state, ended[b"await"].result) == ("done", b"awaited")
    assert (ended[b"defer"].state, ended[b"defer"].result, ended[b"defer"].token) == ("done", b"ok", 2)
    assert (ended[b"ok"].state, ended[b"ok"].result) == ("done", b"ok")
    name = queue.name
    assert _value(registry, "emq_jobs_processed_total", name) == 3
    assert _value(registry, "emq_jobs_deferred_total", name) == 1
    assert _value(registry, "emq_jobs_dead_total", name) == 2
    assert _value(registry, "emq_job_run_seconds_count", name) == 6
