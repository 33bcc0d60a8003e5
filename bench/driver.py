"""bench/compare's driver: every measurement in its own process, the systems
interleaved within each round (their order rotated round by round), one
warm-up round thrown away, then ROUNDS rounds; before each measurement it
waits for a quiet machine. Writes JSON lines (one per measurement, with its
round and how busy the machine was) for table.py.

Usage: driver.py RESULTS URL AOF_URL   (settings from the environment; see bench/compare)"""
import json
import os
import subprocess
import sys
import time

from quiet import quiet
from resp import Redis

results, url, aof_url = sys.argv[1], sys.argv[2], sys.argv[3]
env = os.environ
JOBS, ROUNDS, PAYLOAD = int(env["JOBS"]), int(env["ROUNDS"]), int(env["PAYLOAD"])
LATENCY_SECONDS = float(env["LATENCY_SECONDS"])
SUSTAINED_SECONDS = float(env["SUSTAINED_SECONDS"])
MEMORY_COUNTS = [int(n) for n in env["MEMORY_COUNTS"].split()]
MEMORY_SIZES = [int(n) for n in env["MEMORY_SIZES"].split()]
COMPARE = "target/release/echomq-compare"

SYSTEMS = ["echomq-lua", "echomq-native", "echomq-embedded", "bullmq"]
# The event log's cost: the same rows with each queue's log off (CONFIG EVENTS 0).
NO_EVENTS = ["echomq-lua-noevents", "echomq-native-noevents"]
NO_EVENTS_WORKLOADS = {"add-bulk", "process-c1", "process-c100", "end-to-end"}
# Throughput workloads, in the table's order; the ceiling right after add-bulk.
WORKLOADS = ["add-50", "add-bulk", "hset-zadd", "seed-lua", "add-bulk-1kb",
             "process-c1", "process-c10", "process-c100", "process-c100-1kb",
             "process-c100-1ms", "process-c100-10ms", "process-4x25", "queues-100", "queues-1000",
             "end-to-end", "flow-100",
             "add-bulk-aof", "process-c100-aof", "end-to-end-aof"]
CEILING = {"hset-zadd", "seed-lua"}
# Four worker processes on one queue (process-4x25): a server to share.
SHARED = {"process-4x25"}
WORKLOADS = [w for w in WORKLOADS if w in env.get("WORKLOADS", " ".join(WORKLOADS)).split()]
out = open(results, "a")


def command(system, workload, target, jobs=JOBS, extra=()):
    if system == "bullmq":
        args = [str(a) for a in (target, workload, jobs, PAYLOAD, *extra)]
        return ["node", "bench/bullmq.mjs", *args]
    via = "raw" if system == "ceiling" else system.removeprefix("echomq-")
    names = ["--rate", "--seconds", "--concurrency"]
    flags = [x for pair in zip(names, extra) for x in (pair[0], str(pair[1]))]
    if via.endswith("-noevents"):
        via, flags = via.removesuffix("-noevents"), [*flags, "--no-events"]
    return [COMPARE, "--url", target, "--via", via, "--workload", workload, "--jobs", str(jobs),
            "--payload", str(PAYLOAD), *flags]


def measure(system, workload, round_, target=url, jobs=JOBS, extra=(), suffix="", flush=True):
    """One measurement in its own process; its JSON lines, recorded."""
    load = quiet()
    done = subprocess.run(command(system, workload, target, jobs, extra), capture_output=True, text=True)
    if done.returncode != 0:
        print(f"{system} {workload}: failed\n{done.stderr[-2000:]}", file=sys.stderr)
        return []
    lines = []
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            row.update(workload=row["workload"] + suffix, round=round_, busy=round(load, 3))
            lines.append(row)
            if round_ > 0 or round_ == -1:
                out.write(json.dumps(row) + "\n")
    out.flush()
    if flush:
        Redis(target).call("FLUSHALL")
    return lines


def throughput_rounds():
    for round_ in range(ROUNDS + 1):
        label = "warm-up" if round_ == 0 else f"round {round_}/{ROUNDS}"
        print(f"{label}…", file=sys.stderr)
        for workload in WORKLOADS:
            base, target = workload, url
            if workload.endswith("-aof"):
                base, target = workload.removesuffix("-aof"), aof_url
            # The embedded executor has no server for a second process to share.
            shared = workload.endswith("-aof") or workload in SHARED
            systems = ["ceiling"] if workload in CEILING else [
                s for s in SYSTEMS if not (s == "echomq-embedded" and shared)]
            if workload in NO_EVENTS_WORKLOADS:
                systems += NO_EVENTS
            shift = round_ % len(systems)
            for system in systems[shift:] + systems[:shift]:
                measure(system, base, round_, target=target, suffix=workload[len(base):])


