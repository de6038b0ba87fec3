"""The mixing benchmark's own arithmetic: standardizing, and a row from a summary."""
import unittest

import mixbench


def summary(rhat_lj, rhat_k, ess_lj, ess_k, seconds):
    return {
        "chains": [{"seconds": s, "sweeps": 1000} for s in seconds],
        "diagnostics": {
            "log_joint": {"rhat": rhat_lj, "ess_bulk": ess_lj, "mean": -10.0},
            "n_clusters": {"rhat": rhat_k, "ess_bulk": ess_k, "mean": 3.0},
        },
    }


class MixbenchTest(unittest.TestCase):
    def test_standardized_columns_have_mean_zero_and_unit_sd(self):
        rows = mixbench.standardized([[1.0, 10.0], [3.0, 30.0], [5.0, 20.0]])
        for j in range(2):
            col = [r[j] for r in rows]
            self.assertAlmostEqual(sum(col) / 3, 0.0)
            self.assertAlmostEqual(sum(v * v for v in col) / 3, 1.0)

    def test_a_constant_column_is_refused(self):
        with self.assertRaises(ValueError):
            mixbench.standardized([[1.0, 2.0], [1.0, 3.0]])

    def test_agreement_needs_both_rhats_and_both_esses(self):
        ok = mixbench.row_of(summary(1.005, 1.0, 500, 450, [1.0, 1.0]), "s", "gibbs", 3.0)
        self.assertTrue(ok["agreed"])
        self.assertEqual(ok["cpu_s"], 2.0)
        self.assertEqual(ok["ess_per_cpu_s"], 225.0)
        for bad in [summary(1.02, 1.0, 500, 450, [1.0]), summary(1.0, 1.02, 500, 450, [1.0]),
                    summary(1.0, 1.0, 399, 450, [1.0]), summary(1.0, 1.0, 500, 399, [1.0])]:
            self.assertFalse(mixbench.row_of(bad, "s", "gibbs", 1.0)["agreed"])

    def test_rows_read_text_with_a_header(self):
        import tempfile
        from pathlib import Path
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "x.txt"
            p.write_text("a,b\n1,2\n3,4\n")
            self.assertEqual(mixbench.read_rows(p), [[1.0, 2.0], [3.0, 4.0]])


if __name__ == "__main__":
    unittest.main()
