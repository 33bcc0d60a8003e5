"""bench/guard.py against the real BENCHMARKS.md and synthetic runs; no
server, stdlib only. Run: python3 -m unittest discover -s bench/tests -p 'test_*.py'
(cargo test -p echomq-bench runs it too, from bench/tests/guard.rs)."""
import io
import json
import sys
import tempfile
import unittest
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BENCH))
import guard  # noqa: E402

MARKDOWN = (BENCH.parent / "BENCHMARKS.md").read_text()


def lines(rows):
    """JSON lines as driver.py writes them: {workload: {system: [values]}}."""
    units = {"latency-p99.9": "ms", "recovery": "s"}
    return [json.dumps({"system": system, "workload": workload, "value": value,
                        "unit": units.get(workload, "jobs/s"), "round": n})
            for workload, systems in rows.items() for system, values in systems.items()
            for n, value in enumerate(values, 1)]


def verdicts(rows, heading=None):
    _, _, ref = guard.reference(MARKDOWN, heading)
    return {(v["workload"], v["system"]): v for v in guard.judge(ref, guard.run(lines(rows)))}


def around(value, spread=0.02):
    """Three rounds whose median is value and whose range is spread of it."""
    return [value * (1 - spread), value, value * (1 + spread / 2)]


class ReferenceTest(unittest.TestCase):
    def test_the_default_is_the_run_with_every_row(self):
        title, command, ref = guard.reference(MARKDOWN)
        self.assertIn("Every row", title)
        self.assertIn("bench/compare", command)
        self.assertEqual(ref[("queues-100", "echomq-lua")], (8268, "jobs/s"))
        self.assertEqual(ref[("queues-100", "bullmq")], (8148, "jobs/s"))
        self.assertEqual(ref[("latency-p99.9", "echomq-native")], (1.62, "ms"))
        self.assertEqual(ref[("hset-zadd", "ceiling")], (171853, "jobs/s"))
        # A label wider than the first column shifts its line's cells.
        self.assertEqual(ref[("bytes-per-pending-job-1000k-1024b", "bullmq")], (1845.79, "bytes"))
        self.assertNotIn(("process-4x25", "echomq-embedded"), ref)
        workloads = {w for w, _ in ref}
        for row in ["add-50", "process-c1", "process-c10", "process-c100", "end-to-end", "queues-100",
                    "latency-peak", "recovery"]:
            self.assertIn(row, workloads)

    def test_a_heading_picks_issue_32s_markdown_table(self):
        title, command, ref = guard.reference(MARKDOWN, "issue 32")
        self.assertIn("Issue 32", title)
        self.assertIn("LATENCY_SECONDS=10", command)
        self.assertEqual(len(ref), 18)
        self.assertEqual(ref[("queues-100", "echomq-lua")], (8808, "jobs/s"))
        self.assertEqual(ref[("latency-p99.9", "echomq-native")], (30.51, "ms"))

    def test_an_unknown_heading_is_unusable(self):
        with self.assertRaises(guard.Unusable):
            guard.reference(MARKDOWN, "no such run")


