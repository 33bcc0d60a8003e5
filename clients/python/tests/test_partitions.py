"""Partitioned queues (protocol 1.8, PROTOCOL.md §7.10), on Lua and on
Native: the partitions' names as the Rust host chooses them (and as Redis
hashes them), the definition written once and read back by the other
speaker, each job in its id's partition or its group's, limits split,
bad input and malformed definitions refused, nothing written; and the
worker command working every partition."""

from __future__ import annotations

import asyncio
import subprocess
import time
from types import SimpleNamespace
from typing import cast

import pytest

import echomq
from echomq.partition import partition_index, partition_name, queue_slot

from conftest import RedisServer, emq_path, eventually, unique_queue


def test_names_and_slots_are_the_protocols() -> None:
    # As Redis has them (CLUSTER KEYSLOT), and as tests/partitions.rs says.
    assert queue_slot("orders") == 105
    assert [partition_name("orders", k, 12) for k in range(3)] == ["orders~0~20", "orders~1~0", "orders~2~22"]
    assert partition_index("JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1R", 12) == 2
    for count in (1, 5, 12, 1024):
        for k in range(count):
            assert k * 16384 // count <= queue_slot(partition_name("q", k, count)) < (k + 1) * 16384 // count


PARENT = "JOB_01KBVZ6Q2R8N5X4W3T2S1P0M9K"


def six_children(kids: echomq.Partitioned, parent: str) -> echomq.ChildJobs:
    children = echomq.ChildJobs()
    for n in range(6):
        children = kids.job_child(children, parent, bytes([n]), group="t" if n < 2 else None)
    return children


async def test_a_running_job_waits_for_children_in_their_partitions(conn: echomq.Connection) -> None:
    kids = await echomq.Partitioned.create(conn, unique_queue("kids"), 4)
    parents = await conn.queue(unique_queue("parents"))
    enqueued = await parents.enqueue(b"parent", id=PARENT)
    assert six_children(kids, PARENT).named(PARENT) == six_children(kids, PARENT).named(PARENT), "named alike"
    runs: list[tuple[str, str, bytes]] = []

    async def handle(job: echomq.Job) -> None:
        runs.append((job.queue.name, job.id, job.payload))
        if job.payload == b"parent":
            await job.wait_for(six_children(kids, job.id))

    workers = [echomq.Worker(q, handle, upkeep=0.05, idle_wait=0.05, max_attempts=1)
               for q in [parents, *kids.partitions]]
    running = [asyncio.create_task(worker.run(handle_signals=False)) for worker in workers]
    try:
        done = await parents.wait(enqueued.id, timeout=60)
    finally:
        for worker in workers:
            worker.stop()
        await asyncio.gather(*running)
    assert done.state == "done"
    children = [run for run in runs if run[2] != b"parent"]
    assert (len(runs) - len(children), len(children)) == (2, 6), runs
    for queue, job_id, payload in children:
        assert queue == kids.partition_of(job_id).name, "in its id's partition"
        if payload[0] < 2:
            assert queue == kids.partition_for("t").name, "with its group"
    with pytest.raises(echomq.InvalidInput, match="belongs to partition"):
        elsewhere = kids.mint_in(partition_index("t", 4) + 1)
        kids.job_child(echomq.ChildJobs(), PARENT, b"x", id=elsewhere, group="t")
    with pytest.raises(echomq.InvalidInput):
        kids.job_child(echomq.ChildJobs(), "not an id", b"x")


async def test_a_partitioned_queue_is_counted_listed_and_retried_as_one(conn: echomq.Connection) -> None:
    orders = await echomq.Partitioned.create(conn, unique_queue("as-one"), 4)
    jobs = [await orders.enqueue(b"%d" % n, attempts=1) for n in range(10)]
    assert len({orders.index_of(job.id) for job in jobs}) > 1, "spread over the partitions"

    async def handle(job: echomq.Job) -> None:
        raise ValueError(f"bad {job.payload.decode()}")

    workers = [echomq.Worker(q, handle, concurrency=4, idle_wait=0.05) for q in await orders.worked(conn)]
    running = [asyncio.create_task(worker.run(handle_signals=False)) for worker in workers]
    try:
        for job in jobs:
            assert (await orders.partition_of(job.id).wait(job.id, timeout=60)).state == "dead"
    finally:
        for worker in workers:
            worker.stop()
        await asyncio.gather(*running)
    stats = await orders.stats()
    assert (stats.dead, stats.pending) == (10, 0)
    dead = await orders.dead()
    assert sorted(job.id for job in dead) == sorted(job.id for job in jobs)
    assert all((job.error or "").startswith("ValueError: bad ") for job in dead)
    # Pages follow one another across the partitions.
    pages = [await orders.dead(limit=3, start=start) for start in (0, 3, 6, 9)]
    assert [job.id for page in pages for job in page] == [job.id for job in dead]
    assert await orders.jobs("dead", limit=3, start=10) == []
    assert await orders.retry_dead(limit=4) == 4
    assert await orders.retry_dead() == 6 and await orders.retry_dead() == 0
    assert (await orders.stats()).pending == 10
    assert await orders.delete([job.id for job in jobs[:5]], state="pending") == 5
    assert (await orders.stats()).pending == 5
    with pytest.raises(echomq.InvalidInput):
        await orders.jobs("dying")
    with pytest.raises(echomq.InvalidInput):
        await orders.dead(limit=0)


