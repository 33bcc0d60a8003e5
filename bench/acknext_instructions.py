"""Instructions per Lua ACKNEXT, counted by callgrind, for builds of the
scripts one after another: immune to the shared machine's noise, where
acknext_cost.py's microseconds are not (the same binary and inputs give the
same count twice).

    emq scripts --out /tmp/before   # from the build before
    emq scripts --out /tmp/after    # from the build after
    python3 bench/acknext_instructions.py /tmp/before /tmp/after [jobs]

For each build: a redis-server under `valgrind --tool=callgrind`, the round
of acknext_cost.py (enqueue `jobs` jobs, claim the first), the counters
zeroed (`callgrind_control -z`), then `jobs - 1` ACKNEXTs, each to the next,
and the counters dumped: instructions of the whole server, per ACKNEXT.
Needs valgrind (Debian's package).
"""
import glob
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from acknext_cost import CLAIM_KEYS, NEXT_KEYS, pipelined  # noqa: E402
from resp import Redis, free_port  # noqa: E402


def instructions(build, jobs):
    """Instructions the server ran per ACKNEXT of `build`'s scripts."""
    out = tempfile.mkdtemp()
    port = free_port()
    server = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/callgrind.out.%p",
         "redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(400):
            try:
                r = Redis(f"redis://127.0.0.1:{port}")
                r.call("PING")
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise RuntimeError("redis-server under valgrind did not answer")
        load = lambda name: r.call("SCRIPT", "LOAD", open(os.path.join(build, name)).read())  # noqa: E731
        sha = {"enqueue": load("enqueue-11.lua"), "claim": load("claim-8.lua"), "acknext": load("acknext-11.lua")}
        p = "emq:{count}:"
        ids = ["JOB_%026d" % i for i in range(jobs)]
        pipelined(r, [["EVALSHA", sha["enqueue"], 2, p + "job:" + i, p + "pending", i, "payload"] for i in ids])
        r.call("EVALSHA", sha["claim"], len(CLAIM_KEYS), *[p + k for k in CLAIM_KEYS], 60000)
        subprocess.run(["callgrind_control", "-z", str(server.pid)], check=True, capture_output=True)
        pipelined(r, [
            ["EVALSHA", sha["acknext"], 1 + len(NEXT_KEYS), p + "job:" + ids[n], *[p + k for k in NEXT_KEYS],
             ids[n], 1, 60000, "COUNT", 1]
            for n in range(jobs - 1)
        ])
        assert r.call("ZCARD", p + "done") == jobs - 1, "every ACKNEXT acked its job"
        subprocess.run(["callgrind_control", "-d", str(server.pid)], check=True, capture_output=True)
        dumps = sorted(glob.glob(f"{out}/callgrind.out.*"), key=os.path.getmtime)
        total = next(int(line.split()[1]) for line in open(dumps[-1]) if line.startswith(("summary:", "totals:")))
        return total / (jobs - 1)
    finally:
        server.terminate()
        server.wait()


def main():
    builds = sys.argv[1:3]
    jobs = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    counts = [instructions(build, jobs) for build in builds]
    print(f"{jobs - 1} ACKNEXTs; instructions of the whole server per ACKNEXT (callgrind)")
    for build, count in zip(builds, counts):
        print(f"{build:<30} {count:10,.0f}")
    if len(counts) == 2:
        print(f"second/first: {counts[1] / counts[0]:.3f}x")


if __name__ == "__main__":
    main()
