"""How long single calls hold the server: Redis runs one command at a time,
so a call that takes 8 ms stalls every other client of that server (a
cache's GETs, another queue's claims) for 8 ms. For each executor it starts
a redis-server of its own (the module loaded), logs every call over
THRESHOLD µs (SLOWLOG), runs one `echomq-compare` workload, and prints per
transition the calls that went over, their median and their longest:

    cargo build --release -p echomq-bench -p echomq-module -p emq
    python3 bench/stalls.py target/release [WORKLOAD] [JOBS]

Lua's calls are all EVALSHA: each is named by its script, from the SHA1SUMS
that `emq scripts` writes (found beside `echomq-compare`); a native call by
its command. A benchmark, not a test: it prints figures and asserts nothing."""
import os
import subprocess
import sys
import tempfile

from resp import start_server

THRESHOLD = int(os.environ.get("THRESHOLD", "500"))


def scripts(target):
    """Each Lua script's name by its SHA1, as `emq scripts` writes them."""
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([os.path.join(target, "emq"), "scripts", "--out", out], check=True, capture_output=True)
        with open(os.path.join(out, "SHA1SUMS")) as sums:
            return dict(line.split() for line in sums if line.strip())


def transition(words, names):
    """The transition a logged call ran: `EMQ.X`, or `lua x-N.lua` by its SHA1."""
    command = words[0].decode().upper()
    if command.startswith("EVALSHA") and len(words) > 1:
        return "lua " + names.get(words[1].decode(), words[1].decode()[:12])
    return command


def stalls(target, via, workload, jobs, names):
    module = os.path.abspath(os.path.join(target, "libechomq_module.so"))
    server, r = start_server("--loadmodule", module, "--slowlog-log-slower-than", str(THRESHOLD),
                             "--slowlog-max-len", "100000")
    try:
        done = subprocess.run([os.path.join(target, "echomq-compare"), "--url", f"redis://127.0.0.1:{r.port}/",
                               "--via", via, "--workload", workload, "--jobs", str(jobs)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"echomq-compare {via} failed:\n{done.stderr[:3000]}")
        by = {}
        for entry in r.call("SLOWLOG", "GET", "100000"):
            by.setdefault(transition(entry[3], names), []).append(entry[2])
        return done.stdout.strip(), by
    finally:
        server.terminate()
        server.wait()


def main():
    target = sys.argv[1]
    workload = sys.argv[2] if len(sys.argv) > 2 else "process-c100"
    jobs = int(sys.argv[3]) if len(sys.argv) > 3 else 50000
    names = scripts(target)
    for via in ("lua", "native"):
        result, by = stalls(target, via, workload, jobs, names)
        print(f"{via}: {result}")
        print(f"  {'calls over ' + str(THRESHOLD) + ' µs':<24} {'count':>6} {'median µs':>10} {'longest µs':>11}")
        for name, times in sorted(by.items(), key=lambda item: -max(item[1])):
            times.sort()
            print(f"  {name:<24} {len(times):>6} {times[len(times) // 2]:>10,} {times[-1]:>11,}")


if __name__ == "__main__":
    main()
