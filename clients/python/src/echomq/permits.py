"""A partitioned queue's exact rate, as its workers' claims take it
(protocol 1.8, PROTOCOL.md §7.10): at most ``rate`` claims in any ``per``
ms across every partition. Before a claim from one of its queues, a worker
asks the coordinator on the definition's slot for permits (PERMIT), claims
at most what it was granted, by the grant's deadline (CLAIM's UNTIL), and
gives back what it did not use.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

import redis

from . import calls
from .keyspace import Keyspace

if TYPE_CHECKING:
    from .queue import Connection

log = logging.getLogger("echomq")

RECHECK = 1.0
"""How long, in seconds, a worker trusts what it last read of the definition's ``rate``."""


class Coordinator:
    """The exact rate of one partitioned queue, as its queues' claims ask it."""

    def __init__(self, connection: Connection, name: str) -> None:
        self._connection = connection
        self._keyspace = Keyspace(name)
        self._read_at = float("-inf")
        self.exact = False
        """Whether the definition held an exact rate when last read."""

    async def check(self) -> bool:
        """Whether the definition holds an exact rate: read at most every
        :data:`RECHECK` seconds, so that one set while workers run binds them soon."""
        now = time.monotonic()
        if now - self._read_at >= RECHECK:
            rate = await self._connection.redis.hget(self._keyspace.key("partitions"), "rate")
            self.exact = rate is not None and bytes(rate) != b"0"
            self._read_at = now
        return self.exact

    async def permit(self, count: int) -> tuple[int, int, int, int]:
        """PERMIT for up to ``count``: ``(granted, first, until, wait)``
        (§7.10); ``until`` 0 when there is no exact rate after all."""
        reply = await self._connection.executor.run(calls.permit(self._keyspace, count))
        granted, first, until, wait = (int(n) for n in reply)
        if granted and not until:
            self.exact = False
        return granted, first, until, wait

    async def give_back(self, first: int, end: int) -> None:
        """Give back the permits numbered ``first`` up to ``end`` (not
        included): a claim took fewer jobs. One that cannot be given back
        only lowers the rate until it leaves the window."""
        if first >= end:
            return
        try:
            await self._connection.redis.zrem(self._keyspace.key("permits"), *map(str, range(first, end)))
        except redis.RedisError as err:
            log.debug("unused permits of %s not given back (they lapse): %s", self._keyspace.name, err)
