"""EchoMQ for Python: a second speaker of the EchoMQ protocol (PROTOCOL.md),
enqueueing and working the same jobs as the Rust host, on Redis or Valkey >= 7,
through the protocol's own Lua scripts or the ``echomq`` module's commands.

    import echomq

    app = echomq.App("redis://127.0.0.1:6379")

    @app.task(queue="emails", attempts=3)
    def send_welcome(to: str) -> str:        # run by `echomq worker app:app`
        return "sent"

    send_welcome.enqueue("a@example.com")

or, one level down, bytes and a handler:

    conn = await echomq.connect("redis://127.0.0.1:6379")
    queue = await conn.queue("emails")
    await queue.enqueue(b"hello", attempts=3, headers={"tenant": "acme"}, group="acme")

    async def handle(job: echomq.Job) -> bytes:
        return job.payload.upper()

    await echomq.Worker(queue, handle, concurrency=10).run()

Payloads, results and progress are bytes (JSON helpers beside them; never
pickle). Every refusal is an :class:`~echomq.errors.EchoMQError`: a server's
one class per code (§10), the host's own :class:`InvalidInput` before sending.

Layout: ``tasks`` (App, Task: functions as jobs), ``cli`` (the ``echomq
worker`` command), ``testing`` (tasks run without Redis), ``metrics``
(Prometheus), ``queue`` (Queue, SyncQueue, connect), ``worker`` (Worker),
``job`` (Job, RetryAfter: a claimed job as its handler sees it), ``slots``
(a sync job's slot in its own thread), ``flows`` (Flow: a parent that waits
for its children, §7.8),
``groups`` (GroupInfo: fair groups, §7.9),
``failure`` (what a failed job keeps), ``upkeep`` (what a
worker owes, §11.3, the flows' relay and sweep among it), ``calls`` (each transition's call, checked),
``executor`` (Lua and Native), ``model`` (replies as values), ``keyspace``,
``ids``, ``schedule``, ``errors``, ``_protocol`` (the generated tables and
scripts).
"""

from importlib import metadata as _metadata

from . import errors, ids, schedule
from ._protocol import version_text as _version_text
from .errors import (
    ArgError,
    DataError,
    EchoMQError,
    FenceError,
    GroupFull,
    InvalidInput,
    JobCancelled,
    JobDied,
    KeyTypeError,
    KindError,
    NoJobError,
    OlderMinor,
    OtherMajor,
    Refused,
    SizeError,
    StateError,
    TryAgain,
    VersionError,
)
from .executor import AsyncExecutor, Call, SyncExecutor, detect, detect_sync
from .flows import ChildJobs, Flow, NotAParent, WaitingForChildren
from .groups import GroupInfo, GroupPage
from .ids import is_branded, mint
from .keyspace import Keyspace
from .model import Child, Children, Claimed, Config, Enqueued, Event, FlowAdded, JobInfo, JobRef, Link, Policy, Stats
from .partition import Partitioned
from .queue import Connection, Queue, SyncQueue, connect
from .tasks import App, Task, TaskFailed, TaskOptions, current_job
from .upkeep import Upkeep
from .job import Job, RetryAfter
from .worker import Worker

PROTOCOL = _version_text()
"""The protocol version this package speaks (its scripts' manifest)."""

try:
    __version__ = _metadata.version("echomq")
    """The package's version, as its wheel's metadata says it (pyproject.toml's, one source)."""
except _metadata.PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "PROTOCOL",
    "App",
    "ArgError",
    "AsyncExecutor",
    "Call",
    "Child",
    "ChildJobs",
    "Children",
    "Claimed",
    "Config",
    "Connection",
    "DataError",
    "EchoMQError",
    "Enqueued",
    "Event",
    "FenceError",
    "Flow",
    "FlowAdded",
    "GroupFull",
    "GroupInfo",
    "GroupPage",
    "InvalidInput",
    "Job",
    "JobCancelled",
    "JobDied",
    "JobInfo",
    "JobRef",
    "KeyTypeError",
    "Keyspace",
    "KindError",
    "Link",
    "NoJobError",
    "NotAParent",
    "OlderMinor",
    "OtherMajor",
    "Partitioned",
    "Policy",
    "Queue",
    "Refused",
    "RetryAfter",
    "SizeError",
    "StateError",
    "Stats",
    "SyncExecutor",
    "SyncQueue",
    "Task",
    "TaskFailed",
    "TaskOptions",
    "TryAgain",
    "Upkeep",
    "VersionError",
    "WaitingForChildren",
    "Worker",
    "connect",
    "current_job",
    "detect",
    "detect_sync",
    "errors",
    "is_branded",
    "mint",
]
