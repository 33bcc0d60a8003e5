"""The operator's surfaces at scale: `emq queues`, `emq stats`, the
dashboard's pages (the queues, a queue with its chart by minute and by
hour, a state's first and last page of jobs, a text search, a job, the
workers) and `/metrics`, each timed five times (the
median, min and max), and what one dashboard costs Redis when nobody looks
and while one browser follows its live counts, on one redis-server holding
QUEUES queues of JOBS pending jobs each (100 x 10,000 by default: a
million jobs, enqueued with `emq enqueue --jsonl`).

    cargo build --release --locked -p emq -p echomq-module
    python3 bench/operator.py                 # QUEUES=100 JOBS=10000 IDLE=10
    QUEUES=10 JOBS=1000 python3 bench/operator.py   # a quick look

A benchmark, not a test: it prints figures and asserts nothing. Issue 30's
targets: every page and /metrics under 200 ms, `emq stats` and `emq queues`
under 500 ms, an idle dashboard under 2% of a core. (The dashboard keeps
its snapshot fresh for 5 s after the last page was asked for: the idle
figure is taken after that.)
"""
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from resp import free_port, start_server  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMQ = os.path.join(ROOT, "target", "release", "emq")
MODULE = os.path.join(ROOT, "target", "release", "libechomq_module.so")
QUEUES, JOBS = int(os.environ.get("QUEUES", "100")), int(os.environ.get("JOBS", "10000"))
IDLE = float(os.environ.get("IDLE", "10"))
DEAD = int(os.environ.get("DEAD", "500"))


def timed(run, times=5):
    """Seconds of each of `times` runs of `run`."""
    took = []
    for _ in range(times):
        started = time.perf_counter()
        run()
        took.append(time.perf_counter() - started)
    return took


def say(what, took):
    ms = [t * 1000 for t in took]
    print(f"{what:<22} median {statistics.median(ms):9.1f} ms   min {min(ms):9.1f}   max {max(ms):9.1f}")


def cpu_seconds(client):
    info = client.call("INFO", "cpu").decode()
    fields = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
    return float(fields["used_cpu_sys"]) + float(fields["used_cpu_user"])


def main():
    server, client = start_server("--loadmodule", MODULE)
    env = {**os.environ, "ECHOMQ_URL": f"redis://127.0.0.1:{client.port}/"}
    dashboard = None
    try:
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as lines:
            for n in range(JOBS):
                lines.write('{"payload": "job %d"}\n' % n)
        started = time.perf_counter()
        for q in range(QUEUES):
            with open(lines.name) as jobs:
                subprocess.run([EMQ, "enqueue", f"ops-{q:04}", "--jsonl"], stdin=jobs, env=env,
                               stdout=subprocess.DEVNULL, check=True)
        os.unlink(lines.name)
        # And DEAD dead jobs (500, as the scale names), in the second
        # queue: claimed and failed out of attempts through the module.
        q = "emq:{ops-0001}:"
        claim = ["pending", "active", "config", "rate", "policy", "events", "headers", "wake"]
        claimed = client.call("EMQ.CLAIM", len(claim), *[q + k for k in claim], 600000, "COUNT", DEAD)
        fail = ["active", "delayed", "dead", "errors", "policy", "events", "config", "counts"]
        for job in claimed:
            job_id, token = job[0].decode(), job[1]
            client.call("EMQ.FAIL", 1 + len(fail), q + "job:" + job_id, *[q + k for k in fail],
                        job_id, token, 1, 0, "boom: the address bounced")
        keys = int(client.call("DBSIZE"))
        print(f"{QUEUES} queues x {JOBS} pending jobs, {len(claimed)} of them dead: {keys:,} keys, "
              f"enqueued in {time.perf_counter() - started:.1f} s")

        def emq(*args):
            subprocess.run([EMQ, *args], env=env, stdout=subprocess.DEVNULL, check=True)

        say("emq queues", timed(lambda: emq("queues")))
        say("emq stats", timed(lambda: emq("stats")))

        port = free_port()
        dashboard = subprocess.Popen([EMQ, "dashboard", "--bind", f"127.0.0.1:{port}"], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the dashboard did not listen")
                time.sleep(0.05)

        def get(path):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=60) as reply:
                reply.read()

        first = subprocess.run([EMQ, "list", "ops-0000", "pending", "--limit", "1"], env=env, check=True,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout.split()[0].decode()
        pages = [
            ("dashboard /", "/"),
            ("a queue", "/queues/ops-0000"),
            ("a queue, week by hour", "/queues/ops-0000?span=hours"),
            ("jobs, first page", "/queues/ops-0000/state/pending"),
            ("jobs, last page", "/queues/ops-0000/state/pending?page=last"),
            ("jobs, text search", "/queues/ops-0000/state/pending?q=job%205000"),
            ("a job", f"/queues/ops-0000/jobs/{first}"),
            ("workers", "/workers"),
            ("dead, first page", "/queues/ops-0001/state/dead"),
            ("dead, last page", "/queues/ops-0001/state/dead?page=last"),
            ("dashboard /metrics", "/metrics"),
        ]
        for what, path in pages:
            say(what, timed(lambda path=path: get(path)))

        def cold(path):
            # The first page after the snapshot's second has passed.
            time.sleep(1.1)
            started = time.perf_counter()
            get(path)
            return time.perf_counter() - started

        for what, path in [("/ with a new snapshot", "/"), ("/metrics, new snapshot", "/metrics")]:
            say(what, [cold(path) for _ in range(5)])

        def cpu_share(what):
            before = cpu_seconds(client)
            time.sleep(IDLE)
            used = cpu_seconds(client) - before
            print(f"{what:<22} Redis used {used:.3f} s of CPU in {IDLE:.0f} s: "
                  f"{100 * used / IDLE:.2f}% of a core")

        time.sleep(6)  # past the 5 s the snapshot stays fresh after a page
        cpu_share("idle dashboard")
        live = urllib.request.urlopen(f"http://127.0.0.1:{port}/live", timeout=60)
        live.readline()  # the first event: the viewer is counted
        cpu_share("one live viewer")
        live.close()
    finally:
        if dashboard is not None:
            dashboard.terminate()
            dashboard.wait()
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
