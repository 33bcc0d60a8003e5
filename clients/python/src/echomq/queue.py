"""The producer's and operator's face: :class:`Queue` (asyncio) and
:class:`SyncQueue` (for producers that are not async), each over a
:class:`Connection` that picked its executor and checked the protocol's
version before anything was written.

    conn = await echomq.connect("redis://127.0.0.1:6379")
    queue = await conn.queue("emails")
    job = await queue.enqueue_json({"to": "a@example.com"}, attempts=3)
    done = await queue.wait(job.id, timeout=30)
"""

from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING, Any, AsyncIterator, Iterable, Iterator, Mapping

import redis
import redis.asyncio

from . import _protocol, calls, flows, tracing
from .errors import EchoMQError, InvalidInput, NoJobError, OtherMajor, StateError
from .executor import AsyncExecutor, Call, Kind, SyncExecutor, detect, detect_sync, parse_version
from .flows import Flow
from .groups import GroupInfo, GroupPage
from .ids import check_id, mint
from .keyspace import REGISTRY, Keyspace
from .model import (Child, Children, Config, Enqueued, Event, FlowAdded, JobInfo, JobRef, Stats, read_children,
                    read_inspect, read_stats)
from .cron import CronError
from .schedule import Cron, Every, Schedule, read

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .permits import Coordinator

    from .calls import EnqueueOptions

log = logging.getLogger("echomq")

FINISHING_EVENTS = (b"completed", b"dead", b"cancelled")

STATES = ("pending", "active", "delayed", "done", "dead", "cancelled", "waiting")
FINISHED = ("done", "dead", "cancelled")
SWEEP_STEP = 100
"""How many jobs each PURGE or DRAIN call of :meth:`Queue.purge`, :meth:`Queue.drain` and
:meth:`Queue.delete_queue` deletes at most."""
"""The seven states, each a set of the queue's (§2)."""

LIST_MOST = 1000
"""The most jobs one :meth:`Queue.jobs` reads."""


def _listing(state: str, limit: int, start: int) -> tuple[str, int, int]:
    """ZRANGE's bounds for :meth:`Queue.jobs`, checked."""
    if state not in STATES:
        raise InvalidInput(f"{state!r} is not a state: one of {', '.join(STATES)}")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= LIST_MOST:
        raise InvalidInput(f"limit must be 1 to {LIST_MOST}, not {limit!r}")
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise InvalidInput(f"start must be 0 or more, not {start!r}")
    return state, start, start + limit - 1


def _decoded(ids: list[bytes]) -> list[str]:
    return [raw.decode("utf-8", "surrogateescape") for raw in ids]


def _inspected(ids: list[str], replies: list[Any]) -> list[JobInfo]:
    """The jobs INSPECT read; one deleted since it was listed is left out."""
    found = []
    for job_id, reply in zip(ids, replies):
        if isinstance(reply, Exception):
            raise reply
        info = read_inspect(job_id, reply)
        if info is not None:
            found.append(info)
    return found


def _retried(replies: list[Any]) -> int:
    """How many RETRYs took their job; one no longer dead (retried or deleted meanwhile) is passed over."""
    done = 0
    for reply in replies:
        if isinstance(reply, (StateError, NoJobError)):
            continue
        if isinstance(reply, Exception):
            raise reply
        done += 1
    return done


def _purge_age(state: str, age: calls.Duration) -> list[bytes]:
    """PURGE's first arguments for ``state`` and ``age``, checked: a finished
    state, an age of 0 or more."""
    if state not in FINISHED:
        raise InvalidInput(f"purge takes done, dead or cancelled jobs, not {state!r}")
    return [calls.ms("age", age, "AGE_MS")]


def _drained(active: bool) -> list[str]:
    """The states DRAIN empties: the waiting ones, and with ``active`` the running."""
    return ["pending", "delayed", *(["active"] if active else []), "waiting"]


def _removes(ks: Keyspace, state: str, job_ids: Iterable[str]) -> list[Call]:
    """REMOVE calls for ``job_ids`` (every id checked first), 1000 a call."""
    ids = list(job_ids)
    if state not in STATES:
        raise InvalidInput(f"{state!r} is not a state: one of {', '.join(STATES)}")
    return [calls.remove(ks, state, ids[i:i + calls.REMOVE_MOST]) for i in range(0, len(ids), calls.REMOVE_MOST)]


def _removed(replies: list[Any]) -> int:
    for reply in replies:
        if isinstance(reply, Exception):
            raise reply
    return sum(int(reply) for reply in replies)


def _check_protocol(name: str, found: bytes | None) -> None:
    """A queue's ``protocol`` field (§2): absent is 1.x; another major is refused."""
    if found is None:
        return
    text = found.decode("utf-8", "replace")
    version = parse_version(text)
    own = _protocol.version_text()
    if version is None:
        raise EchoMQError(f"queue {name!r}: its config's protocol {text!r} is not major.minor; this speaker is {own}")
    if version[0] != _protocol.version()[0]:
        raise OtherMajor(own, f"{version[0]}.{version[1]}", f"queue {name!r}")


def _enqueued(job_id: str, reply: Any) -> Enqueued:
    """ENQUEUE's reply (§7): ``1`` enqueued, ``0`` a duplicate of this id, or
    the id of the job that holds the UNIQUE key: a duplicate of that job."""
    if isinstance(reply, bytes):
        holder = reply.decode("utf-8", "surrogateescape")
        return Enqueued(holder, duplicate=True, held_by=holder)
    return Enqueued(job_id, duplicate=reply == 0)


