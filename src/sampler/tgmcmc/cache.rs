//! Canonical trees (MATH §5.4 V3): the tree of a cluster is a fixed reference tree over all
//! points (SeqInsert in increasing index order at a fixed reference prior, each descent
//! weighing `d` at no more than [`REFERENCE_LEVELS`] nodes) restricted to the cluster's
//! members, so it is a deterministic function of the member set. Trees are cached
//! and, when their cluster changed, repaired from the old tree that holds most of its points
//! ([`TreeCache::repair`]: the subtrees over unchanged parts are kept, the joins along the
//! changed points' paths made anew) or, when too much changed, built afresh; either way the
//! tree is the same, node for node and bit for bit.
//!
//! A kernel with latent values ([`ConjugateKernel::has_latent`]) gets its reference tree from
//! the latent values' starting values ([`ConjugateKernel::at_latent_start`]), a function of
//! the observed data and the hyperparameters alone: the tree's shape then survives every
//! redraw of the latent values ([`TreeCache::latent_changed`]), and only the cluster trees,
//! whose statistics are those of the current values, are rebuilt. Any fixed tree keeps the
//! move exact (the proposal needs the trees to be a deterministic function of the member set
//! for the kernel of the step); the reference only guides the proposals.

use crate::error::{Error, Result};
use crate::kernel::{ConjugateKernel, PointIndex};
use crate::tree::{Forest, NodeKey};
use std::sync::{Arc, Mutex};

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
/// be holding. A repair uses its old tree up: the parts it keeps move into the new tree, the
/// rest is deleted, and the old tree's key is then gone or, when the new tree took it whole,
/// a node inside the new tree, whose claim takes its points' ownership.
#[derive(Clone, Debug)]
pub(super) struct TreeCache<K: ConjugateKernel> {
    forest: Forest<K>,
    reference: Option<Arc<ReferenceTree>>,
    shared: Option<SharedReference>,
    ln_kappa: Vec<f64>,
    owner: Vec<Option<NodeKey>>,
    relevant: Vec<bool>,
    touched: Vec<usize>,
    stack: Vec<(usize, bool)>,
    built: Vec<NodeKey>,
    leaves: Vec<NodeKey>,
    repair: Repair,
}

/// Scratch space of [`TreeCache::repair`], kept between calls so that a repair allocates
/// nothing: marks on reference nodes (`DIRTY`, `ADDED`) and on points (members of the new
/// set), the points of the old tree, the walk's stack, the program it writes and the nodes
/// it takes from the old tree.
#[derive(Clone, Debug, Default)]
struct Repair {
    marks: Vec<u8>,
    member: Vec<bool>,
    marked: Vec<usize>,
    old_points: Vec<usize>,
    stack: Vec<Visit>,
    program: Vec<Step>,
    taken: Vec<NodeKey>,
}

/// The most nodes at which each SeqInsert of the reference tree weighs `d`; below them a
/// point goes down the smaller side ([`Forest::build_tree_within`]). SeqInsert into a tight
/// cluster of `m` points mostly descends to its bottom, so the tree grows a chain nearly `m`
/// deep and its build costs O(m²) pair marginals: the first sweep of one chain, which builds
/// it, took 2.4-2.5 s on 20,000 points in 3 dimensions in 8 tight clusters and 89 s on 45,000
/// (one thread, while a run's other chains wait for it); with this bound 1.3-1.5 s and
/// 5.2-6.1 s (BENCHMARKS). No descent over at most 513 points passes this many nodes, and the
/// default runs of the shared real data sets give the chains they gave with SeqInsert's tree.
const REFERENCE_LEVELS: usize = 512;

/// A reference node below a point of the symmetric difference.
const DIRTY: u8 = 1;
/// A reference node below a point of the new set that the old tree lacks.
const ADDED: u8 = 2;

