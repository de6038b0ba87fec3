//! Conjugate kernels: the likelihood `f(x | θ)` with its conjugate base measure `H`, seen only
//! through per-cluster sufficient statistics and the log marginal likelihood
//! `ln m(X_c) = ln ∫ Π_{i∈c} f(x_i | θ) H(dθ)` (MATH §2).
//!
//! A kernel owns its data set and hyperparameters; samplers refer to points by index only, so
//! no sampler knows which kernel it runs on. Statistics carry their own caches (for the
//! Normal-Wishart kernel, the Cholesky factor of Ψ_n), kept valid by every method here.

mod centred;
pub mod cholesky;
pub mod hyperprior;
pub mod params;
pub mod predictive;
pub mod registry;
mod scratch;
pub mod settings;
pub mod soft;
pub mod sweep_cache;
pub mod tempered;

// The registered kernels' modules (`src/kernel/<name>/`).
crate::registered_kernels!(declare_kernel_modules!);

pub use diagonal::{DiagHyper, DiagMoments, DiagParam, DiagStat, Diagonal};
pub use hyperprior::{HyperKernel, KernelHyper, KernelHyperPriors, LogNormalPrior};
pub use multinomial_dirichlet::{DirichletHyper, MdParam, MdStat, MultinomialDirichlet};
pub use normal_wishart::{NormalWishart, NwHyper, NwMoments, NwParam, NwStat};
pub use params::{ln_gamma_variate, ParametricKernel};
pub use predictive::PredictiveKernel;
pub use registry::{AnyKernel, Kernel, KernelKind};
pub use settings::{KernelSettings, NwDefaults, RealColumns};
pub use soft::SvaKernel;
pub use sweep_cache::{EntryTerms, SweepCache};
pub use tempered::Tempered;

/// A point index as a list of points holds it: `usize`, or `u32` where the lists are as long
/// as the data (a partition's member lists, the sets of the sub-cluster proposals; 4 bytes a
/// point instead of 8, within [`crate::partition::MAX_POINTS`]). Kernels that read such lists
/// directly take either ([`ConjugateKernel::stat_of_compact`]), the same code and the same
/// bits.
pub trait PointIndex: Copy + Send + Sync + 'static {
    /// The index.
    fn index(self) -> usize;

    /// `kernel`'s batch statistic of `points` ([`ConjugateKernel::stat_of`] or
    /// [`ConjugateKernel::stat_of_compact`], the same bits).
    fn stat_of<K: ConjugateKernel>(kernel: &K, points: &[Self]) -> K::Stat;
}

impl PointIndex for usize {
    #[inline(always)]
    fn index(self) -> usize {
        self
    }

    fn stat_of<K: ConjugateKernel>(kernel: &K, points: &[usize]) -> K::Stat {
        kernel.stat_of(points)
    }
}

impl PointIndex for u32 {
    #[inline(always)]
    fn index(self) -> usize {
        self as usize
    }

    fn stat_of<K: ConjugateKernel>(kernel: &K, points: &[u32]) -> K::Stat {
        kernel.stat_of_compact(points)
    }
}

/// What a predictive evaluation leaves behind for adding the same point to the same
/// statistic ([`ConjugateKernel::ln_predictive_probed`], [`ConjugateKernel::add_probed`]).
///
/// A tree insertion weighs a point against a node (a predictive) and then, often, adds the
/// point to that node. The Normal-Wishart predictive takes `ln(1 + r_n/(r_n+1) ‖L_n⁻¹(y -
/// ξ_n)‖²)`, which is the log-determinant change of the rank-1 update that follows (MATH
/// §2.1, determinant lemma); kept here, the add needs no logarithm. An empty probe (the
/// default, and what kernels without the shortcut leave) makes `add_probed` a plain `add`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Probe {
    /// The predictive's log-determinant ratio; NaN when empty.
    pub(crate) ln_ratio: f64,
}

impl Default for Probe {
    fn default() -> Self {
        Probe { ln_ratio: f64::NAN }
    }
}

impl Probe {
    /// Whether the probe holds anything.
    pub fn is_empty(&self) -> bool {
        self.ln_ratio.is_nan()
    }
}

