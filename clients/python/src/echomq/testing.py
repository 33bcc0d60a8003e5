"""A test mode: tasks enqueued and run without Redis, for a team's own tests.

    def test_signup_sends_a_welcome() -> None:
        with app.testing() as mode:
            signup("a@example.com")                   # calls send_welcome.enqueue(...)
            [job] = mode.jobs_of(send_welcome)
            assert job.kwargs == {"name": "Ada"}
            mode.run()                                # runs what was enqueued, here
            assert job.state == "done" and job.result == "sent"

While the mode is entered, every enqueue of the app's tasks (sync or async)
is checked exactly as it would be (the arguments against the function's
signature, JSON, the options) and kept in :attr:`TestMode.jobs`, never sent.
:meth:`TestMode.run` runs the kept jobs in order, each once, through the
same payload the worker would read (so what JSON changes, a tuple into a
list, changes here too), jobs enqueued by them included; ``eager=True``
runs each at its enqueue. A failing task's exception is kept on its job
and raised again by ``run`` (``raise_errors=False``: only kept). No retry,
delay or schedule runs here: it is the tasks' code under test, not the queue.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .errors import JobDied
from .ids import mint
from .model import Enqueued
from .tasks import read_payload, result_bytes

if TYPE_CHECKING:
    from .tasks import App, Task

TestState = Literal["pending", "done", "failed"]


@dataclass
class TestJob:
    """A job kept by the test mode: what was enqueued, then how its run went."""

    __test__ = False  # not a pytest test class

    id: str
    queue: str
    task: str
    args: list[Any]
    kwargs: dict[str, Any]
    payload: bytes
    options: dict[str, Any] = field(repr=False)
    """ENQUEUE's options it would have been sent with (priority, attempts, unique…)."""
    state: TestState = "pending"
    result: Any = None
    """The task's return value as the worker keeps it: decoded from its JSON."""
    error: BaseException | None = None


class TestMode:
    """Entered (``with app.testing():``), the app's enqueues come here. Made by :meth:`App.testing`."""

    __test__ = False

    def __init__(self, app: App, *, eager: bool = False) -> None:
        self.app = app
        self.eager = eager
        self.jobs: list[TestJob] = []

    def __enter__(self) -> TestMode:
        if self.app.test_mode is not None:
            raise RuntimeError("this app is in a test mode already")
        self.app.test_mode = self
        return self

    def __exit__(self, *exc: object) -> None:
        self.app.test_mode = None

    def jobs_of(self, task: Task[Any, Any] | str) -> list[TestJob]:
        """The jobs of one task (or task name), in enqueue order."""
        name = task if isinstance(task, str) else task.name
        return [job for job in self.jobs if job.task == name]

    def _keep(self, task: Task[Any, Any], body: bytes) -> TestJob:
        name, args, kwargs = read_payload(body)
        job = TestJob(mint(), task.options.queue, name, args, kwargs, body, task.enqueue_options(body))
        self.jobs.append(job)
        return job

    def enqueue(self, task: Task[Any, Any], body: bytes) -> Enqueued:
        job = self._keep(task, body)
        if self.eager:
            self._run_sync([job], raise_errors=True)
        return Enqueued(job.id, duplicate=False)

    async def enqueue_async(self, task: Task[Any, Any], body: bytes) -> Enqueued:
        job = self._keep(task, body)
        if self.eager:
            await self._run_one(job, raise_errors=True)
        return Enqueued(job.id, duplicate=False)

    def run(self, *, queue: str | None = None, raise_errors: bool = True) -> list[TestJob]:
        """Run the pending jobs (of ``queue``, or all), each once, in order,
        and those they enqueue; the jobs run. From sync code (``asyncio.run``
        inside): from async code, ``await`` :meth:`run_async`."""
        return self._run_sync(None, raise_errors=raise_errors, queue=queue)

    async def run_async(self, *, queue: str | None = None, raise_errors: bool = True) -> list[TestJob]:
        """:meth:`run`, from async code."""
        ran: list[TestJob] = []
        while True:
            pending = [j for j in self.jobs if j.state == "pending" and queue in (None, j.queue)]
            if not pending:
                return ran
            for job in pending:
                ran.append(job)
                await self._run_one(job, raise_errors=raise_errors)

    def _run_sync(self, jobs: list[TestJob] | None, *, raise_errors: bool, queue: str | None = None) -> list[TestJob]:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError("TestMode.run() is for sync code: in a running event loop, await run_async()")
        if jobs is None:
            return asyncio.run(self.run_async(queue=queue, raise_errors=raise_errors))
        for job in jobs:
            asyncio.run(self._run_one(job, raise_errors=raise_errors))
        return jobs

    def result_of(self, job_id: str) -> Any:
        """A kept job's result, as :meth:`echomq.Task.result` answers it:
        :class:`~echomq.errors.JobDied` (its error, once) for one that
        failed; ``RuntimeError`` for one not run yet (run the test mode, or
        enter it with ``eager=True``)."""
        job = next((job for job in self.jobs if job.id == job_id), None)
        if job is None:
            raise LookupError(f"no job {job_id} in this test mode")
        if job.state == "failed":
            raise JobDied(job.id, f"{type(job.error).__name__}: {job.error}")
        if job.state == "pending":
            raise RuntimeError(f"job {job_id} has not run: run() the test mode first, or use eager=True")
        return job.result

    async def _run_one(self, job: TestJob, *, raise_errors: bool) -> None:
        task = self.app.tasks.get(job.task)
        try:
            if task is None:
                raise LookupError(f"no task {job.task!r} in this app")
            name, args, kwargs = read_payload(job.payload)
            raw = result_bytes(name, await task.run(None, args, kwargs))
        except Exception as err:
            job.state, job.error = "failed", err
            if raise_errors:
                raise
            return
        job.state = "done"
        job.result = None if raw is None else json.loads(raw)


__all__ = ["TestJob", "TestMode", "TestState"]
