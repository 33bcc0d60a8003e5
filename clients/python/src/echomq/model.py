"""What the transitions answer, as Python values: a job as INSPECT reads it,
a claimed job, a policy (§7.2), the queue's counts and settings, an event."""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from typing import Any, Literal

from .errors import DataError, InvalidInput
from .ids import check_id
from .keyspace import check_queue

STATES = ("pending", "active", "delayed", "done", "dead", "cancelled", "waiting")
"""The seven states (§3): ``waiting`` is a flow's parent waiting for its children (1.6)."""
FINISHED = ("done", "dead", "cancelled")

OnFailure = Literal["fail", "ignore", "continue"]
"""What a flow's parent does when a child ends otherwise than done (§7.8):
``fail`` (it dies at once), ``ignore`` (it waits on for the others),
``continue`` (it runs at once)."""
ON_FAILURE: tuple[OnFailure, ...] = ("fail", "ignore", "continue")

Outcome = Literal["done", "dead", "cancelled", "gone"]
"""How a flow's child ended, as its parent heard (§7.8): ``gone`` is deleted
before it finished (drained, removed), or never enqueued."""
OUTCOMES: tuple[Outcome, ...] = ("done", "dead", "cancelled", "gone")


DEFAULT_MAX_ATTEMPTS = 5
"""The workers' max attempts unless told (a :class:`~echomq.Worker`'s, ``emq work``'s, the Rust host's)."""


def text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("utf-8", "replace")


def attempts_spent(token: int, policy: Policy | None, max_attempts: int = DEFAULT_MAX_ATTEMPTS) -> int:
    """A job's attempts spent: its claims (``token``, the record's
    ``attempts``) less the attempts given back without blame (a DEFER, a
    RELEASE with REFUND).

    Derived, not stored, and exact only as far as ``max_attempts`` is right.
    The protocol counts claims (§6); an attempt given back is not uncounted
    but grows the job's own ATTEMPTS by one (§7.2, §7 DEFER and RELEASE), so
    what it keeps is the sum of the maximum the job started from and the
    attempts given back, not either alone. The attempts given back are
    therefore read as the policy's ATTEMPTS less ``max_attempts``, which
    must be that starting maximum: the ``attempts=`` the job was enqueued
    with, else the max attempts of the workers that gave its attempts back
    (5 unless told). A job whose policy has no ATTEMPTS was never given an
    attempt back (DEFER and REFUND always write one): its claims are its
    attempts spent, exactly, whatever ``max_attempts``. The answer is kept
    within ``0..=token``.
    """
    if policy is None or policy.attempts is None:
        return token
    given_back = min(max(policy.attempts - max_attempts, 0), token)
    return token - given_back


@dataclass(frozen=True)
class Policy:
    """A job's own policy (PROTOCOL.md §7.2): what it was enqueued with, or DEFER/REFUND wrote."""

    attempts: int | None = None
    backoff_ms: int | None = None
    backoff_exp_ms: int | None = None
    timeout_ms: int | None = None

    @staticmethod
    def parse(raw: bytes | str) -> Policy:
        """Read a policy's text: ``ATTEMPTS 3 BACKOFF_EXP 1000 TIMEOUT 30000``."""
        words = (raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw).split(" ")
        if len(words) % 2:
            raise DataError(f"{raw!r} is not a policy")
        found: dict[str, int] = {}
        for name, value in zip(words[::2], words[1::2]):
            name = name.upper()
            if name not in ("ATTEMPTS", "BACKOFF", "BACKOFF_EXP", "TIMEOUT") or name in found:
                raise DataError(f"{raw!r} is not a policy")
            if not value.lstrip("-").isdigit() or not 1 <= len(value.lstrip("-")) <= 15:
                raise DataError(f"{raw!r} is not a policy")
            found[name] = int(value)
        if "BACKOFF" in found and "BACKOFF_EXP" in found:
            raise DataError(f"{raw!r} is not a policy")
        return Policy(
            attempts=found.get("ATTEMPTS"),
            backoff_ms=found.get("BACKOFF"),
            backoff_exp_ms=found.get("BACKOFF_EXP"),
            timeout_ms=found.get("TIMEOUT"),
        )

    def text(self) -> str:
        """The policy as ENQUEUE stores it."""
        words = []
        if self.attempts is not None:
            words += ["ATTEMPTS", str(self.attempts)]
        if self.backoff_ms is not None:
            words += ["BACKOFF", str(self.backoff_ms)]
        if self.backoff_exp_ms is not None:
            words += ["BACKOFF_EXP", str(self.backoff_exp_ms)]
        if self.timeout_ms is not None:
            words += ["TIMEOUT", str(self.timeout_ms)]
        return " ".join(words)


