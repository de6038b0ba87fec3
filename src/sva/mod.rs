//! Lin's (2013) one-pass sequential variational approximation (SVA) of a Dirichlet process
//! mixture with a conjugate kernel, and its prune-and-merge variant SVA-PM (MATH §6.5).
//!
//! Lin, D. (2013), "Online learning of nonparametric mixture models via sequential
//! variational approximation", NIPS 26. Each point is seen once: its responsibilities `ρ_i(k)`
//! over the current components and one new component are computed from the components'
//! posterior predictives (the `h_i(k)` of MATH §6.5, step 1), a new component is created when
//! the new one's responsibility exceeds `ε`, and every component absorbs the point with
//! weight `ρ_i(k)` (step 5). The components hold *soft* sufficient statistics: the kernels'
//! own statistics count whole points, so this module keeps its own with real-valued weights
//! ([`SvaKernel`], implemented for [`crate::kernel::NormalWishart`],
//! [`crate::kernel::Diagonal`] and [`crate::kernel::MultinomialDirichlet`]).
//!
//! The result ([`SvaFit`]) is a deterministic approximation of the posterior, not a sample:
//! use it as a fast baseline or as the initial clustering of an exact sampler
//! ([`SvaFit::to_partition`]).
//!
//! Cost of a pass over `n` points with `K` components: `n (K + 1)` predictive evaluations
//! (each O(d²) for Normal-Wishart, O(d) for the diagonal kernel, O(m log M) for a document of
//! m distinct words against a component of M), statistic updates only for the responsibilities
//! that are not negligible (usually one or two per point), and for SVA-PM O(K²) per check, at
//! most every `K` points.

mod config;
mod diagonal;
mod fit;
mod multinomial_dirichlet;
mod normal_wishart;
mod pairs;
mod report;

pub use config::{PruneMerge, SvaConfig};
pub use diagonal::{DiagPosterior, SoftDiag};
pub use fit::{fit, fit_order, fit_shuffled, shuffled_order, SvaEvents, SvaFit};
pub use multinomial_dirichlet::{MdPoint, MdPosterior, SoftMd};
pub use normal_wishart::{NwPosterior, SoftNw};
pub use report::{run, SvaReport};

use crate::error::Result;
use crate::kernel::{ConjugateKernel, SweepCache};

/// Responsibilities below this are set to zero after normalisation (without renormalising):
/// they neither update a component nor enter the merge distances. The probability mass lost
/// is below `K · 1e-10` per point, while every statistic update that is skipped saves O(d²)
/// work (Normal-Wishart) or keeps a component's word list sparse (Multinomial-Dirichlet).
pub const NEGLIGIBLE_RESPONSIBILITY: f64 = 1e-10;

/// A conjugate kernel whose sufficient statistics can absorb points with real-valued weights,
/// as SVA needs (MATH §6.5: `ζ_k = λ + Σ_j ρ_j(k) T(x_j)`, `ζ'_k = λ' + τ Σ_j ρ_j(k)`).
///
/// With integer weights a soft statistic is the kernel's statistic of the multiset of points:
/// [`SvaKernel::soft_ln_marginal`] and [`SvaKernel::soft_ln_predictive`] then equal
/// [`ConjugateKernel::ln_marginal`] and [`ConjugateKernel::ln_predictive`] (checked by
/// property tests). Points are first *loaded* into a reusable buffer ([`SvaKernel::Point`])
/// so that the K predictives and updates of one point share its preparation and allocate
/// nothing.
pub trait SvaKernel: ConjugateKernel {
    /// A soft statistic: the weighted sufficient statistics of a component, with caches.
    type Soft: Clone + Send + Sync + std::fmt::Debug;
    /// A loaded point (reusable buffer).
    type Point: Clone + std::fmt::Debug;
    /// A set of new points (held-out data).
    type NewData: ?Sized;
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

    /// Number of points in `data`.
    fn n_new(data: &Self::NewData) -> usize;

    /// Loads point `j` of `data` into `p`; errors if it does not fit the kernel (wrong
    /// dimension, non-finite value, word outside the vocabulary).
    fn load_new(&self, data: &Self::NewData, j: usize, p: &mut Self::Point) -> Result<()>;

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
