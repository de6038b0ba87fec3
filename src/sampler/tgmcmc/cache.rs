//! Canonical trees (MATH §5.4 V3): the tree of a cluster is a fixed reference tree over all
//! points (SeqInsert in increasing index order at a fixed reference prior) restricted to the
//! cluster's members, so it is a deterministic function of the member set. Trees are cached
//! and rebuilt lazily when their cluster changed.
//!
//! A kernel with latent values ([`ConjugateKernel::has_latent`]) gets its reference tree from
//! the latent values' starting values ([`ConjugateKernel::at_latent_start`]), a function of
//! the observed data and the hyperparameters alone: the tree's shape then survives every
//! redraw of the latent values ([`TreeCache::latent_changed`]), and only the cluster trees,
//! whose statistics are those of the current values, are rebuilt. Any fixed tree keeps the
//! move exact (the proposal needs the trees to be a deterministic function of the member set
//! for the kernel of the step); the reference only guides the proposals.

use crate::error::{Error, Result};
use crate::kernel::ConjugateKernel;
use crate::tree::{Forest, NodeKey};

/// A cache of canonical trees over one data set, all loose trees of one [`Forest`] whose
/// `θ` caches are those of the reference prior it was made with (and never recomputed). The
/// reference tree is built at the first [`TreeCache::build`] and kept as links only.
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
    reference: Option<ReferenceTree>,
    ln_kappa: Vec<f64>,
    owner: Vec<Option<NodeKey>>,
    relevant: Vec<bool>,
    touched: Vec<usize>,
    stack: Vec<(usize, bool)>,
    built: Vec<NodeKey>,
    leaves: Vec<NodeKey>,
}

/// The fixed reference tree over all points, as index links (no statistics): node `v` is a
/// leaf of `point[v]` or has `children[v]`; `leaf[i]` is the node of point `i`.
#[derive(Clone, Debug)]
struct ReferenceTree {
    parent: Vec<Option<usize>>,
    children: Vec<Option<[usize; 2]>>,
    point: Vec<Option<usize>>,
    leaf: Vec<usize>,
    root: usize,
}

impl<K: ConjugateKernel> TreeCache<K> {
    /// An empty cache over `kernel`'s data whose reference `θ` gives `ln κ(s, u)` as
    /// `ln_kappa(s)`.
    pub(super) fn new(kernel: &K, ln_kappa: impl Fn(usize) -> f64) -> Self {
        let ln_kappa: Vec<f64> = (0..=kernel.n_points()).map(ln_kappa).collect();
        TreeCache {
            forest: Self::empty_forest(kernel, &ln_kappa),
            reference: None,
            ln_kappa,
            owner: vec![None; kernel.n_points()],
            relevant: Vec::new(),
            touched: Vec::new(),
            stack: Vec::new(),
            built: Vec::new(),
            leaves: Vec::new(),
        }
    }

    /// An empty forest at the reference `ln κ` that keeps its leaves. Cost: O(n).
    fn empty_forest(kernel: &K, ln_kappa: &[f64]) -> Forest<K> {
        let mut forest = Forest::with_ln_kappa(kernel, |s| ln_kappa[s]);
        forest.cache_leaves();
        forest
    }