def medians():
    rows = {}
    for line in open(results):
        row = json.loads(line)
        rows.setdefault((row["system"], row["workload"]), []).append(row["value"])
    return {key: sorted(values)[len(values) // 2] for key, values in rows.items()}


# The latency producer's peak: the rates tried, as shares of the end-to-end
# peak, and what "sustained" means for each short run.
RAMP = [0.3, 0.5, 0.7, 0.85, 1.0]
RAMP_SECONDS = min(LATENCY_SECONDS, 10.0)
RAMP_KEPT = 0.97


def latency_peak(system, bulk):
    """The highest rate of RAMP's (shares of `bulk`, the end-to-end peak)
    that `system` sustains fed as the latency workload feeds it: the jobs
    due each millisecond in one call, which costs more a job than
    end-to-end's calls of 1,000 (on Lua, each call pays the script's fixed
    part). Sustained: in a run of RAMP_SECONDS, the jobs started (first
    send to last start) at RAMP_KEPT of the rate sent or more; a system
    that falls behind grows a backlog and starts them slower. Not recorded;
    printed and returned."""
    peak = int(RAMP[0] * bulk)
    for share in RAMP:
        rate = int(share * bulk)
        rows = {row["workload"]: row["value"] for row in measure(system, "latency", -2, extra=(rate, RAMP_SECONDS, 100))}
        started, p50 = rows.get("latency-started"), rows.get("latency-p50")
        print(f"  {system} at {rate} jobs/s ({share:.0%} of end-to-end): started {started} jobs/s, p50 {p50} ms",
              file=sys.stderr)
        if started is None or started < RAMP_KEPT * rate:
            break
        peak = rate
    out.write(json.dumps({"system": system, "workload": "latency-peak", "value": peak,
                          "unit": "jobs/s", "round": -1}) + "\n")
    return peak


def latency_runs():
    """At 1,000 jobs/s (concurrency 10, as before), then at 50% and 90% of
    each system's own peak fed by the latency producer (concurrency 100;
    see latency_peak): one run each, the systems one after another."""
    peaks = medians()
    fed = {}
    for system in SYSTEMS:
        print(f"latency-peak {system}…", file=sys.stderr)
        fed[system] = latency_peak(system, peaks.get((system, "end-to-end"), 2000))
    plans = [("", lambda s: 1000, 10)]
    for share, label in [(0.5, "-at50"), (0.9, "-at90")]:
        plans.append((label, lambda s, share=share: int(share * fed[s]), 100))
    for suffix, rate, concurrency in plans:
        for system in SYSTEMS:
            print(f"latency{suffix} {system}…", file=sys.stderr)
            measure(system, "latency", -1, extra=(rate(system), LATENCY_SECONDS, concurrency), suffix=suffix)


def sustained_runs():
    """A sustained run with retention on (finished jobs kept, both sides): at
    50% of each durable system's end-to-end peak for SUSTAINED_SECONDS."""
    peaks = medians()
    for system in ["echomq-lua", "echomq-native", "bullmq"]:
        print(f"sustained {system}…", file=sys.stderr)
        rate = int(0.5 * peaks.get((system, "end-to-end"), 2000))
        measure(system, "latency", -1, extra=(rate, SUSTAINED_SECONDS, 100), suffix="-sustained")


def recovery_runs():
    """The time to recover a crashed worker's jobs (leases of 5 s), one run each."""
    for system in ["echomq-lua", "echomq-native", "bullmq"]:
        print(f"recovery {system}…", file=sys.stderr)
        measure(system, "recovery", -1, jobs=100)


def breakdown(target, jobs):
    """`MEMORY USAGE` per key: the job records (a key whose last part is a
    number or an id) sampled, every other key measured whole. Bytes per job."""
    redis = Redis(target)
    keys, cursor = [], b"0"
    while True:
        cursor, batch = redis.call("SCAN", cursor, "COUNT", 1000)
        keys += batch
        if cursor == b"0":
            break
    families = {}
    for key in keys:
        families.setdefault(key.rsplit(b":", 1)[0], []).append(key)
    parts = {}
    def per_job(key):
        last = key.rsplit(b":", 1)[-1]
        return last.isdigit() or len(last) >= 20
    for prefix, members in families.items():
        jobs_here = [k for k in members if per_job(k)]
        if len(jobs_here) > 10:
            members = [k for k in members if not per_job(k)]
            sample = jobs_here[:: max(1, len(jobs_here) // 500)]
            each = sum(redis.call("MEMORY", "USAGE", k, "SAMPLES", 0) for k in sample) / len(sample)
            parts[prefix.decode().split(":", 1)[0] + ":…:<job>"] = each * len(jobs_here)
        for key in members:
            name = key.decode()
            queue_free = name.split(":")[0] + ":…:" + name.rsplit(":", 1)[-1]
            parts[queue_free] = parts.get(queue_free, 0) + redis.call("MEMORY", "USAGE", key, "SAMPLES", 0)
    return {name: round(total / jobs, 1) for name, total in parts.items()}


def memory_runs():
    for count in MEMORY_COUNTS:
        for size in MEMORY_SIZES:
            suffix = "" if (count, size) == (10_000, 53) else f"-{count // 1000}k-{size}b"
            for system in ["echomq-lua", "echomq-native", "bullmq"]:
                print(f"memory {count} × {size} B {system}…", file=sys.stderr)
                global PAYLOAD
                PAYLOAD, kept = size, PAYLOAD
                rows = measure(system, "memory", -1, jobs=count, suffix=suffix, flush=False)
                PAYLOAD = kept
                if rows:
                    parts = breakdown(url, count)
                    out.write(json.dumps({"system": system, "workload": "memory-breakdown" + suffix,
                                          "parts": parts, "round": -1}) + "\n")
                Redis(url).call("FLUSHALL")


if __name__ == "__main__":
    only = env.get("ONLY", "throughput latency sustained recovery memory").split()
    if "throughput" in only:
        throughput_rounds()
    if "latency" in only:
        latency_runs()
    if "sustained" in only:
        sustained_runs()
    if "recovery" in only:
        recovery_runs()
    if "memory" in only:
        memory_runs()