def read_headers(raw: bytes | None) -> dict[str, str]:
    """Headers as speakers write them: a JSON object of strings; anything else is none (§7.6)."""
    if raw is None:
        return {}
    try:
        found = json.loads(raw)
    except ValueError:
        return {}
    if not isinstance(found, dict) or not all(isinstance(v, str) for v in found.values()):
        return {}
    return dict(found)


@dataclass(frozen=True)
class Enqueued:
    """What ENQUEUE did. Nothing is written for a duplicate: a job of this id
    existed, or another job holds the UNIQUE key (§7.3); either way ``id``
    is the job that is there, which :meth:`Queue.wait` and
    :meth:`Queue.result` follow."""

    id: str
    """The job's id: the one enqueued, or, for a duplicate, the job already there."""
    duplicate: bool = False
    """Nothing was written: ``id`` existed, or held the UNIQUE key (``held_by``)."""
    held_by: str | None = None
    """The id of the job that holds the UNIQUE key, when that made it a duplicate (``id`` too)."""

    @property
    def enqueued(self) -> bool:
        """Whether this call wrote the job."""
        return not self.duplicate


@dataclass(frozen=True)
class JobInfo:
    """A job as INSPECT reads it."""

    id: str
    state: str
    token: int
    """The record's ``attempts`` (§3): its last claim's fencing token, so how
    many times it was claimed (0 before its first claim). Not its attempts
    spent: it rises when an attempt is given back (:class:`~echomq.RetryAfter`,
    a graceful stop) too; see :meth:`attempts_spent`."""
    payload: bytes
    error: str | None = None
    progress: bytes | None = None
    result: bytes | None = None
    policy: Policy | None = None
    headers: dict[str, str] = field(default_factory=dict)
    enqueued_at: int | None = None
    updated_at: int | None = None
    group: str | None = None
    """Its group (protocol 1.7), if it was enqueued into one."""

    @property
    def finished(self) -> bool:
        return self.state in FINISHED

    @property
    def attempts(self) -> int:
        """Deprecated: the fencing token (:attr:`token`), not the attempts spent
        (:meth:`attempts_spent`), which this name was taken for."""
        warnings.warn("JobInfo.attempts is the fencing token, which counts claims: read JobInfo.token, "
                      "or JobInfo.attempts_spent() for the attempts spent", DeprecationWarning, stacklevel=2)
        return self.token

    def attempts_spent(self, max_attempts: int = DEFAULT_MAX_ATTEMPTS) -> int:
        """Its claims less the attempts given back: :func:`attempts_spent`,
        exact when ``max_attempts`` is the maximum the job started from (its
        ``attempts=`` at enqueue, else its workers' max attempts)."""
        return attempts_spent(self.token, self.policy, max_attempts)

    def json(self) -> Any:
        """The payload read as JSON."""
        return json.loads(self.payload)

    def result_json(self) -> Any:
        """The result read as JSON (None when there is none)."""
        return None if self.result is None else json.loads(self.result)


