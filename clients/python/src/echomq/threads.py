"""The worker's threads, where sync handlers run (:class:`HandlerThreads`).

A worker's loop hands a plain ``def`` handler (or a task's function) to one
of ``concurrency`` long-lived threads fed by one queue, and the thread hands
the result back on a second queue, waking the loop with one
``call_soon_threadsafe`` unless a wake-up is pending already (at concurrency
100, many runs end per loop turn: one wake-up, and one write to the loop's
self-pipe, for all of them). A thread tells the loop anything else the same
way (:meth:`HandlerThreads.tell`), in order, without waiting for it: how a
sync job's slot thread, which ends its jobs itself, keeps the worker's
books. No lock is shared between the loop and the threads: ``concurrent.futures.ThreadPoolExecutor``, used
before, takes an idle-thread semaphore on every submit, which the loop
waited on behind the threads releasing it (a tenth of the loop's time at
concurrency 100), and a ``Future`` with its ``Condition`` per job, chained
to an asyncio one.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import itertools
import logging
import queue
import threading
from typing import Any, Callable, Generic, TypeVar

log = logging.getLogger("echomq.worker")

T = TypeVar("T")

_names = itertools.count()


class ThreadRun(Generic[T]):
    """One function's run in a handler thread, as the loop sees it: an
    asyncio future for its result, and whether the thread is done with it
    (a cancelled future does not stop a thread: the function runs on)."""

    __slots__ = ("future", "_ended", "_on_end")

    def __init__(self, future: asyncio.Future[T]) -> None:
        self.future = future
        self._ended = False
        self._on_end: list[Callable[[], None]] = []

    def done(self) -> bool:
        """Whether the function has returned (or raised) in its thread; read on the loop."""
        return self._ended

    def when_done(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` on the loop once the function has returned (at once if it has)."""
        if self._ended:
            callback()
        else:
            self._on_end.append(callback)

    def _end(self, result: Any, error: BaseException | None) -> None:
        """On the loop: the thread is done; settle the future unless it was cancelled."""
        self._ended = True
        if not self.future.done():
            if error is not None:
                self.future.set_exception(error)
            else:
                self.future.set_result(result)
        for callback in self._on_end:
            callback()
        self._on_end.clear()


class HandlerThreads:
    """At most ``size`` threads named ``<name>_<n>``, started one per run
    until there are ``size`` (then they are reused), each taking the next
    function from one queue; for the one event loop that runs them all."""

    def __init__(self, size: int, name: str = "echomq-handler") -> None:
        self.size = size
        self.name = name
        self._work: queue.SimpleQueue[tuple[asyncio.AbstractEventLoop, ThreadRun[Any], Callable[[], Any]] | None]
        self._work = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._told: collections.deque[Callable[[], None]] = collections.deque()
        """What the threads told the loop, in order (the end of a run among them), for :meth:`_settle`."""
        self._wake_pending = False
        """Whether the loop is told already to settle what has ended."""

    def run(self, function: Callable[[], T]) -> ThreadRun[T]:
        """Run ``function()`` in one of the threads; await the answer's ``future`` on the running loop."""
        if self._closed:
            raise RuntimeError("the worker's threads are shut down")
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        elif self._loop is not loop:
            raise RuntimeError("a worker's threads serve the one event loop the worker runs on")
        run: ThreadRun[T] = ThreadRun(loop.create_future())
        self._work.put((loop, run, function))
        if len(self._threads) < self.size:
            thread = threading.Thread(target=self._serve, name=f"{self.name}_{next(_names)}")
            thread.start()
            self._threads.append(thread)
        return run

    def shutdown(self) -> None:
        """No more runs: functions not started are cancelled; those running
        run on to their end, unwaited for, and their threads then end."""
        self._closed = True
        while True:
            try:
                item = self._work.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[1].future.cancel()
                item[1]._end(None, None)
        for _ in self._threads:
            self._work.put(None)

    def _serve(self) -> None:
        while True:
            item = self._work.get()
            if item is None:
                return
            loop, run, function = item
            result: Any = None
            error: BaseException | None = None
            try:
                result = function()
            except BaseException as err:  # handed to the loop, as a Future would
                error = err
            self._tell(loop, functools.partial(run._end, result, error))
            del item, run, function, result, error

    def tell(self, callback: Callable[[], None]) -> None:
        """From a thread: call ``callback`` on the loop, after what this thread
        told it before (one queue, in order), with no wait for the loop."""
        if self._loop is not None:
            self._tell(self._loop, callback)

    def _tell(self, loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> None:
        # The flag is read after the append, and the loop clears it before
        # it takes what was told: a callback is never left without a wake-up.
        self._told.append(callback)
        if not self._wake_pending:
            self._wake_pending = True
            try:
                loop.call_soon_threadsafe(self._settle)
            except RuntimeError:  # the loop is closed: nobody waits for it
                pass

    def _settle(self) -> None:
        """On the loop: settle every run whose function has returned, and
        whatever else the threads told it, in the order they told it."""
        self._wake_pending = False
        while self._told:
            callback = self._told.popleft()
            try:
                callback()
            except Exception:  # one callback's bug must not strand those after it
                log.exception("a worker thread's report failed on the loop")


__all__ = ["HandlerThreads", "ThreadRun"]