/// One entry of the repair's walk over the reference tree: open reference node `v`, whose
/// points in the old tree are under the old tree's node `old` (`None`: it has none there),
/// or close an internal node whose children's subtrees start at height `mark` of the stack
/// of built subtrees.
#[derive(Clone, Copy, Debug)]
enum Visit {
    Open { v: usize, old: Option<NodeKey> },
    Close { mark: usize },
}

/// One instruction of a repair's program, run on a stack of subtrees: push a subtree taken
/// from the old tree, push a new leaf, or join the two topmost subtrees (left, right).
#[derive(Clone, Copy, Debug)]
enum Step {
    Take(NodeKey),
    Leaf(usize),
    Join,
}

/// The fixed reference tree over all points, as index links (no statistics): node `v` is a
/// leaf of `point[v]` or has `children[v]`; `leaf[i]` is the node of point `i`. Nodes are
/// numbered in preorder, so the subtree of `v` is the nodes `v..end[v]`.
#[derive(Clone, Debug)]
struct ReferenceTree {
    parent: Vec<Option<usize>>,
    children: Vec<Option<[usize; 2]>>,
    point: Vec<Option<usize>>,
    leaf: Vec<usize>,
    end: Vec<usize>,
    root: usize,
}

/// One reference tree for the chains of a launch. The reference tree depends only on the
/// kernel (its data and hyperparameters) and the reference `ln κ`, which the chains of one
/// run share, so the first chain that needs it builds it (`n` SeqInserts: 0.9 s of CPU on
/// 20,000 points in 3 dimensions) and the others take it, waiting while it is built. The
/// tree is the one each would have built, so the chains are unchanged, bit for bit. A cache
/// takes it only for the kernel object it was built with (by address) and the same reference
/// `ln κ` (bit for bit); otherwise it builds its own. The launch shares only where the kernel
/// cannot change between the chains' starts (no kernel hyperpriors), so the address stands
/// for the kernel's values.
#[derive(Clone, Debug, Default)]
pub struct SharedReference(Arc<Mutex<Option<SharedEntry>>>);

/// What [`SharedReference`] holds once built: the tree and what it was built for.
#[derive(Debug)]
struct SharedEntry {
    kernel: usize,
    ln_kappa: Vec<f64>,
    tree: Arc<ReferenceTree>,
}

impl SharedReference {
    /// The shared tree if it was built for `kernel` and `ln_kappa`; else, when none is held,
    /// `build`'s, kept for the others; else (built for another kernel) `build`'s alone.
    /// Errors as `build`, keeping nothing.
    fn get_or_build<K>(
        &self,
        kernel: &K,
        ln_kappa: &[f64],
        build: impl FnOnce() -> Result<ReferenceTree>,
    ) -> Result<Arc<ReferenceTree>> {
        let address = kernel as *const K as usize;
        let same = |e: &SharedEntry| {
            e.kernel == address
                && e.ln_kappa.len() == ln_kappa.len()
                && e.ln_kappa
                    .iter()
                    .zip(ln_kappa)
                    .all(|(a, b)| a.to_bits() == b.to_bits())
        };
        // A chain that panicked while building leaves the slot empty: build anew.
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match slot.as_ref() {
            Some(e) if same(e) => Ok(e.tree.clone()),
            Some(_) => {
                drop(slot);
                Ok(Arc::new(build()?))
            }
            None => {
                let tree = Arc::new(build()?);
                *slot = Some(SharedEntry {
                    kernel: address,
                    ln_kappa: ln_kappa.to_vec(),
                    tree: tree.clone(),
                });
                Ok(tree)
            }
        }
    }
}

