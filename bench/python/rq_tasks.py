"""RQ's job for bench/python/compare.py and commands.py: BENCH_SLEEP
seconds of blocking I/O (none by default), then one INCR bench:done. Its own
module, so that each forked RQ job imports only this (and redis)."""

import os
import time

import redis

_counter = redis.Redis.from_url(os.environ.get("BENCH_URL", "redis://127.0.0.1:6379/0"))
SLEEP = float(os.environ.get("BENCH_SLEEP", "0"))


def job() -> None:
    if SLEEP:
        time.sleep(SLEEP)
    _counter.incr("bench:done")
