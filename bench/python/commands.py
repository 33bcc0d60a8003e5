"""Tasks through each system's worker command: EchoMQ's `echomq worker`
(Lua and native) beside RQ, arq, Celery and Dramatiq, on one fresh
redis-server, at concurrency 1, 10 and 100, interleaved in rounds; then
issue 51's figure, 20 tasks of 2 s blocking I/O on a 1 s lease at
concurrency 10. (compare.py measures the package's bytes Worker and the
producers; this one, tasks as a Python team runs them.)

    python3 -m venv target/bench-venv
    target/bench-venv/bin/pip install -r bench/python/requirements.txt hatchling
    target/bench-venv/bin/pip install --no-deps --no-build-isolation ./clients/python
    ECHOMQ_MODULE=target/debug/libechomq_module.so target/bench-venv/bin/python bench/python/commands.py \
        [--sleep 0.01] [--rounds 2]

BENCH_CELERY_VENV names another venv for Celery (a Celery whose kombu needs
redis-py >= 6.4, which arq 0.28 refuses; requirements.txt pins one that does
not); kombu 5.7's Redis transport imports `packaging` without depending on it:

    python3 -m venv target/celery-venv
    target/celery-venv/bin/pip install celery==5.7.0 kombu==5.7.0 'redis>=6.4' packaging
    BENCH_CELERY_VENV=target/celery-venv ECHOMQ_MODULE=... target/bench-venv/bin/python bench/python/commands.py Each measurement: FLUSHALL; the queue filled with the system's own
producer (untimed); the worker command started; each job, after its
`--sleep` seconds of I/O, counts itself done (one INCR, the same in every
system); the rate is the jobs done after the first over the time from the
first to the last, so no system's start-up counts. The workers, as their
docs run I/O-bound jobs:

- echomq: `echomq worker echomq_tasks:app -q bench --concurrency C --burst
  --via lua|native`, a plain `def` task (run in the worker's threads);
- RQ: `rq worker-pool -n C --burst bench`: C worker processes, each forking
  a work horse per job (RQ's default worker);
- arq: `arq arq_tasks.Settings --burst`, `max_jobs = C`, `poll_delay` 0.05 s
  (its default is 0.5 s), an `async def` job (arq runs only those) that
  sleeps with `asyncio.sleep`;
- Celery: `celery -A celery_tasks.app worker -P threads -c C` (the thread
  pool, for I/O), without heartbeat, gossip and mingle; "celery" as
  configured by default (each task acked as it is received, before it
  runs, four prefetched per slot: a worker that dies loses what it
  holds), "celery (acks late)" as Celery's docs configure at-least-once
  delivery, EchoMQ's guarantee (`task_acks_late`, prefetch multiplier 1);
- Dramatiq: `dramatiq dramatiq_tasks --processes 1 --threads C`.

The machine is a shared 2-core VM: read the ratios within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import redis

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
BIN = Path(sys.executable).parent
CELERY_BIN = Path(os.environ["BENCH_CELERY_VENV"]).resolve() / "bin" if "BENCH_CELERY_VENV" in os.environ else BIN
QUEUE = "bench"
DONE = "bench:done"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """A redis-server of the bench's own, the echomq module loaded, killed at the end."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="echomq-bench-py-"))
        self.port = free_port()
        module = os.environ.get("ECHOMQ_MODULE", str(REPO / "target/debug/libechomq_module.so"))
        self.process = subprocess.Popen(
            [os.environ.get("ECHOMQ_REDIS_SERVER", "redis-server"), "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", str(self.dir), "--loadmodule", module],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.client = redis.Redis(port=self.port)
        deadline = time.monotonic() + 20
        while True:
            try:
                self.client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.version = self.client.info("server")["redis_version"]

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


# -- filling each system's queue (untimed) --------------------------------------


def fill_echomq(n: int) -> None:
    import echomq
    from echomq_tasks import job

    body = job.payload()
    with echomq.SyncQueue.open(os.environ["BENCH_URL"], QUEUE) as queue:
        for start in range(0, n, 1000):
            queue.enqueue_many([body] * min(1000, n - start))


def fill_rq(n: int) -> None:
    from rq import Queue
    from rq_tasks import job

    queue = Queue(QUEUE, connection=redis.Redis.from_url(os.environ["BENCH_URL"]))
    for start in range(0, n, 1000):
        queue.enqueue_many([Queue.prepare_data(job) for _ in range(min(1000, n - start))])


def fill_arq(n: int) -> None:
    from arq import create_pool
    from arq_tasks import Settings

    async def fill() -> None:
        pool = await create_pool(Settings.redis_settings)
        for _ in range(n):
            await pool.enqueue_job("job")
        await pool.aclose()

    asyncio.run(fill())


def fill_celery(n: int) -> None:
    from celery_tasks import job

    for _ in range(n):
        job.delay()


def fill_dramatiq(n: int) -> None:
    from dramatiq_tasks import job

    for _ in range(n):
        job.send()


def command(system: str, concurrency: int) -> list[str]:
    c = str(concurrency)
    if system.startswith("echomq"):
        via = system.split()[-1].strip("()")
        return [str(BIN / "echomq"), "worker", "echomq_tasks:app", "-q", QUEUE, "--concurrency", c, "--burst",
                "--via", via, "--log-level", "WARNING"]
    if system == "rq":
        return [str(BIN / "rq"), "worker-pool", "-n", c, "--burst", "-q", "-u", os.environ["BENCH_URL"], QUEUE]
    if system == "arq":
        return [str(BIN / "arq"), "arq_tasks.Settings", "--burst"]
    if system.startswith("celery"):
        return [str(CELERY_BIN / "celery"), "-A", "celery_tasks.app", "worker", "-P", "threads", "-c", c,
                "--without-heartbeat", "--without-gossip", "--without-mingle", "-l", "WARNING"]
    if system == "dramatiq":
        return [str(BIN / "dramatiq"), "dramatiq_tasks", "--processes", "1", "--threads", c, "--queues", QUEUE]
    raise ValueError(system)


FILL: dict[str, Callable[[int], None]] = {
    "echomq (lua)": fill_echomq, "echomq (native)": fill_echomq, "rq": fill_rq, "arq": fill_arq,
    "celery": fill_celery, "celery (acks late)": fill_celery, "dramatiq": fill_dramatiq,
}


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL to the worker's whole process group (RQ's pool leaves its workers otherwise)."""
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(wait)
        except subprocess.TimeoutExpired:
            continue


def fill(system: str, n: int) -> None:
    """Fill the queue in the interpreter of the system's venv (Celery's is its own)."""
    python = (CELERY_BIN if system.startswith("celery") else BIN) / "python"
    subprocess.run([str(python), str(Path(__file__).resolve()), "--fill", system, str(n)], cwd=HERE,
                   env={**os.environ, "PYTHONPATH": str(HERE)}, check=True)


def measure(server: Server, system: str, concurrency: int, n: int, timeout: float, logs: Path) -> tuple[float, bool]:
    """Jobs a second from the first job done to the last, and whether all were done in time."""
    server.client.flushall()
    fill(system, n)
    env = {**os.environ, "BENCH_CONCURRENCY": str(concurrency), "PYTHONPATH": str(HERE)}
    if system == "celery (acks late)":
        env["BENCH_CELERY_ACKS_LATE"] = "1"
    log = open(logs / f"{system.replace(' ', '_')}-{concurrency}.log", "wb")
    process = subprocess.Popen(command(system, concurrency), cwd=HERE, env=env, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
    first = last = None
    done = 0
    deadline = time.monotonic() + timeout
    try:
        while done < n and time.monotonic() < deadline:
            done = int(server.client.get(DONE) or 0)
            now = time.monotonic()
            if done >= 1 and first is None:
                first, first_count = now, done
            if done > (0 if last is None else last[1]):
                last = (now, done)
            time.sleep(0.005)
    finally:
        stop(process)
        log.close()
    if first is None or last is None or last[0] <= first:
        return 0.0, False
    return (last[1] - first_count) / (last[0] - first), done >= n


def exactly_once_figure(server: Server) -> str:
    """Issue 51's figure: 20 tasks of 2 s blocking I/O on a 1 s lease at concurrency 10."""
    import echomq

    server.client.flushall()
    os.environ["BENCH_SLEEP"] = "2"
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    process = subprocess.Popen([str(BIN / "echomq"), "worker", "echomq_tasks:app", "-q", QUEUE, "--concurrency", "10",
                                "--lease", "1", "--log-level", "WARNING"], cwd=HERE, env=env, start_new_session=True)
    try:
        while not server.client.zcard("emq:workers"):
            time.sleep(0.01)
        from echomq_tasks import job

        queue = echomq.SyncQueue.open(server.url, QUEUE)
        started = time.monotonic()
        ids = [e.id for e in queue.enqueue_many([job.payload()] * 20)]
        while int(server.client.get(DONE) or 0) < 20:
            time.sleep(0.005)
        took = time.monotonic() - started
        finished = [queue.wait(job_id, timeout=30) for job_id in ids]
        tokens = {info.token for info in finished}
        queue.close()
    finally:
        stop(process)
    runs = int(server.client.get(DONE) or 0)
    return (f"20 tasks of 2 s blocking I/O, lease 1 s, concurrency 10: all done in {took:.2f} s; "
            f"{runs} runs, every job's token {sorted(tokens)} (claimed once each)")


