"""The echomq Python worker for bench/python/compare.py: ``echomq_worker.py
CONCURRENCY lua|native``, its no-op job one INCR bench:done."""

import asyncio
import os
import sys

import echomq


async def main(concurrency: int, kind: str) -> None:
    conn = await echomq.connect(os.environ.get("BENCH_URL", "redis://127.0.0.1:6379/0"), executor=kind)  # type: ignore[arg-type]
    queue = await conn.queue("bench")

    async def noop(job: echomq.Job) -> None:
        await conn.redis.incr("bench:done")

    await echomq.Worker(queue, noop, concurrency=concurrency).run()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2]))
