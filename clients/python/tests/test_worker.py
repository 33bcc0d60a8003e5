"""The Worker, on Lua and on Native: results, progress, failures and each
job's own policy, fencing, graceful stop, upkeep."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import timedelta
from typing import Any

import pytest

import echomq
from echomq import calls
from echomq.model import read_claims

from conftest import RedisServer, eventually, unique_queue, working


async def state(queue: echomq.Queue, job_id: str) -> str | None:
    info = await queue.inspect(job_id)
    return None if info is None else info.state


async def test_jobs_run_with_results_and_progress(queue: echomq.Queue) -> None:
    async def handle(job: echomq.Job) -> Any:
        await job.progress({"at": 50})
        if job.payload == b"json":
            return {"n": job.token}
        return job.payload.upper()

    jobs = [await queue.enqueue(b"job %d" % i) for i in range(50)]
    special = await queue.enqueue(b"json", headers={"tenant": "acme"})
    async with working(echomq.Worker(queue, handle, concurrency=8)):
        done = [await queue.wait(j.id, timeout=60) for j in [*jobs, special]]
    assert all(d.state == "done" for d in done)
    assert done[3].result == b"JOB 3" and done[3].progress == b'{"at": 50}'
    assert done[-1].result_json() == {"n": 1} and done[-1].headers == {"tenant": "acme"}
    assert (await queue.stats()).done == 51


async def test_a_plain_function_is_a_handler_too(queue: echomq.Queue) -> None:
    def handle(job: echomq.Job) -> bytes:
        if job.payload == b"bad":
            raise KeyError("no such thing")
        return b"sync " + job.payload

    good, bad = await queue.enqueue(b"ok"), await queue.enqueue(b"bad", attempts=1)
    async with working(echomq.Worker(queue, handle)):
        assert (await queue.wait(good.id, timeout=60)).result == b"sync ok"
        error = (await queue.wait(bad.id, timeout=60)).error
        assert error is not None and error.startswith("KeyError: 'no such thing'\n\nTraceback")


async def test_a_result_over_the_limit_fails_the_job(queue: echomq.Queue) -> None:
    async def handle(job: echomq.Job) -> bytes:
        return b"r" * (1_048_576 + 1)

    job = await queue.enqueue(b"x", attempts=1)
    async with working(echomq.Worker(queue, handle)):
        dead = await queue.wait(job.id, timeout=60)
    assert dead.state == "dead" and dead.result is None
    assert dead.error == "the handler returned 1048577 bytes: a result is at most 1048576"


async def test_a_failure_retries_by_the_jobs_own_policy_then_dies(queue: echomq.Queue) -> None:
    runs: list[int] = []

    async def handle(job: echomq.Job) -> None:
        runs.append(job.token)
        raise RuntimeError(f"attempt {job.token} broke")

    job = await queue.enqueue(b"x", attempts=3, backoff=0)
    async with working(echomq.Worker(queue, handle, max_attempts=10, backoff=0.01, upkeep=0.05)):
        dead = await queue.wait(job.id, timeout=60)
    assert (dead.state, dead.token) == ("dead", 3) and dead.error is not None
    assert dead.error.startswith("RuntimeError: attempt 3 broke\n\nTraceback")
    assert runs == [1, 2, 3]


async def test_a_job_past_its_timeout_is_stopped_and_failed(queue: echomq.Queue) -> None:
    cancelled = asyncio.Event()

    async def handle(job: echomq.Job) -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    job = await queue.enqueue(b"slow", attempts=1, timeout=0.2)
    async with working(echomq.Worker(queue, handle)):
        dead = await queue.wait(job.id, timeout=60)
    assert dead.state == "dead" and dead.error == "timed out after 200ms"
    assert cancelled.is_set()


async def test_a_lost_lease_cancels_the_handler_and_drops_its_result(queue: echomq.Queue) -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def handle(job: echomq.Job) -> bytes:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return b"never kept"

    job = await queue.enqueue(b"x")
    async with working(echomq.Worker(queue, handle, lease=0.6)):
        await asyncio.wait_for(started.wait(), 30)
        assert await queue.cancel(job.id)
        # The next heartbeat (a third of the lease) is refused: EMQFENCE.
        await asyncio.wait_for(cancelled.wait(), 30)
    info = await queue.inspect(job.id)
    assert info is not None and (info.state, info.result) == ("cancelled", None)


async def test_a_stale_ack_is_fenced(queue: echomq.Queue) -> None:
    job = await queue.enqueue(b"x")
    first = read_claims(await queue.executor.run(calls.claim(queue.keyspace, 1)))  # a 1 ms lease
    await eventually(lambda: _reaped(queue), what="the expired lease reaped")
    second = read_claims(await queue.executor.run(calls.claim(queue.keyspace, 60_000)))
    assert [j.token for j in [*first.jobs, *second.jobs]] == [1, 2]
    with pytest.raises(echomq.FenceError) as fenced:
        await queue.executor.run(calls.ack(queue.keyspace, job.id, 1, b"stale"))
    assert fenced.value.code == "EMQFENCE"
    await queue.executor.run(calls.ack(queue.keyspace, job.id, 2))


async def _reaped(queue: echomq.Queue) -> bool:
    requeued, dead = await queue.executor.run(calls.sweep("reap", queue.keyspace, 10, first=[b"5"]))
    return bool(requeued)


async def test_stop_releases_unfinished_jobs_without_spending_attempts(queue: echomq.Queue) -> None:
    started = asyncio.Event()

    async def handle(job: echomq.Job) -> None:
        started.set()
        await asyncio.sleep(3600)

    job = await queue.enqueue(b"x")
    worker = echomq.Worker(queue, handle, grace=0.1, max_attempts=4)
    task = asyncio.create_task(worker.run(handle_signals=False))
    await asyncio.wait_for(started.wait(), 30)
    worker.stop()
    await asyncio.wait_for(task, 60)
    info = await queue.inspect(job.id)
    assert info is not None and (info.state, info.token) == ("pending", 1)
    # REFUND: the job's own maximum is the worker's plus the attempt given back.
    assert info.policy == echomq.Policy(attempts=5)


async def test_a_worker_stops_when_leaving_the_registry_hangs(queue: echomq.Queue) -> None:
    """A server that stops answering at stop (a half-open connection) does
    not hold the worker: its entry in the worker registry is given up after
    GIVE_BACK_WAIT, as it expires by itself."""
    worker = echomq.Worker(queue, lambda job: None, idle_wait=0.05)
    left = asyncio.Event()

    async def hangs() -> None:
        left.set()
        await asyncio.Event().wait()

    worker.registration.leave = hangs  # type: ignore[method-assign]
    task = asyncio.create_task(worker.run(handle_signals=False))
    job = await queue.enqueue(b"x")
    await queue.wait(job.id, timeout=60)
    worker.stop()
    await asyncio.wait_for(task, 30)
    assert left.is_set()


async def test_retry_after_defers_without_spending_the_attempt(queue: echomq.Queue) -> None:
    async def handle(job: echomq.Job) -> bytes:
        if job.token == 1:
            raise echomq.RetryAfter(0.05)
        return b"second time"

    job = await queue.enqueue(b"x")
    async with working(echomq.Worker(queue, handle, max_attempts=1, upkeep=0.05)):
        done = await queue.wait(job.id, timeout=60)
    assert (done.state, done.result, done.token) == ("done", b"second time", 2)


async def test_upkeep_reaps_promotes_and_fires_schedules(queue: echomq.Queue) -> None:
    ran: list[str] = []

    async def handle(job: echomq.Job) -> None:
        ran.append(job.id)

    abandoned = await queue.enqueue(b"abandoned")
    await queue.executor.run(calls.claim(queue.keyspace, 1))  # its holder "died": a 1 ms lease
    delayed = await queue.enqueue(b"later", delay=0.2)
    reply = await queue.executor.run(calls.Call("schedules", calls.keys("schedules", queue.keyspace)))
    now = int(reply[0])
    await queue.executor.run(calls.Call("schedule", calls.keys("schedule", queue.keyspace),
                                        [b"tick", b"every 3600000 last\nhourly", str(now).encode()]))
    tick = echomq.schedule.tick_id(queue.name, "tick", now)
    async with working(echomq.Worker(queue, handle, upkeep=0.05)):
        for job_id in (abandoned.id, delayed.id):
            assert (await queue.wait(job_id, timeout=60)).state == "done"
        await eventually(lambda: _has(queue, tick), what="the schedule's tick enqueued")
    info = await queue.inspect(abandoned.id)
    assert info is not None and info.token == 2


async def test_a_paused_schedule_moves_on_and_fires_nothing(queue: echomq.Queue) -> None:
    async def handle(job: echomq.Job) -> None:
        raise AssertionError(f"a paused schedule fired {job.id}")

    reply = await queue.executor.run(calls.schedules(queue.keyspace))
    now = int(reply[0])
    await queue.executor.run(calls.schedule(queue.keyspace, b"tick", b"paused every 3600000 all:5\nx", now))

    async def moved_on() -> bool:
        reply = await queue.executor.run(calls.schedules(queue.keyspace))
        return int(reply[1][2]) > now

    async with working(echomq.Worker(queue, handle, upkeep=0.05)):
        await eventually(moved_on, what="the paused schedule's due tick moved on")
    assert await queue.inspect(echomq.schedule.tick_id(queue.name, "tick", now)) is None
    assert (await queue.stats()).pending == 0


async def _has(queue: echomq.Queue, job_id: str) -> bool:
    return await queue.inspect(job_id) is not None


async def test_sigterm_stops_a_worker_process_gracefully(server: RedisServer, kind: str) -> None:
    name = unique_queue("sigterm")
    queue = await (await echomq.connect(server.url)).queue(name)
    job = await queue.enqueue(b"x")
    program = textwrap.dedent(f"""
        import asyncio, echomq
        async def handle(job):
            print("started", flush=True)
            await asyncio.sleep(3600)
        async def main():
            conn = await echomq.connect({server.url!r})
            queue = await conn.queue({name!r})
            await echomq.Worker(queue, handle, grace=0.2, max_attempts=5).run()
            print("stopped", flush=True)
        asyncio.run(main())
    """)
    process = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        assert (await asyncio.to_thread(process.stdout.readline)).strip() == "started"
        process.send_signal(signal.SIGTERM)
        out, _ = await asyncio.to_thread(process.communicate, timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0 and out.strip() == "stopped"
    info = await queue.inspect(job.id)
    assert info is not None and (info.state, info.token) == ("pending", 1)
    assert info.policy == echomq.Policy(attempts=6)
    await queue.connection.close()


async def test_a_workers_durations_may_be_timedeltas(queue: echomq.Queue) -> None:
    async def handle(job: echomq.Job) -> bytes:
        return b"ok"

    job = await queue.enqueue(b"x")
    worker = echomq.Worker(queue, handle, lease=timedelta(seconds=30), grace=timedelta(seconds=1),
                           idle_wait=timedelta(milliseconds=200), upkeep=timedelta(milliseconds=250))
    async with working(worker):
        done = await queue.wait(job.id, timeout=timedelta(minutes=1))
    assert (done.state, done.result) == ("done", b"ok") and worker.grace == 1.0


async def test_a_handler_that_raises_cancelled_error_itself_fails_its_attempt(queue: echomq.Queue) -> None:
    """Nothing cancelled it: a failed attempt, not a release, which gave the
    attempt back and ran the job again, thousands of times a second, for ever."""
    runs: list[int] = []

    async def handle(job: echomq.Job) -> None:
        runs.append(job.token)
        raise asyncio.CancelledError()

    job = await queue.enqueue(b"x", attempts=2, backoff=0)
    async with working(echomq.Worker(queue, handle, backoff=0.01, upkeep=0.05)):
        dead = await queue.wait(job.id, timeout=60)
    assert (dead.state, dead.token) == ("dead", 2) and runs == [1, 2]
    assert dead.error is not None and "raised asyncio.CancelledError" in dead.error


async def test_an_async_handler_that_raises_system_exit_fails_only_its_job(queue: echomq.Queue) -> None:
    """asyncio would carry SystemExit out of the loop, stranding every job
    of the worker: the job's attempt fails, and the worker goes on."""
    async def handle(job: echomq.Job) -> bytes:
        if job.payload == b"exit":
            raise SystemExit(4)
        return b"ran"

    exits = await queue.enqueue(b"exit", attempts=1)
    after = await queue.enqueue(b"after")
    async with working(echomq.Worker(queue, handle)):
        dead = await queue.wait(exits.id, timeout=60)
        done = await queue.wait(after.id, timeout=60)
    assert dead.state == "dead" and dead.error is not None and "raised SystemExit(4)" in dead.error
    assert (done.state, done.result) == ("done", b"ran")


