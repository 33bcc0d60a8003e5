"""A worker's entry in the worker registry (PROTOCOL.md §2 and §11.3,
``emq:workers``): written when the worker starts and every beat, with the
jobs it runs now, under a TTL of three beats, so that a killed worker's
entry expires by itself; deleted when it stops gracefully. Advisory: a
failure to write it is logged once, and the worker works on."""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from typing import Any, Iterable

import redis
from redis.typing import EncodableT, FieldT

from . import _protocol, ids

log = logging.getLogger("echomq.registration")

#: The worker registry (§2): worker id -> its last beat (its clock, ms).
WORKERS = b"emq:workers"

MIN_BEAT, MAX_BEAT = 0.01, 60.0
"""The beats a worker takes, in seconds (§11.3): others are brought within them."""

TTL_BEATS = 3
"""A registration lives this many beats without another."""


def worker_key(worker_id: str) -> bytes:
    """A worker's hash, ``emq:worker:<id>``."""
    return b"emq:worker:" + worker_id.encode("utf-8")


def new_id() -> str:
    """A worker id new to this run: ``<host>:<pid>:<ULID>``."""
    return f"{socket.gethostname()}:{os.getpid()}:{ids.mint()[len('JOB_'):]}"


def now_ms() -> int:
    return int(time.time() * 1000)


class Registration:
    """One worker's entry on one server: :meth:`beat` writes it, with the
    running jobs it is given, :meth:`leave` deletes it."""

    def __init__(self, client: redis.asyncio.Redis, worker_id: str, queues: list[str],
                 concurrency: int, beat: float) -> None:
        from . import __version__

        self.client = client
        self.id = worker_id
        self.key = worker_key(worker_id)
        self.beat_every = min(max(beat, MIN_BEAT), MAX_BEAT)
        self.ttl_ms = int(self.beat_every * TTL_BEATS * 1000)
        self.fixed: dict[FieldT, EncodableT] = {
            "host": socket.gethostname(),
            "pid": str(os.getpid()),
            "queues": json.dumps(queues),
            "concurrency": str(concurrency),
            "version": f"echomq-python {__version__}",
            "protocol": _protocol.version_text(),
            "started": str(now_ms()),
            "ttl": str(self.ttl_ms),
        }
        self._failing = False

    async def beat(self, running: Iterable[dict[str, Any]]) -> None:
        """Write the entry (§11.3): HSET, PEXPIRE, then ZADD, in that order."""
        at = now_ms()
        fields: dict[FieldT, EncodableT] = {**self.fixed, "beat": str(at), "running": json.dumps(list(running))}
        try:
            async with self.client.pipeline(transaction=False) as pipe:
                pipe.hset(self.key, mapping=fields)
                pipe.pexpire(self.key, self.ttl_ms)
                await pipe.execute()
            await self.client.zadd(WORKERS, {self.id: at})
        except redis.RedisError as err:
            if not self._failing:
                log.warning("the worker registry could not be written for %s: %s; working on without it",
                            self.id, err)
            self._failing = True
            return
        if self._failing:
            log.info("the worker registry is written again for %s", self.id)
        self._failing = False

    async def leave(self) -> None:
        """A graceful stop: DEL the hash, ZREM the id."""
        try:
            await self.client.delete(self.key)
            await self.client.zrem(WORKERS, self.id)
        except redis.RedisError as err:
            log.debug("cannot take %s out of the worker registry (it expires): %s", self.id, err)
