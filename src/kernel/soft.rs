//! Soft statistics: what a kernel offers Lin's sequential variational approximation
//! ([`crate::sva`]), whose components absorb points with real-valued weights.

use super::{PredictiveKernel, SweepCache};
use crate::error::Result;

/// A conjugate kernel whose sufficient statistics can absorb points with real-valued weights,
/// as SVA needs (MATH §6.5: `ζ_k = λ + Σ_j ρ_j(k) T(x_j)`, `ζ'_k = λ' + τ Σ_j ρ_j(k)`).
///
/// With integer weights a soft statistic is the kernel's statistic of the multiset of points:
/// [`SvaKernel::soft_ln_marginal`] and [`SvaKernel::soft_ln_predictive`] then equal
/// [`super::ConjugateKernel::ln_marginal`] and [`super::ConjugateKernel::ln_predictive`] (checked by
/// property tests). Points are first *loaded* into a reusable buffer ([`SvaKernel::Point`])
/// so that the K predictives and updates of one point share its preparation and allocate
/// nothing.
pub trait SvaKernel: PredictiveKernel {
    /// A soft statistic: the weighted sufficient statistics of a component, with caches.
    type Soft: Clone + Send + Sync + std::fmt::Debug;
    /// A loaded point (reusable buffer).
    type Point: Clone + std::fmt::Debug;
    /// The posterior parameters of one component.
    type Posterior: Clone + std::fmt::Debug + serde::Serialize;

    /// The statistic of no point (the prior). Errors only if the prior cannot be factorised.
    fn soft_empty(&self) -> Result<Self::Soft>;

    /// The total weight `Σ_j ρ_j(k)` absorbed by `s`.
    fn soft_weight(s: &Self::Soft) -> f64;

    /// An empty point buffer.
    fn new_point(&self) -> Self::Point;

    /// Loads data point `i` (`i < n_points()`) into `p`.
    fn load_point(&self, i: usize, p: &mut Self::Point);

    /// Loads point `j` of `data` into `p`; errors if it does not fit the kernel (wrong
    /// dimension, non-finite value, word outside the vocabulary).
    fn load_new(
        &self,
        data: &<Self as PredictiveKernel>::NewData,
        j: usize,
        p: &mut Self::Point,
    ) -> Result<()>;

    /// `ln p(x | S)`: the posterior predictive of the loaded point under the weighted
    /// statistic `s` (Lin's `h_i(k)`, MATH §6.5 step 1).
    fn soft_ln_predictive(&self, p: &Self::Point, s: &Self::Soft) -> f64;

    /// Adds the loaded point to `s` with weight `weight > 0`.
    fn soft_add(&self, s: &mut Self::Soft, p: &Self::Point, weight: f64);

    /// Replaces `a` by the statistic of both components' points; the prior is counted once
    /// (MATH §6.5: the duplicated `λ, λ'` are subtracted).
    fn soft_merge(&self, a: &mut Self::Soft, b: &Self::Soft);

    /// `ln m(S)`, the log marginal likelihood of the weighted points (0 for the empty set).
    fn soft_ln_marginal(&self, s: &Self::Soft) -> f64;

    /// The posterior parameters of `s`.
    fn posterior(&self, s: &Self::Soft) -> Self::Posterior;

    /// A contiguous predictive cache of soft statistics ([`SweepCache`]) whose
    /// [`SweepCache::weigh`] of data point `i` gives `ln_a + soft_ln_predictive` of the
    /// loaded point to rounding, or `None` (the default): a pass then calls
    /// [`SvaKernel::soft_ln_predictive`] per component. Normal-Wishart has one (its
    /// predictives in vectors of components, with the vector logarithm). Cost: O(1) to make.
    fn soft_sweep_cache(&self) -> Option<Box<dyn SweepCache<Self::Soft>>> {
        None
    }
}
