"""Flows (protocol 1.6, PROTOCOL.md §7.8), on Lua and on Native: a parent
runs once, after its children in other queues, and reads their results;
every way a child ends tells its parent; notices sent twice, late or to a
parent that ended change nothing; the relay and the sweep (§11.3); adding
a flow again adds only what is missing; bad input is refused before
anything is sent."""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any, Awaitable, Callable

import pytest

import echomq
from echomq import calls, flows
from echomq.executor import Call
from echomq.model import read_claims

from conftest import RedisServer, eventually, keyspace, transitions_sent, unique_queue, working


async def open_queue(conn: echomq.Connection, prefix: str) -> echomq.Queue:
    return await conn.queue(unique_queue(prefix))


async def state(queue: echomq.Queue, job_id: str) -> str | None:
    info = await queue.inspect(job_id)
    return None if info is None else info.state


async def test_a_parent_runs_once_after_its_children_in_other_queues_and_reads_their_results(
        conn: echomq.Connection) -> None:
    parents, render, thumbs = [await open_queue(conn, name) for name in ("parents", "render", "thumbs")]
    nested = echomq.Flow(b"parent nested").child(thumbs.name, b"t1")
    flow = (echomq.Flow(b"parent top", priority=-1, attempts=2, headers={"tenant": "acme"})
            .child(render.name, b"r1")
            .child(render.name, b"r2", priority=3)
            .child_flow(thumbs.name, nested))
    added = await parents.add_flow(flow)
    assert added.created and added.parent == echomq.JobRef(parents.name, flow.id)
    assert added.children == flow.children and len(added.children) == 3
    assert added.children[2] == echomq.JobRef(thumbs.name, nested.id)
    stats = await parents.stats()
    assert (stats.waiting, stats.pending) == (1, 0), "the parent waits"
    info = await parents.inspect(flow.id)
    assert info is not None and info.state == "waiting" and info.headers == {"tenant": "acme"}
    assert (await thumbs.stats()).waiting == 1 and (await render.stats()).pending == 2
    heard = await parents.children(flow.id)
    assert heard is not None and (heard.incarnation, heard.open) == (added.incarnation, 3)
    assert all(child.open for child in heard.children)

    runs: list[tuple[str, dict[echomq.JobRef, bytes]]] = []

    async def handle(job: echomq.Job) -> bytes:
        if job.payload.startswith(b"parent"):
            runs.append((job.id, await job.children_results()))
            return b"parent"
        assert await job.children() is None and await job.children_results() == {}
        return b"done " + job.payload

    workers = [echomq.Worker(queue, handle, upkeep=0.05) for queue in (parents, render, thumbs)]
    async with working(workers[0]), working(workers[1]), working(workers[2]):
        done = await parents.wait(flow.id, timeout=60)
        await asyncio.sleep(0.3)  # a few more upkeep periods: nothing runs the parent again
    assert (done.state, done.result, done.token) == ("done", b"parent", 1)
    assert sorted(job_id for job_id, _ in runs) == sorted([flow.id, nested.id]), "each parent once"
    [top] = [results for job_id, results in runs if job_id == flow.id]
    assert top == {added.children[0]: b"done r1", added.children[1]: b"done r2", added.children[2]: b"parent"}
    [inner] = [results for job_id, results in runs if job_id == nested.id]
    assert inner == {nested.children[0]: b"done t1"}
    for queue in (parents, render, thumbs):
        stats = await queue.stats()
        assert (stats.waiting, stats.pending, stats.active) == (0, 0, 0), queue.name
        assert await queue.executor.redis.xlen(queue.keyspace.key("notices")) == 0, "every notice relayed"
    heard = await parents.children(flow.id)
    assert heard is not None and heard.open == 0
    assert [child.outcome for child in heard.children] == ["done"] * 3


Ending = Callable[[echomq.Queue, str], Awaitable[None]]


async def _claimed(queue: echomq.Queue, lease_ms: int = 60_000) -> echomq.Claimed:
    [job] = read_claims(await queue.executor.run(calls.claim(queue.keyspace, lease_ms))).jobs
    return job


async def _ack(queue: echomq.Queue, job_id: str) -> None:
    job = await _claimed(queue)
    await queue.executor.run(calls.ack(queue.keyspace, job.id, job.token, b"42"))


