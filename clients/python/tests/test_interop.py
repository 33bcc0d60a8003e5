"""Interop with the Rust speaker, both ways, on Lua and on Native: Python
enqueues and ``emq work`` (the Rust Worker running a command per job) runs
the jobs; ``emq enqueue`` enqueues and a Python :class:`echomq.Worker` runs
them. Results, errors, headers and progress read the same from both sides
(``emq inspect``, ``emq result`` and :meth:`echomq.Queue.inspect`), and a
stale token from either side is refused with ``EMQFENCE``."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import textwrap
from pathlib import Path
from typing import Any, Iterator

import pytest

import echomq
from echomq import calls
from echomq.model import read_claims

from conftest import RedisServer, emq_path, eventually, unique_queue, working

TRACE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def emq(server: RedisServer, kind: str, *args: str, check: bool = True,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``emq`` against the test's server, on the same executor."""
    environment = {**os.environ, "ECHOMQ_URL": server.url, "ECHOMQ_VIA": kind, **(env or {})}
    done = subprocess.run([str(emq_path()), *args], capture_output=True, env=environment, timeout=120)
    if check and done.returncode != 0:
        raise AssertionError(f"emq {' '.join(args)} exited {done.returncode}: {done.stderr.decode()}")
    return done


@pytest.fixture
def job_script(tmp_path: Path) -> Path:
    """The command ``emq work`` runs per job: reports progress with ``emq
    progress``, fails on the payload ``fail``, else writes its result."""
    script = tmp_path / "job.sh"
    script.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        payload=$(cat)
        [ "${{#payload}}" = "$ECHOMQ_PAYLOAD_BYTES" ] || exit 3
        if [ "$payload" = fail ]; then echo "it went wrong" >&2; exit 1; fi
        {emq_path()} progress 42 || exit 4
        printf 'ran %s with %s' "$payload" "$TRACEPARENT"
    """))
    script.chmod(0o755)
    return script


class EmqWorker:
    """``emq work`` in the background, stopped by SIGTERM."""

    def __init__(self, server: RedisServer, kind: str, queue: str, command: Path, *extra: str) -> None:
        environment = {**os.environ, "ECHOMQ_URL": server.url, "ECHOMQ_VIA": kind}
        self.process = subprocess.Popen(
            [str(emq_path()), "work", queue, "--result", *extra, "--", str(command)],
            env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def stop(self) -> str:
        self.process.send_signal(signal.SIGTERM)
        try:
            _, err = self.process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, err = self.process.communicate()
        return err.decode(errors="replace")


@pytest.fixture
def emq_worker(server: RedisServer, kind: str) -> Iterator[Any]:
    started: list[EmqWorker] = []

    def start(queue: str, command: Path, *extra: str) -> EmqWorker:
        started.append(EmqWorker(server, kind, queue, command, *extra))
        return started[-1]

    yield start
    for worker in started:
        if worker.process.poll() is None:
            worker.stop()


async def test_python_enqueues_and_emq_work_runs_the_jobs(queue: echomq.Queue, server: RedisServer, kind: str,
                                                         job_script: Path, emq_worker: Any) -> None:
    jobs = [await queue.enqueue(b"job %d" % i, traceparent=TRACE, headers={"tenant": "acme"}, attempts=3)
            for i in range(5)]
    failing = await queue.enqueue(b"fail", attempts=1)
    emq_worker(queue.name, job_script)
    for job in jobs:
        done = await queue.wait(job.id, timeout=60)
        assert (done.state, done.token) == ("done", 1)
        assert done.result == f"ran {done.payload.decode()} with {TRACE}".encode()
        assert done.progress == b"42" and done.headers == {"tenant": "acme", "traceparent": TRACE}
        shown = emq(server, kind, "inspect", job.id, "--queue", queue.name).stdout.decode()
        assert "state     done" in shown and "progress  42" in shown
        assert f"result    {done.result.decode()}" in shown and "header    tenant: acme" in shown
        assert emq(server, kind, "result", job.id, "--queue", queue.name).stdout == done.result
    dead = await queue.wait(failing.id, timeout=60)
    assert dead.state == "dead" and dead.error is not None and dead.error.endswith("it went wrong")
    shown = emq(server, kind, "inspect", failing.id, "--queue", queue.name).stdout.decode()
    assert f"error     {dead.error}" in shown
    assert emq(server, kind, "result", failing.id, "--queue", queue.name, check=False).returncode == 6


async def test_emq_enqueues_and_a_python_worker_runs_the_jobs(queue: echomq.Queue, server: RedisServer,
                                                             kind: str) -> None:
    ids = [emq(server, kind, "enqueue", queue.name, json.dumps({"n": i}), "--header", "tenant=acme",
               "--header", f"traceparent={TRACE}", "--attempts", "2", "--timeout", "30s",
               "--priority", str(-i)).stdout.decode().strip() for i in range(4)]
    failing = emq(server, kind, "enqueue", queue.name, "fail", "--attempts", "1").stdout.decode().strip()
    seen: dict[str, Any] = {}

    async def handle(job: echomq.Job) -> Any:
        if job.payload == b"fail":
            raise ValueError("python says no")
        seen[job.id] = (job.headers, job.traceparent, job.policy, job.token)
        await job.progress(b"half way")
        return {"doubled": job.json()["n"] * 2}

    worker = echomq.Worker(queue, handle, concurrency=4)
    task = asyncio.create_task(worker.run(handle_signals=False))
    try:
        done = [await queue.wait(job_id, timeout=60) for job_id in ids]
        dead = await queue.wait(failing, timeout=60)
    finally:
        worker.stop()
        await asyncio.wait_for(task, 60)
    for i, (job_id, info) in enumerate(zip(ids, done)):
        assert info.state == "done" and info.result_json() == {"doubled": 2 * i}
        headers, traceparent, policy, attempt = seen[job_id]
        assert headers == {"tenant": "acme", "traceparent": TRACE} and traceparent == TRACE
        assert policy == echomq.Policy(attempts=2, timeout_ms=30_000) and attempt == 1
        shown = emq(server, kind, "inspect", job_id, "--queue", queue.name).stdout.decode()
        assert "progress  half way" in shown and f"result    {info.result.decode()}" in shown  # type: ignore[union-attr]
        assert emq(server, kind, "result", job_id, "--queue", queue.name).stdout == info.result
    assert dead.state == "dead" and dead.error is not None
    assert dead.error.startswith("ValueError: python says no\n\nTraceback (most recent call last):\n")
    shown = emq(server, kind, "inspect", failing, "--queue", queue.name).stdout.decode()
    assert "error     ValueError: python says no\n" in shown and 'raise ValueError("python says no")' in shown


async def test_a_stale_python_token_is_fenced_after_a_rust_worker_took_the_job(
        queue: echomq.Queue, server: RedisServer, kind: str, job_script: Path, emq_worker: Any) -> None:
    job = await queue.enqueue(b"taken")
    stale = read_claims(await queue.executor.run(calls.claim(queue.keyspace, 1))).jobs[0]  # a 1 ms lease
    assert stale.token == 1
    emq_worker(queue.name, job_script)  # its upkeep reaps the expired lease, then it runs the job
    done = await queue.wait(job.id, timeout=60)
    assert (done.state, done.token, done.result) == ("done", 2, b"ran taken with ")
    with pytest.raises(echomq.FenceError):
        await queue.executor.run(calls.ack(queue.keyspace, job.id, stale.token, b"stale"))
    with pytest.raises(echomq.FenceError):
        await queue.executor.run(calls.progress(queue.keyspace, job.id, stale.token, b"stale"))
    assert await queue.result(job.id) == done.result


async def test_a_stale_rust_token_is_fenced_while_python_holds_the_job(queue: echomq.Queue, server: RedisServer,
                                                                      kind: str) -> None:
    job_id = emq(server, kind, "enqueue", queue.name, "held").stdout.decode().strip()
    first = read_claims(await queue.executor.run(calls.claim(queue.keyspace, 1))).jobs[0]  # a 1 ms lease

    async def reaped() -> bool:
        requeued, _ = await queue.executor.run(calls.sweep("reap", queue.keyspace, 10, first=[b"5"]))
        return bool(requeued)

    await eventually(reaped, what="the expired lease reaped")
    held = read_claims(await queue.executor.run(calls.claim(queue.keyspace, 60_000))).jobs[0]
    assert (first.token, held.token) == (1, 2)

    def progress(token: int) -> subprocess.CompletedProcess[bytes]:
        return emq(server, kind, "progress", f"at token {token}", check=False,
                   env={"ECHOMQ_QUEUE": queue.name, "ECHOMQ_JOB_ID": job_id, "ECHOMQ_JOB_TOKEN": str(token)})

    refused = progress(first.token)
    assert refused.returncode == 5, refused.stderr.decode()  # refused: the lease was lost
    assert "EMQFENCE" in refused.stderr.decode()
    assert (await queue.inspect(job_id)).progress is None  # type: ignore[union-attr]
    assert progress(held.token).returncode == 0
    assert (await queue.inspect(job_id)).progress == b"at token 2"  # type: ignore[union-attr]
    await queue.executor.run(calls.ack(queue.keyspace, job_id, held.token))


async def test_schedules_are_shared_and_their_tick_ids_agree(queue: echomq.Queue, server: RedisServer,
                                                             kind: str) -> None:
    emq(server, kind, "schedule", "add", "--every", "1s", queue.name, "from-rust", "tick payload")
    first = await queue.schedule_every("from-python", 3600, b"hourly")
    listed = emq(server, kind, "schedule", "list", queue.name).stdout.decode()
    assert "from-rust" in listed and "from-python" in listed
    assert first % 3_600_000 == 0

    fired: list[echomq.Job] = []

    async def handle(job: echomq.Job) -> None:
        fired.append(job)

    worker = echomq.Worker(queue, handle, upkeep=0.05)
    task = asyncio.create_task(worker.run(handle_signals=False))
    try:
        await eventually(lambda: _any(fired), what="a tick of emq's schedule fired by the Python worker")
    finally:
        worker.stop()
        await asyncio.wait_for(task, 60)
    job = fired[0]
    assert job.payload == b"tick payload"
    # The id names its tick (the ULID's time), and is the one every speaker derives (§11.6).
    tick = echomq.ids.decode_ulid(job.id[4:]) >> 80
    assert tick % 1000 == 0 and job.id == echomq.schedule.tick_id(queue.name, "from-rust", tick)
    assert await queue.unschedule("from-python") and not await queue.unschedule("from-python")


async def test_a_schedule_emq_paused_fires_nothing_in_python_and_python_resumes_it(
        queue: echomq.Queue, server: RedisServer, kind: str) -> None:
    """``emq schedule pause`` (the Rust host) writes the paused definition;
    a Python worker reads it, moves its ticks on and fires none, though
    ``all:100`` would fire each; Python's resume reads back in ``emq schedule list``."""
    emq(server, kind, "schedule", "add", "--every", "1s", "--missed", "all:100", queue.name, "beat", "b")
    emq(server, kind, "schedule", "pause", queue.name, "beat")
    [[_, definition, paused_next]] = (await queue.executor.run(calls.schedules(queue.keyspace)))[1:]
    assert echomq.schedule.Every.read(definition) == echomq.schedule.Every(1000, "all:100", b"b", paused=True)
    assert "paused" in emq(server, kind, "schedule", "list", queue.name).stdout.decode()

    async def handle(job: echomq.Job) -> None:
        raise AssertionError(f"a paused schedule fired {job.id}")

    async def moved_on() -> bool:
        [[_, _, following]] = (await queue.executor.run(calls.schedules(queue.keyspace)))[1:]
        return int(following) >= int(paused_next) + 2000

    worker = echomq.Worker(queue, handle, upkeep=0.05)
    task = asyncio.create_task(worker.run(handle_signals=False))
    try:
        await eventually(moved_on, what="two paused ticks moved on by the Python worker")
    finally:
        worker.stop()
        await asyncio.wait_for(task, 60)
    assert (await queue.stats()) == echomq.Stats(0, 0, 0, 0, 0, 0, 0)

    assert await queue.resume_schedule("beat")
    listed = emq(server, kind, "schedule", "list", queue.name).stdout.decode()
    assert listed.startswith("beat  next ") and "paused" not in listed, listed


