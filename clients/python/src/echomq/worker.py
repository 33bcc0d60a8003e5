"""The worker's face: :class:`Worker` runs a handler on a queue's jobs.

    async def handle(job: echomq.Job) -> bytes | None:
        await job.progress(b"50")
        return b"done"

    await echomq.Worker(queue, handle, concurrency=10).run()

An ``async def`` handler runs on the event loop; a plain ``def`` one (blocking
I/O, a Django ORM call) runs in the worker's threads, at most ``concurrency``
at once, while the loop goes on renewing leases.

What it owes the protocol (PROTOCOL.md §6, §7, §9, §11.3, §11.5):
- claims block while the queue is idle: ``BZPOPMIN`` on the wake-up key on
  Lua, ``EMQ.CLAIM … BLOCK`` on the module; the gate's word (§7.1) is obeyed;
- every running job's lease is renewed in one pipelined round of EXTENDs per
  tick (a third of the lease); ``EMQFENCE`` (or ``EMQNOJOB``) on a renewal or
  an ack cancels the handler and throws its result away;
- on a queue of a partitioned queue held to an exact rate or concurrency
  (§7.10), each claim asks its coordinator for permits first (PERMIT, with
  the lease); under a concurrency each job holds its permit: renewed before
  its lease (one RENEW a round; a job whose permit is gone is stopped as on
  a lost lease), given back once its end landed (one ZREM for those that
  end together);
- each job's own policy from its claim: its TIMEOUT stops the handler and
  FAILs the job; its ATTEMPTS and back-off win on the server;
- a finished job is acked with its result, and its slot fetches the next job
  in the same round trip (ACKNEXT; a sync job's own thread sends it, on a
  connection of its own, and runs the next job there: :mod:`echomq.slots`);
  jobs that finish together are acked in one ACKMANY, pipelined with the
  CLAIM for their slots (one round trip too);
- SIGTERM (or :meth:`Worker.stop`) stops claiming, lets running jobs finish
  within ``grace``, and RELEASEs the rest with REFUND: no attempt spent;
- upkeep on a period (:mod:`echomq.upkeep`): REAP, PROMOTE, TRIM (done,
  dead, cancelled), SETTLE, the queue's due ``every`` schedules, and for
  flows (1.6) the relay of its children's notices to their parents and
  the sweep of its parents whose children never came;
- its entry in the worker registry (:mod:`echomq.registration`,
  ``emq:workers``) every ``registry_beat``, with the jobs it runs, deleted at a
  graceful stop.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import logging
import signal
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Coroutine, Iterable, TypeVar

from . import calls, failure
from .errors import FenceError, NoJobError, Refused
from .job import MAX_RESULT as MAX_RESULT, Job as Job, RetryAfter as RetryAfter, _as_bytes
from .metrics import Metrics, Outcome
from .model import DEFAULT_MAX_ATTEMPTS, Claimed, Claims, attempts_spent, read_claims
from .permits import BUSY_NAP_MS, RENEWED_WITHIN
from .queue import Queue
from .registration import Registration, new_id, now_ms
from .slots import Baton as Baton, Ender as Ender, SlotThreads, ThreadCalls as ThreadCalls
from .threads import HandlerThreads, ThreadRun
from .upkeep import Upkeep
from . import tracing

log = logging.getLogger("echomq.worker")

GIVE_BACK_WAIT = 1.0
"""How long a stopping worker waits at most to give its upkeep lease back, in seconds (§11.3),
and as long to take its entry out of the worker registry: both expire by themselves."""

Handler = Callable[["Job"], Awaitable[Any] | Any]

T = TypeVar("T")


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


@dataclass
class _Running:
    claimed: Claimed
    handler: asyncio.Future[Any] | None = None
    """The handler's task on the loop; for a job run in its slot's thread, a
    future the loop settles when it ends the job (cancelled when it stops it)."""
    baton: Baton | None = None
    """For a job run in its slot's thread: who ends it."""
    timer: asyncio.TimerHandle | None = None
    """Its timeout's timer, while it runs."""
    fenced: bool = False
    released: bool = False
    waits: bool = False
    """The job waits for children its handler named (ADOPT): its claim is over."""
    renewed: float = field(default_factory=time.monotonic)
    """When the lease was claimed or last renewed (``time.monotonic()``)."""
    claimed_at: float = field(default_factory=time.monotonic)
    thread: ThreadRun[Any] | None = None
    """A sync handler's run in the worker's threads: its slot is held until it ends."""
    timed_out: bool = False
    """Its timeout ran out while the handler ran: the handler was cancelled."""
    over: bool = False
    """The call that ended it answered (FAIL, DEFER, RELEASE), or its lease
    was found lost: under an exact concurrency its running permit goes back."""

    def lose(self, why: str) -> None:
        """The lease is gone: stop the handler, drop its result. Nothing once
        the job waits for its children: its claim is over, and the handler
        may still be enqueueing them."""
        if self.waits or not self.stoppable():
            return
        if not self.fenced:
            log.warning("job %s lost its lease (%s); its handler is cancelled", self.claimed.id, why)
        self.fenced = True
        if self.handler is not None and not self.handler.done():
            self.handler.cancel()

    def stoppable(self) -> bool:
        """Whether the loop may stop the job: always on the loop; in its slot's
        thread, unless the thread took its end (the loop then takes it)."""
        return self.baton is None or self.baton.take(Ender.LOOP)


