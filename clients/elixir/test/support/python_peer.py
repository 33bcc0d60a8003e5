"""The Python speaker's half of the Elixir interop tests (test/python_test.exs):
one subcommand a step, JSON on stdout. Run with the interpreter that has the
echomq package (scripts/test's venv), ECHOMQ_URL and ECHOMQ_VIA set."""

import asyncio
import json
import os
import sys

import echomq
from echomq import calls
from echomq.model import read_claims


async def main(step: str, queue_name: str, *rest: str) -> None:
    conn = await echomq.connect(os.environ["ECHOMQ_URL"], executor=os.environ["ECHOMQ_VIA"])
    queue = await conn.queue(queue_name)
    if step == "enqueue":  # n jobs with headers and a policy; their ids
        jobs = [await queue.enqueue(b"py %d" % i, headers={"tenant": "acme"}, attempts=2) for i in range(int(rest[0]))]
        print(json.dumps([job.id for job in jobs]))
    elif step == "work":  # a Python worker until the given jobs are done
        async def handle(job: echomq.Job) -> bytes:
            await job.progress(b"py half way")
            return b"python ran " + job.payload

        worker = echomq.Worker(queue, handle, concurrency=4)
        task = asyncio.create_task(worker.run(handle_signals=False))
        found = [await queue.wait(job_id, timeout=60) for job_id in rest]
        worker.stop()
        await asyncio.wait_for(task, 60)
        print(json.dumps([[info.state, info.token, info.result.decode()] for info in found]))
    elif step == "inspect":  # what Python reads of the given jobs
        found = [await queue.inspect(job_id) for job_id in rest]
        print(json.dumps([[i.state, i.token, (i.result or b"").decode(), (i.progress or b"").decode(), i.headers]
                          for i in found]))
    elif step == "claim":  # a claim with a 1 ms lease: its holder is stale at once
        job = read_claims(await queue.executor.run(calls.claim(queue.keyspace, 1))).jobs[0]
        print(json.dumps([job.id, job.token]))
    elif step == "ack":  # an ack with the given token: ok, or the refusal's code
        try:
            await queue.executor.run(calls.ack(queue.keyspace, rest[0], int(rest[1]), b"stale"))
            print(json.dumps("ok"))
        except echomq.Refused as refused:
            print(json.dumps(refused.code))
    await conn.close()


asyncio.run(main(*sys.argv[1:]))