async def _fail(queue: echomq.Queue, job_id: str) -> None:
    job = await _claimed(queue)
    await queue.executor.run(calls.fail(queue.keyspace, job.id, job.token, 1, 0, "boom"))


async def _reap(queue: echomq.Queue, job_id: str) -> None:
    await _claimed(queue, lease_ms=1)

    async def reaped() -> bool:
        _, dead = await queue.executor.run(calls.sweep("reap", queue.keyspace, 10, first=[b"1"]))
        return bool(dead)

    await eventually(reaped, what="the lease ran out and was reaped to dead")


async def _cancel(queue: echomq.Queue, job_id: str) -> None:
    assert await queue.cancel(job_id)


async def _remove(queue: echomq.Queue, job_id: str) -> None:
    remove = Call("remove", calls.keys("remove", queue.keyspace, state="pending"), [job_id.encode()])
    assert await queue.executor.run(remove) == 1


async def _drain(queue: echomq.Queue, job_id: str) -> None:
    assert await queue.executor.run(calls.sweep("drain", queue.keyspace, 100, state="pending")) == 1


async def _trim_after_ack(queue: echomq.Queue, job_id: str) -> None:
    """Retention trims the done child before the relay runs: its notice carries its result all the same."""
    job = await _claimed(queue)
    await queue.executor.run(calls.ack(queue.keyspace, job.id, job.token, b"kept"))
    await queue.configure(done_age=0.001)

    async def trimmed() -> bool:
        return bool(await queue.executor.run(calls.sweep("trim", queue.keyspace, 100, state="done")))

    await eventually(trimmed, what="retention trimmed the child")
    assert await queue.inspect(job_id) is None


ENDINGS: list[tuple[str, Ending, str, str, str, bytes | None]] = [
    # (how, the end, the parent's on_failure, the parent's state after, what it heard, the result)
    ("ack", _ack, "fail", "pending", "done", b"42"),
    ("fail to dead", _fail, "fail", "dead", "dead", None),
    ("reaped to dead, continued", _reap, "continue", "pending", "dead", None),
    ("cancel, ignored", _cancel, "ignore", "pending", "cancelled", None),
    ("remove", _remove, "fail", "dead", "gone", None),
    ("drain, ignored", _drain, "ignore", "pending", "gone", None),
    ("retention trim after ack", _trim_after_ack, "fail", "pending", "done", b"kept"),
]


@pytest.mark.parametrize("how,end,on_failure,after,outcome,result", ENDINGS, ids=[e[0] for e in ENDINGS])
async def test_every_way_a_child_ends_tells_its_parent(conn: echomq.Connection, how: str, end: Ending,
                                                      on_failure: Any, after: str, outcome: str,
                                                      result: bytes | None) -> None:
    parents, children = await open_queue(conn, "parents"), await open_queue(conn, "children")
    flow = echomq.Flow(b"parent").child(children.name, b"child", on_failure=on_failure)
    added = await parents.add_flow(flow)
    [child] = added.children
    await end(children, child.id)
    upkeep = echomq.Upkeep(children, 5, 0.25)
    assert await upkeep.relay() == 1, "one notice"
    assert await upkeep.relay() == 0, "relayed and deleted: a second relay finds none"
    assert await state(parents, flow.id) == after
    heard = await parents.children(flow.id)
    assert heard is not None and heard.open == 0
    assert heard.children == [echomq.Child(child, outcome, result)]  # type: ignore[arg-type]
    if after == "dead":
        info = await parents.inspect(flow.id)
        assert info is not None and info.error == f"child {child} {outcome}"


async def test_the_sweep_tells_a_trimmed_child_done_not_gone(conn: echomq.Connection) -> None:
    """A child done and trimmed by retention before its notice was relayed:
    the sweep relays the children's queues first, so the parent hears it
    done, with its result, and waits on for the other."""
    parents, children = await open_queue(conn, "parents"), await open_queue(conn, "children")
    flow = echomq.Flow(b"parent").child(children.name, b"a").child(children.name, b"b")
    added = await parents.add_flow(flow)
    a, _ = added.children
    await _trim_after_ack(children, a.id)
    await echomq.Upkeep(parents, 5, 0.25).sweep(0)
    heard = await parents.children(flow.id)
    assert heard is not None
    [told] = [child for child in heard.children if child.ref == a]
    assert (told.outcome, told.result) == ("done", b"kept")
    assert await state(parents, flow.id) == "waiting"


