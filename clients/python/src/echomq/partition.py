"""Partitioned queues (protocol 1.8, PROTOCOL.md §7.10): one logical queue
over N ordinary queues, its partitions, whose names put each one's Redis
Cluster slot in its own N-th of the 16,384.

A job's partition is ``CRC16(id) mod N``, so any tool finds a job from its
id (:meth:`Partitioned.partition_of`). A job with a group goes to the
partition its group's name routes to (the group's cap, rate and order hold
exactly), one with a unique key to the key's (the key is exact), its id
minted to match. What is lost: FIFO and priority hold within a partition,
not across them.

    orders = await Partitioned.create(connection, "orders", 12)   # or .open
    enqueued = await orders.enqueue(b"...", group="tenant-7")
    info = await orders.partition_of(enqueued.id).inspect(enqueued.id)
"""

from __future__ import annotations

import asyncio
from dataclasses import fields
from typing import TYPE_CHECKING, Any, Awaitable, Iterable, TypeVar

import redis

from .calls import Duration, payload as payload_bytes, to_ms
from .errors import DataError, EchoMQError, InvalidInput, KeyTypeError
from .flows import ChildJobs
from .ids import check_id, child_id, mint
from .keyspace import check_queue
from .model import JobInfo, OnFailure, Stats
from .queue import _listing
from .permits import Coordinator

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .calls import EnqueueOptions
    from .model import Config, Enqueued
    from .queue import Connection, Queue

T = TypeVar("T")

MAX_PARTITIONS = 1024
"""The most partitions a queue may have: each then spans 16 slots."""
MAX_PARTITIONED_NAME = 240
"""The longest partitioned queue's name, in bytes: its partitions' names stay queue names."""
SLOTS = 16384
ROUTING = "crc16"
MAX_EXACT_CONCURRENCY = 100_000
"""The highest exact concurrency (:meth:`Partitioned.exact_concurrency`)."""
RUN = 1000
"""The most jobs :meth:`Partitioned.enqueue_many` puts in one partition in a row."""


def _table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
        table.append(crc & 0xFFFF)
    return table


_CRC = _table()


def crc16(data: bytes) -> int:
    """CRC16-XMODEM, the checksum Redis Cluster hashes keys with."""
    crc = 0
    for byte in data:
        crc = ((crc << 8) & 0xFFFF) ^ _CRC[((crc >> 8) ^ byte) & 0xFF]
    return crc


def queue_slot(queue: str) -> int:
    """The Cluster slot of every key of queue ``queue`` (its ``{queue}`` hashtag)."""
    return crc16(queue.encode()) % SLOTS


def partition_index(key: str | bytes, count: int) -> int:
    """The partition, of ``count``, that routing by ``key`` (an id, a group, a unique key) names."""
    return crc16(key.encode() if isinstance(key, str) else key) % max(count, 1)


def partition_name(name: str, k: int, count: int) -> str:
    """Partition ``k`` of ``count`` of ``name``: ``<name>~<k>~<s>``, ``s`` the
    least number whose name's slot lies in the ``k``-th of ``count`` equal
    ranges of the 16,384 slots."""
    low, high = k * SLOTS // count, (k + 1) * SLOTS // count
    s = 0
    while not low <= queue_slot(f"{name}~{k}~{s}") < high:
        s += 1
    return f"{name}~{k}~{s}"


def _definition_key(name: str) -> str:
    return "emq:{" + name + "}:partitions"


def _check(name: str, count: int) -> None:
    check_queue(name)
    if len(name.encode()) > MAX_PARTITIONED_NAME:
        raise InvalidInput(f"{name!r}: a partitioned queue's name is at most {MAX_PARTITIONED_NAME} bytes")
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_PARTITIONS:
        raise InvalidInput(f"a queue has 1 to {MAX_PARTITIONS} partitions, not {count!r}")


