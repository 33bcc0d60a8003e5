"""Flows (protocol 1.6, PROTOCOL.md §7.8): a parent job that runs once its
children, in any queues, have ended, and reads what they returned.

    flow = (echomq.Flow(b"merge")
            .child("render", b"page 1")
            .child("render", b"page 2", on_failure="ignore")
            .child_flow("thumbs", echomq.Flow(b"sum").child("resize", b"a")))
    added = await reports.add_flow(flow)     # the parent waits, in reports

:meth:`~echomq.Queue.add_flow` writes the parent first (FLOW, ``waiting``),
then its children, each in its own queue with a link to it (ENQUEUE's
``PARENT``, in one pipeline per queue; a nested flow's parent by FLOW with
``PARENT``). Every transition that ends a child leaves a notice in the
child's queue, which the workers of that queue carry to the parent
(:meth:`~echomq.Upkeep.relay`); the parent is pending once every child
ended, and its handler reads their results (:meth:`~echomq.Job.children_results`).

The ids are fixed when the flow is built (minted then, when not given), so
adding the same :class:`Flow` again adds only what is missing: a producer
whose add failed half-way adds it again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Generator, Mapping

from . import calls
from .errors import EchoMQError, InvalidInput
from .executor import Call
from .ids import check_id, child_id, mint
from .keyspace import Keyspace, check_queue
from .model import ON_FAILURE, FlowAdded, JobRef, Link, OnFailure

if TYPE_CHECKING:
    from .queue import Queue

_CHILD_OPTIONS = ("priority", "delay", "at", "attempts", "backoff", "backoff_exp", "timeout", "headers",
                  "traceparent", "group")
"""ENQUEUE's options a flow's child takes: not a unique key, which could leave it unenqueued."""

_PLACEHOLDER = 1
"""The incarnation the checks build the children's calls with, before the parent's FLOW answers its own."""


class NotAParent(EchoMQError):
    """A flow's parent id names a job that exists and is no parent: nothing was written."""


@dataclass(frozen=True)
class _Child:
    ref: JobRef
    on_failure: OnFailure
    payload: bytes | None = None
    options: Mapping[str, Any] | None = None
    flow: Flow | None = None


class Flow:
    """A parent job and its children (§7.8), for :meth:`~echomq.Queue.add_flow`.

    ``payload`` is the parent's; ``id`` its id (minted now when not given);
    ``priority``, ``attempts``, ``backoff``/``backoff_exp``, ``timeout``,
    ``headers``, ``traceparent`` and ``group`` (1.7, §7.9: the group the
    parent joins once it is due) as :meth:`~echomq.Queue.enqueue`'s (a
    parent has no due time: it is due when its children ended). Bad input
    is refused (:class:`InvalidInput`) here or at the add, before anything
    is sent.
    """

    def __init__(self, payload: bytes, *, id: str | None = None, priority: int = 0, attempts: int | None = None,
                 backoff: calls.Duration | None = None, backoff_exp: calls.Duration | None = None,
                 timeout: calls.Duration | None = None, headers: Mapping[str, str] | None = None,
                 traceparent: str | None = None, group: str | None = None) -> None:
        self.id = id if id is not None else mint()
        """The parent's id."""
        check_id(self.id)
        self.payload = calls.payload(payload)
        self.options: dict[str, Any] = {
            "priority": priority, "attempts": attempts, "backoff": backoff, "backoff_exp": backoff_exp,
            "timeout": timeout, "headers": headers, "traceparent": traceparent, "group": group,
        }
        self._children: list[_Child] = []
        # Its options checked now (FLOW's call, which needs its children, at the add).
        calls.integer("priority", priority, "PRIORITY")
        calls._policy(attempts, backoff, backoff_exp, timeout)
        calls.headers_bytes(headers, traceparent)
        if group is not None:
            calls.group_name(group)

    @property
    def children(self) -> list[JobRef]:
        """Its children, in the order given."""
        return [child.ref for child in self._children]

    def child(self, queue: str, payload: bytes, *, on_failure: OnFailure = "fail", id: str | None = None,
              **options: Any) -> Flow:
        """A child job in ``queue`` (its id minted now when not given), with
        ENQUEUE's options (``priority``, ``delay``/``at``, ``attempts``,
        ``backoff``/``backoff_exp``, ``timeout``, ``headers``,
        ``traceparent``, ``group``; no ``unique``), and what the parent does if it
        ends otherwise than done: ``fail`` (the parent dies), ``ignore``
        (it waits on for the others) or ``continue`` (it runs at once).
        Returns the flow, for the next child."""
        unknown = sorted(set(options) - set(_CHILD_OPTIONS))
        if unknown:
            raise InvalidInput(f"a flow's child takes {', '.join(_CHILD_OPTIONS)}; not {', '.join(unknown)}"
                               + (" (a held unique key would enqueue no child)" if "unique" in unknown else ""))
        ref = JobRef(queue, id if id is not None else mint())
        child = _Child(ref, _on_failure(on_failure), calls.payload(payload), dict(options))
        _enqueue(child, Link(_PLACEHOLDER, JobRef(queue, self.id)))  # its options checked now
        self._children.append(child)
        return self

    def child_flow(self, queue: str, flow: Flow, *, on_failure: OnFailure = "fail") -> Flow:
        """A child in ``queue`` that is a parent itself (a nested flow): it
        ends, for this parent, once it has run. Returns the flow."""
        if not isinstance(flow, Flow):
            raise InvalidInput(f"a nested flow is an echomq.Flow, not {type(flow).__name__}")
        check_queue(queue)
        self._children.append(_Child(JobRef(queue, flow.id), _on_failure(on_failure), flow=flow))
        return self

    def __repr__(self) -> str:
        return f"Flow(id={self.id!r}, children={[str(child) for child in self.children]})"


