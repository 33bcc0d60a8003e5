"""The worker command (issue 51): ``echomq worker MODULE:APP``, a process
as a deploy runs it, on Lua and on Native: a task called by ``emq
enqueue``, ``--burst``, signals as ``emq work`` takes them, and a sync
task longer than its lease run exactly once by two worker processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import textwrap
import time
from pathlib import Path

import pytest

import echomq

from conftest import RedisServer, emq_path, unique_queue, wait_until

APP = textwrap.dedent('''
    import os, time
    import echomq

    app = echomq.App(queue=os.environ["TASKS_QUEUE"])
    runs = os.environ["TASKS_RUNS"]

    @app.task
    def add(a, b):
        return a + b

    @app.task
    def slow(seconds):
        with open(runs, "a") as out:
            out.write(f"{os.getpid()} {echomq.current_job().id}\\n")
        time.sleep(seconds)       # blocking I/O, as a Django view's ORM call
        return "slept"

    @app.task
    async def fails():
        raise KeyError("sku")
''')

ECHOMQ = Path(sys.executable).with_name("echomq")


class Project:
    """A project directory holding ``tasks.py``, and the environment its commands run with."""

    def __init__(self, root: Path, url: str, kind: str) -> None:
        self.root = root
        (root / "tasks.py").write_text(APP)
        self.queue = unique_queue("cli")
        self.runs = root / "runs.txt"
        self.env = {**os.environ, "ECHOMQ_URL": url, "ECHOMQ_VIA": kind, "TASKS_QUEUE": self.queue,
                    "TASKS_RUNS": str(self.runs), "PYTHONUNBUFFERED": "1"}

    def worker(self, *args: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen([str(ECHOMQ), "worker", "tasks:app", *args], cwd=self.root, env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def emq(self, *args: str) -> str:
        done = subprocess.run([str(emq_path()), *args], env=self.env, capture_output=True, timeout=120, check=True)
        return done.stdout.decode()

    def lines(self) -> list[str]:
        return self.runs.read_text().splitlines() if self.runs.exists() else []


def _said(process: subprocess.Popen[bytes]) -> tuple[list[str], threading.Thread]:
    """What ``process`` prints, line by line as it comes (a thread reads its
    pipe to its end), for a test that waits for a line before it goes on."""
    lines: list[str] = []

    def read() -> None:
        assert process.stdout is not None
        for raw in process.stdout:
            lines.append(raw.decode(errors="replace"))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return lines, reader


def _ended(process: subprocess.Popen[bytes], timeout: float = 60) -> tuple[int, str]:
    out, _ = process.communicate(timeout=timeout)
    return process.returncode, out.decode(errors="replace")


@pytest.fixture
def project(tmp_path: Path, server: RedisServer, kind: str) -> Project:
    return Project(tmp_path, server.url, kind)


def test_emq_enqueue_calls_a_python_task_and_burst_stops_once_the_queue_is_empty(project: Project) -> None:
    ids = [project.emq("enqueue", project.queue, '{"task": "add", "args": [2, 3]}').split()[-1],
           project.emq("enqueue", project.queue, '{"task": "add", "kwargs": {"a": "x", "b": "y"}}').split()[-1],
           project.emq("enqueue", project.queue, '{"task": "fails"}', "--attempts", "1").split()[-1]]
    code, out = _ended(project.worker("--burst", "--concurrency", "4"))
    assert code == 0, out
    assert "burst: nothing pending" in out and "2 processed, 1 failed" in out, out
    assert [project.emq("result", job_id).strip() for job_id in ids[:2]] == ["5", '"xy"']
    shown = project.emq("inspect", ids[2], "--queue", project.queue)
    assert "KeyError: 'sku'" in shown and "Traceback (most recent call last):" in shown
    assert "raise KeyError(\"sku\")" in out, "the failure is logged with its traceback"


def test_a_queue_no_task_goes_to_is_warned_of(project: Project) -> None:
    """``-q`` with a misspelt name idled in silence: it is said at start."""
    code, out = _ended(project.worker("-q", project.queue + "-typo", "--burst"))
    assert code == 0, out
    assert f"-q {project.queue}-typo: no task of tasks:app goes to it" in out, out
    code, out = _ended(project.worker("-q", project.queue, "--burst"))
    assert code == 0 and "no task of" not in out, out


def test_a_partitioned_queue_is_worked_as_one(project: Project) -> None:
    """protocol 1.8: `emq enqueue` routes each job to a partition; the worker
    command, given the partitioned queue's name, works every partition."""
    project.emq("partition", "create", project.queue, "3")
    ids = [project.emq("enqueue", project.queue, '{"task": "add", "args": [%d, 1]}' % n).split()[-1]
           for n in range(6)]
    # And one a speaker before 1.8 put in the ordinary queue of the name: worked too.
    with echomq.SyncQueue.open(project.env["ECHOMQ_URL"], project.queue) as ordinary:
        ids.append(ordinary.enqueue(b'{"task": "add", "args": [6, 1]}').id)
    code, out = _ended(project.worker("--burst", "--concurrency", "4"))
    assert code == 0, out
    assert "7 processed, 0 failed" in out, out
    assert [project.emq("result", job_id).strip() for job_id in ids] == [str(n + 1) for n in range(7)]


