"""The comparison table from bench/compare's JSON lines: each workload's
figure per system, and the ratios EchoMQ (native) / BullMQ and / the ceiling."""
import json
import sys

rows = {}
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("{"):
        r = json.loads(line)
        rows.setdefault(r["workload"], {})[r["system"]] = (r["value"], r["unit"])

systems = ["echomq-lua", "echomq-native", "echomq-embedded", "bullmq", "ceiling"]
print(f"{'workload':<24}" + "".join(f"{s:>16}" for s in systems) + f"{'native/bullmq':>15}{'native/ceiling':>16}")
ceiling = rows.get("hset-zadd", {}).get("ceiling", (None,))[0]
for workload in ["add-50", "add-bulk", "process-c1", "process-c10", "process-c100", "end-to-end",
                 "latency-p50", "latency-p99", "latency-p99.9", "bytes-per-pending-job", "hset-zadd", "seed-lua"]:
    found = rows.get(workload, {})
    if not found:
        continue
    unit = next(iter(found.values()))[1]
    cells = "".join(f"{found[s][0]:>16,.2f}" if s in found and unit != "jobs/s" else
                    f"{found[s][0]:>16,.0f}" if s in found else f"{'':>16}" for s in systems)
    native, bullmq = found.get("echomq-native", (None,))[0], found.get("bullmq", (None,))[0]
    vs_bullmq = f"{native / bullmq:>14.2f}x" if native and bullmq else f"{'':>15}"
    vs_ceiling = (f"{native / ceiling:>15.2f}x" if native and ceiling and workload.startswith("add") else f"{'':>16}")
    print(f"{workload + ' (' + unit + ')':<24}{cells}{vs_bullmq}{vs_ceiling}")
print("(latency and bytes: lower is better, so native/bullmq below 1 is a win there)")
