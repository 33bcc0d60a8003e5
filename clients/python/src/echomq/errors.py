"""Errors: one class per protocol error code (PROTOCOL.md §10), each carrying
the code and the server's text, and the host's own refusals, which never
borrow a server code (a bad argument caught before sending is
:class:`InvalidInput`, not ``EMQARG``).
"""

from __future__ import annotations

import re


class EchoMQError(Exception):
    """Every error this package raises of its own. A server that cannot be
    reached, or does not answer in time, raises redis-py's
    ``redis.exceptions.ConnectionError`` or ``TimeoutError`` as they are:
    nothing was done then, or (a connection broken on the way) maybe."""


class InvalidInput(EchoMQError, ValueError):
    """Refused by this host before anything was sent: a bad queue name, id,
    payload, priority, delay… (the limits of PROTOCOL.md §7)."""


class OtherMajor(EchoMQError):
    """The server (the module, or a queue's ``protocol`` field) speaks
    another major version of the protocol: nothing was written."""

    def __init__(self, own: str, found: str, by: str) -> None:
        super().__init__(f"{by} speaks protocol {found}; this speaker (echomq for Python) is {own}")
        self.own = own
        self.found = found
        self.by = by


class OlderMinor(EchoMQError):
    """The module speaks an earlier minor version than the calls this package sends need."""

    def __init__(self, own: str, found: str, by: str) -> None:
        super().__init__(
            f"{by} speaks protocol {found}, older than this speaker's {own}: upgrade the module"
        )
        self.own = own
        self.found = found
        self.by = by


class Refused(EchoMQError):
    """The server refused a transition: ``code`` is the first word of its
    error reply (§10), ``message`` the rest."""

    code: str = ""

    def __init__(self, message: str, code: str | None = None) -> None:
        if code is not None:
            self.code = code
        super().__init__(f"{self.code} {message}" if message else self.code)
        self.message = message


class KindError(Refused):
    """``EMQKIND``: the id's first three bytes are not ``JOB``."""

    code = "EMQKIND"


class FenceError(Refused):
    """``EMQFENCE``: the token does not hold the lease: the job is no longer yours."""

    code = "EMQFENCE"


class NoJobError(Refused):
    """``EMQNOJOB``: there is no record for the id."""

    code = "EMQNOJOB"


class StateError(Refused):
    """``EMQSTATE``: the job's state does not allow the transition."""

    code = "EMQSTATE"


class KeyTypeError(Refused):
    """``EMQTYPE``: a key holds a value of the wrong Redis type."""

    code = "EMQTYPE"


class ArgError(Refused):
    """``EMQARG``: a malformed call."""

    code = "EMQARG"


class SizeError(Refused):
    """``EMQSIZE``: a payload, result, error text, progress or definition over its limit."""

    code = "EMQSIZE"


class DataError(Refused):
    """``EMQDATA``: malformed stored state."""

    code = "EMQDATA"


class VersionError(Refused):
    """``EMQVERSION``: the queue was written by another major of the protocol."""

    code = "EMQVERSION"


class GroupFull(Refused):
    """``EMQFULL`` (1.7, §7.9): the job's group holds as many pending jobs
    as its ``max`` (:meth:`~echomq.Queue.set_group`); nothing was written.
    ``group`` and ``max`` are read from the server's text when it says them."""

    code = "EMQFULL"

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message, code)
        found = _FULL.match(message)
        self.group: str | None = found.group(1) if found else None
        """The group that is full."""
        self.max: int | None = int(found.group(2)) if found else None
        """Its most pending jobs."""


_FULL = re.compile(r"^group (.*) holds its MAX of (\d+) pending jobs$", re.DOTALL)


class TryAgain(Refused):
    """``TRYAGAIN``: Redis Cluster's own, while a record may be on another node; send again."""

    code = "TRYAGAIN"


CODES: dict[str, type[Refused]] = {
    cls.code: cls
    for cls in (
        KindError,
        FenceError,
        NoJobError,
        StateError,
        KeyTypeError,
        ArgError,
        SizeError,
        DataError,
        VersionError,
        GroupFull,
        TryAgain,
    )
}


def refusal(text: str) -> Refused | None:
    """The protocol error an error reply's text is, or None when its first word is no code of §10."""
    code, _, message = text.partition(" ")
    cls = CODES.get(code)
    return cls(message) if cls is not None else None


class JobDied(EchoMQError):
    """A job whose result was asked for (:meth:`echomq.Task.result`) ended
    dead, its attempts spent: ``error`` is its last error."""

    def __init__(self, job_id: str, error: str | None) -> None:
        first = (error or "no error kept").partition("\n")[0]
        super().__init__(f"job {job_id} died: {first}")
        self.job_id = job_id
        self.error = error


class JobCancelled(EchoMQError):
    """A job whose result was asked for (:meth:`echomq.Task.result`) was cancelled."""

    def __init__(self, job_id: str) -> None:
        super().__init__(f"job {job_id} was cancelled")
        self.job_id = job_id

