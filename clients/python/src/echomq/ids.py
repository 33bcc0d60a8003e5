"""Job ids (PROTOCOL.md §1, §11.2): any id whose first three bytes are
``JOB`` is a job; this package mints *branded* ones, ``JOB_`` + a ULID, each
greater than every one this process minted before (the monotonic rule of
§11.2), so that equal-priority jobs of one producer are claimed in order.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time

from .errors import InvalidInput

PREFIX = "JOB_"
KIND = b"JOB"
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_RANDOM_BITS = 80
_RANDOM_MAX = (1 << _RANDOM_BITS) - 1


def encode_ulid(value: int) -> str:
    """A 128-bit number as 26 characters of Crockford base32, upper case."""
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def decode_ulid(text: str) -> int:
    """The 128-bit number of a 26-character ULID (upper case)."""
    value = 0
    for char in text:
        value = value * 32 + _CROCKFORD.index(char)
    return value


class _Minter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_ms = -1
        self._last_random = 0

    def mint(self) -> str:
        with self._lock:
            while True:
                now = time.time_ns() // 1_000_000
                if now > self._last_ms:
                    self._last_ms = now
                    self._last_random = int.from_bytes(os.urandom(10), "big")
                    break
                # The same millisecond as the last id, or the clock stepped
                # back: the last id's time, its random part plus one.
                if self._last_random < _RANDOM_MAX:
                    self._last_random += 1
                    break
                # Overflow: wait for the clock to pass the last id's ms; never wrap.
                time.sleep(0.0005)
            return PREFIX + encode_ulid((self._last_ms << _RANDOM_BITS) | self._last_random)


_MINTER = _Minter()


def mint() -> str:
    """A new branded id, ``JOB_`` + 26 characters, greater than every id this process minted."""
    return _MINTER.mint()


def child_id(parent: str, at: int, queue: str, payload: bytes) -> str:
    """The id of the ``at``th child, in ``queue`` with ``payload``, of the
    job ``parent``, for a child named without one (dynamic children,
    :meth:`echomq.Job.wait_for`): the Rust host's ``JobId::child``. ``JOB_``
    and a ULID whose time is the parent's (a branded id's, else 0), whose
    next 16 bits are ``at`` and whose last 64 are the first 8 bytes of
    SHA-1(parent, 0x00, ``at`` in decimal, 0x00, queue, 0x00, payload): the
    same each time, so a parent that names its children again adds none twice."""
    time_ms = decode_ulid(parent[4:]) >> _RANDOM_BITS if is_branded(parent) else 0
    digest = hashlib.sha1(b"\0".join([parent.encode(), str(at).encode(), queue.encode(), payload])).digest()
    hashed = int.from_bytes(digest[:8], "big")
    return PREFIX + encode_ulid((time_ms << _RANDOM_BITS) | (at & 0xFFFF) << 64 | hashed)


def is_branded(job_id: str) -> bool:
    """Whether ``job_id`` carries the full brand: ``JOB_`` and a canonical ULID."""
    return (
        len(job_id) == 30
        and job_id.startswith(PREFIX)
        and all(c in _CROCKFORD for c in job_id[4:])
        and job_id[4] <= "7"
    )


def check_id(job_id: str | bytes) -> bytes:
    """The id's bytes, or :class:`InvalidInput` when the server's kind gate would refuse it."""
    raw = job_id.encode("utf-8", "surrogateescape") if isinstance(job_id, str) else job_id
    if not isinstance(raw, bytes) or not raw.startswith(KIND):
        raise InvalidInput(f"job id {job_id!r}: it must start with JOB")
    return raw
