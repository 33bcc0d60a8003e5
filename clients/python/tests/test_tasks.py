"""Tasks (issue 51): functions registered with ``@app.task``, their JSON
payload checked at enqueue, run by a Worker over ``App.handler``, on Lua
and on Native."""

from __future__ import annotations

import asyncio
import json
import threading
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
import redis

import echomq

from conftest import RedisServer, eventually, keyspace, unique_queue, working


def _app(server: RedisServer) -> tuple[echomq.App, str]:
    name = unique_queue("tasks")
    return echomq.App(server.url, queue=name), name


async def test_a_sync_and_an_async_task_run_by_name_with_json_arguments_and_result(server: RedisServer) -> None:
    app, name = _app(server)
    loop_thread = threading.get_ident()
    seen: dict[str, Any] = {}

    @app.task
    def add(a: int, b: int, *, scale: float = 1.0) -> dict[str, Any]:
        seen["sync"] = threading.get_ident()
        job = echomq.current_job()
        seen["job"] = None if job is None else (job.id, job.attempts_spent)
        return {"sum": (a + b) * scale}

    @app.task(name="emails.greet", attempts=2)
    async def greet(who: str) -> str:
        seen["async"] = threading.get_ident()
        return f"hello {who}"

    queue = await app.queue_async(name)
    first = add.enqueue(1, 2, scale=0.5)                       # from sync code
    second = await greet.enqueue_async("ada")
    raw = await queue.inspect(first.id)
    assert raw is not None and json.loads(raw.payload) == {"task": "add", "args": [1, 2], "kwargs": {"scale": 0.5}}
    greeted = await queue.inspect(second.id)
    assert greeted is not None and greeted.policy is not None and greeted.policy.attempts == 2
    async with working(echomq.Worker(queue, app.handler, concurrency=4)):
        done = await queue.wait(first.id, timeout=60)
        hello = await queue.wait(second.id, timeout=60)
    assert done.result_json() == {"sum": 1.5} and hello.result_json() == "hello ada"
    # A task's result by what its enqueue answered, from sync and async code.
    assert await asyncio.to_thread(add.result, first, 5) == {"sum": 1.5}
    assert await greet.result_async(second.id, timeout=timedelta(seconds=5)) == "hello ada"
    assert seen["sync"] != loop_thread and seen["async"] == loop_thread
    assert seen["job"] == (first.id, 1)
    assert add(2, 3) == {"sum": 5.0}, "a task called is the function called"
    assert seen["job"] is None, "outside a worker, no current job"
    app.close()


@pytest.mark.parametrize("args, kwargs, where", [
    ((datetime(2026, 1, 1, tzinfo=timezone.utc),), {}, "args[0]: a datetime.datetime"),
    ((1,), {"b": {"price": Decimal("1.5")}}, "kwargs['b']['price']: a decimal.Decimal"),
    (([1, {2: "x"}],), {}, "args[0][1]: the key 2 is a int"),
    ((float("nan"),), {}, "args[0]: nan is no JSON number"),
])
async def test_what_json_cannot_carry_is_refused_at_enqueue_naming_where_and_nothing_is_written(
        server: RedisServer, args: tuple[Any, ...], kwargs: dict[str, Any], where: str) -> None:
    app, name = _app(server)

    @app.task
    def store(a: Any, b: Any = None) -> None:
        pass

    with pytest.raises(echomq.InvalidInput, match=r"^" + __import__("re").escape(where)):
        store.enqueue(*args, **kwargs)
    with pytest.raises(echomq.InvalidInput, match="missing a required argument: 'a'"):
        await store.enqueue_async()
    with pytest.raises(echomq.InvalidInput, match="unexpected keyword argument 'c'"):
        store.enqueue(1, c=2)
    assert keyspace(server.client(), f"emq:{{{name}}}") == {}


def test_bad_task_options_are_refused_at_registration() -> None:
    app = echomq.App("redis://127.0.0.1:1/0")
    with pytest.raises(echomq.InvalidInput, match="attempts must be in"):
        app.task(attempts=-1)
    with pytest.raises(echomq.InvalidInput, match="queue name"):
        app.task(queue="a{b}")
    with pytest.raises(echomq.InvalidInput, match="backoff and backoff_exp exclude each other"):
        app.task(backoff=1, backoff_exp=1)

    @app.task
    def once() -> None:
        pass

    with pytest.raises(echomq.InvalidInput, match="a task named 'once' is registered already"):
        app.task(name="once")(lambda: None)
    with pytest.raises(echomq.InvalidInput, match="priority must be in"):
        once.using(priority=10**20)


