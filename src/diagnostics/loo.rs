//! Predictive model comparison from posterior draws: the conditional predictive ordinates and
//! LPML (Geisser & Eddy 1979), WAIC (Watanabe 2010) and PSIS-LOO with its Pareto-k diagnostic
//! (Vehtari, Gelman & Gabry 2017; Vehtari, Simpson, Gelman, Yao & Gabry 2024).
//!
//! **Input.** A matrix `ℓ[s][i] = ln p(x_i | θ_s)` over draws `s` and points `i`, where given
//! `θ_s` the points' terms are the ones whose harmonic mean is the leave-one-out predictive:
//! `p(x_i | X_{-i}) = 1 / E[1 / p(x_i | θ) | X]`. For a collapsed mixture,
//! [`crate::diagnostics::ln_loo_predictives`] gives `p(x_i | X_{-i}, c_{-i}, h)`: the
//! predictive of point `i` given the partition of the others and the hyperparameters, which
//! satisfies that identity exactly (the posterior of `c_{-i}` is proportional to this term
//! times the posterior given `X_{-i}`).
//!
//! **Output** (all on the log scale, larger is better unless named an information criterion):
//! * `ln CPO_i = -ln (1/S) Σ_s exp(-ℓ[s][i])` and `LPML = Σ_i ln CPO_i`: the harmonic-mean
//!   estimate of the leave-one-out predictive, unbiased for `1 / CPO_i` but of infinite
//!   variance when the ratios' tail is heavy;
//! * PSIS-LOO: the same importance ratios `exp(-ℓ[s][i])` with their largest
//!   `min(S/5, 3 √S)` replaced by the quantiles of a generalised Pareto fitted to them
//!   (Zhang & Stephens 2009, with Vehtari et al.'s weak prior on its shape), giving
//!   `elpd_loo = Σ_i ln Σ_s w_s p_s / Σ_s w_s`; its shape `k̂_i` per point says whether the
//!   estimate of that point can be trusted (`k̂ ≤ 0.7`) or not;
//! * WAIC `= -2 (lppd - p_waic)`, `lppd = Σ_i ln (1/S) Σ_s exp(ℓ[s][i])`,
//!   `p_waic = Σ_i var_s ℓ[s][i]`: a second-order approximation of the same leave-one-out
//!   quantity, and the effective number of parameters.
//!
//! Two models of the same data are compared by `elpd_loo` (or LPML): the difference in units
//! of its standard error `√(n var_i elpd_i)` says whether one predicts held-out points better.

use crate::error::{Error, Result};
use crate::vecmath::log_sum_exp;

/// The shape above which PSIS-LOO's estimate of a point is unreliable (Vehtari et al. 2024:
/// above 0.7 the importance ratios' tail is too heavy for any sample size that can be run).
pub const PARETO_K_LIMIT: f64 = 0.7;

/// Predictive fit of a model from its posterior draws (see the module documentation).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PredictiveFit {
    /// Draws.
    pub draws: usize,
    /// Points.
    pub points: usize,
    /// `LPML = Σ_i ln CPO_i`.
    pub lpml: f64,
    /// PSIS-LOO's expected log predictive density `Σ_i elpd_i`.
    pub elpd_loo: f64,
    /// Its standard error `√(n var_i elpd_i)`.
    pub elpd_loo_se: f64,
    /// `lppd - elpd_loo`: the effective number of parameters by LOO.
    pub p_loo: f64,
    /// `-2 elpd_loo`.
    pub looic: f64,
    /// `lppd = Σ_i ln (1/S) Σ_s p_s(x_i)`: the fit to the data themselves.
    pub lppd: f64,
    /// WAIC's effective number of parameters `Σ_i var_s ℓ[s][i]`.
    pub p_waic: f64,
    /// `-2 (lppd - p_waic)`.
    pub waic: f64,
    /// Points whose `k̂` exceeds [`PARETO_K_LIMIT`].
    pub pareto_k_over_limit: usize,
    /// The largest `k̂`.
    pub max_pareto_k: f64,
    /// Per point `ln CPO_i`.
    pub ln_cpo: Vec<f64>,
    /// Per point PSIS-LOO's `elpd_i`.
    pub elpd_loo_pointwise: Vec<f64>,
    /// Per point `k̂_i`.
    pub pareto_k: Vec<f64>,
}

impl PredictiveFit {
    /// The fit in words: LPML, PSIS-LOO with its standard error and effective number of
    /// parameters, WAIC, and how many points' Pareto k exceed the limit.
    pub fn print(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        writeln!(
            out,
            "predictive fit over {} draws (leave-one-out, higher is better): LPML = {:.2}, \
             elpd_loo = {:.2} (se {:.2}, p_loo = {:.2}), WAIC = {:.2} (p_waic = {:.2}, lower \
             is better)",
            self.draws,
            self.lpml,
            self.elpd_loo,
            self.elpd_loo_se,
            self.p_loo,
            self.waic,
            self.p_waic
        )?;
        writeln!(
            out,
            "Pareto k: max {:.2}; {} of {} points above {PARETO_K_LIMIT}{}",
            self.max_pareto_k,
            self.pareto_k_over_limit,
            self.points,
            if self.pareto_k_over_limit > 0 {
                " (their leave-one-out estimates are unreliable: LPML and elpd_loo are \
                 optimistic there)"
            } else {
                ""
            }
        )
    }
}

