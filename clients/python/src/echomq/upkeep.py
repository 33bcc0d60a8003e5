"""The upkeep a worker owes every queue it works (PROTOCOL.md §11.3): REAP
and PROMOTE, TRIM of the done, dead and cancelled sets, SETTLE, the
queue's due schedules (§11.6), and for flows (1.6, §7.8) the relay of its
children's notices to their parents and the sweep of its parents whose
children never came. Any number of workers may run it at once: each call
is one atomic transition, and a notice applied twice changes nothing. A
:class:`~echomq.Worker` runs :meth:`Upkeep.once` on its period; an
operator's script may too."""

from __future__ import annotations

import logging
import time
from typing import Any, Awaitable

from . import calls
from .errors import InvalidInput
from .executor import Call
from .keyspace import Keyspace
from .model import JobRef, read_children, read_inspect, read_outcome
from .queue import Queue
from .schedule import fires, read

log = logging.getLogger("echomq.upkeep")

LIMIT = 100
"""Each call moves at most this many jobs: §11.3 finds 100 holds the server under a millisecond."""

REGISTRY_REFRESH = 60.0
"""How often a worker notes its queue in the registry again, in seconds (§11.3)."""

RELAY_STEP = 100
"""The most notices one relay reads, and so the most RESOLVEs it sends (§11.3)."""

SWEEP_GRACE = 60.0
"""How long a flow's parent waits, in seconds, before the sweep looks for
children of its that never came (a producer that died between its FLOW and
its children's ENQUEUEs), and how long before it looks again (§11.3)."""

SWEEP_PARENTS = 10
"""The most parents one sweep looks at."""

LEASE_RETRY = 60.0
"""How long a worker keeps a queue whose upkeep lease the server refused as an
ordinary one, in seconds, before it asks for the lease again (§11.3)."""


def read_notice(fields: dict[bytes, bytes]) -> tuple[Keyspace, Call] | None:
    """A notice's RESOLVE and the parent's queue (§7.8): None when its
    fields do not read as a notice."""
    try:
        parent = JobRef.parse(fields[b"parent"])
        child = JobRef.parse(fields[b"child"])
        incarnation = fields[b"incarnation"]
        outcome = read_outcome(fields[b"outcome"])
        if not incarnation.isdigit() or outcome is None:
            return None
        ks = Keyspace(parent.queue)
        return ks, calls.resolve(ks, parent.id, int(incarnation), child, outcome, fields.get(b"result"))
    except (KeyError, InvalidInput):
        return None


