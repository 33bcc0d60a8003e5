"""Schedules, the host's half (PROTOCOL.md §11.6): definitions, tick ids and
the firing every worker does in its upkeep. This package reads ``every``
definitions, paused or not; a ``cron`` one it leaves alone and says so
(§11.6: a host that cannot read a definition never guesses)."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass

from . import calls
from .executor import Call
from .ids import encode_ulid
from .keyspace import Keyspace

log = logging.getLogger("echomq.schedule")

MISSED_WINDOW_MS = 60_000

PAUSED = "paused "
"""The word a paused schedule's header line begins with, and its space (§11.6)."""


def tick_id(queue: str, schedule: str, tick: int) -> str:
    """The tick's job id, byte for byte as §11.6 says."""
    digest = hashlib.sha1(
        queue.encode() + b"\x00" + schedule.encode() + b"\x00" + str(tick).encode()
    ).digest()
    return "JOB_" + encode_ulid((tick << 80) | int.from_bytes(digest[:10], "big"))


@dataclass(frozen=True)
class Every:
    """``every <ms> <missed>``: ticks at each multiple of ``ms``; ``paused``
    (the header begins ``paused ``): its ticks fire no job, they only move on."""

    every_ms: int
    missed: str
    payload: bytes
    paused: bool = False

    @staticmethod
    def read(definition: bytes) -> Every | None:
        header, _, payload = definition.partition(b"\n")
        text = header.decode("utf-8", "replace")
        rest = text.removeprefix(PAUSED)
        words = rest.split(" ")
        if len(words) != 3 or words[0] != "every" or not words[1].isdigit():
            return None
        every = int(words[1])
        missed = words[2]
        if not 1 <= every <= 999_999_999_999:
            return None
        if missed not in ("last", "none"):
            if not missed.startswith("all:") or not missed[4:].isdigit() or not 1 <= int(missed[4:]) <= 1000:
                return None
        return Every(every, missed, payload, paused=rest != text)

    def definition(self) -> bytes:
        paused = PAUSED if self.paused else ""
        return f"{paused}every {self.every_ms} {self.missed}\n".encode() + self.payload

    def first_after(self, now: int) -> int:
        return (now // self.every_ms + 1) * self.every_ms


def fires(ks: Keyspace, name: str, every: Every, due: int, now: int) -> list[Call]:
    """The FIREs for one due schedule, to be sent one at a time, stopping at
    the first ``-1``; a paused one's is a single FIRE with ``SKIP 1``."""
    latest = max(due, now // every.every_ms * every.every_ms)
    after = (latest // every.every_ms + 1) * every.every_ms
    if every.paused:
        ticks = []  # fire nothing: the ticks move on
    elif every.missed == "last":
        ticks = [latest]
    elif every.missed == "none":
        ticks = [latest] if now - latest <= MISSED_WINDOW_MS else []
    else:
        n = int(every.missed[4:])
        ticks = sorted(t for t in (latest - i * every.every_ms for i in range(n)) if t >= due)
    out = []
    if not ticks:
        job = tick_id(ks.name, name, latest).encode()
        return [_fire(ks, job, every.payload, name, due, after, skip=True)]
    tick = due
    for i, t in enumerate(ticks):
        following = ticks[i + 1] if i + 1 < len(ticks) else after
        out.append(_fire(ks, tick_id(ks.name, name, t).encode(), every.payload, name, tick, following))
        tick = following
    return out


def _fire(ks: Keyspace, job: bytes, payload: bytes, name: str, tick: int, following: int,
          skip: bool = False) -> Call:
    args = [job, payload, name.encode(), str(tick).encode(), str(following).encode()]
    if skip:
        args += [b"SKIP", b"1"]
    return Call("fire", calls.keys("fire", ks, job=job), args)