def test_a_sync_task_twice_its_lease_runs_exactly_once_with_two_worker_processes(
        project: Project, server: RedisServer) -> None:
    queue = echomq.SyncQueue.open(server.url, project.queue)
    job = queue.enqueue(b'{"task": "slow", "args": [2.0]}')
    workers = [project.worker("--lease", "1", "--concurrency", "10") for _ in range(2)]
    try:
        done = queue.wait(job.id, timeout=90)
        # Both workers alive all along, each reaping every 0.25 s: a lapsed lease would be taken back.
        assert all(w.poll() is None for w in workers)
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        ended = [_ended(w) for w in workers]
        queue.close()
    assert [code for code, _ in ended] == [0, 0], ended
    assert (done.state, done.result, done.token) == ("done", b'"slept"', 1)
    assert len(project.lines()) == 1, project.lines()


def test_sigterm_releases_a_running_job_after_the_grace_and_a_second_at_once(
        project: Project, server: RedisServer) -> None:
    queue = echomq.SyncQueue.open(server.url, project.queue)
    job = queue.enqueue(b'{"task": "slow", "args": [120]}')
    worker = project.worker("--grace", "120")
    said, reader = _said(worker)
    try:
        wait_until(lambda: project.lines(), timeout=60, what="the task started")
        worker.send_signal(signal.SIGTERM)     # graceful: the task has 120 s
        started = time.monotonic()
        # The first handled before the second is sent: two signals pending at
        # once are one (POSIX does not queue them), as on a loaded machine.
        wait_until(lambda: "SIGTERM: stopping: no new jobs" in "".join(said), timeout=60,
                   what="the worker heard the first SIGTERM")
        assert (queue.inspect(job.id) or job).state == "active" and worker.poll() is None, "graceful: it runs on"
        worker.send_signal(signal.SIGTERM)     # the second: released at once
        code = worker.wait(timeout=60)
        reader.join(timeout=30)  # the pipe's last lines
        out = "".join(said)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    assert code == 0, out
    assert time.monotonic() - started < 60
    assert "SIGTERM: stopping: no new jobs" in out and "SIGTERM: stopping at once" in out, out
    released = queue.inspect(job.id)
    queue.close()
    assert released is not None and released.state == "pending"
    assert released.attempts_spent() == 0, "a stop spends no attempt"


def test_a_target_that_is_no_app_is_refused_with_status_2(tmp_path: Path) -> None:
    # Refused before any connection: nothing listens on port 1.
    project = Project(tmp_path, "redis://127.0.0.1:1/0", "lua")
    for target, says in [("tasks:nothing", "has no 'nothing'"), ("missing_module:app", "cannot import"),
                         ("tasks:add", "not an echomq.App"), ("tasks", "is not MODULE:APP")]:
        done = subprocess.run([str(ECHOMQ), "worker", target, "--burst"], cwd=project.root, env=project.env,
                              capture_output=True, timeout=60)
        assert done.returncode == 2 and says in done.stderr.decode(), (target, done.stderr)
    done = subprocess.run([str(ECHOMQ), "worker", "tasks:app", "-q", "a{b"], cwd=project.root, env=project.env,
                          capture_output=True, timeout=60)
    assert done.returncode == 2 and "queue name" in done.stderr.decode()
    done = subprocess.run([str(ECHOMQ), "worker", "tasks:app"], cwd=project.root,
                          env={**project.env, "ECHOMQ_VIA": "lue"}, capture_output=True, timeout=60)
    assert done.returncode == 2 and "ECHOMQ_VIA='lue'" in done.stderr.decode()
