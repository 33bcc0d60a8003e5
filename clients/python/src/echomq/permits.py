"""A partitioned queue's exact limits, as its workers' claims take them
(protocol 1.8, PROTOCOL.md §7.10): at most ``rate`` claims in any ``per``
ms, and at most ``concurrency`` jobs running at once, across every
partition. Before a claim from one of its queues, a worker asks the
coordinator on the definition's slot for permits (PERMIT), claims at most
what it was granted, by the grant's deadline (CLAIM's UNTIL), and gives
back what it did not use.

Under an exact concurrency each claimed job keeps its permit while it
runs: the coordinator here remembers which (:meth:`Coordinator.took`), the
worker renews them before the jobs' leases (:meth:`Coordinator.renew`, one
RENEW a round of heartbeats), and gives each back once its job ended
(:meth:`Coordinator.ended`, one ZREM for those that end together).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import redis

from . import calls
from .errors import Refused
from .keyspace import Keyspace

if TYPE_CHECKING:
    from .queue import Connection

log = logging.getLogger("echomq")

RECHECK = 1.0
"""How long, in seconds, a worker trusts what it last read of the definition's ``rate`` and ``concurrency``."""

BUSY_NAP_MS = 25
"""How long, in ms, a claim refused permits under an exact concurrency naps
at most: any job's end, in any worker, may free a place before the first
running permit's hold ends, which is all PERMIT's ``wait`` can say."""

RENEWED_WITHIN = 0.5
"""How soon, in seconds, a RENEW of running permits must come back for the
leases renewed after it (§7.10): half the slack (1000 ms) a permit runs
past its lease, the other half for the servers' clocks."""

GIVE_BACK = 1000
"""The most permits one ZREM gives back."""


class Coordinator:
    """The exact limits of one partitioned queue, as its queues' claims ask
    them; shared by every queue of it (and so by their workers)."""

    def __init__(self, connection: Connection, name: str) -> None:
        self._connection = connection
        self._keyspace = Keyspace(name)
        self._read_at = float("-inf")
        self.rate = False
        """Whether the definition held an exact rate when last read."""
        self.capped = False
        """Whether the definition held an exact concurrency when last read."""
        self._running: dict[tuple[str, str], int] = {}
        """The running permit of each job claimed here under an exact
        concurrency, by its queue's name and its id, until the job ends."""
        self._ended: list[int] = []
        """Running permits whose jobs ended, to be given back in one call."""
        self._giving_back = False
        """Whether a job's end is giving back :attr:`_ended` now (then
        another that ends adds its own to the next call)."""

    @property
    def exact(self) -> bool:
        """Whether claims ask for permits: an exact rate or an exact concurrency, when last read."""
        return self.rate or self.capped

    async def check(self) -> bool:
        """Whether the definition holds an exact rate or an exact
        concurrency (:attr:`exact`): both read together (HMGET), at most
        every :data:`RECHECK` seconds, so that one set while workers run
        binds them soon."""
        now = time.monotonic()
        if now - self._read_at >= RECHECK:
            rate, cap = await self._connection.redis.hmget(self._keyspace.key("partitions"), ["rate", "concurrency"])
            self.rate = rate is not None and bytes(rate) != b"0"
            self.capped = cap is not None and bytes(cap) != b"0"
            self._read_at = now
        return self.exact

    async def permit(self, count: int, lease_ms: int) -> tuple[int, int, int, int]:
        """PERMIT for up to ``count`` claims of a ``lease_ms`` lease:
        ``(granted, first, until, wait)`` (§7.10); ``until`` 0 when there is
        no exact limit after all. With the running key and LEASE only when
        an exact concurrency was read: one set since is refused
        (``EMQARG``), read at once, and asked for again."""
        try:
            reply = await self._ask(count, lease_ms)
        except Refused as err:
            if self.capped or err.code != "EMQARG":
                raise
            self._read_at = float("-inf")
            await self.check()
            reply = await self._ask(count, lease_ms)
        granted, first, until, wait = (int(n) for n in reply)
        if granted and not until:
            self.rate = self.capped = False
        return granted, first, until, wait

    async def _ask(self, count: int, lease_ms: int) -> list[Any]:
        call = calls.permit(self._keyspace, count, lease_ms if self.capped else None)
        reply: list[Any] = await self._connection.executor.run(call)
        return reply

    def took(self, queue: str, job_ids: Iterable[str], first: int) -> None:
        """A claim of ``queue`` granted permits from ``first`` answered the
        jobs ``job_ids``, in order: under an exact concurrency, the i-th
        took permit ``first + i``, held until the job ends."""
        if self.capped:
            for number, job_id in enumerate(job_ids, first):
                self._running[(queue, job_id)] = number

    async def give_back(self, first: int, end: int) -> None:
        """Give back the permits numbered ``first`` up to ``end`` (not
        included), from the permit log and the running permits: a claim
        took fewer jobs. One that cannot be given back only lowers the
        limits until it leaves the window, or its hold ends."""
        if first >= end:
            return
        numbers = [str(n) for n in range(first, end)]
        try:
            async with self._connection.redis.pipeline(transaction=False) as pipe:
                pipe.zrem(self._keyspace.key("permits"), *numbers)
                pipe.zrem(self._keyspace.key("running"), *numbers)
                await pipe.execute()
        except redis.RedisError as err:
            log.debug("unused permits of %s not given back (they lapse): %s", self._keyspace.name, err)

    async def renew(self, queue: str, job_ids: Sequence[str], lease_ms: int) -> list[bool]:
        """Renew the running permits of the jobs ``job_ids`` of ``queue`` for
        another ``lease_ms``, before their leases are (RENEW, up to 1000 a
        call): for each job, whether its lease may be renewed (its permit
        runs on, or it holds none), False when its permit is gone, so that
        its lease may not outlast it. A failure to reach the coordinator
        raises: renew none of those leases this round."""
        numbers = [self._running.get((queue, job_id)) for job_id in job_ids]
        held = [n for n in numbers if n is not None]
        runs: dict[int, bool] = {}
        for start in range(0, len(held), calls.RENEWS):
            chunk = held[start:start + calls.RENEWS]
            reply = await self._connection.executor.run(calls.renew(self._keyspace, lease_ms, chunk))
            runs.update(zip(chunk, (int(answer) == 1 for answer in reply)))
        if not all(runs.values()):
            # A concurrency lifted since: its permits no longer bind, and none is kept.
            self._read_at = float("-inf")
            await self.check()
            if not self.capped:
                self._running.clear()
                return [True] * len(numbers)
        return [n is None or runs.get(n, False) for n in numbers]

    async def ended(self, queue: str, job_ids: Iterable[str]) -> None:
        """The jobs ``job_ids`` of ``queue`` ended (the call that ended each
        answered, or its lease was found lost): the running permits they
        hold go back, in one ZREM with those of the jobs that end
        meanwhile (sent by the end that finds none on its way). One that
        cannot be given back stops running at the end of its hold."""
        for job_id in job_ids:
            number = self._running.pop((queue, job_id), None)
            if number is not None:
                self._ended.append(number)
        if self._giving_back or not self._ended:
            return
        self._giving_back = True
        try:
            while self._ended:
                numbers = [str(n) for n in self._ended[:GIVE_BACK]]
                del self._ended[:GIVE_BACK]
                try:
                    await self._connection.redis.zrem(self._keyspace.key("running"), *numbers)
                except redis.RedisError as err:
                    log.debug("ended jobs' permits of %s not given back (they lapse): %s", self._keyspace.name, err)
        finally:
            self._giving_back = False
