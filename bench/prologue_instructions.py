"""Instructions per call of each script's definitions alone, counted by
callgrind: what a transition pays before its first step, since every
EVALSHA runs its script whole and so makes every top-level closure (and
every upvalue they capture) anew (issue 53).

    emq scripts --out /tmp/before   # from the build before
    emq scripts --out /tmp/after    # from the build after
    python3 bench/prologue_instructions.py /tmp/before /tmp/after [transition ...|all]

For each transition (the hot ones by default): its expanded script cut
before its KEYS prologue (`--@keys`, after its includes), with the
functions it defines right after that prologue and `return 1` appended,
loaded alone into a fresh Lua state (SCRIPT FLUSH makes one) of a
redis-server under callgrind counting only inside evalShaCommand, and
EVALSHA'd CALLS times; per call, less a bare `return 1`'s count. Needs
valgrind (Debian's package).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from acknext_cost import pipelined, script_path  # noqa: E402
from acknext_instructions import under_callgrind  # noqa: E402

CALLS = 1000
HOT = ["acknext", "claim", "ack", "ackmany", "fail", "enqueue"]


def definitions(path):
    """The script at `path` up to its KEYS prologue, the functions it
    defines right after that prologue, then `return 1`."""
    lines = open(path).read().split("\n")
    cut = next(at for at, line in enumerate(lines) if line.startswith("--@keys"))
    kept = lines[:cut]
    at = next(at for at, line in enumerate(lines) if line.startswith("--@keys end")) + 1
    while at < len(lines):
        if lines[at].startswith("local function "):
            end = lines.index("end", at)
            kept += lines[at:end + 1]
            at = end + 1
        elif lines[at] == "" or lines[at].startswith("--"):
            at += 1
        else:
            break
    return "\n".join(kept) + "\nreturn 1\n"


def measure(builds, names):
    """A bare script's count, and {(build, name): count per call less it}."""
    server, r, counted = under_callgrind(collect="evalShaCommand")
    try:
        def per_call(text):
            # A fresh Lua state for each (SCRIPT FLUSH makes one): the
            # garbage collector's pace depends on what else it holds.
            r.call("SCRIPT", "FLUSH")
            sha = r.call("SCRIPT", "LOAD", text).decode()
            pipelined(r, [["EVALSHA", sha, 0]] * 50)
            return counted(lambda: pipelined(r, [["EVALSHA", sha, 0]] * CALLS)) / CALLS
        bare = per_call("return 1\n")
        return bare, {(build, name): per_call(definitions(script_path(build, name))) - bare
                      for build in builds for name in names}
    finally:
        server.terminate()
        server.wait()


def main():
    builds = [arg for arg in sys.argv[1:] if os.path.isdir(arg)]
    names = [arg for arg in sys.argv[1:] if not os.path.isdir(arg)] or HOT
    if names == ["all"]:
        names = sorted(file[:-len(".lua")] for file in os.listdir(builds[0]) if file.endswith(".lua"))
    bare, counts = measure(builds, names)
    print(f"instructions per call of the definitions alone (callgrind, inside evalShaCommand, "
          f"{CALLS} calls; a bare `return 1`'s {bare:,.0f} taken off)")
    print(f"{'transition':<12}" + "".join(f"{os.path.basename(b.rstrip('/')):>16}" for b in builds)
          + ("  second/first" if len(builds) == 2 else ""))
    for name in names:
        row = [counts[(build, name)] for build in builds]
        ratio = f"{row[1] / row[0]:>13.3f}x" if len(row) == 2 else ""
        print(f"{name:<12}" + "".join(f"{count:>16,.0f}" for count in row) + ratio)


if __name__ == "__main__":
    main()
