//! Explicit component parameters of the diagonal kernel.

use rand::Rng;
use rand_distr::{Distribution, StandardNormal};

use super::{DiagStat, Diagonal};
use crate::error::{Error, Result};
use crate::kernel::{ln_gamma_variate, ParametricKernel};
use crate::math::ln_gamma;

/// A Gaussian component with independent coordinates in the centred frame of a [`Diagonal`]
/// kernel (data shifted by `ξ`): the means `μ_j - ξ_j`, the precisions `λ_j` and the log
/// normaliser `-d/2 ln 2π + ½ Σ_j ln λ_j`.
#[derive(Clone, Debug, PartialEq)]
pub struct DiagParam {
    mu: Vec<f64>,
    precision: Vec<f64>,
    ln_norm: f64,
}

impl DiagParam {
    /// The means in the kernel's centred frame (`μ - ξ`).
    #[inline(always)]
    pub fn mean_centred(&self) -> &[f64] {
        &self.mu
    }

    /// The precisions `λ_j` (the inverse variances).
    pub fn precision(&self) -> &[f64] {
        &self.precision
    }

    /// `-d/2 ln 2π + ½ Σ_j ln λ_j`.
    #[inline(always)]
    pub fn ln_normaliser(&self) -> f64 {
        self.ln_norm
    }
}

/// Raw moments of a set of points for a [`Diagonal`] kernel, in its centred frame: the count,
/// `Σ y_j` and `Σ y_j²`. One heap buffer of `2d` values.
#[derive(Clone, Debug, PartialEq)]
pub struct DiagMoments {
    n: usize,
    buf: Vec<f64>,
}

impl DiagMoments {
    /// Number of points summarised.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether no point is summarised.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

impl Diagonal {
    /// Draws, per dimension, `λ_j ~ Gamma(ν_n/2, rate ψ_{n,j}/2)` and
    /// `μ_j | λ_j ~ N(ξ_{n,j}, 1/(r_n λ_j))` given `n`, the centred means and `ψ_{n,j}`.
    /// Cost: O(d) draws.
    fn draw_diag<R: Rng + ?Sized>(
        &self,
        n: f64,
        mean: &[f64],
        psi_n: &[f64],
        rng: &mut R,
        out: &mut DiagParam,
    ) -> Result<()> {
        let d = self.dim();
        let (r_n, nu_n) = (self.hyper().r() + n, self.hyper().nu() + n);
        let shrink = n / r_n;
        out.mu.resize(d, 0.0);
        out.precision.resize(d, 0.0);
        let mut ln_det = 0.0;
        for j in 0..d {
            let p = psi_n[j];
            if !(p > 0.0 && p.is_finite()) {
                return Err(Error::Numerical(format!(
                    "the posterior scale psi_n of dimension {j} of a cluster is {p}"
                )));
            }
            // λ = 2 G / ψ_n with G ~ Gamma(ν_n/2, 1), drawn in log space.
            let ln_lambda = ln_gamma_variate(0.5 * nu_n, rng)? + std::f64::consts::LN_2 - p.ln();
            let lambda = ln_lambda.exp();
            if !(lambda > 0.0 && lambda.is_finite()) {
                return Err(Error::Numerical(format!(
                    "a drawn precision of dimension {j} is {lambda}"
                )));
            }
            let z: f64 = StandardNormal.sample(rng);
            out.precision[j] = lambda;
            out.mu[j] = shrink * mean[j] + z / (r_n * lambda).sqrt();
            ln_det += ln_lambda;
        }
        out.ln_norm = -0.5 * d as f64 * (2.0 * std::f64::consts::PI).ln() + 0.5 * ln_det;
        Ok(())
    }

    /// The means `μ` of `theta` in the data's original coordinates. Cost: O(d).
    pub fn param_mean(&self, theta: &DiagParam) -> Vec<f64> {
        theta
            .mu
            .iter()
            .zip(self.hyper().xi())
            .map(|(m, x)| m + x)
            .collect()
    }
}

impl ParametricKernel for Diagonal {
    type Param = DiagParam;
    type Moments = DiagMoments;

    fn new_param(&self) -> DiagParam {
        let d = self.dim();
        DiagParam {
            mu: vec![0.0; d],
            precision: vec![1.0; d],
            ln_norm: 0.0,
        }
    }

