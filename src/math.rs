//! Log-space numerics shared by every module (MATH §8, P1, P8, P9, P13).

use crate::error::{Error, Result};
use crate::rng::uniform_open01;
use rand::Rng;

/// ln Γ(x) for x > 0, accurate to about 1e-15 relative (Lanczos, g = 607/128, via `statrs`).
///
/// Callers guarantee `x > 0`; a non-positive argument returns `+inf`, which makes any log
/// density built on it `-inf` rather than silently finite.
#[inline]
pub fn ln_gamma(x: f64) -> f64 {
    if x <= 0.0 {
        return f64::INFINITY;
    }
    statrs::function::gamma::ln_gamma(x)
}

/// ln Γ_d(a) - ln Γ_d(b) without the π^{d(d-1)/4} factor, which cancels:
/// Σ_{i=1..d} [ln Γ(a + (1-i)/2) - ln Γ(b + (1-i)/2)]. Cost: 2d ln-gamma calls.
pub fn ln_mv_gamma_ratio(d: usize, a: f64, b: f64) -> f64 {
    (0..d)
        .map(|i| {
            let shift = -(i as f64) / 2.0;
            ln_gamma(a + shift) - ln_gamma(b + shift)
        })
        .sum()
}

/// ln(e^a + e^b), exact at infinities.
#[inline]
pub fn ln_add_exp(a: f64, b: f64) -> f64 {
    let (hi, lo) = if a >= b { (a, b) } else { (b, a) };
    if hi == f64::NEG_INFINITY {
        return f64::NEG_INFINITY;
    }
    if hi == f64::INFINITY {
        return f64::INFINITY;
    }
    hi + (lo - hi).exp().ln_1p()
}

/// ln Σ e^{x_i}, shifted by the maximum; `-inf` for an empty slice or all `-inf`.
pub fn log_sum_exp(xs: &[f64]) -> f64 {
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if max == f64::NEG_INFINITY || !max.is_finite() {
        return max;
    }
    max + xs.iter().map(|&x| (x - max).exp()).sum::<f64>().ln()
}

/// softplus(x) = ln(1 + e^x) without overflow (MATH P8, P13).
#[inline]
pub fn softplus(x: f64) -> f64 {
    // Beyond |x| = 37, e^-|x| < 2^-53: ln_1p returns its argument unchanged and adding it to
    // x > 37 rounds back to x, so both tails are the general formula's values, bit for bit,
    // with one libm call fewer (above: none at all).
    if x > 37.0 {
        x
    } else if x < -37.0 {
        x.exp()
    } else {
        x.max(0.0) + (-x.abs()).exp().ln_1p()
    }
}

/// The error for log-weights that cannot be drawn from (a NaN, a `+inf`, or no finite
/// weight), saying which weight is at fault and what usually causes it. Cost: O(len).
pub fn bad_log_weights(ln_w: &[f64]) -> Error {
    let n = ln_w.len();
    let problem = if let Some(i) = ln_w.iter().position(|w| w.is_nan()) {
        format!("log-weight {} of {n} is NaN", i + 1)
    } else if let Some(i) = ln_w.iter().position(|&w| w == f64::INFINITY) {
        format!("log-weight {} of {n} is +inf", i + 1)
    } else {
        format!("all {n} log-weights are -inf (no option has positive probability)")
    };
    Error::Numerical(format!(
        "cannot draw among {n} options: {problem}; a cluster's statistics or marginal \
         overflowed, which extreme values cause: rescale the data (and --nw-xi, --nw-psi)"
    ))
}

