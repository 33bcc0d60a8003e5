"""The event log's cost on the native module, counted in instructions with
callgrind (not wall-clock: exact on a shared machine). For the log on and
off, it starts a redis-server under callgrind with the module, enqueues N
jobs, claims and acks each (every call with its events keys: three entries a
job with the log on), and prints the instructions per job of the whole
commands (`on_command`, inclusive; callgrind attributes a transition's
inlined store calls unevenly, so only the whole command is compared). Then
the same for a producer's shape: ENQUEUEMANY calls of BATCH jobs (one
entry a job), the server's side of `add-bulk`:

    cargo build --release -p echomq-module
    python3 bench/events_cost.py target/release/libechomq_module.so

Needs valgrind; about a minute.
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from claim_cost import inclusive  # noqa: E402
from resp import start_server  # noqa: E402

N = 1000
ENQUEUE = ["pending", "delayed", "priority", "policy", "unique", "unique_until", "events", "config", "headers",
           "wake"]
CLAIM = ["pending", "active", "config", "rate", "policy", "events", "headers", "wake"]
ACK = ["active", "done", "results", "events", "config"]
CONFIG = ["config", "pending", "priority", "rate", "events", "wake"]


BATCH, BATCHES = 1000, 20


def profiled(module, events, out, work):
    """`work(r, k)` on a server under callgrind (profile to `out`), its queue's
    log on or off; `k` names a key of the queue."""
    server, r = start_server("--loadmodule", module, under=["valgrind", "--tool=callgrind",
                                                             f"--callgrind-out-file={out}"], wait=60)
    k = lambda name: "emq:{q}:" + name  # noqa: E731
    r.call("EMQ.CONFIG", len(CONFIG), *map(k, CONFIG), "EVENTS", 10000 if events else 0)
    work(r, k)
    try:
        r.call("SHUTDOWN", "NOSAVE")
    except (OSError, RuntimeError):
        pass
    server.wait()


def lifecycle(r, k):
    # N jobs enqueued, then each claimed and acked.
    for i in range(N):
        job = "JOB_%026d" % i
        r.call("EMQ.ENQUEUE", 1 + len(ENQUEUE), k("job:" + job), *map(k, ENQUEUE), job, "payload")
    for i in range(N):
        job = "JOB_%026d" % i
        r.call("EMQ.CLAIM", len(CLAIM), *map(k, CLAIM), 60000)
        r.call("EMQ.ACK", 1 + len(ACK), k("job:" + job), *map(k, ACK), job, 1)


def enqueue_many(r, k):
    # ENQUEUEMANY of BATCH jobs, BATCHES times, payloads of 53 bytes.
    for call in range(BATCHES):
        jobs = []
        for i in range(call * BATCH, (call + 1) * BATCH):
            jobs += ["JOB_%026d" % i, '{"n":%08d,"payload":"%s"}' % (i, "x" * 26)]
        r.call("EMQ.ENQUEUEMANY", 4, k("pending"), k("events"), k("config"), k("wake"), *jobs)


def main():
    module = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'log':<5} {'per job':>10}  (instructions of ENQUEUE + CLAIM + ACK, {N} jobs)")
        jobs = {}
        for events in (True, False):
            out = os.path.join(tmp, f"{events}.out")
            profiled(module, events, out, lifecycle)
            jobs[events] = inclusive(out, "command::on_command") / N
            print(f"{'on' if events else 'off':<5} {jobs[events]:>10,.0f}")
        print(f"the log: {jobs[True] - jobs[False]:,.0f} a job, {(jobs[True] - jobs[False]) / 3:,.0f} an entry")
        print(f"{'log':<5} {'per job':>10}  (instructions of ENQUEUEMANY, {BATCHES} calls of {BATCH} jobs)")
        for events in (True, False):
            out = os.path.join(tmp, f"many-{events}.out")
            profiled(module, events, out, enqueue_many)
            per_job = inclusive(out, "command::on_command") / (BATCH * BATCHES)
            print(f"{'on' if events else 'off':<5} {per_job:>10,.0f}")


if __name__ == "__main__":
    main()
