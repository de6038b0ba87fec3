//! Explicit component parameters for the conjugate kernels: posterior and prior draws of
//! `θ`, its log density, and the per-point likelihood `ln f(x_i | θ)`, for the uncollapsed
//! samplers of MATH §6.4 (Chang & Fisher's restricted and sub-cluster Gibbs, DPMM.jl's
//! direct samplers), which sample `θ_k ~ p(θ | X_k)` and then labels from `π_k f(x_i | θ_k)`.
//!
//! The label step evaluates `ln f` once per point and cluster, so each parameter stores what
//! makes that evaluation cheap and allocation-free: for Normal-Wishart the mean and a lower
//! Cholesky factor of the precision with its log normaliser (O(d²) per point), for the
//! diagonal kernel the means and precisions (O(d) per point), for Multinomial-Dirichlet the
//! log word probabilities (O(nnz of the document) per point).

use rand::Rng;
use rand_distr::Distribution;

use super::sweep_cache::BLOCK;
use super::{ConjugateKernel, PointIndex};
use crate::error::{Error, Result};
use crate::rng::uniform_open01;

/// A conjugate kernel whose component parameter `θ` can be drawn and evaluated explicitly.
///
/// Invariant (checked by the tests): for any set `S` and any `θ`,
/// `ln m(X_S) = Σ_{i∈S} ln f(x_i | θ) + ln p(θ) - ln p(θ | X_S)` (Bayes' rule for a conjugate
/// pair, the "candidate's formula").
pub trait ParametricKernel: ConjugateKernel {
    /// One component's parameter, with the caches its likelihood needs.
    type Param: Clone + Send + Sync + std::fmt::Debug;

    /// A parameter buffer of the right shape (its values are meaningless until drawn).
    fn new_param(&self) -> Self::Param;

    /// Draws `θ ~ p(θ | X_S)` into `out` given the statistic of `S` (the prior when `S` is
    /// empty), reusing `out`'s buffers.
    fn sample_posterior<R: Rng + ?Sized>(
        &self,
        s: &Self::Stat,
        rng: &mut R,
        out: &mut Self::Param,
    ) -> Result<()>;

    /// Draws `θ` from the base measure `H`.
    fn sample_prior<R: Rng + ?Sized>(&self, rng: &mut R, out: &mut Self::Param) -> Result<()> {
        let empty = self.empty_stat();
        self.sample_posterior(&empty, rng, out)
    }

    /// Raw sufficient statistics of a set of points for [`ParametricKernel::sample_moments`]:
    /// cheaper to accumulate than [`ConjugateKernel::Stat`] (no cached factor or predictive
    /// to maintain per point), and merged by addition, so parallel reductions over fixed
    /// chunks are cheap and deterministic.
    type Moments: Clone + Send + Sync + std::fmt::Debug;

    /// The moments of the empty set.
    fn new_moments(&self) -> Self::Moments;

    /// Adds data point `i` to `m`. Hot path: no allocation.
    fn moments_add(&self, m: &mut Self::Moments, i: usize);

    /// Adds the points of `b` to `a`.
    fn moments_merge(&self, a: &mut Self::Moments, b: &Self::Moments);

    /// Number of points summarised by `m`.
    fn moments_count(&self, m: &Self::Moments) -> usize;

    /// Draws `θ ~ p(θ | X_S)` into `out` given the moments of `S`: the same law as
    /// [`ParametricKernel::sample_posterior`] on the statistic of `S`.
    fn sample_moments<R: Rng + ?Sized>(
        &self,
        m: &Self::Moments,
        rng: &mut R,
        out: &mut Self::Param,
    ) -> Result<()>;

    /// `ln f(x_i | θ)`, the likelihood of data point `i`. Hot path: no allocation.
    fn ln_f(&self, i: usize, theta: &Self::Param) -> f64;

    /// Hints that data point `i` will be read soon (a cache prefetch), for passes that
    /// gather points from scattered places (a launch's scans of a cluster's members or of a
    /// sample of them), which ask a few points ahead. No effect on any result; the default
    /// does nothing. Cost: O(1).
    #[inline(always)]
    fn prefetch(&self, i: usize) {
        let _ = i;
    }

