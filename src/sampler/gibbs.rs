//! Collapsed Gibbs sampling, Neal (2000) Algorithm 3 generalised to NRMs given `u`
//! (MATH §1.3, §6.1).

use super::{Chooser, Move, State, StepInfo};
use crate::chooser::{BlockDraws, POINTS};
use crate::error::{Error, Result};
use crate::kernel::sweep_cache::{ErasedCache, BLOCK};
use crate::kernel::{ConjugateKernel, EntryTerms};
use crate::partition::Slot;
use crate::prior::NrmPrior;

/// Which points one Gibbs step visits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GibbsScan {
    /// Every point, in a fresh uniformly random order each step.
    Full,
    /// A uniformly random subset of this many points, in random order (the paper's
    /// `Gibbs_sub`).
    Subset(usize),
}

/// The collapsed Gibbs move: each visited point is removed and reassigned to an existing
/// cluster `c` with weight `κ(n_c+1)/κ(n_c) · p(x_i | X_c)` or to a new cluster with weight
/// `κ(1) · m(x_i)` (MATH §1.3).
///
/// The visiting order is a uniform random permutation drawn through the chooser, independent
/// of the state, which keeps the composition of single-site updates invariant (MATH §5.2 E4).
///
/// Caches, all rebuilt at the start of each step (the prior's hyperparameters and the kernel
/// may differ between steps) and kept exact within it: the join weight `ln κ_join(n_c)` of
/// every cluster, indexed by slot and refreshed only for the (at most two) clusters a point
/// update changes, and one empty statistic for the new-cluster predictive `m(x_i)`. The
/// kernel's statistics carry their own predictive caches (for Normal-Wishart, MATH §2.1).
///
/// Cost per visited point: K + 1 predictive evaluations, O((K + 1) d²) for Normal-Wishart,
/// O(1) prior evaluations, no allocation once the buffers have grown to the number of
/// clusters, and one removal and one insertion only if the point changes cluster (or the
/// kernel cannot weigh its own cluster in place).
#[derive(Clone, Debug)]
pub struct Gibbs {
    scan: GibbsScan,
    order: Vec<usize>,
    point: PointUpdate,
}

impl Gibbs {
    /// A Gibbs move with the given scan.
    pub fn new(scan: GibbsScan) -> Result<Self> {
        if scan == GibbsScan::Subset(0) {
            return Err(Error::param("Gibbs subset size", 0, "at least 1"));
        }
        Ok(Gibbs {
            scan,
            order: Vec::new(),
            point: PointUpdate::default(),
        })
    }
}

/// Where a [`PointUpdate::draw`] puts its point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Placement {
    /// The slot the point was in.
    pub old: Slot,
    /// The drawn cluster, `None` for a new one.
    pub target: Option<Slot>,
    /// Whether the point is still a member of `old` (it was weighed in place), rather than
    /// taken out before the draw.
    pub in_place: bool,
}