def _plain(payloads: Iterable[bytes | tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    jobs = []
    for item in payloads:
        if isinstance(item, tuple):
            jobs.append((item[0], item[1]))
        else:
            jobs.append((mint(), item))
    return jobs


def _many(ks: Keyspace, jobs: list[tuple[str, bytes]], options: EnqueueOptions) -> tuple[list[Call], bool]:
    """:meth:`Queue.enqueue_many`'s calls, and whether they are ENQUEUEMANY's:
    plain jobs (a group at most) in calls of up to 1000, else one ENQUEUE a job."""
    if set(options) - {"group"}:
        return [calls.enqueue(ks, job_id, body, **options) for job_id, body in jobs], False
    return calls.enqueue_many(ks, jobs, group=options.get("group")), True


def _many_enqueued(jobs: list[tuple[str, bytes]], replies: list[Any], plain: bool) -> list[Enqueued]:
    """What :func:`_many`'s calls answered: the first refusal raised, else each job's :class:`Enqueued`."""
    for reply in replies:
        if isinstance(reply, Exception):
            raise reply
    if not plain:
        return [_enqueued(job_id, reply) for (job_id, _), reply in zip(jobs, replies)]
    flat = [n for reply in replies for n in reply]
    return [Enqueued(job_id, duplicate=n == 0) for (job_id, _), n in zip(jobs, flat)]


def _event(entry_id: bytes, fields: dict[bytes, bytes]) -> Event:
    decoded = {k.decode("utf-8", "replace"): v.decode("utf-8", "replace") for k, v in fields.items()}
    name = decoded.pop("event", "")
    job = decoded.pop("id", None)
    return Event(entry_id.decode(), name, job, decoded)


_AGES = ("DONE_AGE", "DEAD_AGE", "CANCELLED_AGE")
"""CONFIG's retention ages (§7.4): ms on the wire, seconds (or a timedelta) here."""


def _settings(paused: bool | None, concurrency: int | None, rate: int | None, per: calls.Duration | None,
              retention: Mapping[str, calls.Duration]) -> dict[str, int]:
    """CONFIG's settings by option name, every duration in ms (each value
    is checked, an integer in its limit, by :func:`calls.config`)."""
    settings: dict[str, Any] = {}
    if paused is not None:
        settings["PAUSED"] = 1 if paused else 0
    if concurrency is not None:
        settings["CONCURRENCY"] = concurrency
    if rate is not None:
        settings["RATE"] = rate
    if per is not None:
        settings["PER"] = int(calls.ms("per", per, "RATE_PERIOD_MS"))
    retained = [name.lower() for name in calls.CONFIG_OPTIONS if name not in ("PAUSED", "CONCURRENCY", "RATE", "PER")]
    for name, value in retention.items():
        upper = name.upper()
        if upper.lower() not in retained:
            raise InvalidInput(f"unknown setting {name!r}: configure takes paused, concurrency, rate, per and "
                               f"{', '.join(retained)}")
        if upper in _AGES:
            settings[upper] = int(calls.ms(name, value, "KEEP_MS"))
        else:  # a count, EVENTS, or a name calls.config refuses
            settings[upper] = value
    return settings


class Connection:
    """A server, its executor (Lua or Native) picked and checked once."""

    def __init__(self, client: redis.asyncio.Redis, executor: AsyncExecutor, url: str | None = None) -> None:
        # redis-py's stubs type replies loosely; the protocol says what they are.
        self.redis: Any = client
        self.executor = executor
        self.url = url
        """The URL it was opened from (None for a client given to :func:`connect`): where a
        worker's threads open connections of their own, to end their jobs without the loop."""

    async def queue(self, name: str) -> Queue:
        """Queue ``name``, refused (writing nothing) when its keys were written by another major."""
        ks = Keyspace(name)
        _check_protocol(name, await self.redis.hget(ks.key("config"), "protocol"))
        return Queue(self, ks)

    async def close(self) -> None:
        await self.redis.aclose()

    async def __aenter__(self) -> Connection:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def connect(url: str = "redis://127.0.0.1:6379/0", *, executor: Kind | None = None,
                  client: redis.asyncio.Redis | None = None) -> Connection:
    """Connect and pick the executor: the module when ``EMQ.VERSION`` answers
    this package's major (another major is refused, naming both), else the
    Lua scripts, loaded and checked against the manifest's SHA1s."""
    if client is not None:
        return Connection(client, await detect(client, executor))
    client = redis.asyncio.Redis.from_url(url, decode_responses=False)
    return Connection(client, await detect(client, executor), url)


class Queue:
    """One queue, asyncio: enqueue, operate, read. Workers: :class:`echomq.Worker`."""

    def __init__(self, connection: Connection, keyspace: Keyspace) -> None:
        self.connection = connection
        self.keyspace = keyspace
        self.executor = connection.executor
        self._registered = False
        self._said = False
        self.coordinator: Coordinator | None = None
        """The coordinator of the exact limits (rate, concurrency) of the
        partitioned queue this one belongs to (§7.10), which a Worker's
        claims ask first; else None."""

    async def register(self, *, again: bool = False) -> None:
        """Note the queue in the registry (§2, ``emq:queues``) as seen now:
        once per Queue after its first enqueue, and each upkeep round of a
        worker (``again``). Advisory: a failure is logged once, not raised."""
        if self._registered and not again:
            return
        try:
            await self.connection.redis.zadd(REGISTRY, {self.name: int(time.time() * 1000)}, gt=True)
            self._registered = True
        except redis.RedisError as err:
            if not self._said:
                self._said = True
                log.warning("the queue registry could not be written for %s: %s", self.name, err)

    @property
    def name(self) -> str:
        return self.keyspace.name

    @staticmethod
    async def open(url: str, name: str, *, executor: Kind | None = None) -> Queue:
        """Connect to ``url`` and open queue ``name``."""
        return await (await connect(url, executor=executor)).queue(name)

    async def enqueue(self, payload: bytes, *, id: str | None = None,
                      **options: Unpack[EnqueueOptions]) -> Enqueued:
        """Enqueue one job (options: :class:`~echomq.calls.EnqueueOptions`:
        priority, delay, at, attempts, backoff, backoff_exp, timeout, unique,
        unique_for, unique_until_done, headers, traceparent, group). Returns the job's id and whether it was a duplicate: of
        ``id``, or of the job holding the ``unique`` key, whose id it returns
        (``held_by`` too)."""
        job_id = id if id is not None else mint()
        with tracing.send(self.name, job_id, options):
            call = calls.enqueue(self.keyspace, job_id, payload, **options)
            enqueued = _enqueued(job_id, await self.executor.run(call))
        await self.register()
        return enqueued

    async def enqueue_json(self, value: Any, **options: Unpack[EnqueueOptions]) -> Enqueued:
        """Enqueue ``value`` as its JSON text (UTF-8)."""
        return await self.enqueue(json.dumps(value).encode(), **options)

    async def enqueue_many(self, payloads: Iterable[bytes | tuple[str, bytes]],
                           **options: Unpack[EnqueueOptions]) -> list[Enqueued]:
        """Many jobs (payloads, or (id, payload) pairs) in one round trip,
        everything checked before anything is sent: plain jobs, or jobs of
        one ``group`` and no other option, as ENQUEUEMANY calls of up to 1000
        jobs (a call that would take the group past its most pending enqueues
        none of its jobs: :class:`~echomq.errors.GroupFull`); with other
        ``options`` (as :meth:`enqueue`'s, the same for every job), one
        ENQUEUE a job, pipelined (a group's most refuses only the jobs past it)."""
        jobs = _plain(payloads)
        each, plain = _many(self.keyspace, jobs, options)
        enqueued = _many_enqueued(jobs, await self.executor.run_many(each), plain)
        await self.register()
        return enqueued

    async def configure(self, *, paused: bool | None = None, concurrency: int | None = None,
                        rate: int | None = None, per: calls.Duration | None = None,
                        **retention: calls.Duration) -> Config:
        """Change the queue's settings (CONFIG, §7.1), or with none read them:
        ``paused``; ``concurrency``; ``rate`` claims per ``per`` seconds;
        retention (§7.4) ``done_age``, ``dead_age``, ``cancelled_age`` in
        seconds (a float or a ``timedelta``, as every duration here; 0 for no
        bound) and ``done_count``, ``dead_count``, ``cancelled_count``; and
        ``events``, the event log's length. An unknown name is refused
        (:class:`InvalidInput`), nothing sent."""
        call = calls.config(self.keyspace, _settings(paused, concurrency, rate, per, retention))
        return Config.read(await self.executor.run(call))

    async def pause(self) -> Config:
        return await self.configure(paused=True)

    async def resume(self) -> Config:
        return await self.configure(paused=False)

    async def group(self, name: str) -> GroupInfo:
        """Group ``name`` of this queue (GROUP, §7.9): its pending and
        running jobs, where it stands and its settings. A group no job or
        setting ever named reads as an idle one with the defaults."""
        return GroupInfo.read(await self.executor.run(calls.group(self.keyspace, name)))

    async def set_group(self, name: str, *, weight: int | None = None, cap: int | None = None,
                        rate: int | None = None, per: calls.Duration | None = None, max: int | None = None,
                        paused: bool | None = None) -> GroupInfo:
        """Change group ``name``'s settings (GROUP, §7.9) and read it, for
        every worker at once; None leaves a setting as it is. ``weight``
        (1..=1000, 1 by default): its share of the claims against the other
        groups with work; ``cap``: the most of its jobs running at once
        (1 keeps its jobs in order); ``rate`` claims per ``per`` seconds (a
        float or a ``timedelta``); ``max``: the most pending, an enqueue past
        it raising :class:`~echomq.errors.GroupFull`; ``paused``. ``cap``,
        ``rate`` and ``max`` of 0 remove each, as :meth:`configure`'s 0 is no
        bound. Bad input is refused (:class:`InvalidInput`), nothing sent."""
        call = calls.group(self.keyspace, name, weight=weight, cap=cap, rate=rate, per=per, max=max, paused=paused)
        return GroupInfo.read(await self.executor.run(call))

    async def pause_group(self, name: str) -> GroupInfo:
        """Pause group ``name``: no worker claims its jobs until :meth:`resume_group`."""
        return await self.set_group(name, paused=True)

    async def resume_group(self, name: str) -> GroupInfo:
        """Resume group ``name``: waiting workers wake at once."""
        return await self.set_group(name, paused=False)

    async def groups(self, *, after: str | None = None, limit: int = 100) -> GroupPage:
        """A page of the queue's groups (GROUPS, §7.9): up to ``limit``
        (1..=1000) of those with jobs pending or running or with settings,
        by name, after ``after``; the page's ``next`` is the next one's
        ``after`` (None after the last)."""
        return GroupPage.read(await self.executor.run(calls.groups(self.keyspace, after=after, limit=limit)))

    async def all_groups(self, *, page: int = 100) -> AsyncIterator[GroupInfo]:
        """Every group of the queue, by name: :meth:`groups` page after page
        of ``page`` groups (a group named meanwhile is listed when its name
        sorts after the last page read)."""
        after: str | None = None
        while True:
            found = await self.groups(after=after, limit=page)
            for info in found.groups:
                yield info
            if found.next is None:
                return
            after = found.next

    async def cancel(self, job_id: str) -> bool:
        """Cancel a pending, active, delayed, dead or waiting job: True, or
        False when it was cancelled already. A flow's parent takes its open
        children with it, each in its own queue (a nested parent's too), and
        those it heard died that run again (retried); a child that ended
        meanwhile, or is still dead, is left as it is (§7.8)."""
        return await self._cancel(job_id, set())

    async def _cancel(self, job_id: str, seen: set[JobRef]) -> bool:
        """CANCEL, then the open children's, each job once (``seen``: a
        flow whose children name it again, by hand, ends here too)."""
        seen.add(JobRef(self.name, job_id))
        cancelled = bool(await self.executor.run(calls.one_id("cancel", self.keyspace, job_id)))
        children = await self.children(job_id)
        for child in _living(children):
            if child.ref in seen:
                continue
            other = Queue(self.connection, Keyspace(child.ref.queue))
            if not child.open and not _runs_again(await other.inspect(child.ref.id)):
                continue
            try:
                await other._cancel(child.ref.id, seen)
            except (NoJobError, StateError):
                pass  # not there (yet), or ended: its notice tells the parent, to no effect
        return cancelled

    async def retry(self, job_id: str, *, force: bool = False) -> None:
        """Send a dead job back to pending; a flow's parent whose children
        have not all ended goes back to waiting for them. A parent with a
        child it heard died that was retried since and has not told it its
        end is refused (:class:`StateError`, naming them, nothing changed):
        RETRY counts a child recorded dead as ended, so retried now the
        parent would run first and read it dead (§7, RETRY). ``force``
        sends it all the same (RETRY alone)."""
        if not force:
            again = []
            for child in _heard_dead(await self.children(job_id)):
                other = Queue(self.connection, Keyspace(child.ref.queue))
                again += _running_again(child, await other.inspect(child.ref.id))
            # Only a dead parent: RETRY refuses any other as it is.
            if again and getattr(await self.inspect(job_id), "state", None) == "dead":
                raise StateError(_reruns_said(job_id, again))
        await self.executor.run(calls.one_id("retry", self.keyspace, job_id))

    async def jobs(self, state: str, *, limit: int = 100, start: int = 0) -> list[JobInfo]:
        """Up to ``limit`` (1 to 1000) jobs of one state, from the ``start``-th,
        in their set's order (§2): pending first to be claimed first,
        delayed and active by due time, done, dead and cancelled oldest first;
        each read whole (INSPECT: its error, result, policy…), in one round trip."""
        state, first, last = _listing(state, limit, start)
        ids = _decoded(await self.connection.redis.zrange(self.keyspace.key(state), first, last))
        if not ids:
            return []
        replies = await self.executor.run_many([calls.one_id("inspect", self.keyspace, i) for i in ids])
        return _inspected(ids, replies)

    async def dead(self, *, limit: int = 100, start: int = 0) -> list[JobInfo]:
        """The dead jobs (out of attempts), oldest first, each with its last
        error: :meth:`jobs` of ``dead``."""
        return await self.jobs("dead", limit=limit, start=start)

    async def retry_dead(self, *, limit: int = 1000) -> int:
        """Send up to ``limit`` dead jobs, oldest first, back to pending
        (a flow's parent with children still open to waiting; RETRY each,
        one round trip, as :meth:`retry` with ``force``: no look at a parent's
        children): how many went."""
        _, first, last = _listing("dead", limit, 0)
        ids = _decoded(await self.connection.redis.zrange(self.keyspace.key("dead"), first, last))
        if not ids:
            return 0
        return _retried(await self.executor.run_many([calls.one_id("retry", self.keyspace, i) for i in ids]))

    async def delete(self, job_ids: Iterable[str], *, state: str) -> int:
        """Delete the jobs ``job_ids`` of ``state`` with all kept beside them
        (REMOVE, 1000 a call; every id checked before anything is sent); an
        id not in that state is left alone. A deleted active job's worker
        loses its lease. How many were deleted."""
        removes = _removes(self.keyspace, state, job_ids)
        return _removed(await self.executor.run_many(removes)) if removes else 0

    async def purge(self, state: str, age: calls.Duration = 0) -> int:
        """Delete the finished jobs of ``state`` (``done``, ``dead`` or
        ``cancelled``) that finished at least ``age`` ago (seconds or a
        timedelta; 0: all of them), with all kept beside them (PURGE,
        :data:`SWEEP_STEP` a call): how many. The jobs there when it
        begins: under a steady stream of new ones it still ends. A flow's
        child still linked tells its parent how it ended."""
        first = _purge_age(state, age)
        return await self._sweep("purge", getattr(await self.stats(), state), state, first)

    async def drain(self, *, active: bool = False) -> int:
        """Delete the queue's waiting jobs (pending, delayed, and parents
        waiting for their children), and with ``active`` its running ones,
        whose workers lose their leases (DRAIN, :data:`SWEEP_STEP` a call):
        how many. The jobs there when it begins: a producer that goes on is
        not outrun for ever."""
        there = await self.stats()
        total = 0
        for state in _drained(active):
            total += await self._sweep("drain", getattr(there, state), state)
        return total

    async def _sweep(self, name: str, there: int, state: str, first: list[bytes] | None = None) -> int:
        """Calls of PURGE or DRAIN (``name``) of ``state``, SWEEP_STEP jobs
        each, while each moves a full step, at most as many as ``there``
        jobs take and one more (a set a producer keeps filling would keep it
        going for ever): how many moved."""
        total = 0
        for _ in range(there // SWEEP_STEP + 1):
            moved = int(await self.executor.run(calls.sweep(name, self.keyspace, SWEEP_STEP, state=state,
                                                            first=first)))
            total += moved
            if moved < SWEEP_STEP:
                break
        return total

    async def delete_queue(self, *, force: bool = False) -> int:
        """Delete the whole queue: every job and every key it owns (settings,
        groups, schedules, dedup keys), and its entry in the registry (§2,
        ``emq:queues``); how many jobs were deleted. While jobs are active it
        refuses (:class:`StateError`, nothing deleted) unless ``force``, which
        deletes them too (their workers lose their leases). What its
        children owe parents elsewhere is carried to them first. A job
        enqueued meanwhile is deleted with the rest; a queue that keeps
        getting jobs is refused after a few rounds (stop its producers)."""
        await self._refuse_active(force, 0)
        total, refused = 0, ""
        for _ in range(5):  # jobs may arrive meanwhile: a few rounds see the queue empty
            total += await self.drain(active=force)
            for state in FINISHED:
                total += await self.purge(state)
            # What its children owe their parents goes first: OBLITERATE
            # refuses while a notice is left.
            from .upkeep import Upkeep  # it imports this module
            await Upkeep(self, max_attempts=1, period=1.0)._relay_until(float("inf"))
            try:
                await self.executor.run(Call("obliterate", calls.keys("obliterate", self.keyspace), []))
            except StateError as err:
                await self._refuse_active(force, total)  # a claim came meanwhile, or new jobs: which?
                refused = err.message
                continue
            await self.connection.redis.zrem(REGISTRY, self.name)
            self._registered = False
            return total
        raise StateError(f"{self.name} is not empty after five rounds ({refused}; {total} jobs deleted): "
                         "stop its producers, or relay its notices (a worker's upkeep)")

    async def _refuse_active(self, force: bool, deleted: int) -> None:
        """StateError while jobs are active and not ``force``."""
        active = (await self.stats()).active
        if active and not force:
            kept = f"; {deleted} of its jobs were deleted before one was claimed, and its keys are kept" \
                if deleted else ""
            raise StateError(f"{active} jobs of {self.name} are active: let them finish, or force their "
                             f"deletion{kept}")

    async def inspect(self, job_id: str) -> JobInfo | None:
        """The job: its record, error, progress, result, policy, headers and group; None when there is none."""
        reply = await self.executor.run(calls.one_id("inspect", self.keyspace, job_id))
        return read_inspect(job_id, reply)

    async def result(self, job_id: str) -> bytes | None:
        """What the job's handler returned (ACK's RESULT), when it kept one."""
        job = await self.inspect(job_id)
        return None if job is None else job.result

    async def stats(self) -> Stats:
        """How many jobs the queue holds in each of the seven states."""
        return read_stats(await self.executor.run(calls.stats(self.keyspace)))

    async def add_flow(self, flow: Flow) -> FlowAdded:
        """Add ``flow`` (§7.8): its parent in this queue, ``waiting`` (FLOW),
        then each child in its own queue linked to it (ENQUEUE's ``PARENT``,
        one round trip per queue; a nested flow's parent by FLOW), on this
        queue's connection. Adding the same flow again adds only what is
        missing (``created`` False). Everything is checked before anything
        is sent (:class:`InvalidInput`); :class:`~echomq.flows.NotAParent`
        when the parent's id names a job that is no parent. A failure
        half-way leaves what was written, which adding the flow again completes."""
        plan = flows.steps(flow, self.keyspace)
        ks, batch = next(plan)
        noted: set[str] = set()
        while True:
            replies = await self.executor.run_many(batch)
            try:
                following = plan.send(replies)  # raises a refusal among the replies
            except StopIteration as done:
                following = None
                added: FlowAdded = done.value
            if ks.name not in noted:  # a queue written to is noted in the registry (§11.3)
                noted.add(ks.name)
                await (self if ks.name == self.name else Queue(self.connection, ks)).register()
            if following is None:
                return added
            ks, batch = following

    async def children(self, job_id: str) -> Children | None:
        """A flow's parent's children (CHILDREN, §7.8): how each ended, as
        the parent heard, and what it returned; None for a job that is no parent."""
        return read_children(await self.executor.run(calls.children(self.keyspace, job_id)))

    async def schedule_every(self, name: str, every: calls.Duration, payload: bytes, *,
                             missed: str = "last") -> int:
        """Add (or replace) schedule ``name``: a job of ``payload`` at every
        multiple of ``every`` since the epoch (§11.6), fired by the queue's
        workers; ``missed`` is ``last``, ``none`` or ``all:<n>``. Returns
        its first tick, server ms."""
        every_ms = int(calls.ms("every", every, "DELAY_MS"))
        schedule = Every.read(f"every {every_ms} {missed}\n".encode() + calls.payload(payload))
        if schedule is None or every_ms < 1:
            raise InvalidInput(f"every {every_ms} ms, missed {missed!r}: not a schedule (§11.6)")
        return await self._schedule(calls.schedule_name(name), schedule)

    async def schedule_cron(self, name: str, expression: str, payload: bytes, *, zone: str = "UTC",
                            missed: str = "last") -> int:
        """Add (or replace) schedule ``name``: a job of ``payload`` at the
        instants the cron ``expression`` names in time zone ``zone`` (5
        fields, or 6 with seconds first, as ``emq schedule add --cron``
        reads them: :mod:`echomq.cron`), fired by the queue's workers, Python
        or Rust; ``missed`` as :meth:`schedule_every`'s. Returns its first
        tick, server ms. :class:`InvalidInput`, nothing written, for an
        expression, zone or policy it does not read."""
        raw_name = calls.schedule_name(name)
        try:
            schedule = Cron.of(zone, expression, calls.payload(payload), missed=missed)
        except CronError as err:
            raise InvalidInput(f"schedule {name!r}: {err}") from None
        return await self._schedule(raw_name, schedule)

    async def _schedule(self, raw_name: bytes, schedule: Schedule) -> int:
        """Write ``schedule`` (SCHEDULE replaces) with its first tick after the server's now: that tick."""
        now = int((await self.executor.run(calls.schedules(self.keyspace, limit=1)))[0])
        first = schedule.first_after(now)
        await self.executor.run(calls.schedule(self.keyspace, raw_name, schedule.definition(), first))
        await self.register()
        return first

    async def unschedule(self, name: str) -> bool:
        """Remove schedule ``name`` (the jobs it fired stay): whether there was one."""
        return bool(await self.executor.run(calls.unschedule(self.keyspace, calls.schedule_name(name))))

    async def pause_schedule(self, name: str) -> bool:
        """Pause schedule ``name``: its ticks fire no job, they only move on,
        until :meth:`resume_schedule` (§11.6). Whether there is one (among
        the first 1000 by next tick). Raises :class:`InvalidInput`, nothing
        written, for a definition this package cannot read."""
        return await self._set_paused(name, True)

    async def resume_schedule(self, name: str) -> bool:
        """Resume schedule ``name`` from its first tick after the server's
        now: the ticks missed while it was paused never fire. As
        :meth:`pause_schedule` otherwise."""
        return await self._set_paused(name, False)

    async def _set_paused(self, name: str, paused: bool) -> bool:
        """Write the definition again, paused or not (§11.6); one already so is left as it is."""
        raw_name = calls.schedule_name(name)
        reply = await self.executor.run(calls.schedules(self.keyspace))
        stored = next((definition for found, definition, _ in reply[1:] if found == raw_name), None)
        if stored is None:
            return False
        schedule = read(stored)
        if schedule is None:
            raise InvalidInput(f"schedule {name!r} of {self.name} does not read as an `every` or a `cron` "
                               "schedule this package knows, so it does not rewrite it: use emq or the Rust host")
        if schedule.paused != paused:
            await self._schedule(raw_name, schedule.with_paused(paused))
        return True

    async def last_event(self) -> str:
        """The event log's last entry id (``0-0`` when empty): where to read from."""
        found = await self.connection.redis.xrevrange(self.keyspace.key("events"), "+", "-", count=1)
        return found[0][0].decode() if found else "0-0"

    async def events(self, after: str | None = None, *, block: float = 1.0,
                     count: int = 100) -> AsyncIterator[Event]:
        """The queue's event log from after entry ``after`` (now, by default),
        for ever: ``XREAD BLOCK``, no polling."""
        last = after if after is not None else await self.last_event()
        key = self.keyspace.key("events")
        while True:
            found = await self.connection.redis.xread({key: last}, count=count, block=int(block * 1000))
            for _stream, entries in found or []:
                for entry_id, fields in entries:
                    last = entry_id.decode()
                    yield _event(entry_id, fields)

    async def wait(self, job_id: str, timeout: calls.Duration | None = None) -> JobInfo:
        """Wait until the job finished (done, dead or cancelled), reading the
        event log with ``XREAD BLOCK`` (§7.5), and return it. ``TimeoutError``
        when ``timeout`` (seconds or a timedelta) passes first; ``LookupError`` if there is no such job."""
        check_id(job_id)
        deadline = None if timeout is None else time.monotonic() + calls.seconds(timeout)
        last = await self.last_event()
        key = self.keyspace.key("events")
        raw_id = job_id.encode()
        while True:
            job = await self.inspect(job_id)
            if job is None:
                raise LookupError(f"no job {job_id} in queue {self.name!r}")
            if job.finished:
                return job
            while True:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise TimeoutError(f"job {job_id} did not finish in {timeout}s")
                # A second at most between looks at the job itself: its entry may be trimmed.
                block = max(1, int(min(left if left is not None else 1.0, 1.0) * 1000))
                found = await self.connection.redis.xread({key: last}, count=1000, block=block)
                seen = False
                for _stream, entries in found or []:
                    for entry_id, fields in entries:
                        last = entry_id.decode()
                        if fields.get(b"id") == raw_id and fields.get(b"event") in FINISHING_EVENTS:
                            seen = True
                if seen or not found:
                    break


class SyncQueue:
    """One queue, synchronous: for producers and scripts that are not async
    (a :class:`~echomq.Worker` works an asyncio :class:`Queue`)."""

    def __init__(self, client: redis.Redis, executor: SyncExecutor, keyspace: Keyspace) -> None:
        self.redis: Any = client
        self.executor = executor
        self.keyspace = keyspace
        self._registered = False
        self._said = False

    def register(self) -> None:
        """:meth:`Queue.register`, synchronous: once, after the first enqueue."""
        if self._registered:
            return
        try:
            self.redis.zadd(REGISTRY, {self.name: int(time.time() * 1000)}, gt=True)
            self._registered = True
        except redis.RedisError as err:
            if not self._said:
                self._said = True
                log.warning("the queue registry could not be written for %s: %s", self.name, err)

    @property
    def name(self) -> str:
        return self.keyspace.name

    @staticmethod
    def open(url: str, name: str, *, executor: Kind | None = None,
             client: redis.Redis | None = None) -> SyncQueue:
        """Connect to ``url``, pick and check the executor, and open queue ``name``."""
        ks = Keyspace(name)
        if client is None:
            client = redis.Redis.from_url(url, decode_responses=False)
        chosen = detect_sync(client, executor)
        raw: Any = client
        _check_protocol(name, raw.hget(ks.key("config"), "protocol"))
        return SyncQueue(client, chosen, ks)

    def close(self) -> None:
        self.redis.close()

    def __enter__(self) -> SyncQueue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def enqueue(self, payload: bytes, *, id: str | None = None, **options: Unpack[EnqueueOptions]) -> Enqueued:
        job_id = id if id is not None else mint()
        with tracing.send(self.name, job_id, options):
            enqueued = _enqueued(job_id, self.executor.run(calls.enqueue(self.keyspace, job_id, payload, **options)))
        self.register()
        return enqueued

    def enqueue_json(self, value: Any, **options: Unpack[EnqueueOptions]) -> Enqueued:
        return self.enqueue(json.dumps(value).encode(), **options)

    def enqueue_many(self, payloads: Iterable[bytes | tuple[str, bytes]],
                     **options: Unpack[EnqueueOptions]) -> list[Enqueued]:
        """:meth:`Queue.enqueue_many`, synchronous."""
        jobs = _plain(payloads)
        each, plain = _many(self.keyspace, jobs, options)
        enqueued = _many_enqueued(jobs, self.executor.run_many(each), plain)
        self.register()
        return enqueued

    def configure(self, *, paused: bool | None = None, concurrency: int | None = None,
                  rate: int | None = None, per: calls.Duration | None = None,
                  **retention: calls.Duration) -> Config:
        """:meth:`Queue.configure`, synchronous (ages in seconds)."""
        call = calls.config(self.keyspace, _settings(paused, concurrency, rate, per, retention))
        return Config.read(self.executor.run(call))

    def pause(self) -> Config:
        return self.configure(paused=True)

    def resume(self) -> Config:
        return self.configure(paused=False)

    def group(self, name: str) -> GroupInfo:
        """:meth:`Queue.group`, synchronous."""
        return GroupInfo.read(self.executor.run(calls.group(self.keyspace, name)))

    def set_group(self, name: str, *, weight: int | None = None, cap: int | None = None, rate: int | None = None,
                  per: calls.Duration | None = None, max: int | None = None,
                  paused: bool | None = None) -> GroupInfo:
        """:meth:`Queue.set_group`, synchronous (``per`` in seconds)."""
        call = calls.group(self.keyspace, name, weight=weight, cap=cap, rate=rate, per=per, max=max, paused=paused)
        return GroupInfo.read(self.executor.run(call))

    def pause_group(self, name: str) -> GroupInfo:
        """:meth:`Queue.pause_group`, synchronous."""
        return self.set_group(name, paused=True)

    def resume_group(self, name: str) -> GroupInfo:
        """:meth:`Queue.resume_group`, synchronous."""
        return self.set_group(name, paused=False)

    def groups(self, *, after: str | None = None, limit: int = 100) -> GroupPage:
        """:meth:`Queue.groups`, synchronous."""
        return GroupPage.read(self.executor.run(calls.groups(self.keyspace, after=after, limit=limit)))

    def all_groups(self, *, page: int = 100) -> Iterator[GroupInfo]:
        """:meth:`Queue.all_groups`, synchronous."""
        after: str | None = None
        while True:
            found = self.groups(after=after, limit=page)
            yield from found.groups
            if found.next is None:
                return
            after = found.next

    def cancel(self, job_id: str) -> bool:
        """:meth:`Queue.cancel`, synchronous: a flow's parent's open children too."""
        return self._cancel(job_id, set())

    def _cancel(self, job_id: str, seen: set[JobRef]) -> bool:
        seen.add(JobRef(self.name, job_id))
        cancelled = bool(self.executor.run(calls.one_id("cancel", self.keyspace, job_id)))
        children = self.children(job_id)
        for child in _living(children):
            if child.ref in seen:
                continue
            other = self._other(child.ref.queue)
            if not child.open and not _runs_again(other.inspect(child.ref.id)):
                continue
            try:
                other._cancel(child.ref.id, seen)
            except (NoJobError, StateError):
                pass
        return cancelled

    def _other(self, name: str) -> SyncQueue:
        """Queue ``name`` on this one's connection."""
        return self if name == self.name else SyncQueue(self.redis, self.executor, Keyspace(name))

    def add_flow(self, flow: Flow) -> FlowAdded:
        """:meth:`Queue.add_flow`, synchronous."""
        plan = flows.steps(flow, self.keyspace)
        ks, batch = next(plan)
        noted: set[str] = set()
        while True:
            replies = self.executor.run_many(batch)
            try:
                following = plan.send(replies)
            except StopIteration as done:
                following = None
                added: FlowAdded = done.value
            if ks.name not in noted:
                noted.add(ks.name)
                self._other(ks.name).register()
            if following is None:
                return added
            ks, batch = following

    def children(self, job_id: str) -> Children | None:
        """:meth:`Queue.children`, synchronous."""
        return read_children(self.executor.run(calls.children(self.keyspace, job_id)))

    def retry(self, job_id: str, *, force: bool = False) -> None:
        """:meth:`Queue.retry`, synchronous."""
        if not force:
            again = []
            for child in _heard_dead(self.children(job_id)):
                again += _running_again(child, self._other(child.ref.queue).inspect(child.ref.id))
            if again and getattr(self.inspect(job_id), "state", None) == "dead":
                raise StateError(_reruns_said(job_id, again))
        self.executor.run(calls.one_id("retry", self.keyspace, job_id))

    def jobs(self, state: str, *, limit: int = 100, start: int = 0) -> list[JobInfo]:
        """:meth:`Queue.jobs`, synchronous."""
        state, first, last = _listing(state, limit, start)
        ids = _decoded(self.redis.zrange(self.keyspace.key(state), first, last))
        if not ids:
            return []
        return _inspected(ids, self.executor.run_many([calls.one_id("inspect", self.keyspace, i) for i in ids]))

    def dead(self, *, limit: int = 100, start: int = 0) -> list[JobInfo]:
        """:meth:`Queue.dead`, synchronous."""
        return self.jobs("dead", limit=limit, start=start)

    def retry_dead(self, *, limit: int = 1000) -> int:
        """:meth:`Queue.retry_dead`, synchronous."""
        _, first, last = _listing("dead", limit, 0)
        ids = _decoded(self.redis.zrange(self.keyspace.key("dead"), first, last))
        if not ids:
            return 0
        return _retried(self.executor.run_many([calls.one_id("retry", self.keyspace, i) for i in ids]))

    def delete(self, job_ids: Iterable[str], *, state: str) -> int:
        """:meth:`Queue.delete`, synchronous."""
        removes = _removes(self.keyspace, state, job_ids)
        return _removed(self.executor.run_many(removes)) if removes else 0

    def purge(self, state: str, age: calls.Duration = 0) -> int:
        """:meth:`Queue.purge`, synchronous."""
        first = _purge_age(state, age)
        return self._sweep("purge", getattr(self.stats(), state), state, first)

    def drain(self, *, active: bool = False) -> int:
        """:meth:`Queue.drain`, synchronous. (No ``delete_queue`` here: what a
        deleted queue's children owe their parents is relayed by an asyncio
        worker's upkeep; use :meth:`Queue.delete_queue`, or ``emq
        delete-queue``.)"""
        there = self.stats()
        return sum(self._sweep("drain", getattr(there, state), state) for state in _drained(active))

    def _sweep(self, name: str, there: int, state: str, first: list[bytes] | None = None) -> int:
        """:meth:`Queue._sweep`, synchronous."""
        total = 0
        for _ in range(there // SWEEP_STEP + 1):
            moved = int(self.executor.run(calls.sweep(name, self.keyspace, SWEEP_STEP, state=state, first=first)))
            total += moved
            if moved < SWEEP_STEP:
                break
        return total

    def inspect(self, job_id: str) -> JobInfo | None:
        return read_inspect(job_id, self.executor.run(calls.one_id("inspect", self.keyspace, job_id)))

    def result(self, job_id: str) -> bytes | None:
        job = self.inspect(job_id)
        return None if job is None else job.result

    def stats(self) -> Stats:
        return read_stats(self.executor.run(calls.stats(self.keyspace)))

    def wait(self, job_id: str, timeout: calls.Duration | None = None) -> JobInfo:
        """:meth:`Queue.wait`, synchronous (``XREAD BLOCK`` on the event log)."""
        check_id(job_id)
        deadline = None if timeout is None else time.monotonic() + calls.seconds(timeout)
        key = self.keyspace.key("events")
        found = self.redis.xrevrange(key, "+", "-", count=1)
        last = found[0][0].decode() if found else "0-0"
        raw_id = job_id.encode()
        while True:
            job = self.inspect(job_id)
            if job is None:
                raise LookupError(f"no job {job_id} in queue {self.name!r}")
            if job.finished:
                return job
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError(f"job {job_id} did not finish in {timeout}s")
            block = max(1, int(min(left if left is not None else 1.0, 1.0) * 1000))
            for _stream, entries in self.redis.xread({key: last}, count=1000, block=block) or []:
                for entry_id, _fields in entries:
                    last = entry_id.decode()


__all__ = ["Connection", "Queue", "SyncQueue", "connect"]


def _living(children: Children | None) -> list[Child]:
    """A parent's children a cancel of it may take: the open ones, and those
    it heard died (one may run again, retried: :func:`_runs_again`)."""
    if children is None:
        return []
    return [child for child in children.children if child.open or child.outcome == "dead"]


def _heard_dead(children: Children | None) -> list[Child]:
    """A parent's children it heard died (a retry may run one again)."""
    return [] if children is None else [child for child in children.children if child.outcome == "dead"]


def _running_again(child: Child, found: JobInfo | None) -> list[str]:
    """``[<child> <state>]`` when a child its parent heard died was retried
    and has not told it its end (``done`` while its notice is on its way);
    else ``[]``."""
    if found is None or found.state in ("dead", "cancelled"):
        return []
    return [f"{{{child.ref.queue}}}{child.ref.id} {found.state}"]


def _reruns_said(job_id: str, again: list[str]) -> str:
    return (f"{job_id} is a flow's parent whose children that died were retried and have not told it their end "
            f"({', '.join(again)}): retried now it would run first and read them dead; retry it once they have")


def _runs_again(found: JobInfo | None) -> bool:
    """Whether a child its parent heard died runs again (retried, 1.11)."""
    return found is not None and found.state not in ("done", "dead", "cancelled")
