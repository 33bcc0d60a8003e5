"""Schedules, the host's half (PROTOCOL.md §11.6): definitions, tick ids and
the firing every worker does in its upkeep. This package reads ``every``
and ``cron`` definitions (:mod:`echomq.cron` reads the expressions as the
Rust host's croner does), paused or not; one it cannot read it leaves
alone and says so (§11.6: a host that cannot read a definition never
guesses)."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, replace
from zoneinfo import ZoneInfo

from . import _protocol, calls
from .cron import Cron as CronExpression
from .cron import CronError, zone
from .executor import Call
from .ids import encode_ulid
from .keyspace import Keyspace

log = logging.getLogger("echomq.schedule")

MISSED_WINDOW_MS = 60_000

PAUSED = "paused "
"""The word a paused schedule's header line begins with, and its space (§11.6)."""


MISSED = ("last", "none")
"""The missed-tick policies with no bound; the third is ``all:<n>``, n in 1..=1000."""


def _missed(word: str) -> bool:
    return word in MISSED or (word.startswith("all:") and word[4:].isdigit() and 1 <= int(word[4:]) <= 1000)


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
        if not 1 <= every <= 999_999_999_999 or not _missed(missed):
            return None
        return Every(every, missed, payload, paused=rest != text)

    def definition(self) -> bytes:
        paused = PAUSED if self.paused else ""
        return f"{paused}every {self.every_ms} {self.missed}\n".encode() + self.payload

    def first_after(self, now: int) -> int:
        return (now // self.every_ms + 1) * self.every_ms

    def next_after(self, ms: int) -> int | None:
        return (ms // self.every_ms + 1) * self.every_ms

    def last_at_or_before(self, ms: int) -> int | None:
        return ms // self.every_ms * self.every_ms

    def with_paused(self, paused: bool) -> Every:
        return replace(self, paused=paused)


@dataclass(frozen=True)
class Cron:
    """``cron <zone> <missed> <expression>``: ticks at the instants the
    expression names in the IANA time zone ``zone``; ``paused`` as :class:`Every`."""

    zone: str
    missed: str
    expression: str
    payload: bytes
    paused: bool = False

    @staticmethod
    def read(definition: bytes) -> Cron | None:
        header, _, payload = definition.partition(b"\n")
        try:
            text = header.decode("utf-8")
        except UnicodeDecodeError:
            return None
        rest = text.removeprefix(PAUSED)
        words = rest.split(" ", 3)
        if len(words) != 4 or words[0] != "cron" or not _missed(words[2]):
            return None
        try:
            made = Cron.of(words[1], words[3], payload, missed=words[2], paused=rest != text)
        except CronError:
            return None
        return made

    @staticmethod
    def of(zone_name: str, expression: str, payload: bytes, *, missed: str = "last", paused: bool = False) -> Cron:
        """A cron schedule, every part checked: :class:`~echomq.cron.CronError` otherwise."""
        if "\n" in expression or not expression.strip():
            raise CronError("a cron expression is one line")
        if not _missed(missed):
            raise CronError(f"missed {missed!r} is not last, none or all:<1..=1000>")
        zone(zone_name)
        CronExpression.parse(expression)
        return Cron(zone_name, missed, expression.strip(), payload, paused)

    @property
    def _parsed(self) -> tuple[CronExpression, ZoneInfo]:
        return CronExpression.parse(self.expression), zone(self.zone)

    def definition(self) -> bytes:
        paused = PAUSED if self.paused else ""
        return f"{paused}cron {self.zone} {self.missed} {self.expression}\n".encode() + self.payload

    def first_after(self, now: int) -> int:
        """The first tick after ``now``; none, or one past AT_MS's range (a year after 2286, which
        ``emq`` reads as none too), is the "never" tick."""
        found = self.next_after(now)
        return found if found is not None and found <= _NEVER else _NEVER

    def next_after(self, ms: int) -> int | None:
        expression, where = self._parsed
        return expression.next_after(ms, where)

    def last_at_or_before(self, ms: int) -> int | None:
        expression, where = self._parsed
        return expression.last_at_or_before(ms, where)

    def with_paused(self, paused: bool) -> Cron:
        return replace(self, paused=paused)


Schedule = Every | Cron
"""A schedule's definition as this package reads it."""

_NEVER = _protocol.limit("AT_MS")[1]


def read(definition: bytes) -> Schedule | None:
    """A stored definition (§11.6), ``every`` or ``cron``; None when this package cannot read it."""
    return Every.read(definition) or Cron.read(definition)


def fires(ks: Keyspace, name: str, schedule: Schedule, due: int, now: int) -> list[Call]:
    """The FIREs for one due schedule, to be sent one at a time, stopping at
    the first ``-1`` (§11.6, as the Rust host plans them); a paused one's
    is a single FIRE with ``SKIP 1``."""
    latest = schedule.last_at_or_before(now)
    if latest is None or latest < due:
        latest = due
    found = schedule.next_after(latest)
    after = min(max(found if found is not None else _NEVER, latest + 1), _NEVER)
    ticks: list[int]
    if schedule.paused:
        ticks = []  # fire nothing: the ticks move on
    elif schedule.missed == "last":
        ticks = [latest]
    elif schedule.missed == "none":
        ticks = [latest] if now - latest <= MISSED_WINDOW_MS else []
    else:
        ticks = [latest]
        while len(ticks) < int(schedule.missed[4:]):
            earlier = schedule.last_at_or_before(ticks[-1] - 1) if ticks[-1] > 0 else None
            if earlier is None or earlier < due:
                break
            ticks.append(earlier)
        ticks.reverse()
    if not ticks:
        job = tick_id(ks.name, name, latest).encode()
        return [_fire(ks, job, schedule.payload, name, due, max(after, due + 1), skip=True)]
    out = []
    tick = due
    for i, t in enumerate(ticks):
        following = max(ticks[i + 1] if i + 1 < len(ticks) else after, tick + 1)
        out.append(_fire(ks, tick_id(ks.name, name, t).encode(), schedule.payload, name, tick, following))
        tick = following
    return out


def _fire(ks: Keyspace, job: bytes, payload: bytes, name: str, tick: int, following: int,
          skip: bool = False) -> Call:
    args = [job, payload, name.encode(), str(tick).encode(), str(following).encode()]
    if skip:
        args += [b"SKIP", b"1"]
    return Call("fire", calls.keys("fire", ks, job=job), args)