def _on_failure(word: str) -> OnFailure:
    for known in ON_FAILURE:
        if word == known:
            return known
    raise InvalidInput(f"on_failure is one of {', '.join(ON_FAILURE)}, not {word!r}")


def _enqueue(child: _Child, link: Link) -> Call:
    assert child.payload is not None and child.options is not None
    return calls.enqueue(Keyspace(child.ref.queue), child.ref.id, child.payload, parent=link, **child.options)


def _flow(flow: Flow, ks: Keyspace, parent: Link | None) -> Call:
    dependencies = [(child.ref, child.on_failure) for child in flow._children]
    return calls.flow(ks, flow.id, flow.payload, dependencies, parent=parent, **flow.options)


def _check(flow: Flow, ks: Keyspace, parent: Link | None, above: list[Flow]) -> None:
    """Every call the flow will send, built (and so checked) with a
    placeholder incarnation: :class:`InvalidInput` before anything is sent."""
    if any(flow is seen for seen in above):
        raise InvalidInput(f"flow {flow.id} is nested in itself")
    _flow(flow, ks, parent)
    link = Link(_PLACEHOLDER, JobRef(ks.name, flow.id))
    for child in flow._children:
        if child.flow is not None:
            _check(child.flow, Keyspace(child.ref.queue), link, [*above, flow])
        else:
            _enqueue(child, link)


Steps = Generator[tuple[Keyspace, list[Call]], list[Any], FlowAdded]
"""What :func:`steps` yields: a queue and the calls to send to it in one
round trip; it is sent their replies (each a value or its error)."""


def steps(flow: Flow, ks: Keyspace, parent: Link | None = None) -> Steps:
    """The calls that add ``flow`` with its parent in queue ``ks``, round
    trip by round trip (the executor's ``run_many``, async or not): the
    parent's FLOW, then its nested flows each in turn, then its children's
    ENQUEUEs in one round trip per queue. Everything is checked before the
    first is yielded."""
    _check(flow, ks, parent, [])
    return (yield from _steps(flow, ks, parent))


def _steps(flow: Flow, ks: Keyspace, parent: Link | None) -> Steps:
    [reply] = yield ks, [_flow(flow, ks, parent)]
    if isinstance(reply, Exception):
        raise reply
    created, incarnation = _flowed(reply)
    if incarnation is None:
        raise NotAParent(f"{flow.id} of {ks.name} exists and is no flow's parent")
    me = JobRef(ks.name, flow.id)
    link = Link(incarnation, me)
    jobs: dict[str, list[Call]] = {}
    for child in flow._children:
        if child.flow is not None:
            yield from _steps(child.flow, Keyspace(child.ref.queue), link)
        else:
            jobs.setdefault(child.ref.queue, []).append(_enqueue(child, link))
    for queue, enqueues in jobs.items():
        for found in (yield Keyspace(queue), enqueues):
            if isinstance(found, Exception):
                raise found
    return FlowAdded(me, incarnation, created, flow.children)


def _flowed(reply: Any) -> tuple[bool, int | None]:
    """FLOW's reply: ``[1, incarnation]`` written, ``[0, incarnation]`` a parent
    that existed, ``[0]`` a job that is no parent."""
    if not isinstance(reply, list) or not reply or reply[0] not in (0, 1):
        raise EchoMQError(f"FLOW answered {reply!r}")
    if len(reply) < 2:
        return False, None
    return reply[0] == 1, int(reply[1])


