"""Dramatiq's job for bench/python/compare.py and commands.py: Redis as
broker; BENCH_SLEEP seconds of blocking I/O (none by default), then one
INCR bench:done."""

import os
import time

import dramatiq
import redis
from dramatiq.brokers.redis import RedisBroker

URL = os.environ.get("BENCH_URL", "redis://127.0.0.1:6379/0")
_counter = redis.Redis.from_url(URL)
SLEEP = float(os.environ.get("BENCH_SLEEP", "0"))
dramatiq.set_broker(RedisBroker(url=URL))


@dramatiq.actor(queue_name="bench", max_retries=0)
def job() -> None:
    if SLEEP:
        time.sleep(SLEEP)
    _counter.incr("bench:done")
