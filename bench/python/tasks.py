"""The no-op job of bench/python/compare.py, for each system, and the
echomq worker's entry point. Every job, in every system, does one thing:
INCR bench:done on the benchmark's server, so the driver can tell when all
have run (the same extra round trip for everyone).

Environment: BENCH_URL (the server), BENCH_CONCURRENCY (arq's max_jobs).
"""

from __future__ import annotations

import asyncio
import os
import sys

import redis

URL = os.environ.get("BENCH_URL", "redis://127.0.0.1:6379/0")
COUNTER = "bench:done"
_counter = redis.Redis.from_url(URL)

# --- RQ: a plain function, enqueued by path.


def rq_noop() -> None:
    _counter.incr(COUNTER)


# --- arq: an async function and the worker's settings.


async def arq_noop(ctx: dict) -> None:
    await ctx["redis"].incr(COUNTER)


class ArqSettings:
    from arq.connections import RedisSettings

    functions = [arq_noop]
    redis_settings = RedisSettings.from_dsn(URL)
    max_jobs = int(os.environ.get("BENCH_CONCURRENCY", "10"))
    keep_result = 0
    poll_delay = 0.05


# --- Celery, Redis as broker, no result backend.

from celery import Celery  # noqa: E402

celery_app = Celery("bench", broker=URL)
celery_app.conf.update(task_ignore_result=True, worker_hijack_root_logger=False,
                       broker_connection_retry_on_startup=True)


@celery_app.task(name="bench.noop")
def celery_noop() -> None:
    _counter.incr(COUNTER)


# --- Dramatiq, Redis as broker.

import dramatiq  # noqa: E402
from dramatiq.brokers.redis import RedisBroker  # noqa: E402

dramatiq.set_broker(RedisBroker(url=URL))


@dramatiq.actor(queue_name="bench", max_retries=0)
def dramatiq_noop() -> None:
    _counter.incr(COUNTER)


# --- echomq: its asyncio Worker.


async def echomq_worker(concurrency: int, kind: str) -> None:
    import echomq

    conn = await echomq.connect(URL, executor=kind)  # type: ignore[arg-type]
    queue = await conn.queue("bench")

    async def noop(job: echomq.Job) -> None:
        await conn.redis.incr(COUNTER)

    await echomq.Worker(queue, noop, concurrency=concurrency).run()


if __name__ == "__main__":
    asyncio.run(echomq_worker(int(sys.argv[1]), sys.argv[2]))
