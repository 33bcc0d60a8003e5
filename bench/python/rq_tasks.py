"""RQ's no-op job for bench/python/compare.py: one INCR bench:done. Its own
module, so that each forked RQ job imports only this (and redis)."""

import os

import redis

_counter = redis.Redis.from_url(os.environ.get("BENCH_URL", "redis://127.0.0.1:6379/0"))


def noop() -> None:
    _counter.incr("bench:done")
