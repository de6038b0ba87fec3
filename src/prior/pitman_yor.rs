//! The Pitman-Yor process PY(σ, θ) (Pitman & Yor 1997), a Gibbs-type prior (Gnedin & Pitman
//! 2006): `p(Π) = V(n, K) Π_c (1-σ)_{n_c - 1}` with
//! `V(n, K) = Π_{i=1}^{K-1} (θ + iσ) / (θ + 1)_{n-1}`, for `0 ≤ σ < 1` and `θ > -σ`
//! (`σ = 0` is the DP with mass `θ`).
//!
//! As an [`NrmPrior`]: `κ(n) = (1-σ)_{n-1}` (so joining a cluster of size `n` weighs `n - σ`
//! and a new cluster `1`), the constant `-ln (θ+1)_{n-1}`, and `V`'s numerator through
//! [`NrmPrior::ln_v_k`] and [`NrmPrior::ln_new_shift`] (`ln(θ + kσ)`). `θ` and `σ` are fixed
//! or have a Gamma and a truncated Beta prior, each resampled by slice sampling its exact
//! conditional given the partition.

use super::hyper::{check_positive, BetaPrior, GammaPrior};
use super::numeric::ln_rising;
use super::slice::SliceSampler;
use super::{block_counts, NrmPrior, PriorHyper};
use crate::error::{Error, Result};
use crate::rng::NrmmRng;

/// Slice width on `ln θ`.
pub const THETA_SLICE_WIDTH: f64 = 1.0;
/// Slice width on `σ` (as the NGGP's).
pub const SIGMA_SLICE_WIDTH: f64 = super::nggp::SIGMA_SLICE_WIDTH;
/// Stepping-out budget of both slice samplers.
pub const SLICE_MAX_STEPS: usize = super::nggp::SLICE_MAX_STEPS;

/// Which Pitman-Yor hyperparameters are resampled, and under which priors.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PyHyperPriors {
    /// Prior on `θ` (then `θ > 0`); `None` holds `θ` fixed.
    pub theta: Option<GammaPrior>,
    /// Prior on `σ` (a Beta law truncated to `[lo, hi]`); `None` holds `σ` fixed.
    pub sigma: Option<BetaPrior>,
}

impl PyHyperPriors {
    /// Both held fixed.
    pub fn fixed() -> Self {
        PyHyperPriors {
            theta: None,
            sigma: None,
        }
    }

    /// The defaults of `hyperpriors`, as the NGGP's (MATH §1.6): `θ ~ Gamma(1, 1)`,
    /// `σ ~ Beta(1.5, 1.5)` on `[0.01, 0.99]`.
    pub fn reference() -> Self {
        PyHyperPriors {
            theta: Some(GammaPrior::reference()),
            sigma: Some(BetaPrior::reference()),
        }
    }
}

/// The Pitman-Yor prior with concentration `θ` and discount `σ`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PitmanYor {
    theta: f64,
    sigma: f64,
    hyper: PyHyperPriors,
}

impl PitmanYor {
    /// PY(σ, θ) with the given hyperpriors: `0 ≤ σ < 1`, `θ > -σ`, both finite; with a prior
    /// on `θ`, `θ > 0`; with a prior on `σ`, `σ` in its support and `θ > -lo`.
    pub fn new(theta: f64, sigma: f64, hyper: PyHyperPriors) -> Result<Self> {
        let mut p = PitmanYor {
            theta: 1.0,
            sigma: 0.0,
            hyper,
        };
        p.set_sigma(sigma)?;
        p.set_theta(theta)?;
        Ok(p)
    }

    /// PY(σ, θ) with both held fixed.
    pub fn fixed(theta: f64, sigma: f64) -> Result<Self> {
        PitmanYor::new(theta, sigma, PyHyperPriors::fixed())
    }

    /// The concentration `θ`.
    pub fn theta(&self) -> f64 {
        self.theta
    }

    /// The discount `σ`.
    pub fn sigma(&self) -> f64 {
        self.sigma
    }

    /// The hyperpriors.
    pub fn hyper(&self) -> &PyHyperPriors {
        &self.hyper
    }

    /// Sets `θ`: finite, `> -σ` (and `> -lo` when `σ` has a prior so that every `σ` it may
    /// take is valid), `> 0` when `θ` has a prior.
    pub fn set_theta(&mut self, theta: f64) -> Result<()> {
        if self.hyper.theta.is_some() {
            check_positive("alpha", theta)?;
        }
        let floor = self.hyper.sigma.map_or(self.sigma, |s| s.lo());
        if !(theta.is_finite() && theta > -floor) {
            return Err(Error::param(
                "alpha",
                theta,
                &format!("a finite number above -sigma = {}", -floor),
            ));
        }
        self.theta = theta;
        Ok(())
    }

