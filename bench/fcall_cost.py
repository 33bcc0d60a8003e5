"""What Redis Functions would save a Lua ACKNEXT: the server's µs per call
as EVALSHA of the expanded script, against FCALL of the same code loaded
once as a function library (FUNCTION LOAD), whose ~32 local functions are
then made once, not on every call. Rounds interleaved on one redis-server,
read from INFO commandstats:

    emq scripts --out /tmp/scripts
    python3 bench/fcall_cost.py /tmp/scripts crates/echomq/lua [jobs] [rounds]

A measurement, not a transport: the library is made here by wrapping
ACKNEXT's own lines (those after its includes) in a function, with KEYS and
ARGV as the library's locals, set on every call, and the includes' per-call
state (the clock, the types seen, the settings read) reset.
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(__file__))
from resp import start_server  # noqa: E402
from acknext_cost import pipelined, commandstats, load, arrange, script_path, NEXT_KEYS  # noqa: E402


def library(expanded, source):
    """`expanded` (the loadable ACKNEXT) as a function library: its includes
    at the library's top, its own lines (`source`'s after its last include)
    as the registered function `acknext`."""
    main = []
    for line in reversed(source.splitlines()):
        if line.startswith("--@include"):
            break
        main.append(line)
    main = "\n".join(reversed(main)).strip("\n")
    at = expanded.rindex(main)
    includes = expanded[:at]
    body = "\n".join("  " + line for line in main.splitlines())
    return (
        "#!lua name=emqproto\n"
        "local KEYS, ARGV\n"
        + includes
        + "\nlocal function main()\n" + body + "\nend\n"
        "redis.register_function('acknext', function(keys, args)\n"
        "  KEYS, ARGV = keys, args\n"
        "  clock_ms, typed, settings_key, settings_read = nil, {}, nil, nil\n"
        "  return main()\n"
        "end)\n"
    )


def main():
    scripts, sources = sys.argv[1:3]
    jobs = int(sys.argv[3]) if len(sys.argv) > 3 else 5000
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 9
    expanded = open(script_path(scripts, "acknext")).read()
    source = open(script_path(sources, "acknext")).read()
    lib = library(expanded, source)
    server, r = start_server()
    try:
        r.call("FUNCTION", "LOAD", "REPLACE", lib)
        sha = load(r, scripts)
        per = {"evalsha": [], "fcall": []}
        for n in range(rounds):
            for way in (["evalsha", "fcall"] if n % 2 == 0 else ["fcall", "evalsha"]):
                q = f"proto-{way}-{n}"
                calls = arrange(r, sha, q, jobs)
                if way == "fcall":
                    calls = [["FCALL", "acknext", *c[2:]] for c in calls]
                r.call("CONFIG", "RESETSTAT")
                pipelined(r, calls)
                stats = commandstats(r)
                count, usec = stats[way]
                assert count == jobs - 1, stats
                assert r.call("ZCARD", "emq:{%s}:done" % q) == jobs - 1, "every ACKNEXT acked"
                per[way].append(usec / count)
                r.call("FLUSHALL")
        for way, v in per.items():
            print(f"{way:<8} median {statistics.median(v):7.2f} µs  min {min(v):7.2f}  max {max(v):7.2f}")
        a, b = statistics.median(per["evalsha"]), statistics.median(per["fcall"])
        print(f"fcall/evalsha: {b / a:.3f}x  ({jobs - 1} ACKNEXTs a round, {rounds} rounds)")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
