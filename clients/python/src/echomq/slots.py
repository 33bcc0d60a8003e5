"""A worker's slot in its own thread: a job whose handler is one blocking
call (a plain ``def`` handler, an App's plain ``def`` task) runs, is acked
and is followed by the slot's next job in the thread it ran in
(:class:`SlotThreads`).

Why: were the loop to end such a job, its result would go from its thread
to the loop, the loop would send the ACKNEXT, and the job it claimed would
go back to a thread: two hand-offs and the loop's wake-ups around one round
trip, between every two jobs of a slot. Instead the thread sends the ACKNEXT
itself, on a connection of its own, and runs the job it claims at once: the
slot's claim -> run -> finish goes round in its thread, the next claim
coming back to its top.

What the thread does: it runs the job's call; takes the job's
:class:`Baton`; acks the job and claims the slot's next one in one ACKNEXT;
runs that job too, or hands the slot back to the loop. It tells the loop
each of these (:meth:`~echomq.threads.HandlerThreads.tell`, in order,
without waiting for it), so the loop's books stay whole.

What the loop still does (:class:`~echomq.worker.Worker`, its "slot in its
thread" methods): it keeps the books of every job a thread runs, renews
their leases, runs their timeouts and the grace, and ends every job the
thread cannot: a failure, a deferral, an awaitable result, a result it
cannot encode or that is too long, a lost lease, a stop. A :class:`Baton`
says who ends each job, taken once: a job the thread acks is never also
failed or released by the loop, and a job the loop stopped is never acked
by the thread; fencing on the server keeps a stale ack from counting.

One thread's ACKNEXT at a time: a job that ends while another thread's
ACKNEXT is on its way is handed to the loop, which acks it with the others
that end meanwhile in one ACKMANY, pipelined with the CLAIM for their
slots. Every job acked from its own thread was slower at concurrency 100
(1,703 jobs/s against 2,598 with the loop's batches, in-process): one at a
time keeps a lone slot's single round trip and a busy worker's batches.

No slot threads while a tracer provider is set (each run then has its span
on the loop), nor on a :class:`~echomq.Queue` whose
:class:`~echomq.Connection` was given its client (no URL to connect with).
"""

from __future__ import annotations

import contextvars
import enum
import functools
import inspect
import logging
import threading
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Protocol, runtime_checkable

import redis

from . import calls, tracing
from .errors import FenceError, NoJobError
from .executor import SyncExecutor
from .job import MAX_RESULT, Job, _as_bytes
from .model import Claimed, read_claims

if TYPE_CHECKING:
    from .worker import Worker, _Running

log = logging.getLogger("echomq.worker")  # the worker's logger: a slot thread's job logs as a loop's does


class Ender(enum.Enum):
    """Who ends a job run in its slot's thread (:class:`Baton`)."""

    THREAD = "thread"
    """The slot's thread, its function returned in time: it acks the job, or hands it to the loop."""
    LOOP = "loop"
    """The loop: the job's timeout, a lost lease, the end of the grace, or what the thread handed it."""


_batons = threading.Lock()


class Baton:
    """Who ends a job run in its slot's thread, taken once: by the thread
    when the function returns, or by the loop when it stops the job first.
    So a job the thread acks is never also failed or released by the loop,
    and a job the loop stopped is never acked by the thread."""

    __slots__ = ("holder",)

    def __init__(self) -> None:
        self.holder: Ender | None = None

    def take(self, by: Ender) -> bool:
        """Whether ``by`` ends the job: it takes the baton now, or took it before."""
        with _batons:
            if self.holder is None:
                self.holder = by
            return self.holder is by

    def hand_to_loop(self) -> None:
        """From the thread that took it: the loop ends the job after all."""
        with _batons:
            self.holder = Ender.LOOP


@runtime_checkable
class ThreadCalls(Protocol):
    """A handler that can run some jobs as one blocking call each (an
    :class:`~echomq.App`'s :class:`~echomq.tasks.TaskHandler`, for its plain
    ``def`` tasks): such a job runs in its slot's thread, which acks it and
    claims the slot's next job itself."""

    def __call__(self, job: Job) -> Awaitable[Any] | Any: ...

    def thread_call(self, job: Job) -> Callable[[], Any] | None:
        """The job's run as a call for a thread, or None to await the handler on the loop."""
        ...


_ON_LOOP: Any = object()
"""A result only the loop can end the job with (an awaitable, one that cannot be encoded, too long)."""


def _result_bytes(result: Any) -> Any:
    """A handler's result as the bytes its ack keeps (None: none), or
    :data:`_ON_LOOP` when only the loop can end the job with it."""
    if inspect.isawaitable(result):
        return _ON_LOOP
    try:
        kept = None if result is None else _as_bytes(result)
    except Exception:  # the loop fails the job, with the encoding error
        return _ON_LOOP
    return _ON_LOOP if kept is not None and len(kept) > MAX_RESULT else kept