def test_a_running_job_s_children_take_the_ids_the_rust_host_derives() -> None:
    # tests/partitions.rs pins the same three.
    # Only the partitions' names are read: no server.
    kids = echomq.Partitioned("kids", [cast(echomq.Queue, SimpleNamespace(name=partition_name("kids", k, 4)))
                                       for k in range(4)])
    children = echomq.ChildJobs()
    for n in range(3):
        children = kids.job_child(children, PARENT, bytes([n]), group="t" if n < 1 else None)
    assert [(ref.queue, ref.id) for ref in (child.ref for child in children.named(PARENT))] == [
        ("kids~3~3", "JOB_01KBVZ6Q2R000DGNE1Q3WR0REK"),
        ("kids~0~1", "JOB_01KBVZ6Q2R000ZXMG1103A9X90"),
        ("kids~2~1", "JOB_01KBVZ6Q2R001008RC04AWBKNR"),
    ]


async def test_created_here_read_by_emq_and_jobs_routed(conn: echomq.Connection, server: RedisServer,
                                                        kind: str) -> None:
    name = unique_queue("orders")
    orders = await echomq.Partitioned.create(conn, name, 4)
    assert [q.name for q in orders.partitions] == [partition_name(name, k, 4) for k in range(4)]
    definition = await conn.redis.hgetall("emq:{" + name + "}:partitions")
    assert definition[b"count"] == b"4" and definition[b"routing"] == b"crc16" and definition[b"protocol"] == b"1.8"
    again = await echomq.Partitioned.create(conn, name, 4)
    assert [q.name for q in again.partitions] == [q.name for q in orders.partitions]
    with pytest.raises(echomq.InvalidInput, match="partitioned 4 ways, not 8"):
        await echomq.Partitioned.create(conn, name, 8)

    one = await orders.enqueue(b"one")
    assert (await orders.partition_of(one.id).inspect(one.id)) is not None
    grouped = [await orders.enqueue(b"g", group="tenant-7") for _ in range(5)]
    assert {orders.index_of(e.id) for e in grouped} == {partition_index("tenant-7", 4)}
    first = await orders.enqueue(b"u", unique="invoice:42", unique_for=60)
    second = await orders.enqueue(b"u", unique="invoice:42", unique_for=60)
    assert second.duplicate and second.id == first.id
    many = await orders.enqueue_many([b"%d" % n for n in range(2500)])
    assert len(many) == 2500 and all(not e.duplicate for e in many)
    assert [len({orders.index_of(e.id) for e in many[i:i + 1000]}) for i in (0, 1000, 2000)] == [1, 1, 1]
    stray = echomq.ids.mint()
    while orders.index_of(stray) == partition_index("tenant-9", 4):
        stray = echomq.ids.mint()
    with pytest.raises(echomq.InvalidInput, match="belongs to partition"):
        await orders.enqueue(b"x", id=stray, group="tenant-9")

    # emq finds the job from the partitioned queue's name, and sees the totals.
    shown = subprocess.run([str(emq_path()), "--url", server.url, "inspect", one.id, "--queue", name],
                           capture_output=True, text=True, check=True).stdout
    assert shown.startswith(f"{one.id} in {orders.partition_of(one.id).name}\n")
    listed = subprocess.run([str(emq_path()), "--url", server.url, "partition", "show", name],
                            capture_output=True, text=True, check=True).stdout
    total = next(line.split() for line in listed.splitlines() if line.startswith("all "))
    assert total[3] == str(1 + 5 + 1 + 2500), listed


async def test_limits_split_and_pause_holds_every_partition(conn: echomq.Connection) -> None:
    orders = await echomq.Partitioned.create(conn, unique_queue("limits"), 4)
    configs = await orders.configure(concurrency=10, rate=6, per=1)
    assert [(c.concurrency, c.rate) for c in configs] == [(3, 2), (3, 2), (2, 1), (2, 1)]
    with pytest.raises(echomq.InvalidInput, match="cannot be split over 4 partitions"):
        await orders.configure(concurrency=3)
    assert all(c.paused for c in await orders.pause())
    assert not any(c.paused for c in await orders.resume())