def read_inspect(job_id: str, reply: list[Any]) -> JobInfo | None:
    flat = reply[0]
    if not flat:
        return None
    record = {flat[i].decode(): flat[i + 1] for i in range(0, len(flat), 2)}
    policy = reply[4] if len(reply) > 4 else None
    headers = reply[5] if len(reply) > 5 else None
    return JobInfo(
        id=job_id,
        state=record["state"].decode(),
        token=int(record["attempts"]),
        payload=record["payload"],
        error=text(reply[1]),
        progress=reply[2],
        result=reply[3] if len(reply) > 3 else None,
        policy=Policy.parse(policy) if policy is not None else None,
        headers=read_headers(headers),
        enqueued_at=int(record["enqueued_at"]) if "enqueued_at" in record else None,
        updated_at=int(record["updated_at"]) if "updated_at" in record else None,
        group=text(reply[6]) if len(reply) > 6 else None,
    )


@dataclass(frozen=True)
class Stats:
    """The seven sets' sizes (STATS)."""

    pending: int
    active: int
    delayed: int
    done: int
    dead: int
    cancelled: int
    waiting: int = 0
    """Flows' parents waiting for their children (1.6)."""


def read_stats(reply: list[Any]) -> Stats:
    """STATS' reply: seven sizes (six from a server before 1.6)."""
    return Stats(*(int(n) for n in reply[:7]))


@dataclass(frozen=True, order=True)
class JobRef:
    """A job named across queues (§7.8): its queue and its id, written
    ``{<queue>}<id>``. Refused (:class:`InvalidInput`) for a queue name or
    an id the protocol refuses."""

    queue: str
    id: str

    def __post_init__(self) -> None:
        check_queue(self.queue)
        check_id(self.id)

    def raw(self) -> bytes:
        """``{<queue>}<id>``, as the protocol writes it."""
        return b"{" + self.queue.encode("utf-8") + b"}" + self.id.encode("utf-8", "surrogateescape")

    def __str__(self) -> str:
        return f"{{{self.queue}}}{self.id}"

    @staticmethod
    def parse(text: str | bytes) -> JobRef:
        """``{<queue>}<id>`` read back (the first ``}`` ends the queue): :class:`InvalidInput` otherwise."""
        raw = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else bytes(text)
        close = raw.find(b"}")
        if not raw.startswith(b"{") or close < 0:
            raise InvalidInput(f"{text!r} is not {{<queue>}}<id>")
        try:
            queue = raw[1:close].decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput(f"{text!r}: its queue name is not UTF-8") from None
        return JobRef(queue, raw[close + 1:].decode("utf-8", "surrogateescape"))


@dataclass(frozen=True)
class Link:
    """A flow's child's link to its parent (§7.8): the parent, and the
    incarnation its FLOW answered, written ``<incarnation> {<queue>}<id>``."""

    incarnation: int
    parent: JobRef

    def raw(self) -> bytes:
        return str(self.incarnation).encode() + b" " + self.parent.raw()


@dataclass(frozen=True)
class Child:
    """One child of a flow's parent, as the parent last heard of it (CHILDREN)."""

    ref: JobRef
    """The child: its queue and id."""
    outcome: Outcome | None
    """How it ended; None while the parent waits to hear (open)."""
    result: bytes | None = None
    """What it returned, when it was done with a result."""

    @property
    def open(self) -> bool:
        """Whether the parent has not heard of its end yet."""
        return self.outcome is None


@dataclass(frozen=True)
class Children:
    """A flow's parent's dependencies, as its queue holds them (CHILDREN)."""

    incarnation: int
    """The parent's incarnation: what its children's links name."""
    open: int
    """How many of its children it has not heard the end of."""
    children: list[Child]
    """Each child, in the byte order of ``{<queue>}<id>``."""

    @property
    def results(self) -> dict[JobRef, bytes]:
        """What the children done with a result returned, by child."""
        return {child.ref: child.result for child in self.children if child.result is not None}


def read_outcome(word: bytes | str) -> Outcome | None:
    """The outcome ``word`` names, or None."""
    text = word.decode("utf-8", "replace") if isinstance(word, bytes) else word
    return next((outcome for outcome in OUTCOMES if outcome == text), None)