async def test_notices_twice_late_or_to_an_ended_parent_change_nothing_and_a_cancel_takes_open_children(
        conn: echomq.Connection) -> None:
    parents, children = await open_queue(conn, "parents"), await open_queue(conn, "children")
    flow = echomq.Flow(b"parent").child(children.name, b"a").child(children.name, b"b")
    added = await parents.add_flow(flow)
    a, b = added.children

    async def send(child: echomq.JobRef, outcome: str, incarnation: int) -> Any:
        return await parents.executor.run(calls.resolve(parents.keyspace, flow.id, incarnation, child, outcome))

    assert await send(a, "done", added.incarnation) == 1, "applied"
    assert await send(a, "done", added.incarnation) == 0, "twice"
    assert await send(a, "dead", added.incarnation) == 0, "out of order"
    assert await send(b, "done", added.incarnation + 1) == 0, "another incarnation"
    other = echomq.JobRef(children.name, echomq.mint())
    assert await send(other, "done", added.incarnation) == 0, "not its child"
    assert (await parents.stats()).waiting == 1, "still waiting for b"
    # Cancelled: b's notice changes nothing, and the parent takes its open child b with it.
    assert await parents.cancel(flow.id)
    assert await send(b, "done", added.incarnation) == 0, "after the cancel"
    stats = await parents.stats()
    assert (stats.cancelled, stats.pending, stats.waiting) == (1, 0, 0)
    heard = await parents.children(flow.id)
    assert heard is not None and heard.open == 1, "b stays open"
    assert await state(children, b.id) == "cancelled"
    assert await state(children, a.id) == "pending", "a's end was told by hand here, not run"
    assert not await parents.cancel(flow.id), "cancelled already"


async def test_a_cancelled_parent_takes_its_nested_flows_open_children(conn: echomq.Connection) -> None:
    parents, middle, leaves = [await open_queue(conn, name) for name in ("parents", "middle", "leaves")]
    nested = echomq.Flow(b"nested").child(leaves.name, b"leaf")
    flow = echomq.Flow(b"top").child_flow(middle.name, nested).child(leaves.name, b"other")
    await parents.add_flow(flow)
    assert await parents.cancel(flow.id)
    assert await state(middle, nested.id) == "cancelled"
    for leaf in (nested.children[0], flow.children[1]):
        assert await state(leaves, leaf.id) == "cancelled"


async def test_the_sweep_resolves_children_that_never_came_or_ended_unheard(conn: echomq.Connection) -> None:
    """A producer that died between its parent and its children: the sweep
    resolves the child that never came ``gone``, and one that ended with no
    link (enqueued by a speaker that did not link it) as it ended; a child
    still pending is left to tell its parent itself."""
    parents, children = await open_queue(conn, "parents"), await open_queue(conn, "children")
    never, unheard, later = (echomq.JobRef(children.name, echomq.mint()) for _ in range(3))
    parent = echomq.mint()
    call = calls.flow(parents.keyspace, parent, b"parent",
                      [(never, "ignore"), (unheard, "fail"), (later, "fail")])
    assert (await parents.executor.run(call))[0] == 1
    await children.enqueue(b"u", id=unheard.id)
    job = await _claimed(children)
    await children.executor.run(calls.ack(children.keyspace, job.id, job.token, b"r"))
    await children.enqueue(b"l", id=later.id)

    upkeep = echomq.Upkeep(parents, 5, 0.25)
    assert await upkeep.sweep(3600) == 0, "not past its grace"
    assert await upkeep.sweep(0) == 2
    assert await upkeep.sweep(0) == 0, "once"
    heard = await parents.children(parent)
    assert heard is not None
    outcomes = {child.ref: (child.outcome, child.result) for child in heard.children}
    assert outcomes == {never: ("gone", None), unheard: ("done", b"r"), later: (None, None)}
    assert (await parents.stats()).waiting == 1
    # The sweep moved the parent's score to now: a sweep with a grace longer than that looks at none.
    [(_, score)] = await parents.executor.redis.zrange(parents.keyspace.key("waiting"), 0, 0, withscores=True)
    seconds, micros = await parents.executor.redis.time()
    assert seconds * 1000 + micros // 1000 - score < 5_000


