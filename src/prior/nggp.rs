//! The normalized generalized gamma process (NGGP) with `τ = 1`, exactly as parameterised in
//! MATH §1.4: Lévy intensity `ρ(dw) = α σ / Γ(1-σ) · w^{-1-σ} e^{-w} dw`,
//! `ψ(u) = α[(1+u)^σ - 1]`, `κ(n, u) = α σ Γ(n-σ)/Γ(1-σ) · (1+u)^{-(n-σ)}`.
//!
//! Note (MATH P15): in this parameterisation `κ → 0` as `σ → 0` with `α` fixed; the DP is
//! reached only if `α σ` is held fixed. `NGGP(α, σ ≈ 0)` is not `DP(α)`.

use super::hyper::{check_positive, sample_gamma, BetaPrior, GammaPrior};
use super::numeric::ln_integrate_line;
use super::slice::SliceSampler;
use super::{block_counts, NrmPrior};
use crate::error::{Error, Result};
use crate::math::{ln_gamma, softplus};
use crate::rng::NrmmRng;

/// Slice width on `ln u` (MATH §1.7 recommends about 1; the reference code's 0.001 is the
/// cause of its biased `u` chain).
pub const U_SLICE_WIDTH: f64 = 1.0;
/// Slice width on `σ` (MATH §1.7: 0.1–0.2).
pub const SIGMA_SLICE_WIDTH: f64 = 0.15;
/// Stepping-out budget `m` of both slice samplers: 50 widths of `ln u` covers a factor `e^50`.
pub const SLICE_MAX_STEPS: usize = 50;

/// Which NGGP hyperparameters are resampled, and under which priors (MATH §1.6–§1.7).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NggpHyperPriors {
    /// Prior on `α`; `None` holds `α` fixed.
    pub alpha: Option<GammaPrior>,
    /// Prior on `σ` (a Beta law truncated to `[lo, hi]`); `None` holds `σ` fixed.
    pub sigma: Option<BetaPrior>,
    /// Whether `u` is resampled; `false` holds it fixed.
    pub sample_u: bool,
}

impl NggpHyperPriors {
    /// Every hyperparameter held fixed.
    pub fn fixed() -> Self {
        NggpHyperPriors {
            alpha: None,
            sigma: None,
            sample_u: false,
        }
    }

    /// The reference code's choice (MATH §1.6): `α ~ Gamma(1, 1)`, `σ ~ Beta(1.5, 1.5)` on
    /// `[0.01, 0.99]`, `u` resampled.
    pub fn reference() -> Self {
        NggpHyperPriors {
            alpha: Some(GammaPrior::reference()),
            sigma: Some(BetaPrior::reference()),
            sample_u: true,
        }
    }
}

/// The NGGP prior with state `(α, σ, u)` and the `u`-dependent values cached.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Nggp {
    alpha: f64,
    sigma: f64,
    ln_u: f64,
    hyper: NggpHyperPriors,
    /// `ln(1+u) = softplus(ln u)` (MATH P13).
    ln_1pu: f64,
    /// `ln α + ln σ - ln Γ(1-σ)`, the `n`-free part of `ln κ(n, u)` without the `u` term.
    ln_kappa_base: f64,
    /// `ln α + ln σ + σ ln(1+u)`, the new-cluster weight.
    ln_new: f64,
}

impl Nggp {
    /// An NGGP at `(α, σ, u)` with the given hyperpriors: `α > 0`, `0 < σ < 1`, `u > 0`, all
    /// finite, and `σ` inside the support of its prior if it has one.
    pub fn new(alpha: f64, sigma: f64, u: f64, hyper: NggpHyperPriors) -> Result<Self> {
        check_positive("u", u)?;
        let mut p = Nggp {
            alpha: 1.0,
            sigma: 0.5,
            ln_u: u.ln(),
            hyper,
            ln_1pu: 0.0,
            ln_kappa_base: 0.0,
            ln_new: 0.0,
        };
        p.set_alpha(alpha)?;
        p.set_sigma(sigma)?;
        Ok(p)
    }