/// A conjugate kernel over an owned data set whose points are addressed by index.
///
/// Invariants every implementation upholds (checked by property tests):
/// `ln_predictive(i, s) == ln_marginal(s ∪ {i}) - ln_marginal(s)`,
/// `ln_marginal_pair(a, b) == ln_marginal(a ∪ b)`, and statistics after any sequence of
/// `add`/`remove`/`merge` equal those computed in one batch.
pub trait ConjugateKernel: Clone + Send + Sync + std::fmt::Debug {
    /// Per-cluster sufficient statistic with its caches (an owned value: `'static`).
    type Stat: Clone + Send + Sync + std::fmt::Debug + 'static;

    /// Number of data points the kernel holds.
    fn n_points(&self) -> usize;

    /// The statistic of the empty set.
    fn empty_stat(&self) -> Self::Stat;

    /// The statistic of the given points (any order). Cost: one `add` per point.
    fn stat_of(&self, points: &[usize]) -> Self::Stat {
        let mut s = self.empty_stat();
        for &i in points {
            self.add(&mut s, i);
        }
        s
    }

    /// [`ConjugateKernel::stat_of`] of points listed in 32 bits ([`PointIndex`]): the same
    /// statistic, bit for bit. The default widens the list and calls `stat_of`; kernels whose
    /// batch statistic is on a hot path read the list as it is. Cost: that of `stat_of`.
    fn stat_of_compact(&self, points: &[u32]) -> Self::Stat {
        let wide: Vec<usize> = points.iter().map(|&i| i as usize).collect();
        self.stat_of(&wide)
    }

    /// Number of points summarised by `s`.
    fn count(&self, s: &Self::Stat) -> usize;

    /// Adds point `i` to `s`.
    fn add(&self, s: &mut Self::Stat, i: usize);

    /// Removes point `i`, which must be in `s`.
    fn remove(&self, s: &mut Self::Stat, i: usize);

    /// Replaces `a` by the statistic of the union `a ∪ b` (disjoint sets).
    fn merge(&self, a: &mut Self::Stat, b: &Self::Stat);

    /// `ln m(X_S)`; 0 for the empty set.
    fn ln_marginal(&self, s: &Self::Stat) -> f64;

    /// `ln m(X_{A ∪ B})` for disjoint `a`, `b`, without building the union's caches.
    fn ln_marginal_pair(&self, a: &Self::Stat, b: &Self::Stat) -> f64;

    /// `ln p(x_i | X_S) = ln m(X_{S ∪ {i}}) - ln m(X_S)`, for `i` not in `s`.
    fn ln_predictive(&self, i: usize, s: &Self::Stat) -> f64;

    /// An upper bound of `ln_predictive(i, s)` over all points `i`, as that method computes
    /// it, for callers that can skip a predictive whose bound already decides a comparison
    /// (the tree engine's descent). The default, `+∞`, bounds nothing.
    fn ln_predictive_max(&self, s: &Self::Stat) -> f64 {
        let _ = s;
        f64::INFINITY
    }

    /// [`ConjugateKernel::ln_predictive`], bit for bit, with the probe that
    /// [`ConjugateKernel::add_probed`] of the same point to the same, unchanged statistic can
    /// reuse. The default returns an empty probe.
    fn ln_predictive_probed(&self, i: usize, s: &Self::Stat) -> (f64, Probe) {
        (self.ln_predictive(i, s), Probe::default())
    }

    /// [`ConjugateKernel::add`] of point `i` to `s`, given the probe that
    /// [`ConjugateKernel::ln_predictive_probed`] left for this point and this statistic as it
    /// is now (the caller's guarantee), or an empty probe. The default ignores the probe.
    fn add_probed(&self, s: &mut Self::Stat, i: usize, probe: &Probe) {
        let _ = probe;
        self.add(s, i);
    }

    /// `ln p(x_i | X_{S∖{i}}) = ln m(X_S) - ln m(X_{S∖{i}})` for a member `i` of `s`, computed
    /// from `s` as it is, or `None` when the kernel has no shortcut for it (or, for this `s`,
    /// no accurate one). Callers then remove `i` and call [`ConjugateKernel::ln_predictive`].
    ///
    /// This lets a Gibbs scan weigh a point's own cluster without first removing the point,
    /// so a point that stays costs no statistic update at all. The default returns `None`.
    fn ln_predictive_member(&self, i: usize, s: &Self::Stat) -> Option<f64> {
        let _ = (i, s);
        None
    }