    /// The log weights of a block of consecutive points against every component, for a label
    /// pass: `out[k · BLOCK + b] = offsets[k] + ln f(x_{first+b} | params[k])` for lanes
    /// `b < count` (`count ≤ BLOCK`, [`super::sweep_cache::BLOCK`]); lanes past `count`
    /// weigh point `first` again (finite values, not to be read). `out` is resized to
    /// `offsets.len() · BLOCK`. Equal to `offsets[k] + ln_f` up to rounding in the last bits,
    /// and identical at every [`crate::simd::Level`]. Normal-Wishart computes it in vectors
    /// with the points in lanes (its `lanes` module); the default calls
    /// [`ParametricKernel::ln_f`] per pair. Cost: one likelihood per (point, component).
    fn ln_f_block(
        &self,
        first: usize,
        count: usize,
        offsets: &[f64],
        params: &[Self::Param],
        out: &mut Vec<f64>,
    ) {
        debug_assert!((1..=BLOCK).contains(&count) && params.len() >= offsets.len());
        weigh_each(
            self,
            |b| first + if b < count { b } else { 0 },
            offsets,
            params,
            out,
        );
    }

    /// [`ParametricKernel::ln_f_block`] for any up to [`BLOCK`] points (in either width,
    /// [`PointIndex`]), `points[b]` in lane
    /// `b` (a sample or the members of a cluster, for the sub-cluster launches): lanes past
    /// `points.len()` weigh `points[0]` again. Normal-Wishart gathers the points into its
    /// lanes; the default calls [`ParametricKernel::ln_f`] per pair. Cost: one likelihood
    /// per (point, component).
    fn ln_f_points<I: PointIndex>(
        &self,
        points: &[I],
        offsets: &[f64],
        params: &[Self::Param],
        out: &mut Vec<f64>,
    ) {
        debug_assert!((1..=BLOCK).contains(&points.len()) && params.len() >= offsets.len());
        let count = points.len();
        weigh_each(
            self,
            |b| points[if b < count { b } else { 0 }].index(),
            offsets,
            params,
            out,
        );
    }

    /// `ln p(θ | X_S)`, the posterior log density (the prior's when `S` is empty).
    fn ln_posterior_density(&self, s: &Self::Stat, theta: &Self::Param) -> f64;

    /// `ln p(θ)`, the base measure's log density.
    fn ln_prior_density(&self, theta: &Self::Param) -> f64 {
        self.ln_posterior_density(&self.empty_stat(), theta)
    }
}

/// The default block weights of [`ParametricKernel::ln_f_block`] and
/// [`ParametricKernel::ln_f_points`]: lane `b` holds the point `point(b)`, weighed by
/// [`ParametricKernel::ln_f`] against each component. Cost: one likelihood per (lane,
/// component).
fn weigh_each<K: ParametricKernel>(
    kernel: &K,
    point: impl Fn(usize) -> usize,
    offsets: &[f64],
    params: &[K::Param],
    out: &mut Vec<f64>,
) {
    out.resize(offsets.len() * BLOCK, 0.0);
    for (k, (&a, theta)) in offsets.iter().zip(params).enumerate() {
        for b in 0..BLOCK {
            out[k * BLOCK + b] = a + kernel.ln_f(point(b), theta);
        }
    }
}

/// `ln G` for `G ~ Gamma(shape, 1)`, exact in log space for small shapes: for `shape < 1` it is
/// `ln G' + ln U / shape` with `G' ~ Gamma(shape + 1, 1)` (Marsaglia & Tsang 2000), which never
/// underflows. Errors if `shape` is not finite and positive. Cost: O(1) expected.
pub fn ln_gamma_variate<R: Rng + ?Sized>(shape: f64, rng: &mut R) -> Result<f64> {
    if !(shape > 0.0 && shape.is_finite()) {
        return Err(Error::param("gamma shape", shape, "a finite number > 0"));
    }
    let boosted = shape < 1.0;
    let a = if boosted { shape + 1.0 } else { shape };
    let dist = rand_distr::Gamma::new(a, 1.0)
        .map_err(|e| Error::param("gamma shape", shape, &e.to_string()))?;
    let g: f64 = dist.sample(rng);
    let mut ln_g = g.ln();
    if boosted {
        ln_g += uniform_open01(rng).ln() / shape;
    }
    Ok(ln_g)
}