class SlotThreads:
    """A worker's slots run in their threads: which jobs may (:meth:`call`),
    a slot's run in its thread (:meth:`serve`), and the threads' own
    connections, closed at the end of the worker's run (:meth:`close`).
    It reads the worker's settings and tells its loop what it did."""

    def __init__(self, worker: Worker) -> None:
        from .worker import _Running  # here, not at the top: worker.py imports this module

        self._worker = worker
        self._entry_type: type[_Running] = _Running
        """The worker's record of a running job, made here for the slot's next job."""
        self._thread_calls: Callable[[Job], Callable[[], Any] | None] | None = None
        """How a job becomes one call for its slot's thread (None: every job runs through the loop)."""
        if worker._sync:
            self._thread_calls = functools.partial(functools.partial, worker.handler)
        elif isinstance(worker.handler, ThreadCalls):
            self._thread_calls = worker.handler.thread_call
        self._url = worker.queue.connection.url
        """Where a slot's thread opens its own connection; None (a client given to connect): no slot threads."""
        self._connections = threading.local()
        self._clients: list[redis.Redis] = []
        """Every slot thread's connection, closed at the end of run()."""
        self._acking = threading.Lock()
        """Held by a slot's thread while it sends its ACKNEXT: one at a time. A
        job that ends while another thread's is on its way is acked by the
        loop, with those that end meanwhile, in one ACKMANY pipelined with
        the CLAIM for their slots."""

    def call(self, job: Job) -> Callable[[], Any] | None:
        """The job's run as one call for its slot's thread, or None: through the loop."""
        if self._thread_calls is None or self._url is None or tracing.active():
            return None
        try:
            return self._thread_calls(job)
        except Exception as err:  # the handler, awaited on the loop, fails the job with it
            log.debug("job %s runs through the loop: its thread_call raised %r", job.id, err)
            return None

    def serve(self, entry: _Running, call: Callable[[], Any], context: contextvars.Context) -> None:
        """In a handler thread: the slot's jobs, each run, then acked with the
        slot's next job claimed (ACKNEXT, one round trip), for as long as the
        thread can end them; then the slot goes back to the loop."""
        threads = self._worker._threads
        assert threads is not None and entry.baton is not None
        while True:
            result: Any = None
            error: BaseException | None = None
            try:
                result = context.copy().run(call)
            except BaseException as err:  # ended by the loop, as a handler's exception is
                error = err
            if not entry.baton.take(Ender.THREAD):
                return  # the loop stopped the job (timeout, lost lease, grace): the result is dropped
            try:
                following = self._finish_here(entry, result, error)
            except Exception as err:  # a bug: the job's lease runs out, and REAP takes it back
                threads.tell(functools.partial(self._worker._ack_failed, entry, err))
                return
            if following is None:
                return
            entry, call = following

    def _finish_here(self, entry: _Running, result: Any,
                     error: BaseException | None) -> tuple[_Running, Callable[[], Any]] | None:
        """In the slot's thread, which took the job's end: ack the job and
        claim the slot's next one (ACKNEXT), or hand the job to the loop.
        The next job and its call when it runs in this thread too, else None."""
        worker = self._worker
        threads = worker._threads
        assert threads is not None and entry.baton is not None
        kept = _ON_LOOP if error is not None or not worker._refilling else _result_bytes(result)
        if kept is _ON_LOOP or not self._acking.acquire(blocking=False):
            entry.baton.hand_to_loop()
            threads.tell(functools.partial(worker._handed_back, entry, result, error))
            return None
        claimed = entry.claimed
        try:
            reply = self._executor().run(
                calls.acknext(worker._ks, claimed.id, claimed.token, worker.lease_ms, 1, kept))
        except (FenceError, NoJobError):
            entry.baton.hand_to_loop()
            threads.tell(functools.partial(entry.lose, "its ack was refused"))
            return None
        except Exception as err:
            threads.tell(functools.partial(worker._ack_failed, entry, err))
            return None
        finally:
            self._acking.release()
        following = read_claims(reply).jobs
        if following and not worker._claiming:  # stopped while the ACKNEXT was on its way
            self._release_here(following)
            following = []
        if not following:
            threads.tell(functools.partial(worker._acked_here, entry, None, None))
            return None
        after = self._entry_type(following[0], baton=Baton())
        job = worker._job(after)
        call = self.call(job)
        threads.tell(functools.partial(worker._acked_here, entry, after, job if call is None else None))
        return None if call is None else (after, call)

    def _executor(self) -> SyncExecutor:
        """This thread's own connection, opened at its first ack."""
        found: SyncExecutor | None = getattr(self._connections, "executor", None)
        if found is None:
            assert self._url is not None
            client = redis.Redis.from_url(self._url, decode_responses=False)
            self._clients.append(client)  # list.append holds the GIL: safe from threads
            found = self._connections.executor = SyncExecutor(client, self._worker._exec.kind)
        return found

    def _release_here(self, jobs: list[Claimed]) -> None:
        """In a slot's thread: release jobs claimed as the worker stopped (REFUND: no attempt spent)."""
        worker = self._worker
        for job in jobs:
            try:
                self._executor().run(calls.release(worker._ks, job.id, job.token, worker.max_attempts))
            except Exception as err:
                log.warning("releasing job %s failed: %s; REAP takes it back", job.id, err)

    def close(self) -> None:
        """Close every slot thread's connection (the end of the worker's run)."""
        for client in self._clients:
            client.close()
        self._clients.clear()
