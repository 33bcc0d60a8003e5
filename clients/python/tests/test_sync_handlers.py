"""Plain ``def`` handlers, on Lua and on Native (issue 51): they run in the
worker's threads, as many at once as its ``concurrency``, while its event
loop renews their leases; an ``async def`` handler runs on the loop."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import echomq

from conftest import RedisServer, working


class ThreadedWorker:
    """A second worker, as another process would run it: its own event loop
    and connection, in a thread of its own."""

    def __init__(self, url: str, name: str, handler: Any, **options: Any) -> None:
        self.url, self.name, self.handler, self.options = url, name, handler, options
        self.loop = asyncio.new_event_loop()
        self.started = threading.Event()
        self.worker: echomq.Worker | None = None
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self._run(),), daemon=True)
        self.thread.start()
        assert self.started.wait(30), "the second worker did not start"

    async def _run(self) -> None:
        async with await echomq.connect(self.url) as connection:
            queue = await connection.queue(self.name)
            self.worker = echomq.Worker(queue, self.handler, **self.options)
            self.started.set()
            await self.worker.run(handle_signals=False)

    def stop(self) -> None:
        assert self.worker is not None
        self.loop.call_soon_threadsafe(self.worker.stop)
        self.thread.join(60)
        assert not self.thread.is_alive(), "the second worker did not stop within 60 s"
        self.loop.close()


async def test_a_sync_job_longer_than_its_lease_runs_once_with_two_workers(queue: echomq.Queue,
                                                                           server: RedisServer) -> None:
    runs: list[str] = []

    def handle(job: echomq.Job) -> bytes:
        runs.append(job.id)
        time.sleep(2.5)  # blocking I/O, 2.5 leases long
        return b"slept"

    # Each worker's upkeep reaps every 50 ms: a lease left to run out is taken back at once.
    options: dict[str, Any] = {"lease": 1.0, "upkeep": 0.05, "concurrency": 2}
    other = ThreadedWorker(server.url, queue.name, handle, **options)
    try:
        async with working(echomq.Worker(queue, handle, **options)):
            job = await queue.enqueue(b"x")
            done = await queue.wait(job.id, timeout=60)
    finally:
        other.stop()
    assert (done.state, done.result, done.token) == ("done", b"slept", 1)
    assert runs == [job.id]


async def test_sync_jobs_run_in_threads_as_many_at_once_as_the_concurrency(queue: echomq.Queue) -> None:
    loop_thread = threading.get_ident()
    lock = threading.Lock()
    now_running, most = 0, 0
    threads: set[int] = set()

    def handle(job: echomq.Job) -> bytes:
        nonlocal now_running, most
        with lock:
            now_running += 1
            most = max(most, now_running)
            threads.add(threading.get_ident())
        time.sleep(0.5)
        with lock:
            now_running -= 1
        return b"ok"

    jobs = [await queue.enqueue(b"%d" % i) for i in range(4)]
    started = time.monotonic()
    async with working(echomq.Worker(queue, handle, concurrency=4)):
        done = [await queue.wait(j.id, timeout=60) for j in jobs]
        took = time.monotonic() - started
    assert all(d.state == "done" for d in done)
    # One after another they take 2.0 s at least; together, about 0.5 s.
    assert took < 1.5, f"4 × 0.5 s at concurrency 4 took {took:.2f} s"
    assert most == 4 and len(threads) == 4 and loop_thread not in threads


async def test_an_async_handler_runs_on_the_loop_and_a_sync_one_may_return_an_awaitable(
        queue: echomq.Queue) -> None:
    loop_thread = threading.get_ident()
    seen: dict[str, int] = {}

    async def handle_async(job: echomq.Job) -> bytes:
        seen["async"] = threading.get_ident()
        return b"async"

    def handle_sync(job: echomq.Job) -> Any:
        seen["sync"] = threading.get_ident()
        return handle_async(job)  # a coroutine, awaited on the loop

    job = await queue.enqueue(b"x")
    async with working(echomq.Worker(queue, handle_sync)):
        done = await queue.wait(job.id, timeout=60)
    assert done.result == b"async"
    assert seen["async"] == loop_thread and seen["sync"] != loop_thread