    /// Per dimension, the 1-D Normal-Wishart draw: `λ_j ~ Gamma(ν_n/2, rate ψ_{n,j}/2)`
    /// (the 1-D `W(ν_n, 1/ψ_{n,j})`), then `μ_j | λ_j ~ N(ξ_{n,j}, 1/(r_n λ_j))`. Cost: O(d)
    /// draws, no allocation once `out` has its size. Errors only if a draw is not finite.
    fn sample_posterior<R: Rng + ?Sized>(
        &self,
        s: &DiagStat,
        rng: &mut R,
        out: &mut DiagParam,
    ) -> Result<()> {
        self.draw_diag(s.len() as f64, s.mean(), s.psi_n(), rng, out)
    }

    /// `n`, `Σ y`, `Σ y²` start at zero.
    fn new_moments(&self) -> DiagMoments {
        DiagMoments {
            n: 0,
            buf: vec![0.0; 2 * self.dim()],
        }
    }

    /// Cost: 2d multiply-adds, no allocation.
    #[inline]
    fn moments_add(&self, m: &mut DiagMoments, i: usize) {
        let d = self.dim();
        let (sum, squares) = m.buf.split_at_mut(d);
        for ((s, q), &y) in sum.iter_mut().zip(squares).zip(self.centred_point(i)) {
            *s += y;
            *q += y * y;
        }
        m.n += 1;
    }

    fn moments_merge(&self, a: &mut DiagMoments, b: &DiagMoments) {
        a.n += b.n;
        for (x, y) in a.buf.iter_mut().zip(&b.buf) {
            *x += y;
        }
    }

    fn moments_count(&self, m: &DiagMoments) -> usize {
        m.n
    }

    /// `ψ_{n,j} = ψ_j + Σ y_j² - (Σ y_j)²/(r + n)` (the statistic's `ψ_j + M₂ⱼ + (r n/(r+n))
    /// x̄_j²` from raw moments), then the draw of [`ParametricKernel::sample_posterior`].
    /// Cost: O(d) draws and one O(d) allocation.
    fn sample_moments<R: Rng + ?Sized>(
        &self,
        m: &DiagMoments,
        rng: &mut R,
        out: &mut DiagParam,
    ) -> Result<()> {
        let d = self.dim();
        let n = m.n as f64;
        let (sum, squares) = m.buf.split_at(d);
        let rn = self.hyper().r() + n;
        let mut mean = vec![0.0; 2 * d];
        let (mean, psi_n) = mean.split_at_mut(d);
        for j in 0..d {
            mean[j] = if m.n == 0 { 0.0 } else { sum[j] / n };
            psi_n[j] = self.hyper().psi()[j] + squares[j] - sum[j] * sum[j] / rn;
        }
        self.draw_diag(n, mean, psi_n, rng, out)
    }

    /// `-d/2 ln 2π + ½ Σ ln λ_j - ½ Σ λ_j (y_j - μ_j)²` on the centred point. Cost: O(d), no
    /// allocation.
    #[inline]
    fn ln_f(&self, i: usize, theta: &DiagParam) -> f64 {
        let y = self.centred_point(i);
        let q: f64 = y
            .iter()
            .zip(&theta.mu)
            .zip(&theta.precision)
            .map(|((&y, &m), &l)| l * (y - m) * (y - m))
            .sum();
        theta.ln_norm - 0.5 * q
    }

    /// `Σ_j [ln N(μ_j | ξ_{n,j}, 1/(r_n λ_j)) + ln Gamma(λ_j | ν_n/2, ψ_{n,j}/2)]`. Cost: O(d).
    fn ln_posterior_density(&self, s: &DiagStat, theta: &DiagParam) -> f64 {
        let n = s.len() as f64;
        let (r_n, nu_n) = (self.hyper().r() + n, self.hyper().nu() + n);
        let shrink = n / r_n;
        let half_ln_2pi = 0.5 * (2.0 * std::f64::consts::PI).ln();
        let gamma_norm = ln_gamma(0.5 * nu_n);
        let mut total = 0.0;
        for j in 0..self.dim() {
            let (lambda, mu, p) = (theta.precision[j], theta.mu[j], s.psi_n()[j]);
            let e = mu - shrink * s.mean()[j];
            let ln_normal = -half_ln_2pi + 0.5 * (r_n * lambda).ln() - 0.5 * r_n * lambda * e * e;
            let ln_gamma_density = 0.5 * nu_n * (0.5 * p).ln() - gamma_norm
                + (0.5 * nu_n - 1.0) * lambda.ln()
                - 0.5 * p * lambda;
            total += ln_normal + ln_gamma_density;
        }
        total
    }
}
