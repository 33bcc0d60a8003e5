"""Does a queue's rate hold across workers? PROTOCOL.md §7.1 promises that no
interval of PER ms holds more than RATE claims, for all workers together.
This runs the operator's trial: a queue of `emq limit --rate 50/1s`, 300
jobs of ~10 ms, three `emq work --concurrency 10` processes, on a
redis-server of its own (the module loaded), and reads the queue's event
log: the `active` events' server times. Per run it prints the most claims
any 1,000 ms interval held; then the worst of all runs per executor.

    cargo build --release -p emq -p echomq-module
    python3 bench/rate_window.py target/release [RUNS] [VIA…]

RUNS defaults to 20, VIA to `lua native`. A benchmark run on purpose, not
a test: tests/gate.rs is the property test that keeps the promise in CI.
"""
import os
import subprocess
import sys
import time

from resp import start_server

RATE, PER, JOBS, WORKERS, CONCURRENCY = 50, 1000, 300, 3, 10


def most_in_a_window(times, per):
    """The most of `times` (ms) that one interval [t, t + per) holds."""
    times = sorted(times)
    most, end = 0, 0
    for start, first in enumerate(times):
        while end < len(times) and times[end] < first + per:
            end += 1
        most = max(most, end - start)
    return most


def one_run(target, via, module):
    server, client = start_server("--loadmodule", module)
    try:
        url = f"redis://127.0.0.1:{client.port}/"
        emq = [os.path.join(target, "emq"), "--url", url, "--via", via, "-q"]
        subprocess.run([*emq, "limit", "rq", "--rate", "50/1s"], check=True, capture_output=True)
        lines = "".join('{"n":%d}\n' % n for n in range(JOBS))
        subprocess.run([*emq, "enqueue", "rq", "--jsonl"], input=lines.encode(), check=True, capture_output=True)
        workers = [
            subprocess.Popen([*emq, "work", "rq", "--concurrency", str(CONCURRENCY), "--", "sh", "-c",
                              "cat >/dev/null; sleep 0.01"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(WORKERS)
        ]
        deadline = time.monotonic() + JOBS / RATE * PER / 1000 * 3 + 30
        done = 0
        while done < JOBS and time.monotonic() < deadline:
            time.sleep(0.2)
            done = client.call("ZCARD", "emq:{rq}:done")
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.wait(timeout=30)
        entries = client.call("XRANGE", "emq:{rq}:events", "-", "+")
        times = []
        for entry_id, fields in entries:
            pairs = dict(zip(fields[::2], fields[1::2]))
            if pairs.get(b"event") == b"active":
                times.append(int(entry_id.split(b"-")[0]))
        return done, len(times), most_in_a_window(times, PER)
    finally:
        server.terminate()
        server.wait()


def main():
    target = sys.argv[1] if len(sys.argv) > 1 else "target/release"
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    vias = sys.argv[3:] or ["lua", "native"]
    module = os.path.abspath(os.path.join(target, "libechomq_module.so"))
    print(f"RATE {RATE} PER {PER} ms, {JOBS} jobs of ~10 ms, {WORKERS} x emq work --concurrency {CONCURRENCY}")
    for via in vias:
        worst = []
        for run in range(1, runs + 1):
            done, claims, most = one_run(target, via, module)
            worst.append(most)
            print(f"{via:>6} run {run:2}: {done} done, {claims} claims, at most {most} in one {PER} ms", flush=True)
        print(f"{via:>6}: the most in one {PER} ms over {runs} runs: {max(worst)} (promise: {RATE})", flush=True)


if __name__ == "__main__":
    main()
