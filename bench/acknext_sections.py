"""Where a Lua ACKNEXT's server time goes, section by section: the script cut
short at each of a few lines (`do return 1 end` there), each cut run on an
active job that stays active (nothing before the cut writes), with the
counts key a worker sends, against a bare `return 1` over the same keys and
arguments (Redis's own part of an EVALSHA):

    emq scripts --out /tmp/scripts
    python3 bench/acknext_sections.py /tmp/scripts                 # server µs per call, median of 7 rounds
    python3 bench/acknext_sections.py /tmp/scripts --instructions  # instructions per call (callgrind)

Microseconds come from INFO commandstats, 5,000 calls a round; instructions
from a redis-server under `valgrind --tool=callgrind` (Debian's valgrind),
300 calls a cut, and are the same run after run where the shared machine's
microseconds are not. Each line is the script up to that cut and, after
`+`, what the section before it adds. The whole call (the ack's and the
claim's writes after the last cut) is bench/acknext_instructions.py's and
acknext_cost.py's.
"""
import glob
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from acknext_cost import NEXT_KEYS, commandstats, pipelined, script_path  # noqa: E402
from resp import start_server  # noqa: E402

# Each section, named by what it ends with, and the script's line it ends
# before: a line the script must hold once (an edited script names the
# line it lost).
CUTS = [
    ("includes (their functions made)", "--@keys ACKNEXT's KEYS by role"),
    ("the KEYS prologue", "local id, token, err = fenced_call(key_names, key_forms)"),
    ("fenced_call: keys, id, token", "local prefix = string.sub(active_key, 1, #active_key - #'active')"),
    ("options", "err = ack_keys_error(job_key, active_key, done_key, results_key, token)"),
    ("the record, the fence, types", "head, err = pending_head(pending_key, count or 1, prefix)"),
    ("pending's head", "-- The records the claim may take, read and checked once, here, before the"),
    ("the claimed records read", "local keep"),
    ("events_keep", "err = counts_open(counts_key, {'completed'})"),
    ("counts_open", "local link"),
    ("one_link (the flows' keys)", "finish_job(job_key, active_key, done_key, results_key, events_key, id, result, keep)"),
]
ROUNDS, CALLS, TRACED_CALLS = 7, 5000, 300


def scripts(path):
    """The bare script, then the ACKNEXT of `path` cut at each of CUTS."""
    acknext = script_path(path, "acknext")
    src = open(acknext).read().split("\n")
    cut = []
    for name, line in CUTS:
        starts = [i for i, text in enumerate(src) if text.startswith(line)]
        if len(starts) != 1:
            sys.exit(f"{acknext}: the line a cut ends before is there {len(starts)} times, not once: {line}")
        cut.append((name, "\n".join(src[:starts[0]] + ["do return 1 end"] + src[starts[0]:])))
    return [("bare EVALSHA (return 1)", "return 1"), *cut]


def arrange(r):
    """An active job that stays active, a pending one behind it; the call."""
    p = "emq:{bis}:"
    r.call("HSET", p + "job:JOB_0", "state", "active", "attempts", 1, "payload", "p")
    r.call("ZADD", p + "active", 9999999999999, "JOB_0")
    r.call("HSET", p + "job:JOB_1", "state", "pending", "attempts", 0, "payload", "p")
    r.call("ZADD", p + "pending", 0, "JOB_1")
    keys = [p + "job:JOB_0", *[p + k for k in [*NEXT_KEYS, "counts", "parents", "notices"]]]
    return lambda sha: ["EVALSHA", sha, len(keys), *keys, "JOB_0", 1, 60000, "COUNT", 1]


def microseconds(cuts):
    server, r = start_server()
    try:
        call = arrange(r)
        shas = [(name, r.call("SCRIPT", "LOAD", text)) for name, text in cuts]
        rounds = {name: [] for name, _ in cuts}
        for _ in range(ROUNDS):
            for name, sha in shas:
                r.call("CONFIG", "RESETSTAT")
                pipelined(r, [call(sha)] * CALLS)
                calls, usec = commandstats(r)["evalsha"]
                rounds[name].append(usec / calls)
        return {name: statistics.median(values) for name, values in rounds.items()}
    finally:
        server.terminate()


def instructions(cuts):
    out = tempfile.mkdtemp()
    server, r = start_server(under=["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/callgrind.out.%p"],
                             wait=60)

    def control(flag):
        subprocess.run(["callgrind_control", flag, str(server.pid)], check=True, capture_output=True)

    try:
        call = arrange(r)
        figures = {}
        for name, text in cuts:
            sha = r.call("SCRIPT", "LOAD", text)
            pipelined(r, [call(sha)] * 5)
            control("-z")
            pipelined(r, [call(sha)] * TRACED_CALLS)
            control("-d")
            dump = sorted(glob.glob(f"{out}/callgrind.out.*"), key=os.path.getmtime)[-1]
            total = next(int(line.split()[1]) for line in open(dump) if line.startswith(("summary:", "totals:")))
            figures[name] = total / TRACED_CALLS
        return figures
    finally:
        server.terminate()


def main():
    counted = "--instructions" in sys.argv[2:]
    cuts = scripts(sys.argv[1])
    figures = instructions(cuts) if counted else microseconds(cuts)
    unit, form = ("instructions", "{:11,.0f}") if counted else ("µs", "{:8.2f}")
    print(f"server {unit} per call, up to the end of each section (+ what it adds)")
    before = 0
    for name, _ in cuts:
        value = figures[name]
        print(f"{name:<34} {form.format(value)}  + {form.format(value - before).strip()}")
        before = value


if __name__ == "__main__":
    main()
