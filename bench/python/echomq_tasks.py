"""EchoMQ's job as a task, for bench/python/commands.py (run by ``echomq
worker echomq_tasks:app``): a plain ``def``, run in the worker's threads,
BENCH_SLEEP seconds of blocking I/O (none by default), then one INCR
bench:done."""

import os
import time

import redis

import echomq

URL = os.environ.get("BENCH_URL", "redis://127.0.0.1:6379/0")
_counter = redis.Redis.from_url(URL)
SLEEP = float(os.environ.get("BENCH_SLEEP", "0"))

app = echomq.App(URL, queue="bench")


@app.task
def job() -> None:
    if SLEEP:
        time.sleep(SLEEP)
    _counter.incr("bench:done")