async def test_a_worker_sweeps_a_parent_past_its_grace(conn: echomq.Connection) -> None:
    parents, children = await open_queue(conn, "parents"), await open_queue(conn, "children")
    never = echomq.JobRef(children.name, echomq.mint())
    parent = echomq.mint()
    await parents.executor.run(calls.flow(parents.keyspace, parent, b"parent", [(never, "fail")]))
    ran: list[str] = []

    async def handle(job: echomq.Job) -> None:
        ran.append(job.id)

    worker = echomq.Worker(parents, handle, upkeep=0.05)
    worker.upkeep.sweep_grace = 0.2
    async with working(worker):
        dead = await parents.wait(parent, timeout=60)
    assert (dead.state, dead.error, ran) == ("dead", f"child {never} gone", [])


async def test_the_relay_leaves_a_refused_or_unreadable_notice_and_says_so(
        conn: echomq.Connection, caplog: pytest.LogCaptureFixture) -> None:
    parents, children = await open_queue(conn, "parents"), await open_queue(conn, "children")
    flow = echomq.Flow(b"parent").child(children.name, b"child")
    await parents.add_flow(flow)
    await _ack(children, flow.children[0].id)
    notices = children.keyspace.key("notices")
    redis = children.executor.redis
    await redis.xadd(notices, {"parent": "nobody", "outcome": "done"})
    waiting = parents.keyspace.key("waiting")
    [(member, score)] = await redis.zrange(waiting, 0, -1, withscores=True)
    await redis.delete(waiting)
    await redis.set(waiting, b"not a zset")  # RESOLVE is refused: EMQTYPE
    upkeep = echomq.Upkeep(children, 5, 0.25)
    with caplog.at_level(logging.WARNING, logger="echomq.upkeep"):
        assert await upkeep.relay() == 2
    said = caplog.text
    assert "could not reach its parent" in said and "EMQTYPE" in said
    assert "does not read as one" in said
    assert await redis.xlen(notices) == 2, "both stay"
    await redis.delete(waiting)
    await redis.zadd(waiting, {member: score})
    assert await upkeep.relay() == 2
    assert await redis.xlen(notices) == 1, "the refused one relayed now; the unreadable one stays"
    assert await state(parents, flow.id) == "pending"


async def test_a_flow_added_again_adds_only_what_is_missing(conn: echomq.Connection, server: RedisServer) -> None:
    """A producer that died after the parent's FLOW: adding the same flow
    again answers the parent's incarnation and adds the children."""
    parents, children = await open_queue(conn, "parents"), await open_queue(conn, "children")
    flow = echomq.Flow(b"parent").child(children.name, b"a").child(children.name, b"b")
    plan = flows.steps(flow, parents.keyspace)
    _, first = next(plan)
    [written] = await parents.executor.run_many(first)  # the parent alone, then the producer "died"
    plan.close()
    assert written[0] == 1 and (await children.stats()).pending == 0
    again = await parents.add_flow(flow)
    assert not again.created and again.incarnation == int(written[1])
    assert (await children.stats()).pending == 2
    client = server.client()
    before = keyspace(client, "emq:{" + children.name + "}")
    third = await parents.add_flow(flow)
    assert third == again, "adding it a third time adds nothing"
    assert keyspace(client, "emq:{" + children.name + "}") == before
    client.close()
    # Its children's links name the incarnation: their ends reach the parent.
    for child in flow.children:
        await _ack(children, child.id)
    assert await echomq.Upkeep(children, 5, 0.25).relay() == 2
    assert await state(parents, flow.id) == "pending"


async def test_a_parent_id_that_names_a_job_that_is_no_parent_is_refused(conn: echomq.Connection) -> None:
    parents, children = await open_queue(conn, "parents"), await open_queue(conn, "children")
    job = await parents.enqueue(b"plain")
    with pytest.raises(echomq.NotAParent, match=job.id):
        await parents.add_flow(echomq.Flow(b"parent", id=job.id).child(children.name, b"c"))
    assert (await children.stats()).pending == 0, "no child was enqueued"


def _flow_of(children: int, queue: str = "c") -> echomq.Flow:
    flow = echomq.Flow(b"p")
    for _ in range(children):
        flow.child(queue, b"c")
    return flow