def read_children(reply: list[Any]) -> Children | None:
    """CHILDREN's reply: None for a job that is no parent (``[]``)."""
    if not reply:
        return None

    def number(what: str, value: Any) -> int:
        if not isinstance(value, bytes) or not value.isdigit():
            raise DataError(f"CHILDREN answered {value!r} as {what}")
        return int(value)

    children = []
    for item in reply[2:]:
        ref, state, result = item
        outcome = None if state == b"open" else read_outcome(state)
        if state != b"open" and outcome is None:
            raise DataError(f"CHILDREN answered {state!r} as the state of {ref!r}")
        try:
            parsed = JobRef.parse(ref)
        except InvalidInput as err:
            raise DataError(f"CHILDREN answered {ref!r} as a child: {err}") from None
        children.append(Child(parsed, outcome, result))
    return Children(number("the incarnation", reply[0]), number("the open count", reply[1]), children)


@dataclass(frozen=True)
class FlowAdded:
    """What :meth:`~echomq.Queue.add_flow` wrote."""

    parent: JobRef
    """The parent."""
    incarnation: int
    """The parent's incarnation, as its FLOW answered it: what its children's links name."""
    created: bool
    """Whether the parent was written now (False: it existed, from an
    earlier add of the same flow, and only its missing children were added)."""
    children: list[JobRef]
    """Its children, in the order given."""


@dataclass(frozen=True)
class Config:
    """A queue's settings as CONFIG answers them (§7.1): 0 is not set / no
    bound. Durations as the server keeps them, in ms (``*_ms``), and in
    seconds as :meth:`~echomq.Queue.configure` takes them (``per``,
    ``done_age``, …)."""

    paused: bool
    concurrency: int
    rate: int
    per_ms: int
    done_age_ms: int
    done_count: int
    dead_age_ms: int
    dead_count: int
    cancelled_age_ms: int
    cancelled_count: int
    events: int
    protocol: str | None = None

    @property
    def per(self) -> float:
        """The rate's period in seconds."""
        return self.per_ms / 1000

    @property
    def done_age(self) -> float:
        """How long done jobs are kept, in seconds (0: no bound)."""
        return self.done_age_ms / 1000

    @property
    def dead_age(self) -> float:
        """How long dead jobs are kept, in seconds (0: no bound)."""
        return self.dead_age_ms / 1000

    @property
    def cancelled_age(self) -> float:
        """How long cancelled jobs are kept, in seconds (0: no bound)."""
        return self.cancelled_age_ms / 1000

    @staticmethod
    def read(reply: list[Any]) -> Config:
        n = [int(value) for value in reply[:11]]
        return Config(
            paused=bool(n[0]), concurrency=n[1], rate=n[2], per_ms=n[3], done_age_ms=n[4], done_count=n[5],
            dead_age_ms=n[6], dead_count=n[7], cancelled_age_ms=n[8], cancelled_count=n[9], events=n[10],
            protocol=text(reply[11]) if len(reply) > 11 else None,
        )


@dataclass(frozen=True)
class Claimed:
    """One job a CLAIM (or ACKNEXT) handed out."""

    id: str
    token: int
    payload: bytes
    policy: Policy | None
    headers: dict[str, str]


@dataclass(frozen=True)
class Claims:
    """A CLAIM's reply: its jobs, and the gate's word (§7.1): None, or ``-1``
    paused, ``0`` held by the concurrency limit, ``n > 0`` ms to wait."""

    jobs: list[Claimed]
    held: int | None


def read_claims(reply: list[Any]) -> Claims:
    held = None
    if reply and isinstance(reply[-1], int):
        held = reply[-1]
        reply = reply[:-1]
    jobs = []
    for item in reply:
        policy = item[3] if len(item) > 3 else None
        headers = item[4] if len(item) > 4 else None
        jobs.append(
            Claimed(
                id=item[0].decode("utf-8", "surrogateescape"),
                token=int(item[1]),
                payload=item[2],
                policy=Policy.parse(policy) if policy is not None else None,
                headers=read_headers(headers),
            )
        )
    return Claims(jobs, held)


@dataclass(frozen=True)
class Event:
    """One entry of a queue's event log (§7.5)."""

    entry: str
    """The stream entry's id, ``<ms>-<seq>``: where to resume."""
    event: str
    job: str | None
    fields: dict[str, str]
