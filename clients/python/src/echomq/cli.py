"""The ``echomq`` command: ``echomq worker MODULE:APP`` runs an
:class:`~echomq.App`'s tasks.

    echomq worker app:app -q emails --concurrency 20
    echomq worker app:app --burst            # until its queues are empty

One :class:`~echomq.Worker` per queue (``-q``, again for more; the app's
tasks' queues by default; a partitioned queue's name, one per partition and
one for the ordinary queue of its name, ``--concurrency`` split between
them), each running ``--concurrency`` jobs at once:
``async def`` tasks on the event loop, plain ``def`` ones in that many
threads, every lease renewed by the loop whatever the tasks do.

Signals, as ``emq work`` takes them: the first SIGTERM or SIGINT stops
claiming and gives running jobs ``--grace``, then releases the rest with no
attempt spent; a second one releases them at once; SIGTSTP stops claiming
for good while running jobs run to their end (a "quiet" before a deploy).
Exit status: 0 after a stop, 2 for a usage error (a target that does not
import, a bad option), 1 for a failure to connect.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import os
import signal
import sys
import threading
import time
from typing import Sequence

import redis

from . import __version__
from .errors import EchoMQError
from .keyspace import check_queue
from .partition import Partitioned
from .queue import Queue
from .tasks import App
from .worker import Worker

log = logging.getLogger("echomq.cli")


class UsageError(Exception):
    """A target or option the command refuses before it connects (exit 2)."""


def load_app(target: str) -> App:
    """``module:attribute`` (the current directory importable, as ``python -m`` has it) as an :class:`App`."""
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise UsageError(f"{target!r} is not MODULE:APP (e.g. app:app, myproject.tasks:app)")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise UsageError(f"cannot import {module_name!r}: {err}") from None
    found = module
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise UsageError(f"{module_name!r} has no {attribute!r}")
        found = getattr(found, part)
    if not isinstance(found, App):
        raise UsageError(f"{target} is a {type(found).__name__}, not an echomq.App")
    return found


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT (127.0.0.1:9464)")
    return host, int(port)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: seconds are 0 or more")
    return value


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="echomq", description="EchoMQ's Python speaker.")
    top.add_argument("--version", action="version", version=f"echomq {__version__}")
    commands = top.add_subparsers(dest="command", required=True)
    work = commands.add_parser("worker", help="run an App's tasks",
                               description="Run an echomq.App's tasks: one worker per queue, until SIGTERM or "
                                           "SIGINT (graceful; a second one at once), or with --burst until the "
                                           "queues are empty.")
    work.add_argument("app", metavar="MODULE:APP", help="the App, e.g. app:app or myproject.tasks:app")
    work.add_argument("-q", "--queue", action="append", dest="queues", metavar="QUEUE",
                      help="a queue to work (again for more); default: the queues the app's tasks name")
    work.add_argument("--url", help="the server (default: the App's, from ECHOMQ_URL or redis://127.0.0.1:6379/0)")
    work.add_argument("--via", choices=["auto", "lua", "native"], default=os.environ.get("ECHOMQ_VIA") or "auto",
                      help="the executor, as emq's --via: the module when loaded, else Lua (env ECHOMQ_VIA)")
    work.add_argument("-c", "--concurrency", type=int, default=10, help="jobs run at once, per queue (10)")
    work.add_argument("--lease", type=_seconds, default=30.0, help="each job's lease, renewed while it runs (30 s)")
    work.add_argument("--max-attempts", type=int, default=5,
                      help="attempts before a job is dead, for tasks without attempts= (5)")
    work.add_argument("--backoff", type=_seconds, default=1.0,
                      help="the back-off after a first failure, doubling each time, for tasks without one (1 s)")
    work.add_argument("--timeout", type=_seconds, help="how long one run may take, for tasks without timeout=")
    work.add_argument("--grace", type=_seconds, default=10.0,
                      help="on SIGTERM, how long running jobs may go on before they are released (10 s)")
    work.add_argument("--burst", action="store_true", help="stop once the queues have nothing pending")
    work.add_argument("--metrics", type=_address, metavar="HOST:PORT",
                      help="serve Prometheus metrics there (needs echomq[metrics])")
    work.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return top


async def work(app: App, options: argparse.Namespace) -> int:
    """Run one Worker per queue until each stops; SIGTERM/SIGINT/SIGTSTP steer them all."""
    from .metrics import Metrics
    from .queue import connect

    metrics = None
    if options.metrics is not None:
        host, port = options.metrics
        try:
            metrics = Metrics()
            metrics.serve(port, host)
        except (ImportError, OSError) as err:
            raise UsageError(f"cannot serve metrics on --metrics {host}:{port}: {err}") from None
    queues = options.queues or app.queues or [app.queue]
    connection = await connect(options.url or app.url, executor=None if options.via == "auto" else options.via)
    try:
        # A partitioned queue's name (1.8): a Worker a partition and one for the ordinary
        # queue of its name (Partitioned.worked), --concurrency split between them.
        each: list[tuple[Queue, int]] = []
        for name in queues:
            partitioned = await Partitioned.find(connection, name)
            if partitioned is None:
                each.append((await connection.queue(name), options.concurrency))
                continue
            worked = await partitioned.worked(connection)
            share = -(-options.concurrency // len(worked))
            each.extend((queue, share) for queue in worked)
        workers = [
            Worker(queue, app.handler, concurrency=concurrency, lease=options.lease,
                   max_attempts=options.max_attempts, backoff=options.backoff, timeout=options.timeout,
                   grace=options.grace, burst=options.burst, metrics=metrics)
            for queue, concurrency in each
        ]

        def steer(name: str) -> None:
            for worker in workers:
                worker.on_signal(name)

        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGTSTP):
            loop.add_signal_handler(sig, steer, sig.name)
        log.info("echomq worker %s: queues %s, concurrency %d each, %s executor; SIGTERM or Ctrl-C stops it "
                 "gracefully (a second one at once), SIGTSTP stops claiming", options.app, ", ".join(queues),
                 options.concurrency, connection.executor.kind)
        # A -q no task goes to (a misspelt name?) waits for jobs no enqueue of this app sends it.
        for name in options.queues or []:
            if app.queues and name not in app.queues:
                log.warning("-q %s: no task of %s goes to it (its tasks' queues: %s); jobs reach it only from "
                            "other producers", name, options.app, ", ".join(app.queues))
        await asyncio.gather(*(w.run(handle_signals=False) for w in workers))
        log.info("echomq worker stopped: %d processed, %d failed", sum(w.processed for w in workers),
                 sum(w.failed for w in workers))
    finally:
        await connection.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    options = parser().parse_args(argv)
    logging.basicConfig(level=options.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        if options.concurrency < 1:
            raise UsageError("--concurrency is at least 1")
        if options.via not in ("auto", "lua", "native"):
            raise UsageError(f"ECHOMQ_VIA={options.via!r}: the executor is auto, lua or native")
        for name in options.queues or []:
            check_queue(name)
        app = load_app(options.app)
        code = asyncio.run(work(app, options))
    except (UsageError, EchoMQError, ValueError) as err:
        # InvalidInput (a bad queue name, lease, max attempts) and UsageError: before any job was claimed.
        print(f"echomq worker: {err}; no job was claimed", file=sys.stderr)
        return 2
    except (OSError, redis.RedisError) as err:
        print(f"echomq worker: {err}", file=sys.stderr)
        return 1
    _leave_busy_threads(code)
    return code


def _leave_busy_threads(code: int) -> None:
    """A sync task still running past the stop (its job released or
    dropped already) cannot be stopped, and Python would wait for its thread
    at exit: say so and exit without it, as ``emq work`` kills a command."""
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        busy = [t for t in threading.enumerate() if t.name.startswith("echomq-handler") and t.is_alive()]
        if not busy:
            return
        time.sleep(0.02)
    log.warning("%d task thread(s) still run past the stop, their jobs released or dropped already; "
                "exiting without them", len(busy))
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
