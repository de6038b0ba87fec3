//! The IBHC tree operations of MATH §3.4: SeqInsert, Update (with and without destroy),
//! Destroy and Detach.
//!
//! Registration follows the tree: when an operation moves the root of a registered tree or
//! changes its smallest point, the registry is updated to the new root; trees an operation
//! sets free (Destroy's queue, a detached leaf) are loose.

use super::{Forest, Node, NodeKey, PairStats};
use crate::error::{Error, Result};
use crate::kernel::ConjugateKernel;

impl<K: ConjugateKernel> Forest<K> {
    /// SeqInsert of the loose tree `x` into the tree rooted at `target` (MATH §3.4, the
    /// reference's `SeqMergePair`); returns the new pair node.
    ///
    /// At an internal node `S` with children `l, r`, compare the stored `d(l, r)` with
    /// `d(l, x)` and `d(r, x)`: if `d(l, r)` is strictly smaller than both, `x` is paired with
    /// `S` in `S`'s place; otherwise descend into `l` if `d(l, x) < d(r, x)` and into `r`
    /// otherwise (ties go to the right child). A leaf always takes the pair. Swap rule: if
    /// `target` is a leaf, the roles are swapped and the descent runs in `x`.
    ///
    /// Each node passed on the way down absorbs `x`'s statistic and takes over the pair
    /// statistics `(ln κ, ℓm, ℓh)` of "node ∪ x", which are correct for its new contents; its
    /// `ln d` and `ln φ` are stale (set to NaN) until [`Forest::update`] or
    /// [`Forest::update_with_destroy`] is run from the returned node (MATH P18). The new pair
    /// node has children `[final node, x]` and replaces the final node in its parent, becoming
    /// the parent's first child. If `target` was registered, the combined tree is.
    ///
    /// The descent is planned before anything is changed, so an error from a pair statistic
    /// leaves the forest as it was. Errors if `target` has a parent, `x` is not a loose tree,
    /// or as [`Forest::pair_stats`]. Cost: `1 + 2·depth` pair marginals, one statistic merge per
    /// level (an O(d²) add when `x` is a leaf), one new node.
    pub fn seq_insert(&mut self, kernel: &K, target: NodeKey, x: NodeKey) -> Result<NodeKey> {
        self.seq_insert_checked(kernel, target, x, usize::MAX)
    }

    /// [`Forest::seq_insert`] whose descent weighs `d` at no more than `levels` nodes (see
    /// `seq_insert_within`), with its checks.
    fn seq_insert_checked(
        &mut self,
        kernel: &K,
        target: NodeKey,
        x: NodeKey,
        levels: usize,
    ) -> Result<NodeKey> {
        self.check_parentless(target, "seq_insert target")?;
        self.check_loose(x, "seq_insert item")?;
        let st = self.pair_stats(kernel, target, x)?;
        self.seq_insert_within(kernel, target, x, st, levels)
    }

    /// [`Forest::seq_insert`] given the already computed pair statistics of `target ∪ x`.
    pub(super) fn seq_insert_with(
        &mut self,
        kernel: &K,
        target: NodeKey,
        x: NodeKey,
        st: PairStats,
    ) -> Result<NodeKey> {
        self.seq_insert_within(kernel, target, x, st, usize::MAX)
    }

