"""A partitioned queue's server instructions per job against one queue's,
counted by callgrind: immune to the shared machine's noise, where
echomq-partitions' CPU figures move by several per cent run to run, and
apart from three busy servers sharing this machine's cores (both layouts
on one redis-server). Issue 52's bar: a partitioned queue's server time
per job within 1.1x of one queue's on the same workload.

    python3 bench/partition_instructions.py [--module M] [--jobs N] [--at-most R]

The same workload on each layout, with the Python package's calls: `jobs`
jobs enqueued 100 a call (ENQUEUEMANY; a partitioned queue's calls each
one run in one partition, as `Partitioned.enqueue_many` places them), then
claimed 50 a call and acked a claim's jobs at a time (CLAIM, ACKMANY), a
partitioned queue's partitions in turn, as a worker of it claims; the
counters zeroed before the first enqueue and dumped after the last ack:
the instructions of the whole server per job. Lua, or the native module
with `--module`. With `--at-most R`, exit 1 when the ratio is over R:
scripts/test's check that the bar met stays met. Needs valgrind.
"""
import os
import sys

# bench/ holds an operator.py of its own, which would shadow the standard
# library's: its helpers are looked up last.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path = [path for path in sys.path if os.path.abspath(path or ".") != HERE] + [HERE]

import argparse  # noqa: E402
import asyncio  # noqa: E402

from acknext_instructions import under_callgrind  # noqa: E402

import echomq  # noqa: E402
from echomq import calls  # noqa: E402
from echomq.model import read_claims  # noqa: E402

PARTITIONS = 12
ENQUEUE_CALL = 100
CLAIM_CALL = 50
LEASE_MS = 600_000


async def drain(queues):
    """Claim and ack every job of `queues`, each in turn, CLAIM_CALL a claim."""
    left = list(queues)
    while left:
        for queue in list(left):
            claims = read_claims(await queue.executor.run(calls.claim(queue.keyspace, LEASE_MS, CLAIM_CALL)))
            if claims.jobs:
                acks = [(job.id, job.token, None) for job in claims.jobs]
                await queue.executor.run(calls.ackmany(queue.keyspace, acks))
            if len(claims.jobs) < CLAIM_CALL:
                left.remove(queue)


async def one_queue(url, jobs):
    async with await echomq.connect(url) as connection:
        queue = await connection.queue("one")
        for start in range(0, jobs, ENQUEUE_CALL):
            await queue.enqueue_many([b"x" * 53] * min(ENQUEUE_CALL, jobs - start))
        await drain([queue])
        return (await queue.stats()).done


async def partitioned(url, jobs):
    async with await echomq.connect(url) as connection:
        parted = await echomq.Partitioned.open(connection, "parted")
        for start in range(0, jobs, ENQUEUE_CALL):
            await parted.enqueue_many([b"x" * 53] * min(ENQUEUE_CALL, jobs - start))
        await drain(parted.partitions)
        return (await parted.stats()).done


async def create(url):
    async with await echomq.connect(url) as connection:
        await echomq.Partitioned.create(connection, "parted", PARTITIONS)


def instructions(layout, jobs, module):
    """Instructions the server ran per job of `layout`."""
    server, r, counted = under_callgrind(*(["--loadmodule", module] if module else []))
    url = f"redis://127.0.0.1:{r.port}"
    try:
        if layout is partitioned:
            asyncio.run(create(url))
        done = []
        total = counted(lambda: done.append(asyncio.run(layout(url, jobs))))
        assert done == [jobs], f"every job done: {done}"
        return total / jobs
    finally:
        server.terminate()
        server.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", help="the native module to load (Lua without it)")
    parser.add_argument("--jobs", type=int, default=2400)
    parser.add_argument("--at-most", type=float, help="exit 1 when partitioned / one queue is over this")
    options = parser.parse_args()
    one = instructions(one_queue, options.jobs, options.module)
    parted = instructions(partitioned, options.jobs, options.module)
    ratio = parted / one
    via = "native" if options.module else "Lua"
    print(f"{options.jobs} jobs via {via}, instructions of the server per job (callgrind): one queue {one:,.0f}, "
          f"{PARTITIONS} partitions {parted:,.0f}: {ratio:.3f}x", end="")
    if options.at_most is None:
        print()
        return
    verdict = "within" if ratio <= options.at_most else "over"
    print(f", {verdict} its budget of {options.at_most}x")
    sys.exit(0 if ratio <= options.at_most else 1)


if __name__ == "__main__":
    main()
