"""What fair groups cost a claim (issue 50, PROTOCOL.md §7.9): Redis's own
server time per CLAIM (INFO commandstats) on a queue without groups, on one
whose pending jobs are spread over 100,000 groups (and, beside it, one as
deep without groups: what the depth alone costs), and on one with 1,000
groups of which 999 are at their cap (each running its one job, with more
waiting) and one free, whose jobs the claims take. Every claim takes one
job (COUNT 1, as a worker at concurrency 1 does) and is acked in the next
call, so that each claim finds the queue as the one before left it; only
CLAIM's time is counted. Lua (EVALSHA of the scripts `emq scripts` writes)
and native (EMQ.CLAIM) each get a queue of their own on one server, the
scenarios interleaved round by round, the median shown. Beside it, the
jobs/s of one client claiming and acking one job at a time (two round
trips a job, no INFO between them), the speed a worker at concurrency 1
sees:

    cargo build --release -p echomq-module -p emq
    target/release/emq scripts --out /tmp/scripts
    python3 bench/groups_cost.py target/release/libechomq_module.so /tmp/scripts

The machine is shared: read the ratios, not the microseconds.
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(__file__))
from acknext_cost import commandstats, pipelined, script_path  # noqa: E402
from resp import start_server  # noqa: E402

ROUNDS, CLAIMS = 5, 2000
CLAIM = ["pending", "active", "config", "rate", "policy", "events", "headers", "wake"]
ACK = ["active", "done", "results", "events", "config", "counts"]
GROUP = ["groups", "gnames", "ready", "gwait", "wake"]


def keys(queue, names, job=None):
    prefix = "emq:{%s}:" % queue
    return [prefix + ("job:" + job if name == "job" else name) for name in names]


def enqueue_many(r, queue, jobs, group=None):
    """`jobs` ids into `queue`, 1000 a call, in `group` when given (native)."""
    calls = []
    for at in range(0, len(jobs), 1000):
        words = ["EMQ.ENQUEUEMANY", 4, *keys(queue, ["pending", "events", "config", "wake"])]
        if group:
            words += ["GROUP", group]
        for job in jobs[at:at + 1000]:
            words += [job, "p"]
        calls.append(words)
    pipelined(r, calls)


def arrange(r, queue, scenario):
    """The queue of `scenario`, with CLAIMS + 1 jobs for the claims to take."""
    r.call("DEL", *keys(queue, ["pending"]))
    ids = ["JOB_%s_%08d" % (scenario, i) for i in range(CLAIMS + 1)]
    if scenario == "ungrouped":
        enqueue_many(r, queue, ids)
    elif scenario == "100k-deep":
        # As deep as the 100,000 groups' queue, without groups: what depth alone costs.
        enqueue_many(r, queue, ["JOB_u%06d" % i for i in range(100_000)])
    elif scenario == "100k-groups":
        # 100,000 groups with one job each, then the claims' jobs over them.
        calls = []
        for g in range(100_000):
            job = "JOB_g%06d" % g
            calls.append(["EMQ.ENQUEUE", 11, *keys(queue, ["job", "pending", "delayed", "priority", "policy",
                          "unique", "unique_until", "events", "config", "headers", "wake"], job),
                          job, "p", "GROUP", "t%06d" % g])
            if len(calls) == 2000:
                pipelined(r, calls)
                calls = []
        pipelined(r, calls)
    elif scenario == "999-capped":
        for g in range(999):
            group = "c%03d" % g
            r.call("EMQ.GROUP", 5, *keys(queue, GROUP), group, "CAP", 1)
            enqueue_many(r, queue, ["JOB_c%03d_%d" % (g, i) for i in range(3)], group)
        # Each capped group's first job runs and holds its cap.
        pipelined(r, [["EMQ.CLAIM", 8, *keys(queue, CLAIM), 3600000, "COUNT", 1000]])
        enqueue_many(r, queue, ids, "free")


def claim(queue, via, sha):
    if via == "lua":
        return ["EVALSHA", sha["claim"], 8, *keys(queue, CLAIM), 60000]
    return ["EMQ.CLAIM", 8, *keys(queue, CLAIM), 60000]


def ack(queue, via, sha, job, token):
    if via == "lua":
        return ["EVALSHA", sha["ack"], 7, *keys(queue, ["job", *ACK], job), job, token]
    return ["EMQ.ACK", 7, *keys(queue, ["job", *ACK], job), job, token]


def main():
    module, build = os.path.abspath(sys.argv[1]), sys.argv[2]
    server, r = start_server("--loadmodule", module, wait=30)
    try:
        sha = {name: r.call("SCRIPT", "LOAD", open(script_path(build, name)).read()).decode()
               for name in ["claim", "ack"]}
        scenarios = ["ungrouped", "100k-deep", "100k-groups", "999-capped"]
        results, rates = {}, {}
        for _ in range(ROUNDS):
            for scenario in scenarios:
                for via in ["lua", "native"]:
                    queue = f"{via}-{scenario}"
                    r.call("FLUSHALL")
                    arrange(r, queue, scenario)
                    per = time_claims(r, queue, via, sha)
                    results.setdefault((scenario, via), []).append(per)
                    r.call("FLUSHALL")
                    arrange(r, queue, scenario)
                    rates.setdefault((scenario, via), []).append(jobs_per_second(r, queue, via, sha))
        print(f"server µs per CLAIM (median of {ROUNDS} rounds of {CLAIMS} claims, each acked)")
        print(f"{'queue':<14} {'lua':>8} {'ratio':>7} {'native':>8} {'ratio':>7}   jobs/s lua, native")
        base = {via: statistics.median(results[("ungrouped", via)]) for via in ["lua", "native"]}
        for scenario in scenarios:
            row = f"{scenario:<14}"
            for via in ["lua", "native"]:
                median = statistics.median(results[(scenario, via)])
                row += f" {median:>8.2f} {median / base[via]:>6.2f}×"
            speeds = [statistics.median(rates[(scenario, via)]) for via in ["lua", "native"]]
            row += "   " + ", ".join(f"{speed:,.0f}" for speed in speeds)
            print(row)
    finally:
        try:
            r.call("SHUTDOWN", "NOSAVE")
        except (OSError, RuntimeError):
            pass
        server.wait()


def jobs_per_second(r, queue, via, sha):
    """CLAIMS jobs claimed and acked one at a time, each call its own round trip: jobs/s."""
    import time
    began = time.perf_counter()
    for _ in range(CLAIMS):
        [reply] = pipelined(r, [claim(queue, via, sha)])
        job = reply[0]
        pipelined(r, [ack(queue, via, sha, job[0].decode(), job[1])])
    return CLAIMS / (time.perf_counter() - began)


def time_claims(r, queue, via, sha):
    """Server µs per claim: the claims' commandstats, the acks' taken out."""
    r.call("CONFIG", "RESETSTAT")
    stat = "evalsha" if via == "lua" else "emq.claim"
    held = None
    claim_usec = 0.0
    for _ in range(CLAIMS):
        if held:
            pipelined(r, [ack(queue, via, sha, *held)])
        before = commandstats(r).get(stat, (0, 0.0))
        [reply] = pipelined(r, [claim(queue, via, sha)])
        after = commandstats(r).get(stat, (0, 0.0))
        claim_usec += after[1] - before[1]
        job = reply[0]
        held = (job[0].decode(), job[1])
    return claim_usec / CLAIMS


if __name__ == "__main__":
    main()