async def _any(found: list[Any]) -> bool:
    return bool(found)


async def test_both_speakers_note_their_queues_in_one_registry(server: RedisServer, kind: str) -> None:
    """A queue Python enqueued to is listed by ``emq queues`` (the registry,
    no scan), and one ``emq enqueue`` wrote is in the registry Python reads."""
    from_python, from_rust = unique_queue("py-registry"), unique_queue("rs-registry")
    async with await echomq.connect(server.url, executor=kind) as connection:
        queue = await connection.queue(from_python)
        await queue.enqueue(b"noted")
        assert from_python in emq(server, kind, "queues").stdout.decode().split()
        emq(server, kind, "enqueue", from_rust, "noted too")
        names = [name.decode() for name in await connection.redis.zrange(b"emq:queues", 0, -1)]
        assert from_rust in names and from_python in names


async def test_a_python_worker_is_listed_by_emq_workers(queue: echomq.Queue, server: RedisServer,
                                                        kind: str) -> None:
    """A running Python worker's entry in the worker registry (§11.3) reads
    in ``emq workers`` (the Rust reader) with its fields and the job it runs,
    and a graceful stop takes it out."""
    import socket

    release = asyncio.Event()

    async def handle(job: echomq.Job) -> bytes:
        await release.wait()
        return b"ok"

    worker = echomq.Worker(queue, handle, concurrency=2, registry_beat=0.1)

    async def listed() -> list[dict[str, Any]]:
        done = await asyncio.to_thread(emq, server, kind, "workers", "--json", "--queue", queue.name)
        found = [json.loads(line) for line in done.stdout.decode().splitlines()]
        return [entry for entry in found if entry["id"] == worker.id]

    async def running_one() -> dict[str, Any] | None:
        found = await listed()
        return found[0] if found and len(found[0]["running"]) == 1 else None

    runner = asyncio.create_task(worker.run(handle_signals=False))
    try:
        job = await queue.enqueue(b"x")
        me = await eventually(running_one, what="emq workers lists the Python worker and its job")
        assert me["host"] == socket.gethostname() and me["pid"] == os.getpid()
        assert worker.id.startswith(f"{me['host']}:{me['pid']}:")
        assert me["queues"] == [queue.name] and me["concurrency"] == 2
        assert me["version"].startswith("echomq-python ") and me["protocol"] == echomq.PROTOCOL
        assert me["ttl_ms"] == 300 and me["started"] <= me["beat"]
        running = me["running"][0]
        assert (running["queue"], running["id"], running["token"]) == (queue.name, job.id, 1)
        assert me["beat"] < running["lease_until"] <= me["beat"] + 30_000
    finally:
        release.set()
        worker.stop()
        await runner
    assert await listed() == [], "gone after a graceful stop"
    assert await queue.executor.redis.exists(b"emq:worker:" + worker.id.encode()) == 0


