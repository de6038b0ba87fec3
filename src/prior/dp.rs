//! The Dirichlet process (MATH §1.5): `ρ(dw) = α w^{-1} e^{-w} dw`, `ψ(u) = α ln(1+u)`,
//! `κ(n, u) = α Γ(n) (1+u)^{-n}`.
//!
//! The factor `(1+u)^{-n}` is common to every partition of the same points, so `u` drops out
//! of every weight and ratio and is not part of the state; the log joint is
//! `ln p(X, Π | α)` (MATH §1.5, P20). The mass `α` is fixed or has a Gamma prior updated by
//! one of the two schemes of MATH §1.7.

use super::hyper::{check_positive, sample_gamma, GammaPrior};
use super::numeric::ln_rising;
use super::{block_counts, NrmPrior};
use crate::error::Result;
use crate::math::ln_gamma;
use crate::rng::NrmmRng;

/// How `α` is updated given the partition when it has a Gamma(a, b) prior (MATH §1.7).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum AlphaUpdate {
    /// Escobar & West (1995): `η ~ Beta(α+1, n)`, then `α` from the two-component Gamma
    /// mixture with rates `b - ln η` and shapes `a + K`, `a + K - 1`, odds
    /// `(a + K - 1) / (n (b - ln η))`.
    #[default]
    EscobarWest,
    /// The `u`-augmented update: `v ~ Beta(n, α)`, `u = v/(1-v)` (the exact `u | α, Π`),
    /// then `α ~ Gamma(a + K, b + ln(1+u))`.
    UAugmented,
}

/// The Dirichlet process prior with mass `α`, fixed or with a Gamma prior.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Dp {
    alpha: f64,
    ln_alpha: f64,
    alpha_prior: Option<GammaPrior>,
    update: AlphaUpdate,
}

impl Dp {
    /// A DP with `α` (finite, `> 0`) held fixed.
    pub fn new(alpha: f64) -> Result<Self> {
        check_positive("alpha", alpha)?;
        Ok(Dp {
            alpha,
            ln_alpha: alpha.ln(),
            alpha_prior: None,
            update: AlphaUpdate::default(),
        })
    }

    /// A DP starting at `α` with `α ~ prior`, resampled by `update`.
    pub fn with_alpha_prior(alpha: f64, prior: GammaPrior, update: AlphaUpdate) -> Result<Self> {
        let mut dp = Dp::new(alpha)?;
        dp.alpha_prior = Some(prior);
        dp.update = update;
        Ok(dp)
    }

    /// The mass `α`.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// The prior on `α` (`None`: held fixed).
    pub fn alpha_prior(&self) -> Option<&GammaPrior> {
        self.alpha_prior.as_ref()
    }

    /// The `α` update scheme used when `α` has a prior.
    pub fn alpha_update(&self) -> AlphaUpdate {
        self.update
    }

    /// Sets `α` (finite, `> 0`).
    pub fn set_alpha(&mut self, alpha: f64) -> Result<()> {
        check_positive("alpha", alpha)?;
        self.alpha = alpha;
        self.ln_alpha = alpha.ln();
        Ok(())
    }

    /// `ln p(Π | α) = ln Γ(α) - ln Γ(α + n) + K ln α + Σ_c ln Γ(n_c)` (MATH §1.5), with the
    /// first difference as a log rising factorial (MATH P2). Cost: `K + 1` log-gamma calls.
    pub fn ln_eppf(&self, sizes: &[usize]) -> Result<f64> {
        let (n, k) = block_counts(sizes)?;
        let blocks: f64 = sizes.iter().map(|&s| ln_gamma(s as f64)).sum();
        Ok(-ln_rising(self.alpha, n) + k as f64 * self.ln_alpha + blocks)
    }

