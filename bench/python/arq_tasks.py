"""arq's job and worker settings for bench/python/compare.py and
commands.py: BENCH_SLEEP seconds of I/O (``asyncio.sleep``: arq runs only
``async def`` jobs; none by default), then one INCR bench:done."""

import asyncio
import os

from arq.connections import RedisSettings

SLEEP = float(os.environ.get("BENCH_SLEEP", "0"))


async def job(ctx: dict) -> None:
    if SLEEP:
        await asyncio.sleep(SLEEP)
    await ctx["redis"].incr("bench:done")


class Settings:
    functions = [job]
    redis_settings = RedisSettings.from_dsn(os.environ.get("BENCH_URL", "redis://127.0.0.1:6379/0"))
    max_jobs = int(os.environ.get("BENCH_CONCURRENCY", "10"))
    keep_result = 0
    # arq polls its queue; 0.05 s is ten times as eager as its default (0.5 s).
    poll_delay = 0.05
