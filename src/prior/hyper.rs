//! Priors on the hyperparameters of the NRM priors (MATH §1.6): a Gamma law on the mass `α`
//! and a Beta law truncated to a sub-interval of (0, 1) on the NGGP discount `σ`, with the
//! Gamma sampler that every conjugate update draws from.

use crate::error::{Error, Result};
use crate::math::ln_gamma;
use crate::rng::uniform_open01;
use rand::Rng;
use rand_distr::Distribution;

/// A Gamma law with shape `a` and **rate** `b` (density `b^a x^{a-1} e^{-b x} / Γ(a)`), the
/// convention of MATH §0 and of the reference code's `RandGamma(a, b)`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GammaPrior {
    shape: f64,
    rate: f64,
}

impl GammaPrior {
    /// A Gamma(shape, rate) law; both must be finite and `> 0`.
    pub fn new(shape: f64, rate: f64) -> Result<Self> {
        check_positive("gamma prior shape", shape)?;
        check_positive("gamma prior rate", rate)?;
        Ok(GammaPrior { shape, rate })
    }

    /// The reference code's prior on `α`: Gamma(1, 1) (MATH §1.6).
    pub fn reference() -> Self {
        GammaPrior {
            shape: 1.0,
            rate: 1.0,
        }
    }

    /// The shape `a`.
    pub fn shape(&self) -> f64 {
        self.shape
    }

    /// The rate `b`.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// The normalised log density `a ln b - ln Γ(a) + (a-1) ln x - b x`; `-inf` for `x ≤ 0`.
    pub fn ln_pdf(&self, x: f64) -> f64 {
        if x <= 0.0 || x.is_nan() {
            return f64::NEG_INFINITY;
        }
        self.shape * self.rate.ln() - ln_gamma(self.shape) + (self.shape - 1.0) * x.ln()
            - self.rate * x
    }

    /// One draw from the law (see [`sample_gamma`]).
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Result<f64> {
        sample_gamma(self.shape, self.rate, rng)
    }
}

/// One draw from Gamma(shape, rate) (rate parameterisation), by `rand_distr`'s
/// Marsaglia–Tsang sampler (with the `U^{1/a}` boost for shape `< 1`). Cost: O(1) expected.
///
/// Errors if a parameter is not finite and positive, or if the draw underflows to 0 (possible
/// only for shapes far below 1), since every caller needs a strictly positive value.
pub fn sample_gamma<R: Rng + ?Sized>(shape: f64, rate: f64, rng: &mut R) -> Result<f64> {
    check_positive("gamma shape", shape)?;
    check_positive("gamma rate", rate)?;
    let dist = rand_distr::Gamma::new(shape, 1.0 / rate).map_err(|e| {
        Error::param(
            "gamma parameters",
            format!("({shape}, {rate})"),
            &e.to_string(),
        )
    })?;
    let x: f64 = dist.sample(rng);
    if x > 0.0 && x.is_finite() {
        Ok(x)
    } else {
        Err(Error::Numerical(format!(
            "Gamma({shape}, rate {rate}) draw is {x}; expected a finite positive value"
        )))
    }
}

/// A Beta(a, b) law truncated to `[lo, hi]` with `0 < lo < hi < 1` (MATH §1.6: the reference
/// code's `σ ~ Beta(1.5, 1.5)` on `[0.01, 0.99]`).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BetaPrior {
    a: f64,
    b: f64,
    lo: f64,
    hi: f64,
    /// `ln B(a, b) + ln(I_hi(a, b) - I_lo(a, b))`, the log normaliser of the truncated law.
    ln_norm: f64,
    /// `I_lo(a, b)`, the untruncated CDF at `lo`, the origin of the inverse-CDF sampler.
    cdf_lo: f64,
}

