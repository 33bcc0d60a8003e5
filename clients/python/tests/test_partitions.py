"""Partitioned queues (protocol 1.8, PROTOCOL.md §7.10), on Lua and on
Native: the partitions' names as the Rust host chooses them (and as Redis
hashes them), the definition written once and read back by the other
speaker, each job in its id's partition or its group's, limits split, an
exact rate and an exact concurrency held across the partitions (with the
Rust worker beside a Python one), bad input and malformed definitions
refused, nothing written; and the worker command working every partition."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Awaitable, Callable, cast

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
    ordinary = await conn.queue(orders.name)
    assert (await ordinary.configure()).paused, "the ordinary queue of its name, which its workers work"
    assert not any(c.paused for c in await orders.resume())
    assert not (await ordinary.configure()).paused


async def test_a_change_refused_on_some_partitions_notes_those_it_made(server: RedisServer,
                                                                       conn: echomq.Connection) -> None:
    orders = await echomq.Partitioned.create(conn, unique_queue("acl"), 4)
    user = unique_queue("two")
    reached = [f"~emq:{{{queue.name}}}:*" for queue in orders.partitions[:2]]
    # Every key read (opening a queue reads its config), two partitions written.
    await conn.redis.execute_command("ACL", "SETUSER", user, "on", ">pw", "+@all", "%R~emq:*", "~emq:queues",
                                     f"~emq:{{{orders.name}}}:partitions", *reached)
    limited = await echomq.connect(server.url.replace("redis://", f"redis://{user}:pw@", 1))
    try:
        two = await echomq.Partitioned.open(limited, orders.name)
        with pytest.raises(Exception) as refused:
            await two.configure(paused=True)
        names = ", ".join(queue.name for queue in orders.partitions[:2])
        assert f"changed on 2 of its 4 partitions ({names}) all the same" in refused.value.__notes__
    finally:
        await limited.close()
    assert [(await queue.configure()).paused for queue in orders.partitions] == [True, True, False, False]


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


class Overlap:
    """How many handlers run at once, across every worker of a test (on the
    loop and in threads): the most seen, and each job's runs."""

    def __init__(self) -> None:
        self.now = 0
        self.most = 0
        self.runs: list[str] = []
        self._lock = threading.Lock()

    def _enter(self, job: echomq.Job) -> None:
        with self._lock:
            self.runs.append(job.id)
            self.now += 1
            self.most = max(self.most, self.now)

    def _leave(self) -> None:
        with self._lock:
            self.now -= 1

    def handler(self, seconds: float) -> Callable[[echomq.Job], Awaitable[None]]:
        async def handle(job: echomq.Job) -> None:
            self._enter(job)
            try:
                await asyncio.sleep(seconds)
            finally:
                self._leave()
        return handle

    def sync_handler(self, seconds: float) -> Callable[[echomq.Job], None]:
        """A plain ``def`` one: its jobs run in their slots' threads."""
        def handle(job: echomq.Job) -> None:
            self._enter(job)
            try:
                time.sleep(seconds)
            finally:
                self._leave()
        return handle


async def started(partitioned: echomq.Partitioned, connection: echomq.Connection, handle: Any,
                  **options: Any) -> tuple[list[echomq.Worker], list[asyncio.Task[None]]]:
    """A worker per queue of ``partitioned`` (as ``echomq worker -q NAME`` runs them), running."""
    workers = [echomq.Worker(q, handle, idle_wait=0.05, **options) for q in await partitioned.worked(connection)]
    return workers, [asyncio.create_task(worker.run(handle_signals=False)) for worker in workers]


async def stopped(workers: list[echomq.Worker], tasks: list[asyncio.Task[None]]) -> None:
    for worker in workers:
        worker.stop()
    await asyncio.wait_for(asyncio.gather(*tasks), 60)


def running_key(name: str) -> str:
    return "emq:{" + name + "}:running"