class _Signalled:
    """The workers of one event loop that handle its signals: each signal
    told to every one of them (a program running a worker a queue stops
    them all), the loop's handlers set while one runs."""

    CAUGHT = [(signal.SIGTERM, "SIGTERM"), (signal.SIGINT, "SIGINT"), (signal.SIGTSTP, "SIGTSTP")]

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.workers: list[Worker] = []

    def add(self, worker: Worker) -> None:
        if not self.workers:
            for sig, name in self.CAUGHT:
                try:
                    self.loop.add_signal_handler(sig, self.tell, name)
                except (NotImplementedError, RuntimeError):
                    pass
        self.workers.append(worker)

    def remove(self, worker: Worker) -> None:
        self.workers.remove(worker)
        if not self.workers:
            if _SIGNALLED.get(id(self.loop)) is self:
                del _SIGNALLED[id(self.loop)]
            for sig, _ in self.CAUGHT:
                try:
                    self.loop.remove_signal_handler(sig)
                except (NotImplementedError, RuntimeError):
                    pass

    def tell(self, name: str) -> None:
        for worker in list(self.workers):
            worker.on_signal(name)


_SIGNALLED: dict[int, _Signalled] = {}


def _signalled(loop: asyncio.AbstractEventLoop) -> _Signalled:
    """The loop's :class:`_Signalled` (by the loop's id: the entry goes with its last worker)."""
    found = _SIGNALLED.get(id(loop))
    if found is None or found.loop is not loop:
        found = _SIGNALLED[id(loop)] = _Signalled(loop)
    return found


class _Outage:
    """A call that keeps failing while the server is away, said once when
    it begins (and when its error changes), at debug while it goes on, and
    once when it works again: an outage is news, each retry is not."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.since: float | None = None
        self.last: type[BaseException] | None = None

    def failed(self, err: BaseException) -> None:
        if self.since is None:
            log.warning("%s failed: %s; trying again with back-off (said once, and when it works again)",
                        self.what, err)
            self.since = time.monotonic()
        elif type(err) is not self.last:
            log.warning("%s still fails, now: %s", self.what, err)
        else:
            log.debug("%s still fails: %s", self.what, err)
        self.last = type(err)

    def worked(self) -> None:
        if self.since is not None:
            log.info("%s works again, after %.1f s", self.what, time.monotonic() - self.since)
            self.since, self.last = None, None


class HandlerExited(Exception):
    """An ``async def`` handler raised ``SystemExit``: its job's attempt fails."""


def _time_out(entry: _Running) -> None:
    """A job's timeout ran out: cancel its handler, if it still runs."""
    if entry.handler is not None and not entry.handler.done() and entry.stoppable():
        entry.timed_out = True
        entry.handler.cancel()


def _cancelling() -> bool:
    """Whether the current task was asked to cancel (3.11+; before, only its awaited task is known)."""
    task = asyncio.current_task()
    cancelling = getattr(task, "cancelling", None)
    return bool(cancelling()) if cancelling is not None else False


def _is_async(handler: Handler) -> bool:
    """Whether ``handler`` is an ``async def`` function (a partial of one, or an
    object whose ``__call__`` is one): else it runs in a thread."""
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(
        getattr(handler, "__call__", None))


def _duration_text(ms: int) -> str:
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