/// The single-site Gibbs update of one point from its conditional given all other points
/// (MATH §1.3), shared by the collapsed Gibbs scan and the local move of tree-guided MCMC.
///
/// When the kernel can weigh the point's own cluster without it from the statistic that holds
/// it ([`ConjugateKernel::ln_predictive_member`]), the point is only taken out if it moves; a
/// point that stays is requeued in its member list, exactly as a removal and reinsertion
/// would leave it. Otherwise it is removed first. Either way the weights are the same up to
/// rounding, in the same order (live slots in increasing order, then the new cluster), and
/// the draw consumes the same random numbers.
///
/// Caches, rebuilt by [`PointUpdate::begin`] (the prior's hyperparameters and the kernel may
/// differ between steps) and kept exact within a step: the join weight `ln κ_join(n_c)` of
/// every cluster, indexed by slot, and, when the kernel has one, its [`SweepCache`] of every
/// cluster's predictive (plus the join weights) and the new cluster's, both refreshed only for
/// the (at most two) clusters a point update changes. With the sweep cache a point is weighed
/// against every live cluster at once (in slot order; free slots have no entry), its own
/// cluster by the cache's member weight from the same solve, and drawn by
/// [`Chooser::choose_log_wide`]; without it, cluster by cluster through the partition.
/// A caller that updates points in a known order uses [`PointUpdate::draw_at`], which makes
/// the same draws over blocks of points weighed together.
/// Cost per point: K + 1 predictive evaluations, O(1) prior evaluations, no allocation once
/// the buffers have grown to the number of clusters, and one removal and one insertion only
/// if the point changes cluster (or the kernel cannot weigh its own cluster in place).
///
/// [`SweepCache`]: crate::kernel::SweepCache
#[derive(Clone, Debug, Default)]
pub(crate) struct PointUpdate {
    slots: Vec<Slot>,
    ln_w: Vec<f64>,
    /// `ln κ_join(n_c)` by slot, for live slots.
    ln_join: Vec<f64>,
    /// `ln κ_join(n_c - 1)` by slot, for live slots: the weight of a member's own cluster.
    ln_join_own: Vec<f64>,
    cache: ErasedCache,
    /// A block's weights, `block_w[e · POINTS + b]` for its point `b` and entry `e`.
    block_w: Vec<f64>,
    /// A block's draws, prepared from `block_w`.
    draws: BlockDraws,
    /// Each point of a block: its slot and its own weight, as [`PointUpdate::take_out`]
    /// finds them at the block's start.
    block_own: [(Slot, Option<f64>); POINTS],
    /// The points of the block.
    block_points: [usize; POINTS],
    /// The slot of each cluster entry of the block's weights, as the sweep cache ordered
    /// them when the block was prepared.
    block_slots: [Slot; MAX_BLOCK_ENTRIES],
    /// The prepared block, as its first position in the caller's order and its length;
    /// `None` once a cluster has changed since it was prepared.
    block: Option<(usize, usize)>,
}

// A block's weights come from the sweep cache in the lanes that its draws are prepared in.
const _: () = assert!(BLOCK == POINTS);

/// The most entries (clusters and the new one) for which [`PointUpdate::draw_at`] weighs
/// points in blocks. Measured: with 14 entries in 2 dimensions (the paper's toy set) a sweep
/// by blocks took 0.75 times the time of one point by point; with 120 entries in 6
/// dimensions (its 10k set), 1.15 times, where the point's own chain of operations is a
/// small part of its cost and a block's tables (three values per point and entry) no longer
/// fit the first-level cache. Both ways make the same draws.
const MAX_BLOCK_ENTRIES: usize = 32;

impl PointUpdate {
    /// Fills the join weights of every cluster of `state` and, when the kernel has one, its
    /// sweep cache, with `empty` (the kernel's empty statistic) for the new cluster. Cost: K
    /// prior evaluations and O(K d²) for the Normal-Wishart cache.
    pub fn begin<K: ConjugateKernel, P: NrmPrior>(
        &mut self,
        kernel: &K,
        state: &State<K, P>,
        empty: &K::Stat,
    ) {
        self.block = None;
        let capacity = state.partition.slot_capacity();
        self.ln_join.clear();
        self.ln_join.resize(capacity, f64::NAN);
        self.ln_join_own.clear();
        self.ln_join_own.resize(capacity, f64::NAN);
        self.cache.install(kernel.sweep_cache());
        if let Some(cache) = self.cache.get::<K::Stat>() {
            cache.reset();
            cache.set_new(empty, state.prior.ln_kappa_new());
        }
        for s in 0..capacity {
            self.refresh(state, s);
        }
    }

    /// Recomputes the join weight of the cluster in `slot`, if it is live, and the slot's
    /// entry of the sweep cache.
    #[inline]
    fn refresh<K: ConjugateKernel, P: NrmPrior>(&mut self, state: &State<K, P>, slot: Slot) {
        // A changed cluster changes weights a prepared block holds.
        self.block = None;
        let cluster = state.partition.cluster(slot);
        if let Some(c) = cluster {
            if slot >= self.ln_join.len() {
                self.ln_join.resize(slot + 1, f64::NAN);
                self.ln_join_own.resize(slot + 1, f64::NAN);
            }
            self.ln_join[slot] = state.prior.ln_kappa_join(c.size());
            self.ln_join_own[slot] = match c.size() {
                0 | 1 => f64::NAN,
                n => state.prior.ln_kappa_join(n - 1),
            };
        }
        if let Some(cache) = self.cache.get::<K::Stat>() {
            let entry = cluster.map(|c| {
                let terms = EntryTerms {
                    join: self.ln_join[slot],
                    member: self.ln_join_own[slot],
                };
                (c.stat(), terms)
            });
            cache.set(slot, entry);
        }
    }

