//! The product kernel's per-count terms, tabulated: the parts of `ln m` and of the predictive
//! that depend on a set's integer counts alone, at the kernel's hyperparameters.
//!
//! A set of points has integer weights, so the `ln Γ` and `ln` of a column's terms take at
//! most `N + 1` arguments (a count column's `ln Γ(a + Σx)`: its column total). Each entry is
//! the value the formula computes at that count, bit for bit (the same expression, evaluated
//! in the same order), so a lookup changes no result; a weight that is not an integer or lies
//! past the table (SVA's soft statistics, a new row's count above the data's) falls back to
//! the formula. The tables are rebuilt with the kernel, at each change of its hyperparameters.
//!
//! Cost to build: O(N) `ln Γ` and `ln` per column (plus a count column's total), at most
//! [`MAX_COUNT_TOTAL`] entries for a count column's sums.

use super::{Hyper, Part, COUNT_SHAPE, LN_PI};
use crate::math::ln_gamma;

/// The most entries of a count column's `ln Γ(a + m)` table; larger sums use the formula.
pub(super) const MAX_COUNT_TOTAL: usize = 1 << 16;

/// The tabulated terms at one value of the hyperparameters (see the module documentation).
#[derive(Debug, Default)]
pub(super) struct Terms {
    /// Real columns' `ln m`, by `n`: `-n/2 ln π - ½ ln(1 + n/r) + ln Γ((ν+n)/2) - ln Γ(ν/2)`.
    real_m: Vec<f64>,
    /// Real column `k`'s `½ ν ln ψ_k`.
    real_psi: Vec<f64>,
    /// Real columns' predictive, by `n`: `-½ ln π - ½ ln(1 + 1/(r+n))` plus the Student t's
    /// `ln Γ` ratio.
    real_p: Vec<f64>,
    /// A level's `ln Γ(β + c) - ln Γ(β)`, by count `c`.
    level_m: Vec<f64>,
    /// A level's `ln(β + c)`, by count `c`.
    level_p: Vec<f64>,
    /// Discrete column `k`'s `ln Γ(Lβ) - ln Γ(Lβ + n)`, by `n`.
    seen_m: Vec<Vec<f64>>,
    /// Discrete column `k`'s `ln(Lβ + n)`, by `n`.
    seen_p: Vec<Vec<f64>>,
    /// Count column `k`'s `a ln b - ln Γ(a)`.
    count_m: Vec<f64>,
    /// Count column `k`'s `ln(b + n)`, by `n`.
    count_ln_b: Vec<Vec<f64>>,
    /// Count column `k`'s `ln(b_n / (b_n + 1))` with `b_n = b + n`, by `n`.
    count_ln_ratio: Vec<Vec<f64>>,
    /// Count column `k`'s `ln(b_n + 1)`, by `n`.
    count_ln_b1: Vec<Vec<f64>>,
    /// `ln Γ(a + m)`, by `m`.
    shape_lg: Vec<f64>,
    /// `ln Γ(v + 1)`, by `v`.
    fact_lg: Vec<f64>,
}

/// The entry of `table` at `x` when `x` is a whole number within it.
#[inline]
pub(super) fn at(table: &[f64], x: f64) -> Option<f64> {
    // The cast truncates (and saturates), so the round trip is exact only for whole `x ≥ 0`;
    // cheaper than `fract`, a library call.
    let i = x as usize;
    if i as f64 == x {
        table.get(i).copied()
    } else {
        None
    }
}

