"""bench/compare's regression guard: a run against the figures committed in
BENCHMARKS.md, naming every row that fell more than the run's own spread, so
a drop like queues-100's shows in the commit that causes it. A benchmark run
on purpose, never a timed test in CI.

Usage: guard.py RESULTS.jsonl [BENCHMARKS.md] [--reference HEADING]
Exit: 0 no EchoMQ row fell, 1 some did, 2 unusable input.

The reference. "## The current figures" holds one subsection (###) a run;
by default the guard takes the first, which the page keeps for the last
run with every row ("Every row, one run: protocol 11"): medians of 5
rounds for every workload and every system, printed by table.py as a code
block. Issue 32's subsection holds six rows and three systems in a
markdown table; either shape is read. `--reference TEXT` (bench/compare:
GUARD_REFERENCE) takes the first subsection whose heading contains TEXT.
BENCHMARKS.md keeps medians only, so the spread is the new run's.

The spread. A row measured in n >= 2 rounds (every throughput row, from
ROUNDS) spreads max - min over its rounds, but no less than the run's
median spread: the median over those rows of (max - min) / median, times
the row's value (three rounds that happen to agree say little of a row's
noise). A row measured once (latency, recovery, memory, latency-peak) has
no range of its own and borrows the run's widest relative spread. A row
fell when it moved the worse way (down for jobs/s; up for ms, s and
bytes) by more than its spread. A run with no row measured twice has no
spread at all: exit 2.

The verdict counts EchoMQ's rows. BullMQ's and the ceiling's are compared
and shown too, but no EchoMQ commit moves them: when they fell as well,
the machine is slower than the reference's was, and the ratios
(table.py) are the figures to read.
"""
import argparse
import json
import os
import re
import sys
from pathlib import Path

SECTION = "## The current figures"
PEERS = {"bullmq", "ceiling"}
LOWER_IS_BETTER = {"ms", "s", "bytes"}
# A markdown table's column heads, as the page writes them.
COLUMNS = {"lua": "echomq-lua", "native": "echomq-native", "embedded": "echomq-embedded",
           "bullmq": "bullmq", "ceiling": "ceiling"}
# Rows that are the run's inputs (the rate sent), not its measurements.
INPUTS = re.compile(r"^latency-rate")


class Unusable(Exception):
    """Input the guard cannot judge from: exit 2."""


def median(xs):
    """table.py's median: the upper middle of an even count."""
    return sorted(xs)[len(xs) // 2]


def number(text):
    """The first figure in a cell ("8,808 (**0.61×**)", "2.75 ms"), or None."""
    found = re.search(r"-?[\d,]*\.?\d+", text)
    return float(found.group().replace(",", "")) if found else None


def sections(markdown):
    """(heading, body) for each ### under "## The current figures"."""
    part = markdown.split("\n" + SECTION + "\n", 1)
    if len(part) < 2:
        raise Unusable(f"no '{SECTION}' section")
    part = re.split(r"\n## ", part[1], maxsplit=1)[0]
    chunks = re.split(r"^### (.*)$", part, flags=re.M)
    return list(zip(chunks[1::2], chunks[2::2]))


def parse_block(body):
    """table.py's median table in a code block: {(workload, system): (value, unit)}.
    Cells are right-aligned under their heads; a label longer than the
    first column's 34 characters shifts its line's cells right by as much."""
    lines = body.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith("median of")), None)
    if start is None:
        return {}
    header = lines[start]
    heads = [(m.group(), m.end()) for m in re.finditer(r"\S+", header) if m.start() >= 34]
    figures = {}
    for line in lines[start + 1:]:
        label = re.match(r"(\S+) \(([^)]+)\)", line)
        if not label:
            break
        shift = max(0, label.end() - 34)
        left = 34 + shift
        for system, end in heads:
            cell = line[left:end + shift].strip()
            left = end + shift
            if "/" in system or not cell:
                continue
            figures[(label.group(1), system)] = (number(cell), label.group(2))
    return figures


def workload_of(label):
    """A markdown row's label as a workload: "latency p99.9 at 1k/s" is
    latency-p99.9; a label already a workload's name stays."""
    latency = re.match(r"latency (p[\d.]+) at 1k/s$", label)
    return f"latency-{latency.group(1)}" if latency else label.replace(" ", "-")


def parse_markdown_table(body):
    """A | row | Lua | native | BullMQ | table: {(workload, system): (value, unit)}."""
    rows = [[c.strip() for c in l.strip().strip("|").split("|")]
            for l in body.splitlines() if l.startswith("|")]
    if len(rows) < 3 or rows[0][0].lower() != "row":
        return {}
    systems = [COLUMNS.get(h.lower(), h) for h in rows[0][1:]]
    figures = {}
    for row in rows[2:]:
        for system, cell in zip(systems, row[1:]):
            value = number(cell)
            if value is not None:
                unit = re.search(r"\d\s*(ms|s|bytes)\b", cell)
                figures[(workload_of(row[0]), system)] = (value, unit.group(1) if unit else "jobs/s")
    return figures


