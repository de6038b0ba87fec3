//! Univariate slice sampling with stepping out and shrinkage (Neal 2003, *Slice sampling*,
//! Ann. Statist. 31, §4.1, Figs. 3 and 5), as MATH §1.7 and P11 recommend.
//!
//! One update from `x0` with log density `ln f`:
//! 1. draw the slice level `y = ln f(x0) + ln U` (so `x0` is on the slice `{x : ln f(x) > y}`);
//! 2. place an interval of width `w` at a uniform offset around `x0`;
//! 3. step out by `w` while the ends are on the slice, at most `m - 1` steps in total, the
//!    budget split at random into `J = ⌊m V⌋` steps to the left and `K = m - 1 - J` to the
//!    right — the split that makes the interval equally likely from every point on the slice
//!    (per-side caps do not, and bias the chain: MATH §1.7);
//! 4. clip the interval to the bounds (a deterministic function of the interval, so detailed
//!    balance is kept);
//! 5. draw uniformly from the interval, shrinking the end on the far side of `x0` after each
//!    rejection, so `x0` always stays inside.
//!
//! The shrinkage loop errors after a cap instead of returning a point off the slice.

use crate::error::{Error, Result};
use crate::rng::uniform_open01;
use rand::Rng;

/// The default cap on shrinkage steps. Every rejection shrinks the interval by a uniform
/// fraction, so after `s` rejections its length is about `e^{-s/2}` of the start: a thousand
/// steps is far beyond any slice a finite log density can produce before the interval
/// collapses onto `x0` in floating point (which is accepted).
pub const DEFAULT_MAX_SHRINK: usize = 1000;

/// A univariate slice sampler: initial width, stepping-out budget, bounds, shrinkage cap.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SliceSampler {
    width: f64,
    max_steps: usize,
    lower: f64,
    upper: f64,
    max_shrink: usize,
}

impl SliceSampler {
    /// A sampler with interval width `width` (finite, `> 0`) and stepping-out budget
    /// `max_steps = m ≥ 1` (the initial interval counts as one), unbounded.
    pub fn new(width: f64, max_steps: usize) -> Result<Self> {
        if !(width > 0.0 && width.is_finite()) {
            return Err(Error::param("slice width", width, "a finite number > 0"));
        }
        if max_steps == 0 {
            return Err(Error::param(
                "slice max steps",
                max_steps,
                "an integer >= 1",
            ));
        }
        Ok(SliceSampler {
            width,
            max_steps,
            lower: f64::NEG_INFINITY,
            upper: f64::INFINITY,
            max_shrink: DEFAULT_MAX_SHRINK,
        })
    }

    /// Restricts the support to `[lower, upper]` (either may be infinite; `lower < upper`).
    /// The density is treated as 0 outside.
    pub fn with_bounds(mut self, lower: f64, upper: f64) -> Result<Self> {
        if lower.is_nan() || upper.is_nan() || lower >= upper {
            return Err(Error::param(
                "slice bounds",
                format!("[{lower}, {upper}]"),
                "lower < upper (infinite ends allowed)",
            ));
        }
        self.lower = lower;
        self.upper = upper;
        Ok(self)
    }

    /// Sets the cap on shrinkage steps (`≥ 1`) after which [`SliceSampler::sample`] errors.
    pub fn with_max_shrink(mut self, max_shrink: usize) -> Result<Self> {
        if max_shrink == 0 {
            return Err(Error::param(
                "slice max shrink",
                max_shrink,
                "an integer >= 1",
            ));
        }
        self.max_shrink = max_shrink;
        Ok(self)
    }

    /// The initial interval width `w`.
    pub fn width(&self) -> f64 {
        self.width
    }

    /// The stepping-out budget `m`.
    pub fn max_steps(&self) -> usize {
        self.max_steps
    }

    /// The support bounds `(lower, upper)`.
    pub fn bounds(&self) -> (f64, f64) {
        (self.lower, self.upper)
    }

