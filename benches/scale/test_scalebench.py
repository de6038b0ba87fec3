"""Checks of the benchmark's own arithmetic (seconds; no nrmm, no large data):
`python -m unittest discover -s benches/scale` with the benchmark's environment."""

import json
import math
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np

import scalebench as sb


class Data(unittest.TestCase):
    def test_closest_means_are_sep_apart(self):
        rng = np.random.default_rng(3)
        for d, k in [(2, 6), (8, 12), (128, 80)]:
            m = sb.separate(rng.normal(size=(k, d)), 2.5)
            dist = np.sqrt(((m[:, None] - m[None]) ** 2).sum(-1))
            np.fill_diagonal(dist, np.inf)
            self.assertAlmostEqual(dist.min(), 2.5, places=9)

    def test_coincident_means_refused(self):
        with self.assertRaises(ValueError):
            sb.separate(np.zeros((3, 2)), 1.0)

    def test_generated_set_is_seeded_and_follows_its_spec(self):
        spec = sb.SetSpec("t", 3_000, 4, 5, 8.0, 7)
        with tempfile.TemporaryDirectory() as d:
            x1, y1 = sb.ensure_data(spec, Path(d) / "a")
            x2, y2 = sb.ensure_data(spec, Path(d) / "b")
            a, b = np.load(x1), np.load(x2)
            np.testing.assert_array_equal(a, b)
            self.assertEqual(a.shape, (3_000, 4))
            self.assertEqual(a.dtype, np.dtype("<f8"))
            labels = np.loadtxt(y1, dtype=np.int64)
            np.testing.assert_array_equal(labels, np.load(y1.with_suffix(".npy")))
            self.assertEqual(len(np.unique(labels)), 5)
            # Each cluster's sample mean sits on its true mean, spread about one unit per axis.
            _, _, means, _, _ = sb.mixture(spec)
            for c in range(5):
                pts = a[labels == c]
                self.assertLess(np.abs(pts.mean(0) - means[c]).max(), 0.3)
                self.assertTrue(np.all((pts.std(0) > 0.5) & (pts.std(0) < 1.5)))
            # Cached: the same files are not written again.
            stamp = x1.stat().st_mtime_ns
            sb.ensure_data(spec, Path(d) / "a")
            self.assertEqual(x1.stat().st_mtime_ns, stamp)

    def test_chunks_do_not_change_the_clusters(self):
        spec = sb.SetSpec("t", 1_000, 3, 4, 8.0, 2)
        with tempfile.TemporaryDirectory() as d:
            x, y = Path(d) / "x.npy", Path(d) / "y.txt"
            sb.generate(spec, x, y, chunk=128)
            self.assertEqual(np.load(x).shape, (1_000, 3))

    def test_quick_sets_are_small_versions_of_the_goal_sets(self):
        quick = sb.quick_sets()
        self.assertTrue(all(s.n <= 10_000 and s.d <= 8 and s.k <= 10 for s in quick))
        self.assertEqual({s.goal for s in quick if s.goal},
                         {"faster-than-bgmm", "embeddings", "million"})
        names = {s.name for s in sb.SETS}
        self.assertIn("g1e5-d128-k80", names)
        self.assertIn("g1e6-d2-k6", names)


class Selection(unittest.TestCase):
    def test_full_names_prefixes_and_stray_commas(self):
        names = lambda sel: [s.name for s in sb.select(sb.SETS, sel)]
        self.assertEqual(names(["g1e5-d8-k12", ""]), ["g1e5-d8-k12"])
        self.assertEqual(names(["g1e5-d8"]), ["g1e5-d8-k12", "g1e5-d8-k12-overlap"])
        self.assertEqual(names(["", " "]), [])


class Commands(unittest.TestCase):
    def test_nrmm_runs_on_its_defaults(self):
        cmd = sb.nrmm_run_command("nrmm", Path("x.npy"), Path("o"), "nrmm", None)
        self.assertEqual(cmd, ["nrmm", "run", "--data", "x.npy", "--seed", "1", "--out", "o"])
        cmd = sb.nrmm_run_command("nrmm", Path("x.npy"), Path("o"), "nrmm-subcluster", 50)
        self.assertEqual(cmd[:4], ["nrmm", "run", "--sampler", "subcluster"])
        self.assertEqual(cmd[-2:], ["--sweeps", "50"])

    def test_bic_grid(self):
        self.assertEqual(sb.bic_grid(6), list(range(1, 13)))
        g = sb.bic_grid(80)
        self.assertLessEqual(len(g), sb.BIC_GRID_MAX)
        self.assertEqual((g[0], g[-1]), (1, 160))
        self.assertEqual(g, sorted(set(g)))