impl Terms {
    /// The tables for `n` points at hyperparameters `h`: `parts` the columns, `psi` the real
    /// columns' `ψ` (`s ψ⁰`), `count_b` the count columns' rates, `t_ratio` the Student t's
    /// `ln Γ` ratio by `n`, `count_top` the largest sum of a count column (its observed total
    /// plus its largest value). Cost: see the module documentation.
    pub(super) fn new(
        n: usize,
        h: Hyper,
        parts: &[Part],
        psi: &[f64],
        count_b: &[f64],
        t_ratio: &[f64],
        count_top: usize,
    ) -> Self {
        let counts = || (0..=n).map(|m| m as f64);
        let real_m = counts()
            .map(|n| {
                -0.5 * n * LN_PI - 0.5 * (n / h.r).ln_1p() + ln_gamma(0.5 * (h.nu + n))
                    - ln_gamma(0.5 * h.nu)
            })
            .collect();
        let real_psi = psi.iter().map(|&p| 0.5 * h.nu * p.ln()).collect();
        let real_p = counts()
            .zip(t_ratio)
            .map(|(n, &ratio)| {
                let r_n = h.r + n;
                -0.5 * LN_PI - 0.5 * (1.0 / r_n).ln_1p() + ratio
            })
            .collect();
        let level_m = counts()
            .map(|c| ln_gamma(h.beta + c) - ln_gamma(h.beta))
            .collect();
        let level_p = counts().map(|c| (h.beta + c).ln()).collect();
        let mut seen_m = Vec::new();
        let mut seen_p = Vec::new();
        for p in parts {
            if let &Part::Discrete { levels, .. } = p {
                let l = levels as f64;
                seen_m.push(
                    counts()
                        .map(|n| ln_gamma(l * h.beta) - ln_gamma(l * h.beta + n))
                        .collect(),
                );
                seen_p.push(counts().map(|n| (l * h.beta + n).ln()).collect());
            }
        }
        let a = COUNT_SHAPE;
        let count_m = count_b.iter().map(|&b| a * b.ln() - ln_gamma(a)).collect();
        let per_count = |f: &dyn Fn(f64) -> f64| -> Vec<Vec<f64>> {
            count_b
                .iter()
                .map(|&b| counts().map(|n| f(b + n)).collect())
                .collect()
        };
        let count_ln_b = per_count(&|b| b.ln());
        let count_ln_ratio = per_count(&|b| (b / (b + 1.0)).ln());
        let count_ln_b1 = per_count(&|b| (b + 1.0).ln());
        let (shape_lg, fact_lg) = if count_b.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            let top = count_top.min(MAX_COUNT_TOTAL);
            (
                (0..=top).map(|m| ln_gamma(a + m as f64)).collect(),
                (0..=top).map(|v| ln_gamma(v as f64 + 1.0)).collect(),
            )
        };
        Terms {
            real_m,
            real_psi,
            real_p,
            level_m,
            level_p,
            seen_m,
            seen_p,
            count_m,
            count_ln_b,
            count_ln_ratio,
            count_ln_b1,
            shape_lg,
            fact_lg,
        }
    }

    /// The real columns' `ln m` term at `n` points.
    #[inline]
    pub(super) fn real_m(&self, n: f64) -> Option<f64> {
        at(&self.real_m, n)
    }

    /// Real column `k`'s `½ ν ln ψ_k`.
    #[inline]
    pub(super) fn real_psi(&self, k: usize) -> f64 {
        self.real_psi[k]
    }

    /// The real columns' predictive term at `n` points.
    #[inline]
    pub(super) fn real_p(&self, n: f64) -> Option<f64> {
        at(&self.real_p, n)
    }

    /// A level's `ln Γ(β + c) - ln Γ(β)`.
    #[inline]
    pub(super) fn level_m(&self, c: f64) -> Option<f64> {
        at(&self.level_m, c)
    }

    /// A level's `ln(β + c)`.
    #[inline]
    pub(super) fn level_p(&self, c: f64) -> Option<f64> {
        at(&self.level_p, c)
    }

    /// Discrete column `k`'s `ln Γ(Lβ) - ln Γ(Lβ + n)`.
    #[inline]
    pub(super) fn seen_m(&self, k: usize, n: f64) -> Option<f64> {
        at(&self.seen_m[k], n)
    }

    /// Discrete column `k`'s `ln(Lβ + n)`.
    #[inline]
    pub(super) fn seen_p(&self, k: usize, n: f64) -> Option<f64> {
        at(&self.seen_p[k], n)
    }

    /// Count column `k`'s `a ln b - ln Γ(a)`.
    #[inline]
    pub(super) fn count_m(&self, k: usize) -> f64 {
        self.count_m[k]
    }

    /// Count column `k`'s `ln(b + n)`.
    #[inline]
    pub(super) fn count_ln_b(&self, k: usize, n: f64) -> Option<f64> {
        at(&self.count_ln_b[k], n)
    }

    /// Count column `k`'s `ln(b_n / (b_n + 1))` and `ln(b_n + 1)`.
    #[inline]
    pub(super) fn count_p(&self, k: usize, n: f64) -> Option<(f64, f64)> {
        Some((
            at(&self.count_ln_ratio[k], n)?,
            at(&self.count_ln_b1[k], n)?,
        ))
    }

    /// `ln Γ(a + m)`. For whole `m` and `v`, `(a + m) + v` is `a + (m + v)` exactly (`a` is
    /// a whole number), so the entry at `m + v` is `ln Γ(a + m + v)` as the formula sums it.
    #[inline]
    pub(super) fn shape_lg(&self, m: f64) -> Option<f64> {
        at(&self.shape_lg, m)
    }

    /// `ln Γ(v + 1)`.
    #[inline]
    pub(super) fn fact_lg(&self, v: f64) -> Option<f64> {
        at(&self.fact_lg, v)
    }
}