    /// [`ConjugateKernel::ln_predictive_probed`] of point `i` against two statistics at once
    /// (the two groups of a split-merge proposal), each equal to that method's result up to
    /// rounding in the last bits and the same at every [`crate::simd::Level`]. A kernel
    /// overrides it when weighing both together is cheaper; the default makes the two calls.
    fn ln_predictive_pair(&self, i: usize, a: &Self::Stat, b: &Self::Stat) -> [(f64, Probe); 2] {
        [
            self.ln_predictive_probed(i, a),
            self.ln_predictive_probed(i, b),
        ]
    }

    /// For a member `i` of `own`: [`ConjugateKernel::ln_predictive_member`] against `own`
    /// and [`ConjugateKernel::ln_predictive_probed`] against `other` (which does not hold
    /// `i`), at once, as [`ConjugateKernel::ln_predictive_pair`] does. The default makes the
    /// two calls.
    fn ln_predictive_member_pair(
        &self,
        i: usize,
        own: &Self::Stat,
        other: &Self::Stat,
    ) -> (Option<f64>, (f64, Probe)) {
        (
            self.ln_predictive_member(i, own),
            self.ln_predictive_probed(i, other),
        )
    }

    /// A contiguous predictive cache for sweeps that weigh every point against every cluster
    /// (see [`SweepCache`]), or `None` (the default) when the kernel has none; callers then
    /// call [`ConjugateKernel::ln_predictive`] per cluster. Cost: O(1) to make; it is sized by
    /// its owner.
    fn sweep_cache(&self) -> Option<Box<dyn SweepCache<Self::Stat>>> {
        None
    }

    /// Whether the kernel's data hold latent values: missing coordinates that are part of a
    /// chain's state, drawn inside each sweep by data augmentation
    /// ([`ConjugateKernel::redraw_latent`]). `false` (the default) for every kernel but the
    /// product kernel's full-covariance block over rows with missing real entries
    /// ([`mixed::Mixed`]). Then `ln_marginal` and the predictives are those of the data
    /// completed by the current values, and the chain's target is the joint of the partition
    /// and the latent values, whose margin in the partition is the posterior given the
    /// observed entries. Cost: O(1).
    fn has_latent(&self) -> bool {
        false
    }

    /// The current latent values in the kernel's fixed order (empty without any): what a
    /// checkpoint records. Cost: O(latent values).
    fn latent(&self) -> Vec<f64> {
        Vec::new()
    }

    /// The points whose data hold latent values, in increasing order (empty without any): the
    /// points a redraw can change. Cost: O(latent values).
    fn latent_points(&self) -> Vec<usize> {
        Vec::new()
    }

    /// The kernel with its latent values at their starting values, which depend on the
    /// observed data alone (the product kernel's block: each missing coordinate at its
    /// column's observed mean), or `None` (the default) without latent values. What a structure
    /// that must not follow the chain's draws of the latent values is built from (the
    /// tree-guided sampler's reference tree). Cost: one kernel rebuild.
    fn at_latent_start(&self) -> crate::error::Result<Option<Self>> {
        Ok(None)
    }

    /// The kernel with its latent values set to `values` (a checkpoint's, in the order of
    /// [`ConjugateKernel::latent`]). Errors if they do not fit. Cost: one kernel rebuild.
    fn with_latent(&self, values: &[f64]) -> crate::error::Result<Self> {
        if values.is_empty() {
            Ok(self.clone())
        } else {
            Err(crate::error::Error::Usage(format!(
                "{} latent values given to a kernel without latent values",
                values.len()
            )))
        }
    }

    /// One Gibbs update of the latent values given the partition (the members of each
    /// cluster, in a fixed order), drawing from `rng`: the kernel over the new values, or
    /// `None` (the default) without latent values. The caller rebuilds every cluster's
    /// statistic under the new kernel. Cost: kernel-specific (see [`mixed::Mixed`]).
    fn redraw_latent(
        &self,
        _clusters: &[&[usize]],
        _rng: &mut crate::rng::NrmmRng,
    ) -> crate::error::Result<Option<Self>> {
        Ok(None)
    }
}