    /// The point's own cluster's weight without it, `ln κ_join(n_c - 1) + ln p(x_i | X_c∖i)`,
    /// when the kernel weighs it in place (the cluster has another member); for kernels
    /// without a sweep cache (with one, the cache's [`member`] gives it).
    ///
    /// [`member`]: crate::kernel::SweepCache::member
    #[inline]
    fn own_weight<K: ConjugateKernel, P: NrmPrior>(
        &self,
        kernel: &K,
        state: &State<K, P>,
        i: usize,
        old: Slot,
    ) -> Option<f64> {
        let c = state.partition.cluster(old).filter(|c| c.size() >= 2)?;
        let lp = kernel.ln_predictive_member(i, c.stat())?;
        Some(self.ln_join_own[old] + lp)
    }

    /// The point's slot and own weight ([`PointUpdate::own_weight`]), the point taken out of
    /// its cluster first when there is none.
    fn take_out<K: ConjugateKernel, P: NrmPrior>(
        &mut self,
        kernel: &K,
        state: &mut State<K, P>,
        i: usize,
    ) -> (Slot, Option<f64>) {
        let old = state.partition.slot_of(i);
        let own = self.own_weight(kernel, state, i, old);
        if own.is_none() {
            state.partition.remove(kernel, i);
            self.refresh(state, old);
        }
        (old, own)
    }

    /// Weighs point `i` against every entry of the sweep cache into `ln_w`: its own cluster
    /// without it in place when the cache gives that weight ([`member`]), else after taking
    /// the point out. Returns the point's slot and own weight, or `None` when the kernel has
    /// no sweep cache.
    ///
    /// [`member`]: crate::kernel::SweepCache::member
    fn weigh_cached<K: ConjugateKernel, P: NrmPrior>(
        &mut self,
        kernel: &K,
        state: &mut State<K, P>,
        i: usize,
    ) -> Option<(Slot, Option<f64>)> {
        let old = state.partition.slot_of(i);
        let shared = state.partition.cluster(old).is_some_and(|c| c.size() >= 2);
        let cache = self.cache.get::<K::Stat>()?;
        if shared {
            let own = cache.entry_of(old).expect("a live cluster's entry");
            cache.weigh(i, &mut self.ln_w);
            if let Some(w) = cache.member(own) {
                self.ln_w[own] = w;
                return Some((old, Some(w)));
            }
        }
        state.partition.remove(kernel, i);
        self.refresh(state, old);
        let cache = self.cache.get::<K::Stat>().expect("a sweep cache");
        cache.weigh(i, &mut self.ln_w);
        Some((old, None))
    }

    /// Draws the cluster of point `i` from its conditional; `empty` is the kernel's empty
    /// statistic. The point is taken out of its cluster first unless the kernel weighs it in
    /// place; [`PointUpdate::apply`] carries the draw out.
    pub fn draw<K: ConjugateKernel, P: NrmPrior>(
        &mut self,
        kernel: &K,
        state: &mut State<K, P>,
        empty: &K::Stat,
        i: usize,
        chooser: &mut dyn Chooser,
    ) -> Result<Placement> {
        if let Some((old, own)) = self.weigh_cached(kernel, state, i) {
            debug_assert_eq!(self.ln_w.len(), state.partition.n_clusters() + 1);
            self.shift_new(state);
            let (pick, _) = chooser.choose_log_wide(&self.ln_w)?;
            let cache = self.cache.get::<K::Stat>().expect("a sweep cache");
            return Ok(Placement {
                old,
                target: cache.entry_slots().get(pick).copied(),
                in_place: own.is_some(),
            });
        }
        let (old, own) = self.take_out(kernel, state, i);
        self.slots.clear();
        self.ln_w.clear();
        for (s, c) in state.partition.clusters() {
            self.slots.push(s);
            self.ln_w.push(match own {
                Some(w) if s == old => w,
                _ => self.ln_join[s] + kernel.ln_predictive(i, c.stat()),
            });
        }
        self.ln_w
            .push(state.prior.ln_kappa_new() + kernel.ln_predictive(i, empty));
        self.shift_new(state);
        let (pick, _) = chooser.choose_log(&self.ln_w)?;
        Ok(Placement {
            old,
            target: self.slots.get(pick).copied(),
            in_place: own.is_some(),
        })
    }

