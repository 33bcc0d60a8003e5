"""A claimed job as its handler sees it (:class:`Job`), and :class:`RetryAfter`,
which a handler raises to say "not now". A :class:`~echomq.Worker` makes one
``Job`` per claim, tied to its own record of the run: a progress refused
for a lost lease stops the run, and ``wait_for`` marks the job as waiting
for its children. Both are importable from :mod:`echomq` and
:mod:`echomq.worker` too.
"""

from __future__ import annotations

import asyncio
import collections.abc
import contextvars
import functools
import json
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Coroutine, Generator, TypeVar

from . import _protocol, calls, flows
from .errors import FenceError, InvalidInput, NoJobError
from .flows import ChildJobs
from .model import DEFAULT_MAX_ATTEMPTS, Children, JobRef, Policy, attempts_spent
from .queue import Queue

if TYPE_CHECKING:
    from .threads import HandlerThreads
    from .worker import _Running

T = TypeVar("T")

MAX_RESULT = _protocol.size("MAX_RESULT")
"""The longest result a job keeps, in bytes (the protocol's ``MAX_RESULT``)."""


class RetryAfter(Exception):
    """Raise from a handler when a downstream said "not now" (HTTP 429/503):
    the job waits ``after`` seconds without spending its attempt (DEFER), and
    with ``pause_queue`` the whole queue's claims wait as long."""

    def __init__(self, after: float, pause_queue: bool = False) -> None:
        super().__init__(f"retry after {after}s")
        self.after = after
        self.pause_queue = pause_queue


