"""Instructions per CLAIM on a queue with fair groups, counted by callgrind
(immune to the shared machine's noise, where groups_cost.py's microseconds
are not): the same three queues as groups_cost.py (no groups; its jobs
spread over many groups, one each; 999 groups at their cap of 1 and one
free, whose jobs the claims take), on Lua and native, one server each:

    cargo build --release -p echomq-module -p emq
    target/release/emq scripts --out /tmp/scripts
    python3 bench/groups_instructions.py target/release/libechomq_module.so /tmp/scripts [groups] [--count N]
    python3 bench/groups_instructions.py --at-most R <module> <scripts>

For each executor, a server under callgrind counting only inside the
function its commands run in (EVALSHA's, or the module's dispatcher); for
each queue, arranged (`groups` groups, 10,000 by default: a claim's cost
grows with the log of their number, and arranging 100,000 under callgrind
takes minutes), the instructions (the counters zeroed before, dumped
after) of CLAIMS claims of one job, each followed by the ACK of its job
sent by the other executor, which is not counted: per claim, and each
queue's ratio to the one without groups. Then the same with each ACK
sent by the same executor: a claim and its ack, the pair a worker at
concurrency 1 sends. With `--count N`, CLAIMS / N claims of COUNT N, each
job acked as above: a busy worker's batch (the figure per claim), where
a grouped claim's cost per job tells. With `--at-most R` (scripts/test's
check), Lua alone: exit 1 when a claim on 10,000 groups costs over R times
an ungrouped one. Needs valgrind (Debian's package).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from acknext_cost import pipelined, script_path  # noqa: E402
from acknext_instructions import under_callgrind  # noqa: E402
import groups_cost  # noqa: E402

CLAIMS = 200
SCENARIOS = ("ungrouped", "groups", "999-capped")


# The server's function each executor's commands run in: callgrind counts
# only inside it (--toggle-collect), so that the other executor's calls do not count.
COLLECTED = {"lua": "evalShaCommand", "native": "RedisModuleCommandDispatcher"}
OTHER = {"lua": "native", "native": "lua"}


def counts(module, build, groups, count=1, vias=("lua", "native"), scenarios=SCENARIOS):
    """{(scenario, via): (instructions per claim, per claim and its acks)}."""
    found = {}
    for via in vias:
        server, r, counted = under_callgrind("--loadmodule", module, collect=COLLECTED[via])
        try:
            sha = {name: r.call("SCRIPT", "LOAD", open(script_path(build, name)).read()).decode()
                   for name in ["claim", "ack"]}
            for scenario in scenarios:
                queue = f"{via}-{scenario}"
                r.call("FLUSHALL")
                arrange(r, queue, scenario, groups)
                batch = ["COUNT", count] if count > 1 else []
                claims = [groups_cost.claim(queue, via, sha) + batch for _ in range(CLAIMS // count)]
                # Each claim's jobs acked by the other executor, whose calls are not counted.
                alone = counted(lambda: ack_each(r, queue, OTHER[via], sha, claims, count))
                paired = counted(lambda: ack_each(r, queue, via, sha, claims, count))
                found[(scenario, via)] = (alone / len(claims), paired / len(claims))
        finally:
            server.terminate()
            server.wait()
    return found


def ack_each(r, queue, via, sha, claims, count=1):
    """Each claim, then the ACK of each job it took, sent `via` an executor."""
    for claim in claims:
        [reply] = pipelined(r, [claim])
        assert len(reply) == count, f"{queue}: the claim took {len(reply)} jobs, not {count}"
        pipelined(r, [groups_cost.ack(queue, via, sha, job[0].decode(), job[1]) for job in reply])


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


def budget(module, build, at_most):
    """scripts/test's check: a Lua CLAIM of one job on 10,000 groups, over an
    ungrouped one's, at most `at_most`; exit 1 when over."""
    found = counts(module, build, 10_000, vias=("lua",), scenarios=("ungrouped", "groups"))
    base, grouped = found[("ungrouped", "lua")][0], found[("groups", "lua")][0]
    ratio = grouped / base
    verdict = "within" if ratio <= at_most else "over"
    print(f"a Lua CLAIM of one job, instructions (callgrind): ungrouped {base:,.0f}, 10,000 groups {grouped:,.0f}: "
          f"{ratio:.3f}x, {verdict} its budget of {at_most}x")
    if ratio > at_most:
        sys.exit(1)


def main():
    args = sys.argv[1:]
    if args[:1] == ["--at-most"]:
        return budget(os.path.abspath(args[2]), args[3], float(args[1]))
    count = 1
    if "--count" in args:
        at = args.index("--count")
        count = int(args[at + 1])
        del args[at:at + 2]
    module, build = os.path.abspath(args[0]), args[1]
    groups = int(args[2]) if len(args) > 2 else 10_000
    found = counts(module, build, groups, count)
    print(f"instructions of the whole server per CLAIM COUNT {count} ({CLAIMS // count} claims; {groups:,} groups), "
          "callgrind")
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
