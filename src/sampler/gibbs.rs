//! Collapsed Gibbs sampling, Neal (2000) Algorithm 3 generalised to NRMs given `u`
//! (MATH §1.3, §6.1).

use super::{Chooser, Move, State, StepInfo};
use crate::error::{Error, Result};
use crate::kernel::sweep_cache::ErasedCache;
use crate::kernel::ConjugateKernel;
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
/// cluster's predictive (plus the join weight) and the new cluster's, both refreshed only for
/// the (at most two) clusters a point update changes. With the sweep cache a point is weighed
/// against every slot at once (a free slot weighs `-∞`) and drawn by
/// [`Chooser::choose_log_wide`]; without it, cluster by cluster through the partition.
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
}

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
        let capacity = state.partition.slot_capacity();
        self.ln_join.clear();
        self.ln_join.resize(capacity, f64::NAN);
        self.ln_join_own.clear();
        self.ln_join_own.resize(capacity, f64::NAN);
        self.cache.install(kernel.sweep_cache());
        if let Some(cache) = self.cache.get::<K::Stat>() {
            cache.reset(capacity);
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
            cache.set(slot, cluster.map(|c| (c.stat(), self.ln_join[slot])));
        }
    }

    /// The point's own cluster's weight without it, `ln κ_join(n_c - 1) + ln p(x_i | X_c∖i)`,
    /// when the kernel weighs it in place (the cluster has another member).
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

    /// Weighs point `i` against every entry of the sweep cache into `ln_w`, its own cluster
    /// (slot `old`) with `own` if given; false when the kernel has no sweep cache.
    fn weigh_cached<S: 'static>(&mut self, i: usize, old: Slot, own: Option<f64>) -> bool {
        let Some(cache) = self.cache.get::<S>() else {
            return false;
        };
        cache.weigh(i, &mut self.ln_w);
        if let Some(w) = own {
            self.ln_w[old] = w;
        }
        true
    }

    /// The placement of a draw `pick` among the cached entries (the last is a new cluster).
    fn placement(&self, old: Slot, pick: usize, own: Option<f64>) -> Placement {
        Placement {
            old,
            target: (pick + 1 < self.ln_w.len()).then_some(pick),
            in_place: own.is_some(),
        }
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
        let (old, own) = self.take_out(kernel, state, i);
        if self.weigh_cached::<K::Stat>(i, old, own) {
            debug_assert_eq!(self.ln_w.len(), state.partition.slot_capacity() + 1);
            let (pick, _) = chooser.choose_log_wide(&self.ln_w)?;
            return Ok(self.placement(old, pick, own));
        }
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
        let (pick, _) = chooser.choose_log(&self.ln_w)?;
        Ok(Placement {
            old,
            target: self.slots.get(pick).copied(),
            in_place: own.is_some(),
        })
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
        let result = order.iter().try_for_each(|&i| {
            let placed = self.point.draw(kernel, state, &empty, i, chooser)?;
            self.point.apply(kernel, state, i, placed);
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
    /// cluster on 300 points of a toy-like set, at `level`.
    fn trace(level: Level, sweeps: usize) -> Vec<(Vec<usize>, u64)> {
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
        with_level(level, || {
            (0..sweeps)
                .map(|_| {
                    gibbs
                        .step(&kernel, &mut state, &mut RngChooser::new(&mut rng))
                        .unwrap();
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
        let want = trace(Level::Portable, 12);
        assert!(
            want.last().unwrap().0.iter().max() > Some(&0),
            "the chain split"
        );
        for level in Level::ALL {
            assert!(trace(level, 12) == want, "{level:?} differs from portable");
        }
    }
}
