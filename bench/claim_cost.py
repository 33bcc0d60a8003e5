"""CLAIM's cost on the native module by the queue's settings, counted in
instructions with callgrind (not wall-clock: exact on a shared machine).

For each scenario (no settings, a concurrency limit, a rate; neither ever
reached) it starts a redis-server under callgrind with the module, enqueues
N jobs and claims them one at a time, then prints the inclusive instructions
per claim of `Claim::apply` and of the gate, from callgrind_annotate:

    cargo build --release -p echomq-module
    python3 bench/claim_cost.py target/release/libechomq_module.so

Needs valgrind. Each scenario takes about a minute.
"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from resp import start_server  # noqa: E402

N = 2000
SCENARIOS = {
    "none": [],
    "concurrency": ["CONCURRENCY", 1000000],
    "rate": ["RATE", 100000, "PER", 3600000],
}


# Every key of the calls, after the queue's prefix (PROTOCOL.md §7).
CONFIG = ["config", "pending", "priority", "rate", "events", "wake"]
CLAIM = ["pending", "active", "config", "rate", "policy", "events", "headers", "wake"]


def run(module, settings, out):
    # A profile to `out`.
    server, r = start_server("--loadmodule", module, under=["valgrind", "--tool=callgrind",
                                                             f"--callgrind-out-file={out}"], wait=60)
    k = lambda name: "emq:{q}:" + name  # noqa: E731
    if settings:
        r.call("EMQ.CONFIG", 6, *map(k, CONFIG), *settings)
    for i in range(N):
        job = "JOB_%026d" % i
        r.call("EMQ.ENQUEUE", 2, k("job:" + job), k("pending"), job, "payload")
    for _ in range(N):
        r.call("EMQ.CLAIM", len(CLAIM), *map(k, CLAIM), 60000)
    try:
        r.call("SHUTDOWN", "NOSAVE")
    except (OSError, RuntimeError):
        pass
    server.wait()


def inclusive(out, function):
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", out], capture_output=True, text=True).stdout
    for line in text.splitlines():
        if function in line and "[" in line:
            return int(re.match(r"\s*([\d,]+)", line).group(1).replace(",", ""))
    return 0


def main():
    module = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'settings':<12} {'Claim::apply':>14} {'gate':>8}  (instructions per claim, {N} claims)")
        for name, settings in SCENARIOS.items():
            out = os.path.join(tmp, f"{name}.out")
            run(module, settings, out)
            apply = inclusive(out, "lease::Claim::apply") / N
            gate = inclusive(out, "control::gate") / N
            print(f"{name:<12} {apply:>14,.0f} {gate:>8,.0f}")


if __name__ == "__main__":
    main()