def _cycle() -> echomq.Flow:
    flow = echomq.Flow(b"p")
    return flow.child_flow("c", flow)


BAD_FLOWS: list[tuple[str, Callable[[], echomq.Flow]]] = [
    ("no child", lambda: echomq.Flow(b"p")),
    ("1001 children", lambda: _flow_of(1001)),
    ("a child named twice", lambda: echomq.Flow(b"p").child("c", b"x", id="JOB_1").child("c", b"y", id="JOB_1")),
    ("a child with a unique key", lambda: echomq.Flow(b"p").child("c", b"x", unique="k", unique_for=5)),
    ("a child in a bad queue", lambda: echomq.Flow(b"p").child("a{b", b"x")),
    ("a child with a bad id", lambda: echomq.Flow(b"p").child("c", b"x", id="ABC")),
    ("a bad on_failure", lambda: echomq.Flow(b"p").child("c", b"x", on_failure="retry")),  # type: ignore[arg-type]
    ("a str payload", lambda: echomq.Flow("p").child("c", b"x")),  # type: ignore[arg-type]
    ("a child's str payload", lambda: echomq.Flow(b"p").child("c", "x")),  # type: ignore[arg-type]
    ("a bad parent id", lambda: echomq.Flow(b"p", id="nope").child("c", b"x")),
    ("a parent's bad priority", lambda: echomq.Flow(b"p", priority=2**31).child("c", b"x")),
    ("a parent's bad headers", lambda: echomq.Flow(b"p", headers={"h": "v" * 9000}).child("c", b"x")),
    ("a child's bad delay", lambda: echomq.Flow(b"p").child("c", b"x", delay=-1)),
    ("a nested flow with no child", lambda: echomq.Flow(b"p").child_flow("c", echomq.Flow(b"q"))),
    ("a nested flow's bad child",
     lambda: echomq.Flow(b"p").child("c", b"x").child_flow("d", echomq.Flow(b"q").child("e", b"x" * 1_048_577))),
    ("a flow nested in itself", _cycle),
]


@pytest.mark.parametrize("what,build", BAD_FLOWS, ids=[w for w, _ in BAD_FLOWS])
async def test_a_bad_flow_is_refused_before_anything_is_sent(queue: echomq.Queue, server: RedisServer, what: str,
                                                             build: Callable[[], echomq.Flow]) -> None:
    client = server.client()

    def written() -> Any:
        keys = [keyspace(client, "emq:{" + name + "}") for name in (queue.name, "c", "d", "e")]
        return transitions_sent(client), keys, client.zrange("emq:queues", 0, -1)

    before = written()
    with pytest.raises(echomq.InvalidInput):
        await queue.add_flow(build())
    assert written() == before
    client.close()


def test_bad_flow_calls_are_refused_before_sending() -> None:
    ks = echomq.Keyspace("q")
    child = echomq.JobRef("c", "JOB_1")
    for bad in (
        lambda: calls.resolve(ks, "JOB_P", 1, child, "lost"),
        lambda: calls.resolve(ks, "JOB_P", -1, child, "done"),
        lambda: calls.resolve(ks, "JOB_P", 10**15, child, "done"),
        lambda: calls.resolve(ks, "JOB_P", 1, child, "done", b"r" * 1_048_577),
        lambda: calls.children(ks, "nope"),
        lambda: calls.enqueue(ks, "JOB_C", b"x", parent=echomq.Link(-1, child)),
        lambda: calls.enqueue(ks, "JOB_C", b"x", unique="k", unique_for=5, parent=echomq.Link(1, child)),
        lambda: echomq.JobRef("c", "nope"),
        lambda: echomq.JobRef.parse("c}JOB_1"),
        lambda: echomq.JobRef.parse("{cJOB_1"),
    ):
        with pytest.raises(echomq.InvalidInput):
            bad()


