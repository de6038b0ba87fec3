//! Building forests: sequential exact / noisy IBHC (MATH §3.4) and greedy BHC (MATH §3.3).

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use super::{Forest, NodeKey, PairStats};
use crate::chooser::Chooser;
use crate::error::{Error, Result};
use crate::kernel::ConjugateKernel;
use crate::prior::NrmPrior;

/// How [`Forest::sequential_insert`] places an item whose best tree `T*` accepts it
/// (`ln d(x, T*) ≤ 0`), MATH §3.4.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum IbhcMode {
    /// Exact IBHC: SeqInsert into `T*`, then Update with destroy; destroyed siblings go to the
    /// back of the queue and are inserted again later.
    #[default]
    Exact,
    /// Noisy IBHC (the reference's initialisation): `x` and `T*` become the two children of
    /// a new root, with no descent, no update and no destroy.
    Noisy,
}

/// How many queue pops exact IBHC may make per item before it is declared not to settle.
/// Destroy re-queues at most `depth` trees per insertion; on the paper's toy and 10k sets the
/// total number of pops is 1.00-1.07 times the number of items, so this bound is only reached
/// by a pathological cycle of destroys.
const POPS_PER_ITEM: usize = 1000;

impl<K: ConjugateKernel> Forest<K> {
    /// The IBHC forest of all points (MATH §3.4 `SequentialConstruction`): one leaf per point,
    /// queued in a uniformly random order drawn through `chooser` (a permutation by
    /// Fisher-Yates), then [`Forest::sequential_insert`] in `mode`.
    ///
    /// Cost: for every queue pop, one pair marginal per registered tree plus, in exact mode,
    /// one SeqInsert (`O(depth)` pair marginals); `O(n K)` pair marginals overall.
    pub fn ibhc<P: NrmPrior>(
        kernel: &K,
        prior: &P,
        mode: IbhcMode,
        chooser: &mut dyn Chooser,
    ) -> Result<Self> {
        let mut forest = Self::new(kernel, prior);
        let n = kernel.n_points();
        let mut order = Vec::with_capacity(n);
        chooser.permutation(n, &mut order);
        let queue: Vec<NodeKey> = order.iter().map(|&i| forest.push_leaf(kernel, i)).collect();
        forest.sequential_insert(kernel, queue, mode)?;
        Ok(forest)
    }

    /// Sequential construction from a queue of loose trees (MATH §3.4): pop an item `x`; if
    /// no tree is registered, register `x`; otherwise find the registered tree
    /// `T* = argmin_T d(x, T)` (ties to the first in canonical order); if
    /// `ln d(x, T*) > 0`, register `x` as a new tree; else place it as `mode` says.
    ///
    /// Errors if an item is not a loose tree when its turn comes (items placed before it stay
    /// placed), as [`Forest::pair_stats`], or if exact mode
    /// keeps destroying and re-queueing trees beyond 1000 pops per item. Cost: as
    /// [`Forest::ibhc`].
    pub fn sequential_insert(
        &mut self,
        kernel: &K,
        items: impl IntoIterator<Item = NodeKey>,
        mode: IbhcMode,
    ) -> Result<()> {
        let mut queue: VecDeque<NodeKey> = items.into_iter().collect();
        let budget = POPS_PER_ITEM.saturating_mul(queue.len().max(1));
        let mut freed = Vec::new();
        let mut pops = 0usize;
        while let Some(x) = queue.pop_front() {
            pops += 1;
            if pops > budget {
                return Err(Error::Numerical(format!(
                    "exact IBHC did not settle: {pops} queue pops for {} items, destroyed \
                     trees keep being re-queued",
                    budget / POPS_PER_ITEM
                )));
            }
            self.check_loose(x, "sequential_insert item")?;
            let mut best: Option<(NodeKey, PairStats)> = None;
            for &root in self.roots.values() {
                let st = self.pair_stats(kernel, x, root)?;
                if best.is_none_or(|(_, b)| st.ln_d < b.ln_d) {
                    best = Some((root, st));
                }
            }
            match best {
                Some((target, st)) if st.ln_d <= 0.0 => match mode {
                    IbhcMode::Exact => {
                        let pair = self.seq_insert_with(kernel, target, x, st)?;
                        self.update_with_destroy(pair, &mut freed)?;
                        queue.extend(freed.drain(..));
                    }
                    IbhcMode::Noisy => {
                        self.unregister(target);
                        let pair = self.join_with(kernel, x, target, st);
                        self.register(pair)?;
                    }
                },
                _ => self.register(x)?,
            }
        }
        Ok(())
    }

    /// Greedy BHC from singleton leaves (MATH §3.3): [`Forest::singletons`] then
    /// [`Forest::greedy_merge`]. Cost: `O(n²)` pair marginals and `O(n² log n)` heap work.
    pub fn greedy_bhc<P: NrmPrior>(kernel: &K, prior: &P) -> Result<Self> {
        let mut forest = Self::singletons(kernel, prior);
        forest.greedy_merge(kernel)?;
        Ok(forest)
    }