impl<K: ConjugateKernel> TreeCache<K> {
    /// An empty cache over `kernel`'s data whose reference `θ` gives `ln κ(s, u)` as
    /// `ln_kappa(s)`.
    pub(super) fn new(kernel: &K, ln_kappa: impl Fn(usize) -> f64) -> Self {
        let ln_kappa: Vec<f64> = (0..=kernel.n_points()).map(ln_kappa).collect();
        TreeCache {
            forest: Self::empty_forest(kernel, &ln_kappa),
            reference: None,
            shared: None,
            ln_kappa,
            owner: vec![None; kernel.n_points()],
            relevant: Vec::new(),
            touched: Vec::new(),
            stack: Vec::new(),
            built: Vec::new(),
            leaves: Vec::new(),
            repair: Repair::default(),
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
    fn valid_tree<I: PointIndex>(&self, members: &[I]) -> Option<NodeKey> {
        let t = self.owner[members.first()?.index()]?;
        let node = self.forest.node(t)?;
        (node.size() == members.len() && members.iter().all(|&i| self.owner[i.index()] == Some(t)))
            .then_some(t)
    }

    /// The canonical tree of the cluster `members` (any order), from the cache, or else
    /// repaired from the claimed tree holding most of them ([`TreeCache::repair`]) when it
    /// differs from `members` in at most half as many points as `members` has, or else built
    /// ([`TreeCache::build`]); a new tree is claimed. Cost: O(|c|) when cached; otherwise a
    /// repair or a build.
    #[cfg(test)]
    pub(super) fn tree_for(&mut self, kernel: &K, members: &[usize]) -> Result<NodeKey> {
        self.tree_for_points(kernel, members)
    }

    /// [`TreeCache::tree_for`] of a cluster's member list as a partition holds it (32 bits).
    pub(super) fn tree_for_members(&mut self, kernel: &K, members: &[u32]) -> Result<NodeKey> {
        self.tree_for_points(kernel, members)
    }

    /// [`TreeCache::tree_for`] in either width ([`PointIndex`]).
    fn tree_for_points<I: PointIndex>(&mut self, kernel: &K, members: &[I]) -> Result<NodeKey> {
        if let Some(t) = self.valid_tree(members) {
            return Ok(t);
        }
        let t = match self.repair_source(members) {
            Some(old) => self.repair(kernel, members, old)?,
            None => self.build_points(kernel, members)?,
        };
        self.claim_points(t, members)?;
        Ok(t)
    }

    /// The claimed tree that a repair of `members`' tree starts from: the owner of most of
    /// `members` (Boyer-Moore's majority vote, then a count), if it exists and differs from
    /// `members` in at most `|members| / 2` points. Cost: O(|c|), no kernel work.
    fn repair_source<I: PointIndex>(&self, members: &[I]) -> Option<NodeKey> {
        let (mut candidate, mut votes) = (None, 0usize);
        for &i in members {
            let i = i.index();
            let o = *self.owner.get(i)?;
            if votes == 0 {
                candidate = o;
                votes = 1;
            } else if o == candidate {
                votes += 1;
            } else {
                votes -= 1;
            }
        }
        let t = candidate?;
        let node = self.forest.node(t)?;
        let shared = members
            .iter()
            .filter(|&&i| self.owner[i.index()] == Some(t))
            .count();
        let differ = (members.len() - shared) + (node.size() - shared);
        (node.parent().is_none() && differ <= members.len() / 2).then_some(t)
    }

    /// Takes the reference tree from `shared` where the launch's other chains have built it
    /// (or builds it there for them) instead of building its own, at the first
    /// [`TreeCache::build`]: see [`SharedReference`]. Cost: O(1).
    pub(super) fn share(&mut self, shared: SharedReference) {
        if self.reference.is_none() {
            self.shared = Some(shared);
        }
    }

    /// The reference tree of `kernel` at the reference `ln_kappa`, built in `forest`, or from
    /// the kernel's latent starting values in a forest of its own when it has latent values
    /// (see the module documentation). Cost: `n` SeqInserts.
    fn build_reference(
        forest: &mut Forest<K>,
        ln_kappa: &[f64],
        kernel: &K,
    ) -> Result<ReferenceTree> {
        match kernel.at_latent_start()? {
            // In a forest of its own: the cache's leaves hold the current values.
            Some(start) => {
                let mut own = Forest::with_ln_kappa(&start, |s| ln_kappa[s]);
                ReferenceTree::build(&mut own, &start)
            }
            None => ReferenceTree::build(forest, kernel),
        }
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
        self.build_points(kernel, members)
    }

    /// [`TreeCache::build`] in either width ([`PointIndex`]).
    fn build_points<I: PointIndex>(&mut self, kernel: &K, members: &[I]) -> Result<NodeKey> {
        if self.reference.is_none() {
            let reference = match self.shared.take() {
                Some(shared) => {
                    let ln_kappa = std::mem::take(&mut self.ln_kappa);
                    let got = shared.get_or_build(kernel, &ln_kappa, || {
                        Self::build_reference(&mut self.forest, &ln_kappa, kernel)
                    });
                    self.ln_kappa = ln_kappa;
                    got?
                }
                None => Arc::new(Self::build_reference(
                    &mut self.forest,
                    &self.ln_kappa,
                    kernel,
                )?),
            };
            self.relevant = vec![false; reference.parent.len()];
            self.reference = Some(reference);
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
            let i = i.index();
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

    /// Repairs the claimed tree `old` into the canonical tree of `members` (any order), as an
    /// unclaimed loose tree: the same tree [`TreeCache::build`] makes, node for node and bit
    /// for bit, made from `old`'s unchanged parts. `old` is used up: its other nodes are
    /// deleted (a subsequent [`TreeCache::claim`] takes its points' ownership).
    ///
    /// The subtree of a canonical tree at a reference node `v` depends only on the member set's
    /// points under `v`, and is made by the same joins in the same order whatever the rest
    /// is. So every reference node with no point of the symmetric difference
    /// `members △ points(old)` under it (a *clean* node) has the same subtree in both trees,
    /// and is taken from `old` whole. The ancestors of the difference's points (the *dirty*
    /// nodes) are marked by walking up from each leaf until a marked ancestor; a walk from the
    /// root through the dirty nodes then follows `old` alongside (the node of `old` holding its
    /// points under `v`: a join at `v` hands its children to `v`'s children, any other node
    /// goes down whole to the side of its points) and writes a program: take `old`'s node at
    /// each clean node below a dirty one, make a leaf for each added point, join where both
    /// children of a dirty node produced a subtree. The program runs after `old`'s other nodes
    /// are deleted, in the order of [`TreeCache::build`]'s post-order walk.
    ///
    /// Errors if `members` is empty, holds a point twice or out of range, or `old` is not a
    /// claimed tree. Cost: O(|c| + |old|) marks without kernel work, and the dirty nodes:
    /// at most `|Δ| · depth` pointer steps, the joins along them (one pair marginal each),
    /// and a leaf per added point.
    pub(super) fn repair<I: PointIndex>(
        &mut self,
        kernel: &K,
        members: &[I],
        old: NodeKey,
    ) -> Result<NodeKey> {
        if members.is_empty() {
            return Err(Error::Empty(
                "a canonical tree needs at least one point".into(),
            ));
        }
        if self.forest.node(old).is_none_or(|n| n.parent().is_some()) {
            return Err(Error::param(
                "repaired tree",
                format!("{old:?}"),
                "a claimed canonical tree",
            ));
        }
        let reference = self.reference.as_ref().expect("a claimed tree exists");
        let rep = &mut self.repair;
        rep.marks.resize(reference.parent.len(), 0);
        rep.member.resize(self.owner.len(), false);
        let mut bad = None;
        for &i in members {
            let i = i.index();
            match rep.member.get_mut(i) {
                Some(m) if !*m => *m = true,
                _ => {
                    bad = Some(i);
                    break;
                }
            }
        }
        // The difference, each point marking its ancestors.
        let mark = |rep_marks: &mut Vec<u8>, marked: &mut Vec<usize>, p: usize, bits: u8| {
            let mut v = reference.leaf[p];
            loop {
                if rep_marks[v] & bits == bits {
                    break;
                }
                if rep_marks[v] == 0 {
                    marked.push(v);
                }
                rep_marks[v] |= bits;
                match reference.parent[v] {
                    Some(u) => v = u,
                    None => break,
                }
            }
        };
        if bad.is_none() {
            self.forest.points(old, &mut rep.old_points)?;
            for &p in &rep.old_points {
                if !rep.member[p] {
                    mark(&mut rep.marks, &mut rep.marked, p, DIRTY);
                }
            }
            for &i in members {
                let i = i.index();
                if self.owner[i] != Some(old) {
                    mark(&mut rep.marks, &mut rep.marked, i, DIRTY | ADDED);
                }
            }
        }
        for &i in members {
            let i = i.index();
            if let Some(m) = rep.member.get_mut(i) {
                *m = false;
            }
        }
        if let Some(i) = bad {
            for &v in &rep.marked {
                rep.marks[v] = 0;
            }
            rep.marked.clear();
            return Err(Error::param(
                "canonical tree member",
                i,
                "distinct points of the data set",
            ));
        }
        // The walk, writing the program; the stack height of built subtrees is simulated.
        rep.program.clear();
        rep.taken.clear();
        rep.stack.clear();
        rep.stack.push(Visit::Open {
            v: reference.root,
            old: Some(old),
        });
        let mut height = 0;
        while let Some(visit) = rep.stack.pop() {
            let (v, at) = match visit {
                Visit::Close { mark } => {
                    if height - mark == 2 {
                        rep.program.push(Step::Join);
                        height -= 1;
                    }
                    continue;
                }
                Visit::Open { v, old } => (v, old),
            };
            let bits = rep.marks[v];
            if bits & DIRTY == 0 {
                if let Some(k) = at {
                    rep.program.push(Step::Take(k));
                    rep.taken.push(k);
                    height += 1;
                }
                continue;
            }
            if let Some(p) = reference.point[v] {
                if bits & ADDED != 0 {
                    rep.program.push(Step::Leaf(p));
                    height += 1;
                }
                continue;
            }
            if at.is_none() && bits & ADDED == 0 {
                continue;
            }
            let [l, r] = reference.children[v].expect("an internal node");
            let (at_l, at_r) = match at {
                None => (None, None),
                Some(k) => {
                    let node = self.forest.node(k).expect("a node of the old tree");
                    let min = |c: NodeKey| self.forest.node(c).expect("a child").min_point();
                    match node.children() {
                        Some([a, b])
                            if reference.holds(l, min(a)) && reference.holds(r, min(b)) =>
                        {
                            (Some(a), Some(b))
                        }
                        _ if reference.holds(l, node.min_point()) => (Some(k), None),
                        _ => (None, Some(k)),
                    }
                }
            };
            rep.stack.push(Visit::Close { mark: height });
            rep.stack.push(Visit::Open { v: r, old: at_r });
            rep.stack.push(Visit::Open { v: l, old: at_l });
        }
        for &v in &rep.marked {
            rep.marks[v] = 0;
        }
        rep.marked.clear();
        if height != 1 {
            return Err(Error::Usage(format!(
                "a repair of a canonical tree made {height} trees instead of one (a broken cache)"
            )));
        }
        self.forest.take_subtrees(old, &rep.taken)?;
        self.built.clear();
        for &step in &rep.program {
            let t = match step {
                Step::Take(k) => k,
                Step::Leaf(p) => self.forest.make_leaf(kernel, p)?,
                Step::Join => {
                    let b = self.built.pop().expect("right subtree built");
                    let a = self.built.pop().expect("left subtree built");
                    self.forest.join(kernel, a, b)?
                }
            };
            self.built.push(t);
        }
        self.built
            .pop()
            .ok_or_else(|| Error::Empty("a canonical tree needs at least one point".into()))
    }

    /// Makes the loose tree `t`, built over exactly `members`, the cached tree of that
    /// member set: deletes every tree that owned one of its points, then takes ownership and
    /// makes its leaves the live ones. Cost: O(|c|) plus the deleted trees' sizes.
    pub(super) fn claim(&mut self, t: NodeKey, members: &[usize]) -> Result<()> {
        self.claim_points(t, members)
    }

    /// [`TreeCache::claim`] in either width ([`PointIndex`]).
    fn claim_points<I: PointIndex>(&mut self, t: NodeKey, members: &[I]) -> Result<()> {
        let size = self.forest.node(t).map(|n| n.size());
        if size != Some(members.len()) {
            return Err(Error::Usage(format!(
                "a canonical tree of {size:?} points cannot be claimed for a cluster of {}",
                members.len()
            )));
        }
        for &i in members {
            let i = i.index();
            if let Some(prev) = self.owner[i] {
                // A tree that a repair took whole into `t` is a subtree of `t` now.
                if prev != t && self.forest.node(prev).is_some_and(|n| n.parent().is_none()) {
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
    /// one tree (MATH §3.4, no destroy), each descent weighing `d` at no more than
    /// [`REFERENCE_LEVELS`] nodes, built in `forest` at its reference `θ`, recorded as links
    /// and deleted from the forest. Cost: `n` SeqInserts of at most [`REFERENCE_LEVELS`]
    /// weighings each, and their walks down the smaller sides below.
    fn build<K: ConjugateKernel>(forest: &mut Forest<K>, kernel: &K) -> Result<Self> {
        let n = kernel.n_points();
        let all: Vec<usize> = (0..n).collect();
        let root = forest.build_tree_within(kernel, &all, REFERENCE_LEVELS)?;
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
            end: vec![0; keys.len()],
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
        // Children come after their parent in preorder, so a backward pass sees them first.
        for v in (0..keys.len()).rev() {
            tree.end[v] = match tree.children[v] {
                Some([_, r]) => tree.end[r],
                None => v + 1,
            };
        }
        forest.delete_tree(root)?;
        Ok(tree)
    }

    /// Whether point `p` is under node `v`. Cost: O(1).
    fn holds(&self, v: usize, p: usize) -> bool {
        (v..self.end[v]).contains(&self.leaf[p])
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
    fn a_shared_reference_tree_gives_every_cache_the_trees_of_its_own() {
        let k = kernel();
        let prior = Dp::new(1.0).unwrap();
        let ln_kappa = |s| prior.ln_kappa(s);
        let shared = SharedReference::default();
        let mut own = TreeCache::new(&k, ln_kappa);
        let mut first = TreeCache::new(&k, ln_kappa);
        first.share(shared.clone());
        let mut second = TreeCache::new(&k, ln_kappa);
        second.share(shared.clone());
        for members in [vec![0, 1, 2, 3, 4, 5, 6], vec![6, 2, 0], vec![5, 1, 4, 3]] {
            let newick = |cache: &mut TreeCache<NormalWishart>| {
                let t = cache.build(&k, &members).unwrap();
                let out = cache.forest.tree_to_newick(t, NewickInfo::LnD).unwrap();
                cache.discard(t).unwrap();
                out
            };
            let expected = newick(&mut own);
            assert_eq!(newick(&mut first), expected);
            assert_eq!(newick(&mut second), expected);
        }
        // Built once: the second cache holds the first's tree.
        let (a, b) = (first.reference.unwrap(), second.reference.unwrap());
        assert!(Arc::ptr_eq(&a, &b) && !Arc::ptr_eq(&a, own.reference.as_ref().unwrap()));
        // Another kernel object, or another reference prior, builds its own.
        let other_kernel = k.clone();
        let mut elsewhere = TreeCache::new(&other_kernel, ln_kappa);
        elsewhere.share(shared.clone());
        elsewhere.build(&other_kernel, &[0, 1]).unwrap();
        assert!(!Arc::ptr_eq(&a, elsewhere.reference.as_ref().unwrap()));
        let hotter = Dp::new(2.0).unwrap();
        let mut other_prior = TreeCache::new(&k, |s| hotter.ln_kappa(s));
        other_prior.share(shared);
        other_prior.build(&k, &[0, 1]).unwrap();
        assert!(!Arc::ptr_eq(&a, other_prior.reference.as_ref().unwrap()));
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

    /// Whether the trees under `a` in `fa` and under `b` in `fb` are the same tree: the same
    /// shape and points, and every cached value and statistic equal bit for bit (a
    /// statistic's `Debug` text prints each number exactly).
    fn same_tree<K: ConjugateKernel>(fa: &Forest<K>, a: NodeKey, fb: &Forest<K>, b: NodeKey) {
        let (x, y) = (fa.node(a).unwrap(), fb.node(b).unwrap());
        assert_eq!(x.point(), y.point());
        assert_eq!((x.size(), x.min_point()), (y.size(), y.min_point()));
        let bits = |n: &crate::tree::Node<K::Stat>| {
            [
                n.ln_kappa(),
                n.ln_marginal(),
                n.ln_h(),
                n.ln_d(),
                n.ln_phi(),
            ]
            .map(f64::to_bits)
        };
        assert_eq!(bits(x), bits(y), "cached values of node {}", x.min_point());
        assert_eq!(format!("{:?}", x.stat()), format!("{:?}", y.stat()));
        match (x.children(), y.children()) {
            (None, None) => {}
            (Some([l1, r1]), Some([l2, r2])) => {
                same_tree(fa, l1, fb, l2);
                same_tree(fa, r1, fb, r2);
            }
            _ => panic!("a leaf against an internal node at point {}", x.min_point()),
        }
    }

    /// Random partitions in sequence (points moving between clusters, clusters split and
    /// merged), every cluster's tree asked of a cache that repairs and of one that only
    /// builds: the two are the same tree node for node and bit for bit (and each point is
    /// found by its rank, [`Forest::nth_point`]), the repairing cache
    /// holds nothing else, and it repaired at least 10 trees. With `redraw`, the
    /// kernel's latent values are redrawn between partitions.
    fn repaired_trees_match_fresh_builds<K: ConjugateKernel>(
        kernel: &K,
        redraw: impl Fn(&K, &[Vec<usize>], &mut crate::rng::NrmmRng) -> Option<K>,
        seed: u64,
    ) {
        use crate::rng::uniform_index;
        let n = kernel.n_points();
        let prior = Dp::new(1.0).unwrap();
        let mut rng = crate::rng::SeedPlan::new(seed).chain(0);
        let mut kernel = kernel.clone();
        let mut cache = TreeCache::new(&kernel, |s| prior.ln_kappa(s));
        let mut labels: Vec<usize> = (0..n).map(|i| i % 3).collect();
        let (mut repairs, mut builds) = (0, 0);
        for round in 0..60 {
            match round % 4 {
                // A few points move.
                0 | 1 => {
                    for _ in 0..1 + uniform_index(&mut rng, 4) {
                        let i = uniform_index(&mut rng, n);
                        labels[i] = uniform_index(&mut rng, 6);
                    }
                }
                // A cluster splits in two.
                2 => {
                    let c = labels[uniform_index(&mut rng, n)];
                    let fresh = labels.iter().max().unwrap() + 1;
                    for l in labels.iter_mut().filter(|l| **l == c) {
                        if uniform_index(&mut rng, 3) == 0 {
                            *l = fresh;
                        }
                    }
                }
                // Two clusters merge.
                _ => {
                    let (a, b) = (labels[uniform_index(&mut rng, n)], labels[0]);
                    for l in labels.iter_mut().filter(|l| **l == a) {
                        *l = b;
                    }
                }
            }
            let mut clusters: Vec<Vec<usize>> = Vec::new();
            let mut ids: Vec<usize> = labels.clone();
            ids.sort_unstable();
            ids.dedup();
            for id in ids {
                let mut members: Vec<usize> = (0..n).filter(|&i| labels[i] == id).collect();
                if uniform_index(&mut rng, 2) == 0 {
                    members.reverse();
                }
                clusters.push(members);
            }
            if let Some(k) = redraw(&kernel, &clusters, &mut rng) {
                kernel = k;
                cache.latent_changed(&kernel).unwrap();
            }
            let mut fresh = TreeCache::new(&kernel, |s| prior.ln_kappa(s));
            let mut nodes = 0;
            for members in &clusters {
                if cache.valid_tree(members).is_none() {
                    match cache.repair_source(members) {
                        Some(_) => repairs += 1,
                        None => builds += 1,
                    }
                }
                let t = cache.tree_for(&kernel, members).unwrap();
                let f = fresh.build(&kernel, members).unwrap();
                same_tree(&cache.forest, t, &fresh.forest, f);
                cache.forest.validate_tree(&kernel, &prior, t).unwrap();
                let mut points = Vec::new();
                cache.forest.points(t, &mut points).unwrap();
                for (k, &p) in points.iter().enumerate() {
                    assert_eq!(cache.forest.nth_point(t, k).unwrap(), p);
                }
                assert!(cache.forest.nth_point(t, points.len()).is_err());
                nodes += 2 * members.len() - 1;
            }
            for members in &clusters {
                let t = cache
                    .valid_tree(members)
                    .expect("every cluster's tree is cached");
                assert_eq!(cache.forest.root_of(t).unwrap(), t);
                for &i in members {
                    let i = i.index();
                    assert_eq!(
                        cache
                            .forest
                            .root_of(cache.forest.leaf_of(i).unwrap())
                            .unwrap(),
                        t
                    );
                }
            }
            assert_eq!(
                cache.forest.n_nodes(),
                nodes,
                "the cache holds the clusters' trees only"
            );
        }
        assert!(repairs >= 10, "{repairs} repairs, {builds} builds");
    }

    #[test]
    fn repaired_trees_are_the_trees_a_fresh_build_makes() {
        let mut rng = crate::rng::SeedPlan::new(11).chain(0);
        let n = 48;
        let values: Vec<f64> = (0..2 * n)
            .map(|v| (v / 2 % 4) as f64 * 1.5 + crate::rng::uniform_open01(&mut rng))
            .collect();
        let data = crate::data::DenseData::new(n, 2, values).unwrap();
        let hyper = NwHyper::from_data(&data).unwrap();
        let k = NormalWishart::new(Arc::new(data), hyper).unwrap();
        for seed in 0..4 {
            repaired_trees_match_fresh_builds(&k, |_, _, _| None, seed);
        }
    }

    #[test]
    fn repaired_trees_with_latent_values_are_the_trees_a_fresh_build_makes() {
        use crate::data::table::{Column, ColumnType, TableData};
        use crate::kernel::mixed::Mixed;
        let mut rng = crate::rng::SeedPlan::new(12).chain(0);
        let n = 40;
        let mut column = |name: &str, shift: f64| {
            let values = (0..n)
                .map(|i| match uniform_index(&mut rng, 8) {
                    0 => f64::NAN,
                    _ => (i % 3) as f64 * shift + crate::rng::uniform_open01(&mut rng),
                })
                .collect::<Vec<f64>>();
            Column {
                name: name.into(),
                kind: ColumnType::Real,
                levels: Vec::new(),
                values,
            }
        };
        use crate::rng::uniform_index;
        let table = TableData::new(vec![column("x", 2.0), column("y", -1.0)]).unwrap();
        let k = Mixed::full(table, None, None, None).unwrap();
        assert!(k.has_latent());
        let redraw = |k: &Mixed, clusters: &[Vec<usize>], rng: &mut crate::rng::NrmmRng| {
            let groups: Vec<&[usize]> = clusters.iter().map(Vec::as_slice).collect();
            (uniform_index(rng, 3) == 0).then(|| k.redraw_latent(&groups, rng).unwrap().unwrap())
        };
        for seed in 0..3 {
            repaired_trees_match_fresh_builds(&k, redraw, seed);
        }
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