def reference(markdown, heading=None):
    """(heading, its command line, figures) of the reference subsection."""
    for title, body in sections(markdown):
        if heading and heading.lower() not in title.lower():
            continue
        figures = parse_block(body) or parse_markdown_table(body)
        if figures:
            command = re.search(r"`([^`]*bench/compare)`", body.replace("\n", " "))
            return title, command.group(1) if command else "", figures
        if heading:
            raise Unusable(f"'{title}' holds no table of medians")
    raise Unusable(f"no subsection of '{SECTION}' matches '{heading}'" if heading
                   else f"no table under '{SECTION}'")


def run(lines):
    """The JSON lines bench/driver.py writes: {(workload, system): ([values], unit)}."""
    rounds = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise Unusable(f"line {n} is not JSON: {error}") from None
        if "value" in row:
            rounds.setdefault((row["workload"], row["system"]), ([], row["unit"]))[0].append(row["value"])
    if not rounds:
        raise Unusable("the run holds no measurement")
    return rounds


def judge(ref, new):
    """One verdict per (workload, system) in both: dicts with reference, new,
    change and spread (fractions of the reference), rounds, borrowed, fell;
    the spread as the module's doc defines it."""
    spreads = [(max(v) - min(v)) / median(v) for v, _ in new.values() if len(v) > 1 and median(v)]
    if not spreads:
        raise Unusable("no row was measured twice: the run has no spread to judge by (ROUNDS=1?)")
    typical, widest = median(spreads), max(spreads)
    verdicts = []
    for (workload, system), (values, unit) in new.items():
        if (workload, system) not in ref or INPUTS.match(workload):
            continue
        was, ref_unit = ref[(workload, system)]
        if ref_unit != unit or not was:
            continue
        now = median(values)
        spread = max(max(values) - min(values), typical * now) if len(values) > 1 else widest * now
        worse = now - was if unit in LOWER_IS_BETTER else was - now
        verdicts.append({"workload": workload, "system": system, "unit": unit, "reference": was,
                         "new": now, "change": (now - was) / was, "spread": spread / was,
                         "rounds": len(values), "borrowed": len(values) == 1, "fell": worse > spread})
    return verdicts


def figure(x, unit):
    return f"{x:,.0f}" if unit == "jobs/s" else f"{x:,.2f}"


def sizes(command, env):
    """A note for each size (JOBS, PAYLOAD) the run and the reference's command set apart."""
    notes = []
    for name in ("JOBS", "PAYLOAD"):
        theirs = re.search(rf"\b{name}=(\S+)", command)
        if theirs and env.get(name, theirs.group(1)) != theirs.group(1):
            notes.append(f"this run's {name}={env[name]}, the reference's {theirs.group(1)}: figures of "
                         "another size differ by more than noise; run the reference's command")
    return notes


def report(title, command, verdicts, out=None, notes=()):
    """The table of every row compared, then the verdict; returns the exit status."""
    out = out or sys.stdout
    print(f"\nguard: this run against BENCHMARKS.md's \"{title}\"", file=out)
    if command:
        print(f"  (its run: {command})", file=out)
    for note in notes:
        print(f"  note: {note}", file=out)
    label = lambda v: f"{v['workload']} ({v['unit']})"
    wide = max([len(label(v)) for v in verdicts] + [30]) + 2
    print(f"{'row':<{wide}}{'system':<24}{'reference':>12}{'new':>12}{'change':>9}{'spread':>9}{'n':>4}  verdict",
          file=out)
    for v in verdicts:
        spread = f"±{v['spread']:.1%}" + ("*" if v["borrowed"] else " ")
        print(f"{label(v):<{wide}}{v['system']:<24}"
              f"{figure(v['reference'], v['unit']):>12}{figure(v['new'], v['unit']):>12}"
              f"{v['change']:>+9.1%}{spread:>10}{v['rounds']:>3}  {'FELL' if v['fell'] else 'ok'}", file=out)
    print("(* measured once: the run's widest spread, borrowed; ms, s, bytes: lower is better)", file=out)
    fell = [v for v in verdicts if v["fell"] and v["system"] not in PEERS]
    peers = [v for v in verdicts if v["fell"] and v["system"] in PEERS]
    named = lambda vs: "; ".join(f"{v['workload']} {v['system']} {v['change']:+.1%} (spread ±{v['spread']:.1%})"
                                 for v in vs)
    if peers:
        print(f"guard: peers fell too: {named(peers)}; a slower machine moves EchoMQ's rows "
              "as well, read the ratios", file=out)
    if fell:
        print(f"guard: FELL, {len(fell)} of {len(verdicts)} rows more than the run's own spread: {named(fell)}",
              file=out)
        return 1
    print(f"guard: ok, no EchoMQ row of {len(verdicts)} fell more than the run's own spread", file=out)
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", help="the run's JSON lines (bench/compare's results, or KEEP's copy)")
    parser.add_argument("benchmarks", nargs="?", default=str(Path(__file__).parent.parent / "BENCHMARKS.md"))
    parser.add_argument("--reference", help="the subsection whose heading contains this text")
    args = parser.parse_args(argv)
    try:
        title, command, ref = reference(Path(args.benchmarks).read_text(), args.reference)
        with open(args.results) as lines:
            verdicts = judge(ref, run(lines))
        if not verdicts:
            raise Unusable("no row of the run is in the reference")
    except (Unusable, OSError) as error:
        print(f"guard: cannot judge: {error}", file=sys.stderr)
        return 2
    return report(title, command, verdicts, notes=sizes(command, os.environ))


if __name__ == "__main__":
    sys.exit(main())
