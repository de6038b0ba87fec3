//! Pointwise credible bands of a posterior predictive density. Each posterior draw of the
//! partition (with its hyperparameters) gives a density `f_s(x) = Σ_c w_c p(x | X_c) + w_new
//! p(x)` ([`crate::diagnostics::ln_predictive_of_draw`]); their average over draws is the
//! posterior predictive density, and their quantiles at each point `x` a pointwise credible
//! band for it, as BNPmix and BNPdensity draw them.

use crate::error::{Error, Result};

/// The posterior predictive density at a set of points with a pointwise credible band.
#[derive(Clone, Debug, PartialEq)]
pub struct PointwiseBands {
    /// The level of the band (e.g. 0.95).
    pub level: f64,
    /// Draws the bands are over.
    pub draws: usize,
    /// Per point, the mean over draws of `f_s(x)`: the posterior predictive density.
    pub mean: Vec<f64>,
    /// Per point, the `(1 - level)/2` quantile of `f_s(x)` over draws.
    pub lower: Vec<f64>,
    /// Per point, the `(1 + level)/2` quantile of `f_s(x)` over draws.
    pub upper: Vec<f64>,
}

/// The `q` quantile of the sorted `values` by linear interpolation between order statistics
/// (type 7 of Hyndman & Fan 1996, R's default). `values` must not be empty.
pub fn sorted_quantile(values: &[f64], q: f64) -> f64 {
    let h = (values.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    values[lo] + (h - lo as f64) * (values[hi] - values[lo])
}

/// The bands at `level` from the log densities `ln_f[s][j]` of draw `s` at point `j` (every
/// draw over the same points). Errors without draws, on ragged rows, on a level outside
/// (0, 1), or on a log density that is NaN or `+inf` (a density of 0, `-inf`, is fine).
/// Cost: O(S m log S) for S draws and m points.
pub fn pointwise_bands(ln_f: &[Vec<f64>], level: f64) -> Result<PointwiseBands> {
    if !(level > 0.0 && level < 1.0) {
        return Err(Error::param("level", level, "a number in (0, 1)"));
    }
    let Some(first) = ln_f.first() else {
        return Err(Error::Empty("no draws to take credible bands over".into()));
    };
    let m = first.len();
    if let Some(s) = ln_f.iter().position(|r| r.len() != m) {
        return Err(Error::DimensionMismatch(format!(
            "draw {s} has a density at {} points, draw 0 at {m}",
            ln_f[s].len()
        )));
    }
    let mut column = Vec::with_capacity(ln_f.len());
    let (mut mean, mut lower, mut upper) = (vec![0.0; m], vec![0.0; m], vec![0.0; m]);
    for j in 0..m {
        column.clear();
        for (s, row) in ln_f.iter().enumerate() {
            let l = row[j];
            if l.is_nan() || l == f64::INFINITY {
                return Err(Error::Numerical(format!(
                    "the log density of draw {s} at point {j} is {l}"
                )));
            }
            column.push(l.exp());
        }
        mean[j] = column.iter().sum::<f64>() / column.len() as f64;
        column.sort_by(f64::total_cmp);
        lower[j] = sorted_quantile(&column, 0.5 * (1.0 - level));
        upper[j] = sorted_quantile(&column, 0.5 * (1.0 + level));
    }
    Ok(PointwiseBands {
        level,
        draws: ln_f.len(),
        mean,
        lower,
        upper,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bands_are_quantiles_of_the_draws_densities() {
        // Five draws at two points: densities 1..5 at the first, all 2 at the second.
        let ln_f: Vec<Vec<f64>> = (1..=5).map(|s| vec![(s as f64).ln(), 2f64.ln()]).collect();
        let b = pointwise_bands(&ln_f, 0.5).unwrap();
        assert_eq!(b.draws, 5);
        assert!((b.mean[0] - 3.0).abs() < 1e-12 && (b.mean[1] - 2.0).abs() < 1e-12);
        // Quartiles of 1..5 by type 7: 2 and 4.
        assert!((b.lower[0] - 2.0).abs() < 1e-12 && (b.upper[0] - 4.0).abs() < 1e-12);
        assert!((b.lower[1] - 2.0).abs() < 1e-12 && (b.upper[1] - 2.0).abs() < 1e-12);
        assert_eq!(sorted_quantile(&[1.0, 2.0], 0.25), 1.25);
        assert_eq!(sorted_quantile(&[7.0], 0.9), 7.0);
        // A density of zero is a point outside every draw's support, not an error.
        let zero = pointwise_bands(&[vec![f64::NEG_INFINITY]], 0.9).unwrap();
        assert_eq!(zero.mean, vec![0.0]);
    }

    #[test]
    fn bad_input_is_refused() {
        assert!(pointwise_bands(&[], 0.9).is_err());
        assert!(pointwise_bands(&[vec![0.0]], 1.0).is_err());
        assert!(pointwise_bands(&[vec![0.0]], f64::NAN).is_err());
        assert!(pointwise_bands(&[vec![0.0], vec![]], 0.9).is_err());
        assert!(pointwise_bands(&[vec![f64::NAN]], 0.9).is_err());
    }
}
