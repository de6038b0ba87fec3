//! Tree shapes: the topology of a forest's registered trees keyed by point indices, and the
//! forest rebuilt from it. A shape is what a checkpoint keeps of a forest whose trees are
//! history-dependent state (the reference tgMCMC): node keys are arena slots and never
//! leave the process.

use super::{Forest, NodeKey};
use crate::error::{Error, Result};
use crate::kernel::ConjugateKernel;
use crate::prior::NrmPrior;

/// The topology of one tree in preorder: `Some(i)` is the leaf of point `i`, `None` an
/// internal node, followed by its left subtree and then its right subtree. A tree of `m`
/// leaves has `2m - 1` entries.
pub type TreeShape = Vec<Option<usize>>;

impl<K: ConjugateKernel> Forest<K> {
    /// The shapes of the registered trees in canonical order (by smallest point). Cost: O(n),
    /// one allocation per tree.
    pub fn shapes(&self) -> Vec<TreeShape> {
        self.roots()
            .map(|root| {
                let mut shape = Vec::with_capacity(2 * self.nodes[root].size - 1);
                let mut cur = Some(root);
                while let Some(k) = cur {
                    shape.push(self.nodes[k].point);
                    cur = self.preorder_next(k, root);
                }
                shape
            })
            .collect()
    }

    /// The forest of registered trees with the given shapes over `kernel`'s data, with the
    /// `θ` caches of `prior`. Every node is built afresh: a leaf from its point's statistic,
    /// an internal node by [`Forest::join`] of its finished children. Two forests rebuilt from
    /// the same shapes and prior are therefore identical bit for bit, whatever history the
    /// shapes came from (their statistics are those of the joins, not of the incremental
    /// updates that shaped the original trees, so they can differ from them in the last bits).
    ///
    /// Errors if a shape is empty or not a well-formed preorder (an internal node without two
    /// subtrees, or entries after the end of the tree), a point is out of range or appears
    /// twice, or some point of the data set is in no shape. Cost: `n` leaf marginals and
    /// `n - K` joins (one pair marginal or predictive and one statistic merge each).
    pub fn from_shapes<P: NrmPrior>(kernel: &K, prior: &P, shapes: &[TreeShape]) -> Result<Self> {
        let mut forest = Self::new(kernel, prior);
        let n = forest.n_points();
        let mut seen = vec![false; n];
        let mut pending: Vec<Option<NodeKey>> = Vec::new();
        for (t, shape) in shapes.iter().enumerate() {
            let bad = |what: String| {
                Error::param(
                    &format!("tree shape #{t}"),
                    what,
                    "a preorder of leaves (point indices) and internal nodes (null) with two \
                     subtrees each",
                )
            };
            pending.clear();
            let mut done = None;
            for (at, &code) in shape.iter().enumerate() {
                if done.is_some() {
                    return Err(bad(format!("entries after the end of the tree at {at}")));
                }
                let Some(i) = code else {
                    pending.push(None);
                    continue;
                };
                if i >= n || std::mem::replace(&mut seen[i], true) {
                    return Err(Error::param(
                        &format!("tree shape #{t} point"),
                        i,
                        &format!("a point below {n} that no other leaf holds"),
                    ));
                }
                let mut built = forest.push_leaf(kernel, i);
                loop {
                    match pending.last_mut() {
                        None => {
                            done = Some(built);
                            break;
                        }
                        Some(slot @ None) => {
                            *slot = Some(built);
                            break;
                        }
                        Some(Some(left)) => {
                            let left = *left;
                            pending.pop();
                            built = forest.join(kernel, left, built)?;
                        }
                    }
                }
            }
            let root =
                done.ok_or_else(|| bad(format!("an unfinished tree of {} entries", shape.len())))?;
            forest.register(root)?;
        }
        if let Some(i) = seen.iter().position(|&s| !s) {
            return Err(Error::param(
                "tree shapes",
                format!("no leaf for point {i}"),
                "trees that hold every point of the data set",
            ));
        }
        Ok(forest)
    }
}