    /// Adds a Gibbs-type prior's `ln V(n, k+1) - ln V(n, k)` ([`NrmPrior::ln_new_shift`]) to
    /// the new cluster's weight, the last of `ln_w`, where `k` is the number of clusters of
    /// the other points: every live cluster, since the point is either out or weighed in
    /// place in a cluster it shares. Nothing for the NRMs given `u`, whose weights stay
    /// bit for bit those of the product form.
    #[inline]
    fn shift_new<K: ConjugateKernel, P: NrmPrior>(&mut self, state: &State<K, P>) {
        if state.prior.k_dependent() {
            let k = state.partition.n_clusters();
            if let Some(w) = self.ln_w.last_mut() {
                *w += state.prior.ln_new_shift(state.partition.n(), k);
            }
        }
    }

    /// [`PointUpdate::draw`] of the point `order[t]`, for a caller that updates the points
    /// of `order` in that order ([`PointUpdate::apply`] after each draw, no other change to
    /// the partition in between): the same draw, bit for bit, from the same stream position.
    ///
    /// With a sweep cache of at most [`MAX_BLOCK_ENTRIES`] entries the points are weighed
    /// and their draws prepared in blocks of up to [`POINTS`] ([`PointUpdate::prepare`]): a block holds the weights of the next points
    /// of `order` against the state at its start, with the points in vector lanes, so that a
    /// point's chain of dependent operations (its weights, their maximum, exponentials and
    /// sums) becomes one lane of vector operations. A block stays valid while the points
    /// stay in their clusters (a requeue changes only the member order, which no weight
    /// reads); the first update that changes a cluster ends it, and the next point starts a
    /// new one. At equilibrium few points move, so nearly every block is used whole. Cost
    /// per point: as [`PointUpdate::draw`], without its latency; the points of a block after
    /// a move are weighed again.
    pub fn draw_at<K: ConjugateKernel, P: NrmPrior>(
        &mut self,
        kernel: &K,
        state: &mut State<K, P>,
        empty: &K::Stat,
        order: &[usize],
        t: usize,
        chooser: &mut dyn Chooser,
    ) -> Result<Placement> {
        let i = order[t];
        let b = match self.block {
            Some((t0, len)) if (t0..t0 + len).contains(&t) && self.block_points[t - t0] == i => {
                t - t0
            }
            _ => {
                // A Gibbs-type prior's new-cluster weight depends on whether each point is
                // alone, which a block's shared weights do not tell: point by point.
                let blocks = !state.prior.k_dependent()
                    && self
                        .cache
                        .get::<K::Stat>()
                        .is_some_and(|c| c.entries() < MAX_BLOCK_ENTRIES);
                if !blocks || !self.prepare(state, order, t) {
                    return self.draw(kernel, state, empty, i, chooser);
                }
                0
            }
        };
        let (old, own) = self.block_own[b];
        let entries = self.block_w.len() / POINTS;
        let pick = match chooser.wide_uniform() {
            Some(u) => self.draws.pick(&self.block_w, b, u).map(|(pick, _)| pick),
            None => None,
        };
        let pick = match pick {
            Some(pick) => Ok(pick),
            None => {
                // The chooser draws for itself, or the weights are refused: the draw (or the
                // error) of `draw`, from the point's weights.
                self.ln_w.clear();
                self.ln_w
                    .extend(self.block_w.iter().skip(b).step_by(POINTS).take(entries));
                chooser.choose_log_wide(&self.ln_w).map(|(pick, _)| pick)
            }
        };
        // The drawn entry's slot (the last entry is the new cluster's).
        let target = match pick {
            Ok(pick) if pick + 1 < entries => Some(self.block_slots[pick]),
            _ => None,
        };
        if own.is_none() {
            // The point is alone: taking it out frees its slot, whose entry its weights
            // already have at `-∞`, and ends the block for the points after it.
            state.partition.remove(kernel, i);
            self.refresh(state, old);
        }
        // Refused weights are an error after the point is out, as in `draw`.
        pick?;
        Ok(Placement {
            old,
            target,
            in_place: own.is_some(),
        })
    }