    /// One slice-sampling update from `x0` for the log density `ln_f` (up to a constant),
    /// leaving the law `∝ exp(ln_f)` on the bounds invariant.
    ///
    /// Errors if `x0` is outside the bounds or has a log density that is not finite, if
    /// `ln_f` returns NaN or `+inf` anywhere it is evaluated, or if shrinkage exceeds its cap.
    /// Cost: `2 + (steps out) + (shrinks)` evaluations of `ln_f`; no allocation.
    pub fn sample<F, R>(&self, x0: f64, mut ln_f: F, rng: &mut R) -> Result<f64>
    where
        F: FnMut(f64) -> f64,
        R: Rng + ?Sized,
    {
        if !(x0 >= self.lower && x0 <= self.upper) {
            return Err(Error::param(
                "slice start",
                x0,
                &format!("a point in [{}, {}]", self.lower, self.upper),
            ));
        }
        let f0 = ln_f(x0);
        if !f0.is_finite() {
            return Err(Error::Numerical(format!(
                "slice sampler: log density at the start x0 = {x0} is {f0}; expected finite"
            )));
        }
        let y = f0 + uniform_open01(rng).ln();

        let mut on_slice = |x: f64| -> Result<bool> {
            if x <= self.lower || x >= self.upper {
                return Ok(false);
            }
            let v = ln_f(x);
            if v.is_nan() || v == f64::INFINITY {
                return Err(Error::Numerical(format!(
                    "slice sampler: log density at x = {x} is {v}"
                )));
            }
            Ok(v > y)
        };

        let w = self.width;
        let mut left = x0 - w * uniform_open01(rng);
        let mut right = left + w;
        let mut steps_left = (self.max_steps as f64 * uniform_open01(rng)).floor() as usize;
        let mut steps_right = self.max_steps - 1 - steps_left;
        while steps_left > 0 && on_slice(left)? {
            left -= w;
            steps_left -= 1;
        }
        while steps_right > 0 && on_slice(right)? {
            right += w;
            steps_right -= 1;
        }
        left = left.max(self.lower);
        right = right.min(self.upper);

        for _ in 0..self.max_shrink {
            let x1 = left + uniform_open01(rng) * (right - left);
            // Once the interval has collapsed onto x0 in floating point, x0 is the only
            // point left, and it is on the slice by construction.
            if x1 == x0 {
                return Ok(x0);
            }
            if on_slice(x1)? {
                return Ok(x1);
            }
            if x1 < x0 {
                left = x1;
            } else {
                right = x1;
            }
        }
        Err(Error::Numerical(format!(
            "slice sampler: no point on the slice after {} shrinkage steps from x0 = {x0} \
             (interval [{left}, {right}], level {y})",
            self.max_shrink
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SeedPlan;

    #[test]
    fn invalid_settings_are_errors() {
        assert!(SliceSampler::new(0.0, 10).is_err());
        assert!(SliceSampler::new(f64::NAN, 10).is_err());
        assert!(SliceSampler::new(1.0, 0).is_err());
        let s = SliceSampler::new(1.0, 10).unwrap();
        assert!(s.with_bounds(1.0, 1.0).is_err());
        assert!(s.with_bounds(f64::NAN, 1.0).is_err());
        assert!(s.with_max_shrink(0).is_err());
    }

    #[test]
    fn bad_start_or_density_is_an_error() {
        let mut rng = SeedPlan::new(1).chain(0);
        let s = SliceSampler::new(1.0, 10)
            .unwrap()
            .with_bounds(0.0, 1.0)
            .unwrap();
        assert!(s.sample(2.0, |_| 0.0, &mut rng).is_err());
        assert!(s.sample(0.5, |_| f64::NEG_INFINITY, &mut rng).is_err());
        assert!(s
            .sample(0.5, |x| if x == 0.5 { 0.0 } else { f64::NAN }, &mut rng)
            .is_err());
    }

    #[test]
    fn shrink_cap_errors_instead_of_returning_an_off_slice_point() {
        let mut rng = SeedPlan::new(2).chain(0);
        let s = SliceSampler::new(1.0, 4)
            .unwrap()
            .with_max_shrink(5)
            .unwrap();
        // Zero density everywhere but at x0: five shrinks cannot collapse a unit interval.
        let r = s.sample(
            0.3,
            |x| if x == 0.3 { 0.0 } else { f64::NEG_INFINITY },
            &mut rng,
        );
        assert!(matches!(r, Err(Error::Numerical(_))));
    }

    #[test]
    fn stays_inside_bounds() {
        let mut rng = SeedPlan::new(3).chain(0);
        let s = SliceSampler::new(5.0, 20)
            .unwrap()
            .with_bounds(-1.0, 2.0)
            .unwrap();
        let mut x = 0.0;
        for _ in 0..2000 {
            x = s.sample(x, |_| 0.0, &mut rng).unwrap();
            assert!((-1.0..=2.0).contains(&x));
        }
    }
}