/// The fit from `ln_lik[s][i]` (draws × points). Errors on no draws, no points, rows of
/// different lengths or a value that is not finite. Cost: O(S n log S).
pub fn predictive_fit(ln_lik: &[Vec<f64>]) -> Result<PredictiveFit> {
    let s = ln_lik.len();
    let n = ln_lik.first().map_or(0, Vec::len);
    if s == 0 || n == 0 {
        return Err(Error::Empty(
            "no draws or no points for a predictive fit".into(),
        ));
    }
    for (d, row) in ln_lik.iter().enumerate() {
        if row.len() != n {
            return Err(Error::DimensionMismatch(format!(
                "draw {d} has {} pointwise terms, draw 0 has {n}",
                row.len()
            )));
        }
        if let Some(i) = row.iter().position(|v| !v.is_finite()) {
            return Err(Error::Numerical(format!(
                "the log predictive of point {i} in draw {d} is {}",
                row[i]
            )));
        }
    }
    let ln_s = (s as f64).ln();
    let (mut ln_cpo, mut elpd, mut pareto_k) = (Vec::new(), Vec::new(), Vec::new());
    let (mut lppd, mut p_waic) = (0.0, 0.0);
    let mut column = Vec::with_capacity(s);
    for i in 0..n {
        column.clear();
        column.extend(ln_lik.iter().map(|row| row[i]));
        let negated: Vec<f64> = column.iter().map(|v| -v).collect();
        ln_cpo.push(ln_s - log_sum_exp(&negated));
        lppd += log_sum_exp(&column) - ln_s;
        let mean = column.iter().sum::<f64>() / s as f64;
        let var =
            column.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (s as f64 - 1.0).max(1.0);
        p_waic += var;
        let (weights, k) = psis_smooth(&negated);
        let joint: Vec<f64> = weights.iter().zip(&column).map(|(w, l)| w + l).collect();
        elpd.push(log_sum_exp(&joint) - log_sum_exp(&weights));
        pareto_k.push(k);
    }
    let elpd_loo: f64 = elpd.iter().sum();
    let mean = elpd_loo / n as f64;
    let var = elpd.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / (n as f64 - 1.0).max(1.0);
    Ok(PredictiveFit {
        draws: s,
        points: n,
        lpml: ln_cpo.iter().sum(),
        elpd_loo,
        elpd_loo_se: (n as f64 * var).sqrt(),
        p_loo: lppd - elpd_loo,
        looic: -2.0 * elpd_loo,
        lppd,
        p_waic,
        waic: -2.0 * (lppd - p_waic),
        pareto_k_over_limit: pareto_k.iter().filter(|&&k| k > PARETO_K_LIMIT).count(),
        max_pareto_k: pareto_k.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        ln_cpo,
        elpd_loo_pointwise: elpd,
        pareto_k,
    })
}

/// Pareto-smoothed importance sampling of one point (Vehtari et al. 2024, §3): the log
/// ratios `ln_ratios` with their largest `M = ⌈min(S/5, 3 √S)⌉` replaced by the expected
/// order statistics of a generalised Pareto fitted to them above the next largest, capped at
/// the largest raw ratio; returns the smoothed log weights (shifted so the largest raw one is
/// 0) and the fitted shape `k̂`. With fewer than 5 tail draws, or a tail whose fit fails
/// (mostly tied with the threshold), nothing is smoothed and `k̂` is infinite (nothing to
/// judge by: not to be trusted); a tail of equal ratios has `k̂ = 0` (no tail at all).
/// Cost: O(S log S).
pub fn psis_smooth(ln_ratios: &[f64]) -> (Vec<f64>, f64) {
    let s = ln_ratios.len();
    let top = ln_ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut lw: Vec<f64> = ln_ratios.iter().map(|v| v - top).collect();
    let m = (0.2 * s as f64).min(3.0 * (s as f64).sqrt()).ceil() as usize;
    if m < 5 || s <= m {
        return (lw, f64::INFINITY);
    }
    let mut order: Vec<usize> = (0..s).collect();
    order.sort_by(|&a, &b| lw[a].total_cmp(&lw[b]));
    let tail = &order[s - m..];
    let cutoff = lw[order[s - m - 1]];
    let exp_cutoff = cutoff.exp();
    let excess: Vec<f64> = tail.iter().map(|&d| lw[d].exp() - exp_cutoff).collect();
    if excess[m - 1] <= 0.0 {
        return (lw, 0.0);
    }
    let (k, sigma) = gpd_fit(&excess);
    if !(k.is_finite() && sigma.is_finite()) {
        // The fit failed: most of the tail ties with the threshold (ratios taking a few
        // values), so no Pareto tail can be judged; the point is not to be trusted.
        return (lw, f64::INFINITY);
    }
    for (j, &d) in tail.iter().enumerate() {
        let p = (j as f64 + 0.5) / m as f64;
        let q = if k.abs() < 1e-12 {
            -sigma * (-p).ln_1p()
        } else {
            sigma * (-k * (-p).ln_1p()).exp_m1() / k
        };
        // Capped at the largest raw ratio, which after the shift is e⁰.
        lw[d] = (q + exp_cutoff).ln().min(0.0);
    }
    (lw, k)
}

