//! Canonical trees (MATH §5.4 V3): the tree of a cluster is SeqInsert of its points in
//! increasing index order, with `ln κ` from a fixed reference prior, so it is a deterministic
//! function of the member set. Trees are cached and rebuilt lazily when their cluster changed.

use crate::error::{Error, Result};
use crate::kernel::ConjugateKernel;
use crate::prior::NrmPrior;
use crate::tree::{Forest, NodeKey};

/// A cache of canonical trees over one data set, all loose trees of one [`Forest`] whose
/// `θ` caches are those of the reference prior it was made with (and never recomputed).
///
/// Validity without fingerprints: `owner[i]` is the last claimed tree built over point `i`.
/// A claimed tree `T` is the canonical tree of a member set `c` exactly when `T` still exists,
/// `|T| = |c|` and `owner[i] = T` for every `i ∈ c`: the points `i` with `owner[i] = T` are a
/// subset of `T`'s points (ownership only moves to newer trees), so the check forces equality.
/// Claiming a tree deletes every tree that owned one of its points before; such a tree can
/// never be valid again, since one of its points is owned elsewhere. So the arena holds at
/// most one leaf per point in claimed trees, plus the one unclaimed proposal tree a move may
/// be holding.
#[derive(Clone, Debug)]
pub(super) struct TreeCache<K: ConjugateKernel> {
    forest: Forest<K>,
    owner: Vec<Option<NodeKey>>,
    sorted: Vec<usize>,
    leaves: Vec<NodeKey>,
}

impl<K: ConjugateKernel> TreeCache<K> {
    /// An empty cache over `kernel`'s data with the reference `θ` of `prior`.
    pub(super) fn new<P: NrmPrior>(kernel: &K, prior: &P) -> Self {
        TreeCache {
            forest: Forest::new(kernel, prior),
            owner: vec![None; kernel.n_points()],
            sorted: Vec::new(),
            leaves: Vec::new(),
        }
    }

    /// Number of points of the data set the cache was made for.
    pub(super) fn n_points(&self) -> usize {
        self.owner.len()
    }

    /// The forest holding the trees.
    pub(super) fn forest(&self) -> &Forest<K> {
        &self.forest
    }

    /// The forest holding the trees, for SampleSub's scratch buffers.
    pub(super) fn forest_mut(&mut self) -> &mut Forest<K> {
        &mut self.forest
    }

    /// The cached canonical tree of `members` if it is valid. Cost: O(|members|).
    fn valid_tree(&self, members: &[usize]) -> Option<NodeKey> {
        let t = self.owner[*members.first()?]?;
        let node = self.forest.node(t)?;
        (node.size() == members.len() && members.iter().all(|&i| self.owner[i] == Some(t)))
            .then_some(t)
    }

    /// The canonical tree of the cluster `members` (any order), from the cache or built and
    /// claimed. Cost: O(|c|) when cached; otherwise a build (see [`TreeCache::build`]).
    pub(super) fn tree_for(&mut self, kernel: &K, members: &[usize]) -> Result<NodeKey> {
        if let Some(t) = self.valid_tree(members) {
            return Ok(t);
        }
        let t = self.build(kernel, members)?;
        self.claim(t, members)?;
        Ok(t)
    }

    /// Builds the canonical tree of `members` (any order) as an unclaimed loose tree, leaving
    /// the cache as it was: SeqInsert + Update of the points in increasing index order.
    /// Errors if `members` is empty or holds a point twice or out of range. Cost:
    /// `O(|c| log |c|)` to sort, then `|c|` SeqInserts of `O(depth)` pair evaluations each.
    pub(super) fn build(&mut self, kernel: &K, members: &[usize]) -> Result<NodeKey> {
        self.sorted.clear();
        self.sorted.extend_from_slice(members);
        self.sorted.sort_unstable();
        self.forest.build_tree(kernel, &self.sorted)
    }

    /// Makes the loose tree `t`, built over exactly `members`, the cached tree of that
    /// member set: deletes every tree that owned one of its points, then takes ownership and
    /// makes its leaves the live ones. Cost: O(|c|) plus the deleted trees' sizes.
    pub(super) fn claim(&mut self, t: NodeKey, members: &[usize]) -> Result<()> {
        let size = self.forest.node(t).map(|n| n.size());
        if size != Some(members.len()) {
            return Err(Error::Usage(format!(
                "a canonical tree of {size:?} points cannot be claimed for a cluster of {}",
                members.len()
            )));
        }
        for &i in members {
            if let Some(prev) = self.owner[i] {
                if prev != t && self.forest.node(prev).is_some() {
                    self.forest.delete_tree(prev)?;
                }
            }
            self.owner[i] = Some(t);
        }
        self.forest.adopt_leaves(t)
    }

    /// Deletes the unclaimed tree `t` (a rejected proposal's tree). Cost: O(|t|).
    pub(super) fn discard(&mut self, t: NodeKey) -> Result<()> {
        self.forest.delete_tree(t)
    }

    /// The leaves of points `i` and `j` in the tree `t`: the live leaves when `t` holds them
    /// (a claimed tree does), else found by a walk over `t`. Errors if `t` lacks one of them.
    /// Cost: O(depth), or O(|t|) for an unclaimed tree.
    pub(super) fn leaves_in(&mut self, t: NodeKey, i: usize, j: usize) -> Result<[NodeKey; 2]> {
        let mut found = [None, None];
        for (slot, p) in found.iter_mut().zip([i, j]) {
            if let Some(leaf) = self.forest.leaf_of(p) {
                if self.forest.root_of(leaf)? == t {
                    *slot = Some(leaf);
                }
            }
        }
        if found.iter().any(Option::is_none) {
            self.forest.leaves_bfs(t, &mut self.leaves)?;
            for &leaf in &self.leaves {
                let p = self.forest.node(leaf).and_then(|n| n.point());
                if p == Some(i) {
                    found[0] = Some(leaf);
                } else if p == Some(j) {
                    found[1] = Some(leaf);
                }
            }
        }
        match found {
            [Some(a), Some(b)] => Ok([a, b]),
            _ => Err(Error::Usage(format!(
                "points {i} and {j} are not both in the given canonical tree"
            ))),
        }
    }
}