async def test_sigterm_stops_every_worker_of_a_program(server: RedisServer, kind: str) -> None:
    """Two workers in one program (one a queue), each handling signals: one
    SIGTERM stops both, each releasing its job; the second no longer took
    the first's handlers away."""
    names = [unique_queue("sigterm-both"), unique_queue("sigterm-both")]
    connection = await echomq.connect(server.url)
    queues = [await connection.queue(name) for name in names]
    jobs = [await queue.enqueue(b"x") for queue in queues]
    program = textwrap.dedent(f"""
        import asyncio, echomq
        async def handle(job):
            print("started", flush=True)
            await asyncio.sleep(3600)
        async def main():
            conn = await echomq.connect({server.url!r})
            workers = [echomq.Worker(await conn.queue(name), handle, grace=0.2) for name in {names!r}]
            await asyncio.gather(*(worker.run() for worker in workers))
            print("stopped", flush=True)
        asyncio.run(main())
    """)
    process = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        for _ in names:
            assert (await asyncio.to_thread(process.stdout.readline)).strip() == "started"
        process.send_signal(signal.SIGTERM)
        out, _ = await asyncio.to_thread(process.communicate, timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0 and out.strip() == "stopped"
    for queue, job in zip(queues, jobs):
        info = await queue.inspect(job.id)
        assert info is not None and info.state == "pending", queue.keyspace.name
    await connection.close()


async def test_a_sync_handler_past_its_timeout_keeps_its_slot_until_its_thread_ends(
        queue: echomq.Queue) -> None:
    """A thread cannot be stopped: a sync handler that ran past its timeout
    holds its slot until it returns, so the next job is not claimed only to
    wait in the pool behind it, its own timeout running down."""
    ran: list[bytes] = []

    def handle(job: echomq.Job) -> bytes:
        ran.append(job.payload)
        if job.payload == b"slow":
            time.sleep(1.5)
        return b"ok"

    async def started() -> bool:
        return bool(ran)

    slow = await queue.enqueue(b"slow", attempts=1, timeout=0.3)
    async with working(echomq.Worker(queue, handle, concurrency=1)):
        await eventually(started, timeout=30, what="the slow job started")
        fast = await queue.enqueue(b"fast", attempts=1, timeout=0.5)
        done = await queue.wait(fast.id, timeout=60)
    assert (done.state, done.result) == ("done", b"ok"), done.error
    assert (await queue.wait(slow.id, timeout=60)).state == "dead"
    assert ran == [b"slow", b"fast"]