class Partitioned:
    """One logical queue over its partitions (see the module)."""

    def __init__(self, name: str, partitions: list[Queue], exact: tuple[int, int] | None = None,
                 running_cap: int | None = None) -> None:
        self.name = name
        self.partitions = partitions
        """Partition ``k`` is the ``k``-th: each an ordinary :class:`~echomq.Queue`."""
        self.exact = exact
        """Its exact rate across the partitions, ``(claims, per_ms)``, as the
        definition held it when opened (PROTOCOL.md §7.10); None for none."""
        self.running_cap = running_cap
        """Its exact concurrency across the partitions, the most of its jobs
        running at once (:meth:`exact_concurrency`), as the definition held it
        when opened (PROTOCOL.md §7.10); None for none."""

    @staticmethod
    async def create(connection: Connection, name: str, count: int) -> Partitioned:
        """Partition queue ``name`` over ``count`` queues, or open it when it
        is partitioned so already (the definition is written once; a second
        creator of the same count writes the same). Refused, nothing written
        (:class:`InvalidInput`): a bad name or count, ``name`` partitioned
        another way, or an ordinary queue of that name holding jobs."""
        _check(name, count)
        prefix = "emq:{" + name + "}:"
        held = await asyncio.gather(*(connection.redis.exists(prefix + state)
                                      for state in ("pending", "active", "delayed")))
        if any(held):
            raise InvalidInput(f"{name!r} is an ordinary queue holding jobs: partition another name")
        key = _definition_key(name)
        await _guarded(connection.redis.hsetnx(key, "count", str(count)), key)
        found = await Partitioned.open(connection, name)
        if len(found.partitions) != count:
            raise InvalidInput(f"{name!r} is partitioned {len(found.partitions)} ways, not {count}")
        fields = {"routing": ROUTING, "protocol": "1.8"}
        fields.update({f"queue:{k}": queue.name for k, queue in enumerate(found.partitions)})
        await connection.redis.hset(key, mapping=fields)
        return found

    @staticmethod
    async def open(connection: Connection, name: str) -> Partitioned:
        """The partitioned queue ``name`` as its definition says; :class:`InvalidInput`
        when it is not partitioned, :class:`~echomq.errors.DataError` for a
        malformed definition, :class:`EchoMQError` for a routing this speaker
        does not know."""
        found = await Partitioned.find(connection, name)
        if found is None:
            raise InvalidInput(f"{name!r} is not a partitioned queue (no {_definition_key(name)})")
        return found

    @staticmethod
    async def find(connection: Connection, name: str) -> Partitioned | None:
        """The partitioned queue ``name``, or None when it is not partitioned."""
        check_queue(name)
        key = _definition_key(name)
        raw = await _guarded(connection.redis.hgetall(key), key)
        if not raw:
            return None
        fields = {bytes(f).decode(errors="replace"): bytes(v).decode(errors="replace") for f, v in raw.items()}
        text = fields.get("count", "")
        if not text.isdecimal() or not 1 <= int(text) <= MAX_PARTITIONS:
            raise DataError(f"{key}: count {text!r} is not 1 to {MAX_PARTITIONS}")
        routing = fields.get("routing", ROUTING)
        if routing != ROUTING:
            raise EchoMQError(f"{key}: routing {routing!r} is unknown to this speaker (it routes by {ROUTING})")
        count = int(text)
        # As PERMIT reads it; a malformed one is none here, and its claims are refused (EMQDATA).
        rate, per = fields.get("rate", ""), fields.get("per", "")
        exact = None
        if rate.isdecimal() and per.isdecimal() and 1 <= int(rate) <= 100_000 and 100 <= int(per) <= 86_400_000:
            exact = (int(rate), int(per))
        cap = fields.get("concurrency", "")
        running_cap = int(cap) if cap.isdecimal() and 1 <= int(cap) <= MAX_EXACT_CONCURRENCY else None
        partitions = []
        coordinator = Coordinator(connection, name)
        for k in range(count):
            queue = fields.get(f"queue:{k}") or partition_name(name, k, count)
            try:
                partitions.append(await connection.queue(queue))
            except InvalidInput as err:
                raise DataError(f"{key}: {err}") from None
            partitions[-1].coordinator = coordinator
        return Partitioned(name, partitions, exact, running_cap)

    async def worked(self, connection: Connection) -> list[Queue]:
        """Every queue a worker of the partitioned queue works: its
        partitions, then the ordinary queue of its own name, where a speaker
        that does not know protocol 1.8 enqueues (PROTOCOL.md §7.10).
        Each carries the queue's coordinator, which a Worker's claims ask
        first when an exact rate or concurrency is set (:meth:`exact_rate`,
        :meth:`exact_concurrency`), and by which the Workers of each keep
        its upkeep one at a time, under its upkeep lease (§11.3)."""
        ordinary = await connection.queue(self.name)
        ordinary.coordinator = self.partitions[0].coordinator
        return [*self.partitions, ordinary]

    async def stats(self) -> Stats:
        """How many jobs it holds in each state: its partitions' and the
        ordinary queue of its name's, summed."""
        each = [await queue.stats() for queue in await self._all()]
        return Stats(*(sum(getattr(s, f.name) for s in each) for f in fields(Stats)))

    async def jobs(self, state: str, *, limit: int = 100, start: int = 0) -> list[JobInfo]:
        """Up to ``limit`` (1 to 1000) jobs of one state from the
        ``start``-th, each read whole, partition by partition (then the
        ordinary queue of its name), each in its set's order: there is no
        order across partitions, and ``start`` counts across them all, so
        that pages follow one another."""
        _listing(state, limit, start)
        found: list[JobInfo] = []
        for queue in await self._all():
            size = int(await queue.connection.redis.zcard(queue.keyspace.key(state)))
            if start >= size:
                start -= size
                continue
            found += await queue.jobs(state, limit=limit - len(found), start=start)
            start = 0
            if len(found) >= limit:
                break
        return found

    async def dead(self, *, limit: int = 100, start: int = 0) -> list[JobInfo]:
        """:meth:`jobs` of ``dead``: each with its last error."""
        return await self.jobs("dead", limit=limit, start=start)

    async def retry_dead(self, *, limit: int = 1000) -> int:
        """Send up to ``limit`` dead jobs back to pending (a flow's parent
        with children still open to waiting), partition by
        partition, oldest first in each: how many went."""
        _listing("dead", limit, 0)
        retried = 0
        for queue in await self._all():
            if retried >= limit:
                break
            retried += await queue.retry_dead(limit=limit - retried)
        return retried

    async def delete(self, job_ids: Iterable[str], *, state: str) -> int:
        """Delete the jobs ``job_ids`` of ``state``, each in its partition
        (:meth:`Queue.delete`): how many were deleted."""
        by_partition: dict[int, list[str]] = {}
        for job_id in job_ids:
            by_partition.setdefault(self.index_of(job_id), []).append(job_id)
        return sum([await self.partitions[k].delete(ids, state=state) for k, ids in by_partition.items()])

    async def _all(self) -> list[Queue]:
        """Its partitions, then the ordinary queue of its name."""
        return await self.worked(self.partitions[0].connection)

    async def exact_rate(self, rate: int | None, per: Duration = 1.0) -> None:
        """Hold the queue to at most ``rate`` claims in any ``per`` seconds,
        counted over every partition, or lift it (None): written to the
        definition, which workers read at least once a second. Each claim
        then asks the queue's coordinator for permits first (§7.10): one more
        call a claim, and a busy queue runs up to a tenth below the rate,
        never above it. :class:`InvalidInput` for a rate outside 1 to 100000
        or a period outside 100 ms to a day (nothing sent; the permits' hold
        is a tenth of it)."""
        key = _definition_key(self.name)
        if rate is None:
            await self.partitions[0].connection.redis.hset(key, "rate", "0")
            self.exact = None
            return
        per_ms = to_ms(per)
        if isinstance(rate, bool) or not 1 <= rate <= 100_000 or not 100 <= per_ms <= 86_400_000:
            raise InvalidInput(f"an exact rate is 1 to 100000 claims per 100 ms to a day, not {rate} per {per!r}")
        await self.partitions[0].connection.redis.hset(key, mapping={"rate": str(rate), "per": str(per_ms)})
        self.exact = (rate, per_ms)

    async def exact_concurrency(self, cap: int | None) -> None:
        """Hold the queue to at most ``cap`` of its jobs running at once,
        counted over every partition, or lift it (None): written to the
        definition (``concurrency``, as the Rust host's
        ``Partitioned::exact_concurrency`` writes it), which workers read at
        least once a second; the jobs they claimed before are not counted.
        Each claimed job then holds a running permit from the queue's
        coordinator (§7.10), renewed before its lease and given back at its
        end: a PERMIT a claim, a RENEW a round of lease renewals, and a ZREM
        a batch of jobs ended. Independent of the partitions' own limits
        (:meth:`configure`). :class:`InvalidInput` for a cap outside 1 to
        100000 (nothing sent). Read back as :attr:`running_cap`."""
        key = _definition_key(self.name)
        if cap is None:
            await self.partitions[0].connection.redis.hset(key, "concurrency", "0")
            self.running_cap = None
            return
        if isinstance(cap, bool) or not isinstance(cap, int) or not 1 <= cap <= MAX_EXACT_CONCURRENCY:
            raise InvalidInput(f"an exact concurrency is 1 to {MAX_EXACT_CONCURRENCY} jobs, not {cap!r}")
        await self.partitions[0].connection.redis.hset(key, "concurrency", str(cap))
        self.running_cap = cap

    async def running(self) -> int:
        """How many of its jobs hold running permits now under its exact
        concurrency (:meth:`exact_concurrency`): the permits scored after the
        server's now (one that lapsed and was not trimmed yet runs no more);
        0 with none set. As the Rust host's ``Partitioned::running``."""
        redis = self.partitions[0].connection.redis
        seconds, micros = await redis.time()
        now = int(seconds) * 1000 + int(micros) // 1000
        return int(await redis.zcount("emq:{" + self.name + "}:running", f"({now}", "+inf"))

    def index_of(self, job_id: str) -> int:
        """The index of the partition that holds job ``job_id``."""
        return partition_index(check_id(job_id), len(self.partitions))

    def partition_of(self, job_id: str) -> Queue:
        """The partition that holds job ``job_id``: read, cancel or retry it there."""
        return self.partitions[self.index_of(job_id)]

    def partition_for(self, key: str) -> Queue:
        """The partition that routing by ``key`` names."""
        return self.partitions[partition_index(key, len(self.partitions))]

    def mint_in(self, k: int) -> str:
        """A new id of partition ``k``: minted until ``CRC16(id) mod N`` is ``k``."""
        while True:
            job_id = mint()
            if partition_index(job_id, len(self.partitions)) == k % len(self.partitions):
                return job_id

    def place(self, job_id: str | None = None, *, group: str | None = None,
              unique: str | bytes | None = None) -> str:
        """The id a job takes, which names its partition: ``job_id``; else one
        minted in the partition its group routes to, else its unique key's;
        else a new id. :class:`InvalidInput` for a given id of another
        partition than its group's or key's (nothing sent)."""
        key = group if group is not None else unique
        if key is None:
            if job_id is None:
                return mint()
            check_id(job_id)
            return job_id
        k = partition_index(key, len(self.partitions))
        if job_id is None:
            return self.mint_in(k)
        if self.index_of(job_id) != k:
            raise InvalidInput(f"job {job_id} belongs to partition {self.index_of(job_id)}, "
                               f"not {k} where {key!r} routes")
        return job_id

    def job_child(self, children: ChildJobs, parent: str, payload: bytes, *, on_failure: OnFailure = "fail",
                  id: str | None = None, **options: Any) -> ChildJobs:
        """``children`` and one more in this partitioned queue, for the
        running job ``parent`` to :meth:`echomq.Job.wait_for`: its id, unless
        given, derived from ``parent``, its place among ``children`` and its
        payload (:func:`echomq.ids.child_id` of this queue's name), so that a
        handler that runs again names the same child; with a ``group``, of
        ``<name>~<salt>`` for the first salt from 0 whose id lies in the
        group's partition. The Rust host's ``Partitioned::job_child`` derives
        the same ids. Returns the children, for the next one;
        :class:`InvalidInput` as :meth:`place` and :meth:`ChildJobs.child`."""
        check_id(parent)
        body = payload_bytes(payload)
        group = options.get("group")
        if id is not None:
            job_id = self.place(id, group=group)
        elif group is None:
            job_id = child_id(parent, len(children), self.name, body)
        else:
            k, salt = partition_index(group, len(self.partitions)), 0
            while self.index_of(job_id := child_id(parent, len(children), f"{self.name}~{salt}", body)) != k:
                salt += 1
        return children.child(self.partition_of(job_id).name, body, on_failure=on_failure, id=job_id, **options)

    async def enqueue(self, payload: bytes, *, id: str | None = None,
                      **options: Unpack[EnqueueOptions]) -> Enqueued:
        """Enqueue one job in the partition :meth:`place` names (the options
        as :meth:`Queue.enqueue`'s)."""
        job_id = self.place(id, group=options.get("group"), unique=options.get("unique"))
        return await self.partition_of(job_id).enqueue(payload, id=job_id, **options)

    async def enqueue_many(self, payloads: Iterable[bytes], **options: Unpack[EnqueueOptions]) -> list[Enqueued]:
        """Many jobs, the same ``options`` for each: with a group or a unique
        key, all in its partition; else in runs of up to 1000, each run in
        one partition (one ENQUEUEMANY, as one queue's would be), the runs
        spread evenly. Each job's outcome, in order."""
        jobs = list(payloads)
        if options.get("group") is not None or options.get("unique") is not None:
            first = self.place(group=options.get("group"), unique=options.get("unique"))
            runs = [(self.index_of(first), jobs)]
        else:
            runs = [(self.index_of(mint()), jobs[start:start + RUN]) for start in range(0, len(jobs), RUN)]
        sent = []
        for k, run in runs:
            pairs = [(self.mint_in(k), payload) for payload in run]
            sent.append(self.partitions[k].enqueue_many(pairs, **options))
        return [enqueued for answered in await asyncio.gather(*sent) for enqueued in answered]

    async def configure(self, *, paused: bool | None = None, concurrency: int | None = None,
                        rate: int | None = None, per: Duration | None = None,
                        **retention: Duration) -> list[Config]:
        """Change every partition's settings (CONFIG on each, at once; not one
        atomic step), as :meth:`Queue.configure`; a ``concurrency`` or a
        ``rate`` split statically, partition ``k`` of N taking ``n // N`` and
        one more while ``k < n % N``. :class:`InvalidInput` for one under N
        (a partition would get none), nothing sent. The ordinary queue of its
        name is left as it is (:meth:`pause` pauses it too). A partition's
        failure is raised once every partition was tried, noted with those
        changed all the same (the same change is safe to make again)."""
        count = len(self.partitions)

        def split(n: int | None, k: int, what: str) -> int | None:
            if not n:  # None leaves it, 0 removes it: the same for every partition
                return n
            if n < count:
                raise InvalidInput(f"a {what} of {n} cannot be split over {count} partitions: give at least {count}")
            return n // count + (1 if k < n % count else 0)

        shares = [(split(concurrency, k, "concurrency"), split(rate, k, "rate")) for k in range(count)]
        answers = await asyncio.gather(*(
            queue.configure(paused=paused, concurrency=c, rate=r, per=per, **retention)
            for queue, (c, r) in zip(self.partitions, shares)), return_exceptions=True)
        failed = [answer for answer in answers if isinstance(answer, BaseException)]
        if failed:
            changed = [queue.name for queue, answer in zip(self.partitions, answers)
                       if not isinstance(answer, BaseException)]
            if changed:
                failed[0].add_note(f"changed on {len(changed)} of its {count} partitions ({', '.join(changed)}) "
                                   "all the same")
            raise failed[0]
        return [answer for answer in answers if not isinstance(answer, BaseException)]

    async def pause(self) -> list[Config]:
        """Pause every partition's claims, then the ordinary queue of its
        name's, which its workers work too; each partition's settings after."""
        return await self._switch(True)

    async def resume(self) -> list[Config]:
        """Resume every partition's claims, then the ordinary queue of its name's."""
        return await self._switch(False)

    async def _switch(self, paused: bool) -> list[Config]:
        settings = await self.configure(paused=paused)
        ordinary = (await self._all())[-1]
        try:
            await ordinary.configure(paused=paused)
        except Exception as err:
            err.add_note(f"its {len(self.partitions)} partitions were changed all the same")
            raise
        return settings


async def _guarded(pending: Awaitable[T], key: str) -> T:
    """A plain command on the definition, a key of another type said so."""
    try:
        return await pending
    except redis.ResponseError as err:
        if str(err).startswith("WRONGTYPE"):
            raise KeyTypeError(f"{key} holds another type: {err}") from None
        raise
