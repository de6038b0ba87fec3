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

/// The additive terms of a cache entry's weights: its cluster's join weight `ln κ_join(n)`,
/// added to the predictive of a point outside the cluster, and `ln κ_join(n - 1)`, added to
/// the predictive of a member without it (NaN for a cluster of fewer than two points).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EntryTerms {
    /// The term of a point outside the cluster.
    pub join: f64,
    /// The term of a member weighed without itself.
    pub member: f64,
}

/// The log weights `a_e + ln p(x_i | S_e)` of one point against a table of entries `e`, each a
/// statistic `S_e` with an additive term `a_e` (a cluster's join weight): entries
/// `0..entries()` are the clusters, one per partition slot that holds one, and entry
/// `entries()` is the new cluster's. The table is compact, so that a sweep weighs no free
/// slot, and in slot order, so that its weights come in the order of the partition's live
/// clusters (a draw from them picks what a draw over the clusters would): a cluster's entry
/// is inserted at its place when its slot is first set, and the entries after a removed one
/// move forward ([`SweepCache::entry_slots`] and [`SweepCache::entry_of`] translate). For
/// a member of an entry's cluster, the weight of that cluster without it,
/// `b_e + ln p(x_i | S_e∖i)`, comes from the same computation ([`SweepCache::member`]), so a
/// sweep weighs a point that stays in place without taking it out.
///
/// Implementations compute every weight as [`crate::kernel::ConjugateKernel::ln_predictive`]
/// (and [`crate::kernel::ConjugateKernel::ln_predictive_member`]) does up to rounding in the
/// last bits, and identically at every [`crate::simd::Level`].
pub trait SweepCache<S>: Send + Sync + std::fmt::Debug {
    /// Empties the table: no cluster entries, the new cluster's entry (as last set) first.
    /// Cost: O(capacity · d²) for Normal-Wishart.
    fn reset(&mut self);

    /// Sets the entry of `slot` to `stat` with additive terms `terms` (appending one if the
    /// slot has none), or removes the slot's entry (`None`). Cost: O(d²) to update an entry,
    /// O(entries · d²) to insert or remove one (which moves the entries after it).
    fn set(&mut self, slot: usize, entry: Option<(&S, EntryTerms)>);

    /// Sets the new-cluster entry to the empty statistic `empty` with additive term `ln_a`.
    /// Cost: O(d²).
    fn set_new(&mut self, empty: &S, ln_a: f64);

    /// Number of cluster entries (the new cluster's entry follows them).
    fn entries(&self) -> usize;

    /// The slot of each cluster entry, in entry order (`entries()` of them).
    fn entry_slots(&self) -> &[usize];

    /// The entry of the cluster in `slot`; `None` when the slot has no entry.
    fn entry_of(&self, slot: usize) -> Option<usize>;

    /// Writes the log weight of data point `i` against every entry into `out`, which it
    /// resizes to `entries() + 1`. Cost: for Normal-Wishart, `(entries + 1) · d²/2`
    /// multiply-adds and as many logarithms, in vectors of [`LANES`].
    fn weigh(&mut self, i: usize, out: &mut Vec<f64>);

    /// [`SweepCache::weigh`] for up to [`BLOCK`] points at once: writes the weight of point
    /// `points[b]` against entry `e` into `out[e · BLOCK + b]` for every entry (`entries() + 1`
    /// of them), resizing `out` to `(entries() + 1) · BLOCK`; lanes past `points.len()` hold
    /// unspecified values. Each weight has the same bits as [`SweepCache::weigh`] gives it.
    ///
    /// A sweep that works ahead over the next points of its order against one state uses it:
    /// with the points in vector lanes and each entry's values broadcast, the cost is the
    /// arithmetic's throughput rather than the latency of one point's chain of dependent
    /// operations. Cost: as [`SweepCache::weigh`] per point, without its latency.
    fn weigh_block(&mut self, points: &[usize], out: &mut Vec<f64>);

    /// After [`SweepCache::weigh`] of a point `i` in the cluster of entry `entry`: the weight
    /// of that cluster without the point, `b + ln p(x_i | S∖i)` with `b` the entry's member
    /// term, or `None` when the kernel cannot weigh it in place (the cluster has fewer than
    /// two points, or [`crate::kernel::ConjugateKernel::ln_predictive_member`] would
    /// decline). Cost: O(1) and one logarithm.
    fn member(&self, entry: usize) -> Option<f64>;

    /// After [`SweepCache::weigh_block`], for each point `b` of the block in the cluster of
    /// `slots[b]` (a slot with an entry): that entry into `own[b]` and its
    /// [`SweepCache::member`] weight into `out[b]`, NaN for `None` and for lanes past
    /// `slots.len()`, with the bits that [`SweepCache::member`] gives. Cost: one vector of
    /// logarithms.
    fn block_members(&self, slots: &[usize], own: &mut [usize; BLOCK], out: &mut [f64; BLOCK]);
}

/// Marks a slot without an entry in [`EntrySlots`].
const NO_ENTRY: usize = usize::MAX;

/// The slot ↔ entry map of a [`SweepCache`]: one entry per slot that has one, kept in slot
/// order (see [`SweepCache`]). Cost: O(1) to look up, O(entries) to insert or remove.
#[derive(Clone, Debug, Default)]
pub(crate) struct EntrySlots {
    /// The entry of each slot, `NO_ENTRY` for a slot without one.
    entry_of: Vec<usize>,
    /// The slot of each entry.
    slot_at: Vec<usize>,
}

impl EntrySlots {
    /// No entries.
    pub(crate) fn clear(&mut self) {
        self.entry_of.clear();
        self.slot_at.clear();
    }

    /// Number of entries.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.slot_at.len()
    }

    /// The slot of each entry, in entry order.
    pub(crate) fn slots(&self) -> &[usize] {
        &self.slot_at
    }

    /// The entry of `slot`, if it has one.
    #[inline]
    pub(crate) fn entry(&self, slot: usize) -> Option<usize> {
        self.entry_of.get(slot).copied().filter(|&e| e != NO_ENTRY)
    }

    /// Gives `slot` (which has no entry) an entry at its place in slot order and returns it;
    /// the entries from there on move back by one.
    pub(crate) fn insert(&mut self, slot: usize) -> usize {
        debug_assert!(self.entry(slot).is_none(), "slot {slot} has an entry");
        if slot >= self.entry_of.len() {
            self.entry_of.resize(slot + 1, NO_ENTRY);
        }
        let e = self.slot_at.partition_point(|&s| s < slot);
        self.slot_at.insert(e, slot);
        self.renumber(e);
        e
    }

    /// Takes `slot`'s entry away and returns it (`None` when it has none); the entries after
    /// it move forward by one.
    pub(crate) fn remove(&mut self, slot: usize) -> Option<usize> {
        let e = self.entry(slot)?;
        self.entry_of[slot] = NO_ENTRY;
        self.slot_at.remove(e);
        self.renumber(e);
        Some(e)
    }

    /// Records the entries of the slots from entry `from` on.
    fn renumber(&mut self, from: usize) {
        for (e, &slot) in self.slot_at.iter().enumerate().skip(from) {
            self.entry_of[slot] = e;
        }
    }
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