    /// Sets `σ`: in `[0, 1)` with `θ > -σ`, and in its prior's support if it has one.
    pub fn set_sigma(&mut self, sigma: f64) -> Result<()> {
        if !(0.0..1.0).contains(&sigma) {
            return Err(Error::param("sigma", sigma, "a number in [0, 1)"));
        }
        if let Some(prior) = &self.hyper.sigma {
            if !prior.contains(sigma) {
                return Err(Error::param(
                    "sigma",
                    sigma,
                    &format!(
                        "a value in the support [{}, {}] of its prior",
                        prior.lo(),
                        prior.hi()
                    ),
                ));
            }
        }
        if self.theta <= -sigma {
            return Err(Error::param(
                "sigma",
                sigma,
                &format!("a value above -alpha = {}", -self.theta),
            ));
        }
        self.sigma = sigma;
        Ok(())
    }

    /// `ln Π_{i=1}^{k-1} (θ + iσ)`, as `(k-1) ln σ + ln (θ/σ + 1)_{k-1}` for `σ > 0` (no
    /// cancellation), `(k-1) ln θ` for `σ = 0`. Cost: O(1).
    pub(crate) fn ln_numerator(theta: f64, sigma: f64, k: usize) -> f64 {
        if k <= 1 {
            return 0.0;
        }
        let m = (k - 1) as f64;
        if sigma == 0.0 {
            m * theta.ln()
        } else {
            m * sigma.ln() + ln_rising(theta / sigma + 1.0, k - 1)
        }
    }

    /// `ln V(n, k) = ln Π_{i=1}^{k-1}(θ + iσ) - ln (θ+1)_{n-1}` at any `(θ, σ)`.
    pub(crate) fn ln_v_at(theta: f64, sigma: f64, n: usize, k: usize) -> f64 {
        Self::ln_numerator(theta, sigma, k) - ln_rising(theta + 1.0, n.saturating_sub(1))
    }

    /// `ln Σ_c ln (1-σ)_{n_c - 1}` over the blocks.
    fn ln_blocks(sigma: f64, sizes: &[usize]) -> f64 {
        sizes
            .iter()
            .filter(|&&s| s > 1)
            .map(|&s| ln_rising(1.0 - sigma, s - 1))
            .sum()
    }

    /// `ln p(Π | θ, σ)`, the EPPF: `ln V(n, K) + Σ_c ln (1-σ)_{n_c - 1}`. Cost: O(K).
    pub fn ln_eppf(&self, sizes: &[usize]) -> Result<f64> {
        let (n, k) = block_counts(sizes)?;
        Ok(Self::ln_v_at(self.theta, self.sigma, n, k) + Self::ln_blocks(self.sigma, sizes))
    }

    /// `P(K_n = k)` for `k = 0..=n` under PY(σ, θ) (entry 0 is 0):
    /// `V(n, k) S_σ(n, k)`, where `S_σ(n, k) = Σ Π_c (1-σ)_{n_c - 1}` over the partitions of
    /// `n` points into `k` blocks is the generalised Stirling number `C(n, k; σ) / σ^k`
    /// (`|s(n, k)|` for `σ = 0`; Pitman 2006, §3.2), by its recursion
    /// `S(m+1, k) = (m - kσ) S(m, k) + S(m, k-1)` in log space. Cost: O(n²).
    pub fn k_distribution(&self, n: usize) -> Vec<f64> {
        // ln S(m, k) for the current m: a point added to a partition of m points into k
        // blocks joins one of them (weights n_c - σ, m - kσ in all) or opens block k.
        let mut ln_s = vec![f64::NEG_INFINITY; n + 1];
        if n == 0 {
            return ln_s;
        }
        ln_s[1] = 0.0;
        for m in 1..n {
            for k in (1..=(m + 1).min(n)).rev() {
                let join = if k <= m {
                    (m as f64 - k as f64 * self.sigma).ln() + ln_s[k]
                } else {
                    f64::NEG_INFINITY
                };
                let open = ln_s[k - 1];
                ln_s[k] = crate::math::ln_add_exp(join, open);
            }
        }
        (0..=n)
            .map(|k| {
                if k == 0 {
                    0.0
                } else {
                    (Self::ln_v_at(self.theta, self.sigma, n, k) + ln_s[k]).exp()
                }
            })
            .collect()
    }

    /// `ln p(θ | Π, σ)` in `x = ln θ` up to a constant, Jacobian included; `-inf` where
    /// `θ ≤ -σ`.
    fn ln_theta_conditional(&self, prior: &GammaPrior, x: f64, n: usize, k: usize) -> f64 {
        let theta = x.exp();
        prior.ln_pdf(theta) + x + Self::ln_v_at(theta, self.sigma, n, k)
    }

    /// `ln p(σ | Π, θ)` up to a constant; `-inf` outside the prior's support or where
    /// `θ ≤ -σ`.
    fn ln_sigma_conditional(&self, prior: &BetaPrior, sigma: f64, sizes: &[usize]) -> f64 {
        let ln_prior = prior.ln_density_unnormalised(sigma);
        if ln_prior == f64::NEG_INFINITY || self.theta <= -sigma {
            return f64::NEG_INFINITY;
        }
        ln_prior
            + Self::ln_numerator(self.theta, sigma, sizes.len())
            + Self::ln_blocks(sigma, sizes)
    }
}

