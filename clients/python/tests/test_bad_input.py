"""Bad input is refused before anything is sent (DESIGN rule 6): the host's
own :class:`InvalidInput`, no server call, no key written."""

from __future__ import annotations

from typing import Any, Callable

import pytest
import redis

import echomq
from echomq import calls

from conftest import RedisServer, keyspace, transitions_sent, unique_queue


BAD_ENQUEUES: list[tuple[str, Callable[[echomq.SyncQueue], Any]]] = [
    ("a str payload", lambda q: q.enqueue("text")),  # type: ignore[arg-type]
    ("an oversized payload", lambda q: q.enqueue(b"x" * (1_048_576 + 1))),
    ("a bad id", lambda q: q.enqueue(b"x", id="ABC")),
    ("a priority too high", lambda q: q.enqueue(b"x", priority=2**31)),
    ("a priority not an int", lambda q: q.enqueue(b"x", priority=1.5)),  # type: ignore[arg-type]
    ("a negative delay", lambda q: q.enqueue(b"x", delay=-1)),
    ("delay and at", lambda q: q.enqueue(b"x", delay=1, at=2.0)),
    ("negative attempts", lambda q: q.enqueue(b"x", attempts=-1)),
    ("backoff and backoff_exp", lambda q: q.enqueue(b"x", backoff=1, backoff_exp=1)),
    ("a zero timeout", lambda q: q.enqueue(b"x", timeout=0)),
    ("unique without unique_for", lambda q: q.enqueue(b"x", unique="k")),
    ("unique_for without unique", lambda q: q.enqueue(b"x", unique_for=5)),
    ("a unique key too long", lambda q: q.enqueue(b"x", unique="k" * 513, unique_for=5)),
    ("a header not a str", lambda q: q.enqueue(b"x", headers={"n": 1})),  # type: ignore[dict-item]
    ("a bad traceparent", lambda q: q.enqueue(b"x", traceparent="00-zz")),
    ("headers too large", lambda q: q.enqueue(b"x", headers={"h": "v" * 9000})),
    ("a bad id among many", lambda q: q.enqueue_many([b"ok", ("NOPE", b"x")])),
    ("an oversized payload among many", lambda q: q.enqueue_many([b"ok", b"x" * 1_048_577])),
    ("an unknown setting", lambda q: q.configure(speed=3)),
    ("a rate without per", lambda q: q.configure(rate=10)),
    ("a concurrency below 0", lambda q: q.configure(concurrency=-1)),
    ("cancel of a bad id", lambda q: q.cancel("job-lowercase")),
    ("retry of a bad id", lambda q: q.retry("")),
    ("inspect of a bad id", lambda q: q.inspect("XJOB")),
]


@pytest.mark.parametrize("what,call", BAD_ENQUEUES, ids=[w for w, _ in BAD_ENQUEUES])
def test_bad_input_is_refused_before_sending(server: RedisServer, what: str,
                                             call: Callable[[echomq.SyncQueue], Any]) -> None:
    queue = echomq.SyncQueue.open(server.url, unique_queue("bad"))
    client = server.client()
    before = (transitions_sent(client), keyspace(client, "emq:{" + queue.name + "}"))
    with pytest.raises(echomq.InvalidInput):
        call(queue)
    assert (transitions_sent(client), keyspace(client, "emq:{" + queue.name + "}")) == before
    client.close()
    queue.close()


@pytest.mark.parametrize("name", ["", "a{b", "b}", "nul\x00", "x" * 256])
def test_a_bad_queue_name_is_refused(server: RedisServer, name: str) -> None:
    with pytest.raises(echomq.InvalidInput):
        echomq.SyncQueue.open(server.url, name)
    with pytest.raises(echomq.InvalidInput):
        echomq.Keyspace(name)


async def test_bad_worker_calls_are_refused_before_sending(queue: echomq.Queue, server: RedisServer) -> None:
    client = server.client()
    before = transitions_sent(client)
    for bad in (
        lambda: calls.progress(queue.keyspace, "JOB_A", 1, b"x" * 4097),
        lambda: calls.ack(queue.keyspace, "JOB_A", 0),
        lambda: calls.ack(queue.keyspace, "JOB_A", 1, b"r" * (1_048_576 + 1)),
        lambda: calls.claim(queue.keyspace, 0),
        lambda: calls.claim(queue.keyspace, 1000, count=1001),
        lambda: calls.extend(queue.keyspace, "JOB_A", 1, 2**31),
        lambda: calls.release(queue.keyspace, "nope", 1, 5),
    ):
        with pytest.raises(echomq.InvalidInput):
            bad()
    with pytest.raises(echomq.InvalidInput):
        echomq.Worker(queue, lambda job: None, lease=0)  # type: ignore[arg-type, return-value]
    assert transitions_sent(client) == before
    client.close()


def test_a_worker_refuses_a_sync_queue(server: RedisServer) -> None:
    """A Worker works an asyncio Queue: given a SyncQueue it used to claim a
    job with it and strand it (issue 51); now it is refused at once."""
    queue = echomq.SyncQueue.open(server.url, unique_queue("sync-worker"))
    job = queue.enqueue(b"x")
    client = server.client()
    before = (transitions_sent(client), keyspace(client, "emq:{" + queue.name + "}"))
    with pytest.raises(TypeError, match=r"an asyncio echomq\.Queue, not a SyncQueue.*echomq\.connect"):
        echomq.Worker(queue, lambda job: None)  # type: ignore[arg-type]
    assert (transitions_sent(client), keyspace(client, "emq:{" + queue.name + "}")) == before
    assert queue.inspect(job.id).state == "pending"  # type: ignore[union-attr]
    client.close()
    queue.close()