async def test_two_workers_hold_an_exact_concurrency_across_the_partitions(conn: echomq.Connection,
                                                                           server: RedisServer) -> None:
    """Two workers (each its own connection and coordinator, as two
    processes; one async handler, one plain ``def`` run in its slots'
    threads) of 4 partitions, each queue's at concurrency 4, under an
    exact concurrency of 3: 30 jobs of 40 ms run once each, never more than
    3 at once (and more than one), and every running permit is given back
    at its job's end: none left long before a 30 s lease would lapse one."""
    orders = await echomq.Partitioned.create(conn, unique_queue("capped"), 4)
    assert orders.running_cap is None
    await orders.exact_concurrency(3)
    assert orders.running_cap == 3
    assert (await echomq.Partitioned.open(conn, orders.name)).running_cap == 3
    overlap = Overlap()
    other = await echomq.connect(server.url)
    both = []
    try:
        for connection, handle in ((conn, overlap.handler(0.04)), (other, overlap.sync_handler(0.04))):
            partitioned = await echomq.Partitioned.open(connection, orders.name)
            both.append(await started(partitioned, connection, handle, concurrency=4, lease=30))
        # Enqueued once both wait for work, so that each runs some however
        # slowly the second started on a busy machine.
        jobs = [await orders.enqueue(b"%d" % n) for n in range(30)]
        assert len({orders.index_of(job.id) for job in jobs}) > 1, "spread over the partitions"
        for job in jobs:
            assert (await orders.partition_of(job.id).wait(job.id, timeout=60)).state == "done"
        # Given back at each job's end: long before a lease (30 s) would lapse it.
        await eventually(lambda: _none_running(conn, orders.name), timeout=5, what="every running permit given back")
    finally:
        for workers, tasks in both:
            await stopped(workers, tasks)
        await other.close()
    assert sorted(overlap.runs) == sorted(job.id for job in jobs), "each job ran once"
    assert 2 <= overlap.most <= 3, f"{overlap.most} jobs ran at once under an exact concurrency of 3"
    processed = [sum(w.processed for w in workers) for workers, _ in both]
    assert sum(processed) == 30 and min(processed) > 0, f"each worker ran some: {processed}"


async def _none_running(conn: echomq.Connection, name: str) -> bool:
    """No permit of ``name`` runs: none scored after the server's now (one
    that lapsed and was not trimmed yet runs no more)."""
    seconds, micros = await conn.redis.time()
    now = int(seconds) * 1000 + int(micros) // 1000
    return int(await conn.redis.zcount(running_key(name), f"({now}", "+inf")) == 0


async def test_a_job_longer_than_its_lease_keeps_its_running_permit(conn: echomq.Connection) -> None:
    """Under an exact concurrency of 1, a job of 5.5 s on a 2 s lease runs
    to its end while its lease is renewed, its running permit renewed
    before each renewal (RENEW): the permit PERMIT granted runs only 4 s
    (its 1 s hold, the lease and the 1 s slack), so without RENEW the
    second job would start beside the first. Each runs once, never both
    at once."""
    orders = await echomq.Partitioned.create(conn, unique_queue("long"), 4)
    await orders.exact_concurrency(1)
    jobs = [await orders.enqueue(b"%d" % n) for n in range(2)]
    overlap = Overlap()
    workers, tasks = await started(orders, conn, overlap.handler(5.5), concurrency=2, lease=2)
    try:
        for job in jobs:
            assert (await orders.partition_of(job.id).wait(job.id, timeout=60)).state == "done"
    finally:
        await stopped(workers, tasks)
    assert sorted(overlap.runs) == sorted(job.id for job in jobs), "each job ran once"
    assert overlap.most == 1, "two jobs ran at once under an exact concurrency of 1"
    await eventually(lambda: _none_running(conn, orders.name), timeout=10,
                     what="every running permit given back, or lapsed (a claim a stopping worker cut short keeps its own)")