def test_names_across_queues_read_back() -> None:
    ref = echomq.JobRef("render", "JOB_01")
    assert str(ref) == "{render}JOB_01" and ref.raw() == b"{render}JOB_01"
    assert echomq.JobRef.parse(b"{render}JOB_01") == ref == echomq.JobRef.parse("{render}JOB_01")
    assert echomq.JobRef.parse("{q}JOB}x").id == "JOB}x", "the first } ends the queue"
    assert echomq.Link(17, ref).raw() == b"17 {render}JOB_01"
    assert echomq.model.read_children([]) is None
    assert echomq.model.STATES[-1] == "waiting" and len(echomq.model.STATES) == 7
    read = echomq.model.read_children([b"5", b"1", [b"{a}JOB_1", b"done", b"r"], [b"{b}JOB_2", b"open", None]])
    assert read == echomq.Children(5, 1, [echomq.Child(echomq.JobRef("a", "JOB_1"), "done", b"r"),
                                          echomq.Child(echomq.JobRef("b", "JOB_2"), None, None)])
    assert read.results == {echomq.JobRef("a", "JOB_1"): b"r"}


async def test_stats_answers_seven_sizes(queue: echomq.Queue) -> None:
    children = unique_queue("children")
    await queue.add_flow(echomq.Flow(b"p").child(children, b"c"))
    reply = await queue.executor.run(calls.stats(queue.keyspace))
    assert len(reply) == 7
    assert await queue.stats() == echomq.Stats(0, 0, 0, 0, 0, 0, 1)


def test_the_sync_queue_adds_flows_reads_children_and_cancels(server: RedisServer, kind: str) -> None:
    parents = echomq.SyncQueue.open(server.url, unique_queue("sync-parents"))
    children = echomq.SyncQueue.open(server.url, unique_queue("sync-children"))
    assert parents.executor.kind == kind
    flow = echomq.Flow(b"p").child(children.name, b"a").child(children.name, b"b", on_failure="continue")
    added = parents.add_flow(flow)
    assert added.created and parents.add_flow(flow) == echomq.FlowAdded(added.parent, added.incarnation, False,
                                                                        added.children)
    assert parents.stats().waiting == 1 and children.stats().pending == 2
    heard = parents.children(flow.id)
    assert heard is not None and heard.open == 2 and [c.ref for c in heard.children] == sorted(flow.children)
    assert parents.children(children.enqueue(b"x").id) is None
    registered = [name.decode() for name in parents.redis.zrange(b"emq:queues", 0, -1)]
    assert parents.name in registered and children.name in registered
    assert parents.cancel(flow.id)
    states = [children.inspect(c.id) for c in flow.children]
    assert [info.state if info else None for info in states] == ["cancelled", "cancelled"]
    parents.close()
    children.close()


async def test_one_upkeep_relays_every_notice_in_full_steps(conn: echomq.Connection) -> None:
    """250 children acked at once: one period's upkeep reads 100, 100 and
    50 notices, and the parent is pending."""
    parents, children = await open_queue(conn, "parents"), await open_queue(conn, "children")
    flow = echomq.Flow(b"parent")
    for n in range(250):
        flow.child(children.name, b"%d" % n)
    await parents.add_flow(flow)
    claimed = read_claims(await children.executor.run(calls.claim(children.keyspace, 60_000, 250))).jobs
    assert len(claimed) == 250
    await children.executor.run(calls.ackmany(children.keyspace, [(job.id, job.token, job.payload)
                                                                  for job in claimed]))
    notices = children.keyspace.key("notices")
    assert await children.executor.redis.xlen(notices) == 250
    await echomq.Upkeep(children, 5, 10.0).once()
    assert await children.executor.redis.xlen(notices) == 0
    assert await state(parents, flow.id) == "pending"
    heard = await parents.children(flow.id)
    assert heard is not None and heard.open == 0 and len(heard.results) == 250


async def test_a_parent_named_as_its_own_child_is_refused_and_a_cancel_of_one_ends(queue: echomq.Queue) -> None:
    """A parent named as its own child is refused, by this package before
    anything is sent and by the server (sent by hand here); and flows that
    name each other (a parent the child of its own child) are cancelled
    each job once: the cancel, which follows the open children, ends."""
    parent = echomq.mint()
    me = echomq.JobRef(queue.name, parent)
    with pytest.raises(echomq.InvalidInput, match="its own child"):
        calls.flow(queue.keyspace, parent, b"p", [(me, "fail")])
    by_hand = Call("flow", calls.keys("flow", queue.keyspace, job=parent.encode()),
                   [parent.encode(), b"p", b"1", me.raw(), b"fail"])
    with pytest.raises(echomq.errors.ArgError, match="cannot be its own child"):
        await queue.executor.run(by_hand)
    other = echomq.mint()
    for one, two in [(parent, other), (other, parent)]:
        child = echomq.JobRef(queue.name, two)
        call = Call("flow", calls.keys("flow", queue.keyspace, job=one.encode()),
                    [one.encode(), b"p", b"1", child.raw(), b"fail"])
        assert (await queue.executor.run(call))[0] == 1
    assert await queue.cancel(parent)
    assert await state(queue, parent) == "cancelled"
    assert await state(queue, other) == "cancelled"


