"""A queue's keys (PROTOCOL.md §2), built in one place: every key of queue
``q`` is ``emq:{q}:<name>``, a job's record ``emq:{q}:job:<id>``."""

from __future__ import annotations

from .errors import InvalidInput

MAX_QUEUE_NAME = 255


def check_queue(name: str) -> bytes:
    """The queue name's bytes, or :class:`InvalidInput`: 1 to 255 bytes, never ``{``, ``}`` or NUL (§1)."""
    if not isinstance(name, str):
        raise InvalidInput(f"a queue name is a str, not {type(name).__name__}")
    raw = name.encode("utf-8")
    if not 1 <= len(raw) <= MAX_QUEUE_NAME:
        raise InvalidInput(f"queue name {name!r}: it must be 1 to {MAX_QUEUE_NAME} bytes")
    for bad in (b"{", b"}", b"\x00"):
        if bad in raw:
            raise InvalidInput(f"queue name {name!r}: it must not hold {bad.decode()!r}")
    return raw


#: The queue registry (§2): queue name -> the ms it was last seen, noted by
#: every speaker that enqueues to a queue or works it, so that tools find
#: queues without scanning the keyspace.
REGISTRY = b"emq:queues"


class Keyspace:
    """The keys of one queue."""

    __slots__ = ("name", "prefix")

    def __init__(self, name: str) -> None:
        self.name = name
        self.prefix = b"emq:{" + check_queue(name) + b"}:"

    def key(self, role: str) -> bytes:
        """The queue's key of §2's table: ``pending``, ``events``…"""
        return self.prefix + role.encode()

    def job(self, job_id: str | bytes) -> bytes:
        """A job's record, ``emq:{q}:job:<id>``."""
        raw = job_id.encode("utf-8", "surrogateescape") if isinstance(job_id, str) else job_id
        return self.prefix + b"job:" + raw

    def children(self, job_id: str | bytes) -> bytes:
        """A flow's parent's dependencies, ``emq:{q}:children:<id>`` (1.6, §7.8)."""
        raw = job_id.encode("utf-8", "surrogateescape") if isinstance(job_id, str) else job_id
        return self.prefix + b"children:" + raw

    def __repr__(self) -> str:
        return f"Keyspace({self.name!r})"
