"""Fair groups (protocol 1.7, PROTOCOL.md §7.9): what GROUP and GROUPS
answer, as values.

A job may carry a group (a tenant, a customer, a key: ``enqueue(...,
group="tenant-7")``); claims take turns among the groups that have work,
by weight, so one tenant's burst does not make the others wait behind it.
Each group may have a weight, a cap on its running jobs, a rate, a most
pending and a pause of its own, set with :meth:`~echomq.Queue.set_group`
and read with :meth:`~echomq.Queue.group`, :meth:`~echomq.Queue.groups`
(a page) and :meth:`~echomq.Queue.all_groups` (every page). Workers need
nothing: the server's claim is fair by itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from .errors import EchoMQError

Standing = Literal["ready", "idle", "paused", "capped", "limited"]
"""Where a group stands (§7.9), read in this order: ``paused``; ``idle``
(nothing pending); ``capped`` (running its cap); ``limited`` (its rate's
window is full); else ``ready`` (a claim may take from it now)."""

STANDINGS: tuple[Standing, ...] = ("ready", "idle", "paused", "capped", "limited")


@dataclass(frozen=True)
class GroupInfo:
    """One group as GROUP answers it: its counts, where it stands and its
    settings (None: not set, no bound)."""

    name: str
    """The group's name."""
    pending: int
    """Its jobs waiting to be claimed (delayed ones count once due)."""
    running: int
    """Its jobs held by a lease now: the size of its lease set, never a counter."""
    standing: Standing
    """Whether a claim may take from it now, and if not, why."""
    weight: int = 1
    """Its share against the other groups (1..=1000)."""
    cap: int | None = None
    """The most of its jobs running at once."""
    rate: int | None = None
    """The most of its jobs claimed in any ``per``."""
    per_ms: int | None = None
    """The rate's period, ms."""
    max: int | None = None
    """The most of its jobs pending; an enqueue past it raises :class:`~echomq.errors.GroupFull`."""
    paused: bool = False
    """A paused group is claimed from by no one."""
    settings: str = ""
    """Its settings as the server keeps them (``WEIGHT 2 CAP 3``; ``""`` for the defaults)."""

    @property
    def per(self) -> float | None:
        """The rate's period in seconds."""
        return None if self.per_ms is None else self.per_ms / 1000

    @staticmethod
    def read(reply: Any) -> GroupInfo:
        """GROUP's reply, or a row of GROUPS': ``[group, pending, running, standing, settings]``."""
        if not isinstance(reply, list) or len(reply) < 5:
            raise EchoMQError(f"a group's row is [group, pending, running, standing, settings], not {reply!r}")
        name, pending, running, standing, text = reply[:5]
        standing = _text(standing)
        if standing not in STANDINGS:
            raise EchoMQError(f"group {_text(name)!r} stands {standing!r}: not one of {', '.join(STANDINGS)}")
        settings = _text(text)
        found = _settings(settings)
        return GroupInfo(
            name=_text(name), pending=int(pending), running=int(running), standing=standing,
            weight=found.get("WEIGHT", 1), cap=found.get("CAP"), rate=found.get("RATE"),
            per_ms=found.get("PER"), max=found.get("MAX"), paused=found.get("PAUSED") == 1, settings=settings)


@dataclass(frozen=True)
class GroupPage:
    """A page of a queue's groups by name (GROUPS)."""

    groups: list[GroupInfo]
    """Up to the page's limit of groups, in byte order of their names."""
    next: str | None
    """The next page's ``after``: None after the last page."""

    @staticmethod
    def read(reply: Any) -> GroupPage:
        """GROUPS' reply: ``[next or nil, row…]``."""
        if not isinstance(reply, list) or not reply:
            raise EchoMQError(f"GROUPS answered {reply!r}")
        after = None if reply[0] is None else _text(reply[0])
        return GroupPage([GroupInfo.read(row) for row in reply[1:]], after)


def _text(value: Any) -> Any:
    """A bulk string as str (a name's bytes that are not UTF-8 kept as surrogates)."""
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


def _settings(text: str) -> dict[str, int]:
    """A settings text's words in pairs (``WEIGHT 2 RATE 10 PER 1000``) by
    name; a pair a later minor may add and this one cannot read is left
    to :attr:`GroupInfo.settings` (§12: a speaker leaves alone what it does not know)."""
    words = text.split()
    return {name: int(value) for name, value in zip(words[::2], words[1::2]) if value.isdigit()}


__all__ = ["GroupInfo", "GroupPage", "STANDINGS", "Standing"]
