//! Contiguous per-cluster predictive caches for sweeps that weigh a point against every
//! cluster (collapsed Gibbs and the moves built on its single-site update).
//!
//! A statistic keeps what its own predictive needs, but a sweep reads every cluster's for
//! every point: following each cluster's heap buffer through the partition's slot map costs
//! more than the arithmetic. A [`SweepCache`] copies those values into one table laid out for
//! vectors (entries in groups of [`LANES`], each value of a group in one contiguous run),
//! refreshed only for the clusters a move changes, and weighs a point against every entry at
//! once with the branch-free logarithm of [`crate::vecmath`], at the best
//! [`crate::simd::Level`] of the CPU.

use std::any::Any;

/// Entries per group of a cache's table: one vector of 8 doubles (one AVX-512 register, two
/// AVX2 registers).
pub const LANES: usize = 8;

/// Points weighed together by [`SweepCache::weigh_block`]: one vector of 8 doubles, one
/// point per lane.
pub const BLOCK: usize = 8;

/// The log weights `a_e + ln p(x_i | S_e)` of one point against a table of entries `e`, each a
/// statistic `S_e` with an additive term `a_e` (a cluster's join weight): entries `0..slots`
/// are indexed by the partition's slots (an entry without a cluster weighs `-∞`), and entry
/// `slots` is the new cluster's.
///
/// Implementations compute every weight as [`crate::kernel::ConjugateKernel::ln_predictive`]
/// does up to rounding in the last bits, and identically at every
/// [`crate::simd::Level`].
pub trait SweepCache<S>: Send + Sync + std::fmt::Debug {
    /// Empties the table and sizes it for `slots` slot entries, all without a cluster.
    /// Cost: O(slots · d²) for Normal-Wishart.
    fn reset(&mut self, slots: usize);

    /// Sets the entry of `slot` to `stat` with additive term `ln_a`, or to no cluster
    /// (`None`), growing the table if `slot` is beyond it. Cost: O(d²).
    fn set(&mut self, slot: usize, entry: Option<(&S, f64)>);

    /// Sets the new-cluster entry to the empty statistic `empty` with additive term `ln_a`.
    /// Cost: O(d²).
    fn set_new(&mut self, empty: &S, ln_a: f64);

    /// Number of slot entries (the new cluster's entry follows them).
    fn slots(&self) -> usize;

    /// Writes the log weight of data point `i` against every entry into `out`, which it
    /// resizes to `slots() + 1`. Cost: for Normal-Wishart, `(slots + 1) · d²/2`
    /// multiply-adds and as many logarithms, in vectors of [`LANES`].
    fn weigh(&mut self, i: usize, out: &mut Vec<f64>);

    /// [`SweepCache::weigh`] for up to [`BLOCK`] points at once: writes the weight of point
    /// `points[b]` against entry `e` into `out[e · BLOCK + b]` for every entry (`slots() + 1`
    /// of them), resizing `out` to `(slots() + 1) · BLOCK`; lanes past `points.len()` hold
    /// unspecified values. Each weight has the same bits as [`SweepCache::weigh`] gives it.
    ///
    /// A sweep that works ahead over the next points of its order against one state uses it:
    /// with the points in vector lanes and each entry's values broadcast, the cost is the
    /// arithmetic's throughput rather than the latency of one point's chain of dependent
    /// operations. Cost: as [`SweepCache::weigh`] per point, without its latency.
    fn weigh_block(&mut self, points: &[usize], out: &mut Vec<f64>);
}

/// A sweep's cache for a kernel's statistic type, held without naming that type (the moves
/// that use it are generic in their methods only), or none when the kernel has no
/// [`SweepCache`]. Cloning gives none: a cache is scratch that its owner rebuilds at the
/// start of every step.
#[derive(Default)]
pub(crate) struct ErasedCache(Option<Box<dyn Any + Send + Sync>>);

impl ErasedCache {
    /// Holds `cache` (or none).
    pub fn install<S: 'static>(&mut self, cache: Option<Box<dyn SweepCache<S>>>) {
        self.0 = cache.map(|c| Box::new(c) as Box<dyn Any + Send + Sync>);
    }

    /// The cache, if one for statistics `S` is held.
    #[inline]
    pub fn get<S: 'static>(&mut self) -> Option<&mut (dyn SweepCache<S> + 'static)> {
        self.0
            .as_mut()
            .and_then(|c| c.downcast_mut::<Box<dyn SweepCache<S>>>())
            .map(|c| &mut **c)
    }
}

impl Clone for ErasedCache {
    fn clone(&self) -> Self {
        ErasedCache(None)
    }
}

impl std::fmt::Debug for ErasedCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = if self.0.is_some() { "held" } else { "none" };
        write!(f, "ErasedCache({held})")
    }
}
