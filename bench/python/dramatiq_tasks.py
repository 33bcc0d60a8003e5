"""Dramatiq's no-op job for bench/python/compare.py: Redis as broker."""

import os

import dramatiq
import redis
from dramatiq.brokers.redis import RedisBroker

URL = os.environ.get("BENCH_URL", "redis://127.0.0.1:6379/0")
_counter = redis.Redis.from_url(URL)
dramatiq.set_broker(RedisBroker(url=URL))


@dramatiq.actor(queue_name="bench", max_retries=0)
def noop() -> None:
    _counter.incr("bench:done")