class WaitingForChildren(Exception):
    """Not a failure: the job waits for the children :meth:`echomq.Job.wait_for`
    named, and runs again once they have ended. Let it through the handler;
    the worker sends nothing more for this claim."""


class ChildJobs:
    """Children a running job adds to itself and waits for
    (:meth:`echomq.Job.wait_for`, ADOPT, §7.8): jobs in any queues.

    A child's id, unless given one, is derived from its parent's id, its
    place among these children, its queue and its payload
    (:func:`echomq.ids.child_id`, as the Rust host derives it): a handler
    that runs again names the same children, which are not added twice.
    """

    def __init__(self) -> None:
        self._children: list[tuple[str, bytes, OnFailure, str | None, dict[str, Any]]] = []

    def child(self, queue: str, payload: bytes, *, on_failure: OnFailure = "fail", id: str | None = None,
              **options: Any) -> ChildJobs:
        """A child job in ``queue``, with :meth:`Flow.child`'s options and
        ``on_failure``. Returns these children, for the next one."""
        unknown = sorted(set(options) - set(_CHILD_OPTIONS))
        if unknown:
            raise InvalidInput(f"a child takes {', '.join(_CHILD_OPTIONS)}; not {', '.join(unknown)}")
        check_queue(queue)
        if id is not None:
            check_id(id)
        child = (queue, calls.payload(payload), _on_failure(on_failure), id, dict(options))
        _enqueue(_Child(JobRef(queue, id or mint()), child[2], child[1], child[4]),
                 Link(_PLACEHOLDER, JobRef(queue, mint())))  # its options checked now
        self._children.append(child)
        return self

    def __len__(self) -> int:
        """How many children so far: the place of the next."""
        return len(self._children)

    def named(self, parent: str) -> list[_Child]:
        """The children, each under its id (given, or derived from ``parent``)."""
        return [_Child(JobRef(queue, id if id is not None else child_id(parent, at, queue, body)), on_failure,
                       body, options)
                for at, (queue, body, on_failure, id, options) in enumerate(self._children)]


async def adopt(queue: Queue, job_id: str, token: int, max_attempts: int, children: ChildJobs,
                waits: Callable[[], None]) -> bool:
    """ADOPT ``children`` for job ``job_id`` of ``queue``, held with
    ``token``, then enqueue those open, each linked to it: True when the job
    now waits, False when each had ended (its holder goes on). ``waits`` is
    called as soon as the job waits, before the children are enqueued."""
    from .queue import Queue as _Queue

    named = children.named(job_id)
    call = calls.adopt(queue.keyspace, job_id, token, max_attempts, [(child.ref, child.on_failure) for child in named])
    reply = await queue.executor.run(call)
    if not isinstance(reply, list) or len(reply) != 3 or reply[0] not in (0, 1):
        raise EchoMQError(f"ADOPT answered {reply!r}")
    if reply[0] == 0:
        return False
    waits()
    link = Link(int(reply[1]), JobRef(queue.name, job_id))
    open_refs = {JobRef.parse(raw) for raw in reply[2]}
    by_queue: dict[str, list[Call]] = {}
    for child in named:
        if child.ref in open_refs:
            by_queue.setdefault(child.ref.queue, []).append(_enqueue(child, link))
    for name, enqueues in by_queue.items():
        target = _Queue(queue.connection, Keyspace(name))
        for found in await target.executor.run_many(enqueues):
            if isinstance(found, Exception):
                raise EchoMQError(f"{job_id} waits for its children, and enqueueing them failed: {found}; the "
                                  "sweep resolves those never enqueued as gone after its grace") from found
        await target.register()
    return True


__all__ = ["ChildJobs", "Flow", "NotAParent", "WaitingForChildren", "adopt", "steps"]


# -- A sync handler's door to its children's results --------------------------


def children_results_sync(job: Job, timeout: float | None = 30.0) -> dict[JobRef, bytes]:
    """:meth:`Job.children_results <echomq.Job.children_results>` for a plain
    ``def`` handler, which runs in the worker's threads, away from the event
    loop that reads them: read there (:meth:`~echomq.Job.from_thread`) and
    waited for here, ``timeout`` seconds at most.

        def merge(job: echomq.Job) -> bytes:
            pages = echomq.flows.children_results_sync(job)
            return b"".join(pages.values())
    """
    return job.from_thread(job.children_results(), timeout)


if TYPE_CHECKING:
    from .job import Job

__all__ += ["children_results_sync"]