    /// One draw of `α` given a partition of `n` points into `k` blocks, by the configured
    /// scheme, under `prior`. Beta draws are made as ratios of Gamma draws and the needed
    /// logarithms taken with `ln_1p`, so `ln η` and `ln(1+u)` keep full precision.
    fn draw_alpha(&self, prior: GammaPrior, n: usize, k: usize, rng: &mut NrmmRng) -> Result<f64> {
        let (a, b) = (prior.shape(), prior.rate());
        let (nf, kf) = (n as f64, k as f64);
        match self.update {
            AlphaUpdate::EscobarWest => {
                // η = G1 / (G1 + G2) with G1 ~ Gamma(α+1), G2 ~ Gamma(n): -ln η = ln(1 + G2/G1).
                let g1 = sample_gamma(self.alpha + 1.0, 1.0, rng)?;
                let g2 = sample_gamma(nf, 1.0, rng)?;
                let rate = b + (g2 / g1).ln_1p();
                let odds = (a + kf - 1.0) / (nf * rate);
                let p_high = odds / (1.0 + odds);
                let shape = if crate::rng::uniform_open01(rng) < p_high {
                    a + kf
                } else {
                    a + kf - 1.0
                };
                sample_gamma(shape, rate, rng)
            }
            AlphaUpdate::UAugmented => {
                // v = G1 / (G1 + G2) with G1 ~ Gamma(n), G2 ~ Gamma(α): ln(1+u) = ln(1 + G1/G2).
                // G2 is drawn in log form, ln G2 = ln Gamma(α+1) + ln U / α, since for small α
                // a Gamma(α) variate underflows to 0 (it is below e^-708 with probability
                // about e^{-708 α}).
                let g1 = sample_gamma(nf, 1.0, rng)?;
                let ln_g2 = sample_gamma(self.alpha + 1.0, 1.0, rng)?.ln()
                    + crate::rng::uniform_open01(rng).ln() / self.alpha;
                let rate = b + crate::math::softplus(g1.ln() - ln_g2);
                sample_gamma(a + kf, rate, rng)
            }
        }
    }
}

impl NrmPrior for Dp {
    /// `ln α + ln Γ(n)` (`u` dropped); `-inf` for `n = 0`.
    fn ln_kappa(&self, n: usize) -> f64 {
        if n == 0 {
            return f64::NEG_INFINITY;
        }
        self.ln_alpha + ln_gamma(n as f64)
    }

    /// `ln n`.
    fn ln_kappa_join(&self, n: usize) -> f64 {
        (n as f64).ln()
    }

    /// `ln α`.
    fn ln_kappa_new(&self) -> f64 {
        self.ln_alpha
    }

    /// `ln Γ(α) - ln Γ(α + n)`, as a log rising factorial (MATH P2).
    fn ln_joint_const(&self, n: usize) -> f64 {
        -ln_rising(self.alpha, n)
    }

    fn joint_label(&self) -> &'static str {
        "ln p(X, partition | alpha)"
    }

    /// Resamples `α` if it has a prior (MATH §1.7); otherwise only validates `sizes`.
    /// Cost: O(K) for the block count, three or four Gamma draws.
    fn resample_hyper(&mut self, sizes: &[usize], rng: &mut NrmmRng) -> Result<()> {
        let (n, k) = block_counts(sizes)?;
        if let Some(prior) = self.alpha_prior {
            let alpha = self.draw_alpha(prior, n, k, rng)?;
            self.set_alpha(alpha)?;
        }
        Ok(())
    }

    fn hyperparameters(&self) -> super::PriorHyper {
        super::PriorHyper::Dp { alpha: self.alpha }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_are_consistent() {
        let dp = Dp::new(0.7).unwrap();
        for n in 1..30 {
            let lhs = dp.ln_kappa(n + 1) - dp.ln_kappa(n);
            assert!((lhs - dp.ln_kappa_join(n)).abs() < 1e-12);
        }
        assert!((dp.ln_kappa(1) - dp.ln_kappa_new()).abs() < 1e-15);
        // The trait's log joint with zero marginals is the EPPF.
        let sizes = [4, 1, 2];
        let joint = dp.ln_joint(&sizes, &[0.0; 3]);
        assert!((joint - dp.ln_eppf(&sizes).unwrap()).abs() < 1e-12);
    }

    #[test]
    fn invalid_alpha_is_an_error() {
        assert!(Dp::new(0.0).is_err());
        assert!(Dp::new(-1.0).is_err());
        assert!(Dp::new(f64::NAN).is_err());
        assert!(Dp::new(f64::INFINITY).is_err());
        let mut dp = Dp::new(1.0).unwrap();
        assert!(dp.set_alpha(0.0).is_err());
        assert_eq!(dp.alpha(), 1.0);
        assert!(dp.ln_eppf(&[]).is_err());
        assert!(dp.ln_eppf(&[2, 0]).is_err());
    }
}
