"""Celery's job for bench/python/compare.py and commands.py: Redis as
broker, no result backend; BENCH_SLEEP seconds of blocking I/O (none by
default), then one INCR bench:done."""

import os
import time

import redis
from celery import Celery

URL = os.environ.get("BENCH_URL", "redis://127.0.0.1:6379/0")
_counter = redis.Redis.from_url(URL)
SLEEP = float(os.environ.get("BENCH_SLEEP", "0"))

app = Celery("bench", broker=URL)
app.conf.update(task_ignore_result=True, worker_hijack_root_logger=False, broker_connection_retry_on_startup=True)
if os.environ.get("BENCH_CELERY_ACKS_LATE"):  # at least once, as Celery's docs configure it: ack after the run, no prefetch
    app.conf.update(task_acks_late=True, worker_prefetch_multiplier=1)


@app.task(name="bench.job")
def job() -> None:
    if SLEEP:
        time.sleep(SLEEP)
    _counter.incr("bench:done")
