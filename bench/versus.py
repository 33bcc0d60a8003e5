"""Two builds of EchoMQ side by side, to tell whether a change made it faster:
each build's `echomq-compare` on a redis-server of its own (with its own
module), the two interleaved in every round (their order alternating), one
warm-up round thrown away, the median of ROUNDS printed with the ratio.

Usage: python3 bench/versus.py BEFORE_TARGET AFTER_TARGET [WORKLOAD[:via,...] ...]
  BEFORE_TARGET, AFTER_TARGET: cargo target directories holding
  release/echomq-compare and release/libechomq_module.so (build the older
  commit in a worktree with CARGO_TARGET_DIR=...).
  A workload is one of echomq-compare's; its executors default to
  lua,native,embedded. Settings: JOBS (20000), ROUNDS (5), and quiet.py's.

A benchmark, not a test: it prints figures and asserts nothing."""
import json
import os
import subprocess
import sys

from quiet import quiet
from resp import start_server

JOBS, ROUNDS = int(os.environ.get("JOBS", "20000")), int(os.environ.get("ROUNDS", "5"))


def start(module):
    """A redis-server of its own with `module` loaded: the process and its port."""
    server, client = start_server("--loadmodule", module)
    return server, client.port


def measure(target, port, via, workload):
    binary = os.path.join(target, "release", "echomq-compare")
    done = subprocess.run([binary, "--url", f"redis://127.0.0.1:{port}/", "--via", via,
                           "--workload", workload, "--jobs", str(JOBS)], capture_output=True, text=True)
    subprocess.run(["redis-cli", "-p", str(port), "FLUSHALL"], capture_output=True)
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not rows:
        sys.exit(f"{binary} {via} {workload} failed:\n{done.stderr[:3000]}")
    return rows[0]["value"], rows[0].get("unit", "")


def main():
    before, after, *asked = sys.argv[1:]
    asked = asked or ["process-c1", "process-c10", "process-c100", "end-to-end"]
    plan = []
    for item in asked:
        workload, _, vias = item.partition(":")
        plan += [(workload, via) for via in (vias or "lua,native,embedded").split(",")]
    servers, ports = [], {}
    try:
        for name, target in (("before", before), ("after", after)):
            module = os.path.abspath(os.path.join(target, "release", "libechomq_module.so"))
            server, port = start(module)
            servers.append(server)
            ports[name] = (target, port)
        figures = {}
        for round_ in range(ROUNDS + 1):
            print("warm-up…" if round_ == 0 else f"round {round_}/{ROUNDS}…", file=sys.stderr)
            for workload, via in plan:
                order = ["before", "after"] if round_ % 2 else ["after", "before"]
                for name in order:
                    quiet()
                    value, unit = measure(*ports[name], via, workload)
                    if round_ > 0:
                        figures.setdefault((workload, via, unit), {}).setdefault(name, []).append(value)
        print(f"{'workload':<22} {'via':<9} {'before':>12} {'after':>12} {'after/before':>13}  (median of {ROUNDS}, {JOBS} jobs)")
        for (workload, via, unit), runs in figures.items():
            b, a = (sorted(runs[n])[len(runs[n]) // 2] for n in ("before", "after"))
            print(f"{workload:<22} {via:<9} {b:>12,.0f} {a:>12,.0f} {a / b:>12.2f}x  {unit}")
    finally:
        for server in servers:
            server.terminate()


if __name__ == "__main__":
    main()
