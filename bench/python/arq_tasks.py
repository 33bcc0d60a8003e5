"""arq's no-op job and worker settings for bench/python/compare.py."""

import os

from arq.connections import RedisSettings


async def noop(ctx: dict) -> None:
    await ctx["redis"].incr("bench:done")


class Settings:
    functions = [noop]
    redis_settings = RedisSettings.from_dsn(os.environ.get("BENCH_URL", "redis://127.0.0.1:6379/0"))
    max_jobs = int(os.environ.get("BENCH_CONCURRENCY", "10"))
    keep_result = 0
    # arq polls its queue; 0.05 s is ten times as eager as its default (0.5 s).
    poll_delay = 0.05