class Upkeep:
    """One queue's upkeep, with the reaper's default max attempts. With a
    ``keeper`` (a worker's id), a partitioned queue's queue is kept by one
    of its workers at a time, under its upkeep lease (§11.3)."""

    def __init__(self, queue: Queue, max_attempts: int, period: float, keeper: str | None = None) -> None:
        self.queue = queue
        self.keyspace = queue.keyspace
        self.executor = queue.executor
        self.max_attempts = max_attempts
        self.period = period
        self.keeper = keeper
        """The worker whose id its upkeep lease holds while it keeps the queue."""
        self.sweep_grace = SWEEP_GRACE
        """How long a parent waits before the sweep looks at it, in seconds."""
        self._noted_at: float | None = None
        self._failing: set[str] = set()
        self._held = False
        self._refused_until: float | None = None

    @property
    def leased(self) -> bool:
        """Whether one worker at a time keeps the queue, under its lease: a
        partitioned queue's queue, kept by a worker, the lease not refused
        (for a minute after a refusal)."""
        refused = self._refused_until is not None and time.monotonic() < self._refused_until
        return self.keeper is not None and self.queue.coordinator is not None and not refused

    async def keeps(self) -> bool:
        """Whether this worker keeps the queue this period (§11.3): it renews
        the lease it held last period (PEXPIRE), then asks for it (``SET …
        NX PX … GET``): none (taken) or its own id, it keeps the queue;
        another's, it does not. A queue any worker keeps is kept; so is
        one whose lease could not be asked for (the lease saves work and
        decides nothing), and one whose ``SET`` the server refused (an
        older server, an ACL without the lease's selector, memory, a
        replica: said once), kept as an ordinary queue for
        :data:`LEASE_RETRY` seconds before the lease is asked for again."""
        if not self.leased:
            return True
        key, ms = self.keyspace.key("upkeep"), max(1, round(3 * self.period * 1000))
        pipe = self.executor.redis.pipeline(transaction=False)
        if self._held:
            pipe.pexpire(key, ms)
        # get=True: redis-py's SET callback would read any answer but OK as False.
        pipe.execute_command("SET", key, self.keeper, "NX", "PX", ms, "GET", get=True)
        try:
            answer = (await pipe.execute(raise_on_error=False))[-1]
        except Exception as err:  # the connection's: nothing known, keep it
            log.debug("the upkeep lease of %s was not asked for: %s", self.keyspace.name, err)
            return True
        if isinstance(answer, Exception):
            if self._refused_until is None:
                log.warning("the server refused the upkeep lease of %s (%s): this worker keeps the queue every "
                            "period, and asks again each minute (the lease's ACL selector: SECURITY.md)",
                            self.keyspace.name, answer)
            self._refused_until, self._held = time.monotonic() + LEASE_RETRY, False
            return True
        if self._refused_until is not None:
            log.info("the server grants the upkeep lease of %s again", self.keyspace.name)
            self._refused_until = None
        holder = answer.decode() if isinstance(answer, bytes) else answer
        self._held = holder is None or holder == self.keeper
        return self._held

    async def give_back(self) -> None:
        """Give back the upkeep lease this worker holds, so that another
        takes it at its next period rather than when it runs out: GET, then
        DEL while it is still its own (§11.3), whatever this worker last
        heard (a period cut short may have taken it). Errors are let go:
        the lease runs out by itself."""
        if not self.leased:
            return
        self._held = False
        key = self.keyspace.key("upkeep")
        try:
            holder = await self.executor.redis.get(key)
            if holder is not None and holder.decode() == self.keeper:
                await self.executor.redis.delete(key)
        except Exception as err:
            log.debug("the upkeep lease of %s was not given back: %s", self.keyspace.name, err)

    async def once(self, warned: set[str] | None = None) -> None:
        """One period's upkeep (§11.3): REAP, PROMOTE, TRIM ×3 and SETTLE in
        one round trip, each again while a call is full (for at most a
        period); the flows' relay while ``<q>notices`` holds any (again
        while a read was full, for at most a period) and their sweep when
        a parent waited past :attr:`sweep_grace`; then the due schedules.
        Nothing while another worker holds the queue's upkeep lease
        (:meth:`keeps`)."""
        if not await self.keeps():
            return
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
        await self._flows(deadline)
        await self._fire_schedules(warned if warned is not None else set())

    async def _flows(self, deadline: float) -> None:
        """The relay while ``<q>notices`` holds any, and the sweep when the
        head of ``<q>waiting`` waited past the grace (§11.3), read first in
        one round trip; a read that failed leaves its part to run."""
        pipe = self.executor.redis.pipeline(transaction=False)
        pipe.time()
        pipe.xlen(self.keyspace.key("notices"))
        pipe.zrange(self.keyspace.key("waiting"), 0, 0, withscores=True)
        clock, notices, head = await pipe.execute(raise_on_error=False)
        relaying = not isinstance(notices, int) or notices > 0
        sweeping = True
        if isinstance(clock, (list, tuple)) and isinstance(head, list):
            now = int(clock[0]) * 1000 + int(clock[1]) // 1000
            sweeping = bool(head) and head[0][1] <= now - self.sweep_grace * 1000
        if relaying:
            await self._part("relay", self._relay_until(deadline))
        if sweeping:
            await self._part("sweep", self.sweep(self.sweep_grace))

    async def _relay_until(self, deadline: float) -> None:
        """Relay again at once while a read was full, for at most a period,
        each read after the last: notices that stay (refused, unreadable)
        hold up none behind them. The next period reads from the start."""
        read, last = await self._relay("-")
        while read == RELAY_STEP and last is not None and time.monotonic() < deadline:
            read, last = await self._relay(b"(" + last)

    async def _part(self, name: str, work: Awaitable[Any]) -> None:
        """Run one part; a failure is said when it starts and when it ends, not each period."""
        try:
            await work
        except Exception as err:
            if name not in self._failing:
                self._failing.add(name)
                log.warning("the %s of %s failed: %s; trying again each period", name, self.keyspace.name, err)
            else:
                log.debug("the %s of %s failed again: %s", name, self.keyspace.name, err)
            return
        if name in self._failing:
            self._failing.discard(name)
            log.info("the %s of %s works again", name, self.keyspace.name)

    async def relay(self) -> int:
        """Carry up to :data:`RELAY_STEP` of the queue's notices to their
        parents (§11.3): a RESOLVE each in its parent's queue, one round trip
        per parent queue, then ``XDEL`` of those answered (``1`` or ``0``:
        either way the parent has heard). A refused RESOLVE leaves its
        notice for the next period, said in the log; an entry that does not
        read as a notice stays too, said each time, for an operator. How
        many notices it read."""
        read, _ = await self._relay("-")
        return read

    async def _relay(self, start: str | bytes, keyspace: Keyspace | None = None) -> tuple[int, bytes | None]:
        """:meth:`relay` of the notices from ``start`` on (of ``keyspace``'s
        queue, this one's by default): how many it read, and the last one's id."""
        keyspace = keyspace or self.keyspace
        key = keyspace.key("notices")
        entries = await self.executor.redis.xrange(key, start, "+", count=RELAY_STEP)
        by_queue: dict[str, list[tuple[bytes, Call]]] = {}
        for entry_id, fields in entries:
            found = read_notice(fields)
            if found is None:
                log.warning("a notice that does not read as one stays in %r (entry %s): delete it by hand "
                            "once its parent is mended", key.decode("utf-8", "replace"), entry_id.decode())
                continue
            parent_queue, call = found
            by_queue.setdefault(parent_queue.name, []).append((entry_id, call))
        answered: list[bytes] = []
        for parent_queue_name, notices in by_queue.items():
            replies = await self.executor.run_many([call for _, call in notices])
            for (entry_id, call), reply in zip(notices, replies):
                if isinstance(reply, Exception):
                    log.warning("a child's notice in %s could not reach its parent in %s (%s): it stays, and "
                                "is tried again: %s", keyspace.name, parent_queue_name,
                                call.args[2].decode("utf-8", "replace"), reply)
                else:
                    answered.append(entry_id)
        if answered:
            await self.executor.redis.xdel(key, *answered)
        return len(entries), entries[-1][0] if entries else None

    async def sweep(self, grace: float = SWEEP_GRACE) -> int:
        """Look at up to :data:`SWEEP_PARENTS` of the queue's parents that
        waited longer than ``grace`` seconds since they began to wait (or
        were last looked at): each open child with no record in its queue
        is resolved ``gone``, and one that ended but whose parent never
        heard (a speaker that did not link it, a lost notice) as it ended;
        a child in any other state is left to tell its parent itself. Then
        the parent's score in ``<q>waiting`` moves to now, so the next sweep
        looks at others (§11.3). How many children it resolved."""
        waiting = self.keyspace.key("waiting")
        pipe = self.executor.redis.pipeline(transaction=False)
        pipe.time()
        pipe.zrange(waiting, 0, SWEEP_PARENTS - 1, withscores=True)
        (seconds, micros), head = await pipe.execute()
        now = int(seconds) * 1000 + int(micros) // 1000
        resolved = 0
        for member, score in head:
            if score > now - grace * 1000:
                break
            resolved += await self._sweep_one(member.decode("utf-8", "surrogateescape"))
            await self.executor.redis.zadd(waiting, {member: now}, xx=True, gt=True)
        return resolved

    async def _sweep_one(self, parent: str) -> int:
        """One parent's sweep. Its open children's queues' notices are
        relayed first: a child done, its notice on its way and its record
        already trimmed by retention, is told as done (with its result),
        never taken for gone."""
        children = read_children(await self.executor.run(calls.children(self.keyspace, parent)))
        if children is None:
            return 0
        for name in sorted({child.ref.queue for child in children.children if child.open}):
            read, last = await self._relay("-", Keyspace(name))
            while read == RELAY_STEP and last is not None:
                read, last = await self._relay(b"(" + last, Keyspace(name))
        children = read_children(await self.executor.run(calls.children(self.keyspace, parent)))
        if children is None:
            return 0
        resolved = 0
        for child in children.children:
            if not child.open:
                continue
            ks = Keyspace(child.ref.queue)
            job = read_inspect(child.ref.id, await self.executor.run(calls.one_id("inspect", ks, child.ref.id)))
            if job is None:
                outcome, result = "gone", None
            elif job.state in ("done", "dead", "cancelled"):
                outcome, result = job.state, job.result if job.state == "done" else None
            else:
                continue  # it tells its parent itself when it ends
            call = calls.resolve(self.keyspace, parent, children.incarnation, child.ref, outcome, result)
            if await self.executor.run(call) == 1:
                log.info("the sweep told parent %s of %s that child %s is %s", parent, self.keyspace.name,
                         child.ref, outcome)
                resolved += 1
        return resolved

    async def _fire_schedules(self, warned: set[str]) -> None:
        reply = await self.executor.run(calls.schedules(self.keyspace, due=True, limit=100))
        now = int(reply[0])
        for name_raw, definition, due in reply[1:]:
            name = name_raw.decode("utf-8", "replace")
            schedule = read(definition)
            if schedule is None:
                if name not in warned:
                    warned.add(name)
                    log.warning("schedule %r of %s: its definition does not read as an `every` or a `cron` one "
                                "this host knows (%r); left alone", name, self.keyspace.name,
                                definition.partition(b"\n")[0].decode("utf-8", "replace"))
                continue
            for call in fires(self.keyspace, name, schedule, int(due), now):
                if await self.executor.run(call) == -1:
                    break