async def test_a_flow_emq_added_runs_its_parent_in_python_after_python_acked_its_children(
        conn: echomq.Connection, server: RedisServer, kind: str, tmp_path: Path) -> None:
    """``emq flow add FILE`` (the Rust host's Flows::add) writes the parent
    and links the children; Python workers ack the children, relay their
    notices, and run the parent once, with their results."""
    parents, children = await conn.queue(unique_queue("rs-parents")), await conn.queue(unique_queue("rs-children"))
    file = tmp_path / "flow.json"
    file.write_text(json.dumps({"queue": parents.name, "payload": "merge", "children": [
        {"queue": children.name, "payload": "a", "on_failure": "ignore"},
        {"queue": children.name, "payload": "b", "on_failure": "ignore"},
    ]}))
    added = json.loads(emq(server, kind, "flow", "add", str(file)).stdout)
    parent = echomq.JobRef.parse(added["parent"])
    refs = [echomq.JobRef.parse(child) for child in added["children"]]
    assert parent.queue == parents.name and added["created"] is True and len(refs) == 2
    info = await parents.inspect(parent.id)
    assert info is not None and (info.state, info.payload) == ("waiting", b"merge")
    heard = await parents.children(parent.id)
    assert heard is not None and (heard.incarnation, heard.open) == (added["incarnation"], 2)
    seen: list[dict[echomq.JobRef, bytes]] = []

    async def handle(job: echomq.Job) -> bytes:
        if job.queue.name == parents.name:
            seen.append(await job.children_results())
            return b"merged"
        return b"python " + job.payload

    async with working(echomq.Worker(children, handle, upkeep=0.05)), \
            working(echomq.Worker(parents, handle, upkeep=0.05)):
        done = await parents.wait(parent.id, timeout=60)
    assert (done.state, done.result) == ("done", b"merged")
    payloads = {ref: (await children.inspect(ref.id)).payload for ref in refs}  # type: ignore[union-attr]
    assert seen == [{ref: b"python " + payloads[ref] for ref in refs}]
    shown = emq(server, kind, "inspect", parent.id, "--queue", parents.name).stdout.decode()
    assert "children  0 open of 2" in shown and "result python a" in shown, shown