    /// Moves the cache onto `kernel`, whose latent values were redrawn: every tree over a
    /// point with latent values is dropped (its statistics are those of the old values), with
    /// those points' cached leaves; the other trees, and the reference tree's shape, built
    /// from the starting values, are kept. Dropped trees are rebuilt lazily as their clusters
    /// are met. Errors if a tree cannot be deleted (a broken cache). Cost: O(latent points)
    /// plus the dropped trees' sizes.
    pub(super) fn latent_changed(&mut self, kernel: &K) -> Result<()> {
        for i in kernel.latent_points() {
            if let Some(t) = self.owner[i].take() {
                if self.forest.node(t).is_some() {
                    self.forest.delete_tree(t)?;
                }
            }
            self.forest.forget_leaf(i);
        }
        Ok(())
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
    /// the cache as it was: the reference tree restricted to `members`.
    ///
    /// The members' ancestors in the reference tree are marked by walking up from each leaf
    /// until an ancestor already marked; a post-order walk over the marked nodes then makes a
    /// leaf for each member and joins the two subtrees at every marked node with two marked
    /// children (a node with one marked child is spliced out). Errors if `members` is empty or
    /// holds a point twice or out of range. Cost: the marked nodes (at most `|c| · depth`
    /// pointer steps, no kernel work), `|c|` leaves and `|c| - 1` joins (one pair marginal and
    /// one statistic merge each); the first call also builds the reference tree, from the
    /// kernel's latent starting values when it has latent values (see the module
    /// documentation).
    pub(super) fn build(&mut self, kernel: &K, members: &[usize]) -> Result<NodeKey> {
        if self.reference.is_none() {
            let reference = match kernel.at_latent_start()? {
                // In a forest of its own: the cache's leaves hold the current values.
                Some(start) => {
                    let mut forest = Forest::with_ln_kappa(&start, |s| self.ln_kappa[s]);
                    ReferenceTree::build(&mut forest, &start)?
                }
                None => ReferenceTree::build(&mut self.forest, kernel)?,
            };
            self.reference = Some(reference);
            self.relevant = vec![false; self.reference.as_ref().map_or(0, |r| r.parent.len())];
        }
        let reference = self.reference.as_ref().expect("built above");
        if members.is_empty() {
            return Err(Error::Empty(
                "a canonical tree needs at least one point".into(),
            ));
        }
        self.touched.clear();
        let mut duplicate = None;
        for &i in members {
            let Some(&leaf) = reference.leaf.get(i) else {
                duplicate = Some(i);
                break;
            };
            if self.relevant[leaf] {
                duplicate = Some(i);
                break;
            }
            let mut v = leaf;
            self.relevant[v] = true;
            self.touched.push(v);
            while let Some(u) = reference.parent[v] {
                if self.relevant[u] {
                    break;
                }
                self.relevant[u] = true;
                self.touched.push(u);
                v = u;
            }
        }
        let out = match duplicate {
            Some(i) => Err(Error::param(
                "canonical tree member",
                i,
                "distinct points of the data set",
            )),
            None => self.join_marked(kernel),
        };
        for &v in &self.touched {
            self.relevant[v] = false;
        }
        out
    }

    /// The post-order walk of [`TreeCache::build`] over the marked reference nodes.
    fn join_marked(&mut self, kernel: &K) -> Result<NodeKey> {
        let reference = self.reference.as_ref().expect("built");
        self.stack.clear();
        self.built.clear();
        self.stack.push((reference.root, false));
        while let Some((v, expanded)) = self.stack.pop() {
            if let Some(p) = reference.point[v] {
                let leaf = self.forest.make_leaf(kernel, p)?;
                self.built.push(leaf);
                continue;
            }
            let [l, r] = reference.children[v].expect("an internal node");
            if expanded {
                if self.relevant[l] && self.relevant[r] {
                    let b = self.built.pop().expect("right subtree built");
                    let a = self.built.pop().expect("left subtree built");
                    let joined = self.forest.join(kernel, a, b)?;
                    self.built.push(joined);
                }
                continue;
            }
            self.stack.push((v, true));
            for c in [r, l] {
                if self.relevant[c] {
                    self.stack.push((c, false));
                }
            }
        }
        self.built
            .pop()
            .ok_or_else(|| Error::Empty("a canonical tree needs at least one point".into()))
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

impl ReferenceTree {
    /// The reference tree: SeqInsert + Update of every point in increasing index order into
    /// one tree (MATH §3.4, no destroy), built in `forest` at its reference `θ`, recorded as
    /// links and deleted from the forest. Cost: `n` SeqInserts.
    fn build<K: ConjugateKernel>(forest: &mut Forest<K>, kernel: &K) -> Result<Self> {
        let n = kernel.n_points();
        let all: Vec<usize> = (0..n).collect();
        let root = forest.build_tree(kernel, &all)?;
        let keys = forest.subtree(root)?;
        let mut index = slotmap::SecondaryMap::with_capacity(keys.len());
        for (v, &k) in keys.iter().enumerate() {
            index.insert(k, v);
        }
        let mut tree = ReferenceTree {
            parent: vec![None; keys.len()],
            children: vec![None; keys.len()],
            point: vec![None; keys.len()],
            leaf: vec![0; n],
            root: 0,
        };
        for (v, &k) in keys.iter().enumerate() {
            let node = forest.node(k).expect("in the subtree");
            tree.parent[v] = node.parent().map(|p| index[p]);
            tree.children[v] = node.children().map(|[l, r]| [index[l], index[r]]);
            tree.point[v] = node.point();
            if let Some(p) = node.point() {
                tree.leaf[p] = v;
            }
        }
        forest.delete_tree(root)?;
        Ok(tree)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::generate::data_set_b;
    use crate::kernel::{NormalWishart, NwHyper};
    use crate::prior::{Dp, NrmPrior};
    use crate::tree::NewickInfo;
    use std::sync::Arc;

    fn kernel() -> NormalWishart {
        let data = data_set_b();
        let hyper = NwHyper::from_data(&data).unwrap();
        NormalWishart::new(Arc::new(data), hyper).unwrap()
    }

    /// The reference tree with the leaves outside `keep` pruned, in Newick, by recursion on a
    /// separately built full tree.
    fn pruned(f: &Forest<NormalWishart>, key: NodeKey, keep: &[usize]) -> Option<String> {
        let node = f.node(key).unwrap();
        match node.children() {
            None => node
                .point()
                .filter(|p| keep.contains(p))
                .map(|p| p.to_string()),
            Some([l, r]) => match (pruned(f, l, keep), pruned(f, r, keep)) {
                (Some(a), Some(b)) => Some(format!("({a},{b})")),
                (a, b) => a.or(b),
            },
        }
    }

    #[test]
    fn canonical_trees_are_the_pruned_reference_tree() {
        let k = kernel();
        let prior = Dp::new(1.0).unwrap();
        let mut full = Forest::new(&k, &prior);
        let root = full.build_tree(&k, &[0, 1, 2, 3, 4, 5, 6]).unwrap();
        let mut cache = TreeCache::new(&k, |s| prior.ln_kappa(s));
        for members in [
            vec![0, 1, 2, 3, 4, 5, 6],
            vec![6, 2, 0],
            vec![3],
            vec![5, 1, 4, 3],
            vec![4, 6],
        ] {
            let t = cache.build(&k, &members).unwrap();
            let mut shuffled = members.clone();
            shuffled.reverse();
            let t2 = cache.build(&k, &shuffled).unwrap();
            let newick = cache.forest.tree_to_newick(t, NewickInfo::LnD).unwrap();
            assert_eq!(
                newick,
                cache.forest.tree_to_newick(t2, NewickInfo::LnD).unwrap(),
                "the tree depends on the member set only"
            );
            let topology = cache
                .forest
                .tree_to_newick(t, NewickInfo::Topology)
                .unwrap();
            assert_eq!(
                topology,
                format!("{};", pruned(&full, root, &members).unwrap())
            );
            cache.forest.validate_tree(&k, &prior, t).unwrap();
            cache.discard(t).unwrap();
            cache.discard(t2).unwrap();
        }
        assert_eq!(
            cache.forest.n_nodes(),
            0,
            "discarded trees leave nothing behind"
        );
        assert!(cache.build(&k, &[]).is_err());
        assert!(cache.build(&k, &[1, 1]).is_err());
        assert!(cache.build(&k, &[7]).is_err());
    }

    #[test]
    fn cached_trees_are_reused_until_their_cluster_changes() {
        let k = kernel();
        let prior = Dp::new(1.0).unwrap();
        let mut cache = TreeCache::new(&k, |s| prior.ln_kappa(s));
        let a = cache.tree_for(&k, &[0, 1, 2]).unwrap();
        let b = cache.tree_for(&k, &[3, 4, 5, 6]).unwrap();
        assert_eq!(cache.tree_for(&k, &[2, 0, 1]).unwrap(), a);
        assert_eq!(cache.tree_for(&k, &[6, 5, 4, 3]).unwrap(), b);
        // Point 2 moves: both clusters change, both trees are rebuilt, the old ones deleted.
        let a2 = cache.tree_for(&k, &[0, 1]).unwrap();
        assert_ne!(a2, a);
        assert!(cache.forest.node(a).is_none());
        let b2 = cache.tree_for(&k, &[2, 3, 4, 5, 6]).unwrap();
        assert_ne!(b2, b);
        assert!(cache.forest.node(b).is_none());
        assert_eq!(cache.forest.n_nodes(), 2 * 2 - 1 + 2 * 5 - 1);
        // A subset of a cached cluster is not mistaken for it.
        let c = cache.tree_for(&k, &[3, 4, 5, 6]).unwrap();
        assert_ne!(c, b2);
        // An unclaimed proposal tree leaves the cache alone.
        let t = cache.build(&k, &[0, 1, 3, 4, 5, 6]).unwrap();
        assert_eq!(cache.tree_for(&k, &[0, 1]).unwrap(), a2);
        let [x, y] = cache.leaves_in(t, 0, 6).unwrap();
        assert_ne!(x, y);
        assert!(cache.leaves_in(t, 0, 2).is_err());
        cache.claim(t, &[0, 1, 3, 4, 5, 6]).unwrap();
        assert!(cache.forest.node(a2).is_none() && cache.forest.node(c).is_none());
        assert!(cache.claim(t, &[0]).is_err());
    }

    /// After a redraw of the latent values the cache holds the trees a fresh cache over the
    /// new kernel builds (the reference shape comes from the starting values, whatever was
    /// drawn), with the statistics of the new values; a tree without latent values is kept.
    #[test]
    fn latent_redraws_keep_the_reference_shape_and_refresh_the_statistics() {
        use crate::data::table::{Column, ColumnType, TableData};
        use crate::kernel::mixed::Mixed;
        let nan = f64::NAN;
        let real = |name: &str, values: &[f64]| Column {
            name: name.into(),
            kind: ColumnType::Real,
            levels: Vec::new(),
            values: values.to_vec(),
        };
        let table = TableData::new(vec![
            real("x", &[0.0, 0.4, 1.0, 3.0, nan, 3.6, 2.2]),
            real("y", &[0.1, nan, 1.1, -0.9, -1.2, -1.5, nan]),
        ])
        .unwrap();
        let k0 = Mixed::full(table, None, None, None).unwrap();
        let all: Vec<usize> = (0..7).collect();
        let mut rng = crate::rng::SeedPlan::new(3).chain(0);
        let k1 = k0.redraw_latent(&[&all], &mut rng).unwrap().unwrap();
        assert_ne!(
            k1.latent(),
            k0.latent(),
            "the redraw moved the missing coordinates"
        );
        let prior = Dp::new(1.0).unwrap();
        let clusters: [&[usize]; 3] = [&all, &[6, 1, 4, 2], &[0, 3, 5]];
        let mut cache = TreeCache::new(&k0, |s| prior.ln_kappa(s));
        for members in clusters {
            cache.tree_for(&k0, members).unwrap();
        }
        assert_eq!(k1.latent_points(), [1, 4, 6]);
        let kept = cache.tree_for(&k0, &[0, 3, 5]).unwrap();
        cache.latent_changed(&k1).unwrap();
        assert_eq!(
            cache.tree_for(&k1, &[0, 3, 5]).unwrap(),
            kept,
            "a tree without latent values is kept"
        );
        let mut fresh = TreeCache::new(&k1, |s| prior.ln_kappa(s));
        for members in clusters {
            let t = cache.tree_for(&k1, members).unwrap();
            let f = fresh.tree_for(&k1, members).unwrap();
            assert_eq!(
                cache.forest.tree_to_newick(t, NewickInfo::LnD).unwrap(),
                fresh.forest.tree_to_newick(f, NewickInfo::LnD).unwrap()
            );
            cache.forest.validate_tree(&k1, &prior, t).unwrap();
        }
    }
}