async def test_notices_that_stay_hold_up_none_behind_them(conn: echomq.Connection) -> None:
    """A full read of notices that stay (here 100 that do not read as
    notices) does not starve the one behind them: the upkeep reads on after them."""
    parents, children = await open_queue(conn, "parents"), await open_queue(conn, "children")
    notices = children.keyspace.key("notices")
    for n in range(100):
        await children.executor.redis.xadd(notices, {"garbage": str(n)})
    flow = echomq.Flow(b"parent").child(children.name, b"child")
    await parents.add_flow(flow)
    await _ack(children, flow.children[0].id)
    logging.getLogger("echomq.upkeep").disabled = True
    try:
        await echomq.Upkeep(children, 5, 10.0).once()
    finally:
        logging.getLogger("echomq.upkeep").disabled = False
    assert await state(parents, flow.id) == "pending"
    assert await children.executor.redis.xlen(notices) == 100, "the unreadable ones stay, for an operator"


def test_a_child_named_without_an_id_has_the_rust_hosts_derived_id() -> None:
    # The value crates/echomq/src/id.rs's JobId::child test holds too.
    assert echomq.ids.child_id("JOB_01JDQ3H6Z8M4W0T9XK2B7C5N1R", 0, "render", b"page") == \
        "JOB_01JDQ3H6Z80005GDX951CDT8G3"
    parent = echomq.ids.mint()
    siblings = [echomq.ids.child_id(parent, at, "render", b"p") for at in range(300)]
    assert siblings == sorted(siblings) and len(set(siblings)) == 300, "claimed in the order named"
    assert echomq.ids.child_id("JOB-7", 0, "q", b"") == echomq.ids.child_id("JOB-7", 0, "q", b"")


async def test_a_running_job_adds_children_waits_for_them_and_goes_on(conn: echomq.Connection) -> None:
    parents, render = [await open_queue(conn, name) for name in ("parents", "render")]
    enqueued = await parents.enqueue(b"report")
    runs: list[int] = []

    async def handle(job: echomq.Job) -> bytes:
        if job.queue.name == render.name:
            return b"done " + job.payload
        runs.append(job.token)
        await job.wait_for(echomq.ChildJobs().child(render.name, b"r1").child(render.name, b"r2"))
        return b"+".join(sorted((await job.children_results()).values()))

    workers = [echomq.Worker(queue, handle, upkeep=0.05, max_attempts=1) for queue in (parents, render)]
    async with working(workers[0]), working(workers[1]):
        done = await parents.wait(enqueued.id, timeout=60)
    assert (done.state, done.result) == ("done", b"done r1+done r2")
    assert len(runs) == 2, "once to add its children, once to go on"
    info = await parents.inspect(enqueued.id)
    assert info is not None and info.policy is not None and info.policy.attempts == 2, "the attempt given back"
    assert info.error is None, "waiting failed nothing"
    assert ((await render.stats()).pending, (await render.stats()).done) == (0, 2), "each child once"


async def test_a_stale_holder_cannot_adopt_and_bad_children_are_refused(conn: echomq.Connection) -> None:
    parents = await open_queue(conn, "parents")
    enqueued = await parents.enqueue(b"report")
    [claimed] = read_claims(await parents.executor.run(calls.claim(parents.keyspace, 30_000, 1))).jobs
    child = [(echomq.JobRef("render", echomq.ids.mint()), "fail")]
    with pytest.raises(echomq.FenceError):
        await parents.executor.run(calls.adopt(parents.keyspace, enqueued.id, claimed.token + 1, 3, child))
    with pytest.raises(echomq.InvalidInput):
        calls.adopt(parents.keyspace, enqueued.id, claimed.token, 3, [(echomq.JobRef(parents.name, enqueued.id), "fail")])
    with pytest.raises(echomq.InvalidInput):
        calls.adopt(parents.keyspace, enqueued.id, claimed.token, 3, [])
    with pytest.raises(echomq.InvalidInput):
        echomq.ChildJobs().child("render", b"p", unique="k")
    assert await state(parents, enqueued.id) == "active" and await parents.children(enqueued.id) is None