async def test_a_flow_python_added_is_resolved_when_emq_work_acks_its_children(
        conn: echomq.Connection, server: RedisServer, kind: str, emq_worker: Any) -> None:
    """A flow Python added (FLOW, then ENQUEUE with PARENT): ``emq work``
    (the Rust worker) acks the children with their results, and its upkeep
    relays their notices: the parent is pending, and has heard them."""
    parents, children = await conn.queue(unique_queue("py-parents")), await conn.queue(unique_queue("py-children"))
    flow = echomq.Flow(b"merge").child(children.name, b"page 1").child(children.name, b"page 2")
    added = await parents.add_flow(flow)
    cat = shutil.which("cat")
    assert cat is not None
    emq_worker(children.name, Path(cat))

    async def resolved() -> bool:
        info = await parents.inspect(flow.id)
        return info is not None and info.state == "pending"

    await eventually(resolved, timeout=60, what="the Rust worker relayed the children's notices")
    heard = await parents.children(flow.id)
    assert heard is not None and (heard.incarnation, heard.open) == (added.incarnation, 0)
    assert heard.results == {added.children[0]: b"page 1", added.children[1]: b"page 2"}
    assert await children.executor.redis.xlen(children.keyspace.key("notices")) == 0
    shown = emq(server, kind, "inspect", flow.id, "--queue", parents.name).stdout.decode()
    assert "state     pending" in shown and "children  0 open of 2" in shown, shown


