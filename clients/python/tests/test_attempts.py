"""Attempts spent apart from the fencing token (issue 51), on Lua and on
Native: a job's token counts its claims (§6), and rises when an attempt is
given back (DEFER, RELEASE with REFUND), while its attempts spent do not."""

from __future__ import annotations

import asyncio

import pytest

import echomq
from echomq.model import Policy, attempts_spent

from conftest import working


def test_attempts_spent_are_the_claims_less_those_given_back() -> None:
    # Never given back: no ATTEMPTS in its policy (DEFER and REFUND always write one).
    assert attempts_spent(3, None, 5) == 3
    assert attempts_spent(3, Policy(timeout_ms=1000), 5) == 3
    # Given back twice by workers of max 5: ATTEMPTS 7, its third claim the first attempt still.
    assert attempts_spent(3, Policy(attempts=7), 5) == 1
    # Enqueued with attempts=3, given back once: say the maximum it started from.
    assert attempts_spent(2, Policy(attempts=4), 3) == 1
    # Released (REFUND) after its only claim: none spent.
    assert attempts_spent(1, Policy(attempts=6), 5) == 0
    # Within 0..=token, whatever the maximum said.
    assert attempts_spent(2, Policy(attempts=100), 5) == 0
    assert attempts_spent(2, Policy(attempts=1), 5) == 2


async def test_a_retry_after_gives_its_attempt_back(queue: echomq.Queue) -> None:
    seen: list[tuple[int, int]] = []

    async def handle(job: echomq.Job) -> bytes:
        seen.append((job.token, job.attempts_spent))
        if job.token == 1:
            raise echomq.RetryAfter(0.05)
        return b"second claim, first attempt"

    job = await queue.enqueue(b"x")
    async with working(echomq.Worker(queue, handle, upkeep=0.05)):
        done = await queue.wait(job.id, timeout=60)
    assert seen == [(1, 1), (2, 1)]
    assert (done.state, done.token, done.attempts_spent()) == ("done", 2, 1)
    assert done.policy == Policy(attempts=6)


async def test_a_graceful_stop_gives_its_attempt_back(queue: echomq.Queue) -> None:
    started = asyncio.Event()
    seen: list[tuple[int, int]] = []

    async def hang(job: echomq.Job) -> None:
        seen.append((job.token, job.attempts_spent))
        started.set()
        await asyncio.sleep(3600)

    job = await queue.enqueue(b"x")
    worker = echomq.Worker(queue, hang, grace=0.1)
    task = asyncio.create_task(worker.run(handle_signals=False))
    await asyncio.wait_for(started.wait(), 30)
    worker.stop()
    await asyncio.wait_for(task, 60)
    released = await queue.inspect(job.id)
    assert released is not None and (released.state, released.token, released.attempts_spent()) == ("pending", 1, 0)

    async def handle(job: echomq.Job) -> None:
        seen.append((job.token, job.attempts_spent))

    async with working(echomq.Worker(queue, handle)):
        done = await queue.wait(job.id, timeout=60)
    assert seen == [(1, 1), (2, 1)]
    assert (done.token, done.attempts_spent()) == (2, 1)


async def test_failures_spend_attempts_and_a_jobs_own_maximum_is_said(queue: echomq.Queue) -> None:
    seen: list[tuple[int, int]] = []

    async def handle(job: echomq.Job) -> None:
        seen.append((job.token, job.attempts_spent))
        if job.token == 1:
            raise echomq.RetryAfter(0.01)
        raise RuntimeError("no")

    # Its own ATTEMPTS 3, which the DEFER raises to 4: spent 1, then 2, then 3: dead.
    job = await queue.enqueue(b"x", attempts=3, backoff=0)
    async with working(echomq.Worker(queue, handle, max_attempts=3, upkeep=0.05)):
        dead = await queue.wait(job.id, timeout=60)
    assert seen == [(1, 1), (2, 1), (3, 2), (4, 3)]
    assert (dead.state, dead.token, dead.attempts_spent(max_attempts=3)) == ("dead", 4, 3)


async def test_the_claim_counts_keep_their_old_names_deprecated(queue: echomq.Queue) -> None:
    seen: list[int] = []

    async def handle(job: echomq.Job) -> None:
        with pytest.warns(DeprecationWarning, match="Job.token"):
            seen.append(job.attempt)

    job = await queue.enqueue(b"x")
    async with working(echomq.Worker(queue, handle)):
        done = await queue.wait(job.id, timeout=60)
    with pytest.warns(DeprecationWarning, match="JobInfo.token"):
        assert done.attempts == 1
    assert seen == [1]
