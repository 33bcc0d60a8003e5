"""Tasks: plain functions run as jobs, as Python job queues do it (RQ,
Celery, Dramatiq).

    app = echomq.App("redis://127.0.0.1:6379/0")

    @app.task(queue="emails", attempts=3, backoff_exp=2, timeout=30)
    def send_welcome(to: str, *, name: str) -> str:
        ...                                   # blocking I/O: runs in a thread
        return "sent"

    send_welcome.enqueue("a@example.com", name="Ada")             # from sync code
    await send_welcome.enqueue_async("a@example.com", name="Ada") # from async code

and ``echomq worker app:app -q emails`` runs them (:mod:`echomq.cli`).

**The payload** is one JSON object (UTF-8), so that any speaker can call a
Python task (``emq enqueue emails --payload '{"task": "send_welcome",
"args": ["a@example.com"], "kwargs": {"name": "Ada"}}'``):

- ``task``: the task's name (a string, required);
- ``args``: its positional arguments (an array; absent is ``[]``);
- ``kwargs``: its keyword arguments (an object; absent is ``{}``).

Any other member is refused. Arguments are JSON values: None, bool, int,
float (finite), str, lists (a tuple is sent as one) and objects with str
keys; anything else is refused at enqueue with :class:`InvalidInput`
naming where it is (``args[1]['when']: a datetime``), before anything is
sent, as are arguments the function's signature does not take. **The
result** is the function's return value as JSON (None: no result); one
JSON cannot encode fails the attempt at once, with the encoding error;
the job is retried by its policy like any failure.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import hashlib
import inspect
import json
import math
import os
import threading
import weakref
from dataclasses import dataclass, replace
from datetime import datetime
from typing import (TYPE_CHECKING, Any, Awaitable, Callable, Coroutine, Generic, Mapping, ParamSpec, Protocol,
                    TypeVar, cast, overload)

from . import calls
from .errors import InvalidInput, JobCancelled, JobDied
from .ids import mint
from .keyspace import Keyspace, check_queue
from .model import Enqueued, JobInfo

if TYPE_CHECKING:
    from .queue import Connection, Queue, SyncQueue
    from .testing import TestMode
    from .job import Job

P = ParamSpec("P")
R = TypeVar("R")

DEFAULT_URL = "redis://127.0.0.1:6379/0"
"""Where an :class:`App` connects when given no URL and ``ECHOMQ_URL`` is unset (``emq``'s default too)."""

PAYLOAD_MEMBERS = ("task", "args", "kwargs")

_current: contextvars.ContextVar[Job | None] = contextvars.ContextVar("echomq_current_job", default=None)


def current_job() -> Job | None:
    """The job whose task runs now (in its thread too), or None outside a
    worker's task: its id, token, attempts spent, :meth:`~echomq.Job.progress`."""
    return _current.get()


class TaskFailed(Exception):
    """A job a worker could not run as a task: its payload is not a task's
    (:data:`PAYLOAD_MEMBERS`), or it names a task the app does not know, or
    arguments the function does not take. The job fails with this error."""


@dataclass(frozen=True)
class TaskOptions:
    """What a task's jobs are enqueued with (each ``None``: the worker's or
    the queue's default). Durations in seconds or a ``timedelta``."""

    queue: str = "default"
    """The queue its jobs go to."""
    priority: int = 0
    """Lower runs first (§7: pending's score)."""
    attempts: int | None = None
    """Attempts before a job is dead (its own ATTEMPTS, §7.2)."""
    backoff: calls.Duration | None = None
    """A fixed back-off between attempts."""
    backoff_exp: calls.Duration | None = None
    """An exponential back-off's first step (doubling each attempt)."""
    timeout: calls.Duration | None = None
    """How long one run may take before it fails."""
    unique_for: calls.Duration | None = None
    """A job with the same task and arguments as one enqueued in the last
    ``unique_for`` seconds is a duplicate: the enqueue answers the first
    one's id (``Enqueued.held_by``). The key is the task's name and a
    SHA-256 of its arguments in one canonical form, however they were
    passed (:meth:`Task.unique_key`)."""
    unique_until_done: bool = False
    """With ``unique_for``: the key is freed early when the job is done."""
    delay: calls.Duration | None = None
    """Run no sooner than this long after the enqueue."""
    at: datetime | float | None = None
    """Run no sooner than this time (a datetime or a Unix time in seconds)."""
    headers: Mapping[str, str] | None = None
    """The job's headers (§7.6), a str → str mapping."""
    group: str | None = None
    """The job's group (1.7, §7.9: a tenant, a customer, a key): claims take
    turns among the groups with work. Per tenant, name it per call:
    ``send.using(group=tenant).enqueue(...)``."""

    def check(self) -> None:
        """Every option in its limits, as ENQUEUE would check it: :class:`InvalidInput` otherwise."""
        check_queue(self.queue)
        unique = "task:check" if self.unique_for is not None else None
        calls.enqueue(_CHECK_KEYSPACE, mint(), b"{}", **self._enqueue_options(unique))

    def _enqueue_options(self, unique: str | None) -> dict[str, Any]:
        """ENQUEUE's options, ``unique`` the job's key when it has one (``unique_for``)."""
        return {"priority": self.priority, "delay": self.delay, "at": self.at, "attempts": self.attempts,
                "backoff": self.backoff, "backoff_exp": self.backoff_exp, "timeout": self.timeout,
                "unique": unique, "unique_for": self.unique_for,
                "unique_until_done": self.unique_until_done, "headers": self.headers, "group": self.group}


def _json_value(value: Any, where: str) -> Any:
    """``value`` as JSON carries it, or :class:`InvalidInput` naming ``where`` it is not."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(f"{where}: {value!r} is no JSON number")
        return value
    if isinstance(value, (list, tuple)):
        return [_json_value(item, f"{where}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidInput(f"{where}: the key {key!r} is a {type(key).__name__}; JSON keys are str")
            out[key] = _json_value(item, f"{where}[{key!r}]")
        return out
    raise InvalidInput(f"{where}: a {type(value).__module__}.{type(value).__qualname__}, which JSON cannot carry: "
                       "pass it as str, int, float, bool, None, a list or a dict with str keys "
                       "(a datetime as isoformat(), a Decimal as str)")


def _type_name(value: Any) -> str:
    """What stands for a default JSON cannot carry in a unique key: the same in every process."""
    return f"<{type(value).__module__}.{type(value).__qualname__}>"


def task_payload(name: str, args: tuple[Any, ...] | list[Any], kwargs: Mapping[str, Any]) -> bytes:
    """A task's payload, the documented JSON object, its arguments checked."""
    body: dict[str, Any] = {"task": name}
    if args:
        body["args"] = _json_value(list(args), "args")
    if kwargs:
        body["kwargs"] = _json_value(dict(kwargs), "kwargs")
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def read_payload(payload: bytes) -> tuple[str, list[Any], dict[str, Any]]:
    """A job's payload as a task's name, args and kwargs: :class:`TaskFailed` when it is not one."""
    try:
        body = json.loads(payload)
    except (ValueError, UnicodeDecodeError) as err:
        raise TaskFailed(f"the payload is not JSON ({err}): a task's payload is "
                         '{"task": <name>, "args": [...], "kwargs": {...}}') from None
    if not isinstance(body, dict) or not isinstance(body.get("task"), str):
        raise TaskFailed('the payload is no task\'s: it is {"task": <name>, "args": [...], "kwargs": {...}}')
    unknown = sorted(set(body) - set(PAYLOAD_MEMBERS))
    if unknown:
        raise TaskFailed(f"the payload has members a task's has not: {', '.join(unknown)}")
    args, kwargs = body.get("args", []), body.get("kwargs", {})
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        raise TaskFailed("a task's args is a JSON array and its kwargs an object")
    return body["task"], args, kwargs


class Task(Generic[P, R]):
    """A function registered as a task: call it to run it here, enqueue it
    to have a worker run it. Made by :meth:`App.task`."""

    def __init__(self, app: App, function: Callable[P, R] | Callable[P, Awaitable[R]], name: str,
                 options: TaskOptions) -> None:
        self.app = app
        self.function = function
        self.name = name
        self.options = options
        self.is_async = inspect.iscoroutinefunction(function)
        self._signature = inspect.signature(function)
        functools.update_wrapper(self, function)

    def __repr__(self) -> str:
        return f"<echomq task {self.name!r} on queue {self.options.queue!r}>"

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> Any:
        """Run the function here, now, as a plain call."""
        return self.function(*args, **kwargs)

    def using(self, *, queue: str | None = None, priority: int | None = None, delay: calls.Duration | None = None,
              at: datetime | float | None = None, attempts: int | None = None,
              backoff: calls.Duration | None = None, backoff_exp: calls.Duration | None = None,
              timeout: calls.Duration | None = None, unique_for: calls.Duration | None = None,
              unique_until_done: bool | None = None, headers: Mapping[str, str] | None = None,
              group: str | None = None) -> Task[P, R]:
        """The same task with some options changed for the enqueues made
        through it (``send.using(delay=60).enqueue(...)``, or a tenant's
        ``send.using(group="tenant-7").enqueue(...)``); checked now."""
        given: dict[str, Any] = {
            "queue": queue, "priority": priority, "delay": delay, "at": at, "attempts": attempts,
            "backoff": backoff, "backoff_exp": backoff_exp, "timeout": timeout, "unique_for": unique_for,
            "unique_until_done": unique_until_done, "headers": headers, "group": group}
        options = replace(self.options, **{k: v for k, v in given.items() if v is not None})
        options.check()
        bound: Task[P, R] = Task(self.app, self.function, self.name, options)
        return bound

    def result(self, job: Enqueued | str, timeout: calls.Duration | None = None) -> R:
        """What the task returned for ``job`` (what :meth:`enqueue`
        answered, or its id), read from its JSON, once a worker ran it:
        waits for it (``timeout`` seconds or a timedelta at most, then
        ``TimeoutError``), as RQ's ``job.result`` or Celery's ``get()``.
        :class:`~echomq.errors.JobDied` when it died (its last error),
        :class:`~echomq.errors.JobCancelled` when cancelled. Ask the task
        (or its :meth:`using`) that enqueued it: its queue is looked in."""
        job_id = job.id if isinstance(job, Enqueued) else job
        if self.app.test_mode is not None:
            return cast(R, self.app.test_mode.result_of(job_id))
        queue = self.app._sync_queue(self.options.queue)
        return cast(R, finished(queue.wait(job_id, timeout)))

    async def result_async(self, job: Enqueued | str, timeout: calls.Duration | None = None) -> R:
        """:meth:`result`, from async code."""
        job_id = job.id if isinstance(job, Enqueued) else job
        if self.app.test_mode is not None:
            return cast(R, self.app.test_mode.result_of(job_id))
        queue = await self.app.queue_async(self.options.queue)
        return cast(R, finished(await queue.wait(job_id, timeout)))

    def payload(self, *args: P.args, **kwargs: P.kwargs) -> bytes:
        """The job's payload for these arguments: :class:`InvalidInput` when
        the function does not take them or JSON cannot carry them."""
        try:
            self._signature.bind(*args, **kwargs)
        except TypeError as err:
            raise InvalidInput(f"task {self.name!r}: {err}") from None
        return task_payload(self.name, args, kwargs)

    def enqueue(self, *args: P.args, **kwargs: P.kwargs) -> Enqueued:
        """Enqueue a job of this task, from sync code (a Django view, a
        script): everything is checked before anything is sent."""
        body = self.payload(*args, **kwargs)
        return self.app._enqueue(self, body)

    async def enqueue_async(self, *args: P.args, **kwargs: P.kwargs) -> Enqueued:
        """:meth:`enqueue`, from async code."""
        body = self.payload(*args, **kwargs)
        return await self.app._enqueue_async(self, body)

    def enqueue_options(self, body: bytes) -> dict[str, Any]:
        """ENQUEUE's options for a job of this task whose payload is ``body``."""
        unique = self.unique_key(body) if self.options.unique_for is not None else None
        return self.options._enqueue_options(unique)

    def unique_key(self, body: bytes) -> str:
        """The ``unique`` key of a job of this task whose payload is
        ``body``: ``task:<name>:`` and the SHA-256 of its arguments bound
        to the function's signature, defaults applied, as
        ``json.dumps(bound.arguments, sort_keys=True, separators=(",", ":"))``;
        so ``f(1, b=2)``, ``f(b=2, a=1)`` and ``f(1)`` (``b`` defaults to 2)
        have one key. A default JSON cannot carry stands as its type's name."""
        _, args, kwargs = read_payload(body)
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        canonical = json.dumps(bound.arguments, sort_keys=True, separators=(",", ":"), default=_type_name)
        return f"task:{self.name}:{hashlib.sha256(canonical.encode('utf-8')).hexdigest()}"

    async def run(self, job: Job | None, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """Run the function on ``args``: an async one on the loop, a sync one
        in the worker's threads (the job's :meth:`~echomq.Job.in_thread`)."""
        try:
            self._signature.bind(*args, **kwargs)
        except TypeError as err:
            raise TaskFailed(f"task {self.name!r}: {err}") from None
        token = _current.set(job)
        try:
            if self.is_async:
                return await self.function(*args, **kwargs)  # type: ignore[misc]
            if job is not None:
                return await job.in_thread(self.function, *args, **kwargs)
            run = functools.partial(contextvars.copy_context().run, self.function, *args, **kwargs)
            return await asyncio.get_running_loop().run_in_executor(None, run)
        finally:
            _current.reset(token)


def finished(info: JobInfo) -> Any:
    """A finished job's result read from its JSON; :class:`JobDied` or
    :class:`JobCancelled` for one that did not finish done."""
    if info.state == "dead":
        raise JobDied(info.id, info.error)
    if info.state == "cancelled":
        raise JobCancelled(info.id)
    return info.result_json()


class Registrar(Protocol):
    """What ``@app.task(...)`` with options answers: it registers the function it decorates."""

    @overload
    def __call__(self, function: Callable[P, Coroutine[Any, Any, R]], /) -> Task[P, R]: ...

    @overload
    def __call__(self, function: Callable[P, R], /) -> Task[P, R]: ...


class App:
    """A set of tasks and the server they are enqueued to: ``url`` (else
    ``ECHOMQ_URL``, else :data:`DEFAULT_URL`); tasks go to ``queue`` unless
    they name one. A worker runs them by name (:attr:`handler`)."""

    def __init__(self, url: str | None = None, *, queue: str = "default") -> None:
        check_queue(queue)
        self.url = url if url is not None else os.environ.get("ECHOMQ_URL", DEFAULT_URL)
        self.queue = queue
        self.tasks: dict[str, Task[Any, Any]] = {}
        self.test_mode: TestMode | None = None
        """Set while :meth:`testing` runs: enqueues go to it, not to Redis."""
        self._sync_queues: dict[str, SyncQueue] = {}
        self._lock = threading.Lock()
        # Per event loop: its connection, opened once (a task the first calls
        # of a burst all await), and its queues, each opened once likewise.
        self._connections: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[asyncio.Task[Connection], dict[str, asyncio.Task[Queue]]]]
        self._connections = weakref.WeakKeyDictionary()
        self.handler = TaskHandler(self)
        """The :class:`~echomq.Worker` handler that runs this app's tasks (:class:`TaskHandler`)."""

    def __repr__(self) -> str:
        return f"<echomq App {self.url!r}: {len(self.tasks)} tasks>"

    @overload
    def task(self, function: Callable[P, Coroutine[Any, Any, R]]) -> Task[P, R]: ...

    @overload
    def task(self, function: Callable[P, R]) -> Task[P, R]: ...

    @overload
    def task(self, *, name: str | None = None, queue: str | None = None, priority: int = 0,
             attempts: int | None = None, backoff: calls.Duration | None = None,
             backoff_exp: calls.Duration | None = None, timeout: calls.Duration | None = None,
             unique_for: calls.Duration | None = None, unique_until_done: bool = False,
             headers: Mapping[str, str] | None = None, group: str | None = None) -> Registrar: ...

    def task(self, function: Callable[..., Any] | None = None, *, name: str | None = None,
             queue: str | None = None, priority: int = 0, attempts: int | None = None,
             backoff: calls.Duration | None = None, backoff_exp: calls.Duration | None = None,
             timeout: calls.Duration | None = None, unique_for: calls.Duration | None = None,
             unique_until_done: bool = False, headers: Mapping[str, str] | None = None,
             group: str | None = None) -> Any:
        """Register a function as a task, by ``name`` (its ``__name__`` by
        default; two tasks of one name are refused), with the options its
        jobs are enqueued with (:class:`TaskOptions`), checked now."""
        options = TaskOptions(queue=queue if queue is not None else self.queue, priority=priority,
                              attempts=attempts, backoff=backoff, backoff_exp=backoff_exp, timeout=timeout,
                              unique_for=unique_for, unique_until_done=unique_until_done, headers=headers,
                              group=group)
        options.check()

        def register(fn: Callable[..., Any]) -> Task[Any, Any]:
            task_name = name if name is not None else fn.__name__
            if not task_name:
                raise InvalidInput("a task's name is at least one character")
            if task_name in self.tasks:
                raise InvalidInput(f"a task named {task_name!r} is registered already "
                                   f"({self.tasks[task_name].function!r}): give one of them name=")
            made: Task[Any, Any] = Task(self, fn, task_name, options)
            self.tasks[task_name] = made
            return made

        return register(function) if function is not None else register

    @property
    def queues(self) -> list[str]:
        """The queues its tasks go to, in the order they were first named."""
        return list(dict.fromkeys(t.options.queue for t in self.tasks.values()))

    def testing(self, *, eager: bool = False) -> TestMode:
        """A test mode (:class:`echomq.testing.TestMode`), a context manager:
        while it is entered, enqueues go to it, never to Redis."""
        from .testing import TestMode

        return TestMode(self, eager=eager)

    # -- enqueueing -------------------------------------------------------------

    def _enqueue(self, task: Task[Any, Any], body: bytes) -> Enqueued:
        if self.test_mode is not None:
            return self.test_mode.enqueue(task, body)
        return self._sync_queue(task.options.queue).enqueue(body, **task.enqueue_options(body))

    def _sync_queue(self, name: str) -> SyncQueue:
        """Queue ``name`` for sync code, opened once."""
        with self._lock:
            queue = self._sync_queues.get(name)
            if queue is None:
                from .queue import SyncQueue

                queue = self._sync_queues[name] = SyncQueue.open(self.url, name)
        return queue

    async def _enqueue_async(self, task: Task[Any, Any], body: bytes) -> Enqueued:
        if self.test_mode is not None:
            return await self.test_mode.enqueue_async(task, body)
        queue = await self.queue_async(task.options.queue)
        return await queue.enqueue(body, **task.enqueue_options(body))

    async def connection(self) -> Connection:
        """This event loop's connection to the app's server, made once per loop."""
        return (await self._opened())[0]

    async def _opened(self) -> tuple[Connection, dict[str, asyncio.Task[Queue]]]:
        from .queue import connect

        loop = asyncio.get_running_loop()
        # A closed loop's entry holds it (its tasks name it): dropped here,
        # so that each asyncio.run() that enqueued does not keep its loop.
        for closed in [other for other in list(self._connections) if other.is_closed()]:
            del self._connections[closed]
        found = self._connections.get(loop)
        if found is None:
            found = self._connections[loop] = (loop.create_task(connect(self.url)), {})
        opening, queues = found
        try:
            return await asyncio.shield(opening), queues
        except BaseException:
            # A connection that failed is opened anew by the next call.
            if opening.done() and self._connections.get(loop) is found:
                del self._connections[loop]
            raise

    async def queue_async(self, name: str) -> Queue:
        """Queue ``name`` on :meth:`connection`, opened once per loop."""
        connection, queues = await self._opened()
        if name not in queues:
            queues[name] = asyncio.get_running_loop().create_task(connection.queue(name))
        opening = queues[name]
        try:
            return await asyncio.shield(opening)
        except BaseException:
            if opening.done() and queues.get(name) is opening:
                del queues[name]
            raise

    def close(self) -> None:
        """Close the sync producers' connections (:meth:`aclose` closes an event loop's)."""
        with self._lock:
            for queue in self._sync_queues.values():
                queue.close()
            self._sync_queues.clear()

    async def aclose(self) -> None:
        """Close this event loop's connection (the next async enqueue opens
        one again): at a web app's shutdown, say."""
        found = self._connections.pop(asyncio.get_running_loop(), None)
        if found is None:
            return
        opening, _ = found
        try:
            connection = await opening
        except Exception:
            return  # it never opened: nothing to close
        await connection.close()


class TaskHandler:
    """An :class:`App`'s handler (``app.handler``), for a :class:`~echomq.Worker`:
    ``await app.handler(job)`` reads the payload, runs the task it names and
    answers its result as JSON bytes (None: no result). For a job of a plain
    ``def`` task, :meth:`thread_call` is the whole of that as one blocking
    call, which the worker runs in the job's slot thread, where the slot
    then acks it and claims its next job, without the event loop."""

    def __init__(self, app: App) -> None:
        self.app = app

    def __repr__(self) -> str:
        return f"<echomq TaskHandler of {self.app!r}>"

    async def __call__(self, job: Job) -> Any:
        name, args, kwargs = read_payload(job.payload)
        task = self.app.tasks.get(name)
        if task is None:
            raise TaskFailed(f"no task {name!r} in this app (it has {', '.join(sorted(self.app.tasks)) or 'none'})")
        return result_bytes(name, await task.run(job, args, kwargs))

    def thread_call(self, job: Job) -> Callable[[], bytes | None] | None:
        """The job's run as one call for a thread: its task's function on its
        arguments, with :func:`current_job` set, answering the result as
        JSON bytes (a :class:`TaskFailed` for one JSON cannot encode). None
        when the job runs on the loop: an ``async def`` task, and a payload,
        task or arguments :meth:`__call__` refuses (it says why)."""
        try:
            name, args, kwargs = read_payload(job.payload)
        except (TaskFailed, ValueError):
            return None
        task = self.app.tasks.get(name)
        if task is None or task.is_async:
            return None
        try:
            task._signature.bind(*args, **kwargs)
        except TypeError:
            return None
        function = task.function

        def call() -> bytes | None:
            token = _current.set(job)
            try:
                return result_bytes(name, function(*args, **kwargs))
            finally:
                _current.reset(token)

        return call


def result_bytes(name: str, value: Any) -> bytes | None:
    """A task's return value as its job's result: JSON, None for none; a value JSON cannot encode
    is a :class:`TaskFailed` naming the task."""
    if value is None:
        return None
    try:
        return json.dumps(_json_value(value, "the result"), separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False).encode("utf-8")
    except InvalidInput as err:
        raise TaskFailed(f"task {name!r} returned what JSON cannot encode: {err}") from None


_CHECK_KEYSPACE = Keyspace("default")
"""A keyspace to check options with: :func:`calls.enqueue` builds a call, sends nothing."""

__all__ = ["App", "DEFAULT_URL", "PAYLOAD_MEMBERS", "Task", "TaskFailed", "TaskHandler", "TaskOptions", "current_job",
           "read_payload", "result_bytes", "task_payload"]