@dataclass
class Job:
    """A claimed job, as its handler sees it."""

    queue: Queue
    id: str
    token: int
    """The fencing token this claim minted: how many times the job was
    claimed, this claim included (§6). Not the attempts spent: it rises when
    an attempt is given back (:class:`RetryAfter`, a graceful stop) too; see
    :attr:`attempts_spent`."""
    payload: bytes
    policy: Policy | None
    headers: dict[str, str]
    _entry: _Running | None = field(default=None, repr=False)
    _max_attempts: int = field(default=DEFAULT_MAX_ATTEMPTS, repr=False)
    """The worker's max attempts, for a job with no ATTEMPTS of its own."""
    _threads: HandlerThreads | None = field(default=None, repr=False)
    """The worker's threads, where :meth:`in_thread` runs a function."""
    _loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)
    """The worker's event loop, where :meth:`from_thread` runs a coroutine."""

    def from_thread(self, work: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``work`` (``job.progress(b"50")``, ``job.children()``) on the
        worker's event loop from a sync handler's thread, and wait for its
        result (``timeout`` seconds at most: ``TimeoutError``): how a plain
        ``def`` handler calls the job's ``async`` methods. Never from the
        loop itself, which would wait for itself: ``RuntimeError``."""
        if isinstance(work, _Reported):
            return None  # type: ignore[return-value]  # done in this thread already: progress
        if self._loop is None:
            work.close()
            raise RuntimeError("this job is not run by a worker: await its methods instead")
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            work.close()
            raise RuntimeError("from_thread() is for a sync handler's thread: on the loop, await it")
        return asyncio.run_coroutine_threadsafe(work, self._loop).result(timeout)

    async def in_thread(self, function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """``function(*args, **kwargs)`` in one of the worker's threads (as
        many as its ``concurrency``), with the caller's context variables:
        how an ``async def`` handler runs blocking code while the loop goes
        on renewing leases. Outside a running worker, in a thread of the
        loop's default pool."""
        run = functools.partial(contextvars.copy_context().run, function, *args, **kwargs)
        if self._threads is None:
            return await asyncio.get_running_loop().run_in_executor(None, run)
        thread = self._threads.run(run)
        if self._entry is not None and self._entry.baton is None:
            self._entry.thread = thread  # its slot is held until the thread is done
        return await thread.future

    @property
    def attempts_spent(self) -> int:
        """The attempts the job has spent, this one included (1 for the first):
        its claims less the attempts given back, which do not count against
        its maximum. Derived, not stored (:func:`echomq.model.attempts_spent`
        says how): exact for a job enqueued without ``attempts=``, or with
        the worker's ``max_attempts``, whose attempts were given back by
        workers of that ``max_attempts``, and for any job never given one
        back. For a job enqueued with its own ``attempts=n`` and given
        attempts back, ``echomq.model.attempts_spent(job.token, job.policy,
        n)`` is exact."""
        return max(1, attempts_spent(self.token, self.policy, self._max_attempts))

    @property
    def attempt(self) -> int:
        """Deprecated: the fencing token (:attr:`token`), not the attempts
        spent (:attr:`attempts_spent`), which this name was taken for."""
        warnings.warn("Job.attempt is the fencing token, which counts claims: read Job.token, or "
                      "Job.attempts_spent for the attempts spent", DeprecationWarning, stacklevel=2)
        return self.token

    @property
    def traceparent(self) -> str | None:
        """The producer's W3C trace context, when it sent one (§7.6)."""
        return self.headers.get("traceparent")

    def json(self) -> Any:
        """The payload read as JSON."""
        return json.loads(self.payload)

    async def children(self) -> Children | None:
        """A flow's parent's children (1.6, §7.8): how each ended and what
        it returned; None for a job that is no parent."""
        return await self.queue.children(self.id)

    async def wait_for(self, children: ChildJobs) -> None:
        """Make this job a parent of ``children`` and wait for them (ADOPT,
        §7.8): those it has not named before are added and enqueued, each
        linked to it; the job leaves its lease without spending its attempt
        and runs again, from the top, once they have ended. Then this call,
        naming the same children (their ids are derived,
        :class:`~echomq.flows.ChildJobs`), returns: read their results and
        go on. While the job waits it raises
        :class:`~echomq.flows.WaitingForChildren`: let it through."""
        if self._entry is None:
            raise InvalidInput("wait_for needs a job claimed by a Worker")
        entry = self._entry

        def waits() -> None:
            entry.waits = True

        if await flows.adopt(self.queue, self.id, self.token, self._max_attempts, children, waits):
            raise flows.WaitingForChildren(f"{self.id} waits for its children: it runs again once they have ended")

    async def children_results(self) -> dict[JobRef, bytes]:
        """What a flow's parent's children returned, by child: those done
        with a result (a child that failed, or returned nothing, is not
        among them). Empty for a job that is no parent. From a sync
        handler: :func:`echomq.flows.children_results_sync`."""
        children = await self.children()
        return {} if children is None else children.results

    def progress(self, value: bytes | str | Any) -> Coroutine[Any, Any, None]:
        """Report how far the job got (PROGRESS): bytes as they are, a str as
        UTF-8, anything else as JSON: ``await job.progress(b"50")``. From a
        plain ``def`` handler's thread, ``job.progress(b"50")`` reports at
        once (waiting for the server's answer) and returns an awaitable
        that is done (``job.from_thread(job.progress(...))`` still works).
        Raises :class:`FenceError` when the lease was lost (the handler is
        being cancelled)."""
        report = self._progress(value)
        if self._loop is not None and not _on_loop(self._loop):
            self.from_thread(report)
            return _Reported()
        return report

    async def _progress(self, value: bytes | str | Any) -> None:
        raw = _as_bytes(value)
        try:
            await self.queue.executor.run(calls.progress(self.queue.keyspace, self.id, self.token, raw))
        except (FenceError, NoJobError):
            if self._entry is not None:
                self._entry.lose("its progress was refused")
            raise


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether this thread runs ``loop``."""
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


class _Reported(collections.abc.Coroutine[Any, Any, None]):
    """What :meth:`Job.progress` answers in a handler's thread, where it
    reported at once: awaiting it does nothing, and neither does
    :meth:`Job.from_thread` (no coroutine left unawaited)."""

    def send(self, value: Any) -> Any:
        raise StopIteration

    def throw(self, *args: Any) -> Any:
        raise StopIteration

    def close(self) -> None:
        pass

    def __await__(self) -> Generator[Any, None, None]:
        return iter(())  # type: ignore[return-value]


def _as_bytes(value: Any) -> bytes:
    """A result or a progress as stored: bytes as they are, a str as UTF-8, anything else as JSON."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    return json.dumps(value).encode("utf-8")