    /// Weighs the points of `order` from `t` on (at most [`POINTS`]) against every entry of
    /// the sweep cache, each point's own cluster with its weight without it
    /// ([`block_members`]), and prepares their draws; the block ends before the first point of
    /// a shared cluster that the cache cannot weigh in place (it must be taken out before it
    /// is weighed, which changes that cluster's weight). Returns false, preparing nothing,
    /// when that is the point at `t`.
    ///
    /// [`block_members`]: crate::kernel::SweepCache::block_members
    fn prepare<K: ConjugateKernel, P: NrmPrior>(
        &mut self,
        state: &State<K, P>,
        order: &[usize],
        t: usize,
    ) -> bool {
        let points = &order[t..(t + POINTS).min(order.len())];
        let mut slots = [0; POINTS];
        let mut shared = [false; POINTS];
        for (b, &i) in points.iter().enumerate() {
            slots[b] = state.partition.slot_of(i);
            shared[b] = state
                .partition
                .cluster(slots[b])
                .is_some_and(|c| c.size() >= 2);
        }
        let cache = self.cache.get::<K::Stat>().expect("a sweep cache");
        let entries = cache.entries() + 1;
        cache.weigh_block(points, &mut self.block_w);
        let mut own = [0; POINTS];
        let mut members = [f64::NAN; POINTS];
        cache.block_members(&slots[..points.len()], &mut own, &mut members);
        // The slots of the entries, for the draws: one copy per block rather than a look-up
        // through the type-erased cache per point (the cache's entries stay as they are
        // until the block ends).
        let entry_slots = cache.entry_slots();
        self.block_slots[..entry_slots.len()].copy_from_slice(entry_slots);
        let len = (0..points.len())
            .find(|&b| shared[b] && members[b].is_nan())
            .unwrap_or(points.len());
        if len == 0 {
            return false;
        }
        for b in 0..len {
            let w = shared[b].then_some(members[b]);
            self.block_own[b] = (slots[b], w);
            self.block_points[b] = points[b];
            // Without an own weight the point is alone, and taking it out frees its slot.
            self.block_w[own[b] * POINTS + b] = w.unwrap_or(f64::NEG_INFINITY);
        }
        self.draws.prepare(&self.block_w, entries);
        self.block = Some((t, len));
        true
    }

    /// Moves point `i` where `placed` says (a requeue if it stays in place) and refreshes the
    /// join weights (and cache entries) of the clusters that changed; returns the point's new
    /// slot.
    pub fn apply<K: ConjugateKernel, P: NrmPrior>(
        &mut self,
        kernel: &K,
        state: &mut State<K, P>,
        i: usize,
        placed: Placement,
    ) -> Slot {
        if placed.in_place {
            if placed.target == Some(placed.old) {
                state.partition.requeue(i);
                return placed.old;
            }
            state.partition.remove(kernel, i);
            self.refresh(state, placed.old);
        }
        let new = match placed.target {
            Some(s) => {
                state.partition.insert(kernel, i, s);
                s
            }
            None => state.partition.insert_new(kernel, i),
        };
        self.refresh(state, new);
        new
    }
}