    /// [`Forest::seq_insert_with`] whose descent weighs `d` at the first `levels` internal
    /// nodes only: below them the item goes to the child holding fewer points (a tie to the
    /// right) down to a leaf, which takes the pair. SeqInsert's own descent into a tight
    /// cluster mostly runs to its bottom and pairs there, so a cluster of `m` points grows a
    /// chain nearly `m` deep and costs O(m²) pair marginals to build; below `levels` the
    /// smaller side takes each point instead, which grows no such chain below them (over
    /// 1,200 points in two tight clusters SeqInsert's tree is 944 deep, with `levels` = 8 it
    /// is 57). Where no descent passes `levels` nodes the result is SeqInsert's. Cost: at
    /// most two pair marginals per level above `levels`, one per level below.
    fn seq_insert_within(
        &mut self,
        kernel: &K,
        target: NodeKey,
        x: NodeKey,
        st: PairStats,
        levels: usize,
    ) -> Result<NodeKey> {
        let (mut nd, item) = if self.nodes[target].is_leaf() {
            (x, target)
        } else {
            (target, x)
        };
        let mut path = std::mem::take(&mut self.scratch_path);
        path.clear();
        let mut pair_st = st;
        // Below the disjoint trees `target` and `x` every pair is disjoint too, so the
        // descent takes the pair statistics without their checks.
        while let Some([l, r]) = self.nodes[nd].children {
            let step = if path.len() < levels {
                self.descent_step(kernel, [l, r], item, self.nodes[nd].ln_d)
            } else {
                let c = if self.nodes[l].size < self.nodes[r].size {
                    l
                } else {
                    r
                };
                self.pair_finite(kernel, &self.nodes[c], &self.nodes[item])
                    .map(|st| Some((c, st)))
            };
            match step {
                Ok(Some((next, st))) => {
                    path.push((nd, pair_st));
                    pair_st = st;
                    nd = next;
                }
                Ok(None) => break,
                Err(e) => {
                    self.scratch_path = path;
                    return Err(e);
                }
            }
        }

        let was_registered = self.unregister(target);
        for &(v, s) in &path {
            self.save_image(v);
            self.absorb(kernel, v, item, &s);
            let stamp = self.next_stamp();
            let node = &mut self.nodes[v];
            node.stamp = stamp;
            node.size = s.size;
            node.min_point = s.min_point;
            node.ln_kappa = s.ln_kappa;
            node.ln_marginal = s.ln_marginal;
            node.ln_h = s.ln_h;
            node.ln_d = f64::NAN;
            node.ln_phi = f64::NAN;
        }
        self.scratch_path = path;

        let grandparent = self.nodes[nd].parent;
        let sibling = self.sibling(nd);
        self.set_parent(nd, None);
        let pair = self.join_with(kernel, nd, item, pair_st);
        if let (Some(g), Some(s)) = (grandparent, sibling) {
            self.set_parent(pair, Some(g));
            self.set_children(g, Some([pair, s]));
        }
        if was_registered {
            let root = self.root_of(pair)?;
            self.register(root)?;
        }
        Ok(pair)
    }

    /// One level of SeqInsert's descent at a node whose children are `[l, r]` and whose
    /// `ln d` is `ln_d`: `None` when the item pairs with the node (`ln_d` below both
    /// `ln d(l, item)` and `ln d(r, item)`), else the child to descend into (the smaller of
    /// the two; a tie goes right) with its pair statistics.
    ///
    /// For a leaf item the two children are weighed in the order of their floors,
    /// [`Forest::ln_d_floor`], and the second is not weighed when its floor shows that it
    /// loses and the node does not take the pair: the decision is the one both values give,
    /// at one predictive instead of two on most levels of a deep descent. Errors on a NaN
    /// union marginal.
    #[inline(always)]
    fn descent_step(
        &self,
        kernel: &K,
        [l, r]: [NodeKey; 2],
        item: NodeKey,
        ln_d: f64,
    ) -> Result<Option<(NodeKey, PairStats)>> {
        let ni = &self.nodes[item];
        let (nl, nr) = (&self.nodes[l], &self.nodes[r]);
        let weigh = |nc: &Node<K::Stat>| self.pair_finite(kernel, nc, ni);
        let decide = |st0: PairStats, st1: PairStats| {
            if ln_d < st0.ln_d && ln_d < st1.ln_d {
                None
            } else if st0.ln_d < st1.ln_d {
                Some((l, st0))
            } else {
                Some((r, st1))
            }
        };
        if ni.point.is_some() {
            let (floor_l, floor_r) = (
                self.ln_d_floor(kernel, nl, ni),
                self.ln_d_floor(kernel, nr, ni),
            );
            if floor_l <= floor_r {
                let st0 = weigh(nl)?;
                // ln d(r, item) ≥ floor_r > ln d(l, item): l is the smaller.
                if not_below(ln_d, st0.ln_d) && floor_r > st0.ln_d {
                    return Ok(Some((l, st0)));
                }
                let st1 = weigh(nr)?;
                return Ok(decide(st0, st1));
            }
            let st1 = weigh(nr)?;
            // ln d(l, item) ≥ floor_l ≥ ln d(r, item): r is the smaller or ties, and wins.
            if not_below(ln_d, st1.ln_d) && floor_l >= st1.ln_d {
                return Ok(Some((r, st1)));
            }
            let st0 = weigh(nl)?;
            return Ok(decide(st0, st1));
        }
        let st0 = weigh(nl)?;
        let st1 = weigh(nr)?;
        Ok(decide(st0, st1))
    }

    /// Adds the points of `item` to the statistic of the node `v` (disjoint from it), given
    /// the pair statistics of `v` and `item` (whose probe an add may reuse).
    fn absorb(&mut self, kernel: &K, v: NodeKey, item: NodeKey, st: &PairStats) {
        // [`Forest::absorb_stat`] in place: a leaf needs only the node borrowed (borrowing
        // both for every add cost 5 % of SeqInsert's instructions), a subtree both.
        if let Some(i) = self.nodes[item].point {
            let node = &mut self.nodes[v];
            kernel.add_probed(&mut node.stat, i, &st.held.probe_for(node.stamp, i));
        } else {
            let [node, item]: [&mut Node<K::Stat>; 2] = self
                .nodes
                .get_disjoint_mut([v, item])
                .expect("a tree node and a disjoint item");
            kernel.merge(&mut node.stat, &item.stat);
        }
    }

