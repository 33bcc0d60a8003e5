"""What the package knows of the protocol, read from the files the build put
beside it (``echomq/scripts/``): the version, the limits of PROTOCOL.md §11.1
and §7, each transition's script, native command and keys in order (§7's
table). Nothing here is typed in by hand: see ``hatch_build.py``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any


@dataclass(frozen=True)
class Transition:
    """One transition of PROTOCOL.md §7, as its table describes it."""

    name: str
    """The protocol's name, lower case: ``enqueue``, ``claim``…"""
    file: str
    """Its script, ``<name>.lua``."""
    command: str
    """Its native command, ``EMQ.<NAME>``."""
    keys: tuple[str, ...]
    """Its KEYS' roles in order, after ``emq:{q}:``: ``job:<id>``, ``pending``…"""
    key_counts: tuple[int, ...]
    """The numbers of keys a call may send (ENQUEUE: 2, 11 or 12)."""
    sha1: str
    """The SHA1 of its expanded script: what EVALSHA calls it by."""
    source: bytes
    """The expanded script, as SCRIPT LOAD takes it."""
    effect: str = ""
    """What it does, as §7's table says: ``reads``, ``writes, fenced``…"""

    @property
    def read_only(self) -> bool:
        """Whether it only reads (EVALSHA_RO): §7's table says ``reads``
        (INSPECT, STATS, COUNTS, SCHEDULES, CHILDREN)."""
        return self.effect == "reads"


def _files() -> Any:
    return resources.files("echomq").joinpath("scripts")


@lru_cache(maxsize=1)
def manifest() -> dict[str, Any]:
    """``manifest.json``, as ``emq scripts --out`` writes it."""
    return dict(json.loads(_files().joinpath("manifest.json").read_text(encoding="utf-8")))


@lru_cache(maxsize=1)
def _table() -> dict[str, Any]:
    return dict(json.loads(_files().joinpath("protocol.json").read_text(encoding="utf-8")))


@lru_cache(maxsize=1)
def transitions() -> dict[str, Transition]:
    """Every transition by its lower-case name."""
    sha1s = {entry["transition"]: entry["sha1"] for entry in manifest()["scripts"]}
    found = {}
    for row in _table()["transitions"]:
        name = row["transition"]
        found[name] = Transition(
            name=name,
            file=row["file"],
            command=row["command"],
            keys=tuple(row["keys"]),
            key_counts=tuple(row["key_counts"]),
            sha1=sha1s[name],
            source=_files().joinpath(row["file"]).read_bytes(),
            effect=row.get("effect", ""),
        )
    return found


def transition(name: str) -> Transition:
    """The transition ``name`` (``claim``)."""
    return transitions()[name]


def limit(name: str) -> tuple[int, int]:
    """A limit of §11.1's table as ``(low, high)``; a single value ``n`` is ``(n, n)``."""
    value = _table()["limits"][name]
    if isinstance(value, list):
        return int(value[0]), int(value[1])
    return int(value), int(value)


def size(name: str) -> int:
    """A single-valued limit of §11.1's table (``MAX_PAYLOAD``)."""
    return limit(name)[1]


def version() -> tuple[int, int]:
    """The protocol version this package speaks: its scripts' (``manifest.json``)."""
    major, minor = manifest()["protocol"].split(".")
    return int(major), int(minor)


def version_text() -> str:
    major, minor = version()
    return f"{major}.{minor}"