    /// Greedy agglomeration of the registered trees (MATH §3.3, the reference's
    /// `GreedyConstruction`): every pair with `ln d < 0` is a candidate; repeatedly the
    /// candidate with the smallest `ln d` is merged into a new root (children ordered by
    /// canonical key), the candidates of its two children are dropped, and the new root's
    /// pairs with every other tree are added; it stops when no candidate is left. Ties in
    /// `ln d` are broken by the canonical keys of the pair (smaller first), so the result
    /// never depends on memory layout (MATH P17).
    ///
    /// Cost: `O(K²)` pair marginals for the `K` starting trees plus `K` per merge, and a
    /// binary heap with lazy deletion of stale candidates.
    pub fn greedy_merge(&mut self, kernel: &K) -> Result<()> {
        self.agglomerate(kernel, false)
    }

    /// One loose tree over `points` that keeps apart what IBHC keeps apart: exact IBHC of the
    /// points in the given order ([`Forest::sequential_insert`] in [`IbhcMode::Exact`]:
    /// SeqInsert with Update and destroy, a new tree for an item no tree accepts), then the
    /// trees it leaves joined into one, greedily, the pair with the smallest `ln d` first
    /// whatever its sign (the agglomeration of [`Forest::greedy_merge`] run to a single tree).
    ///
    /// This is how a sampler that keeps trees (tgMCMC as published) builds the tree of a
    /// cluster it was given without one. SeqInsert alone ([`Forest::build_tree`]) never undoes
    /// an early placement: when the points of two well separated groups arrive interleaved
    /// or one group after the other, the later group's points spread over both children of
    /// nodes built by the earlier one, so no node separates the groups, and a split move,
    /// which cuts the tree at a node, cannot propose the split the data ask for. Here the
    /// groups IBHC finds are whole subtrees and the last joins sit at the top.
    ///
    /// Trees registered before the call stay registered and are not looked at. Errors if
    /// `points` is empty, repeats a point or holds an index outside the data set, or as
    /// [`Forest::sequential_insert`] and [`Forest::pair_stats`]. Cost: exact IBHC over
    /// `|points|` items (`O(|points| m)` pair marginals for the `m` trees it leaves) plus
    /// `O(m²)` pair marginals for the joins.
    pub fn ibhc_tree(&mut self, kernel: &K, points: &[usize]) -> Result<NodeKey> {
        self.check_points(points, "ibhc_tree")?;
        let outside: Vec<NodeKey> = self.roots().collect();
        for &root in &outside {
            self.unregister(root);
        }
        let built = self.ibhc_tree_alone(kernel, points);
        for &root in &outside {
            self.register(root)?;
        }
        built
    }

    /// [`Forest::ibhc_tree`] with no other tree registered.
    fn ibhc_tree_alone(&mut self, kernel: &K, points: &[usize]) -> Result<NodeKey> {
        let leaves = points
            .iter()
            .map(|&i| self.make_leaf(kernel, i))
            .collect::<Result<Vec<_>>>()?;
        self.sequential_insert(kernel, leaves, IbhcMode::Exact)?;
        self.agglomerate(kernel, true)?;
        let root = self
            .roots()
            .next()
            .expect("IBHC of at least one point leaves a tree");
        self.unregister(root);
        Ok(root)
    }

    /// Greedy agglomeration of the registered trees (see [`Forest::greedy_merge`]); with
    /// `all`, every pair is a candidate whatever its `ln d`, so the trees end as one.
    fn agglomerate(&mut self, kernel: &K, all: bool) -> Result<()> {
        let start: Vec<NodeKey> = self.roots().collect();
        let mut heap = BinaryHeap::new();
        for (i, &a) in start.iter().enumerate() {
            for &b in &start[i + 1..] {
                self.push_candidate(kernel, &mut heap, a, b, all)?;
            }
        }
        while let Some(c) = heap.pop() {
            if !(self.is_registered(c.a) && self.is_registered(c.b)) {
                continue;
            }
            self.unregister(c.a);
            self.unregister(c.b);
            let pair = self.join_with(kernel, c.a, c.b, c.st);
            let others: Vec<NodeKey> = self.roots().collect();
            for other in others {
                self.push_candidate(kernel, &mut heap, other, pair, all)?;
            }
            self.register(pair)?;
        }
        Ok(())
    }

    /// Pushes the pair `(a, b)`, ordered by canonical key, if `ln d(a, b) < 0` or `all`.
    fn push_candidate(
        &self,
        kernel: &K,
        heap: &mut BinaryHeap<Candidate>,
        a: NodeKey,
        b: NodeKey,
        all: bool,
    ) -> Result<()> {
        let (ka, kb) = (self.nodes[a].min_point, self.nodes[b].min_point);
        let (a, b, ka, kb) = if ka < kb {
            (a, b, ka, kb)
        } else {
            (b, a, kb, ka)
        };
        let st = self.pair_stats(kernel, a, b)?;
        if st.ln_d < 0.0 || all {
            heap.push(Candidate { a, b, ka, kb, st });
        }
        Ok(())
    }
}

/// A greedy-BHC merge candidate; the heap pops the smallest `(ln d, ka, kb)` first.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    a: NodeKey,
    b: NodeKey,
    ka: usize,
    kb: usize,
    st: PairStats,
}

impl Candidate {
    fn rank(&self) -> (f64, usize, usize) {
        (self.st.ln_d, self.ka, self.kb)
    }
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Candidate {}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Candidate {
    /// Reversed, so that the max-heap pops the smallest rank.
    fn cmp(&self, other: &Self) -> Ordering {
        let (d1, a1, b1) = self.rank();
        let (d2, a2, b2) = other.rank();
        d2.total_cmp(&d1)
            .then_with(|| a2.cmp(&a1))
            .then_with(|| b2.cmp(&b1))
    }
}