/// The generalised Pareto's shape `k` and scale `σ` fitted to the positive values `x`
/// (sorted ascending) by Zhang & Stephens (2009), with the weakly informative prior on `k` of
/// Vehtari et al. (2024): `k ← (n k + 5) / (n + 10)`. Cost: O(n √n).
fn gpd_fit(x: &[f64]) -> (f64, f64) {
    let n = x.len();
    let prior = 3.0;
    let m = 30 + (n as f64).sqrt() as usize;
    let quartile = x[((n as f64) / 4.0 + 0.5) as usize - 1];
    let bs: Vec<f64> = (1..=m)
        .map(|j| {
            let b = 1.0 - (m as f64 / (j as f64 - 0.5)).sqrt();
            b / (prior * quartile) + 1.0 / x[n - 1]
        })
        .collect();
    let ks: Vec<f64> = bs
        .iter()
        .map(|&b| x.iter().map(|&v| (-b * v).ln_1p()).sum::<f64>() / n as f64)
        .collect();
    let ln_l: Vec<f64> = bs
        .iter()
        .zip(&ks)
        .map(|(&b, &k)| n as f64 * ((-b / k).ln() - k - 1.0))
        .collect();
    // Posterior weights of the grid: w_j = 1 / Σ_i exp(L_i - L_j).
    let weights: Vec<f64> = ln_l
        .iter()
        .map(|&lj| 1.0 / ln_l.iter().map(|&li| (li - lj).exp()).sum::<f64>())
        .collect();
    let total: f64 = weights.iter().sum();
    let b: f64 = bs.iter().zip(&weights).map(|(b, w)| b * w).sum::<f64>() / total;
    let k = x.iter().map(|&v| (-b * v).ln_1p()).sum::<f64>() / n as f64;
    let sigma = -k / b;
    ((n as f64 * k + 10.0 * 0.5) / (n as f64 + 10.0), sigma)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{uniform_open01, SeedPlan};

    /// Equal terms in every draw: CPO, LOO and the data's own fit agree, WAIC has no
    /// effective parameters, and nothing is smoothed.
    #[test]
    fn constant_draws_agree_everywhere() {
        let rows = vec![vec![-1.0, -2.5, -0.3]; 50];
        let fit = predictive_fit(&rows).unwrap();
        assert!((fit.lpml - -3.8).abs() < 1e-12);
        assert!((fit.elpd_loo - -3.8).abs() < 1e-12);
        assert!((fit.lppd - -3.8).abs() < 1e-12);
        assert!(fit.p_waic.abs() < 1e-12 && fit.p_loo.abs() < 1e-12);
        assert!(fit.pareto_k.iter().all(|&k| k == 0.0));
    }

    /// The fitted shape recovers a generalised Pareto's: ratios `(1 - u)^(-k)`, whose
    /// excesses above any threshold are Pareto with shape `k`. With 4,000 draws the tail has
    /// 190 and the estimate's standard deviation is about `(1 + k)/√190` ≈ 0.07 (1 + k); the
    /// bound is four of those.
    #[test]
    fn pareto_shapes_are_recovered() {
        for &k in &[0.2, 0.5, 0.9] {
            let mut rng = SeedPlan::new(7).chain(0);
            let ln_ratios: Vec<f64> = (0..4000)
                .map(|_| -k * (1.0 - uniform_open01(&mut rng)).ln())
                .collect();
            let (_, khat) = psis_smooth(&ln_ratios);
            assert!((khat - k).abs() < 0.3 * (1.0 + k), "k = {k}, k̂ = {khat}");
        }
    }

    /// Ratios taking a few values, ties at the tail's threshold included, give a number or
    /// infinity, never NaN.
    #[test]
    fn tied_ratios_give_no_nan() {
        for (low, high) in [(90, 10), (70, 30), (99, 1), (50, 50)] {
            let mut ln_ratios = vec![0.0; low];
            ln_ratios.extend(vec![3.0; high]);
            let (weights, k) = psis_smooth(&ln_ratios);
            assert!(!k.is_nan(), "{low}/{high}: k = {k}");
            assert!(weights.iter().all(|w| !w.is_nan()), "{low}/{high}");
        }
    }

    #[test]
    fn bad_input_is_refused() {
        assert!(predictive_fit(&[]).is_err());
        assert!(predictive_fit(&[vec![]]).is_err());
        assert!(predictive_fit(&[vec![0.0, 1.0], vec![0.0]]).is_err());
        assert!(predictive_fit(&[vec![f64::NAN]]).is_err());
        assert!(predictive_fit(&[vec![f64::NEG_INFINITY]]).is_err());
    }
}