async def test_an_exact_concurrency_is_the_rust_hosts_and_binds_both_workers(
        conn: echomq.Connection, server: RedisServer, kind: str, tmp_path: Path) -> None:
    """Across speakers: the definition's ``concurrency`` Python writes is
    the field ``emq limit --exact --concurrency`` (Rust's
    ``Partitioned::exact_concurrency``) writes, each read back by the other;
    under the cap Python set, a Python worker and ``emq work`` (the Rust
    worker) together run no more than 2 jobs at once, and give every permit
    back. Lifted (None), the field is 0, as Rust's ``Unlimited`` writes it."""
    env = {**os.environ, "ECHOMQ_URL": server.url, "ECHOMQ_VIA": kind}

    def emq(*args: str) -> str:
        return subprocess.run([str(emq_path()), *args], capture_output=True, text=True, check=True, env=env,
                              timeout=120).stdout

    ours = await echomq.Partitioned.create(conn, unique_queue("py-cap"), 4)
    theirs = await echomq.Partitioned.create(conn, unique_queue("rs-cap"), 4)
    await ours.exact_concurrency(2)
    emq("limit", theirs.name, "--exact", "--concurrency", "2")
    field = [await conn.redis.hget("emq:{" + q.name + "}:partitions", "concurrency") for q in (ours, theirs)]
    assert field == [b"2", b"2"], "the same field, the same text"
    assert (await echomq.Partitioned.open(conn, theirs.name)).running_cap == 2, "Rust's, read by Python"
    assert "exact concurrency 2 across the partitions" in emq("partition", "show", ours.name), "Python's, by Rust"

    log = tmp_path / "ran.log"
    script = tmp_path / "job.sh"
    # A Rust job holds its permit until a Python one has started (a minute
    # at most), so both workers run some however fast either claims; with
    # one slot, emq work leaves the cap's other permit to Python.
    script.write_text(f'#!/bin/sh\ncat >/dev/null\necho "start $ECHOMQ_JOB_ID rust" >> {log}\nsleep 0.2\n'
                      f'i=0; while ! grep -q python {log} && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done\n'
                      f'echo "end $ECHOMQ_JOB_ID rust" >> {log}\n')
    script.chmod(0o755)

    async def handle(job: echomq.Job) -> None:
        with log.open("a") as out:
            out.write(f"start {job.id} python\n")
        await asyncio.sleep(0.2)
        with log.open("a") as out:
            out.write(f"end {job.id} python\n")

    def ran() -> list[list[str]]:
        return [line.split() for line in log.read_text().splitlines()] if log.exists() else []

    async def rust_ran() -> bool:
        return any(words[2] == "rust" for words in ran())

    jobs = [await ours.enqueue(b"%d" % n) for n in range(20)]
    rust = subprocess.Popen([str(emq_path()), "work", ours.name, "--concurrency", "1", "--", str(script)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        await eventually(rust_ran, timeout=60, what="emq work ran a job")  # then the Python worker joins
        workers, tasks = await started(ours, conn, handle, concurrency=4)
        try:
            for job in jobs:
                assert (await ours.partition_of(job.id).wait(job.id, timeout=60)).state == "done"
            await eventually(lambda: _none_running(conn, ours.name), timeout=5,
                             what="every running permit given back")
        finally:
            await stopped(workers, tasks)
    finally:
        rust.send_signal(signal.SIGTERM)
        _, err = rust.communicate(timeout=60)
    lines = ran()
    assert sorted(id for edge, id, _ in lines if edge == "start") == sorted(job.id for job in jobs), "each once"
    assert {who for _, _, who in lines} == {"rust", "python"}, "both workers ran some"
    now = most = 0
    for edge, _, _ in lines:
        now += 1 if edge == "start" else -1
        most = max(most, now)
    assert most <= 2, f"{most} jobs ran at once under an exact concurrency of 2; emq work: {err.decode()}"

    await ours.exact_concurrency(None)
    assert await conn.redis.hget("emq:{" + ours.name + "}:partitions", "concurrency") == b"0"
    assert ours.running_cap is None and (await echomq.Partitioned.open(conn, ours.name)).running_cap is None
    for bad in (0, 100_001, True, 2.5):
        with pytest.raises(echomq.InvalidInput, match="an exact concurrency is 1 to 100000"):
            await ours.exact_concurrency(bad)  # type: ignore[arg-type]
    assert await conn.redis.hget("emq:{" + ours.name + "}:partitions", "concurrency") == b"0", "nothing sent"


async def test_a_limit_set_or_lifted_since_the_last_read_binds_as_it_stands(conn: echomq.Connection) -> None:
    """A coordinator's reading of the definition lags by up to a second,
    and PERMIT and RENEW correct it: a concurrency set since a read that
    found only a rate is refused to the two-key PERMIT, read, and asked for
    with the running key; a concurrency lifted since a permit was taken
    makes RENEW find it gone, and the lease may be renewed all the same."""
    orders = await echomq.Partitioned.create(conn, unique_queue("lagged"), 2)
    await orders.exact_rate(1000, 1.0)
    coordinator = orders.partitions[0].coordinator
    assert coordinator is not None
    assert await coordinator.check() and coordinator.rate and not coordinator.capped
    await orders.exact_concurrency(2)
    granted, first, until, _ = await coordinator.permit(3, 60_000)
    assert (granted, until > 0) == (2, True), "the new cap read at once, not a second later"
    assert coordinator.capped
    assert await conn.redis.zcard(f"emq:{{{orders.name}}}:running") == 2
    assert await orders.running() == 2, "as the package counts them"
    await conn.redis.zadd(f"emq:{{{orders.name}}}:running", {"99": 1})
    assert await orders.running() == 2, "a lapsed permit runs no more"
    coordinator.took(orders.partitions[0].name, ["JOB_lagged"], first)
    await orders.exact_concurrency(None)
    # As if granted after the lift: no running permit behind the job.
    await conn.redis.delete(f"emq:{{{orders.name}}}:running")
    assert await coordinator.renew(orders.partitions[0].name, ["JOB_lagged"], 60_000) == [True]
    assert not coordinator.capped, "the lift read: the permit binds no longer"


async def test_each_partition_is_kept_by_one_worker_at_a_time(conn: echomq.Connection) -> None:
    """Under its upkeep lease (§11.3): a partition whose lease another holds
    is not kept (its due job stays delayed while two rounds of the others'
    run), a worker takes a freed lease, and stopped workers give theirs back."""
    kept = await echomq.Partitioned.create(conn, unique_queue("kept"), 4)
    queues = await kept.worked(conn)
    lease = [queue.keyspace.key("upkeep") for queue in queues]
    assert await conn.redis.set(lease[0], "elsewhere", nx=True, px=600_000)
    held = await queues[0].enqueue(b"held", delay=0.001)
    ran: list[bytes] = []

    async def handle(job: echomq.Job) -> None:
        ran.append(job.payload)

    workers = [echomq.Worker(q, handle, upkeep=0.05, idle_wait=0.05) for q in queues for _ in range(2)]
    ids = {worker.id for worker in workers}
    running = [asyncio.create_task(worker.run(handle_signals=False)) for worker in workers]
    try:
        for round in (1, 2):
            for queue in queues[1:4]:
                await queue.enqueue(b"due", delay=0.001)
            await eventually(lambda: asyncio.sleep(0, len(ran) >= 3 * round), what="each kept partition's job ran")
        info = await queues[0].inspect(held.id)
        assert info is not None and info.state == "delayed", "kept by no worker while another holds its lease"
        for key in lease[1:]:
            keeper = await eventually(lambda: conn.redis.get(key), what="a worker keeps the queue")
            assert keeper.decode() in ids
        assert await conn.redis.delete(lease[0]) == 1
        await eventually(lambda: asyncio.sleep(0, b"held" in ran), what="a worker took the lease and kept it")
        assert (await conn.redis.get(lease[0])).decode() in ids
    finally:
        for worker in workers:
            worker.stop()
        await asyncio.gather(*running)
    assert [await conn.redis.get(key) for key in lease] == [None] * len(lease), "given back"


async def test_the_upkeep_lease_is_renewed_refused_for_a_minute_and_given_back_only_by_its_holder(
        conn: echomq.Connection) -> None:
    """§11.3: the keeper renews its lease each period (PEXPIRE before its
    SET); a refused SET keeps the queue for a minute without asking again;
    a stopping worker deletes only a lease that is still its own."""
    from echomq.upkeep import LEASE_RETRY, Upkeep

    leased = await echomq.Partitioned.create(conn, unique_queue("leased"), 2)
    one, two = leased.partitions
    mine, theirs = Upkeep(one, 5, 0.25, keeper="me"), Upkeep(two, 5, 0.25, keeper="me")
    key = one.keyspace.key("upkeep")
    assert await mine.keeps() and await conn.redis.get(key) == b"me", "taken"
    await conn.redis.pexpire(key, 100)  # as if most of its three periods had passed
    assert await mine.keeps(), "kept"
    assert await conn.redis.pttl(key) > 500, "renewed to three periods (750 ms)"
    await conn.redis.set(two.keyspace.key("upkeep"), "another", px=60_000)
    assert not await theirs.keeps(), "another's: not kept"
    # Given back at the stop: its own deleted, another's (taken since its last period) left.
    theirs._held = True
    await mine.give_back()
    await theirs.give_back()
    assert await conn.redis.get(key) is None
    assert await conn.redis.get(two.keyspace.key("upkeep")) == b"another"
    # A key of another type refuses the SET: kept, and not asked for again for a minute.
    await conn.redis.delete(key)
    await conn.redis.hset(key, "x", "y")
    assert await mine.keeps() and not mine.leased, "refused: kept as an ordinary queue"
    assert mine._refused_until is not None
    mine._refused_until -= LEASE_RETRY
    await conn.redis.delete(key)
    assert mine.leased and await mine.keeps() and await conn.redis.get(key) == b"me", "asked for again"
