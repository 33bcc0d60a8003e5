"""Instructions per job of the Lua calls a busy worker makes (CLAIM with a
COUNT, then ACKMANY of the jobs it claimed), counted by callgrind for builds
of the scripts one after another: what queues-100 and process-c100 cost the
server a job, immune to the shared machine's noise.

    emq scripts --out /tmp/before   # from the build before
    emq scripts --out /tmp/after    # from the build after
    python3 bench/batch_instructions.py /tmp/before /tmp/after [queues] [jobs a queue]

For each build: a redis-server under `valgrind --tool=callgrind`; `queues`
queues of `jobs a queue` jobs each (ENQUEUEMANY, events and counters on, as
a worker sends them); the counters zeroed; then on each queue one CLAIM of
all its jobs and one ACKMANY of them, pipelined; the counters dumped:
instructions of the whole server per job. Needs valgrind (Debian's package).
"""
import glob
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from acknext_cost import CLAIM_KEYS, pipelined  # noqa: E402
from resp import start_server  # noqa: E402

ACKMANY_KEYS = ["active", "done", "results", "events", "config", "counts"]
ENQUEUEMANY_KEYS = ["pending", "events", "config", "wake", "counts"]


def script(r, build, name):
    """The SHA of `build`'s script of transition `name`, loaded."""
    [path] = glob.glob(os.path.join(build, name + "-*.lua"))
    return r.call("SCRIPT", "LOAD", open(path).read())


def instructions(build, queues, per):
    """Instructions the server ran per job claimed and acked, with `build`'s scripts."""
    out = tempfile.mkdtemp()
    server, r = start_server(under=["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/callgrind.out.%p"],
                             wait=60)
    try:
        enqueue, claim, ackmany = (script(r, build, n) for n in ("enqueuemany", "claim", "ackmany"))
        names = [f"batch-{q}" for q in range(queues)]
        prefixes = ["emq:{%s}:" % name for name in names]
        ids = [f"JOB_{n:026d}" for n in range(per)]
        enqueues = []
        for p in prefixes:
            words = [w for i in ids for w in (i, "payload-of-fifty-three-bytes-like-the-benchmarks-one")]
            enqueues.append(["EVALSHA", enqueue, len(ENQUEUEMANY_KEYS), *[p + k for k in ENQUEUEMANY_KEYS], *words])
        pipelined(r, enqueues)
        subprocess.run(["callgrind_control", "-z", str(server.pid)], check=True, capture_output=True)
        for p in prefixes:
            claimed = r.call("EVALSHA", claim, len(CLAIM_KEYS), *[p + k for k in CLAIM_KEYS], 60000, "COUNT", per)
            assert len(claimed) == per, claimed
            acks = [w for job in claimed for w in (job[0], job[1])]
            replies = r.call("EVALSHA", ackmany, len(ACKMANY_KEYS), *[p + k for k in ACKMANY_KEYS], *acks)
            assert replies == [1] * per, replies
        subprocess.run(["callgrind_control", "-d", str(server.pid)], check=True, capture_output=True)
        for p in prefixes:
            assert r.call("ZCARD", p + "done") == per, "every job acked"
        dumps = sorted(glob.glob(f"{out}/callgrind.out.*"), key=os.path.getmtime)
        total = next(int(line.split()[1]) for line in open(dumps[-1]) if line.startswith(("summary:", "totals:")))
        return total / (queues * per)
    finally:
        server.terminate()
        server.wait()


def main():
    builds = sys.argv[1:3]
    queues = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    per = int(sys.argv[4]) if len(sys.argv) > 4 else 100
    counts = [instructions(build, queues, per) for build in builds]
    print(f"{queues} queues of {per} jobs, each a CLAIM of them all and an ACKMANY;"
          " instructions of the whole server per job (callgrind)")
    for build, count in zip(builds, counts):
        print(f"{build:<30} {count:10,.0f}")
    if len(counts) == 2:
        print(f"second/first: {counts[1] / counts[0]:.3f}x")


if __name__ == "__main__":
    main()
