"""The upkeep a worker owes every queue it works (PROTOCOL.md §11.3): REAP
and PROMOTE, TRIM of the done, dead and cancelled sets, SETTLE, and the
queue's due schedules (§11.6). Any number of workers may run it at once:
each call is one atomic transition. A :class:`~echomq.Worker` runs
:meth:`Upkeep.once` on its period; an operator's script may too."""

from __future__ import annotations

import logging
import time

from . import calls
from .queue import Queue
from .schedule import Every, fires

log = logging.getLogger("echomq.upkeep")

LIMIT = 100
"""Each call moves at most this many jobs: §11.3 finds 100 holds the server under a millisecond."""

REGISTRY_REFRESH = 60.0
"""How often a worker notes its queue in the registry again, in seconds (§11.3)."""


class Upkeep:
    """One queue's upkeep, with the reaper's default max attempts."""

    def __init__(self, queue: Queue, max_attempts: int, period: float) -> None:
        self.queue = queue
        self.keyspace = queue.keyspace
        self.executor = queue.executor
        self.max_attempts = max_attempts
        self.period = period
        self._noted_at: float | None = None

    async def once(self, warned: set[str] | None = None) -> None:
        """One period's upkeep (§11.3): REAP, PROMOTE, TRIM ×3 and SETTLE in
        one round trip, each again while a call is full (for at most a
        period), then the due schedules."""
        ks, limit = self.keyspace, LIMIT
        # A worked queue stays in the registry (§11.3): once a minute is
        # plenty for a last-seen time, not a round trip every period.
        now = time.monotonic()
        if self._noted_at is None or now - self._noted_at >= REGISTRY_REFRESH:
            await self.queue.register(again=True)
            self._noted_at = now
        sweeps = {
            "reap": calls.sweep("reap", ks, limit, first=[str(self.max_attempts).encode()]),
            "promote": calls.sweep("promote", ks, limit),
            "trim done": calls.sweep("trim", ks, limit, state="done"),
            "trim dead": calls.sweep("trim", ks, limit, state="dead"),
            "trim cancelled": calls.sweep("trim", ks, limit, state="cancelled"),
            "settle": calls.sweep("settle", ks, limit),
        }
        deadline = time.monotonic() + self.period
        names = list(sweeps)
        while names:
            replies = await self.executor.run_many([sweeps[n] for n in names])
            full = []
            for name, reply in zip(names, replies):
                if isinstance(reply, Exception):
                    log.warning("%s on %s failed: %s", name.upper(), ks.name, reply)
                    continue
                moved = sum(reply) if name == "reap" else reply[1] if name == "settle" else reply
                if moved >= limit:
                    full.append(name)
            names = full if time.monotonic() < deadline else []
        await self._fire_schedules(warned if warned is not None else set())

    async def _fire_schedules(self, warned: set[str]) -> None:
        reply = await self.executor.run(calls.schedules(self.keyspace, due=True, limit=100))
        now = int(reply[0])
        for name_raw, definition, due in reply[1:]:
            name = name_raw.decode("utf-8", "replace")
            every = Every.read(definition)
            if every is None:
                if name not in warned:
                    warned.add(name)
                    log.warning("schedule %r of %s: this host reads only `every` definitions; left alone",
                                name, self.keyspace.name)
                continue
            for call in fires(self.keyspace, name, every, int(due), now):
                if await self.executor.run(call) == -1:
                    break
