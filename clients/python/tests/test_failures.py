"""Failures a Python team can see (issue 51), on Lua and on Native: a failing
handler is logged with its traceback and its job keeps the exception's type,
message and traceback, bounded, as ``emq inspect`` shows them."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

import pytest

import echomq
from echomq import failure

from conftest import RedisServer, emq_path, eventually, redis_server_path, unique_queue, working


def _emq_inspect(server: RedisServer, kind: str, queue: echomq.Queue, job_id: str) -> str:
    environment = {**os.environ, "ECHOMQ_URL": server.url, "ECHOMQ_VIA": kind}
    done = subprocess.run([str(emq_path()), "inspect", job_id, "--queue", queue.name], capture_output=True,
                          env=environment, timeout=120, check=True)
    return done.stdout.decode()


async def test_a_failing_handler_is_logged_and_its_job_keeps_type_message_and_traceback(
        queue: echomq.Queue, server: RedisServer, kind: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="echomq.worker")

    async def handle(job: echomq.Job) -> Any:
        stock = {"pen": 3}
        return stock[job.json()["sku"]]

    job = await queue.enqueue_json({"item": "pen"}, attempts=1)
    async with working(echomq.Worker(queue, handle)):
        dead = await queue.wait(job.id, timeout=60)
    assert dead.state == "dead" and dead.error is not None
    # The type and message first, as Python's last line says them: not `'sku'`.
    assert dead.error.startswith("KeyError: 'sku'\n\nTraceback (most recent call last):\n"), dead.error
    assert ', in handle\n    return stock[job.json()["sku"]]' in dead.error
    assert not dead.error.endswith("KeyError: 'sku'"), "the type and message are not said twice"

    [logged] = [r for r in caplog.records if r.name == "echomq.worker" and job.id in r.getMessage()]
    assert logged.levelno == logging.ERROR
    assert queue.name in logged.getMessage() and "attempt 1" in logged.getMessage()
    assert "KeyError: 'sku'" in logged.getMessage()
    assert logged.exc_info is not None and isinstance(logged.exc_info[1], KeyError)
    assert (logged.job_id, logged.queue, logged.attempt) == (job.id, queue.name, 1)  # type: ignore[attr-defined]
    assert 'return stock[job.json()["sku"]]' in caplog.text  # the traceback, logged

    shown = _emq_inspect(server, kind, queue, job.id)
    assert "error     KeyError: 'sku'\n" in shown and "Traceback (most recent call last):" in shown


def _ping(depth: int, message: str) -> None:
    if depth == 0:
        raise ValueError(message)
    _pong(depth - 1, message)


def _pong(depth: int, message: str) -> None:
    _ping(depth, message)


def _raised(depth: int, message: str) -> ValueError:
    try:
        _ping(depth, message)
    except ValueError as err:
        return err
    raise AssertionError("no exception")


def test_a_long_traceback_is_cut_and_the_type_and_message_kept() -> None:
    most = failure.MAX_ERROR_TEXT
    assert most == 65536
    short = failure.error_text(_raised(3, "short"))
    assert short.startswith("ValueError: short\n\nTraceback (most recent call last):\n")
    assert short.endswith("raise ValueError(message)")
    # A message of 50 000 bytes and a traceback of ~400 frames (alternating,
    # so Python does not fold them): the traceback's start is cut.
    message = "m" * 50_000
    text = failure.error_text(_raised(200, message))
    raw = text.encode()
    assert len(raw) <= most and len(raw) > most - 200
    assert text.startswith(f"ValueError: {message}\n\n[the traceback's first ")
    assert text.endswith("raise ValueError(message)")
    cut = int(text.split("[the traceback's first ", 1)[1].split(" ", 1)[0])
    whole = failure.error_text(_raised(200, message), most=10**9)
    assert len(whole.encode()) - cut == len(raw) - len(f"[the traceback's first {cut} bytes cut]\n")
    # A message over the limit alone: cut at a character's start, no traceback.
    long = failure.error_text(_raised(1, "é" * 40_000))
    assert long.startswith("ValueError: éé") and set(long[len("ValueError: "):]) == {"é"}
    assert most - 2 < len(long.encode()) <= most


async def test_a_failure_over_the_error_limit_is_kept_bounded(queue: echomq.Queue) -> None:
    async def handle(job: echomq.Job) -> None:
        _ping(200, "m" * 50_000)

    job = await queue.enqueue(b"x", attempts=1)
    async with working(echomq.Worker(queue, handle)):
        dead = await queue.wait(job.id, timeout=60)
    assert dead.state == "dead" and dead.error is not None
    assert len(dead.error.encode()) <= 65536
    assert dead.error.startswith("ValueError: " + "m" * 50_000 + "\n\n[the traceback's first ")
    assert dead.error.endswith("raise ValueError(message)")


@pytest.mark.parametrize("value,named", [({"at": datetime(2026, 1, 2, tzinfo=timezone.utc)}, "datetime"),
                                         ([Decimal("1.50")], "Decimal")])
async def test_a_result_json_cannot_encode_fails_the_job_at_once(queue: echomq.Queue, value: Any,
                                                                  named: str) -> None:
    async def handle(job: echomq.Job) -> Any:
        return value

    job = await queue.enqueue(b"x", attempts=1)
    # A 60 s lease: the job must not wait for it to run out (it used to, then died "lease expired").
    async with working(echomq.Worker(queue, handle, lease=60)):
        dead = await queue.wait(job.id, timeout=10)
    assert (dead.state, dead.token, dead.result) == ("dead", 1, None)
    assert dead.error is not None
    first, _, rest = dead.error.partition("\n\n")
    assert first == f"TypeError: Object of type {named} is not JSON serializable"
    assert "cannot be encoded as JSON" in rest


async def test_an_outage_is_said_once_and_its_end_once(caplog: pytest.LogCaptureFixture) -> None:
    """A worker whose server goes away says so once for its claims and once
    for its upkeep (it said so at every retry, about four times a second),
    and once each when they work again."""
    caplog.set_level(logging.DEBUG, logger="echomq.worker")
    server = RedisServer(None)
    port = server.port
    queue = await (await echomq.connect(server.url)).queue(unique_queue("outage"))
    worker = echomq.Worker(queue, lambda job: None, idle_wait=0.05, upkeep=0.05)
    task = asyncio.create_task(worker.run(handle_signals=False))
    await asyncio.sleep(0.2)
    server.process.kill()
    server.process.wait()

    def said(text: str) -> int:
        return sum(text in record.getMessage() for record in caplog.records if record.levelno >= logging.INFO)

    async def seen_failing() -> bool:
        return said("failed") >= 2
    await eventually(seen_failing, what="the claims' and the upkeep's outage said")
    # Retries go on (said at debug only): none is said again.
    async def retried() -> bool:
        return sum("still fails" in record.getMessage() for record in caplog.records) >= 6
    await eventually(retried, what="retries at debug")
    assert said(f"claim on {queue.keyspace.name} failed") == 1, caplog.text
    assert said(f"upkeep of {queue.keyspace.name} failed") == 1, caplog.text
    back = subprocess.Popen([redis_server_path(), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(server.dir)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        async def back_again() -> bool:
            return said("works again") >= 2
        await eventually(back_again, what="both said to work again")
        worker.stop()
        await asyncio.wait_for(task, 60)
    finally:
        back.kill()
        back.wait()
        server.stop()