impl BetaPrior {
    /// Beta(a, b) truncated to `[lo, hi]`: `a, b` finite and `> 0`, `0 < lo < hi < 1`.
    ///
    /// Cost: two regularised incomplete beta evaluations (continued fraction).
    pub fn new(a: f64, b: f64, lo: f64, hi: f64) -> Result<Self> {
        check_positive("beta prior a", a)?;
        check_positive("beta prior b", b)?;
        if !(lo > 0.0 && lo < 1.0) {
            return Err(Error::param(
                "beta prior lower bound",
                lo,
                "a number in (0, 1)",
            ));
        }
        if !(hi > lo && hi < 1.0) {
            return Err(Error::param(
                "beta prior upper bound",
                hi,
                &format!("a number in ({lo}, 1)"),
            ));
        }
        let cdf_lo = beta_cdf(a, b, lo)?;
        let cdf_hi = beta_cdf(a, b, hi)?;
        // Near 1 the complement is computed more accurately than the difference of CDFs.
        let mass = if cdf_lo > 0.5 {
            beta_cdf(b, a, 1.0 - lo)? - beta_cdf(b, a, 1.0 - hi)?
        } else {
            cdf_hi - cdf_lo
        };
        if mass.is_nan() || mass <= 0.0 {
            return Err(Error::param(
                "beta prior bounds",
                format!("[{lo}, {hi}]"),
                &format!("an interval with positive Beta({a}, {b}) probability"),
            ));
        }
        let ln_norm = statrs::function::beta::ln_beta(a, b) + mass.ln();
        Ok(BetaPrior {
            a,
            b,
            lo,
            hi,
            ln_norm,
            cdf_lo,
        })
    }

    /// The reference code's prior on `σ`: Beta(1.5, 1.5) truncated to `[0.01, 0.99]`
    /// (MATH §1.6).
    pub fn reference() -> Self {
        BetaPrior::new(1.5, 1.5, 0.01, 0.99).expect("reference Beta prior is valid")
    }

    /// First shape parameter `a`.
    pub fn a(&self) -> f64 {
        self.a
    }

    /// Second shape parameter `b`.
    pub fn b(&self) -> f64 {
        self.b
    }

    /// Lower truncation bound.
    pub fn lo(&self) -> f64 {
        self.lo
    }

    /// Upper truncation bound.
    pub fn hi(&self) -> f64 {
        self.hi
    }

    /// Whether `x` lies in the support `[lo, hi]`.
    pub fn contains(&self, x: f64) -> bool {
        x >= self.lo && x <= self.hi
    }

    /// `(a-1) ln x + (b-1) ln(1-x)` on `[lo, hi]`, `-inf` outside: the log density up to its
    /// normaliser, as the slice sampler of `σ` needs it.
    pub fn ln_density_unnormalised(&self, x: f64) -> f64 {
        if !self.contains(x) {
            return f64::NEG_INFINITY;
        }
        (self.a - 1.0) * x.ln() + (self.b - 1.0) * (-x).ln_1p()
    }

    /// The normalised log density of the truncated law; `-inf` outside `[lo, hi]`.
    pub fn ln_pdf(&self, x: f64) -> f64 {
        self.ln_density_unnormalised(x) - self.ln_norm
    }