async def test_a_python_job_waits_for_children_emq_work_runs_then_goes_on(
        conn: echomq.Connection, server: RedisServer, kind: str, emq_worker: Any) -> None:
    """Dynamic children (ADOPT): a Python handler adds two children in a
    queue ``emq work`` (the Rust worker) runs; their notices, relayed by the
    Rust worker's upkeep, make the parent pending; it runs again in Python
    and reads what the Rust worker kept."""
    parents, children = await conn.queue(unique_queue("py-adopt")), await conn.queue(unique_queue("rs-kids"))
    enqueued = await parents.enqueue(b"report")
    cat = shutil.which("cat")
    assert cat is not None
    emq_worker(children.name, Path(cat))
    runs: list[int] = []

    async def handle(job: echomq.Job) -> bytes:
        runs.append(job.token)
        await job.wait_for(echomq.ChildJobs().child(children.name, b"page 1").child(children.name, b"page 2"))
        return b"+".join(sorted((await job.children_results()).values()))

    async with working(echomq.Worker(parents, handle, upkeep=0.05)):
        done = await parents.wait(enqueued.id, timeout=60)
    assert (done.state, done.result, len(runs)) == ("done", b"page 1+page 2", 2)
    kids = [echomq.JobRef(children.name, echomq.ids.child_id(enqueued.id, at, children.name, body))
            for at, body in enumerate([b"page 1", b"page 2"])]
    shown = emq(server, kind, "inspect", kids[0].id, "--queue", children.name).stdout.decode()
    assert "state     done" in shown and "result    page 1" in shown, "the child Python named, run by Rust"