class Worker:
    """Runs ``handler`` on the jobs of ``queue``.

    ``queue`` is an asyncio :class:`~echomq.Queue` (a :class:`~echomq.SyncQueue`
    is refused with a ``TypeError``). ``handler`` is an ``async def`` function, run on the event loop, or a
    plain ``def`` one, run in a pool of ``concurrency`` threads of the
    worker's own (a function that returns an awaitable has it awaited on the
    loop). A sync handler's lease is renewed by the loop as an async one's;
    but a thread cannot be stopped: on a timeout, a lost lease or the end of
    the grace the job is failed, dropped or released all the same, and the
    function runs on in its thread until it returns, its result thrown away
    (while it does, it holds one of the pool's threads).

    A job of a plain ``def`` handler (or of a handler with a ``thread_call``,
    :class:`ThreadCalls`: an App's plain ``def`` tasks) runs in its slot's
    thread end to end: when it returns in time, the thread acks it and
    claims the slot's next job in one ACKNEXT on a connection of its own,
    and runs that job at once, with no hand-off to the loop and back
    between the two (one thread's ACKNEXT at a time: a job that ends while
    another's is on its way is acked by the loop, batched). Failures,
    deferrals, timeouts, lost leases and stops are ended by the loop, as
    an async handler's are. Not while a tracer provider is set (each run
    then has its span on the loop), nor on a :class:`Queue` whose
    :class:`Connection` was given its client (no URL to connect with).

    ``handler`` returns the job's result: bytes as they are, a str as UTF-8,
    None for no result, anything else as JSON (a result JSON cannot encode,
    a ``datetime`` or a ``Decimal``, fails the attempt at once, with the
    encoding error; retried by the job's policy like any failure). An
    exception fails the job:
    it is logged (``echomq.worker``, ERROR, with its traceback), and the job
    keeps its type and message, then its traceback, as its error
    (:mod:`echomq.failure`: at most 64 KiB, the traceback cut first), which
    ``emq inspect`` and :meth:`Queue.inspect` show. :class:`RetryAfter`
    defers it.

    With ``burst`` it stops once nothing is pending and it runs nothing
    (delayed jobs are left for the next run); with ``metrics``
    (:class:`echomq.metrics.Metrics`) it counts each job's end as the
    Rust worker does. ``echomq worker`` (:mod:`echomq.cli`) runs one per
    queue of an :class:`~echomq.App`, with ``app.handler``.
    """

    def __init__(
        self,
        queue: Queue,
        handler: Handler,
        *,
        concurrency: int = 10,
        lease: calls.Duration = 30.0,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        backoff: calls.Duration = 1.0,
        max_backoff: calls.Duration = 3600.0,
        timeout: calls.Duration | None = None,
        idle_wait: calls.Duration = 1.0,
        upkeep: calls.Duration = 0.25,
        grace: calls.Duration = 10.0,
        registry_beat: calls.Duration = 5.0,
        burst: bool = False,
        metrics: Metrics | None = None,
    ) -> None:
        if not isinstance(queue, Queue):
            raise TypeError(
                f"a Worker works an asyncio echomq.Queue, not a {type(queue).__name__}: open it with "
                "`queue = await (await echomq.connect(url)).queue(name)` (a SyncQueue is for producers)")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.queue = queue
        self.handler = handler
        self.concurrency = concurrency
        self._threads: HandlerThreads | None = None
        """Where a sync handler runs: made by run(), ``concurrency`` threads at most."""
        self._sync = not _is_async(handler)
        self._slots = SlotThreads(self)
        """Where a job that is one blocking call runs, acked and followed by its slot's next (:mod:`echomq.slots`)."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._grace_over = False
        """Set once the grace ended: a job a slot's thread claims after it is released at once."""
        self.lease_ms = calls.to_ms(lease)
        calls.integer("lease (ms)", self.lease_ms, "LEASE_MS")
        self.max_attempts = max_attempts
        calls.integer("max attempts", max_attempts, "MAX_ATTEMPTS")
        self.backoff_ms = calls.to_ms(backoff)
        self.max_backoff_ms = calls.to_ms(max_backoff)
        self.timeout_ms = None if timeout is None else calls.to_ms(timeout)
        self.idle_wait = calls.seconds(idle_wait)
        self.upkeep_period = calls.seconds(upkeep)
        self.grace = calls.seconds(grace)
        self.burst = burst
        """Stop once the queue has nothing pending to claim and this worker runs
        nothing (RQ's burst mode): delayed jobs, retries in their back-off
        among them, are left for the next worker."""
        self.metrics = metrics
        """Told of each job's end (:class:`echomq.metrics.Metrics`), when given."""
        self._ks = queue.keyspace
        self._exec = queue.executor
        self.id = new_id()
        """Its id in the worker registry (§11.3): ``<host>:<pid>:<ULID>``, new for each worker."""
        self.upkeep = Upkeep(queue, max_attempts, self.upkeep_period, keeper=self.id)
        """The upkeep this worker owes its queue (§11.3), run every ``upkeep`` seconds; a partitioned
        queue's queue is kept by one of its workers at a time, under its upkeep lease."""
        self.registration = Registration(self._exec.redis, self.id, [queue.name], concurrency,
                                         calls.seconds(registry_beat))
        """Its entry in the worker registry, written every ``registry_beat`` seconds (0.01 to 60)."""
        self._running: dict[str, _Running] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._free = concurrency
        self._slot_freed = asyncio.Event()
        self._stopping = asyncio.Event()
        self._quiet = asyncio.Event()
        """Set by :meth:`quiet`: no more claims; running jobs run to their end."""
        self._at_once = asyncio.Event()
        """Set by ``stop(at_once=True)``: the grace ends now."""
        # Set once run() ends its helpers: their loops end at their next look,
        # even when a cancellation was swallowed inside a client call.
        self._closed = asyncio.Event()
        self._acks: list[tuple[_Running, bytes | None]] = []
        """Finished jobs waiting for their ack: acked by the job that finds no ack in flight."""
        self._acking = False
        """Whether a job's task is sending acks now (then a job that ends adds its own to the next batch)."""
        self.processed = 0
        self.failed = 0
        self._exact = False
        """Whether the queue's claims last asked for permits (an exact rate or concurrency, §7.10)."""

    # -- the public face ---------------------------------------------------

    def stop(self, *, at_once: bool = False) -> None:
        """Stop gracefully: claim no more, let running jobs finish within the
        grace, release the rest (REFUND: no attempt spent). ``at_once``
        ends the grace now (a second SIGTERM)."""
        self._stopping.set()
        if at_once:
            self._at_once.set()

    def quiet(self) -> None:
        """Claim no more, for good; running jobs run to their end, and the
        worker waits, idle, for :meth:`stop` (SIGTSTP, as ``emq work``'s
        quiet before a deploy)."""
        self._quiet.set()
        self._slot_freed.set()

    @property
    def running(self) -> int:
        """How many jobs it runs now."""
        return len(self._running)

    def on_signal(self, name: str) -> None:
        """Steered as ``emq work`` is: SIGTSTP quiets; the first SIGINT or
        SIGTERM stops gracefully, the second at once."""
        if name == "SIGTSTP":
            log.info("%s: quiet: no new jobs; %d running run to their end; SIGTERM or Ctrl-C stops the worker",
                     name, self.running)
            self.quiet()
        elif not self._stopping.is_set():
            log.info("%s: stopping: no new jobs; %d running have the grace (%ss) to end, then their jobs are "
                     "released, no attempt spent (another SIGINT or SIGTERM: at once)", name, self.running,
                     self.grace)
            self.stop()
        else:
            log.warning("%s: stopping at once: %d running jobs are released", name, self.running)
            self.stop(at_once=True)

    async def run(self, *, handle_signals: bool = True) -> None:
        """Work until :meth:`stop`, or with ``burst`` until the queue is empty.
        With ``handle_signals``: SIGTERM or SIGINT stops gracefully (a second
        one at once), SIGTSTP quiets (:meth:`quiet`)."""
        loop = self._loop = asyncio.get_running_loop()
        # Threads start as handlers need them: none for an async handler that never asks.
        self._threads = HandlerThreads(self.concurrency, "echomq-handler")
        if handle_signals:
            _signalled(loop).add(self)
        helpers = [
            asyncio.create_task(self._heart(), name="echomq-heart"),
            asyncio.create_task(self._upkeep(), name="echomq-upkeep"),
            asyncio.create_task(self._beats(), name="echomq-registration"),
        ]
        claimer = asyncio.create_task(self._claimer(), name="echomq-claim")
        try:
            await self._until_stopped(claimer)
            await self._finish_running()
            # A slot's thread that took a job's end acks it, or tells the loop, within moments.
            while (self._acks or any(not t.done() for t in self._tasks)
                   or any(e.baton is not None and e.baton.holder is Ender.THREAD for e in self._running.values())):
                await asyncio.sleep(0.01)
        finally:
            self._closed.set()
            self._slot_freed.set()
            for task in [claimer, *helpers]:
                task.cancel()
            await asyncio.gather(claimer, *helpers, return_exceptions=True)
            try:  # a server that does not answer is not waited for: the lease runs out by itself
                await asyncio.wait_for(self.upkeep.give_back(), GIVE_BACK_WAIT)
            except asyncio.TimeoutError:
                log.debug("the upkeep lease of %s was not given back within %ss", self._ks.name, GIVE_BACK_WAIT)
            try:
                await asyncio.wait_for(self.registration.leave(), GIVE_BACK_WAIT)
            except asyncio.TimeoutError:
                log.debug("%s did not leave the worker registry within %ss; its entry expires",
                          self.registration.id, GIVE_BACK_WAIT)
            if self._threads is not None:
                # Handlers cancelled (a timeout, a lost lease, the grace) may still
                # run: their threads end when they return, unwaited for here.
                self._threads.shutdown()
                self._threads = None
            self._slots.close()
            if handle_signals:
                _signalled(loop).remove(self)

    async def _until_stopped(self, claimer: asyncio.Task[None]) -> None:
        """Until :meth:`stop`; quieted meanwhile, the claims end at once and
        the running jobs run on."""
        stopping = asyncio.ensure_future(self._stopping.wait())
        quiet = asyncio.ensure_future(self._quiet.wait())
        await asyncio.wait({stopping, quiet}, return_when=asyncio.FIRST_COMPLETED)
        await self._end_claims(claimer)
        await stopping
        quiet.cancel()

    @property
    def _claiming(self) -> bool:
        return not (self._stopping.is_set() or self._quiet.is_set())

    # -- claiming -------------------------------------------------------------

    async def _end_claims(self, claimer: asyncio.Task[None]) -> None:
        if self._exec.kind == "native" or self.queue.coordinator is not None:
            # A blocked EMQ.CLAIM may have claimed jobs by now: let it answer
            # (within idle_wait), and release what it brings. So, too, a
            # claim under a partitioned queue's exact limits (it never
            # blocks): cut short between its PERMIT and its CLAIM, it would
            # keep its permits until they lapse, holding places.
            try:
                await asyncio.wait_for(asyncio.shield(claimer), self.idle_wait + 5)
            except asyncio.TimeoutError:
                claimer.cancel()
        else:
            claimer.cancel()
        await asyncio.gather(claimer, return_exceptions=True)

    async def _claimer(self) -> None:
        backoff = 0.01
        outage = _Outage(f"claim on {self._ks.name}")
        while self._claiming:
            if self._free == 0:
                self._slot_freed.clear()
                await self._slot_freed.wait()
                continue
            count = min(self._free, 1000)
            self._free -= count
            native_block = int(self.idle_wait * 1000) if self._exec.kind == "native" and not self.burst else None
            try:
                claims = await self._claim(count, native_block)
            except Exception as err:  # a lost connection: say so, try again soon
                self._free += count
                outage.failed(err)
                await asyncio.sleep(min(backoff, 1.0))
                backoff *= 2
                continue
            outage.worked()
            backoff = 0.01
            self._free += count - len(claims.jobs)
            if not self._claiming:
                await self._release_claimed(claims.jobs)
                return
            self._dispatch(claims.jobs)
            if claims.jobs and claims.held is None:
                continue
            if self.burst and not claims.jobs and (claims.held is None or claims.held < 0):
                if not self._running and not self._acks:
                    log.info("burst: nothing pending in %s; stopping (%d processed, %d failed)", self._ks.name,
                             self.processed, self.failed)
                    self.stop()
                    return
                await self._nap(0.02)  # the running jobs' slots come back to claim again
                continue
            await self._wait_for_work(claims.held, bool(claims.jobs))

    async def _claim(self, count: int, native_block: int | None) -> Claims:
        """CLAIM up to ``count`` jobs; for a queue of a partitioned queue held
        to an exact rate or concurrency (§7.10), as many as its coordinator
        grants, by their deadline (UNTIL, so never with BLOCK), the unused
        permits given back (not after a failed claim, which may have
        landed); under a concurrency each job keeps the permit it took
        until it ends. None granted: nothing claimed, and the wait the
        coordinator said, as a rate's; under a concurrency at most
        :data:`~echomq.permits.BUSY_NAP_MS` (a job's end anywhere may free a place)."""
        coordinator = self.queue.coordinator
        self._exact = coordinator is not None and await coordinator.check()
        if coordinator is None or not self._exact:
            return read_claims(await self._exec.run(calls.claim(self._ks, self.lease_ms, count, native_block)))
        granted, first, until, wait = await coordinator.permit(count, self.lease_ms)
        if not granted:
            return Claims([], min(wait, BUSY_NAP_MS) if coordinator.capped else wait)
        if not until:  # lifted meanwhile
            return read_claims(await self._exec.run(calls.claim(self._ks, self.lease_ms, count, native_block)))
        # A claim that failed may have landed: its permits are kept (they lapse), never given back.
        claims = read_claims(await self._exec.run(calls.claim(self._ks, self.lease_ms, granted, until=until)))
        coordinator.took(self.queue.name, [job.id for job in claims.jobs], first)
        await coordinator.give_back(first + len(claims.jobs), first + granted)
        return claims

    async def _ended(self, entries: Iterable[_Running]) -> None:
        """These jobs ended (the call that ended each answered, or the lease
        was lost): under a partitioned queue's exact concurrency, their
        running permits go back (§7.10), batched."""
        coordinator = self.queue.coordinator
        if coordinator is not None:
            await coordinator.ended(self.queue.name, [entry.claimed.id for entry in entries])

    @property
    def _refilling(self) -> bool:
        """Whether an ack also claims (ACKNEXT, ACKMANY's pipelined CLAIM):
        while claiming, except on a queue of a partitioned queue, whose
        claims go through :meth:`_claim` for its exact rate's permits (a
        busy worker's acks would otherwise claim without ever looking)."""
        return self._claiming and self.queue.coordinator is None

    async def _wait_for_work(self, held: int | None, took: bool) -> None:
        if held is not None and held > 0:  # the rate or a timed pause: told how long
            await self._nap(min(held / 1000, self.idle_wait))
        elif held == 0 or took:  # the concurrency limit: nothing announces a freed slot
            await self._nap(0.05)
        elif self._exec.kind == "lua" or self._exact:  # [] or [-1]: wait for an arrival (§9)
            try:
                await self._exec.redis.bzpopmin(self._ks.key("wake"), timeout=self.idle_wait)
            except Exception as err:
                log.warning("waiting on %s's wake-up key failed: %s", self._ks.name, err)
                await self._nap(0.2)
        # native: the claim itself blocked (BLOCK), but not under permits; claim again at once

    async def _nap(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self._stopping.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    async def _release_claimed(self, jobs: list[Claimed]) -> None:
        if not jobs:
            return
        found = await self._exec.run_many(
            [calls.release(self._ks, job.id, job.token, self.max_attempts) for job in jobs]
        )
        for job, reply in zip(jobs, found):
            if isinstance(reply, Exception):
                log.warning("releasing job %s failed: %s", job.id, reply)
        coordinator = self.queue.coordinator
        if coordinator is not None:  # a failed release may have landed: its permit lapses
            await coordinator.ended(self.queue.name, [job.id for job, reply in zip(jobs, found)
                                                      if not isinstance(reply, Exception)
                                                      or isinstance(reply, (FenceError, NoJobError))])
        self._free += len(jobs)

    def _dispatch(self, jobs: list[Claimed]) -> None:
        for claimed in jobs:
            entry = _Running(claimed)
            job = self._job(entry)
            call = self._slots.call(job)
            if call is None:
                self._running[claimed.id] = entry
                self._spawn(self._run_job(entry, job))
                continue
            assert self._threads is not None, "run() makes the threads before any job is claimed"
            entry.baton = Baton()
            # Each job runs in a copy of the loop's context, as a sync handler ran before.
            entry.thread = self._threads.run(
                functools.partial(self._slots.serve, entry, call, contextvars.copy_context()))
            self._started_in_thread(entry)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` in a task of the worker's, which run() waits for."""
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _job(self, entry: _Running) -> Job:
        claimed = entry.claimed
        return Job(self.queue, claimed.id, claimed.token, claimed.payload, claimed.policy, claimed.headers, entry,
                   self.max_attempts, self._threads, self._loop)

    def _timeout_ms(self, claimed: Claimed) -> int | None:
        return claimed.policy.timeout_ms if claimed.policy and claimed.policy.timeout_ms else self.timeout_ms

    def _start_timer(self, entry: _Running) -> None:
        """One timer per job with a timeout, none without."""
        timeout_ms = self._timeout_ms(entry.claimed)
        if timeout_ms is not None:
            assert self._loop is not None
            entry.timer = self._loop.call_later(timeout_ms / 1000, _time_out, entry)

    # -- one job ------------------------------------------------------------------

    async def _run_job(self, entry: _Running, job: Job) -> None:
        """Run the job's handler through the loop (an ``async def`` one on it), then end the job."""
        if self.metrics is not None:
            self.metrics.started(self.queue.name, entry.claimed.id)
        handler = asyncio.get_running_loop().create_task(tracing.run(job, self._call(job)))
        entry.handler = handler
        self._start_timer(entry)
        await self._outcome(entry, handler)

    async def _outcome(self, entry: _Running, handler: asyncio.Future[Any]) -> None:
        """Wait for the handler (awaiting it wakes this task in the loop turn it ends), then end the job."""
        try:
            await handler
        except asyncio.CancelledError:
            if _cancelling():  # this task was cancelled, not only the handler
                raise
        except BaseException:
            pass  # read below, from the handler
        await self._end(entry, handler)

    async def _end(self, entry: _Running, handler: asyncio.Future[Any]) -> None:
        """End the job by what its handler did: ack, fail, defer, release, or drop it."""
        claimed = entry.claimed
        timeout_ms = self._timeout_ms(claimed)
        if entry.timer is not None:
            entry.timer.cancel()
        handed = False
        try:
            if entry.timed_out:
                if not entry.fenced and not entry.released:
                    await self._fail(entry, f"timed out after {_duration_text(timeout_ms or 0)}", timed_out=True)
                    return
            if entry.waits or entry.fenced:
                # The job waits for its children, or the lease is gone: what
                # the handler returned or raised is thrown away (retrieved).
                if handler.done() and not handler.cancelled():
                    handler.exception()
                if entry.fenced and not entry.waits:
                    self._tell(entry, "lease_lost")
                entry.over = True
                return
            if entry.released:
                await self._release(entry)
                return
            if handler.cancelled():
                # Nothing here cancelled it (a timeout, a lost lease and the
                # grace all say so first): the handler raised CancelledError
                # itself, as a library may let escape. A failed attempt, not
                # a release, which gives the attempt back and would run it
                # again for ever.
                await self._fail(entry, "the handler raised asyncio.CancelledError, though the worker did not "
                                        "cancel it (a library it calls let one escape?)")
                return
            err = handler.exception()
            if isinstance(err, RetryAfter):
                await self._defer(entry, err)
            elif isinstance(err, (FenceError, NoJobError)):
                entry.fenced = entry.over = True
            elif err is not None:
                await self._fail(entry, failure.error_text(err), err)
            else:
                result = handler.result()
                try:
                    kept = None if result is None else _as_bytes(result)
                except Exception as unencodable:  # json.dumps: a datetime, a Decimal, a cycle…
                    await self._fail(entry, failure.bounded(
                        failure.describe(unencodable),
                        f"the handler's result (a {type(result).__name__}) cannot be encoded as JSON: return "
                        "bytes, a str, None, or a value json.dumps encodes"))
                    return
                most = MAX_RESULT
                if kept is not None and len(kept) > most:
                    await self._fail(entry, f"the handler returned {len(kept)} bytes: a result is at most {most}")
                    return
                self._acks.append((entry, kept))
                handed = True  # its ack frees the slot
        except Exception as err:
            log.warning("ending job %s failed: %s; its lease will run out and REAP takes it back", claimed.id, err)
        finally:
            if not handed:
                self._done(entry)
                if entry.over:
                    await self._ended([entry])
        if handed and not self._acking:
            await self._send_acks()

    async def _call(self, job: Job) -> Any:
        """The handler's result: an async one's from the loop, a sync one's from a thread."""
        if not self._sync:
            result = self.handler(job)
        else:
            # As asyncio.to_thread does, with the context, in the worker's own
            # threads; the thread's run kept, for the slot it holds (_done).
            assert self._threads is not None, "run() makes the threads before any job starts"
            run = functools.partial(contextvars.copy_context().run, self.handler, job)
            thread = self._threads.run(run)
            if job._entry is not None:
                job._entry.thread = thread
            result = await thread.future
        if inspect.isawaitable(result):
            try:
                result = await result
            except SystemExit as exit:
                # asyncio would carry it out of the event loop, stopping every
                # job of the worker mid-way: one job's attempt fails instead,
                # as a plain ``def`` task's SystemExit does in its thread.
                raise HandlerExited(f"the handler raised SystemExit({exit.code!r}); a handler cannot end the "
                                    "worker") from exit
        return result

    def _tell(self, entry: _Running, outcome: Outcome) -> None:
        """Tell the metrics how the job's attempt ended."""
        if self.metrics is not None:
            self.metrics.ended(self.queue.name, outcome, time.monotonic() - entry.claimed_at)

    def _done(self, entry: _Running) -> None:
        if self._running.get(entry.claimed.id) is entry:
            del self._running[entry.claimed.id]
            thread = entry.thread
            if thread is None or thread.done():
                self._free_slot()
                return
            # A sync handler still running in its thread (timed out, its lease
            # lost, released): a thread cannot be stopped, so its slot is free
            # only when the thread is, else the next job would wait in the pool
            # behind it while its own timeout runs down.
            thread.when_done(self._free_slot)

    def _free_slot(self) -> None:
        self._free += 1
        self._slot_freed.set()

    async def _fail(self, entry: _Running, error: str, err: BaseException | None = None, *,
                    timed_out: bool = False) -> None:
        """Log the failure (with ``err``'s traceback) and FAIL the job with ``error``."""
        claimed = entry.claimed
        attempt = max(1, attempts_spent(claimed.token, claimed.policy, self.max_attempts))
        log.error("job %s of queue %s failed (attempt %d, token %d): %s", claimed.id, self.queue.name, attempt,
                  claimed.token, error.partition("\n")[0], exc_info=err,
                  extra={"queue": self.queue.name, "job_id": claimed.id, "attempt": attempt,
                         "token": claimed.token})
        backoff = min(self.backoff_ms * (1 << min(max(claimed.token - 1, 0), 40)), self.max_backoff_ms)
        backoff = min(backoff, 999_999_999_999)
        self.failed += 1
        try:
            went = await self._exec.run(
                calls.fail(self._ks, claimed.id, claimed.token, self.max_attempts, backoff, error)
            )
        except (FenceError, NoJobError):
            entry.fenced = entry.over = True
            self._tell(entry, "lease_lost")
            return
        entry.over = True
        if timed_out:
            self._tell(entry, "timed_out")
        self._tell(entry, "dead" if went == b"dead" else "retried")

    async def _defer(self, entry: _Running, told: RetryAfter) -> None:
        claimed = entry.claimed
        try:
            await self._exec.run(
                calls.defer(self._ks, claimed.id, claimed.token, calls.to_ms(told.after),
                            self.max_attempts, told.pause_queue)
            )
            entry.over = True
            self._tell(entry, "deferred")
        except (FenceError, NoJobError):
            entry.fenced = entry.over = True

    async def _release(self, entry: _Running) -> None:
        claimed = entry.claimed
        try:
            await self._exec.run(calls.release(self._ks, claimed.id, claimed.token, self.max_attempts))
            entry.over = True
            self._tell(entry, "released")
        except (FenceError, NoJobError):
            entry.fenced = entry.over = True

    # -- a slot in its thread: the loop's part ------------------------------------------
    #
    # A job that is one blocking call runs in its slot's thread, which acks it
    # and runs the slot's next job itself (echomq.slots says how and why).
    # The loop keeps the books of those jobs, told by the thread in order,
    # renews their leases, runs their timeouts and the grace, and ends every
    # job the thread cannot (Baton says who ends each).

    def _started_in_thread(self, entry: _Running) -> None:
        """On the loop: a job runs in its slot's thread; keep its books, its lease and its timeout."""
        assert self._loop is not None
        self._running[entry.claimed.id] = entry
        if self.metrics is not None:
            self.metrics.started(self.queue.name, entry.claimed.id)
        stand_in: asyncio.Future[Any] = self._loop.create_future()
        stand_in.add_done_callback(functools.partial(self._ended_by_loop, entry))
        entry.handler = stand_in
        self._start_timer(entry)
        if self._grace_over and entry.stoppable():  # claimed as the grace ended: released now
            entry.released = True
            stand_in.cancel()

    def _ended_by_loop(self, entry: _Running, stand_in: asyncio.Future[Any]) -> None:
        """On the loop: a slot thread's job is the loop's to end (stopped, or handed back)."""
        if entry.handler is stand_in:
            self._spawn(self._end(entry, stand_in))

    def _acked_here(self, ended: _Running, following: _Running | None, job: Job | None) -> None:
        """On the loop: the slot's thread acked ``ended``, and claimed ``following``
        for the slot: run in the thread, or with ``job`` through the loop; None: the slot is free."""
        if ended.timer is not None:
            ended.timer.cancel()
        if self._running.get(ended.claimed.id) is ended:
            del self._running[ended.claimed.id]
        self.processed += 1
        self._tell(ended, "processed")
        if following is None:
            self._free_slot()
        elif job is None:
            following.thread = ended.thread
            self._started_in_thread(following)
        else:
            following.baton = None
            self._running[following.claimed.id] = following
            self._spawn(self._run_job(following, job))

    def _handed_back(self, entry: _Running, result: Any, error: BaseException | None) -> None:
        """On the loop: the slot's thread hands the job to the loop to end (a
        failure, a stop meanwhile, a result only the loop can take)."""
        stand_in = entry.handler
        assert stand_in is not None
        if stand_in.done():
            return
        if error is None and inspect.isawaitable(result):  # a sync handler's awaitable, awaited here
            handler = asyncio.get_running_loop().create_task(_awaited(result))
            entry.handler = handler
            self._spawn(self._outcome(entry, handler))
        elif error is not None:
            stand_in.set_exception(error)
        else:
            stand_in.set_result(result)

    def _ack_failed(self, entry: _Running, err: Exception) -> None:
        """On the loop: the slot thread's ACKNEXT failed (a lost connection)."""
        log.warning("acking job %s failed: %s; REAP takes it back", entry.claimed.id, err)
        if entry.timer is not None:
            entry.timer.cancel()
        self._done(entry)

    # -- acks ---------------------------------------------------------------------

    async def _send_acks(self) -> None:
        """Ack the finished jobs, in the task of the job that found no ack
        in flight: one alone with ACKNEXT (its slot's next job in the same
        round trip), those that ended meanwhile together, in one ACKMANY.
        No task of its own: a job's end is acked in the loop turn it ends."""
        self._acking = True
        try:
            while self._acks:
                batch = self._acks[:1000]
                del self._acks[:1000]
                try:
                    if len(batch) == 1 and self._refilling:
                        await self._ack_next(*batch[0])
                    else:
                        await self._ack_many(batch)
                except Exception as err:
                    # One that failed may have landed: its permit, if any, lapses with its lease.
                    log.warning("acking %d job(s) failed: %s; REAP takes them back", len(batch), err)
                    for entry, _ in batch:
                        self._done(entry)
                else:
                    await self._ended(entry for entry, _ in batch)
        finally:
            self._acking = False

    async def _ack_next(self, entry: _Running, result: bytes | None) -> None:
        """ACK the job and claim for its slot and the free ones in one round trip."""
        claimed = entry.claimed
        count = min(1 + self._free, 1000)
        self._free -= count - 1
        try:
            reply = await self._exec.run(
                calls.acknext(self._ks, claimed.id, claimed.token, self.lease_ms, count, result)
            )
        except (FenceError, NoJobError):
            entry.lose("its ack was refused")
            self._tell(entry, "lease_lost")
            self._free += count - 1
            self._done(entry)
            return
        except Exception:
            self._free += count - 1
            raise
        claims = read_claims(reply)
        self.processed += 1
        self._tell(entry, "processed")
        del self._running[claimed.id]
        self._free += count - len(claims.jobs)
        self._dispatch(claims.jobs)
        if self._free:
            self._slot_freed.set()

    async def _ack_many(self, batch: list[tuple[_Running, bytes | None]]) -> None:
        """ACKMANY the batch; while claiming, pipelined with a CLAIM for the
        batch's slots and the free ones: one round trip, as ACKNEXT is for one."""
        acks = calls.ackmany(self._ks, [(e.claimed.id, e.claimed.token, result) for e, result in batch])
        if not self._refilling:
            reply = await self._exec.run(acks)
            self._acked(batch, reply)
            for entry, _ in batch:
                self._done(entry)
            return
        count = min(len(batch) + self._free, 1000)
        taken = count - len(batch)  # free slots the claim takes beside the batch's own
        self._free -= taken
        try:
            reply, claimed = await self._exec.run_many([acks, calls.claim(self._ks, self.lease_ms, count)])
        except Exception:
            self._free += taken
            raise
        # The batch's slots go to the claim: its jobs leave without freeing theirs.
        for entry, _ in batch:
            if self._running.get(entry.claimed.id) is entry:
                del self._running[entry.claimed.id]
        if isinstance(claimed, Exception):
            log.warning("claim on %s failed: %s", self._ks.name, claimed)
            self._free += count
        else:
            claims = read_claims(claimed)
            self._free += count - len(claims.jobs)
            self._dispatch(claims.jobs)
        if self._free:
            self._slot_freed.set()
        if isinstance(reply, Exception):
            raise reply
        self._acked(batch, reply)

    def _acked(self, batch: list[tuple[_Running, bytes | None]], reply: list[Any]) -> None:
        """Count ACKMANY's outcomes, one per job of the batch."""
        for (entry, _), outcome in zip(batch, reply):
            if isinstance(outcome, Refused):
                entry.lose("its ack was refused")
                self._tell(entry, "lease_lost")
            else:
                self.processed += 1
                self._tell(entry, "processed")

    # -- leases ---------------------------------------------------------------------

    async def _heart(self) -> None:
        """Every third of the lease, renew every running job's lease in one
        round trip; under a partitioned queue's exact concurrency, their
        running permits first (:meth:`_permitted`)."""
        while not self._closed.is_set():
            await self._sleep(self.lease_ms / 3000)
            entries = [e for e in self._running.values() if not e.fenced and not e.waits]
            if not entries:
                continue
            sent = time.monotonic()
            entries = await self._permitted(entries)
            if not entries:
                continue
            try:
                replies = await self._exec.run_many(
                    [calls.extend(self._ks, e.claimed.id, e.claimed.token, self.lease_ms) for e in entries]
                )
            except Exception as err:
                log.warning("renewing %d lease(s) failed: %s", len(entries), err)
                continue
            for entry, reply in zip(entries, replies):
                if isinstance(reply, (FenceError, NoJobError)):
                    entry.lose(reply.code)
                elif not isinstance(reply, Exception):
                    entry.renewed = sent

    async def _permitted(self, entries: list[_Running]) -> list[_Running]:
        """Those of ``entries`` whose leases may be renewed: under a
        partitioned queue's exact concurrency, those whose running permits
        RENEW just renewed (§7.10: a lease never outlasts its permit), in
        one call (a thousand permits each). A job whose permit is gone is
        stopped as on a lost lease; when RENEW fails, or comes back
        :data:`~echomq.permits.RENEWED_WITHIN` or later, no lease is renewed
        this round."""
        coordinator = self.queue.coordinator
        if coordinator is None:
            return entries
        sent = time.monotonic()
        try:
            runs = await coordinator.renew(self.queue.name, [e.claimed.id for e in entries], self.lease_ms)
        except Exception as err:
            log.warning("renewing the running permits of %d job(s) failed: %s; their leases are not renewed "
                        "this round", len(entries), err)
            return []
        took = time.monotonic() - sent
        if took >= RENEWED_WITHIN:
            # A permit runs a slack past its renewal's lease: a lease renewed later than half of it after could outlast it.
            log.warning("renewing the running permits of %d job(s) took %.3f s, %.1f s or more: their leases are not "
                        "renewed this round, lest one outlast its permit", len(entries), took, RENEWED_WITHIN)
            return []
        for entry, permitted in zip(entries, runs):
            if not permitted and self._running.get(entry.claimed.id) is entry:  # not one that ended meanwhile
                entry.lose("its running permit under the queue's exact concurrency is gone: its lease is not renewed")
        return [entry for entry, permitted in zip(entries, runs) if permitted]

    async def _finish_running(self) -> None:
        deadline = time.monotonic() + self.grace
        while (any(not e.fenced for e in self._running.values()) and time.monotonic() < deadline
               and not self._at_once.is_set()):
            await asyncio.sleep(0.01)
        self._grace_over = True
        for entry in list(self._running.values()):
            if entry.handler is not None and not entry.handler.done() and entry.stoppable():
                entry.released = True
                entry.handler.cancel()
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    # -- the worker registry ----------------------------------------------------------

    async def _beats(self) -> None:
        """Write the worker's entry now and every beat, until the end of run()."""
        while not self._closed.is_set():
            await self.registration.beat(self._running_now())
            await self._sleep(self.registration.beat_every)

    def _running_now(self) -> list[dict[str, Any]]:
        """The jobs it holds a lease on, as §11.3's ``running`` lists them."""
        now, clock = now_ms(), time.monotonic()
        lease = self.lease_ms / 1000
        return [
            {"queue": self.queue.name, "id": e.claimed.id, "token": e.claimed.token,
             "lease_until": now + max(0, int((e.renewed + lease - clock) * 1000))}
            for e in self._running.values() if not e.fenced and not e.waits
        ]

    # -- upkeep -----------------------------------------------------------------------

    async def _upkeep(self) -> None:
        warned: set[str] = set()
        outage = _Outage(f"upkeep of {self._ks.name}")
        while not self._closed.is_set():
            started = time.monotonic()
            try:
                await self.upkeep.once(warned)
                outage.worked()
            except Exception as err:
                if not self._closed.is_set():
                    outage.failed(err)
            await self._sleep(max(0.0, self.upkeep_period - (time.monotonic() - started)))

    async def _sleep(self, seconds: float) -> None:
        """Sleep, but not past the end of run()."""
        try:
            await asyncio.wait_for(self._closed.wait(), seconds)
        except asyncio.TimeoutError:
            pass
