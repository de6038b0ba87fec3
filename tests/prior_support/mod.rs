//! Shared helpers of the prior tests: integer partitions with their set-partition counts,
//! a numerically integrated CDF on a grid with its inverse, and the Kolmogorov–Smirnov test.

#![allow(dead_code)]

use nrmm::math::ln_gamma;

/// Every integer partition of `n` (sizes in non-increasing order) with the natural log of the
/// number of set partitions of `[n]` having those block sizes: `n! / (Π s_j! Π m_j!)`, where
/// `m_j` counts the blocks of each distinct size.
pub fn integer_partitions(n: usize) -> Vec<(Vec<usize>, f64)> {
    fn rec(rest: usize, max: usize, cur: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if rest == 0 {
            out.push(cur.clone());
            return;
        }
        for s in (1..=rest.min(max)).rev() {
            cur.push(s);
            rec(rest - s, s, cur, out);
            cur.pop();
        }
    }
    let mut parts = Vec::new();
    rec(n, n, &mut Vec::new(), &mut parts);
    parts
        .into_iter()
        .map(|p| {
            let mut ln_count = ln_gamma(n as f64 + 1.0);
            for &s in &p {
                ln_count -= ln_gamma(s as f64 + 1.0);
            }
            let mut i = 0;
            while i < p.len() {
                let j = p[i..].iter().take_while(|&&s| s == p[i]).count();
                ln_count -= ln_gamma(j as f64 + 1.0);
                i += j;
            }
            (p, ln_count)
        })
        .collect()
}

/// A CDF tabulated on a uniform grid by the trapezoidal rule on a log density, normalised,
/// with linear interpolation both ways (so draws by [`GridCdf::inverse`] are exact draws from
/// the piecewise-linear CDF, which differs from the true one by O(h²)).
pub struct GridCdf {
    x: Vec<f64>,
    cdf: Vec<f64>,
}

impl GridCdf {
    /// Tabulates `exp(ln_f)` on `m` intervals of `[lo, hi]`. Panics (a test-setup error) if the
    /// density at either end is not negligible: more than `e^{-30}` of its maximum, so the grid
    /// must cover the mass.
    pub fn from_ln_density(lo: f64, hi: f64, m: usize, ln_f: impl Fn(f64) -> f64) -> Self {
        Self::build(lo, hi, m, ln_f, true)
    }

    /// As [`GridCdf::from_ln_density`] for a density supported exactly on `[lo, hi]` (no
    /// check that it vanishes at the ends).
    pub fn from_ln_density_on(lo: f64, hi: f64, m: usize, ln_f: impl Fn(f64) -> f64) -> Self {
        Self::build(lo, hi, m, ln_f, false)
    }

    fn build(lo: f64, hi: f64, m: usize, ln_f: impl Fn(f64) -> f64, check_ends: bool) -> Self {
        let h = (hi - lo) / m as f64;
        let x: Vec<f64> = (0..=m).map(|i| lo + i as f64 * h).collect();
        let lf: Vec<f64> = x.iter().map(|&x| ln_f(x)).collect();
        let max = lf.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        assert!(max.is_finite(), "density has no finite maximum on the grid");
        if check_ends {
            assert!(
                lf[0] - max < -30.0 && lf[m] - max < -30.0,
                "grid [{lo}, {hi}] does not cover the mass: ends at {} and {} below the peak",
                max - lf[0],
                max - lf[m]
            );
        }
        let f: Vec<f64> = lf.iter().map(|&v| (v - max).exp()).collect();
        let mut cdf = vec![0.0; m + 1];
        for i in 1..=m {
            cdf[i] = cdf[i - 1] + 0.5 * h * (f[i - 1] + f[i]);
        }
        let total = cdf[m];
        for c in &mut cdf {
            *c /= total;
        }
        GridCdf { x, cdf }
    }

    /// The CDF at `x` (0 below the grid, 1 above).
    pub fn cdf(&self, x: f64) -> f64 {
        let m = self.x.len() - 1;
        if x <= self.x[0] {
            return 0.0;
        }
        if x >= self.x[m] {
            return 1.0;
        }
        let h = self.x[1] - self.x[0];
        let i = (((x - self.x[0]) / h).floor() as usize).min(m - 1);
        let t = (x - self.x[i]) / h;
        self.cdf[i] + t * (self.cdf[i + 1] - self.cdf[i])
    }

    /// The quantile at `p ∈ (0, 1)`.
    pub fn inverse(&self, p: f64) -> f64 {
        let i = self
            .cdf
            .partition_point(|&c| c < p)
            .clamp(1, self.cdf.len() - 1);
        let (c0, c1) = (self.cdf[i - 1], self.cdf[i]);
        let t = if c1 > c0 { (p - c0) / (c1 - c0) } else { 0.5 };
        self.x[i - 1] + t * (self.x[i] - self.x[i - 1])
    }

    /// The mean of the tabulated law.
    pub fn mean(&self) -> f64 {
        self.x
            .windows(2)
            .zip(self.cdf.windows(2))
            .map(|(x, c)| 0.5 * (x[0] + x[1]) * (c[1] - c[0]))
            .sum()
    }
}

/// The two-sided Kolmogorov–Smirnov statistic `sup |F_n - F|` of `samples` against `cdf`.
pub fn ks_statistic(samples: &[f64], cdf: impl Fn(f64) -> f64) -> f64 {
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len() as f64;
    s.iter()
        .enumerate()
        .map(|(i, &x)| {
            let f = cdf(x);
            (f - i as f64 / n).max((i as f64 + 1.0) / n - f)
        })
        .fold(0.0, f64::max)
}

/// The asymptotic critical value of the KS statistic for `n` samples at level 0.001:
/// `sqrt(-ln(0.001/2)/2) / sqrt(n) ≈ 1.949 / sqrt(n)`.
pub fn ks_critical_001(n: usize) -> f64 {
    (-(0.0005f64).ln() / 2.0).sqrt() / (n as f64).sqrt()
}
