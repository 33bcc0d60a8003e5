"""Instructions per Lua ACKNEXT, counted by callgrind, for builds of the
scripts one after another: immune to the shared machine's noise, where
acknext_cost.py's microseconds are not (the same binary and inputs give the
same count twice).

    emq scripts --out /tmp/before   # from the build before
    emq scripts --out /tmp/after    # from the build after
    python3 bench/acknext_instructions.py /tmp/before /tmp/after [jobs]
    python3 bench/acknext_instructions.py --at-most N /tmp/scripts [jobs]

For each build: a redis-server under `valgrind --tool=callgrind`, the round
of acknext_cost.py (enqueue `jobs` jobs, claim the first), the counters
zeroed (`callgrind_control -z`), then `jobs - 1` ACKNEXTs, each to the next,
and the counters dumped: instructions of the whole server, per ACKNEXT.
Needs valgrind (Debian's package).

With `--at-most N`, one build, and exit 1 when its ACKNEXT runs more than
N instructions: scripts/test's budget, so that what issue 53 takes out of
a Lua job's server time does not creep back one check at a time. Run
after run the count moves by about 0.5% (the collector's timing); a
budget wants a few per cent above the count it was set at.
"""
import glob
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from acknext_cost import arrange, load, pipelined  # noqa: E402
from resp import start_server  # noqa: E402


def under_callgrind(*args, collect=None):
    """A redis-server (with `args`) under callgrind, its client, and
    `counted(work)`: the instructions the server ran while `work()` did,
    the counters zeroed before it and dumped after; with `collect`, only
    those inside that function of the server's."""
    out = tempfile.mkdtemp()
    toggle = [f"--toggle-collect={collect}"] if collect else []
    server, r = start_server(*args, under=["valgrind", "--tool=callgrind", *toggle,
                                           f"--callgrind-out-file={out}/callgrind.out.%p"], wait=60)

    def counted(work):
        subprocess.run(["callgrind_control", "-z", str(server.pid)], check=True, capture_output=True)
        work()
        subprocess.run(["callgrind_control", "-d", str(server.pid)], check=True, capture_output=True)
        dumps = sorted(glob.glob(f"{out}/callgrind.out.*"), key=os.path.getmtime)
        return next(int(line.split()[1]) for line in open(dumps[-1]) if line.startswith(("summary:", "totals:")))

    return server, r, counted


def report(builds, counts):
    """Each build's count, and the second's ratio to the first."""
    for build, count in zip(builds, counts):
        print(f"{build:<30} {count:10,.0f}")
    if len(counts) == 2:
        print(f"second/first: {counts[1] / counts[0]:.3f}x")


def instructions(build, jobs):
    """Instructions the server ran per ACKNEXT of `build`'s scripts."""
    server, r, counted = under_callgrind()
    try:
        acknexts = arrange(r, load(r, build), "count", jobs)
        total = counted(lambda: pipelined(r, acknexts))
        assert r.call("ZCARD", "emq:{count}:done") == jobs - 1, "every ACKNEXT acked its job"
        return total / (jobs - 1)
    finally:
        server.terminate()
        server.wait()


def main():
    args = sys.argv[1:]
    if args[:1] == ["--at-most"]:
        budget, build, *rest = args[1:]
        jobs = int(rest[0]) if rest else 200
        count = instructions(build, jobs)
        verdict = "within" if count <= int(budget) else "over"
        print(f"a Lua ACKNEXT ran {count:,.0f} instructions of the server ({jobs - 1} calls, callgrind): "
              f"{verdict} its budget of {int(budget):,}")
        sys.exit(0 if count <= int(budget) else 1)
    builds = args[0:2]
    jobs = int(args[2]) if len(args) > 2 else 2000
    counts = [instructions(build, jobs) for build in builds]
    print(f"{jobs - 1} ACKNEXTs; instructions of the whole server per ACKNEXT (callgrind)")
    report(builds, counts)


if __name__ == "__main__":
    main()
