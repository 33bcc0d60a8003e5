"""Celery's no-op job for bench/python/compare.py: Redis as broker, no result backend."""

import os

import redis
from celery import Celery

URL = os.environ.get("BENCH_URL", "redis://127.0.0.1:6379/0")
_counter = redis.Redis.from_url(URL)

app = Celery("bench", broker=URL)
app.conf.update(task_ignore_result=True, worker_hijack_root_logger=False, broker_connection_retry_on_startup=True)


@app.task(name="bench.noop")
def noop() -> None:
    _counter.incr("bench:done")