async def test_a_worker_holds_an_exact_rate_across_the_partitions(conn: echomq.Connection) -> None:
    orders = await echomq.Partitioned.create(conn, unique_queue("exact"), 4)
    assert orders.exact is None
    await orders.exact_rate(20, per=0.3)
    assert (await echomq.Partitioned.open(conn, orders.name)).exact == (20, 300)
    for bad in (0, 100_001):
        with pytest.raises(echomq.InvalidInput, match="an exact rate is 1 to 100000"):
            await orders.exact_rate(bad)
    for n in range(60):
        await orders.enqueue(str(n).encode())
    ran: list[str] = []

    async def handle(job: echomq.Job) -> None:
        ran.append(job.id)

    # As `echomq worker -q NAME` runs them: a Worker a partition, one for the ordinary queue.
    workers = [echomq.Worker(q, handle, concurrency=4, idle_wait=0.05) for q in await orders.worked(conn)]
    running = [asyncio.create_task(worker.run(handle_signals=False)) for worker in workers]
    deadline = time.monotonic() + 60
    while len(ran) < 60 and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    for worker in workers:
        worker.stop()
    await asyncio.gather(*running)
    assert len(ran) == len(set(ran)) == 60
    # The claims, by the server's clock, as the partitions' event logs hold them.
    claimed = [int(entry_id.split(b"-")[0]) for queue in orders.partitions
               for entry_id, fields in await conn.redis.xrange(queue.keyspace.key("events"))
               if fields.get(b"event") == b"active"]
    assert len(claimed) == 60
    busiest = max(sum(1 for t in claimed if at <= t < at + 300) for at in claimed)
    assert busiest <= 20, f"{busiest} claims in one 300 ms"
    await orders.exact_rate(None)
    assert (await echomq.Partitioned.open(conn, orders.name)).exact is None


async def test_busy_workers_take_an_exact_rate_set_while_they_run(conn: echomq.Connection) -> None:
    orders = await echomq.Partitioned.create(conn, unique_queue("switched"), 4)
    for n in range(1000):
        await orders.enqueue(str(n).encode())

    async def handle(job: echomq.Job) -> None:
        await asyncio.sleep(0.02)

    workers = [echomq.Worker(q, handle, concurrency=4, idle_wait=0.05) for q in await orders.worked(conn)]
    running = [asyncio.create_task(worker.run(handle_signals=False)) for worker in workers]
    await asyncio.sleep(0.3)
    assert sum(worker.processed for worker in workers) > 0, "busy before the rate is set"
    await orders.exact_rate(20, per=0.3)
    seconds, micros = await conn.redis.time()
    # Every worker has read it (at most a second after) well before then, a busy machine too.
    bound = seconds * 1000 + micros // 1000 + 2000
    await asyncio.sleep(2.8)
    for worker in workers:
        worker.stop()
    await asyncio.gather(*running)
    claimed = [int(entry_id.split(b"-")[0]) for queue in orders.partitions
               for entry_id, fields in await conn.redis.xrange(queue.keyspace.key("events"))
               if fields.get(b"event") == b"active" and int(entry_id.split(b"-")[0]) >= bound]
    assert claimed, "claims after the rate was read"
    busiest = max(sum(1 for t in claimed if at <= t < at + 300) for at in claimed)
    assert busiest <= 20, f"{busiest} claims in one 300 ms once every worker read the rate"


async def test_bad_input_and_malformed_definitions_are_refused(conn: echomq.Connection) -> None:
    name = unique_queue("bad")
    for count in (0, 1025, True):
        with pytest.raises(echomq.InvalidInput):
            await echomq.Partitioned.create(conn, name, count)
    with pytest.raises(echomq.InvalidInput):
        await echomq.Partitioned.create(conn, "x" * 241, 4)
    assert await echomq.Partitioned.find(conn, name) is None
    with pytest.raises(echomq.InvalidInput, match="not a partitioned queue"):
        await echomq.Partitioned.open(conn, name)
    await (await conn.queue(name)).enqueue(b"plain")
    with pytest.raises(echomq.InvalidInput, match="ordinary queue holding jobs"):
        await echomq.Partitioned.create(conn, name, 4)
    assert not await conn.redis.exists("emq:{" + name + "}:partitions")
    cases = [({"count": "x"}, echomq.DataError), ({"count": "2", "queue:1": "a{b"}, echomq.DataError),
             ({"count": "2", "routing": "jump"}, echomq.EchoMQError)]
    for fields, error in cases:
        bad = unique_queue("malformed")
        await conn.redis.hset("emq:{" + bad + "}:partitions", mapping=fields)
        with pytest.raises(error):
            await echomq.Partitioned.open(conn, bad)
    wrong = unique_queue("wrongtype")
    await conn.redis.set("emq:{" + wrong + "}:partitions", "x")
    with pytest.raises(echomq.KeyTypeError):
        await echomq.Partitioned.open(conn, wrong)
