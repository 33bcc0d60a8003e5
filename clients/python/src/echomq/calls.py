"""Each transition's call, built from the protocol's table (§7: its keys in
order) with every argument checked against §7's limits before anything is
sent: a bad one is :class:`~echomq.errors.InvalidInput` and the server never
hears of it (DESIGN rule 6)."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from typing import Iterable, Mapping, Sequence, TypedDict

from . import _protocol
from .errors import InvalidInput
from .executor import Call
from .ids import check_id
from .keyspace import Keyspace
from .model import ON_FAILURE, OUTCOMES, JobRef, Link

Duration = float | int | timedelta
"""A duration: seconds (as ``asyncio.sleep`` takes them) or a ``timedelta``."""


class EnqueueOptions(TypedDict, total=False):
    """What a job may be enqueued with (ENQUEUE's options, §7), each
    checked before anything is sent; durations in seconds or a ``timedelta``."""

    priority: int
    """Lower is claimed first (pending's score); 0 by default."""
    delay: Duration
    """Claimable only this long after the enqueue."""
    at: datetime | float
    """Claimable only from this time (a datetime, or a Unix time in seconds)."""
    attempts: int
    """The job's own maximum attempts, whatever its workers' (§7.2)."""
    backoff: Duration
    """The job's own fixed wait between attempts."""
    backoff_exp: Duration
    """The job's own wait between attempts, doubling from this."""
    timeout: Duration
    """How long one attempt may run before its worker fails it."""
    unique: str | bytes
    """A dedup key: while a job holds it (``unique_for``), an enqueue with it
    writes nothing and answers that job's id (§7.3)."""
    unique_for: Duration
    """How long the new job holds its ``unique`` key."""
    unique_until_done: bool
    """The key is freed when the job is done, if sooner."""
    headers: Mapping[str, str]
    """The job's headers (§7.6), str → str."""
    traceparent: str
    """The producer's W3C trace context, kept among the headers."""
    group: str
    """The job's group (1.7, §7.9): a tenant, a customer, a key, 1 to 200
    bytes as UTF-8. Claims take turns among the groups that have work;
    :meth:`~echomq.Queue.set_group` gives one a weight, cap, rate, most
    pending or pause. An enqueue into a group at its most pending raises
    :class:`~echomq.errors.GroupFull`."""

_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")


def keys(name: str, ks: Keyspace, *, count: int | None = None, job: bytes | None = None,
         state: str | None = None) -> list[bytes]:
    """Transition ``name``'s KEYS for queue ``ks``, its first ``count`` (all by default)."""
    roles = _protocol.transition(name).keys
    out = []
    for role in roles[:count] if count else roles:
        if role == "job:<id>":
            assert job is not None
            out.append(ks.job(job))
        elif role == "children:<id>":  # a parent's dependencies, a key of its own like its record (1.6)
            assert job is not None
            out.append(ks.children(job))
        elif "|" in role:
            if state not in role.split("|"):
                raise InvalidInput(f"{name.upper()} takes one of {role.replace('|', ', ')}, not {state!r}")
            out.append(ks.key(state))
        else:
            out.append(ks.key(role))
    return out


def group_name(group: str) -> bytes:
    """A group's name as sent (§7.9): its UTF-8, 1 to ``MAX_GROUP`` (200)
    bytes; the empty name is the default group's, never given."""
    if not isinstance(group, str):
        raise InvalidInput(f"a group is a str, not {type(group).__name__}")
    raw = group.encode("utf-8", "surrogateescape")
    most = _protocol.size("MAX_GROUP")
    if not 1 <= len(raw) <= most:
        raise InvalidInput(f"a group is 1 to {most} bytes, not {len(raw)} ({group[:40]!r})")
    return raw


def _group(group: str | None) -> list[bytes]:
    return [] if group is None else [b"GROUP", group_name(group)]


def integer(what: str, value: int, limit: str) -> bytes:
    """``value`` as decimal text, checked against limit ``limit`` of §11.1."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{what} must be an integer, not {value!r}")
    low, high = _protocol.limit(limit)
    if not low <= value <= high:
        raise InvalidInput(f"{what} must be in {low}..={high}, not {value}")
    return str(value).encode()


def ms(what: str, value: Duration, limit: str) -> bytes:
    """A duration as whole ms, checked against ``limit``."""
    if isinstance(value, timedelta):
        millis = round(value.total_seconds() * 1000)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        millis = round(value * 1000)
    else:
        raise InvalidInput(f"{what} must be seconds or a timedelta, not {value!r}")
    return integer(f"{what} (ms)", millis, limit)


def seconds(value: Duration) -> float:
    """A duration in seconds, a ``timedelta``'s included."""
    if isinstance(value, timedelta):
        return value.total_seconds()
    return float(value)


def to_ms(value: Duration) -> int:
    if isinstance(value, timedelta):
        return round(value.total_seconds() * 1000)
    return round(value * 1000)


def payload(value: bytes | bytearray | memoryview, what: str = "payload", limit: str = "MAX_PAYLOAD") -> bytes:
    """Bytes, at most the limit: a str is refused, never encoded behind the caller's back."""
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise InvalidInput(f"a {what} is bytes, not {type(value).__name__} (encode it, or use the JSON helpers)")
    raw = bytes(value)
    if len(raw) > _protocol.size(limit):
        raise InvalidInput(f"the {what} is {len(raw)} bytes; at most {_protocol.size(limit)}")
    return raw


def headers_bytes(headers: Mapping[str, str] | None, traceparent: str | None) -> bytes | None:
    """Headers as a JSON object of strings (§7.6), ``traceparent`` among them."""
    found = dict(headers or {})
    if traceparent is not None:
        found["traceparent"] = traceparent
    if not found:
        return None
    for name, value in found.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise InvalidInput(f"headers are str → str; {name!r}: {value!r} is not")
    if "traceparent" in found and not _TRACEPARENT.match(found["traceparent"]):
        raise InvalidInput(f"traceparent {found['traceparent']!r} is not 00-<32 hex>-<16 hex>-<2 hex>")
    raw = json.dumps(found, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    if len(raw) > _protocol.size("MAX_HEADERS"):
        raise InvalidInput(f"the headers are {len(raw)} bytes as JSON; at most {_protocol.size('MAX_HEADERS')}")
    return raw


def enqueue(
    ks: Keyspace,
    job_id: str,
    body: bytes,
    *,
    priority: int = 0,
    delay: Duration | None = None,
    at: datetime | float | None = None,
    attempts: int | None = None,
    backoff: Duration | None = None,
    backoff_exp: Duration | None = None,
    timeout: Duration | None = None,
    unique: str | bytes | None = None,
    unique_for: Duration | None = None,
    unique_until_done: bool = False,
    headers: Mapping[str, str] | None = None,
    traceparent: str | None = None,
    parent: Link | None = None,
    group: str | None = None,
) -> Call:
    """ENQUEUE, every key of the table (so its event is logged, waiting
    workers wake, and a flow's child is linked): with ``parent``, the job
    is a flow's child (``PARENT``, 1.6), which excludes ``unique``; with
    ``group``, the job joins that group (``GROUP``, 1.7, §7.9)."""
    raw_id = check_id(job_id)
    args = [raw_id, payload(body)]
    if priority != 0:
        args += [b"PRIORITY", integer("priority", priority, "PRIORITY")]
    if delay is not None and at is not None:
        raise InvalidInput("delay and at exclude each other")
    if delay is not None:
        args += [b"DELAY", ms("delay", delay, "DELAY_MS")]
    if at is not None:
        seconds = at.timestamp() if isinstance(at, datetime) else at
        args += [b"AT", ms("at", seconds, "AT_MS")]
    args += _policy(attempts, backoff, backoff_exp, timeout)
    if parent is not None:
        if unique is not None:
            raise InvalidInput("a flow's child takes no unique key: a held key would enqueue no child")
        args += [b"PARENT", link(parent)]
    if unique is not None:
        key = unique.encode("utf-8") if isinstance(unique, str) else bytes(unique)
        if not 1 <= len(key) <= _protocol.size("MAX_UNIQUE_KEY"):
            raise InvalidInput(f"a unique key is 1 to {_protocol.size('MAX_UNIQUE_KEY')} bytes")
        if unique_for is None:
            raise InvalidInput("unique needs unique_for: how long the key holds")
        args += [b"UNIQUE", key, b"UNIQUE_FOR", ms("unique_for", unique_for, "UNIQUE_MS")]
        if unique_until_done:
            args += [b"UNIQUE_DONE", b"1"]
    elif unique_for is not None or unique_until_done:
        raise InvalidInput("unique_for and unique_until_done need unique (a task's key is its arguments: "
                           "give it unique_for)")
    raw_headers = headers_bytes(headers, traceparent)
    if raw_headers is not None:
        args += [b"HEADERS", raw_headers]
    args += _group(group)
    return Call("enqueue", keys("enqueue", ks, job=raw_id), args)


def _policy(attempts: int | None, backoff: Duration | None, backoff_exp: Duration | None,
            timeout: Duration | None) -> list[bytes]:
    """A job's own policy as options (§7.2): ENQUEUE's and FLOW's."""
    args: list[bytes] = []
    if attempts is not None:
        args += [b"ATTEMPTS", integer("attempts", attempts, "MAX_ATTEMPTS")]
    if backoff is not None and backoff_exp is not None:
        raise InvalidInput("backoff and backoff_exp exclude each other")
    if backoff is not None:
        args += [b"BACKOFF", ms("backoff", backoff, "DELAY_MS")]
    if backoff_exp is not None:
        args += [b"BACKOFF_EXP", ms("backoff_exp", backoff_exp, "DELAY_MS")]
    if timeout is not None:
        args += [b"TIMEOUT", ms("timeout", timeout, "TIMEOUT_MS")]
    return args


def link(parent: Link) -> bytes:
    """A child's link, ``<incarnation> {<queue>}<id>`` (§7.8), its incarnation checked."""
    if not isinstance(parent, Link):
        raise InvalidInput(f"a parent is an echomq.model.Link, not {type(parent).__name__}")
    return integer("incarnation", parent.incarnation, "INCARNATION") + b" " + parent.parent.raw()


def flow(
    ks: Keyspace,
    job_id: str,
    body: bytes,
    children: Sequence[tuple[JobRef, str]],
    *,
    priority: int = 0,
    attempts: int | None = None,
    backoff: Duration | None = None,
    backoff_exp: Duration | None = None,
    timeout: Duration | None = None,
    headers: Mapping[str, str] | None = None,
    traceparent: str | None = None,
    parent: Link | None = None,
    group: str | None = None,
) -> Call:
    """FLOW (1.6, §7.8): a parent ``waiting`` for ``children``, each a
    child and what the parent does if it fails (``fail``, ``ignore`` or
    ``continue``); ENQUEUE's options but the due time and the unique key
    (``group``, 1.7: the parent's group, which it joins once it is due)."""
    raw_id = check_id(job_id)
    args = [raw_id, payload(body), *_dependencies(ks, job_id, children)]
    if priority != 0:
        args += [b"PRIORITY", integer("priority", priority, "PRIORITY")]
    args += _policy(attempts, backoff, backoff_exp, timeout)
    raw_headers = headers_bytes(headers, traceparent)
    if raw_headers is not None:
        args += [b"HEADERS", raw_headers]
    if parent is not None:
        args += [b"PARENT", link(parent)]
    args += _group(group)
    return Call("flow", keys("flow", ks, job=raw_id), args)


def resolve(ks: Keyspace, parent_id: str, incarnation: int, child: JobRef, outcome: str,
            result: bytes | None = None) -> Call:
    """RESOLVE (1.6, §7.8): tell parent ``parent_id`` of queue ``ks`` how ``child`` ended."""
    raw = check_id(parent_id)
    if outcome not in OUTCOMES:
        raise InvalidInput(f"an outcome is one of {', '.join(OUTCOMES)}, not {outcome!r}")
    args = [raw, integer("incarnation", incarnation, "INCARNATION"), child.raw(), outcome.encode(),
            *_result(result)]
    return Call("resolve", keys("resolve", ks, job=raw), args)


def children(ks: Keyspace, job_id: str) -> Call:
    """CHILDREN (1.6, §7.8): a parent's dependencies (read-only)."""
    raw = check_id(job_id)
    return Call("children", keys("children", ks, job=raw), [raw])


def enqueue_many(ks: Keyspace, jobs: Iterable[tuple[str, bytes]], *, group: str | None = None) -> list[Call]:
    """ENQUEUEMANY calls of at most 1000 jobs each (plain jobs: no options
    but ``group``, 1.7: every job of the calls joins it; a call that would
    take the group past its most pending is refused whole, ``EMQFULL``)."""
    most = _protocol.limit("ENQUEUES")[1]
    first = _group(group)
    calls: list[Call] = []
    args: list[bytes] = list(first)
    for job_id, body in jobs:
        args += [check_id(job_id), payload(body)]
        if len(args) == len(first) + 2 * most:
            calls.append(Call("enqueuemany", keys("enqueuemany", ks), args))
            args = list(first)
    if len(args) > len(first):
        calls.append(Call("enqueuemany", keys("enqueuemany", ks), args))
    return calls


def claim(ks: Keyspace, lease_ms: int, count: int = 1, block_ms: int | None = None,
          until: int | None = None) -> Call:
    args = [integer("lease (ms)", lease_ms, "LEASE_MS"), b"COUNT", integer("count", count, "CLAIM_COUNT")]
    if until is not None:  # 1.8: past this server ms, the claim takes nothing (§7.10)
        args += [b"UNTIL", integer("until", until, "AT_MS")]
    if block_ms is not None:
        args += [b"BLOCK", str(max(0, min(block_ms, 2_147_483_647))).encode()]
    return Call("claim", keys("claim", ks), args)


def permit(ks: Keyspace, count: int, lease_ms: int | None) -> Call:
    """PERMIT (1.8, §7.10) on a partitioned queue's keyspace: up to ``count``
    permits, for claims of a ``lease_ms`` lease, sent with the running key
    and LEASE as an exact concurrency needs them; ``None`` for the two-key
    form of a worker that read no exact concurrency, which a queue that has
    one refuses (``EMQARG``), so that the worker reads it again."""
    args = [b"COUNT", integer("count", count, "CLAIM_COUNT")]
    if lease_ms is None:
        return Call("permit", keys("permit", ks, count=2), args)
    args += [b"LEASE", integer("lease (ms)", lease_ms, "LEASE_MS")]
    return Call("permit", keys("permit", ks), args)


RENEWS = 1000
"""The most permits one RENEW names (§7.10)."""


def renew(ks: Keyspace, lease_ms: int, permits: Sequence[int]) -> Call:
    """RENEW (1.8, §7.10) on a partitioned queue's keyspace: the running
    permits ``permits`` (1 to :data:`RENEWS` of them) run on for another
    ``lease_ms``, before their jobs' leases are renewed."""
    if not 1 <= len(permits) <= RENEWS:
        raise InvalidInput(f"RENEW names 1 to {RENEWS} permits, not {len(permits)}")
    args = [integer("lease (ms)", lease_ms, "LEASE_MS"), *(integer("permit", n, "TOKEN") for n in permits)]
    return Call("renew", keys("renew", ks), args)


def _result(result: bytes | None) -> list[bytes]:
    return [] if result is None else [b"RESULT", payload(result, "result", "MAX_RESULT")]


def ack(ks: Keyspace, job_id: str, token: int, result: bytes | None = None) -> Call:
    raw = check_id(job_id)
    return Call("ack", keys("ack", ks, job=raw), [raw, integer("token", token, "TOKEN"), *_result(result)])


def acknext(ks: Keyspace, job_id: str, token: int, lease_ms: int, count: int,
            result: bytes | None = None) -> Call:
    raw = check_id(job_id)
    args = [raw, integer("token", token, "TOKEN"), integer("lease (ms)", lease_ms, "LEASE_MS"),
            *_result(result), b"COUNT", integer("count", count, "CLAIM_COUNT")]
    return Call("acknext", keys("acknext", ks, job=raw), args)


def ackmany(ks: Keyspace, jobs: Iterable[tuple[str, int, bytes | None]]) -> Call:
    args: list[bytes] = []
    for job_id, token, result in jobs:
        args += [check_id(job_id), integer("token", token, "TOKEN"), *_result(result)]
    return Call("ackmany", keys("ackmany", ks), args)


def error_text(text: str) -> bytes:
    """An error text, cut to the limit at a character's start (FAIL refuses a longer one)."""
    raw = text.encode("utf-8", "replace")
    most = _protocol.size("MAX_ERROR_TEXT")
    if len(raw) > most:
        raw = raw[:most]
        while raw and (raw[-1] & 0xC0) == 0x80:
            raw = raw[:-1]
        raw = raw.decode("utf-8", "ignore").encode()
    return raw


def fail(ks: Keyspace, job_id: str, token: int, max_attempts: int, backoff_ms: int, error: str) -> Call:
    raw = check_id(job_id)
    args = [raw, integer("token", token, "TOKEN"), integer("max attempts", max_attempts, "MAX_ATTEMPTS"),
            integer("back-off (ms)", backoff_ms, "DELAY_MS"), error_text(error)]
    return Call("fail", keys("fail", ks, job=raw), args)


def _dependencies(ks: Keyspace, job_id: str, children: Sequence[tuple[JobRef, str]]) -> list[bytes]:
    """FLOW's and ADOPT's children: their number, then each child and its
    on-failure; each named once, the parent not among them."""
    low, high = _protocol.limit("FLOW_CHILDREN")
    if not low <= len(children) <= high:
        raise InvalidInput(f"a parent names {low} to {high} children at once, not {len(children)}")
    args = [str(len(children)).encode()]
    seen: set[JobRef] = {JobRef(ks.name, job_id)}  # a parent is not its own child
    for child, on_failure in children:
        if not isinstance(child, JobRef):
            raise InvalidInput(f"a child is an echomq.model.JobRef, not {type(child).__name__}")
        if child in seen:
            raise InvalidInput(f"child {child} is named twice" if child.id != job_id or child.queue != ks.name
                               else f"{child} is named as its own child")
        seen.add(child)
        if on_failure not in ON_FAILURE:
            raise InvalidInput(f"child {child}: on_failure is one of {', '.join(ON_FAILURE)}, not {on_failure!r}")
        args += [child.raw(), on_failure.encode()]
    return args


def adopt(ks: Keyspace, job_id: str, token: int, max_attempts: int,
          children: Sequence[tuple[JobRef, str]]) -> Call:
    """ADOPT (1.6, §7.8): the holder's job waits for ``children`` (those it
    has no entry for are added), without spending its attempt."""
    raw = check_id(job_id)
    args = [raw, integer("token", token, "TOKEN"), integer("max attempts", max_attempts, "MAX_ATTEMPTS"),
            *_dependencies(ks, job_id, children)]
    return Call("adopt", keys("adopt", ks, job=raw), args)


def defer(ks: Keyspace, job_id: str, token: int, delay_ms: int, max_attempts: int, pause: bool) -> Call:
    raw = check_id(job_id)
    args = [raw, integer("token", token, "TOKEN"), integer("delay (ms)", delay_ms, "DELAY_MS"),
            integer("max attempts", max_attempts, "MAX_ATTEMPTS"), b"PAUSE", b"1" if pause else b"0"]
    return Call("defer", keys("defer", ks, job=raw), args)


def extend(ks: Keyspace, job_id: str, token: int, lease_ms: int) -> Call:
    raw = check_id(job_id)
    args = [raw, integer("token", token, "TOKEN"), integer("lease (ms)", lease_ms, "LEASE_MS")]
    return Call("extend", keys("extend", ks, job=raw), args)


def release(ks: Keyspace, job_id: str, token: int, refund: int | None) -> Call:
    """RELEASE; with ``refund`` (the caller's max attempts) the attempt is given back (1.1)."""
    raw = check_id(job_id)
    args = [raw, integer("token", token, "TOKEN")]
    if refund is None:
        return Call("release", keys("release", ks, job=raw, count=7), args)
    args += [b"REFUND", integer("max attempts", refund, "MAX_ATTEMPTS")]
    return Call("release", keys("release", ks, job=raw), args)


def progress(ks: Keyspace, job_id: str, token: int, value: bytes) -> Call:
    raw = check_id(job_id)
    args = [raw, integer("token", token, "TOKEN"), payload(value, "progress value", "MAX_PROGRESS")]
    return Call("progress", keys("progress", ks, job=raw), args)


def one_id(name: str, ks: Keyspace, job_id: str) -> Call:
    """CANCEL, RETRY or INSPECT: a job's keys and its id."""
    raw = check_id(job_id)
    return Call(name, keys(name, ks, job=raw), [raw])


REMOVE_MOST = 1000
"""The most ids one REMOVE takes (§7, REMOVE)."""


def remove(ks: Keyspace, state: str, job_ids: Sequence[str]) -> Call:
    """REMOVE: delete the chosen jobs of one state's set (1 to 1000 ids), with all kept beside them."""
    if not 1 <= len(job_ids) <= REMOVE_MOST:
        raise InvalidInput(f"REMOVE takes 1 to {REMOVE_MOST} ids a call, not {len(job_ids)}")
    return Call("remove", keys("remove", ks, state=state), [check_id(job_id) for job_id in job_ids])


def stats(ks: Keyspace) -> Call:
    return Call("stats", keys("stats", ks))


_CONFIG = ("PAUSED", "CONCURRENCY", "RATE", "PER", "DONE_AGE", "DONE_COUNT", "DEAD_AGE", "DEAD_COUNT",
           "CANCELLED_AGE", "CANCELLED_COUNT", "EVENTS")
_CONFIG_LIMIT = {"PAUSED": "SWITCH", "CONCURRENCY": "CONCURRENCY", "RATE": "RATE", "PER": "RATE_PERIOD_MS",
                 "DONE_AGE": "KEEP_MS", "DEAD_AGE": "KEEP_MS", "CANCELLED_AGE": "KEEP_MS",
                 "DONE_COUNT": "KEEP_COUNT", "DEAD_COUNT": "KEEP_COUNT", "CANCELLED_COUNT": "KEEP_COUNT",
                 "EVENTS": "EVENTS"}


CONFIG_OPTIONS = tuple(_CONFIG)
"""CONFIG's options, by their protocol names."""


def config(ks: Keyspace, settings: Mapping[str, int]) -> Call:
    """CONFIG with ``settings`` by option name (``PAUSED``, ``RATE``…, ages in ms); none reads."""
    args: list[bytes] = []
    for name, value in settings.items():
        upper = name.upper()
        if upper not in _CONFIG:
            raise InvalidInput(f"unknown setting {name!r}; CONFIG takes {', '.join(_CONFIG)}")
        args += [upper.encode(), integer(upper.lower(), value, _CONFIG_LIMIT[upper])]
    if settings.get("RATE", 0) and "PER" not in settings:
        raise InvalidInput("a rate needs per: the period it counts claims over")
    if "PER" in settings and "RATE" not in settings:
        raise InvalidInput("per needs rate")
    return Call("config", keys("config", ks), args)


def sweep(name: str, ks: Keyspace, limit: int, *, state: str | None = None,
          first: list[bytes] | None = None) -> Call:
    """REAP, PROMOTE, TRIM, SETTLE, PURGE or DRAIN with ``LIMIT``."""
    args = [*(first or []), b"LIMIT", integer("limit", limit, "SWEEP_LIMIT")]
    return Call(name, keys(name, ks, state=state), args)


def schedule_name(name: str) -> bytes:
    raw = name.encode("utf-8")
    if not 1 <= len(raw) <= _protocol.size("MAX_SCHEDULE_NAME"):
        raise InvalidInput(f"a schedule name is 1 to {_protocol.size('MAX_SCHEDULE_NAME')} bytes")
    return raw


def schedules(ks: Keyspace, *, due: bool = False, limit: int = 1000) -> Call:
    args = [b"DUE", b"1" if due else b"0", b"LIMIT", integer("limit", limit, "SWEEP_LIMIT")]
    return Call("schedules", keys("schedules", ks), args)


def schedule(ks: Keyspace, name: bytes, definition: bytes, first: int) -> Call:
    if len(definition) > _protocol.size("MAX_DEFINITION"):
        raise InvalidInput(f"a definition is at most {_protocol.size('MAX_DEFINITION')} bytes")
    return Call("schedule", keys("schedule", ks), [name, definition, integer("next", first, "AT_MS")])


def unschedule(ks: Keyspace, name: bytes) -> Call:
    return Call("unschedule", keys("unschedule", ks), [name])


def group(ks: Keyspace, name: str, *, weight: int | None = None, cap: int | None = None,
          rate: int | None = None, per: Duration | None = None, max: int | None = None,
          paused: bool | None = None) -> Call:
    """GROUP (1.7, §7.9): read group ``name``, changing first the settings
    given (None leaves one as it is): ``weight`` 1..=1000; ``cap``, ``rate``
    (claims per ``per``) and ``max`` (most pending), 0 removing each."""
    args = [group_name(name)]
    if weight is not None:
        args += [b"WEIGHT", integer("weight", weight, "GROUP_WEIGHT")]
    if cap is not None:
        args += [b"CAP", integer("cap", cap, "CONCURRENCY")]
    if rate is not None:
        args += [b"RATE", integer("rate", rate, "RATE")]
        if rate > 0 and per is None:
            raise InvalidInput("a rate needs per: the period it counts claims over")
    if per is not None:
        if rate is None:
            raise InvalidInput("per needs rate")
        per_ms = ms("per", per, "RATE_PERIOD_MS")
        if rate > 0:  # RATE 0 removes the rate, its period with it
            args += [b"PER", per_ms]
    if max is not None:
        args += [b"MAX", integer("max", max, "KEEP_COUNT")]
    if paused is not None:
        if not isinstance(paused, bool):
            raise InvalidInput(f"paused is True or False, not {paused!r}")
        args += [b"PAUSED", b"1" if paused else b"0"]
    return Call("group", keys("group", ks), args)


def groups(ks: Keyspace, *, after: str | None = None, limit: int = 100) -> Call:
    """GROUPS (1.7, §7.9): up to ``limit`` (1..=1000) groups by name, after ``after``."""
    args: list[bytes] = []
    if after is not None:
        args += [b"AFTER", group_name(after)]
    args += [b"LIMIT", integer("limit", limit, "SWEEP_LIMIT")]
    return Call("groups", keys("groups", ks), args)