async def test_python_grouped_jobs_are_run_by_emq_work_within_their_cap(
        queue: echomq.Queue, server: RedisServer, kind: str, emq_worker: Any, tmp_path: Path) -> None:
    """Fair groups (1.7, §7.9) across speakers: jobs Python enqueued into a
    group capped at 1 by Python are claimed by ``emq work`` (the Rust
    worker) one at a time, in order, beside another group's; its acks take
    them out of their group's keys, which end empty."""
    log = tmp_path / "ran.log"
    script = tmp_path / "log.sh"
    script.write_text(f'#!/bin/sh\npayload=$(cat)\necho "start $payload" >> {log}\n'
                      f'echo "end $payload" >> {log}\n')
    script.chmod(0o755)
    await queue.set_group("serial", cap=1)
    serial = await queue.enqueue_many([b"s%d" % i for i in range(4)], group="serial")
    other = [await queue.enqueue(b"o%d" % i, group="other") for i in range(3)]
    emq_worker(queue.name, script, "--concurrency", "4")
    for job in [*serial, *other]:
        assert (await queue.wait(job.id, timeout=60)).state == "done"
    lines = [line for line in log.read_text().splitlines() if " s" in line]
    assert lines == [f"{edge} s{i}" for i in range(4) for edge in ("start", "end")]
    for name in ("serial", "other"):
        info = await queue.group(name)
        assert (info.pending, info.running) == (0, 0), info
    assert await queue.connection.redis.exists(queue.keyspace.key("gactive:serial")) == 0


async def test_emq_grouped_jobs_are_run_by_a_python_worker_within_their_cap(
        queue: echomq.Queue, server: RedisServer, kind: str) -> None:
    """Fair groups the other way: ``emq limit --group`` caps a group at 1
    and ``emq enqueue --group`` fills it; a Python worker at concurrency 4
    runs its jobs one at a time, in order, and ``emq groups`` lists it
    empty after."""
    emq(server, kind, "limit", queue.name, "--group", "serial", "--cap", "1")
    ids = [emq(server, kind, "enqueue", queue.name, f"s{i}", "--group", "serial").stdout.decode().strip()
           for i in range(4)]
    running: list[str] = []
    overlaps: list[int] = []

    async def handle(job: echomq.Job) -> Any:
        running.append(job.id)
        overlaps.append(len(running))
        await asyncio.sleep(0.05)
        running.remove(job.id)
        return job.payload.decode()

    worker = echomq.Worker(queue, handle, concurrency=4)
    task = asyncio.create_task(worker.run(handle_signals=False))
    try:
        done = [await queue.wait(job_id, timeout=60) for job_id in ids]
    finally:
        worker.stop()
        await asyncio.wait_for(task, 60)
    assert [info.state for info in done] == ["done"] * 4
    assert max(overlaps) == 1, "a group capped at 1 by emq ran more than one at once"
    listed = emq(server, kind, "groups", queue.name).stdout.decode()
    assert "serial" in listed, listed
    info = await queue.group("serial")
    assert (info.pending, info.running, info.cap) == (0, 0, 1), info
