"""Instructions per job of the Lua calls a busy worker makes (CLAIM with a
COUNT, then ACKMANY of the jobs it claimed), counted by callgrind for builds
of the scripts one after another: what queues-100 and process-c100 cost the
server a job, immune to the shared machine's noise.

    emq scripts --out /tmp/before   # from the build before
    emq scripts --out /tmp/after    # from the build after
    python3 bench/batch_instructions.py /tmp/before /tmp/after [queues] [jobs a queue]
    python3 bench/batch_instructions.py --module target/release/libechomq_module.so [queues] [jobs]

With `--module`, the same calls as the module's commands (EMQ.CLAIM…), for
builds of the module: `--module before.so --module after.so`.

For each build: a redis-server under `valgrind --tool=callgrind`; `queues`
queues of `jobs a queue` jobs each (ENQUEUEMANY, events and counters on, as
a worker sends them); the counters zeroed; then on each queue one CLAIM of
all its jobs and one ACKMANY of them, pipelined; the counters dumped:
instructions of the whole server per job. Needs valgrind (Debian's package).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from acknext_cost import CLAIM_KEYS, pipelined, script_path  # noqa: E402
from acknext_instructions import report, under_callgrind  # noqa: E402

ACKMANY_KEYS = ["active", "done", "results", "events", "config", "counts"]
ENQUEUEMANY_KEYS = ["pending", "events", "config", "wake", "counts"]


def caller(r, build, module, name):
    """The words that run transition `name` before its key count: EVALSHA
    of `build`'s script, loaded, or the module's command."""
    if module:
        return ["EMQ." + name.upper()]
    return ["EVALSHA", r.call("SCRIPT", "LOAD", open(script_path(build, name)).read())]


def instructions(build, queues, per):
    """Instructions the server ran per job claimed and acked, with `build`'s
    scripts (or `build`, a module, loaded)."""
    module = build.endswith(".so")
    server, r, counted = under_callgrind(*(["--loadmodule", os.path.abspath(build)] if module else []))
    try:
        enqueue, claim, ackmany = (caller(r, build, module, n) for n in ("enqueuemany", "claim", "ackmany"))
        names = [f"batch-{q}" for q in range(queues)]
        prefixes = ["emq:{%s}:" % name for name in names]
        ids = [f"JOB_{n:026d}" for n in range(per)]
        enqueues = []
        for p in prefixes:
            words = [w for i in ids for w in (i, "payload-of-fifty-three-bytes-like-the-benchmarks-one")]
            enqueues.append([*enqueue, len(ENQUEUEMANY_KEYS), *[p + k for k in ENQUEUEMANY_KEYS], *words])
        pipelined(r, enqueues)

        def work():
            for p in prefixes:
                claimed = r.call(*claim, len(CLAIM_KEYS), *[p + k for k in CLAIM_KEYS], 60000, "COUNT", per)
                assert len(claimed) == per, claimed
                acks = [w for job in claimed for w in (job[0], job[1])]
                replies = r.call(*ackmany, len(ACKMANY_KEYS), *[p + k for k in ACKMANY_KEYS], *acks)
                assert replies == [1] * per, replies

        total = counted(work)
        for p in prefixes:
            assert r.call("ZCARD", p + "done") == per, "every job acked"
        return total / (queues * per)
    finally:
        server.terminate()
        server.wait()


def main():
    args = sys.argv[1:]
    builds = []
    while args and not args[0].isdigit():
        word = args.pop(0)
        builds.append(args.pop(0) if word == "--module" else word)
    queues = int(args[0]) if args else 20
    per = int(args[1]) if len(args) > 1 else 100
    counts = [instructions(build, queues, per) for build in builds]
    print(f"{queues} queues of {per} jobs, each a CLAIM of them all and an ACKMANY;"
          " instructions of the whole server per job (callgrind)")
    report(builds, counts)


if __name__ == "__main__":
    main()
