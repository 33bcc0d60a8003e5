"""The Python speaker's worker at concurrency 10, for bench/worker.exs: JOBS
no-op jobs enqueued (ENQUEUEMANY), then timed from the worker's start to the
last one done. Prints jobs/s."""

import asyncio
import os
import sys
import time

import echomq


async def main(url: str, via: str, queue_name: str, jobs: int) -> None:
    conn = await echomq.connect(url, executor=via)
    queue = await conn.queue(queue_name)
    await queue.enqueue_many([b"x"] * jobs)

    async def handle(job: echomq.Job) -> None:
        return None

    worker = echomq.Worker(queue, handle, concurrency=10)
    started = time.monotonic()
    task = asyncio.create_task(worker.run(handle_signals=False))
    while (await queue.stats()).done < jobs:
        await asyncio.sleep(0.005)
    elapsed = time.monotonic() - started
    worker.stop()
    await task
    await conn.close()
    print(f"{jobs / elapsed:.0f}")


asyncio.run(main(os.environ["ECHOMQ_URL"], os.environ["ECHOMQ_VIA"], sys.argv[1], int(sys.argv[2])))