    /// An NGGP with every hyperparameter held fixed at `(α, σ, u)`.
    pub fn fixed(alpha: f64, sigma: f64, u: f64) -> Result<Self> {
        Nggp::new(alpha, sigma, u, NggpHyperPriors::fixed())
    }

    /// The mass parameter `α`.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// The discount `σ`.
    pub fn sigma(&self) -> f64 {
        self.sigma
    }

    /// The auxiliary variable `u`.
    pub fn u(&self) -> f64 {
        self.ln_u.exp()
    }

    /// `ln u`, the coordinate `u` is sampled in.
    pub fn ln_u(&self) -> f64 {
        self.ln_u
    }

    /// The hyperpriors.
    pub fn hyper(&self) -> &NggpHyperPriors {
        &self.hyper
    }

    /// Sets `α` (finite, `> 0`).
    pub fn set_alpha(&mut self, alpha: f64) -> Result<()> {
        check_positive("alpha", alpha)?;
        self.alpha = alpha;
        self.refresh();
        Ok(())
    }

    /// Sets `σ`: in `(0, 1)`, and in `[lo, hi]` if `σ` has a prior.
    pub fn set_sigma(&mut self, sigma: f64) -> Result<()> {
        check_sigma(sigma)?;
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
        self.sigma = sigma;
        self.refresh();
        Ok(())
    }

    /// Sets `u` (finite, `> 0`).
    pub fn set_u(&mut self, u: f64) -> Result<()> {
        check_positive("u", u)?;
        self.set_ln_u(u.ln())
    }

    /// Sets `ln u` (finite).
    pub fn set_ln_u(&mut self, ln_u: f64) -> Result<()> {
        if !ln_u.is_finite() {
            return Err(Error::param("ln u", ln_u, "a finite number"));
        }
        self.ln_u = ln_u;
        self.refresh();
        Ok(())
    }

    fn refresh(&mut self) {
        self.ln_1pu = softplus(self.ln_u);
        let ln_as = self.alpha.ln() + self.sigma.ln();
        self.ln_kappa_base = ln_as - ln_gamma(1.0 - self.sigma);
        self.ln_new = ln_as + self.sigma * self.ln_1pu;
    }

    /// `ln p(u | Π, α, σ)` in the coordinate `x = ln u`, up to a constant, for a partition of
    /// `n` points into `k` blocks (MATH §1.7(a), Jacobian included):
    /// `n x - α[(1+e^x)^σ - 1] - (n - kσ) softplus(x)`, computed as
    /// `-n sp(-x) + kσ sp(x) - α expm1(σ sp(x))` to avoid cancellation at large `n`.
    pub fn ln_u_conditional(&self, ln_u: f64, n: usize, k: usize) -> f64 {
        let sp = softplus(ln_u);
        -(n as f64) * softplus(-ln_u) + k as f64 * self.sigma * sp
            - self.alpha * (self.sigma * sp).exp_m1()
    }

    /// `ln p(Π | α, σ)` for a partition with block sizes `sizes`, with `u` integrated out:
    /// `ln V_{n,K} + Σ_c [ln Γ(n_c - σ) - ln Γ(1 - σ)]` (MATH §1.4). Cost: one [`ln_v`]
    /// quadrature plus `K` log-gamma calls.
    pub fn ln_eppf(&self, sizes: &[usize]) -> Result<f64> {
        let (n, k) = block_counts(sizes)?;
        let lg1 = ln_gamma(1.0 - self.sigma);
        let blocks: f64 = sizes
            .iter()
            .map(|&s| ln_gamma(s as f64 - self.sigma) - lg1)
            .sum();
        Ok(ln_v(n, k, self.alpha, self.sigma)? + blocks)
    }

