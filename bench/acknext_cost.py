"""The server's µs per Lua ACKNEXT (the call a worker at concurrency 1 makes
for every job), for two builds of the scripts side by side on one
redis-server, rounds interleaved; also the calls each makes into Redis.
Read from INFO commandstats, so the client's speed does not count:

    emq scripts --out /tmp/before   # from the build before
    emq scripts --out /tmp/after    # from the build after
    python3 bench/acknext_cost.py /tmp/before /tmp/after [jobs] [rounds]

Each round enqueues `jobs` jobs (ENQUEUE's two-key form), claims the first
and then ACKNEXTs each to the next, pipelined. The machine is shared and
noisy: quote the medians, and the spread.
"""
import glob
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(__file__))
from resp import start_server  # noqa: E402

NEXT_KEYS = ["active", "done", "results", "events", "config", "pending", "rate", "policy", "headers", "wake"]
CLAIM_KEYS = ["pending", "active", "config", "rate", "policy", "events", "headers", "wake"]


def pipelined(r, calls):
    """Send `calls` (lists of words) in one write; every reply, the errors as errors."""
    out = []
    for words in calls:
        out.append(b"*%d\r\n" % len(words))
        for word in words:
            word = word if isinstance(word, bytes) else str(word).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(word), word))
    r.sock.sendall(b"".join(out))
    return [r.read() for _ in calls]


def commandstats(r):
    """{command: (calls, usec)} from INFO commandstats."""
    stats = {}
    for line in r.call("INFO", "commandstats").decode().splitlines():
        if line.startswith("cmdstat_"):
            name, fields = line[len("cmdstat_"):].split(":", 1)
            values = dict(field.split("=") for field in fields.split(","))
            stats[name] = (int(values["calls"]), float(values["usec"]))
    return stats


def script_path(build, name):
    """Transition `name`'s script in `build`: `<name>.lua`, or, from a build
    before scripts were named by their transition alone, `<name>-<keys>.lua`."""
    [path] = [path for path in glob.glob(os.path.join(build, name + "*.lua"))
              if re.fullmatch(re.escape(name) + r"(-\d+)?\.lua", os.path.basename(path))]
    return path


def key_count(build, name):
    """How many keys transition `name` takes in `build`, from the
    manifest.json `emq scripts` writes beside the scripts."""
    manifest = json.load(open(os.path.join(build, "manifest.json")))
    [keys] = [script["keys"] for script in manifest["scripts"] if script["transition"] == name]
    return keys


def load(r, build):
    """The SHAs of `build`'s ENQUEUE, CLAIM and ACKNEXT scripts, loaded."""
    def one(name):
        return r.call("SCRIPT", "LOAD", open(script_path(build, name)).read())
    # From protocol 1.4 ACKNEXT takes the counts key last, as a worker sends it.
    counted = key_count(build, "acknext") > 11
    return {"enqueue": one("enqueue"), "claim": one("claim"), "acknext": one("acknext"), "counted": counted}


def arrange(r, sha, queue, jobs):
    """`jobs` jobs enqueued on `queue` (ENQUEUE's two-key form) and the first
    claimed; the `jobs - 1` ACKNEXTs that ack each and claim the next."""
    p = "emq:{%s}:" % queue
    ids = ["JOB_%026d" % i for i in range(jobs)]
    pipelined(r, [["EVALSHA", sha["enqueue"], 2, p + "job:" + i, p + "pending", i, "payload"] for i in ids])
    r.call("EVALSHA", sha["claim"], len(CLAIM_KEYS), *[p + k for k in CLAIM_KEYS], 60000)
    keys = NEXT_KEYS + (["counts"] if sha["counted"] else [])
    return [
        ["EVALSHA", sha["acknext"], 1 + len(keys), p + "job:" + ids[n], *[p + k for k in keys],
         ids[n], 1, 60000, "COUNT", 1]
        for n in range(jobs - 1)
    ]


def one_round(r, sha, queue, jobs):
    """µs per ACKNEXT and calls into Redis per ACKNEXT, for `jobs` jobs on `queue`."""
    p = "emq:{%s}:" % queue
    acknexts = arrange(r, sha, queue, jobs)
    r.call("CONFIG", "RESETSTAT")
    pipelined(r, acknexts)
    stats = commandstats(r)
    calls, usec = stats["evalsha"]
    assert calls == jobs - 1, stats["evalsha"]
    assert r.call("ZCARD", p + "done") == jobs - 1, "every ACKNEXT acked its job"
    inside = sum(n for name, (n, _) in stats.items() if name not in ("evalsha", "config|resetstat"))
    r.call("FLUSHALL")
    return usec / calls, inside / calls


def main():
    builds = sys.argv[1:3]
    jobs = int(sys.argv[3]) if len(sys.argv) > 3 else 5000
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 11
    server, r = start_server()
    try:
        shas = [load(r, build) for build in builds]
        per_call = {build: [] for build in builds}
        inside = {}
        for n in range(rounds):
            order = [0, 1] if n % 2 == 0 else [1, 0]
            for i in order:
                us, calls = one_round(r, shas[i], f"cost-{i}-{n}", jobs)
                per_call[builds[i]].append(us)
                inside[builds[i]] = calls
        print(f"{jobs - 1} ACKNEXTs a round, {rounds} rounds interleaved; server µs per ACKNEXT")
        for build in builds:
            v = per_call[build]
            print(f"{build:<30} median {statistics.median(v):7.2f}  min {min(v):7.2f}  max {max(v):7.2f}"
                  f"  calls into Redis each: {inside[build]:.1f}")
        a, b = (statistics.median(per_call[build]) for build in builds)
        print(f"second/first: {b / a:.2f}x")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