    /// One draw by inverting the CDF: a uniform in `(I_lo, I_hi)` mapped back by bisection on
    /// the regularised incomplete beta function, to full double precision. Cost: about 60
    /// incomplete-beta evaluations; meant for initial values and prior simulation.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Result<f64> {
        let cdf_hi = beta_cdf(self.a, self.b, self.hi)?;
        let target = self.cdf_lo + uniform_open01(rng) * (cdf_hi - self.cdf_lo);
        let (mut lo, mut hi) = (self.lo, self.hi);
        for _ in 0..80 {
            let mid = 0.5 * (lo + hi);
            if mid <= lo || mid >= hi {
                break;
            }
            if beta_cdf(self.a, self.b, mid)? < target {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(0.5 * (lo + hi))
    }
}

/// The regularised incomplete beta function `I_x(a, b)`, with its domain errors mapped.
fn beta_cdf(a: f64, b: f64, x: f64) -> Result<f64> {
    statrs::function::beta::checked_beta_reg(a, b, x)
        .map_err(|e| Error::Numerical(format!("incomplete beta I_{x}({a}, {b}): {e}")))
}

/// Errors unless `value` is finite and strictly positive.
pub(crate) fn check_positive(name: &str, value: f64) -> Result<()> {
    if value > 0.0 && value.is_finite() {
        Ok(())
    } else {
        Err(Error::param(name, value, "a finite number > 0"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SeedPlan;

    #[test]
    fn constructors_reject_bad_values() {
        for (s, r) in [
            (0.0, 1.0),
            (1.0, 0.0),
            (-1.0, 1.0),
            (f64::NAN, 1.0),
            (1.0, f64::INFINITY),
        ] {
            assert!(GammaPrior::new(s, r).is_err(), "({s}, {r})");
        }
        assert!(GammaPrior::new(0.5, 2.0).is_ok());
        for (a, b, lo, hi) in [
            (0.0, 1.0, 0.1, 0.9),
            (1.0, -1.0, 0.1, 0.9),
            (1.0, 1.0, 0.0, 0.9),
            (1.0, 1.0, 0.1, 1.0),
            (1.0, 1.0, 0.5, 0.5),
            (1.0, 1.0, 0.6, 0.4),
            (1.0, 1.0, f64::NAN, 0.4),
            (1.0, 1.0, 0.1, f64::NAN),
        ] {
            assert!(
                BetaPrior::new(a, b, lo, hi).is_err(),
                "({a}, {b}, {lo}, {hi})"
            );
        }
    }

    #[test]
    fn truncated_beta_density_integrates_to_one() {
        let p = BetaPrior::new(1.5, 0.7, 0.05, 0.97).unwrap();
        // Midpoint rule on a fine grid; the density is smooth on the closed interval.
        let m = 200_000;
        let h = (p.hi() - p.lo()) / m as f64;
        let total: f64 = (0..m)
            .map(|i| p.ln_pdf(p.lo() + (i as f64 + 0.5) * h).exp() * h)
            .sum();
        assert!((total - 1.0).abs() < 1e-8, "{total}");
        assert_eq!(p.ln_pdf(0.01), f64::NEG_INFINITY);
    }

    #[test]
    fn gamma_draws_have_the_right_mean() {
        let mut rng = SeedPlan::new(11).chain(0);
        let g = GammaPrior::new(3.0, 2.0).unwrap();
        let n = 40_000;
        let mean = (0..n).map(|_| g.sample(&mut rng).unwrap()).sum::<f64>() / n as f64;
        // mean 1.5, sd sqrt(3)/2; allow 5 standard errors.
        assert!((mean - 1.5).abs() < 5.0 * 0.75f64.sqrt() / (n as f64).sqrt());
    }

    #[test]
    fn truncated_beta_draws_stay_inside_and_match_the_mean() {
        let mut rng = SeedPlan::new(12).chain(0);
        let p = BetaPrior::new(2.0, 5.0, 0.1, 0.5).unwrap();
        let n = 4_000;
        let draws: Vec<f64> = (0..n).map(|_| p.sample(&mut rng).unwrap()).collect();
        assert!(draws.iter().all(|&x| p.contains(x)));
        // Reference mean by quadrature of x p(x).
        let m = 100_000;
        let h = (p.hi() - p.lo()) / m as f64;
        let (mut m1, mut m2) = (0.0, 0.0);
        for i in 0..m {
            let x = p.lo() + (i as f64 + 0.5) * h;
            let w = p.ln_pdf(x).exp() * h;
            m1 += x * w;
            m2 += x * x * w;
        }
        let mean = draws.iter().sum::<f64>() / n as f64;
        let se = ((m2 - m1 * m1) / n as f64).sqrt();
        assert!((mean - m1).abs() < 5.0 * se, "{mean} vs {m1}");
    }
}
