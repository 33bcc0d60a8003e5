"""A flow's parent run by a plain ``def`` handler (issue 51), on Lua and on
Native: from its thread it reads its children's results
(:func:`echomq.flows.children_results_sync`) and reports progress
(:meth:`echomq.Job.from_thread`)."""

from __future__ import annotations

import threading

import pytest

import echomq
from echomq.flows import children_results_sync

from conftest import unique_queue, working


async def test_a_sync_parent_reads_its_children_results_from_its_thread(conn: echomq.Connection) -> None:
    parents, pages = await conn.queue(unique_queue("parents")), await conn.queue(unique_queue("pages"))
    flow = echomq.Flow(b"merge").child(pages.name, b"p1").child(pages.name, b"p2")
    added = await parents.add_flow(flow)
    loop_thread = threading.get_ident()
    seen: list[int] = []

    def merge(job: echomq.Job) -> bytes:
        seen.append(threading.get_ident())
        results = children_results_sync(job)
        job.from_thread(job.progress(b"merged"))
        return b"+".join(results[child] for child in added.children)

    def render(job: echomq.Job) -> bytes:
        assert children_results_sync(job) == {}, "a job that is no parent has no children"
        return job.payload.upper()

    async with working(echomq.Worker(parents, merge, upkeep=0.05)), working(echomq.Worker(pages, render)):
        done = await parents.wait(flow.id, timeout=60)
    assert (done.state, done.result, done.progress) == ("done", b"P1+P2", b"merged")
    assert seen and loop_thread not in seen


async def test_a_sync_handler_reports_progress_by_calling_it(queue: echomq.Queue) -> None:
    """``job.progress(...)`` from a plain ``def`` handler reports at once
    (it made a coroutine no one awaited, and the progress was lost)."""
    def handle(job: echomq.Job) -> bytes:
        job.progress(b"half")
        return b"ok"

    job = await queue.enqueue(b"x")
    async with working(echomq.Worker(queue, handle)):
        done = await queue.wait(job.id, timeout=60)
    assert (done.state, done.progress) == ("done", b"half")


async def test_from_thread_on_the_loop_is_refused(queue: echomq.Queue) -> None:
    refused: list[str] = []

    async def handle(job: echomq.Job) -> None:
        with pytest.raises(RuntimeError, match="on the loop, await it") as caught:
            job.from_thread(job.children())
        refused.append(str(caught.value))

    job = await queue.enqueue(b"x")
    async with working(echomq.Worker(queue, handle)):
        assert (await queue.wait(job.id, timeout=60)).state == "done"
    assert len(refused) == 1