async def test_a_unique_task_answers_the_holder_of_the_same_arguments(server: RedisServer) -> None:
    app, name = _app(server)

    @app.task(unique_for=60)
    def report(day: str) -> None:
        pass

    first = await report.enqueue_async("2026-12-06")
    again = report.enqueue("2026-12-06")
    other = report.enqueue("2026-12-07")
    assert not first.duplicate and again.duplicate and again.id == first.id == again.held_by
    assert not other.duplicate and other.id != first.id
    app.close()


async def test_a_burst_of_first_async_enqueues_opens_one_connection(
        server: RedisServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fifty enqueues at once, the app's first on this loop: one connection
    opened (each call opened one of its own before, never closed), which
    aclose closes."""
    name = unique_queue("burst")
    app = echomq.App(f"{server.url}?client_name={name}", queue=name)

    @app.task()
    def welcome(user: int) -> None:
        pass

    opened: list[str] = []
    connect = echomq.queue.connect

    async def counted(url: str) -> echomq.Connection:
        opened.append(url)
        return await connect(url)

    monkeypatch.setattr(echomq.queue, "connect", counted)
    admin = redis.Redis.from_url(server.url)
    sent = await asyncio.gather(*(welcome.enqueue_async(n) for n in range(50)))
    assert len({job.id for job in sent}) == 50
    assert len(opened) == 1, f"{len(opened)} connections opened"
    # The app's own connections, by the name its URL gives them (the
    # server is shared with other tests).
    ours = [c for c in admin.client_list() if c.get("name") == name]
    assert ours, "the app's connections carry its name"
    await app.aclose()

    async def closed() -> bool:
        return not [c for c in admin.client_list() if c.get("name") == name]

    await eventually(closed, what=f"the loop's {len(ours)} connections closed")
    assert not (await welcome.enqueue_async(50)).duplicate, "a new one opened after aclose"
    await app.aclose()
    admin.close()


def test_each_asyncio_run_that_enqueues_leaves_no_loop_behind(server: RedisServer) -> None:
    """An app's connection per event loop is dropped once its loop closed
    (its entry held the loop: every asyncio.run() kept one)."""
    app, name = _app(server)

    @app.task()
    def ping(n: int) -> None:
        pass

    for n in range(3):
        asyncio.run(ping.enqueue_async(n))
    assert len(app._connections) == 1, "the last loop's, dropped at the next use"


async def test_a_unique_task_s_key_is_its_arguments_however_they_are_passed(server: RedisServer) -> None:
    app, name = _app(server)

    @app.task(unique_for=60)
    def charge(customer: str, cents: int, currency: str = "eur", **meta: Any) -> None:
        pass

    first = charge.enqueue(customer="c", cents=5)
    same = [charge.enqueue(cents=5, customer="c"), charge.enqueue("c", 5), await charge.enqueue_async("c", 5, "eur"),
            charge.enqueue("c", cents=5, currency="eur")]
    assert [(s.duplicate, s.id) for s in same] == [(True, first.id)] * 4
    tagged = charge.enqueue("c", 5, a=1, b=2)
    assert not tagged.duplicate and charge.enqueue("c", 5, b=2, a=1).id == tagged.id
    other = [charge.enqueue("c", 6), charge.enqueue("c", 5, "usd"), charge.enqueue(customer="d", cents=5)]
    assert not any(o.duplicate for o in other) and len({first.id, tagged.id, *(o.id for o in other)}) == 5
    app.close()


async def test_a_payload_that_is_no_task_fails_its_job_saying_why(server: RedisServer) -> None:
    app, name = _app(server)

    @app.task
    def known() -> None:
        pass

    queue = await app.queue_async(name)
    jobs = [await queue.enqueue(body, attempts=1) for body in
            (b'{"task": "unknown"}', b"not json", b'{"task": "known", "args": [1]}',
             b'{"task": "known", "extra": 1}')]
    async with working(echomq.Worker(queue, app.handler)):
        errors = [(await queue.wait(job.id, timeout=60)).error or "" for job in jobs]
    assert errors[0].startswith("echomq.tasks.TaskFailed: no task 'unknown' in this app (it has known)")
    assert errors[1].startswith("echomq.tasks.TaskFailed: the payload is not JSON")
    assert errors[2].startswith("echomq.tasks.TaskFailed: task 'known': too many positional arguments")
    assert errors[3].startswith("echomq.tasks.TaskFailed: the payload has members a task's has not: extra")


async def test_a_result_json_cannot_encode_fails_the_attempt_and_is_retried(server: RedisServer) -> None:
    app, name = _app(server)
    runs: list[int] = []

    @app.task(attempts=3, backoff=0.01)
    async def when() -> Any:
        runs.append(1)
        return {"at": datetime(2026, 1, 1)}

    queue = await app.queue_async(name)
    job = await when.enqueue_async()
    async with working(echomq.Worker(queue, app.handler, lease=60)):
        dead = await queue.wait(job.id, timeout=30)
    # A failure like any other: retried by the job's policy, each run its side effects again.
    assert len(runs) == 3 and dead.state == "dead" and dead.token == 3
    assert "task 'when' returned what JSON cannot encode: the result['at']: a datetime.datetime" in (dead.error or "")


async def test_using_changes_the_options_of_its_enqueues_only(server: RedisServer) -> None:
    app, name = _app(server)

    @app.task(priority=5)
    def job() -> None:
        pass

    later = await job.using(delay=3600, queue=name + "-other").enqueue_async()
    now = await job.enqueue_async()
    other = await app.queue_async(name + "-other")
    assert (await other.stats()).delayed == 1
    found = await (await app.queue_async(name)).inspect(now.id)
    assert found is not None and found.state == "pending"
    assert (await other.inspect(later.id)) is not None
    app.close()


async def test_a_task_s_result_raises_for_a_dead_or_cancelled_job(server: RedisServer) -> None:
    app, name = _app(server)

    @app.task(attempts=1)
    def broken(n: int) -> int:
        raise ValueError(f"no {n}")

    dies = await broken.enqueue_async(7)
    cancelled = await broken.using(delay=3600).enqueue_async(8)
    queue = await app.queue_async(name)
    assert await queue.cancel(cancelled.id)
    async with working(echomq.Worker(queue, app.handler)):
        with pytest.raises(echomq.JobDied, match=f"job {dies.id} died: ValueError: no 7") as died:
            await broken.result_async(dies, timeout=60)
    assert died.value.error is not None and "Traceback" in died.value.error
    with pytest.raises(echomq.JobCancelled):
        await broken.result_async(cancelled, timeout=60)
    with pytest.raises(TimeoutError):
        await broken.result_async((await broken.enqueue_async(9)).id, timeout=0.2)
    app.close()


def test_test_mode_runs_tasks_without_redis() -> None:
    # Nothing listens on port 1: any use of Redis would fail.
    app = echomq.App("redis://127.0.0.1:1/0", queue="q")
    calls: list[Any] = []

    @app.task
    def welcome(to: str, *, name: str) -> str:
        calls.append((to, name))
        follow_up.enqueue(to)
        return "sent"

    @app.task(queue="later")
    async def follow_up(to: str) -> None:
        calls.append(("follow", to))

    @app.task
    def broken(items: list[int]) -> int:
        return items[5]

    with app.testing() as mode:
        sent = welcome.enqueue("a@example.com", name="Ada")
        [job] = mode.jobs_of(welcome)
        assert (job.queue, job.args, job.kwargs, job.state) == ("q", ["a@example.com"], {"name": "Ada"}, "pending")
        assert calls == []
        with pytest.raises(RuntimeError, match="has not run"):
            welcome.result(sent)
        ran = mode.run()
        assert [j.task for j in ran] == ["welcome", "follow_up"]
        assert job.state == "done" and job.result == "sent" and welcome.result(sent) == "sent"
        assert calls == [("a@example.com", "Ada"), ("follow", "a@example.com")]
        # The checks of a real enqueue hold here too.
        with pytest.raises(echomq.InvalidInput, match="a datetime.datetime"):
            welcome.enqueue(datetime.now(), name="x")  # type: ignore[arg-type]
        broken.enqueue([1, 2])
        with pytest.raises(IndexError):
            mode.run()
        [failed] = mode.jobs_of("broken")
        assert failed.state == "failed" and isinstance(failed.error, IndexError)
    assert app.test_mode is None


async def test_test_mode_eager_runs_at_enqueue_from_async_code() -> None:
    app = echomq.App("redis://127.0.0.1:1/0")

    @app.task
    async def double(n: int) -> int:
        await asyncio.sleep(0)
        return n * 2

    with app.testing(eager=True) as mode:
        await double.enqueue_async(21)
        assert [j.result for j in mode.jobs] == [42]
    with app.testing() as mode:
        double.enqueue(1)
        ran = await mode.run_async()
        assert ran[0].result == 2