    /// Update without destroy (MATH §3.4 `Update(nd)`): walks from `from` to its root,
    /// recomputing `ln d` and `ln φ` of every ancestor from its children. Returns the root.
    /// Cost: O(depth), no marginals.
    pub fn update(&mut self, from: NodeKey) -> Result<NodeKey> {
        let mut nd = from;
        while let Some(p) = self.get(nd, "update")?.parent {
            self.refresh_d(p);
            nd = p;
        }
        Ok(nd)
    }

    /// Update with destroy (MATH §3.4 `Update(nd, queue)`, IBHC only): the walk of
    /// [`Forest::update`], except that when an ancestor `P` gets `ln d(P) > 0`,
    /// [`Forest::destroy`] is called at `P`'s child on the path, appending the freed siblings
    /// to `queue` bottom-up. Returns the root of the tree that keeps the starting node: the
    /// old root if nothing was destroyed, else that child. Cost: O(depth), no marginals.
    pub fn update_with_destroy(
        &mut self,
        from: NodeKey,
        queue: &mut Vec<NodeKey>,
    ) -> Result<NodeKey> {
        let mut nd = from;
        while let Some(p) = self.get(nd, "update_with_destroy")?.parent {
            self.refresh_d(p);
            if self.nodes[p].ln_d > 0.0 {
                self.destroy(nd, queue)?;
                return Ok(nd);
            }
            nd = p;
        }
        Ok(nd)
    }

    /// SeqInsert followed by Update without destroy (the reference's `Insert` used by
    /// StocInsert and the local moves); returns the root of the combined tree. Cost: as
    /// [`Forest::seq_insert`].
    pub fn insert(&mut self, kernel: &K, target: NodeKey, x: NodeKey) -> Result<NodeKey> {
        let pair = self.seq_insert(kernel, target, x)?;
        self.update(pair)
    }

    /// SeqInsert followed by Update with destroy (the reference's IBHC `Insert`); returns the
    /// root of the surviving tree and appends destroyed siblings to `queue`. Cost: as
    /// [`Forest::seq_insert`].
    pub fn insert_with_destroy(
        &mut self,
        kernel: &K,
        target: NodeKey,
        x: NodeKey,
        queue: &mut Vec<NodeKey>,
    ) -> Result<NodeKey> {
        let pair = self.seq_insert(kernel, target, x)?;
        self.update_with_destroy(pair, queue)
    }

    /// Destroy at `a` (MATH §3.4, the reference's `Destroy`): detaches `a` from its parent,
    /// then walks up deleting every ancestor, appending at each step the current sibling to
    /// `queue` as a loose tree. The order is bottom-up: first `a`'s sibling, then its
    /// parent's sibling, up to the root's other child (the split move relies on it,
    /// MATH §4.3). If the tree was registered, the registration passes to `a`'s tree. Nothing
    /// happens when `a` is a root. Cost: O(depth).
    pub fn destroy(&mut self, a: NodeKey, queue: &mut Vec<NodeKey>) -> Result<()> {
        let Some(mut par) = self.get(a, "destroy")?.parent else {
            return Ok(());
        };
        let top = self.root_of(a)?;
        let was_registered = self.unregister(top);
        let mut sib = self.sibling(a).expect("a node with a parent has a sibling");
        self.set_parent(a, None);
        loop {
            self.set_parent(sib, None);
            queue.push(sib);
            let next = self.nodes[par]
                .parent
                .map(|gp| (gp, self.sibling(par).expect("has a parent")));
            self.remove_node(par);
            match next {
                Some((gp, s)) => {
                    par = gp;
                    sib = s;
                }
                None => break,
            }
        }
        if was_registered {
            self.register(a)?;
        }
        Ok(())
    }

