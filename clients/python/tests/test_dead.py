"""Dead jobs from Python (issue 51), on Lua and on Native: listed with
their errors, retried, deleted; bad input refused with nothing written."""

from __future__ import annotations

import pytest

import echomq

from conftest import RedisServer, keyspace, working


async def _dead_jobs(queue: echomq.Queue, count: int) -> list[str]:
    async def handle(job: echomq.Job) -> None:
        raise ValueError(f"bad {job.payload.decode()}")

    jobs = [await queue.enqueue(b"%d" % i, attempts=1) for i in range(count)]
    async with working(echomq.Worker(queue, handle, concurrency=count)):
        for job in jobs:
            assert (await queue.wait(job.id, timeout=60)).state == "dead"
    return [job.id for job in jobs]


async def test_dead_jobs_are_listed_retried_and_deleted(queue: echomq.Queue, server: RedisServer) -> None:
    ids = await _dead_jobs(queue, 4)
    dead = await queue.dead()
    assert sorted(j.id for j in dead) == sorted(ids)
    assert all(j.state == "dead" and (j.error or "").startswith(f"ValueError: bad {j.payload.decode()}\n")
               for j in dead)
    assert [j.id for j in await queue.dead(limit=2, start=1)] == [j.id for j in dead[1:3]]
    assert await queue.delete([dead[0].id, "JOB_not_there"], state="dead") == 1
    assert await queue.inspect(dead[0].id) is None
    assert await queue.delete([dead[1].id], state="pending") == 0, "not in that state: left alone"
    sync = echomq.SyncQueue.open(server.url, queue.name)
    assert [j.id for j in sync.dead()] == [j.id for j in dead[1:]]
    assert sync.retry_dead(limit=1) == 1
    assert await queue.retry_dead() == 2 and await queue.retry_dead() == 0
    assert [j.id for j in await queue.jobs("pending")] == sorted(j.id for j in dead[1:])
    assert sync.delete([j.id for j in dead[1:]], state="pending") == 3
    assert (await queue.stats()).pending == 0
    sync.close()


async def test_bad_listing_or_deleting_is_refused_and_nothing_is_written(queue: echomq.Queue,
                                                                        server: RedisServer) -> None:
    ids = await _dead_jobs(queue, 1)
    before = keyspace(server.client(), f"emq:{{{queue.name}}}")
    for bad, says in [(lambda: queue.jobs("sleeping"), "'sleeping' is not a state"),
                      (lambda: queue.dead(limit=0), "limit must be 1 to 1000"),
                      (lambda: queue.dead(limit=1001), "limit must be 1 to 1000"),
                      (lambda: queue.dead(start=-1), "start must be 0 or more"),
                      (lambda: queue.delete(ids, state="gone"), "'gone' is not a state"),
                      (lambda: queue.delete([ids[0], "NOTAJOB"], state="dead"), "NOTAJOB")]:
        with pytest.raises(echomq.InvalidInput, match=says):
            await bad()
    assert keyspace(server.client(), f"emq:{{{queue.name}}}") == before
    assert await queue.delete([], state="dead") == 0