SYSTEMS = list(FILL)


def versions() -> str:
    from importlib.metadata import version

    celery = subprocess.run([str(CELERY_BIN / "python"), "-c", "import celery; print(celery.__version__)"],
                            capture_output=True, text=True).stdout.strip()
    return (f"echomq {version('echomq')}, RQ {version('rq')}, arq {version('arq')}, Celery {celery}, "
            f"Dramatiq {version('dramatiq')}")


def main() -> None:
    if sys.argv[1:2] == ["--fill"]:
        FILL[sys.argv[2]](int(sys.argv[3]))
        return
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("--concurrency", default="1,10,100")
    options.add_argument("--systems", default=",".join(SYSTEMS))
    options.add_argument("--sleep", type=float, default=0.01, help="each task's I/O, seconds (0.01)")
    options.add_argument("--jobs", default="200,2000,5000", help="jobs per run, per concurrency")
    options.add_argument("--rounds", type=int, default=1)
    options.add_argument("--timeout", type=float, default=180.0)
    args = options.parse_args()
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    jobs = dict(zip(concurrencies, [int(n) for n in args.jobs.split(",")]))
    systems = args.systems.split(",")
    server = Server()
    os.environ.update(BENCH_URL=server.url, BENCH_SLEEP=str(args.sleep))
    sys.path.insert(0, str(HERE))
    logs = Path(tempfile.mkdtemp(prefix="echomq-bench-py-logs-"))
    rates: dict[tuple[str, int], list[float]] = {}
    incomplete: set[tuple[str, int]] = set()
    try:
        for round_ in range(args.rounds):
            for concurrency in concurrencies:
                order = systems[round_ % len(systems):] + systems[:round_ % len(systems)]
                for system in order:
                    rate, complete = measure(server, system, concurrency, jobs[concurrency], args.timeout, logs)
                    rates.setdefault((system, concurrency), []).append(rate)
                    if not complete:
                        incomplete.add((system, concurrency))
                    print(f"# round {round_ + 1} {system} c={concurrency}: {rate:.0f} jobs/s"
                          + ("" if complete else " (not all done in time)"), file=sys.stderr, flush=True)
        figure = exactly_once_figure(server)
    finally:
        server.stop()
    print(f"Python job queues, {args.sleep * 1000:g} ms of I/O per task, jobs/s (median of {args.rounds}), "
          f"redis-server {server.version}, Python {sys.version.split()[0]}; jobs per run "
          + ", ".join(f"{n} at c={c}" for c, n in jobs.items()) + "; " + versions())
    print()
    print("| system | " + " | ".join(f"c={c}" for c in concurrencies) + " |")
    print("|---|" + "---:|" * len(concurrencies))
    for system in systems:
        cells = []
        for c in concurrencies:
            value = statistics.median(rates[(system, c)])
            cells.append(f"{value:,.0f}" + ("*" if (system, c) in incomplete else ""))
        print(f"| {system} | " + " | ".join(cells) + " |")
    peers = [s for s in systems if not s.startswith("echomq")]
    for ours in [s for s in systems if s.startswith("echomq")]:
        if peers:
            ratio = [statistics.median(rates[(ours, c)]) /
                     max(max(statistics.median(rates[(p, c)]) for p in peers), 1e-9) for c in concurrencies]
            print(f"| {ours} ÷ best peer | " + " | ".join(f"{r:.1f}×" for r in ratio) + " |")
    if incomplete:
        print("\n* not every job was done within the timeout: the rate of those that were")
    print()
    print(figure)
    print(f"\n(worker logs: {logs})", file=sys.stderr)


if __name__ == "__main__":
    main()