class Children(unittest.TestCase):
    def run_py(self, code, cap=30.0, interrupt=False):
        with tempfile.TemporaryDirectory() as d:
            return sb.run_child([sys.executable, "-c", code], Path(d) / "log", cap, interrupt)

    def test_peak_memory_is_the_childs(self):
        c = self.run_py("import numpy as np, time; a = np.ones(40_000_000); time.sleep(0.3)")
        self.assertEqual(c.status, "ok")
        self.assertGreater(c.peak_rss_mb, 300)  # 320 MB of ones
        self.assertLess(c.peak_rss_mb, 2_000)
        # The parent's own memory is not the child's (wait4's ru_maxrss would say 320 MB).
        big = np.ones(40_000_000)
        c = self.run_py("import time; time.sleep(0.3)")
        self.assertLess(c.peak_rss_mb, 100, big.sum())

    def test_cap_and_failure_are_recorded(self):
        c = self.run_py("import time; time.sleep(30)", cap=0.5)
        self.assertEqual(c.status, "capped")
        self.assertLessEqual(c.wall_s, 0.5)
        self.assertIn("cap", c.error)
        c = self.run_py("import sys; print('error: bad data'); sys.exit(3)")
        self.assertEqual(c.status, "failed")
        self.assertEqual(c.error, "error: bad data")

    def test_interrupt_lets_the_child_finish_its_files(self):
        code = ("import signal, sys, time\n"
                "signal.signal(signal.SIGINT, lambda *a: (print('error: stopped'), sys.exit(130)))\n"
                "time.sleep(30)\n")
        c = self.run_py(code, cap=0.5, interrupt=True)
        self.assertEqual(c.status, "capped")


class Scores(unittest.TestCase):
    def test_gaps_per_point(self):
        score = {"n": 100, "log_joint": -500.0, "chains": [
            {"log_joint": -501.0, "best_log_joint": -499.0},
            {"log_joint": -498.0, "best_log_joint": -497.5},
            {"log_joint": None, "best_log_joint": None}]}
        g = sb.gap_stats(score)
        self.assertEqual((g["gap_min"], g["gap_max"]), (-1.0, 2.0))
        self.assertAlmostEqual(g["gap_pp_min"], -0.01)
        self.assertAlmostEqual(g["gap_pp_max"], 0.02)
        self.assertAlmostEqual(g["gap_best_pp"], 0.025)

    def test_trace_stands_in_for_a_stopped_chain_at_fixed_hyperparameters(self):
        score = {"n": 10, "log_joint": -50.0, "resampled": [], "chains": [
            {"chain": 0, "log_joint": -49.0}, {"chain": 1, "log_joint": None}]}
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "chain-1").mkdir()
            (Path(d) / "chain-1" / "trace.csv").write_text(
                "sweep,seconds,n_clusters,log_joint\n1,0.1,3,-60.0\n2,0.2,3,-52.0\n")
            traced = sb.last_traced(Path(d))
        self.assertEqual(traced, {1: -52.0})
        g = sb.gap_stats(score, traced)
        self.assertEqual((g["gap_min"], g["gap_max"]), (-2.0, 1.0))
        score["resampled"] = ["alpha"]  # the trace is then at other hyperparameters
        self.assertEqual(sb.gap_stats(score, traced)["gap_min"], 1.0)

    def test_summary_fields(self):
        s = sb.summary_stats({"diagnostics": {"log_joint": {"rhat": 1.002},
                                              "n_clusters": {"rhat": 1.5}},
                              "chains": [{"n_clusters": 6, "sweeps": 1000},
                                         {"n_clusters": 7, "sweeps": 1000}]})
        self.assertEqual((s["rhat_log_joint"], s["rhat_k"]), (1.002, 1.5))
        self.assertEqual(s["chains_k"], "6 7")
        self.assertTrue(math.isnan(sb.summary_stats({})["rhat_k"]))

    def test_cluster_scores(self):
        t = np.array([0, 0, 1, 1, 2, 2])
        s = sb.cluster_scores(t, np.array([5, 5, 3, 3, 9, 9]))
        self.assertEqual((s["ari"], s["nmi"], s["k"]), (1.0, 1.0, 3))

    def test_memory_ratio(self):
        spec = sb.SetSpec("s", 2 ** 20, 8, 6, 8.0, 1)  # 64 MiB
        row = sb.set_row(spec, "nrmm")
        row["peak_rss_mb"] = 128.0
        self.assertAlmostEqual(sb.finish_row(row)["rss_over_data"], 2.0)
        self.assertIsNone(sb.json_ready(float("nan")))