    /// The `σ` conditional `ln p(σ | Π, u, α)` up to a constant (MATH §1.7(c)), `-inf`
    /// outside the prior's support. Singletons contribute nothing beyond `ln σ` and the `u`
    /// term, since their `Γ(1-σ)` factors cancel.
    fn ln_sigma_conditional(&self, sigma: f64, prior: &BetaPrior, sizes: &[usize]) -> f64 {
        let ln_prior = prior.ln_density_unnormalised(sigma);
        if ln_prior == f64::NEG_INFINITY {
            return ln_prior;
        }
        let k = sizes.len() as f64;
        let lg1 = ln_gamma(1.0 - sigma);
        let blocks: f64 = sizes
            .iter()
            .filter(|&&s| s > 1)
            .map(|&s| ln_gamma(s as f64 - sigma) - lg1)
            .sum();
        ln_prior + k * sigma.ln() - self.alpha * (sigma * self.ln_1pu).exp_m1()
            + k * sigma * self.ln_1pu
            + blocks
    }
}

fn check_sigma(sigma: f64) -> Result<()> {
    if sigma > 0.0 && sigma < 1.0 {
        Ok(())
    } else {
        Err(Error::param("sigma", sigma, "a number in (0, 1)"))
    }
}

impl NrmPrior for Nggp {
    /// `ln α + ln σ + ln Γ(n-σ) - (n-σ) ln(1+u) - ln Γ(1-σ)`; `-inf` for `n = 0`.
    fn ln_kappa(&self, n: usize) -> f64 {
        if n == 0 {
            return f64::NEG_INFINITY;
        }
        let m = n as f64 - self.sigma;
        self.ln_kappa_base + ln_gamma(m) - m * self.ln_1pu
    }

    /// `ln(n - σ)` (the common factor `(1+u)^{-1}` dropped); `-inf` for `n = 0`.
    fn ln_kappa_join(&self, n: usize) -> f64 {
        if n == 0 {
            return f64::NEG_INFINITY;
        }
        (n as f64 - self.sigma).ln()
    }

    /// `ln α + ln σ + σ ln(1+u)` (cached).
    fn ln_kappa_new(&self) -> f64 {
        self.ln_new
    }

    /// `(n-1) ln u - α[(1+u)^σ - 1] - ln Γ(n)`, with `(1+u)^σ - 1 = expm1(σ softplus(ln u))`.
    fn ln_joint_const(&self, n: usize) -> f64 {
        (n as f64 - 1.0) * self.ln_u
            - self.alpha * (self.sigma * self.ln_1pu).exp_m1()
            - ln_gamma(n as f64)
    }

    fn joint_label(&self) -> &'static str {
        "ln p(X, partition, u | alpha, sigma)"
    }

    /// In order, each only if not held fixed (MATH §1.7): `u` by slice sampling on `ln u`
    /// (width [`U_SLICE_WIDTH`]); `α ~ Gamma(a + K, b + (1+u)^σ - 1)`; `σ` by slice sampling
    /// on its prior's support (width [`SIGMA_SLICE_WIDTH`]). Cost: O(1) for `u` and `α`,
    /// O(K) log-gamma calls per `σ` density evaluation; no allocation.
    fn resample_hyper(&mut self, sizes: &[usize], rng: &mut NrmmRng) -> Result<()> {
        let (n, k) = block_counts(sizes)?;
        if self.hyper.sample_u {
            let sampler = SliceSampler::new(U_SLICE_WIDTH, SLICE_MAX_STEPS)?;
            let this = &*self;
            let ln_u = sampler.sample(self.ln_u, |x| this.ln_u_conditional(x, n, k), rng)?;
            self.set_ln_u(ln_u)?;
        }
        if let Some(prior) = self.hyper.alpha {
            let rate = prior.rate() + (self.sigma * self.ln_1pu).exp_m1();
            let alpha = sample_gamma(prior.shape() + k as f64, rate, rng)?;
            self.set_alpha(alpha)?;
        }
        if let Some(prior) = self.hyper.sigma {
            let sampler = SliceSampler::new(SIGMA_SLICE_WIDTH, SLICE_MAX_STEPS)?
                .with_bounds(prior.lo(), prior.hi())?;
            let this = &*self;
            let sigma = sampler.sample(
                self.sigma,
                |s| this.ln_sigma_conditional(s, &prior, sizes),
                rng,
            )?;
            self.set_sigma(sigma)?;
        }
        Ok(())
    }

    fn hyperparameters(&self) -> super::PriorHyper {
        super::PriorHyper::Nggp {
            alpha: self.alpha,
            sigma: self.sigma,
            u: self.u(),
        }
    }
}

