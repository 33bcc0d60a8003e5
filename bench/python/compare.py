"""The echomq Python worker and producer beside RQ, arq, Celery (Redis
broker) and Dramatiq (Redis broker): no-op jobs at concurrency 1, 10 and
100, every row in one run, on one redis-server this script starts on a free
loopback port (with the echomq module loaded, so echomq runs on Lua and on
Native; the others ignore it).

    python3 -m venv target/bench-venv
    target/bench-venv/bin/pip install -r bench/python/requirements.txt
    target/bench-venv/bin/pip install --no-deps ./clients/python
    target/bench-venv/bin/python bench/python/compare.py

Each row: FLUSHALL; the system's own producer enqueues JOBS jobs one call
at a time (timed: producer jobs/s); then its worker starts, at the
concurrency, as the system is run by default (RQ: `rq worker-pool`, a
forking worker per slot; arq: one process, `max_jobs`; Celery: prefork, `-c`
processes; Dramatiq: one process, `--threads`; echomq: one asyncio process,
`concurrency`). Every job does one `INCR bench:done`; the worker's rate is
measured from the first job done to the last (startup excluded), by polling
the counter every 5 ms, and stops at the last job or BUDGET seconds after
the first (the slow ones: RQ forks a process per job, arq polls), counting
the jobs done by then. RQ gets a tenth of the jobs to enqueue. Environment:
JOBS (default 5000), BUDGET (default 15 s), ECHOMQ_MODULE (default: the
release build, else the debug one), ECHOMQ_REDIS_SERVER, ONLY (systems,
comma-separated).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
BIN = Path(sys.executable).parent
SYSTEMS = ["echomq-native", "echomq-lua", "rq", "arq", "celery", "dramatiq"]
CONCURRENCY = [1, 10, 100]
JOBS = int(os.environ.get("JOBS", "5000"))
BUDGET = float(os.environ.get("BUDGET", "15"))


def module() -> Path:
    if "ECHOMQ_MODULE" in os.environ:
        return Path(os.environ["ECHOMQ_MODULE"]).resolve()
    for build in ("release", "debug"):
        for path in (REPO / f"target/{build}/libechomq_module.so", REPO / f"target/{build}/deps/libechomq_module.so"):
            if path.is_file():
                return path
    raise SystemExit("build the module first: cargo build --release -p echomq-module")


def start_redis(loaded: Path) -> tuple[subprocess.Popen[bytes], str, Path]:
    folder = Path(tempfile.mkdtemp(prefix="echomq-pybench-"))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [os.environ.get("ECHOMQ_REDIS_SERVER", "redis-server"), "--port", str(port), "--bind", "127.0.0.1",
         "--save", "", "--appendonly", "no", "--dir", str(folder), "--loadmodule", str(loaded)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            redis.Redis.from_url(url).ping()
            return process, url, folder
        except redis.ConnectionError:
            time.sleep(0.02)
    raise SystemExit("redis-server did not start")


def produce(system: str, url: str, jobs: int) -> float:
    """Enqueue ``jobs`` no-op jobs with the system's own producer, one call each; the seconds it took."""
    os.environ["BENCH_URL"] = url
    sys.path.insert(0, str(HERE))
    if system.startswith("echomq"):
        import echomq

        queue = echomq.SyncQueue.open(url, "bench", executor=system.split("-")[1])  # type: ignore[arg-type]
        started = time.perf_counter()
        for _ in range(jobs):
            queue.enqueue(b"{}")
        took = time.perf_counter() - started
        queue.close()
        return took
    if system == "rq":
        from rq import Queue

        queue = Queue("bench", connection=redis.Redis.from_url(url))
        started = time.perf_counter()
        for _ in range(jobs):
            queue.enqueue("rq_tasks.job")
        return time.perf_counter() - started
    if system == "arq":
        from arq.connections import RedisSettings, create_pool

        async def enqueue() -> float:
            pool = await create_pool(RedisSettings.from_dsn(url))
            started = time.perf_counter()
            for _ in range(jobs):
                await pool.enqueue_job("job")
            took = time.perf_counter() - started
            await pool.aclose()
            return took

        return asyncio.run(enqueue())
    if system == "celery":
        import celery_tasks

        send = celery_tasks.job.delay
    else:
        import dramatiq_tasks

        send = dramatiq_tasks.job.send
    started = time.perf_counter()
    for _ in range(jobs):
        send()
    return time.perf_counter() - started


