"""Checks of the current-figures script's own logic (no build, no benchmark run):
`python3 -m unittest discover -s benches/current`."""

import json
import os
import tempfile
import time
import unittest
from pathlib import Path
from unittest import mock

import current as cur


class Units(unittest.TestCase):
    def test_human_picks_the_unit_and_three_digits(self):
        self.assertEqual(cur.human(273_456.0), "273 µs")
        self.assertEqual(cur.human(14_130_000.0), "14.1 ms")
        self.assertEqual(cur.human(2.5e9), "2.5 s")
        self.assertEqual(cur.human(812.0), "812 ns")


class Criterion(unittest.TestCase):
    def test_only_the_benchmarks_written_by_the_step(self):
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            for name, median, age in (("gibbs_sweep/toy", 2.7e5, 0), ("old/one", 1.0, 3600)):
                new = root / "target" / "criterion" / name / "new"
                new.mkdir(parents=True)
                (new / "benchmark.json").write_text(json.dumps({"full_id": name}))
                est = new / "estimates.json"
                est.write_text(json.dumps({"median": {"point_estimate": median}}))
                past = time.time() - age
                os.utime(est, (past, past))
            with mock.patch.object(cur, "ROOT", root):
                rows = cur.criterion_medians(time.time() - 60)
        self.assertEqual(rows, [("gibbs_sweep/toy", 2.7e5)])


class Report(unittest.TestCase):
    def meta(self, steps, minutes=3.5):
        return {"when": "2026-01-01 00:00 UTC", "commit": "abc1234", "subject": "s", "cpu": "c",
                "minutes": minutes, "steps": steps, "skipped": {"gibbs_limit": "Skipped: no CPU."}}

    def test_text_steps_verbatim_and_failures_and_skips_said(self):
        steps = [s for s in cur.STEPS if s.key in ("samplers", "sva", "gibbs_limit")]
        with tempfile.TemporaryDirectory() as d:
            out = Path(d)
            (out / "sva.txt").write_text("SVA n = 10000 median 24.4 ms\x1b[0m\n")
            runs = [
                {"key": "samplers", "rc": 0, "wall_s": 60.0, "peak_mib": 50.0, "load_before": "0.3",
                 "started": "00:00", "medians": [["gibbs_sweep/10k", 1.4e7]]},
                {"key": "sva", "rc": 101, "wall_s": 3.0, "peak_mib": 16.0, "load_before": "0.2",
                 "started": "00:01"},
            ]
            (out / "meta.json").write_text(json.dumps(self.meta(runs)))
            text = cur.render(out, steps)
        self.assertIn("| `gibbs_sweep/10k` | 14 ms |", text)
        self.assertIn("SVA n = 10000 median 24.4 ms\n```", text)
        self.assertNotIn("\x1b", text)
        self.assertIn("**exit code 101**", text)
        self.assertIn("Skipped: no CPU.", text)
        self.assertIn("`abc1234`", text)
        self.assertIn("3.5 min wall", text)

    def test_an_interrupted_run_says_so(self):
        with tempfile.TemporaryDirectory() as d:
            out = Path(d)
            (out / "meta.json").write_text(json.dumps(self.meta([], minutes=None)))
            text = cur.render(out, cur.STEPS[:1])
        self.assertIn("**unfinished run**", text)

    def test_benchmarks_rewritten_between_the_markers_only(self):
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            doc = f"# B\n\nintro\n{cur.BEGIN}\nold figures\n{cur.END}\n\n# History\nkept\n"
            (root / "BENCHMARKS.md").write_text(doc)
            with mock.patch.object(cur, "ROOT", root):
                cur.write_benchmarks("new figures\n")
            self.assertEqual((root / "BENCHMARKS.md").read_text(),
                             f"# B\n\nintro\n{cur.BEGIN}\nnew figures\n{cur.END}\n\n# History\nkept\n")
            (root / "BENCHMARKS.md").write_text("no markers")
            with mock.patch.object(cur, "ROOT", root), self.assertRaises(SystemExit):
                cur.write_benchmarks("x")


if __name__ == "__main__":
    unittest.main()