    /// Detach of the leaf `leaf` from its tree (MATH §3.4, the reference's `Detach`); the
    /// leaf becomes a loose tree. Three cases:
    ///
    /// * the leaf is a root: it is unregistered;
    /// * its parent `p` is a root: `p` is deleted and the sibling becomes the root (registered
    ///   if `p` was);
    /// * otherwise the sibling is spliced into `p`'s place, `p` is deleted, and every ancestor
    ///   `A`, bottom-up, loses the leaf's point from its statistic and gets `ln κ`, `ℓm` (from
    ///   the updated statistic), `ℓh`, `ln d` (from its children's `ln φ`) and `ln φ` anew.
    ///
    /// Errors if `leaf` is unknown or internal. Cost: O(depth) statistic removals (O(d²)
    /// each for Normal-Wishart) and O(1) per ancestor otherwise; no pair marginals.
    pub fn detach_leaf(&mut self, kernel: &K, leaf: NodeKey) -> Result<()> {
        let node = self.get(leaf, "detach_leaf")?;
        let Some(point) = node.point else {
            return Err(Error::param(
                "detach_leaf",
                format!("{leaf:?}"),
                "a leaf (this node is internal)",
            ));
        };
        let Some(p) = node.parent else {
            self.unregister(leaf);
            return Ok(());
        };
        let sib = self
            .sibling(leaf)
            .expect("a node with a parent has a sibling");
        self.set_parent(leaf, None);
        let Some(g) = self.nodes[p].parent else {
            let was_registered = self.unregister(p);
            self.remove_node(p);
            self.set_parent(sib, None);
            if was_registered {
                self.register(sib)?;
            }
            return Ok(());
        };
        let top = self.root_of(g)?;
        let was_registered = self.unregister(top);
        let [gl, gr] = self.nodes[g].children.expect("a parent is internal");
        self.set_children(g, Some(if gl == p { [sib, gr] } else { [gl, sib] }));
        self.set_parent(sib, Some(g));
        self.remove_node(p);
        let mut anc = Some(g);
        while let Some(a) = anc {
            let [l, r] = self.nodes[a].children.expect("an ancestor is internal");
            let min_point = self.nodes[l].min_point.min(self.nodes[r].min_point);
            let size = self.nodes[a].size - 1;
            let ln_kappa = self.kappa(size);
            self.save_image(a);
            let stamp = self.next_stamp();
            let node = &mut self.nodes[a];
            node.stamp = stamp;
            kernel.remove(&mut node.stat, point);
            node.size = size;
            node.min_point = min_point;
            node.ln_kappa = ln_kappa;
            node.ln_marginal = kernel.ln_marginal(&node.stat);
            node.ln_h = ln_kappa + node.ln_marginal;
            anc = node.parent;
            self.refresh_d(a);
        }
        if was_registered {
            self.register(top)?;
        }
        Ok(())
    }

    /// Builds one loose tree over `points` by inserting their leaves in the given order, each
    /// by [`Forest::insert`] into the tree built so far (no new trees, no destroy): the
    /// "SeqInsert of c's points in a given order" tree of MATH §5.4. Errors if `points` is
    /// empty, repeats a point, or holds an index outside the data set. Cost: `|points|`
    /// SeqInserts.
    pub fn build_tree(&mut self, kernel: &K, points: &[usize]) -> Result<NodeKey> {
        self.build_tree_within(kernel, points, usize::MAX)
    }

    /// [`Forest::build_tree`] whose SeqInserts weigh `d` at no more than `levels` nodes each
    /// and go down the smaller side below them (see [`Forest::seq_insert`] for the descent
    /// and `seq_insert_within` for the bound): the same tree where no insert descends
    /// further, and where tight clusters would grow chains as deep as they are large (a build
    /// of O(|points|²) pair marginals), no chain grown below `levels`. Errors as
    /// [`Forest::build_tree`]. Cost: `|points|` SeqInserts, each weighing `d` at no more than
    /// `levels` nodes and taking one pair marginal per level below them, and their Updates.
    pub fn build_tree_within(
        &mut self,
        kernel: &K,
        points: &[usize],
        levels: usize,
    ) -> Result<NodeKey> {
        self.check_points(points, "build_tree")?;
        let (&first, rest) = points.split_first().expect("checked non-empty");
        let mut root = self.make_leaf(kernel, first)?;
        for &i in rest {
            let leaf = self.make_leaf(kernel, i)?;
            let pair = self.seq_insert_checked(kernel, root, leaf, levels)?;
            root = self.update(pair)?;
        }
        Ok(root)
    }
}

impl<K: ConjugateKernel> Forest<K> {
    /// Checks the point list of a tree to build (`what` names the caller): not empty, no
    /// point twice (indices outside the data set are left to [`Forest::make_leaf`]).
    pub(super) fn check_points(&self, points: &[usize], what: &str) -> Result<()> {
        if points.is_empty() {
            return Err(Error::Empty(format!("{what} needs at least one point")));
        }
        let mut seen = vec![false; self.n_points()];
        for &i in points {
            if seen.get(i).copied().unwrap_or(false) {
                return Err(Error::param(
                    &format!("{what} points"),
                    i,
                    "each point at most once",
                ));
            }
            if let Some(s) = seen.get_mut(i) {
                *s = true;
            }
        }
        Ok(())
    }
}

/// `!(a < b)`: the node's `ln d` does not stop the descent against this child (NaN never
/// stops it, as in the two-sided test).
#[inline(always)]
fn not_below(a: f64, b: f64) -> bool {
    a.partial_cmp(&b) != Some(std::cmp::Ordering::Less)
}
