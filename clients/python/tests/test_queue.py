"""The producer's and operator's face, on Lua and on Native."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

import pytest

import echomq
from echomq import calls
from echomq.model import read_claims

from conftest import RedisServer, transitions_sent, unique_queue, working


async def claim(queue: echomq.Queue, count: int = 1, lease_ms: int = 60_000) -> echomq.model.Claims:
    return read_claims(await queue.executor.run(calls.claim(queue.keyspace, lease_ms, count)))


async def test_a_job_is_enqueued_with_its_options_and_reads_back(queue: echomq.Queue) -> None:
    trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    job = await queue.enqueue(b"\x00\xffbytes", priority=-5, attempts=3, backoff_exp=1.5, timeout=30,
                              headers={"tenant": "acme"}, traceparent=trace)
    assert job.enqueued and echomq.is_branded(job.id)
    info = await queue.inspect(job.id)
    assert info is not None
    assert (info.state, info.token, info.payload) == ("pending", 0, b"\x00\xffbytes")
    assert info.policy == echomq.Policy(attempts=3, backoff_exp_ms=1500, timeout_ms=30000)
    assert info.headers == {"tenant": "acme", "traceparent": trace}
    claims = await claim(queue)
    assert [j.id for j in claims.jobs] == [job.id]
    assert claims.jobs[0].token == 1 and claims.jobs[0].headers["traceparent"] == trace
    assert claims.jobs[0].policy == info.policy


async def test_an_id_enqueued_twice_is_a_duplicate_and_a_held_key_names_its_holder(queue: echomq.Queue) -> None:
    first = await queue.enqueue(b"a", id="JOB-mine-1", unique="report:7", unique_for=60)
    again = await queue.enqueue(b"b", id="JOB-mine-1")
    held = await queue.enqueue(b"c", unique="report:7", unique_for=60)
    assert first.enqueued and again.duplicate and held.held_by == "JOB-mine-1"
    assert (await queue.stats()).pending == 1


async def test_a_unique_key_duplicate_answers_its_holders_id(queue: echomq.Queue, server: RedisServer) -> None:
    """A held UNIQUE key is a duplicate of the job that holds it: its id
    comes back (ENQUEUE answers it, §7.3), never the id that was not
    written (issue 51): from enqueue, enqueue_many and the SyncQueue."""
    holder = await queue.enqueue(b"a", unique="invoice:9", unique_for=60)
    held = await queue.enqueue(b"b", unique="invoice:9", unique_for=60)
    [also] = await queue.enqueue_many([b"c"], unique="invoice:9", unique_for=60)
    sync = echomq.SyncQueue.open(server.url, queue.name)
    from_sync = sync.enqueue(b"d", unique="invoice:9", unique_for=60)
    [from_sync_many] = sync.enqueue_many([b"e"], unique="invoice:9", unique_for=60)
    sync.close()
    assert holder.enqueued and not holder.duplicate and holder.held_by is None
    for found in (held, also, from_sync, from_sync_many):
        assert (found.id, found.duplicate, found.held_by, found.enqueued) == (holder.id, True, holder.id, False)
    info = await queue.inspect(held.id)
    assert info is not None and info.payload == b"a"
    assert (await queue.stats()).pending == 1


async def test_priority_then_mint_order(queue: echomq.Queue) -> None:
    low = await queue.enqueue(b"low", priority=5)
    firsts = [await queue.enqueue(b"%d" % i) for i in range(3)]
    urgent = await queue.enqueue(b"urgent", priority=-1)
    claims = await claim(queue, count=10)
    assert [j.id for j in claims.jobs] == [urgent.id, *(j.id for j in firsts), low.id]


async def test_a_delayed_job_waits_and_at_is_a_due_time(queue: echomq.Queue) -> None:
    later = await queue.enqueue(b"x", delay=3600)
    past = await queue.enqueue(b"y", at=1.0)  # 1970: due at once
    assert (await queue.inspect(later.id)).state == "delayed"  # type: ignore[union-attr]
    assert (await queue.inspect(past.id)).state == "pending"  # type: ignore[union-attr]


async def test_many_jobs_go_in_one_round_trip(queue: echomq.Queue, server: RedisServer) -> None:
    client = server.client()
    before = transitions_sent(client)
    payloads = [b"job %d" % i for i in range(2500)]
    done = await queue.enqueue_many(payloads)
    sent = transitions_sent(client) - before
    client.close()
    # Three ENQUEUEMANY calls (1000, 1000, 500), in one pipeline.
    assert sent == 3, sent
    assert all(e.enqueued for e in done) and len({e.id for e in done}) == 2500
    assert (await queue.stats()).pending == 2500
    again = await queue.enqueue_many([(done[0].id, b"again"), ("JOB-new", b"new")])
    assert [e.duplicate for e in again] == [True, False]

    before = transitions_sent(client := server.client())
    held = await queue.enqueue_many([b"p1", b"p2"], priority=-3, unique="once", unique_for=60, attempts=2)
    assert transitions_sent(client) - before == 2
    client.close()
    assert held[0].enqueued and held[1].held_by == held[0].id
    info = await queue.inspect(held[0].id)
    assert info is not None and info.policy == echomq.Policy(attempts=2)


async def test_pause_resume_and_limits(queue: echomq.Queue) -> None:
    await queue.enqueue(b"x")
    paused = await queue.pause()
    assert paused.paused
    assert (await claim(queue)).held == -1
    resumed = await queue.resume()
    assert not resumed.paused
    limited = await queue.configure(concurrency=1, rate=100, per=1.0, events=500)
    assert (limited.concurrency, limited.rate, limited.per_ms, limited.events) == (1, 100, 1000, 500)
    await queue.enqueue(b"y")
    claims = await claim(queue, count=5)
    assert len(claims.jobs) == 1 and claims.held == 0
    assert (await queue.configure()).concurrency == 1


async def test_retention_ages_are_seconds_as_every_duration(queue: echomq.Queue, server: RedisServer) -> None:
    """``done_age=3600`` keeps done jobs an hour, not 3.6 s (issue 51):
    retention ages are seconds (or a timedelta), as every other duration."""
    config = await queue.configure(done_age=3600, dead_age=timedelta(days=7), cancelled_age=0.25,
                                   done_count=10)
    assert (config.done_age_ms, config.dead_age_ms, config.cancelled_age_ms) == (3_600_000, 604_800_000, 250)
    assert (config.done_age, config.dead_age, config.cancelled_age, config.done_count) == (3600, 604_800, 0.25, 10)
    sync = echomq.SyncQueue.open(server.url, queue.name)
    assert sync.configure(DEAD_AGE=60).dead_age_ms == 60_000
    with pytest.raises(echomq.InvalidInput, match="done_age"):
        sync.configure(done_age=1e12)  # 10^15 ms: past KEEP_MS
    sync.close()
    assert (await queue.configure()).dead_age == 60


async def _definitions(queue: echomq.Queue) -> dict[bytes, bytes]:
    reply = await queue.executor.run(calls.schedules(queue.keyspace))
    return {name: definition for name, definition, _ in reply[1:]}


async def test_a_schedule_is_paused_and_resumed(queue: echomq.Queue) -> None:
    await queue.schedule_every("tick", 3600, b"t", missed="all:5")
    cron = b"cron UTC last 0 9 * * *\n{}"
    await queue.executor.run(calls.schedule(queue.keyspace, b"digest", cron, 4_000_000_000_000))
    unknown = b"cron Mars/Olympus last 0 9 * * *\n{}"
    await queue.executor.run(calls.schedule(queue.keyspace, b"martian", unknown, 4_000_000_000_000))
    assert await queue.pause_schedule("digest") and await queue.resume_schedule("digest")
    assert (await _definitions(queue))[b"digest"] == cron
    assert await queue.pause_schedule("tick")
    assert (await _definitions(queue))[b"tick"] == b"paused every 3600000 all:5\nt"
    assert await queue.pause_schedule("tick")  # paused already: left as it is
    assert (await _definitions(queue))[b"tick"] == b"paused every 3600000 all:5\nt"
    assert await queue.resume_schedule("tick")
    assert (await _definitions(queue))[b"tick"] == b"every 3600000 all:5\nt"
    # No such schedule; a bad name; one this package cannot read (an unknown zone): nothing written.
    before = await _definitions(queue)
    assert not await queue.pause_schedule("nightly") and not await queue.resume_schedule("nightly")
    with pytest.raises(echomq.InvalidInput, match="1 to 200 bytes"):
        await queue.pause_schedule("")
    with pytest.raises(echomq.InvalidInput, match="does not read as an `every` or a `cron` schedule"):
        await queue.pause_schedule("martian")
    assert await _definitions(queue) == before and before[b"martian"] == unknown


def test_a_paused_definition_reads_back_and_fires_one_skip() -> None:
    from echomq.schedule import Every, fires, tick_id

    ks = echomq.Keyspace("q")
    for missed in ("last", "none", "all:1", "all:3", "all:100"):
        every = Every.read(f"paused every 1000 {missed}\np".encode())
        assert every == Every(1000, missed, b"p", paused=True) and every.definition().startswith(b"paused every")
        # (stored next, now, the latest tick by now, the first after it): on time, and long missed.
        for due, now, latest, after in ((5000, 5200, 5000, 6000), (5000, 8300, 8000, 9000)):
            [fire] = fires(ks, "s", every, due, now)
            job = tick_id("q", "s", latest).encode()
            assert fire.args == [job, b"p", b"s", str(due).encode(), str(after).encode(), b"SKIP", b"1"], missed
    # Exactly one leading `paused ` word: anything else is not read.
    for unknown in (b"paused paused every 1000 last\n", b"Paused every 1000 last\n",
                    b"paused  every 1000 last\n", b"paused\n"):
        assert Every.read(unknown) is None, unknown


async def test_cancel_and_retry(queue: echomq.Queue) -> None:
    job = await queue.enqueue(b"x", attempts=1)
    assert await queue.cancel(job.id) is True
    assert await queue.cancel(job.id) is False
    with pytest.raises(echomq.StateError) as refused:
        await queue.retry(job.id)
    assert refused.value.code == "EMQSTATE"
    dead = await queue.enqueue(b"y", attempts=1)
    got = (await claim(queue)).jobs[0]
    await queue.executor.run(calls.fail(queue.keyspace, got.id, got.token, 5, 0, "boom"))
    info = await queue.inspect(dead.id)
    assert info is not None and (info.state, info.error) == ("dead", "boom")
    await queue.retry(dead.id)
    assert (await queue.inspect(dead.id)).state == "pending"  # type: ignore[union-attr]
    with pytest.raises(echomq.NoJobError):
        await queue.retry("JOB-none")
    assert await queue.inspect("JOB-none") is None


async def test_wait_reads_the_event_log_until_the_job_finishes(queue: echomq.Queue) -> None:
    job = await queue.enqueue_json({"n": 1})
    waiting = asyncio.ensure_future(queue.wait(job.id, timeout=30))
    got = (await claim(queue)).jobs[0]
    await asyncio.sleep(0)
    await queue.executor.run(calls.ack(queue.keyspace, got.id, got.token, json.dumps({"ok": True}).encode()))
    done = await waiting
    assert done.state == "done" and done.result_json() == {"ok": True}
    assert await queue.result(job.id) == b'{"ok": true}'
    with pytest.raises(TimeoutError):
        await queue.wait((await queue.enqueue(b"never")).id, timeout=0.2)


async def test_events_are_read_as_they_come(queue: echomq.Queue) -> None:
    start = await queue.last_event()
    job = await queue.enqueue(b"x")
    await queue.cancel(job.id)
    seen = []
    async for event in queue.events(after=start, block=0.5):
        seen.append((event.event, event.job))
        if len(seen) == 2:
            break
    assert seen == [("enqueued", job.id), ("cancelled", job.id)]


def test_the_sync_queue_produces_and_reads(server: RedisServer, kind: str) -> None:
    queue = echomq.SyncQueue.open(server.url, unique_queue("sync"))
    assert queue.executor.kind == kind
    job = queue.enqueue_json([1, 2], headers={"a": "b"})
    many = queue.enqueue_many([b"1", b"2"])
    info = queue.inspect(job.id)
    assert info is not None and info.json() == [1, 2] and info.headers == {"a": "b"}
    assert queue.stats().pending == 3 and all(e.enqueued for e in many)
    assert queue.cancel(job.id)
    assert queue.wait(job.id, timeout=5).state == "cancelled"
    assert queue.pause().paused and not queue.resume().paused
    queue.close()


def test_the_sync_queue_purges_and_drains(server: RedisServer, kind: str) -> None:
    """Queue.purge and Queue.drain, synchronous: the same calls, the same counts."""
    queue = echomq.SyncQueue.open(server.url, unique_queue("sync-sweep"))
    try:
        cancelled = [queue.enqueue(b"x").id for _ in range(3)]
        assert all(queue.cancel(job_id) for job_id in cancelled)
        assert queue.purge("cancelled", 3600) == 0  # none cancelled an hour ago
        assert queue.purge("cancelled") == 3 and queue.inspect(cancelled[0]) is None
        with pytest.raises(echomq.InvalidInput):
            queue.purge("pending")
        with pytest.raises(echomq.InvalidInput):
            queue.purge("done", -1)
        queue.enqueue_many([b"%d" % n for n in range(250)])  # more than one call's step
        queue.enqueue(b"later", delay=3600)
        assert queue.drain() == 251
        stats = queue.stats()
        assert (stats.pending, stats.delayed, stats.cancelled) == (0, 0, 0)
    finally:
        queue.close()


def test_minted_ids_strictly_increase() -> None:
    ids = [echomq.mint() for _ in range(20000)]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert all(echomq.is_branded(i) and len(i) == 30 for i in ids[:100])


async def test_a_flushed_script_cache_is_loaded_again(queue: echomq.Queue, server: RedisServer) -> None:
    client = server.client()
    client.script_flush()
    job = await queue.enqueue(b"after a flush")  # NOSCRIPT on Lua: loaded again, sent again
    many = await queue.enqueue_many([b"a", b"b"])
    client.script_flush()
    assert (await queue.stats()).pending == 3 and job.enqueued and all(e.enqueued for e in many)
    client.close()


async def test_purge_deletes_finished_jobs_of_an_age(queue: echomq.Queue) -> None:
    jobs = [await queue.enqueue(b"x") for _ in range(3)]
    async with working(echomq.Worker(queue, lambda job: None)):
        for job in jobs:
            await queue.wait(job.id, timeout=60)
    assert await queue.purge("done", 3600) == 0  # none finished an hour ago
    assert await queue.purge("done") == 3
    assert (await queue.stats()).done == 0 and await queue.inspect(jobs[0].id) is None
    with pytest.raises(echomq.InvalidInput):
        await queue.purge("pending")
    with pytest.raises(echomq.InvalidInput):
        await queue.purge("done", -1)


async def test_drain_deletes_waiting_jobs_and_with_active_running_ones(queue: echomq.Queue) -> None:
    for _ in range(250):  # more than one call's step
        await queue.enqueue(b"x")
    await queue.enqueue(b"later", delay=3600)
    await queue.executor.run(calls.claim(queue.keyspace, 60_000))
    assert await queue.drain() == 250
    stats = await queue.stats()
    assert (stats.pending, stats.delayed, stats.active) == (0, 0, 1)
    assert await queue.drain(active=True) == 1
    assert (await queue.stats()).active == 0


async def test_delete_queue_refuses_while_jobs_run_unless_forced(queue: echomq.Queue, server: RedisServer) -> None:
    await queue.set_group("t", cap=2)
    await queue.enqueue(b"a", group="t")
    await queue.enqueue(b"b", delay=3600)
    plain = await queue.enqueue(b"c")
    await queue.executor.run(calls.claim(queue.keyspace, 60_000))
    with pytest.raises(echomq.StateError, match="are active: let them finish"):
        await queue.delete_queue()
    assert (await queue.stats()).pending == 1  # nothing deleted
    assert await queue.delete_queue(force=True) == 3
    client = server.client()
    try:
        left = client.keys(f"emq:{{{queue.name}}}:*".encode())
        assert left == [] and client.zscore(b"emq:queues", queue.name) is None
    finally:
        client.close()
    assert await queue.inspect(plain.id) is None
