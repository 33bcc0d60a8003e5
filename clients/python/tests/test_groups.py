"""Fair groups (protocol 1.7, PROTOCOL.md §7.9), on Lua and on Native:
grouped jobs land in their group's keys from every producer (Queue,
SyncQueue, tasks, flows), claims take turns among groups, a cap holds, a
group at its MAX is refused with GroupFull and nothing changes, GROUP and
GROUPS round-trip and page, and bad input is refused before sending."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any, Callable

import pytest

import echomq
from echomq import calls
from echomq.model import read_claims

from conftest import RedisServer, keyspace, transitions_sent, unique_queue, working


async def claim(queue: echomq.Queue, count: int = 1) -> list[echomq.Claimed]:
    return read_claims(await queue.executor.run(calls.claim(queue.keyspace, 60_000, count))).jobs


def key(queue: echomq.Queue | echomq.SyncQueue, role: str) -> bytes:
    return queue.keyspace.key(role)


async def test_a_grouped_job_lands_in_its_group(queue: echomq.Queue, server: RedisServer) -> None:
    one = await queue.enqueue(b"a", group="tenant-7")
    many = await queue.enqueue_many([b"b", b"c"], group="tenant-7")  # ENQUEUEMANY's GROUP
    urgent = await queue.enqueue_many([b"d"], group="tenant-8", priority=-1)  # one ENQUEUE a job
    plain = await queue.enqueue(b"e")
    redis = queue.connection.redis
    pending7 = await redis.zrange(key(queue, "gpending:tenant-7"), 0, -1)
    assert sorted(pending7) == sorted(j.id.encode() for j in [one, *many])
    assert await redis.zrange(key(queue, "gpending:tenant-8"), 0, -1, withscores=True) == [
        (urgent[0].id.encode(), -1.0)]
    owners = await redis.hgetall(key(queue, "group"))
    assert owners == {**{j.id.encode(): b"tenant-7" for j in [one, *many]}, urgent[0].id.encode(): b"tenant-8"}
    assert await redis.zrange(key(queue, "gnames"), 0, -1) == [b"tenant-7", b"tenant-8"]
    assert (await queue.stats()).pending == 5  # pending stays whole
    assert (await queue.inspect(one.id)).group == "tenant-7"  # INSPECT's seventh key
    assert (await queue.inspect(plain.id)).group is None
    info = await queue.group("tenant-7")
    assert (info.name, info.pending, info.running, info.standing) == ("tenant-7", 3, 0, "ready")
    assert [j.id for j in await claim(queue)] == [plain.id]  # the default group's tag ties first

    sync = echomq.SyncQueue.open(server.url, queue.name)
    from_sync = sync.enqueue(b"f", group="tenant-9")
    sync_many = sync.enqueue_many([b"g"], group="tenant-9")
    sync.close()
    pending9 = await redis.zrange(key(queue, "gpending:tenant-9"), 0, -1)
    assert sorted(pending9) == sorted([from_sync.id.encode(), sync_many[0].id.encode()])


async def test_a_task_carries_its_group_and_a_call_overrides_it(server: RedisServer, kind: str) -> None:
    name = unique_queue("tasks")
    app = echomq.App(server.url, queue=name)

    @app.task(group="tenant-a")
    def report(month: str) -> str:
        return month

    first = await report.enqueue_async("jan")
    second = await report.using(group="tenant-b").enqueue_async("feb")
    third = report.using(group="tenant-c").enqueue("mar")  # from sync code
    queue = await app.queue_async(name)
    owners = await queue.connection.redis.hgetall(key(queue, "group"))
    assert owners == {first.id.encode(): b"tenant-a", second.id.encode(): b"tenant-b",
                      third.id.encode(): b"tenant-c"}
    with app.testing() as test:
        report.using(group="tenant-d").enqueue("apr")
    assert test.jobs[0].options["group"] == "tenant-d"
    app.close()


async def test_a_flow_carries_groups(queue: echomq.Queue) -> None:
    other = unique_queue("children")
    flow = echomq.Flow(b"merge", group="t-parent").child(other, b"page", group="t-child").child(other, b"plain")
    await queue.add_flow(flow)
    redis = queue.connection.redis
    assert await redis.hget(key(queue, "group"), flow.id) == b"t-parent"  # it joins once due
    children = echomq.Keyspace(other)
    grouped, plain = flow.children
    assert await redis.zrange(children.key("gpending:t-child"), 0, -1) == [grouped.id.encode()]
    assert await redis.hget(children.key("group"), plain.id) is None


async def test_a_late_group_is_claimed_within_a_few_claims(queue: echomq.Queue) -> None:
    """Fairness, smoke: 100 jobs of tenant A, then one of B: B's job is
    among the first claims (§7.9: within as many as groups ahead of it)."""
    await queue.enqueue_many([b"a%d" % i for i in range(100)], group="A")
    late = await queue.enqueue(b"b", group="B")
    taken = [job.id for _ in range(3) for job in await claim(queue)]
    assert late.id in taken[:2]


async def test_a_worker_of_one_slot_serves_the_late_group_early(queue: echomq.Queue) -> None:
    await queue.enqueue_many([b"a%d" % i for i in range(100)], group="A")
    await queue.enqueue(b"b", group="B")
    ran: list[bytes] = []
    done = asyncio.Event()

    async def handle(job: echomq.Job) -> None:
        ran.append(job.payload)
        if job.payload == b"b":
            done.set()

    async with working(echomq.Worker(queue, handle, concurrency=1)):
        await asyncio.wait_for(done.wait(), 60)
    assert b"b" in ran[:3], ran[:5]


async def test_a_cap_of_one_keeps_one_running_in_order(queue: echomq.Queue) -> None:
    info = await queue.set_group("one", cap=1)
    assert (info.cap, info.standing, info.settings) == (1, "idle", "CAP 1")
    jobs = await queue.enqueue_many([b"%d" % i for i in range(6)], group="one")
    taken = await claim(queue, count=10)
    assert [j.id for j in taken] == [jobs[0].id]
    info = await queue.group("one")
    assert (info.pending, info.running, info.standing) == (5, 1, "capped")
    assert await claim(queue, count=10) == []
    await queue.executor.run(calls.ack(queue.keyspace, taken[0].id, taken[0].token))
    assert [j.id for j in await claim(queue, count=10)] == [jobs[1].id]


async def test_a_worker_runs_a_capped_group_one_at_a_time(queue: echomq.Queue) -> None:
    await queue.set_group("serial", cap=1)
    jobs = await queue.enqueue_many([b"%d" % i for i in range(6)], group="serial")
    order: list[str] = []
    running: list[int] = []

    async def handle(job: echomq.Job) -> None:
        order.append(job.id)
        running.append((await queue.group("serial")).running)

    async with working(echomq.Worker(queue, handle, concurrency=4)):
        for job in jobs:
            await queue.wait(job.id, timeout=60)
    assert order == [j.id for j in jobs] and running == [1] * 6


async def test_a_group_at_its_max_is_refused_and_nothing_changes(queue: echomq.Queue,
                                                                 server: RedisServer) -> None:
    await queue.set_group("t", max=1)
    await queue.enqueue(b"first", group="t")
    client = server.client()
    before = keyspace(client, "emq:{" + queue.name + "}")
    with pytest.raises(echomq.GroupFull) as full:
        await queue.enqueue(b"second", group="t")
    assert isinstance(full.value, echomq.Refused) and full.value.code == "EMQFULL"
    assert (full.value.group, full.value.max) == ("t", 1)
    assert full.value.message == "group t holds its MAX of 1 pending jobs"
    with pytest.raises(echomq.GroupFull):
        await queue.enqueue_many([b"x", b"y"], group="t")
    with pytest.raises(echomq.GroupFull):
        echomq.SyncQueue.open(server.url, queue.name).enqueue(b"z", group="t")
    assert keyspace(client, "emq:{" + queue.name + "}") == before
    await queue.enqueue(b"later", group="t", delay=3600)  # a delayed job is not counted until due
    client.close()


async def test_group_settings_round_trip(queue: echomq.Queue) -> None:
    info = await queue.set_group("t", weight=2, cap=3, rate=10, per=1.0, max=100, paused=True)
    assert info == echomq.GroupInfo("t", 0, 0, "paused", weight=2, cap=3, rate=10, per_ms=1000, max=100,
                                    paused=True, settings="WEIGHT 2 CAP 3 RATE 10 PER 1000 MAX 100 PAUSED 1")
    assert info.per == 1.0 and await queue.group("t") == info
    info = await queue.set_group("t", rate=5, per=timedelta(minutes=1))  # others left as they are
    assert (info.weight, info.cap, info.rate, info.per, info.max, info.paused) == (2, 3, 5, 60.0, 100, True)
    await queue.enqueue(b"x", group="t")
    info = await queue.resume_group("t")
    assert (info.pending, info.paused, info.standing) == (1, False, "ready")
    info = await queue.set_group("t", weight=1, cap=0, rate=0, max=0)  # 0 removes
    assert (info.settings, info.cap, info.rate, info.per, info.max) == ("", None, None, None, None)
    assert (await queue.pause_group("t")).standing == "paused"
    unknown = await queue.group("never-named")
    assert unknown == echomq.GroupInfo("never-named", 0, 0, "idle")


async def test_groups_page_by_name(queue: echomq.Queue, server: RedisServer) -> None:
    names = [f"g{i}" for i in range(7)]
    for name in reversed(names):
        await queue.set_group(name, weight=2)
    await queue.enqueue(b"x", group="g3")
    first = await queue.groups(limit=3)
    assert [g.name for g in first.groups] == names[:3] and first.next == "g2"
    second = await queue.groups(after=first.next, limit=3)
    assert [g.name for g in second.groups] == names[3:6] and second.groups[0].pending == 1
    last = await queue.groups(after=second.next, limit=3)
    assert [g.name for g in last.groups] == names[6:] and last.next is None
    assert [g.name async for g in queue.all_groups(page=2)] == names
    assert all(g.weight == 2 for g in first.groups)
    sync = echomq.SyncQueue.open(server.url, queue.name)
    assert [g.name for g in sync.all_groups(page=4)] == names
    assert sync.groups(after="g5").groups == (await queue.groups(after="g5")).groups
    assert sync.set_group("g0", weight=3).weight == 3 and sync.group("g0").weight == 3
    sync.close()
    empty = await queue.connection.queue(unique_queue("none"))
    assert (await empty.groups()) == echomq.GroupPage([], None)
    assert [g async for g in empty.all_groups()] == []


BAD: list[tuple[str, Callable[[echomq.SyncQueue], Any]]] = [
    ("an empty group", lambda q: q.enqueue(b"x", group="")),
    ("a group of 201 bytes", lambda q: q.enqueue(b"x", group="g" * 201)),
    ("a group of 201 bytes as UTF-8", lambda q: q.enqueue(b"x", group="é" * 100 + "g")),
    ("a group not a str", lambda q: q.enqueue(b"x", group=7)),  # type: ignore[typeddict-item]
    ("an empty group for many", lambda q: q.enqueue_many([b"x"], group="")),
    ("an empty group for many with options", lambda q: q.enqueue_many([b"x"], group="", priority=1)),
    ("reading an empty group", lambda q: q.group("")),
    ("a weight of 0", lambda q: q.set_group("t", weight=0)),
    ("a weight over 1000", lambda q: q.set_group("t", weight=1001)),
    ("a negative cap", lambda q: q.set_group("t", cap=-1)),
    ("a rate without per", lambda q: q.set_group("t", rate=10)),
    ("per without rate", lambda q: q.set_group("t", per=1)),
    ("a zero period", lambda q: q.set_group("t", rate=1, per=0)),
    ("a max over its limit", lambda q: q.set_group("t", max=10**9 + 1)),
    ("paused not a bool", lambda q: q.set_group("t", paused=1)),  # type: ignore[arg-type]
    ("a group of 201 bytes set", lambda q: q.set_group("g" * 201, weight=2)),
    ("a page after an empty name", lambda q: q.groups(after="")),
    ("a page of 0", lambda q: q.groups(limit=0)),
    ("a page of 1001", lambda q: q.groups(limit=1001)),
]


@pytest.mark.parametrize("what,call", BAD, ids=[w for w, _ in BAD])
def test_bad_group_input_is_refused_before_sending(server: RedisServer, what: str,
                                                   call: Callable[[echomq.SyncQueue], Any]) -> None:
    queue = echomq.SyncQueue.open(server.url, unique_queue("bad"))
    client = server.client()
    before = (transitions_sent(client), keyspace(client, "emq:{" + queue.name + "}"))
    with pytest.raises(echomq.InvalidInput):
        call(queue)
    assert (transitions_sent(client), keyspace(client, "emq:{" + queue.name + "}")) == before
    client.close()
    queue.close()


def test_bad_groups_of_tasks_and_flows_are_refused_at_once() -> None:
    app = echomq.App("redis://127.0.0.1:1/0")
    with pytest.raises(echomq.InvalidInput):
        app.task(group="")(lambda: None)
    made = app.task(name="t")(lambda: None)
    with pytest.raises(echomq.InvalidInput):
        made.using(group="g" * 201)
    with pytest.raises(echomq.InvalidInput):
        echomq.Flow(b"p", group="")
    with pytest.raises(echomq.InvalidInput):
        echomq.Flow(b"p").child("q", b"c", group="g" * 201)
    with pytest.raises(echomq.InvalidInput):
        echomq.ChildJobs().child("q", b"c", group="")
    assert echomq.ChildJobs().child("q", b"c", group="t").named("JOB-p")[0].options == {"group": "t"}


def test_a_row_reads_settings_it_knows_and_keeps_the_text() -> None:
    row = [b"t", 3, 1, b"capped", b"WEIGHT 2 CAP 1 LATER x RATE 10 PER 1000"]
    info = echomq.GroupInfo.read(row)
    assert (info.weight, info.cap, info.rate, info.per, info.max, info.paused) == (2, 1, 10, 1.0, None, False)
    assert info.settings == "WEIGHT 2 CAP 1 LATER x RATE 10 PER 1000"
    with pytest.raises(echomq.EchoMQError):
        echomq.GroupInfo.read([b"t", 0, 0, b"sleeping", b""])