impl<K: ConjugateKernel, P: NrmPrior> Move<K, P> for Gibbs {
    fn name(&self) -> &'static str {
        match self.scan {
            GibbsScan::Full => "gibbs",
            GibbsScan::Subset(_) => "gibbs-sub",
        }
    }

    fn step(
        &mut self,
        kernel: &K,
        state: &mut State<K, P>,
        chooser: &mut dyn Chooser,
    ) -> Result<StepInfo> {
        let n = state.partition.n();
        let mut order = std::mem::take(&mut self.order);
        match self.scan {
            GibbsScan::Full => chooser.permutation(n, &mut order),
            GibbsScan::Subset(m) => {
                // A partial Fisher-Yates shuffle: the first m entries are a uniform random
                // ordered subset.
                let m = m.min(n);
                order.clear();
                order.extend(0..n);
                for t in 0..m {
                    let j = t + chooser.choose_uniform(n - t);
                    order.swap(t, j);
                }
                order.truncate(m);
            }
        }
        let empty = kernel.empty_stat();
        self.point.begin(kernel, state, &empty);
        let result = (0..order.len()).try_for_each(|t| {
            let placed = self
                .point
                .draw_at(kernel, state, &empty, &order, t, chooser)?;
            self.point.apply(kernel, state, order[t], placed);
            Ok(())
        });
        self.order = order;
        result.map(|()| StepInfo::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::generate::toy_like;
    use crate::kernel::{NormalWishart, NwHyper};
    use crate::partition::Partition;
    use crate::prior::Dp;
    use crate::rng::SeedPlan;
    use crate::sampler::RngChooser;
    use crate::simd::{with_level, Level};
    use std::sync::Arc;

    /// The labels and the bits of the log joint after each of `sweeps` Gibbs sweeps from one
    /// cluster on 300 points of a toy-like set, at `level`; by blocks of points (the move's
    /// own sweep) or point by point.
    fn trace(level: Level, sweeps: usize, blocks: bool) -> Vec<(Vec<usize>, u64)> {
        let (data, _) = toy_like(5);
        let rows: Vec<Vec<f64>> = (0..300).map(|i| data.row(i * 4).to_vec()).collect();
        let data = crate::data::DenseData::from_rows(&rows).unwrap();
        let hyper = NwHyper::from_data(&data).unwrap();
        let kernel = NormalWishart::new(Arc::new(data), hyper).unwrap();
        let mut state = State {
            partition: Partition::single(&kernel),
            prior: Dp::new(1.0).unwrap(),
        };
        let mut rng = SeedPlan::new(17).chain(0);
        let mut gibbs = Gibbs::new(GibbsScan::Full).unwrap();
        let empty = kernel.empty_stat();
        with_level(level, || {
            (0..sweeps)
                .map(|_| {
                    let mut chooser = RngChooser::new(&mut rng);
                    if blocks {
                        gibbs.step(&kernel, &mut state, &mut chooser).unwrap();
                    } else {
                        let mut order = Vec::new();
                        chooser.permutation(state.partition.n(), &mut order);
                        gibbs.point.begin(&kernel, &state, &empty);
                        for i in order {
                            let placed = gibbs
                                .point
                                .draw(&kernel, &mut state, &empty, i, &mut chooser)
                                .unwrap();
                            gibbs.point.apply(&kernel, &mut state, i, placed);
                        }
                    }
                    (
                        state.partition.canonical_labels(),
                        state.ln_joint().to_bits(),
                    )
                })
                .collect()
        })
    }

    /// The same seed gives the same chain, bit for bit, at every level this CPU can run (the
    /// levels it cannot run fall back to the best it can).
    #[test]
    fn every_level_gives_the_same_chain() {
        let want = trace(Level::Portable, 12, true);
        assert!(
            want.last().unwrap().0.iter().max() > Some(&0),
            "the chain split"
        );
        for level in Level::ALL {
            assert!(
                trace(level, 12, true) == want,
                "{level:?} differs from portable"
            );
        }
    }

    /// The sweep by blocks of points makes the draws of the point-by-point updates, bit for
    /// bit, at every level, through the many moves of a chain that starts in one cluster.
    #[test]
    fn blocks_make_the_point_by_point_draws() {
        for level in Level::ALL {
            assert!(
                trace(level, 12, true) == trace(level, 12, false),
                "{level:?}"
            );
        }
    }
}
