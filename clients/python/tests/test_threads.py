"""The worker's handler threads (:mod:`echomq.threads`), without Redis:
every run that ends is settled on the loop, however many end at once; a
run not started by a shutdown is cancelled; a thread past its caller's
cancel still says when it is done (the slot it holds); what a thread tells
the loop is done there in the order it was told."""

from __future__ import annotations

import asyncio
import threading

import pytest

from echomq.threads import HandlerThreads


async def test_runs_that_end_together_are_all_settled() -> None:
    threads = HandlerThreads(8, "test-handler")
    gate = threading.Barrier(8)

    def work(i: int) -> int:
        gate.wait(30)  # eight end in the same moment: one wake-up may settle many
        return i * i

    try:
        for _ in range(50):
            runs = [threads.run(lambda i=i: work(i)) for i in range(8)]
            results = await asyncio.wait_for(asyncio.gather(*(r.future for r in runs)), 30)
            assert results == [i * i for i in range(8)]
            assert all(r.done() for r in runs)
    finally:
        threads.shutdown()


async def test_what_a_thread_tells_the_loop_is_done_there_in_order() -> None:
    threads = HandlerThreads(1)
    loop_thread = threading.get_ident()
    told: list[tuple[int, int]] = []

    def work() -> None:
        for i in range(500):
            threads.tell(lambda i=i: told.append((i, threading.get_ident())))

    try:
        await asyncio.wait_for(threads.run(work).future, 30)
        assert told == [(i, loop_thread) for i in range(500)]  # told before the run's end, which came last
    finally:
        threads.shutdown()


async def test_an_exception_is_the_future_s() -> None:
    threads = HandlerThreads(1)

    def fails() -> None:
        raise KeyError("sku")

    try:
        with pytest.raises(KeyError):
            await asyncio.wait_for(threads.run(fails).future, 30)
    finally:
        threads.shutdown()


async def test_a_cancelled_run_still_tells_when_its_thread_is_done() -> None:
    threads = HandlerThreads(1)
    release = threading.Event()
    ended = asyncio.Event()
    try:
        run = threads.run(lambda: release.wait(30))
        run.future.cancel()
        run.when_done(ended.set)
        assert not run.done()
        release.set()
        await asyncio.wait_for(ended.wait(), 30)
        assert run.done() and run.future.cancelled()
    finally:
        threads.shutdown()


async def test_a_shutdown_cancels_the_runs_not_started() -> None:
    threads = HandlerThreads(1)
    release = threading.Event()
    running = threads.run(lambda: release.wait(30))
    waiting = threads.run(lambda: "never")
    threads.shutdown()
    assert waiting.future.cancelled() and waiting.done()
    release.set()
    assert await asyncio.wait_for(running.future, 30) is True
    with pytest.raises(RuntimeError):
        threads.run(lambda: None)
