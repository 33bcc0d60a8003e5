"""Instructions per CLAIM on a queue with fair groups, counted by callgrind
(immune to the shared machine's noise, where groups_cost.py's microseconds
are not): the same three queues as groups_cost.py (no groups; its jobs
spread over many groups, one each; 999 groups at their cap of 1 and one
free, whose jobs the claims take), on Lua and native, one server each:

    cargo build --release -p echomq-module -p emq
    target/release/emq scripts --out /tmp/scripts
    python3 bench/groups_instructions.py target/release/libechomq_module.so /tmp/scripts [groups]

For each: the queue arranged (`groups` groups, 10,000 by default: a claim's
cost grows with the log of their number, and arranging 100,000 under
callgrind takes minutes), then instructions of the whole server counted
(the counters zeroed before, dumped after) for CLAIMS claims of one job,
each followed by the ACK of its job (the pair a worker at concurrency 1
sends), and for the ACKs alone of as many jobs, claimed uncounted: per
claim, the pairs' count less the acks', and each queue's ratio to the one
without groups. Needs valgrind (Debian's package).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from acknext_cost import pipelined, script_path  # noqa: E402
from acknext_instructions import under_callgrind  # noqa: E402
import groups_cost  # noqa: E402

CLAIMS = 100


def counts(module, build, groups):
    """{(scenario, via): (instructions per claim, per claim and its ack)}."""
    server, r, counted = under_callgrind("--loadmodule", module)
    found = {}
    try:
        sha = {name: r.call("SCRIPT", "LOAD", open(script_path(build, name)).read()).decode()
               for name in ["claim", "ack"]}
        for scenario in ["ungrouped", "groups", "999-capped"]:
            for via in ["lua", "native"]:
                queue = f"{via}-{scenario}"
                r.call("FLUSHALL")
                arrange(r, queue, scenario, groups)
                claims = [groups_cost.claim(queue, via, sha) for _ in range(CLAIMS)]
                paired = counted(lambda: ack_each(r, queue, via, sha, claims))
                # The acks alone, of as many jobs claimed uncounted.
                held = [reply[0] for reply in pipelined(r, claims)]
                acks = [groups_cost.ack(queue, via, sha, job[0].decode(), job[1]) for job in held]
                alone = counted(lambda: pipelined(r, acks))
                found[(scenario, via)] = ((paired - alone) / CLAIMS, paired / CLAIMS)
    finally:
        server.terminate()
        server.wait()
    return found


def ack_each(r, queue, via, sha, claims):
    """Each claim, then the ACK of the job it took."""
    for claim in claims:
        [reply] = pipelined(r, [claim])
        job = reply[0]
        pipelined(r, [groups_cost.ack(queue, via, sha, job[0].decode(), job[1])])


def arrange(r, queue, scenario, groups):
    """As groups_cost.arrange, `groups` groups in place of 100,000."""
    if scenario != "groups":
        return groups_cost.arrange(r, queue, scenario)
    calls = []
    for g in range(groups):
        job = "JOB_g%06d" % g
        calls.append(["EMQ.ENQUEUE", 11, *groups_cost.keys(queue, [
            "job", "pending", "delayed", "priority", "policy", "unique", "unique_until", "events", "config",
            "headers", "wake"], job), job, "p", "GROUP", "t%06d" % g])
        if len(calls) == 1000:
            pipelined(r, calls)
            calls = []
    pipelined(r, calls)


def main():
    module, build = os.path.abspath(sys.argv[1]), sys.argv[2]
    groups = int(sys.argv[3]) if len(sys.argv) > 3 else 10_000
    found = counts(module, build, groups)
    print(f"instructions of the whole server per CLAIM ({CLAIMS} claims; {groups:,} groups), callgrind")
    print(f"{'queue':<12} {'lua':>9} {'ratio':>7} {'native':>9} {'ratio':>7}   claim+ack: lua, native")
    for scenario in ["ungrouped", "groups", "999-capped"]:
        row = f"{scenario:<12}"
        for via in ["lua", "native"]:
            count, base = found[(scenario, via)][0], found[("ungrouped", via)][0]
            row += f" {count:>9,.0f} {count / base:>6.2f}×"
        row += "   " + ", ".join(
            f"{found[(scenario, via)][1]:,.0f} ({found[(scenario, via)][1] / found[('ungrouped', via)][1]:.2f}×)"
            for via in ["lua", "native"])
        print(row)


if __name__ == "__main__":
    main()
