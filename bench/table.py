"""The comparison table from bench/compare's JSON lines: each workload's
median per system over the rounds, the ratios to BullMQ and to the ceiling;
then the same rows' min–max, the server's µs per job (its commands' µs and
its main thread's CPU, with the ratios to BullMQ), and the memory breakdown. Row and column names are stable for scripts."""
import json
import sys

SYSTEMS = ["echomq-lua", "echomq-native", "echomq-embedded", "bullmq", "ceiling"]
# Columns shown only when a run measured them (the event log's cost).
OPTIONAL = ["echomq-lua-noevents", "echomq-native-noevents"]
NOTES = {"echomq-native": "needs the module", "echomq-embedded": "no Redis, not durable",
         "*-noevents": "each queue's event log off (CONFIG EVENTS 0)"}

values, server, cpu, breakdowns, busy = {}, {}, {}, {}, []
for line in open(sys.argv[1]):
    r = json.loads(line)
    # One per measurement: a latency run prints four rows, count its p50 only.
    if "busy" in r and (not r["workload"].startswith("latency") or r["workload"].startswith("latency-p50")):
        busy.append(r["busy"])
    key = (r["workload"], r["system"])
    if "parts" in r:
        breakdowns[key] = r["parts"]
        continue
    values.setdefault(key, []).append((r["value"], r["unit"]))
    if "server_us" in r:
        server.setdefault(key, []).append(r["server_us"])
    if "server_cpu_us" in r:
        cpu.setdefault(key, []).append(r["server_cpu_us"])

workloads = list(dict.fromkeys(w for w, _ in values))
SYSTEMS += [s for s in OPTIONAL if any(system == s for _, system in values)]
med = lambda xs: sorted(xs)[len(xs) // 2]


def figure(x, unit):
    return f"{x:,.0f}" if unit == "jobs/s" else f"{x:,.2f}"


def width(system):
    """A column's width: 16, or the system's name and two spaces."""
    return max(16, len(system) + 2)


def table(title, cell, ratios):
    header = f"{title:<34}" + "".join(f"{s:>{width(s)}}" for s in SYSTEMS)
    if ratios:
        header += f"{'lua/bullmq':>12}{'native/bullmq':>15}{'native/ceiling':>16}"
    print(header)
    ceiling = med([v for v, _ in values.get(("hset-zadd", "ceiling"), [(0, "")])]) or None
    for w in workloads:
        found = {s: values[(w, s)] for s in SYSTEMS if (w, s) in values}
        unit = next(iter(found.values()))[0][1]
        cells = [cell(w, s, unit) for s in SYSTEMS]
        if not any(cells):
            continue
        line = f"{w + ' (' + unit + ')':<34}" + "".join(f"{c:>{width(s)}}" for c, s in zip(cells, SYSTEMS))
        if ratios:
            m = {s: med([v for v, _ in found[s]]) for s in found}
            ratio = lambda a, b: f"{m[a] / m[b]:.2f}x" if m.get(a) and m.get(b) else ""
            vs_ceiling = (f"{m['echomq-native'] / ceiling:.2f}x"
                          if ceiling and m.get("echomq-native") and w.startswith("add-bulk") else "")
            line += f"{ratio('echomq-lua', 'bullmq'):>12}{ratio('echomq-native', 'bullmq'):>15}{vs_ceiling:>16}"
        print(line)


print("columns: " + "; ".join(f"{s}: {n}" for s, n in NOTES.items()))
if busy:
    loaded = sum(1 for b in busy if b > 0.5)
    print(f"machine: {loaded} of {len(busy)} measurements started with the machine over 50% busy "
          f"after the quiet wait (/proc/stat); median busy {med(busy):.0%}")
rounds = max((len(v) for v in values.values()), default=0)
table(f"median of {rounds}", lambda w, s, u: figure(med([v for v, _ in values[(w, s)]]), u)
      if (w, s) in values else "", True)
print("(latency and bytes: lower is better, so a ratio below 1 is EchoMQ's win there)\n")
table("min–max", lambda w, s, u: "–".join(figure(f(v for v, _ in values[(w, s)]), u) for f in (min, max))
      if (w, s) in values and len(values[(w, s)]) > 1 else "", False)
print()


def per_job(title, figures):
    """A table of the server's µs per job (medians), with EchoMQ's ratios to BullMQ."""
    header = f"{title:<34}" + "".join(f"{s:>{width(s)}}" for s in SYSTEMS)
    print(header + f"{'lua/bullmq':>12}{'native/bullmq':>15}")
    for w in workloads:
        m = {s: med(figures[(w, s)]) for s in SYSTEMS if (w, s) in figures}
        if not m:
            continue
        cells = "".join(f"{m[s]:.2f}".rjust(width(s)) if s in m else " " * width(s) for s in SYSTEMS)
        ratio = lambda a: f"{m[a] / m['bullmq']:.2f}x" if m.get(a) and m.get("bullmq") else ""
        print(f"{w + ' (µs)':<34}{cells}{ratio('echomq-lua'):>12}{ratio('echomq-native'):>15}")


per_job("server commands' µs per job", server)
print("(INFO commandstats: a script's inner commands count twice, in the script and under their names)\n")
per_job("server CPU µs per job", cpu)
print("(INFO cpu, the main thread's user and system time: what one server's capacity is made of)")
if breakdowns:
    print("\nmemory: bytes per pending job by key (MEMORY USAGE; the rest is Redis's keyspace overhead)")
    for (w, s), parts in sorted(breakdowns.items()):
        total = values.get((w.replace("memory-breakdown", "bytes-per-pending-job"), s), [(0, "")])[0][0]
        keys = sum(parts.values())
        listed = ", ".join(f"{k} {v:.1f}" for k, v in sorted(parts.items(), key=lambda kv: -kv[1]) if v >= 0.05)
        print(f"{w:<34}{s:<16} total {total:7.1f} = {listed}, keyspace {total - keys:.1f}")
