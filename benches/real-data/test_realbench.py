"""Checks of the benchmark's own arithmetic (seconds; no nrmm, no shared data):
`python -m unittest discover -s benches/real-data` with the benchmark's environment."""

import json
import math
import tempfile
import unittest
from pathlib import Path

import numpy as np
from scipy.stats import multivariate_normal

import realbench as rb


class Idx(unittest.TestCase):
    def test_round_trip_and_bad_magic(self):
        with tempfile.TemporaryDirectory() as d:
            f = Path(d) / "x.idx"
            img = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
            f.write_bytes(bytes([0, 0, 8, 3]) + b"".join(n.to_bytes(4, "big") for n in img.shape)
                          + img.tobytes())
            np.testing.assert_array_equal(rb.read_idx(f), img)
            f.write_bytes(bytes([0, 0, 9, 1, 0, 0, 0, 1, 0]))  # signed bytes: not ours
            with self.assertRaises(ValueError):
                rb.read_idx(f)
            f.write_bytes(bytes([0, 0, 8, 1, 0, 0, 0, 5, 1, 2]))  # 2 bytes where 5 are announced
            with self.assertRaises(ValueError):
                rb.read_idx(f)


class Jacobian(unittest.TestCase):
    def test_standardized_density_converts_back_exactly(self):
        # An affine-equivariant fit (the Gaussian MLE) on x and on its z-scores: the densities
        # differ by exactly the constant that the report subtracts.
        rng = np.random.default_rng(1)
        x = rng.normal(size=(200, 3)) * [100.0, 0.1, 3.0] + [5.0, -2.0, 0.0]
        z, jac = rb.standardize(x)
        lx = multivariate_normal(x.mean(0), np.cov(x.T)).logpdf(x)
        lz = multivariate_normal(z.mean(0), np.cov(z.T)).logpdf(z)
        np.testing.assert_allclose(lz - jac, lx, rtol=0, atol=1e-9)
        self.assertAlmostEqual(jac, math.log(100.0) + math.log(0.1) + math.log(3.0), delta=0.3)

    def test_constant_column_refused(self):
        with self.assertRaises(ValueError):
            rb.standardize(np.array([[1.0, 2.0], [1.0, 3.0]]))


class Tables(unittest.TestCase):
    def test_nrmm_runs_on_its_defaults_but_the_sweep_count(self):
        cmd = rb.nrmm_run_command("nrmm", Path("t.txt"), Path("o"), None)
        self.assertEqual(cmd, ["nrmm", "run", "--data", "t.txt", "--out", "o"])
        cmd = rb.nrmm_run_command("nrmm", Path("t.txt"), Path("o"), 200)
        self.assertEqual(cmd[-2:], ["--sweeps", "200"])
        self.assertNotIn("--seconds", cmd)

    def test_k_marks_saturation(self):
        self.assertEqual(rb.k_label(30, json.dumps({"n_components": 30})), "30 (all)")
        self.assertEqual(rb.k_label(7, json.dumps({"n_components": 30})), "7")
        self.assertEqual(rb.k_label(15, json.dumps({"bic_k_at_edge": True})), "15 (grid edge)")
        self.assertEqual(rb.k_label(3, ""), "3")

    def rows(self, nrmm_lpd, nrmm_ari):
        out = []
        for m, lpd, ari in [("nrmm", nrmm_lpd, nrmm_ari), ("bgmm-full", -2.0, 0.70),
                            ("bgmm-diag", -3.0, 0.50), ("gmm-bic", -2.5, 0.60)]:
            for part, fold in [("fold", 0), ("fold", 1), ("all", "")]:
                out.append({"set": "s", "units": "original", "n": 10, "d": 2, "part": part,
                            "fold": fold, "method": m, "lpd": str(lpd) if part == "fold" else "",
                            "ln_jacobian": "0", "k": 2, "ari": str(ari) if part == "all" else "",
                            "nmi": "0.5", "wall_s": "1", "nrmm_sweeps": "", "detail": "",
                            "error": ""})
        return out

    def test_goal_met_only_at_or_above_the_peers(self):
        met = rb.goal_table(rb.summarize(self.rows(-2.0, 0.681)), ["s"])
        self.assertIn("| yes |", met)
        self.assertIn("| 0.000 | bgmm-full |", met)
        low_density = rb.goal_table(rb.summarize(self.rows(-2.001, 0.9)), ["s"])
        self.assertIn("| no |", low_density)
        low_ari = rb.goal_table(rb.summarize(self.rows(-1.0, 0.679)), ["s"])
        self.assertIn("| no |", low_ari)


class SyntheticSet(unittest.TestCase):
    def test_six_separated_clusters_in_50_dimensions(self):
        # Made here, not read: the same draw every time, its clusters far apart against their
        # spread (the set's point: an answer no method can miss by the data alone).
        sets, skipped = rb.load_sets(["gauss6_50d"])
        self.assertEqual(skipped, [])
        (ds,) = sets
        self.assertEqual(ds.x.shape, (1000, 50))
        self.assertEqual(sorted(set(ds.y.tolist())), list(range(6)))
        again, _ = rb.six_clusters_50d()
        np.testing.assert_array_equal(again, ds.x)
        centres = np.array([ds.x[ds.y == k].mean(0) for k in range(6)])
        gaps = [np.linalg.norm(a - b) for i, a in enumerate(centres) for b in centres[i + 1:]]
        spread = np.sqrt(((ds.x - centres[ds.y]) ** 2).sum(1)).mean()
        self.assertGreater(min(gaps), 3 * spread)


if __name__ == "__main__":
    unittest.main()