def row(set_name, method, n=100_000, **kw):
    r = {f: "" for f in sb.FIELDS}
    r.update(set=set_name, method=method, n=n, status="ok", **kw)
    return r


class Goals(unittest.TestCase):
    def rows(self, nrmm_wall, ari, gap, nmi, rss):
        return [
            row("g20k-d3-k8", "nrmm", 20_000, wall_s=nrmm_wall),
            row("g20k-d3-k8", "bgmm", 20_000, wall_s=10.0),
            row("g1e6-d2-k6", "nrmm", 10 ** 6, wall_s=50.0, ari=ari, gap_pp_min=gap,
                rss_over_data=rss, data_mb=15.3),
            row("g1e5-d128-k80", "nrmm", wall_s=100.0, nmi=nmi, rss_over_data=rss,
                data_mb=97.7),
            row("g1e5-d128-k80", "bgmm", wall_s=200.0, nmi=0.9),
        ]

    def test_all_met(self):
        met = dict((g[0][:20], g[2]) for g in sb.goals(self.rows(5.0, 0.97, -0.005, 0.95, 2.5)))
        self.assertEqual(set(met.values()) - {"n/a"}, {"yes"})
        # No subcluster row: its goal is not measured rather than failed.
        self.assertIn("n/a", met.values())

    def test_each_goal_fails_on_its_own(self):
        for args in [(11.0, 0.97, -0.005, 0.95, 2.5), (5.0, 0.90, -0.005, 0.95, 2.5),
                     (5.0, 0.97, -0.02, 0.95, 2.5), (5.0, 0.97, -0.005, 0.85, 2.5),
                     (5.0, 0.97, -0.005, 0.95, 3.5)]:
            self.assertIn("no", [g[2] for g in sb.goals(self.rows(*args))], args)

    def test_memory_is_judged_on_large_sets_only(self):
        rows = self.rows(5.0, 0.97, -0.005, 0.95, 2.5)
        rows.append(row("small", "nrmm", wall_s=1.0, rss_over_data=20.0, data_mb=1.5))
        self.assertEqual(sb.goals(rows)[-1][2], "yes")

    def test_capped_run_does_not_meet_a_goal(self):
        rows = self.rows(5.0, 0.97, -0.005, 0.95, 2.5)
        rows[0]["status"] = "capped"
        first = sb.goals(rows)[0]
        self.assertEqual(first[2], "no")
        self.assertIn("capped", first[1])


class Report(unittest.TestCase):
    def test_merge_replaces_rows_of_the_same_set_and_method(self):
        old = [row("g1e6-d2-k6", "nrmm", wall_s="9"), row("g20k-d3-k8", "bgmm", wall_s="1")]
        new = [row("g1e6-d2-k6", "nrmm", wall_s=5.0), row("g20k-d3-k8", "nrmm", wall_s=2.0)]
        merged = sb.merge(old, new)
        self.assertEqual([(r["set"], r["method"]) for r in merged],
                         [("g20k-d3-k8", "nrmm"), ("g20k-d3-k8", "bgmm"),
                          ("g1e6-d2-k6", "nrmm")])
        self.assertEqual(merged[2]["wall_s"], 5.0)

    def test_table_round_trips_through_csv(self):
        rows = [sb.finish_row(row("g20k-d3-k8", "nrmm", 20_000, d=3, k_true=8, sep=8.0,
                                  data_mb=0.46, wall_s=3.21, fit_s=2.5, peak_rss_mb=30.0, ari=0.99,
                                  nmi=0.98, k=8, gap_pp_min=-0.001, gap_pp_max=0.002,
                                  rhat_log_joint=1.001, rhat_k=1.0))]
        with tempfile.TemporaryDirectory() as d:
            sb.save(Path(d), rows)
            back = sb.read_csv(Path(d) / "results.csv")
            json.loads((Path(d) / "results.json").read_text())
        self.assertEqual(sb.results_table(rows), sb.results_table(back))
        line = sb.results_table(back).splitlines()[2]
        self.assertIn("| 3.2 | 2.5 | 30 (65.2) | 0.990 | 0.980 | 8 | -0.0010 .. 0.0020 |", line)
        meta = {"date": "2026-01-01", "commit": "abc", "machine": "m", "command": "c",
                "cap_s": 60.0}
        self.assertIn("commit abc", sb.render(back, meta))


if __name__ == "__main__":
    unittest.main()
