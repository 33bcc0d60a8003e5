"""Test support: a real redis-server per executor (never a mock), started on a
free loopback port and stopped after; the binaries from environment variables:

- ``ECHOMQ_REDIS_SERVER``: redis-server (default: on PATH);
- ``ECHOMQ_MODULE``: the echomq module's .so (default: the repository's
  ``target/debug``, where ``cargo build -p echomq-module`` puts it, or
  ``target/debug/deps``);
- ``ECHOMQ_EMQ``: the ``emq`` CLI (default: ``target/debug/emq``).

Every test that takes ``kind`` runs twice: on Lua (a server without the
module) and on Native (the module loaded). Conditions are waited for with
deadlines, never fixed sleeps (:func:`eventually`).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, Iterator

import pytest
import redis

import echomq

REPO = Path(__file__).resolve().parents[3]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))


def module_path() -> Path:
    if "ECHOMQ_MODULE" in os.environ:
        return Path(os.environ["ECHOMQ_MODULE"]).resolve()
    for candidate in (TARGET / "debug/libechomq_module.so", TARGET / "debug/deps/libechomq_module.so"):
        if candidate.is_file():
            return candidate.resolve()
    raise RuntimeError("the echomq module is not built: cargo build -p echomq-module, or set ECHOMQ_MODULE")


def emq_path() -> Path:
    path = Path(os.environ.get("ECHOMQ_EMQ", TARGET / "debug/emq"))
    if not path.is_file():
        raise RuntimeError(f"emq is not at {path}: cargo build -p emq, or set ECHOMQ_EMQ")
    return path.resolve()


def redis_server_path() -> str:
    return os.environ.get("ECHOMQ_REDIS_SERVER", "redis-server")


_counter = itertools.count()


def unique_queue(prefix: str = "py") -> str:
    return f"{prefix}-{os.getpid()}-{next(_counter)}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """A redis-server of the test's own on 127.0.0.1, killed by :meth:`stop`."""

    def __init__(self, module: Path | None) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="echomq-py-redis-"))
        last = ""
        for _ in range(5):
            self.port = _free_port()
            args = [redis_server_path(), "--port", str(self.port), "--bind", "127.0.0.1",
                    "--save", "", "--appendonly", "no", "--daemonize", "no",
                    "--dir", str(self.dir), "--logfile", str(self.dir / "redis.log")]
            if module is not None:
                args += ["--loadmodule", str(module)]
            self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL)
            if self._ready():
                return
            self.process.kill()
            self.process.wait()
            last = (self.dir / "redis.log").read_text(errors="replace") if (self.dir / "redis.log").exists() else ""
        raise RuntimeError(f"redis-server did not start; its log:\n{last}")

    def _ready(self) -> bool:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                client = redis.Redis(port=self.port, socket_timeout=1)
                found = client.config_get("dir")
                client.close()
                if Path(found["dir"]).resolve() == self.dir.resolve():
                    return True
            except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError):
                pass
            time.sleep(0.01)
        return False

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, decode_responses=False)

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class Servers:
    """One server per executor, started when a test first needs it: Lua's
    without the module, Native's with it loaded."""

    def __init__(self) -> None:
        self.started: dict[str, RedisServer] = {}

    def __getitem__(self, kind: str) -> RedisServer:
        if kind not in self.started:
            self.started[kind] = RedisServer(module_path() if kind == "native" else None)
        return self.started[kind]


@pytest.fixture(scope="session")
def servers() -> Iterator[Servers]:
    started = Servers()
    yield started
    for server in started.started.values():
        server.stop()


@pytest.fixture(params=["lua", "native"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def server(servers: Servers, kind: str) -> RedisServer:
    return servers[kind]


@pytest.fixture
async def conn(server: RedisServer, kind: str) -> AsyncIterator[echomq.Connection]:
    connection = await echomq.connect(server.url)
    assert connection.executor.kind == kind
    yield connection
    await connection.close()


@pytest.fixture
async def queue(conn: echomq.Connection) -> echomq.Queue:
    return await conn.queue(unique_queue())


async def eventually(check: Callable[[], Awaitable[Any]], timeout: float = 30.0, what: str = "") -> Any:
    """Wait until ``check()`` answers something true, up to ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    delay = 0.005
    while True:
        found = await check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what or check}")
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.2)


def wait_until(check: Callable[[], Any], timeout: float = 30.0, what: str = "") -> Any:
    """:func:`eventually`, synchronous."""
    deadline = time.monotonic() + timeout
    delay = 0.005
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what or check}")
        time.sleep(delay)
        delay = min(delay * 2, 0.2)


def keyspace(client: redis.Redis, prefix: str) -> dict[bytes, Any]:
    """Every key under ``prefix`` with its type and content: to assert nothing was written."""
    found: dict[bytes, Any] = {}
    for key in client.scan_iter(match=prefix + "*"):
        kind = client.type(key)
        if kind == b"hash":
            found[key] = client.hgetall(key)
        elif kind == b"zset":
            found[key] = client.zrange(key, 0, -1, withscores=True)
        elif kind == b"stream":
            found[key] = client.xrange(key)
        else:
            found[key] = (kind, client.dump(key))
    return found


def transitions_sent(client: redis.Redis) -> int:
    """How many transitions the server has run: EVALSHA calls and EMQ.* commands (EMQ.VERSION aside)."""
    stats = client.info("commandstats")
    return sum(int(v["calls"]) for k, v in stats.items()
               if k.startswith("cmdstat_evalsha") or (k.startswith("cmdstat_emq.") and k != "cmdstat_emq.version"))


@asynccontextmanager
async def working(worker: echomq.Worker) -> AsyncIterator[echomq.Worker]:
    """Run ``worker`` for the block's length, then stop it gracefully (within 60 s)."""
    task = asyncio.create_task(worker.run(handle_signals=False))
    try:
        yield worker
    finally:
        worker.stop()
        done, _ = await asyncio.wait({task}, timeout=60)
        if not done:
            for running in asyncio.all_tasks():
                running.print_stack(file=sys.stderr)
            raise AssertionError("the worker did not stop within 60 s")
        task.result()