/// `ln V_{n,k}` of the NGGP EPPF (MATH §1.4): `k ln(ασ) + ln I_n(k)` with
/// `I_n(k) = Γ(n)^{-1} ∫_ℝ exp(n t - (n - kσ) sp(t) - α(e^{σ sp(t)} - 1)) dt`, `t = ln u`,
/// by the trapezoidal rule of MATH §7.1 (mode, range to 40 below the peak, step halving to
/// 1e-12). The log-integrand is evaluated as `-n sp(-t) + kσ sp(t) - α expm1(σ sp(t))`,
/// which has no cancellation between terms of order `n`, so `n` up to 10^5 and beyond
/// is fine. The log-integrand is strictly concave (so the mode is unique).
///
/// Requires `1 ≤ k ≤ n`, `α > 0`, `0 < σ < 1`. Cost: a few hundred evaluations of the
/// integrand, independent of `n`.
pub fn ln_v(n: usize, k: usize, alpha: f64, sigma: f64) -> crate::Result<f64> {
    if n == 0 {
        return Err(Error::param("n", n, "at least 1 point"));
    }
    if k == 0 || k > n {
        return Err(Error::param("k", k, &format!("a block count in 1..={n}")));
    }
    check_positive("alpha", alpha)?;
    check_sigma(sigma)?;
    let nf = n as f64;
    let ks = k as f64 * sigma;
    let ln_int = ln_integrate_line(
        |t| {
            let sp = softplus(t);
            -nf * softplus(-t) + ks * sp - alpha * (sigma * sp).exp_m1()
        },
        |t| {
            let sp = softplus(t);
            nf * softplus(-t) + ks * sp + alpha * (sigma * sp).exp()
        },
        0.0,
    )?;
    Ok(k as f64 * (alpha * sigma).ln() + ln_int - ln_gamma(nf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v_one_one_is_one() {
        // p({1}) = V_{1,1} = 1 for every (α, σ).
        for &(a, s) in &[(0.1, 0.01), (1.0, 0.5), (30.0, 0.99)] {
            assert!(ln_v(1, 1, a, s).unwrap().abs() < 1e-12, "({a}, {s})");
        }
    }

    #[test]
    fn ln_v_rejects_bad_arguments() {
        assert!(ln_v(0, 0, 1.0, 0.5).is_err());
        assert!(ln_v(3, 0, 1.0, 0.5).is_err());
        assert!(ln_v(3, 4, 1.0, 0.5).is_err());
        assert!(ln_v(3, 1, 0.0, 0.5).is_err());
        assert!(ln_v(3, 1, 1.0, 1.0).is_err());
        assert!(ln_v(3, 1, 1.0, f64::NAN).is_err());
    }

    #[test]
    fn kappa_ratios_match_join_and_new_weights() {
        let p = Nggp::fixed(1.7, 0.3, 2.5).unwrap();
        // Both weights drop the same factor (1+u)^{-1}.
        let c = -(1.0f64 + 2.5).ln();
        for n in 1..20 {
            let lhs = p.ln_kappa(n + 1) - p.ln_kappa(n);
            assert!((lhs - (p.ln_kappa_join(n) + c)).abs() < 1e-12);
        }
        assert!((p.ln_kappa(1) - (p.ln_kappa_new() + c)).abs() < 1e-12);
    }
}