class JudgeTest(unittest.TestCase):
    ROWS = {"process-c1": {"echomq-lua": around(5947), "echomq-native": around(9528), "bullmq": around(3882)},
            "queues-100": {"echomq-lua": around(8268), "echomq-native": around(11662), "bullmq": around(8148)},
            "latency-p99.9": {"echomq-lua": [1.71], "echomq-native": [1.62], "bullmq": [20.43]}}

    def test_a_run_equal_to_the_reference_passes(self):
        found = verdicts(self.ROWS)
        self.assertEqual(len(found), 9)
        self.assertFalse(any(v["fell"] for v in found.values()))

    def test_a_row_lowered_beyond_its_spread_fails_and_is_named(self):
        rows = {**self.ROWS, "queues-100": {**self.ROWS["queues-100"], "echomq-lua": around(8268 * 0.6)}}
        found = verdicts(rows)
        self.assertEqual([k for k, v in found.items() if v["fell"]], [("queues-100", "echomq-lua")])
        self.assertAlmostEqual(found[("queues-100", "echomq-lua")]["change"], -0.4)
        out = io.StringIO()
        self.assertEqual(guard.report("t", "", list(found.values()), out), 1)
        verdict = out.getvalue().splitlines()[-1]
        self.assertIn("FELL", verdict)
        self.assertIn("queues-100 echomq-lua -40.0%", verdict)

    def test_a_row_lowered_within_its_spread_passes(self):
        # Rounds 7,000-9,000: a median 3% under the reference is inside them.
        rows = {**self.ROWS, "queues-100": {**self.ROWS["queues-100"], "echomq-lua": [7000, 8020, 9000]}}
        found = verdicts(rows)
        self.assertFalse(found[("queues-100", "echomq-lua")]["fell"])
        self.assertEqual(guard.report("t", "", list(found.values()), io.StringIO()), 0)

    def test_rounds_that_agree_borrow_the_runs_median_spread(self):
        # Three equal rounds 1.5% low: inside the run's median spread (3%).
        rows = {**self.ROWS, "process-c1": {**self.ROWS["process-c1"], "echomq-lua": [5947 * 0.985] * 3}}
        found = verdicts(rows)
        self.assertFalse(found[("process-c1", "echomq-lua")]["fell"])
        self.assertAlmostEqual(found[("process-c1", "echomq-lua")]["spread"], 0.03 * 0.985)

    def test_latency_worse_is_flagged_and_better_is_not(self):
        # Measured once: the run's widest spread (3%) is borrowed.
        rows = {**self.ROWS, "latency-p99.9": {"echomq-lua": [1.71 * 1.5], "echomq-native": [0.5],
                                               "bullmq": [20.43]}}
        found = verdicts(rows)
        self.assertTrue(found[("latency-p99.9", "echomq-lua")]["fell"])
        self.assertTrue(found[("latency-p99.9", "echomq-lua")]["borrowed"])
        self.assertFalse(found[("latency-p99.9", "echomq-native")]["fell"])

    def test_a_peer_that_fell_does_not_fail_the_run(self):
        rows = {**self.ROWS, "process-c1": {**self.ROWS["process-c1"], "bullmq": around(3882 * 0.5)}}
        found = verdicts(rows)
        self.assertTrue(found[("process-c1", "bullmq")]["fell"])
        out = io.StringIO()
        self.assertEqual(guard.report("t", "", list(found.values()), out), 0)
        self.assertIn("peers fell too", out.getvalue())

    def test_a_run_of_one_round_has_no_spread(self):
        with self.assertRaises(guard.Unusable):
            verdicts({"process-c1": {"echomq-lua": [5947]}})


class MainTest(unittest.TestCase):
    def main(self, text, *args):
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as results:
            results.write(text)
            results.flush()
            out = io.StringIO()
            streams, (sys.stdout, sys.stderr) = (sys.stdout, sys.stderr), (out, out)
            try:
                return guard.main([results.name, *args]), out.getvalue()
            finally:
                sys.stdout, sys.stderr = streams

    def test_exit_status_follows_the_verdict(self):
        rows = JudgeTest.ROWS
        self.assertEqual(self.main("\n".join(lines(rows)))[0], 0)
        fallen = {**rows, "process-c1": {**rows["process-c1"], "echomq-native": around(6000)}}
        status, out = self.main("\n".join(lines(fallen)))
        self.assertEqual(status, 1)
        self.assertIn("process-c1 echomq-native", out.splitlines()[-1])

    def test_a_run_of_another_size_is_noted(self):
        command = "ROUNDS=5 JOBS=10000 bench/compare"
        self.assertEqual(guard.sizes(command, {"JOBS": "10000"}), [])
        self.assertEqual(guard.sizes(command, {}), [])
        self.assertIn("JOBS=20000", guard.sizes(command, {"JOBS": "20000"})[0])

    def test_unusable_input_exits_2(self):
        self.assertEqual(self.main("not json\n")[0], 2)
        self.assertEqual(self.main("\n".join(lines(JudgeTest.ROWS)), "--reference", "nothing")[0], 2)


if __name__ == "__main__":
    unittest.main()