async def test_a_renewal_while_a_parent_enqueues_its_children_cancels_nothing(
        conn: echomq.Connection, monkeypatch: pytest.MonkeyPatch) -> None:
    """ADOPT ends the claim: the lease renewer sends no EXTEND for a job that
    waits, so a renewal due while its children are being enqueued (slowly
    here) neither warns of a lost lease nor cancels the enqueue half-way."""
    parents, left, right = [await open_queue(conn, name) for name in ("parents", "left", "right")]
    enqueued = await parents.enqueue(b"report")
    register = echomq.Queue.register

    async def slow_register(self: echomq.Queue, **options: Any) -> Any:
        await asyncio.sleep(0.6)  # several renewal periods of the 0.3 s lease
        return await register(self, **options)

    monkeypatch.setattr(echomq.Queue, "register", slow_register)

    async def handle(job: echomq.Job) -> bytes:
        if job.queue.name != parents.name:
            return b"kid"
        await job.wait_for(echomq.ChildJobs().child(left.name, b"l").child(right.name, b"r"))
        return b"parent"

    workers = [echomq.Worker(queue, handle, upkeep=0.05, lease=0.3) for queue in (parents, left, right)]
    async with working(workers[0]), working(workers[1]), working(workers[2]):
        done = await parents.wait(enqueued.id, timeout=60)
    assert (done.state, done.result) == ("done", b"parent")
    heard = await parents.children(enqueued.id)
    assert heard is not None and (heard.open, len(heard.children)) == (0, 2), "both children enqueued and done"


async def test_a_parent_retried_before_its_retried_child_ends_is_refused(conn: echomq.Connection) -> None:
    """RETRY counts a child recorded dead as ended: a parent retried while
    that child, retried, has not told it its end would run first. retry
    refuses it, naming the child; force sends it all the same."""
    parents, children = await open_queue(conn, "parents"), await open_queue(conn, "children")
    flow = echomq.Flow(b"parent").child(children.name, b"a").child(children.name, b"b")
    added = await parents.add_flow(flow)
    a, b = added.children
    await _fail(children, a.id)
    await _ack(children, b.id)
    assert await echomq.Upkeep(children, 5, 0.25).relay() == 2
    await children.retry(a.id)
    with pytest.raises(echomq.StateError, match=re.escape(f"({{{children.name}}}{a.id} pending)")):
        await parents.retry(flow.id)
    assert await state(parents, flow.id) == "dead", "nothing changed"
    await parents.retry(flow.id, force=True)
    assert await state(parents, flow.id) == "pending", "RETRY alone reads a dead"


async def test_a_retried_parent_waits_and_a_cancel_takes_a_retried_child(conn: echomq.Connection) -> None:
    """Protocol 1.11: a parent that died hears its other children's ends;
    retried while one is open it waits; a child retried after it died is
    cancelled with its parent, one still dead is left dead."""
    parents, children = await open_queue(conn, "parents"), await open_queue(conn, "children")
    flow = (echomq.Flow(b"parent").child(children.name, b"a").child(children.name, b"b", on_failure="ignore")
            .child(children.name, b"c", on_failure="ignore"))
    added = await parents.add_flow(flow)
    a, b, c = added.children
    await _fail(children, a.id)  # it fails its parent
    await _fail(children, b.id)  # ignored, and stays dead
    upkeep = echomq.Upkeep(children, 5, 0.25)
    assert await upkeep.relay() == 2
    assert await state(parents, flow.id) == "dead"
    await parents.retry(flow.id)
    assert await state(parents, flow.id) == "waiting", "c is open"
    await children.retry(a.id)
    assert await parents.cancel(flow.id)
    assert await state(children, a.id) == "cancelled", "it ran again"
    assert await state(children, c.id) == "cancelled", "open"
    assert await state(children, b.id) == "dead", "left as it ended"