def worker_command(system: str, concurrency: int) -> list[str]:
    c = str(concurrency)
    if system.startswith("echomq"):
        return [sys.executable, str(HERE / "echomq_worker.py"), c, system.split("-")[1]]
    if system == "rq":
        return [str(BIN / "rq"), "worker-pool", "-n", c, "-l", "WARNING", "bench"]
    if system == "arq":
        return [str(BIN / "arq"), "arq_tasks.Settings"]
    if system == "celery":
        return [str(BIN / "celery"), "-A", "celery_tasks.app", "worker", "-c", c, "-P", "prefork",
                "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "WARNING"]
    return [str(BIN / "dramatiq"), "dramatiq_tasks", "--processes", "1", "--threads", c, "--queues", "bench"]


def work(system: str, concurrency: int, url: str, jobs: int) -> float:
    """Start the system's worker and time its jobs, first done to last done; jobs/s."""
    counter = redis.Redis.from_url(url)
    env = {**os.environ, "BENCH_URL": url, "BENCH_CONCURRENCY": str(concurrency),
           "PYTHONPATH": str(HERE), "RQ_REDIS_URL": url}
    command = worker_command(system, concurrency)
    if system == "rq":
        command[2:2] = ["-u", url]
    process = subprocess.Popen(command, cwd=HERE, env=env, start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 600
        first = None
        while time.monotonic() < deadline:
            done = int(counter.get("bench:done") or 0)
            now = time.perf_counter()
            if done >= 1 and first is None:
                first = (now, done)
            if first is not None and (done >= jobs or now - first[0] >= BUDGET):
                return (done - first[1]) / max(now - first[0], 1e-9)
            if process.poll() is not None:
                raise RuntimeError(f"{system}'s worker exited {process.returncode}")
            time.sleep(0.005)
        raise RuntimeError(f"{system} did not run {jobs} jobs in 600 s")
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()


def main() -> None:
    loaded = module()
    only = os.environ.get("ONLY")
    systems = [s for s in SYSTEMS if not only or s in only.split(",")]
    server, url, folder = start_redis(loaded)
    print(f"redis-server on {url}, module {loaded}, JOBS={JOBS} (rq: {JOBS // 10})", flush=True)
    rows: dict[tuple[str, int], tuple[float, float]] = {}
    try:
        for concurrency in CONCURRENCY:
            for system in systems:
                jobs = JOBS // 10 if system == "rq" else JOBS
                redis.Redis.from_url(url).flushall()
                produced = jobs / produce(system, url, jobs)
                worked = work(system, concurrency, url, jobs)
                rows[(system, concurrency)] = (produced, worked)
                print(f"  {system:14} c={concurrency:<4} producer {produced:8.0f} jobs/s   worker {worked:8.0f} jobs/s",
                      flush=True)
    finally:
        server.kill()
        server.wait()
        shutil.rmtree(folder, ignore_errors=True)
    print()
    print("| system | concurrency | producer jobs/s | worker jobs/s | echomq-native worker ÷ this | echomq-lua worker ÷ this |")
    print("|---|---|---|---|---|---|")
    for concurrency in CONCURRENCY:
        for system in systems:
            produced, worked = rows[(system, concurrency)]
            ratios = []
            for ours in ("echomq-native", "echomq-lua"):
                mine = rows.get((ours, concurrency))
                ratios.append(f"{mine[1] / worked:.1f}×" if mine else "—")
            print(f"| {system} | {concurrency} | {produced:.0f} | {worked:.0f} | {ratios[0]} | {ratios[1]} |")


if __name__ == "__main__":
    main()