impl NrmPrior for PitmanYor {
    /// `ln (1-σ)_{n-1}`; `-inf` for `n = 0`.
    fn ln_kappa(&self, n: usize) -> f64 {
        if n == 0 {
            return f64::NEG_INFINITY;
        }
        ln_rising(1.0 - self.sigma, n - 1)
    }

    /// `ln(n - σ)`; `-inf` for `n = 0`.
    fn ln_kappa_join(&self, n: usize) -> f64 {
        if n == 0 {
            return f64::NEG_INFINITY;
        }
        (n as f64 - self.sigma).ln()
    }

    /// `0`: the new cluster's `κ(1) = 1`; its weight `θ + kσ` is [`NrmPrior::ln_new_shift`].
    fn ln_kappa_new(&self) -> f64 {
        0.0
    }

    fn k_dependent(&self) -> bool {
        true
    }

    /// `ln Π_{i=1}^{k-1} (θ + iσ)`; the `n`-dependent part is [`NrmPrior::ln_joint_const`].
    fn ln_v_k(&self, _n: usize, k: usize) -> f64 {
        Self::ln_numerator(self.theta, self.sigma, k)
    }

    /// `ln(θ + kσ)` for `k ≥ 1`, `0` for `k = 0`.
    fn ln_new_shift(&self, _n: usize, k: usize) -> f64 {
        if k == 0 {
            0.0
        } else {
            (self.theta + k as f64 * self.sigma).ln()
        }
    }

    /// `-ln (θ+1)_{n-1}`.
    fn ln_joint_const(&self, n: usize) -> f64 {
        -ln_rising(self.theta + 1.0, n.saturating_sub(1))
    }

    fn joint_label(&self) -> &'static str {
        "ln p(X, partition | alpha, sigma)"
    }

    /// In order, each only if it has a prior: `θ` by slice sampling `ln θ`, then `σ` by slice
    /// sampling on its prior's support, each from its exact conditional given the partition.
    /// Cost: O(1) per `θ` density evaluation, O(K) per `σ` one.
    fn resample_hyper(&mut self, sizes: &[usize], rng: &mut NrmmRng) -> Result<()> {
        let (n, k) = block_counts(sizes)?;
        if let Some(prior) = self.hyper.theta {
            let sampler = SliceSampler::new(THETA_SLICE_WIDTH, SLICE_MAX_STEPS)?;
            let this = &*self;
            let x = sampler.sample(
                self.theta.ln(),
                |x| this.ln_theta_conditional(&prior, x, n, k),
                rng,
            )?;
            self.set_theta(x.exp())?;
        }
        if let Some(prior) = self.hyper.sigma {
            let sampler = SliceSampler::new(SIGMA_SLICE_WIDTH, SLICE_MAX_STEPS)?
                .with_bounds(prior.lo(), prior.hi())?;
            let this = &*self;
            let sigma = sampler.sample(
                self.sigma,
                |s| this.ln_sigma_conditional(&prior, s, sizes),
                rng,
            )?;
            self.set_sigma(sigma)?;
        }
        Ok(())
    }

    fn hyperparameters(&self) -> PriorHyper {
        PriorHyper::PitmanYor {
            alpha: self.theta,
            sigma: self.sigma,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sigma_zero_is_the_dp() {
        let py = PitmanYor::fixed(0.7, 0.0).unwrap();
        let dp = super::super::Dp::new(0.7).unwrap();
        for sizes in [&[4usize, 1, 2][..], &[1], &[3, 3, 1, 1]] {
            let a = py.ln_eppf(sizes).unwrap();
            let b = dp.ln_eppf(sizes).unwrap();
            assert!((a - b).abs() < 1e-12, "{sizes:?}: {a} vs {b}");
            // The trait's log joint with zero marginals is the EPPF.
            let j = py.ln_joint(sizes, &vec![0.0; sizes.len()]);
            assert!((j - a).abs() < 1e-12);
        }
    }

    #[test]
    fn weights_are_ratios_of_the_eppf() {
        let py = PitmanYor::fixed(-0.2, 0.4).unwrap();
        // Adding a point to a block of size 3 of [3, 2] (n = 6) vs opening a block.
        let base = py.ln_eppf(&[3, 2]).unwrap();
        let join = py.ln_eppf(&[4, 2]).unwrap() - base;
        let open = py.ln_eppf(&[3, 2, 1]).unwrap() - base;
        let common = join - py.ln_kappa_join(3);
        assert!((open - common - (py.ln_kappa_new() + py.ln_new_shift(6, 2))).abs() < 1e-12);
    }

    #[test]
    fn invalid_parameters_are_errors() {
        assert!(PitmanYor::fixed(1.0, 1.0).is_err());
        assert!(PitmanYor::fixed(1.0, -0.1).is_err());
        assert!(PitmanYor::fixed(-0.5, 0.5).is_err());
        assert!(PitmanYor::fixed(f64::NAN, 0.5).is_err());
        assert!(PitmanYor::fixed(-0.4, 0.5).is_ok());
        let h = PyHyperPriors::reference();
        assert!(PitmanYor::new(-0.001, 0.5, h).is_err());
        assert!(PitmanYor::new(1.0, 0.001, h).is_err());
    }
}