/// Draws an index with probability proportional to `exp(ln_w[i])` (MATH P9).
///
/// Shifts by the maximum, draws one open-interval uniform, and walks the cumulative sum,
/// never returning an index whose weight is zero. Errors if no weight is positive or a weight
/// is NaN or `+inf`. Cost: O(len) exponentials.
pub fn sample_log_weights<R: Rng + ?Sized>(rng: &mut R, ln_w: &[f64]) -> Result<usize> {
    let max = ln_w.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() || ln_w.iter().any(|w| w.is_nan()) {
        return Err(bad_log_weights(ln_w));
    }
    let total: f64 = ln_w.iter().map(|&w| (w - max).exp()).sum();
    let target = uniform_open01(rng) * total;
    let mut acc = 0.0;
    let mut last_positive = 0;
    for (i, &w) in ln_w.iter().enumerate() {
        let p = (w - max).exp();
        if p > 0.0 {
            acc += p;
            last_positive = i;
            if target < acc {
                return Ok(i);
            }
        }
    }
    Ok(last_positive)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_log_weights_name_the_weight_at_fault() {
        let m = bad_log_weights(&[-13.19, f64::NAN, -2.0]).to_string();
        assert!(
            m.contains("log-weight 2 of 3 is NaN") && m.contains("rescale"),
            "{m}"
        );
        let m = bad_log_weights(&[f64::NEG_INFINITY; 2]).to_string();
        assert!(m.contains("all 2 log-weights are -inf"), "{m}");
        let m = bad_log_weights(&[0.0, f64::INFINITY]).to_string();
        assert!(m.contains("log-weight 2 of 2 is +inf"), "{m}");
    }
    use crate::rng::SeedPlan;

    /// The tails of `softplus` are the general formula's values to the bit.
    #[test]
    fn softplus_tails_equal_the_general_formula() {
        let general = |x: f64| x.max(0.0) + (-x.abs()).exp().ln_1p();
        let mut x = 37.0f64;
        while x < 800.0 {
            for y in [x, -x] {
                assert_eq!(softplus(y).to_bits(), general(y).to_bits(), "x = {y}");
            }
            x = f64::from_bits(x.to_bits() + 100_000_000_007);
        }
        assert_eq!(softplus(f64::INFINITY), f64::INFINITY);
        assert_eq!(softplus(f64::NEG_INFINITY), 0.0);
        assert!(softplus(f64::NAN).is_nan());
    }

    #[test]
    fn ln_gamma_known_values() {
        let half_ln_pi = 0.5 * std::f64::consts::PI.ln();
        assert!((ln_gamma(0.5) - half_ln_pi).abs() < 1e-14);
        let mut ln_fact = 0.0f64;
        for n in 1..170u32 {
            // ln Γ(n) = ln (n-1)!
            assert!(
                (ln_gamma(n as f64) - ln_fact).abs() <= 1e-13 * ln_fact.abs().max(1.0),
                "n = {n}"
            );
            ln_fact += (n as f64).ln();
        }
        // ln Γ(10000.3) from a 50-digit reference.
        assert!((ln_gamma(10000.3) - 82_102.480_588_053_9).abs() < 1e-8);
        assert_eq!(ln_gamma(0.0), f64::INFINITY);
        assert_eq!(ln_gamma(-1.5), f64::INFINITY);
    }

    #[test]
    fn log_sum_exp_edges() {
        assert_eq!(log_sum_exp(&[]), f64::NEG_INFINITY);
        assert_eq!(log_sum_exp(&[f64::NEG_INFINITY; 3]), f64::NEG_INFINITY);
        assert!((log_sum_exp(&[1000.0, 1000.0]) - (1000.0 + 2f64.ln())).abs() < 1e-12);
        assert!((ln_add_exp(-1e3, 0.0) - 0.0).abs() < 1e-300);
        assert!((softplus(800.0) - 800.0).abs() < 1e-12);
        assert!((softplus(-800.0)).abs() < 1e-300);
        assert!((softplus(0.0) - 2f64.ln()).abs() < 1e-15);
    }

    #[test]
    fn categorical_frequencies_and_zero_weights() {
        let mut rng = SeedPlan::new(3).chain(0);
        let ln_w = [f64::NEG_INFINITY, 0.0, 2f64.ln(), f64::NEG_INFINITY];
        let mut counts = [0usize; 4];
        let n = 60_000;
        for _ in 0..n {
            counts[sample_log_weights(&mut rng, &ln_w).unwrap()] += 1;
        }
        assert_eq!(counts[0] + counts[3], 0);
        let p1 = counts[1] as f64 / n as f64;
        // Binomial standard error sqrt(p(1-p)/n) ≈ 0.0019; allow 5 SE.
        assert!((p1 - 1.0 / 3.0).abs() < 5.0 * (2.0f64 / 9.0 / n as f64).sqrt());
        assert!(sample_log_weights(&mut rng, &[f64::NEG_INFINITY]).is_err());
        assert!(sample_log_weights(&mut rng, &[f64::NAN, 0.0]).is_err());
    }
}
