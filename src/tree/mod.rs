//! The BHC / IBHC tree engine (MATH §3, §4.1, §4.2): binary trees over data points whose
//! nodes carry the potentials that the tree-guided samplers need.
//!
//! A node `S` (identified with its leaf set) stores its kernel statistic, its size `|S|` and
//! the cached quantities of MATH §3.1:
//!
//! * `ln κ(|S|, u)` and `ℓm(S)`, with `ℓh(S) = ln κ + ℓm`;
//! * `ln d(S) = ln φ(L) + ln φ(R) - ℓh(S)` for an internal node with children `L`, `R`
//!   (`-∞` for a leaf);
//! * the potential `ln φ(S) = ℓh(S) + softplus(ln d(S))` (the reference code's `log_t`), the
//!   log of the sum over the tree-consistent partitions of `S` of `Π_c h(c)`.
//!
//! Nodes live in a [`slotmap`] arena and refer to each other by [`NodeKey`] (no pointers, no
//! reference counting). A [`Forest`] holds the arena and a registry of the trees that make up
//! the current clustering (its *roots*), ordered by their canonical key, the smallest point
//! index under the root (MATH P17): nothing depends on hashing or memory addresses. Trees that
//! are built or taken apart inside an operation (Destroy's queue, StocInsert's candidate set,
//! a copy kept to restore a rejected proposal) are *loose*: parentless but not registered.
//!
//! The `θ`-dependent caches (`ln κ`, hence `ℓh`, `ln d`, `ln φ`) are computed from a table of
//! `ln κ(n, u)` taken from the prior at construction and at every [`Forest::recompute`]; each
//! recompute advances [`Forest::epoch`] (MATH P16). `ℓm` depends on the data only and is never
//! recomputed.
//!
//! [`Forest`]'s methods, by topic:
//!
//! * the arena, registry and leaves, pair statistics `d(A, B)` ([`Forest::pair_stats`]),
//!   joins, copies, and [`Forest::recompute`];
//! * SeqInsert, Update with and without destroy, Destroy, Detach (MATH §3.4):
//!   [`Forest::seq_insert`], [`Forest::update`], [`Forest::update_with_destroy`],
//!   [`Forest::destroy`], [`Forest::detach_leaf`];
//! * sequential exact / noisy IBHC and greedy BHC (MATH §3.3, §3.4): [`Forest::ibhc`],
//!   [`Forest::sequential_insert`], [`Forest::greedy_bhc`];
//! * SampleSub and StocInsert through a [`Chooser`](crate::chooser::Chooser), with their
//!   reverse evaluations (MATH §4.1, §4.2): [`Forest::sample_sub`], [`Forest::ln_prob_sub`],
//!   [`Forest::stoc_insert`], [`Forest::stoc_insert_replay`];
//! * the invariants of MATH P18: [`Forest::validate`];
//! * tree shapes keyed by point indices, for checkpoints: [`Forest::shapes`],
//!   [`Forest::from_shapes`];
//! * undo records, which take back a rejected proposal made in place at the cost of the
//!   nodes it touched: [`Forest::begin_undo`], [`Forest::rollback`], [`Forest::commit`];
//! * exports: [`Forest::to_graph`] (petgraph), [`Forest::to_dot`], [`Forest::to_newick`].
//!
//! ```
//! use std::sync::Arc;
//! use nrmm::data::generate::data_set_a;
//! use nrmm::kernel::{NormalWishart, NwHyper};
//! use nrmm::prior::Dp;
//! use nrmm::rng::SeedPlan;
//! use nrmm::chooser::RngChooser;
//! use nrmm::tree::{Forest, IbhcMode, NewickInfo};
//!
//! let data = data_set_a();
//! let kernel = NormalWishart::new(Arc::new(data.clone()), NwHyper::from_data(&data)?)?;
//! let prior = Dp::new(1.0)?;
//! let mut rng = SeedPlan::new(7).chain(0);
//! let mut chooser = RngChooser::new(&mut rng);
//! let forest = Forest::ibhc(&kernel, &prior, IbhcMode::Exact, &mut chooser)?;
//! forest.validate(&kernel, &prior)?;
//! assert_eq!(forest.labels()?.len(), 7);
//! print!("{}", forest.to_newick(NewickInfo::Topology)); // one tree per cluster
//! # Ok::<(), nrmm::Error>(())
//! ```

mod build;
mod export;
mod ops;
mod sample;
mod shape;
mod undo;
mod validate;

pub use build::IbhcMode;
pub use export::{ExportNode, NewickInfo};
pub use sample::{Candidates, StocChoice};
pub use shape::TreeShape;

use std::collections::BTreeMap;
use std::hash::Hash;

use rustc_hash::FxHashMap;

use slotmap::{new_key_type, SlotMap};

use crate::error::{Error, Result};
use crate::kernel::{ConjugateKernel, Probe};
use crate::math::softplus;
use crate::prior::NrmPrior;

new_key_type! {
    /// The key of a node in a [`Forest`]'s arena. Keys are never reused for another node, so
    /// a key kept after its node was deleted is reported as unknown rather than aliased.
    pub struct NodeKey;
}

/// One node of a tree: a leaf (one data point) or an internal node with two children.
///
/// The cached values follow MATH §3.1; see the [module documentation](self). They are valid
/// whenever no operation is half done (MATH P18): [`Forest::validate`] checks them against a
/// fresh computation.
#[derive(Clone, Debug)]
pub struct Node<S> {
    stat: S,
    size: usize,
    min_point: usize,
    ln_kappa: f64,
    ln_marginal: f64,
    ln_h: f64,
    ln_d: f64,
    ln_phi: f64,
    point: Option<usize>,
    parent: Option<NodeKey>,
    children: Option<[NodeKey; 2]>,
    /// Deleted under an open undo record: unreachable, kept until the record is closed.
    dead: bool,
    /// Made under the open undo record: a rollback deletes it, so its own changes need no
    /// journal entries.
    fresh: bool,
    /// The root of a registered tree: mirrors the registry, so that asking costs no lookup.
    registered: bool,
    /// The forest's stamp counter when the node's contents last changed. Every change below
    /// a node also changes the node (operations refresh the whole path to the root), so
    /// `(key, stamp)` identifies the subtree's contents; an undo record restores old stamps
    /// with the old contents.
    stamp: u64,
    /// The node's whole image is journaled in the open undo record: later changes need no
    /// journal entry, since a rollback restores the image. Cleared when the record closes.
    imaged: bool,
}

impl<S> Node<S> {
    /// The kernel's sufficient statistic of the node's points.
    pub fn stat(&self) -> &S {
        &self.stat
    }

    /// Number of leaves (data points) under the node.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Canonical key: the smallest point index under the node (MATH P17).
    pub fn min_point(&self) -> usize {
        self.min_point
    }

    /// `ln κ(|S|, u)`.
    pub fn ln_kappa(&self) -> f64 {
        self.ln_kappa
    }

    /// `ℓm(S) = ln m(X_S)`.
    pub fn ln_marginal(&self) -> f64 {
        self.ln_marginal
    }

    /// `ℓh(S) = ln κ(|S|, u) + ℓm(S)`.
    pub fn ln_h(&self) -> f64 {
        self.ln_h
    }

    /// `ln d(S) = ln φ(L) + ln φ(R) - ℓh(S)`; `-∞` for a leaf.
    pub fn ln_d(&self) -> f64 {
        self.ln_d
    }

    /// `ln φ(S) = ℓh(S) + softplus(ln d(S))`, the log tree potential (the reference's `log_t`).
    pub fn ln_phi(&self) -> f64 {
        self.ln_phi
    }

    /// The data point of a leaf; `None` for an internal node.
    pub fn point(&self) -> Option<usize> {
        self.point
    }

    /// The parent; `None` for the root of a tree.
    pub fn parent(&self) -> Option<NodeKey> {
        self.parent
    }

    /// The two children `[l, r]` of an internal node; `None` for a leaf.
    pub fn children(&self) -> Option<[NodeKey; 2]> {
        self.children
    }

    /// Whether the node is a leaf.
    pub fn is_leaf(&self) -> bool {
        self.children.is_none()
    }
}

/// The statistics of the would-be union node of two disjoint trees `A`, `B`, computed without
/// building it (MATH §3.1, the reference's `ComputeStats(A, B)`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairStats {
    /// `|A| + |B|`.
    pub size: usize,
    /// The smallest point index of `A ∪ B`.
    pub min_point: usize,
    /// `ln κ(|A| + |B|, u)`.
    pub ln_kappa: f64,
    /// `ℓm(A ∪ B)`.
    pub ln_marginal: f64,
    /// `ℓh(A ∪ B)`.
    pub ln_h: f64,
    /// `ln d(A, B) = ln φ(A) + ln φ(B) - ℓh(A ∪ B)`.
    pub ln_d: f64,
    /// What the predictive behind `ℓm(A ∪ B)` left for adding the leaf's point to the other
    /// tree's root, when one side is a leaf.
    held: Held,
}

/// A kernel [`Probe`] with the node it was made for: adding `point` to the node whose stamp
/// is `stamp` may reuse it (stamps name a node's contents uniquely, so a node that changed
/// since, or any other node, never matches).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Held {
    probe: Probe,
    stamp: u64,
    point: usize,
}

impl Held {
    /// The probe for adding `point` to the node whose stamp is `stamp`, if this is it; an
    /// empty probe otherwise.
    #[inline(always)]
    fn probe_for(&self, stamp: u64, point: usize) -> Probe {
        if self.point == point && self.stamp == stamp {
            self.probe
        } else {
            Probe::default()
        }
    }
}

impl PairStats {
    /// `ln φ` of the union node: `ℓh + softplus(ln d)`.
    pub fn ln_phi(&self) -> f64 {
        self.ln_h + softplus(self.ln_d)
    }
}

/// Whether node `key` still exists with the contents it had at `stamp`.
fn unchanged<S>(nodes: &SlotMap<NodeKey, Node<S>>, key: NodeKey, stamp: u64) -> bool {
    nodes.get(key).is_some_and(|n| n.stamp == stamp)
}

/// Makes room in a cache keyed by nodes once it holds `limit` entries: drops the entries
/// that `current` rejects (a node changed or was deleted since, so they can never be used
/// again), and everything if that does not free half of the room. Cost: O(cache) when full.
/// The entries dropped are handed to `evicted` (which may keep their buffers for reuse).
fn make_room<Key: Hash + Eq, V>(
    cache: &mut FxHashMap<Key, V>,
    limit: usize,
    mut current: impl FnMut(&Key, &V) -> bool,
    mut evicted: impl FnMut(V),
) {
    if cache.len() >= limit {
        // In place, so that the table keeps its allocation and is never rehashed.
        cache
            .extract_if(|k, v| !current(k, v))
            .for_each(|(_, v)| evicted(v));
        if cache.len() >= limit / 2 {
            cache.drain().for_each(|(_, v)| evicted(v));
        }
    }
}

/// The error of a pair statistic asked of a tree and itself, or of overlapping trees.
#[cold]
fn not_disjoint(a: NodeKey, b: NodeKey) -> Error {
    Error::param(
        "pair_stats",
        format!("{a:?}, {b:?}"),
        "two disjoint trees (their sizes add up to more than the data set)",
    )
}

/// The error of a pair statistic whose union marginal is NaN.
#[cold]
fn nan_union<S>(na: &Node<S>, nb: &Node<S>) -> Error {
    Error::Numerical(format!(
        "the log marginal of the union of the trees under points {} and {} is NaN",
        na.min_point, nb.min_point
    ))
}

/// Per point, its leaf statistic and log marginal once computed ([`Forest::cache_leaves`]).
type LeafCache<S> = Vec<Option<(S, f64)>>;

/// An arena of BHC / IBHC trees over the points of a kernel's data set, with a registry of the
/// trees forming the current clustering (see the [module documentation](self)).
///
/// Every point has at most one *live* leaf, the one [`Forest::leaf_of`] returns. Leaves made by
/// [`Forest::copy_tree`], or by [`Forest::make_leaf`] for a point that already has a live leaf,
/// are *shadows* until [`Forest::adopt_leaves`] makes them live; [`Forest::validate`] requires
/// every leaf of a registered tree to be live.
#[derive(Clone, Debug)]
pub struct Forest<K: ConjugateKernel> {
    nodes: SlotMap<NodeKey, Node<K::Stat>>,
    roots: BTreeMap<usize, NodeKey>,
    live_leaf: Vec<Option<NodeKey>>,
    ln_kappa: Vec<f64>,
    epoch: u64,
    scratch_keys: Vec<NodeKey>,
    scratch_w: Vec<f64>,
    scratch_pairs: Vec<PairStats>,
    scratch_path: Vec<(NodeKey, PairStats)>,
    recording: bool,
    undo: Vec<undo::Undo>,
    images: Vec<Node<K::Stat>>,
    spare: Vec<K::Stat>,
    leaf_cache: Option<LeafCache<K::Stat>>,
    stamps: u64,
    sub_cache: FxHashMap<(NodeKey, Candidates), sample::SubEntry>,
    /// Entries evicted from `sub_cache`, whose buffers new entries take over.
    sub_spare: Vec<sample::SubEntry>,
    pair_cache: FxHashMap<(NodeKey, NodeKey), (u64, u64, f64)>,
}

impl<K: ConjugateKernel> Forest<K> {
    /// An empty forest for `kernel`'s data, with the `θ` caches taken from `prior`.
    /// Cost: `n + 1` evaluations of `ln κ`.
    pub fn new<P: NrmPrior>(kernel: &K, prior: &P) -> Self {
        Self::with_ln_kappa(kernel, |s| prior.ln_kappa(s))
    }

    /// An empty forest whose `θ` caches take `ln κ(s, u)` from `ln_kappa` (for a sampler that
    /// keeps a reference prior of a type it does not name). Cost: `n + 1` calls.
    pub(crate) fn with_ln_kappa(kernel: &K, ln_kappa: impl Fn(usize) -> f64) -> Self {
        let n = kernel.n_points();
        let mut forest = Forest {
            nodes: SlotMap::with_key(),
            roots: BTreeMap::new(),
            live_leaf: vec![None; n],
            ln_kappa: Vec::with_capacity(n + 1),
            epoch: 0,
            scratch_keys: Vec::new(),
            scratch_w: Vec::new(),
            scratch_pairs: Vec::new(),
            scratch_path: Vec::new(),
            recording: false,
            undo: Vec::new(),
            images: Vec::new(),
            spare: Vec::new(),
            leaf_cache: None,
            stamps: 0,
            sub_cache: FxHashMap::default(),
            sub_spare: Vec::new(),
            pair_cache: FxHashMap::default(),
        };
        forest.ln_kappa.extend((0..=n).map(ln_kappa));
        forest
    }

    /// Keeps each point's leaf statistic and log marginal once computed, so that later leaves
    /// of the same point are copies (for a forest that keeps building trees over the same
    /// points, such as a cache of canonical trees). The copies are the values a fresh
    /// computation gives, bit for bit. Memory: one statistic per point that had a leaf.
    pub(crate) fn cache_leaves(&mut self) {
        if self.leaf_cache.is_none() {
            self.leaf_cache = Some(vec![None; self.n_points()]);
        }
    }

    /// Forgets the cached leaf of point `i` ([`Forest::cache_leaves`]), whose data changed: its
    /// next leaf is computed afresh. Cost: O(1).
    pub(crate) fn forget_leaf(&mut self, i: usize) {
        if let Some(slot) = self.leaf_cache.as_mut().and_then(|c| c.get_mut(i)) {
            *slot = None;
        }
    }

    /// Every point as its own registered one-leaf tree. Cost: `n` leaves, O(n) marginals.
    pub fn singletons<P: NrmPrior>(kernel: &K, prior: &P) -> Self {
        let mut forest = Self::new(kernel, prior);
        for i in 0..kernel.n_points() {
            let leaf = forest.push_leaf(kernel, i);
            forest
                .register(leaf)
                .expect("a new one-leaf tree per point");
        }
        forest
    }

    fn fill_kappa_table<P: NrmPrior>(&mut self, prior: &P) {
        let n = self.live_leaf.len();
        self.ln_kappa.clear();
        self.ln_kappa.extend((0..=n).map(|s| prior.ln_kappa(s)));
    }

    /// The table value `ln κ(size, u)`; sizes never exceed the number of points because
    /// [`Forest::pair_stats`] rejects unions larger than the data set.
    fn kappa(&self, size: usize) -> f64 {
        self.ln_kappa[size]
    }

    /// A fresh stamp for a node whose contents change.
    pub(super) fn next_stamp(&mut self) -> u64 {
        self.stamps += 1;
        self.stamps
    }

    /// Number of points of the data set the forest was made for.
    pub fn n_points(&self) -> usize {
        self.live_leaf.len()
    }

    /// The `θ` version: 0 at construction, advanced by every [`Forest::recompute`]. Samplers
    /// keying their own `θ`-dependent caches to the forest compare it (MATH P16).
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Number of nodes in the arena (registered and loose trees, and nodes deleted under an
    /// open undo record, which stay until it is closed).
    pub fn n_nodes(&self) -> usize {
        self.nodes.len()
    }

    /// The node behind `key`, if it exists.
    pub fn node(&self, key: NodeKey) -> Option<&Node<K::Stat>> {
        self.nodes.get(key)
    }

    /// The node behind `key`, or an error naming the operation that received it.
    fn get(&self, key: NodeKey, what: &str) -> Result<&Node<K::Stat>> {
        self.nodes.get(key).ok_or_else(|| {
            Error::param(
                what,
                format!("{key:?}"),
                "the key of a node that exists in this forest",
            )
        })
    }

    /// Checks that `key` exists and has no parent.
    fn check_parentless(&self, key: NodeKey, what: &str) -> Result<()> {
        if self.get(key, what)?.parent.is_some() {
            return Err(Error::param(
                what,
                format!("{key:?}"),
                "the root of a tree (this node has a parent)",
            ));
        }
        Ok(())
    }

    /// Checks that `key` is the root of a loose (parentless, unregistered) tree.
    fn check_loose(&self, key: NodeKey, what: &str) -> Result<()> {
        self.check_parentless(key, what)?;
        if self.is_registered(key) {
            return Err(Error::param(
                what,
                format!("{key:?}"),
                "a loose tree (this one is a registered root: unregister it first)",
            ));
        }
        Ok(())
    }

    // -----------------------------------------------------------------------------------------
    // The registry of roots.

    /// Number of registered trees (clusters).
    pub fn n_roots(&self) -> usize {
        self.roots.len()
    }

    /// The registered roots in canonical order (by smallest point index). Cost: O(K).
    pub fn roots(&self) -> impl ExactSizeIterator<Item = NodeKey> + '_ {
        self.roots.values().copied()
    }

    /// Whether `key` is a registered root. Cost: O(1).
    pub fn is_registered(&self, key: NodeKey) -> bool {
        self.nodes.get(key).is_some_and(|n| n.registered)
    }

    /// Registers the loose tree `root` as a cluster of the forest. Errors if `root` has a
    /// parent, is already registered, or shares its smallest point with a registered tree
    /// (the trees of a forest are disjoint). Cost: O(log K).
    pub fn register_root(&mut self, root: NodeKey) -> Result<()> {
        self.check_loose(root, "register_root")?;
        self.register(root)
    }

    /// Removes `root` from the registry; the tree stays in the arena as a loose tree. Errors
    /// if `root` is not a registered root. Cost: O(log K).
    pub fn unregister_root(&mut self, root: NodeKey) -> Result<()> {
        if !self.unregister(root) {
            return Err(Error::param(
                "unregister_root",
                format!("{root:?}"),
                "a registered root",
            ));
        }
        Ok(())
    }

    /// Unregisters `key` if it is a registered root; returns whether it was.
    fn unregister(&mut self, key: NodeKey) -> bool {
        if self.is_registered(key) {
            let node = &mut self.nodes[key];
            node.registered = false;
            let min = node.min_point;
            self.roots.remove(&min);
            if self.recording {
                self.undo.push(undo::Undo::Unregistered(min, key));
            }
            true
        } else {
            false
        }
    }

    /// Registers a parentless node after an operation moved a registered tree's root or
    /// changed its smallest point. Errors if another registered tree holds the same smallest
    /// point, which only happens when overlapping trees (a tree and its copy) were combined.
    fn register(&mut self, key: NodeKey) -> Result<()> {
        let min = self.nodes[key].min_point;
        match self.roots.entry(min) {
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(key);
                self.nodes[key].registered = true;
                if self.recording {
                    self.undo.push(undo::Undo::Registered(min, key));
                }
                Ok(())
            }
            std::collections::btree_map::Entry::Occupied(_) => Err(Error::Usage(format!(
                "two registered trees both hold point {min}: trees combined by an operation \
                 must be disjoint (never combine a tree with its copy)"
            ))),
        }
    }

    /// The root of the tree containing `key`. Cost: O(depth).
    pub fn root_of(&self, key: NodeKey) -> Result<NodeKey> {
        let mut cur = key;
        while let Some(p) = self.get(cur, "root_of")?.parent {
            cur = p;
        }
        Ok(cur)
    }

    /// The lowest common ancestor of `a` and `b`, or `None` if they are in different trees.
    /// Cost: O(depth) with no allocation.
    pub fn lca(&self, a: NodeKey, b: NodeKey) -> Result<Option<NodeKey>> {
        let depth = |mut k: NodeKey| -> Result<usize> {
            let mut d = 0;
            while let Some(p) = self.get(k, "lca")?.parent {
                k = p;
                d += 1;
            }
            Ok(d)
        };
        let (mut x, mut y) = (a, b);
        let (mut dx, mut dy) = (depth(x)?, depth(y)?);
        while dx > dy {
            x = self.nodes[x].parent.expect("depth counts parents");
            dx -= 1;
        }
        while dy > dx {
            y = self.nodes[y].parent.expect("depth counts parents");
            dy -= 1;
        }
        while x != y {
            match (self.nodes[x].parent, self.nodes[y].parent) {
                (Some(px), Some(py)) => {
                    x = px;
                    y = py;
                }
                _ => return Ok(None),
            }
        }
        Ok(Some(x))
    }

    /// The sibling of a node that has a parent.
    fn sibling(&self, key: NodeKey) -> Option<NodeKey> {
        let p = self.nodes[key].parent?;
        let [l, r] = self.nodes[p].children.expect("a parent is internal");
        Some(if l == key { r } else { l })
    }

    // -----------------------------------------------------------------------------------------
    // Leaves and traversal.

    /// The live leaf of point `i`, if any.
    pub fn leaf_of(&self, i: usize) -> Option<NodeKey> {
        self.live_leaf.get(i).copied().flatten()
    }

    /// Makes a loose leaf for point `i` (MATH §3.4 `MakeLeaf`): `ln κ(1, u)`, `ℓm({i})`,
    /// `ln d = -∞`, `ln φ = ℓh`. The leaf is live if point `i` has no live leaf yet, a shadow
    /// otherwise. Errors if `i` is not a point of the data set. Cost: one marginal.
    pub fn make_leaf(&mut self, kernel: &K, i: usize) -> Result<NodeKey> {
        if i >= self.n_points() {
            return Err(Error::param(
                "point index",
                i,
                &format!("an index below the number of points {}", self.n_points()),
            ));
        }
        Ok(self.push_leaf(kernel, i))
    }

    fn push_leaf(&mut self, kernel: &K, i: usize) -> NodeKey {
        let (stat, ln_marginal) = match self.leaf_cache.as_mut() {
            Some(cache) => {
                let (cached, ln_marginal) = cache[i].get_or_insert_with(|| {
                    let stat = kernel.stat_of(&[i]);
                    let ln_marginal = kernel.ln_marginal(&stat);
                    (stat, ln_marginal)
                });
                let stat = match self.spare.pop() {
                    Some(mut s) => {
                        s.clone_from(cached);
                        s
                    }
                    None => cached.clone(),
                };
                (stat, *ln_marginal)
            }
            None => {
                let stat = kernel.stat_of(&[i]);
                let ln_marginal = kernel.ln_marginal(&stat);
                (stat, ln_marginal)
            }
        };
        let ln_kappa = self.kappa(1);
        let key = self.insert_node(Node {
            stat,
            size: 1,
            min_point: i,
            ln_kappa,
            ln_marginal,
            ln_h: ln_kappa + ln_marginal,
            ln_d: f64::NEG_INFINITY,
            ln_phi: ln_kappa + ln_marginal,
            point: Some(i),
            parent: None,
            children: None,
            dead: false,
            fresh: false,
            registered: false,
            stamp: 0,
            imaged: false,
        });
        if self.live_leaf[i].is_none() {
            self.set_live_leaf(i, Some(key));
        }
        key
    }

    /// The node after `key` in the preorder of the subtree of `top` (parent, left subtree,
    /// right subtree), without a stack: amortised O(1) through the parent links.
    fn preorder_next(&self, key: NodeKey, top: NodeKey) -> Option<NodeKey> {
        if let Some([l, _]) = self.nodes[key].children {
            return Some(l);
        }
        let mut cur = key;
        while cur != top {
            let p = self.nodes[cur]
                .parent
                .expect("a node below the top has a parent");
            let [l, r] = self.nodes[p].children.expect("a parent is internal");
            if cur == l {
                return Some(r);
            }
            cur = p;
        }
        None
    }

    /// Appends the subtree of `top` in preorder to `out`. Reversed, the list is a bottom-up
    /// order (every node after all of its descendants). Cost: O(size of the subtree).
    fn collect_preorder(&self, top: NodeKey, out: &mut Vec<NodeKey>) {
        let mut cur = Some(top);
        while let Some(k) = cur {
            out.push(k);
            cur = self.preorder_next(k, top);
        }
    }

    /// The nodes of the subtree of `top` in preorder (parent, left, right). Cost: O(size).
    pub fn subtree(&self, top: NodeKey) -> Result<Vec<NodeKey>> {
        self.get(top, "subtree")?;
        let mut out = Vec::new();
        self.collect_preorder(top, &mut out);
        Ok(out)
    }

    /// Writes the points under `top` into `out` (cleared first), left to right. Cost:
    /// O(size), no allocation beyond `out`.
    pub fn points(&self, top: NodeKey, out: &mut Vec<usize>) -> Result<()> {
        self.get(top, "points")?;
        out.clear();
        let mut cur = Some(top);
        while let Some(k) = cur {
            if let Some(p) = self.nodes[k].point {
                out.push(p);
            }
            cur = self.preorder_next(k, top);
        }
        Ok(())
    }

    /// The `k`-th point under `top` from the left (from 0): `points(top)[k]`, found by a
    /// descent on the subtrees' sizes without listing them. Errors if `top` does not exist or
    /// `k` is not below its size. Cost: O(depth).
    pub fn nth_point(&self, top: NodeKey, k: usize) -> Result<usize> {
        let mut node = self.get(top, "nth_point")?;
        if k >= node.size {
            return Err(Error::param(
                "nth_point",
                k,
                &format!("an index below the subtree's size {}", node.size),
            ));
        }
        let mut k = k;
        while let Some([l, r]) = node.children {
            let left = &self.nodes[l];
            node = if k < left.size {
                left
            } else {
                k -= left.size;
                &self.nodes[r]
            };
        }
        Ok(node.point.expect("a leaf holds a point"))
    }

    /// Writes the leaves under `top` into `out` (cleared first) in breadth-first order, the
    /// order in which the reference's local move queues them (MATH §4.4). The breadth-first
    /// walk runs inside `out` itself, which is then filtered to the leaves. Cost: O(size),
    /// no allocation beyond `out`.
    pub fn leaves_bfs(&self, top: NodeKey, out: &mut Vec<NodeKey>) -> Result<()> {
        self.get(top, "leaves_bfs")?;
        out.clear();
        out.push(top);
        let mut next = 0;
        while next < out.len() {
            if let Some(children) = self.nodes[out[next]].children {
                out.extend(children);
            }
            next += 1;
        }
        out.retain(|&k| self.nodes[k].is_leaf());
        Ok(())
    }

    /// Cluster labels of all points: the registered trees numbered `0, 1, ..` in canonical
    /// order, which is the order of their smallest points, so the labels are a restricted
    /// growth string. Errors if some point is in no registered tree. Cost: O(n).
    pub fn labels(&self) -> Result<Vec<usize>> {
        let mut labels = vec![usize::MAX; self.n_points()];
        for (c, root) in self.roots().enumerate() {
            let mut cur = Some(root);
            while let Some(k) = cur {
                if let Some(p) = self.nodes[k].point {
                    labels[p] = c;
                }
                cur = self.preorder_next(k, root);
            }
        }
        if let Some(i) = labels.iter().position(|&l| l == usize::MAX) {
            return Err(Error::Usage(format!(
                "point {i} is in no registered tree of the forest, so the forest is not a \
                 partition of the data"
            )));
        }
        Ok(labels)
    }

    /// `Σ_roots ln φ(T)`: with the prior's constant added, the log lower bound on
    /// `p(X, u)` of MATH §3.2. Cost: O(K).
    pub fn ln_phi_sum(&self) -> f64 {
        self.roots().map(|r| self.nodes[r].ln_phi).sum()
    }

    // -----------------------------------------------------------------------------------------
    // Pair statistics and joins.

    /// The statistics of the would-be union of the disjoint trees (or subtrees) `a` and `b`
    /// (MATH §3.1): `ln κ(|A|+|B|)` from the table, `ℓm(A ∪ B)` without building the union,
    /// and `ln d(A, B) = ln φ(A) + ln φ(B) - ℓh(A ∪ B)`.
    ///
    /// `ℓm(A ∪ B)` is [`ConjugateKernel::ln_marginal_pair`] for two internal nodes, and
    /// `ℓm(A) + ln p(x_i | A)` ([`ConjugateKernel::ln_predictive`]) when `B` is the leaf of
    /// point `i` (or the other way round), which reuses `A`'s cached factorisation.
    ///
    /// Errors if a key is unknown, `a == b`, the union would have more points than the data
    /// set (the trees overlap), or the marginal is NaN. Cost: one pair marginal (O(d³) for
    /// Normal-Wishart, O(nnz) for Multinomial-Dirichlet) or, with a leaf, one predictive
    /// (O(d²), resp. O(m log M) for a document of m words); no allocation.
    #[inline(always)]
    pub fn pair_stats(&self, kernel: &K, a: NodeKey, b: NodeKey) -> Result<PairStats> {
        let na = self.get(a, "pair_stats")?;
        let nb = self.get(b, "pair_stats")?;
        self.pair_checked(kernel, (a, na), (b, nb))
    }

    /// [`Forest::pair_stats`] of two nodes the caller has already looked up.
    #[inline(always)]
    fn pair_checked(
        &self,
        kernel: &K,
        (a, na): (NodeKey, &Node<K::Stat>),
        (b, nb): (NodeKey, &Node<K::Stat>),
    ) -> Result<PairStats> {
        if a == b || na.size + nb.size > self.n_points() {
            return Err(not_disjoint(a, b));
        }
        self.pair_finite(kernel, na, nb)
    }

    /// [`Forest::pair_of`] with the check of the union marginal for NaN, for callers that
    /// know the two trees to be disjoint.
    #[inline(always)]
    fn pair_finite(&self, kernel: &K, na: &Node<K::Stat>, nb: &Node<K::Stat>) -> Result<PairStats> {
        let st = self.pair_of(kernel, na, nb);
        if st.ln_marginal.is_nan() {
            return Err(nan_union(na, nb));
        }
        Ok(st)
    }

    /// The pair statistics of [`Forest::pair_stats`] from the two nodes themselves, without
    /// its checks: the caller knows the nodes to be disjoint trees (their sizes add up to at
    /// most the data set) and checks the marginal for NaN ([`Forest::pair_finite`]). The tree engine's
    /// innermost loops use it so that nothing but the statistics travels between calls.
    #[inline(always)]
    fn pair_of(&self, kernel: &K, na: &Node<K::Stat>, nb: &Node<K::Stat>) -> PairStats {
        let size = na.size + nb.size;
        let ln_kappa = self.kappa(size);
        // A leaf joins through the predictive, `ℓm(T ∪ {i}) = ℓm(T) + ln p(x_i | T)`, which
        // reuses T's cached factorisation (O(d²) for Normal-Wishart instead of O(d³)) and
        // leaves its solve for the add that follows when the leaf goes into T.
        let probed = |host: &Node<K::Stat>, i: usize| {
            let (lp, probe) = kernel.ln_predictive_probed(i, &host.stat);
            let held = Held {
                probe,
                stamp: host.stamp,
                point: i,
            };
            (host.ln_marginal + lp, held)
        };
        let (ln_marginal, held) = match (na.point, nb.point) {
            (_, Some(i)) => probed(na, i),
            (Some(i), None) => probed(nb, i),
            (None, None) => (kernel.ln_marginal_pair(&na.stat, &nb.stat), Held::default()),
        };
        let ln_h = ln_kappa + ln_marginal;
        PairStats {
            size,
            min_point: na.min_point.min(nb.min_point),
            ln_kappa,
            ln_marginal,
            ln_h,
            ln_d: na.ln_phi + nb.ln_phi - ln_h,
            held,
        }
    }

    /// A floor of `ln d(C, {i})` for a tree `nc` and a leaf `ni`, without a predictive:
    /// [`Forest::pair_of`]'s arithmetic, operation for operation, with the predictive
    /// replaced by the kernel's bound [`ConjugateKernel::ln_predictive_max`]. Every step is
    /// monotone in the predictive, in floating point too, so the floor is at most the value
    /// `pair_of` computes; `-∞` (or NaN) when the kernel has no bound. Cost: O(1).
    #[inline(always)]
    fn ln_d_floor(&self, kernel: &K, nc: &Node<K::Stat>, ni: &Node<K::Stat>) -> f64 {
        let ln_marginal = nc.ln_marginal + kernel.ln_predictive_max(&nc.stat);
        let ln_h = self.kappa(nc.size + ni.size) + ln_marginal;
        nc.ln_phi + ni.ln_phi - ln_h
    }

    /// `ln d(A, B)` of two disjoint trees ([`Forest::pair_stats`]). Cost: one pair marginal.
    pub fn ln_d_pair(&self, kernel: &K, a: NodeKey, b: NodeKey) -> Result<f64> {
        Ok(self.pair_stats(kernel, a, b)?.ln_d)
    }

    /// [`Forest::ln_d_pair`], remembered for the ordered pair `(a, b)` while neither node
    /// changes (their stamps; every change below a node changes the node, and a recompute
    /// changes every node): the global move of tree-guided MCMC weighs its pick against every
    /// other tree, and after a rejected proposal the trees are as before. The value is the
    /// one a fresh evaluation gives, bit for bit (the pair statistic depends on the order of
    /// its arguments in the last bits, hence ordered pairs).
    ///
    /// Errors as [`Forest::pair_stats`]. Cost: one hash lookup when remembered, one pair
    /// marginal otherwise; the cache holds at most about four entries per pair of registered
    /// trees.
    pub fn ln_d_pair_cached(&mut self, kernel: &K, a: NodeKey, b: NodeKey) -> Result<f64> {
        let stamps = (
            self.get(a, "ln_d_pair_cached")?.stamp,
            self.get(b, "ln_d_pair_cached")?.stamp,
        );
        if let Some(&(sa, sb, ln_d)) = self.pair_cache.get(&(a, b)) {
            if (sa, sb) == stamps {
                return Ok(ln_d);
            }
        }
        let ln_d = self.pair_stats(kernel, a, b)?.ln_d;
        let nodes = &self.nodes;
        make_room(
            &mut self.pair_cache,
            64 + 4 * self.roots.len() * self.roots.len(),
            |&(ka, kb), &(sa, sb, _)| unchanged(nodes, ka, sa) && unchanged(nodes, kb, sb),
            drop,
        );
        self.pair_cache.insert((a, b), (stamps.0, stamps.1, ln_d));
        Ok(ln_d)
    }

    /// Adds the points of `item` to `stat`, the statistic of the node stamped `owner` or a
    /// copy of it, given their pair statistics `st`: one `add` for a leaf, which is O(d²) for
    /// Normal-Wishart and reuses the pair statistic's probe when it was made for this point
    /// and that node, a `merge` otherwise.
    #[inline(always)]
    fn absorb_stat(
        kernel: &K,
        stat: &mut K::Stat,
        owner: u64,
        item: &Node<K::Stat>,
        st: &PairStats,
    ) {
        match item.point {
            Some(i) => kernel.add_probed(stat, i, &st.held.probe_for(owner, i)),
            None => kernel.merge(stat, &item.stat),
        }
    }

    /// Makes a new parentless node with children `[a, b]` and the given pair statistics
    /// (which must be those of `a` and `b`).
    fn join_with(&mut self, kernel: &K, a: NodeKey, b: NodeKey, st: PairStats) -> NodeKey {
        let mut stat = self.clone_stat(a);
        Self::absorb_stat(kernel, &mut stat, self.nodes[a].stamp, &self.nodes[b], &st);
        let key = self.insert_node(Node {
            stat,
            size: st.size,
            min_point: st.min_point,
            ln_kappa: st.ln_kappa,
            ln_marginal: st.ln_marginal,
            ln_h: st.ln_h,
            ln_d: st.ln_d,
            ln_phi: st.ln_phi(),
            point: None,
            parent: None,
            children: Some([a, b]),
            dead: false,
            fresh: false,
            registered: false,
            stamp: 0,
            imaged: false,
        });
        self.set_parent(a, Some(key));
        self.set_parent(b, Some(key));
        key
    }

    /// Puts the loose trees `a` and `b` under a new loose root with children `[a, b]`, with no
    /// descent (the noisy-IBHC step of MATH §3.4, the cascade step of the merge move of
    /// MATH §4.3, a greedy-BHC merge). Errors as [`Forest::pair_stats`], or if `a` or `b` is
    /// not a loose tree. Cost: one pair marginal and one statistic merge.
    pub fn join(&mut self, kernel: &K, a: NodeKey, b: NodeKey) -> Result<NodeKey> {
        self.check_loose(a, "join")?;
        self.check_loose(b, "join")?;
        let st = self.pair_stats(kernel, a, b)?;
        Ok(self.join_with(kernel, a, b, st))
    }

    /// Splits the loose or registered tree at its root: deletes the root and returns its
    /// children `[l, r]` as loose trees (the `S₀ = {l(a), r(a)}` of the split move, MATH §4.3).
    /// The tree's registration, if any, is dropped. Errors if `root` has a parent or is a
    /// leaf. Cost: O(log K).
    pub fn split_root(&mut self, root: NodeKey) -> Result<[NodeKey; 2]> {
        self.check_parentless(root, "split_root")?;
        let Some([l, r]) = self.nodes[root].children else {
            return Err(Error::param(
                "split_root",
                format!("{root:?}"),
                "an internal node (this is a leaf)",
            ));
        };
        self.unregister(root);
        self.remove_node(root);
        self.set_parent(l, None);
        self.set_parent(r, None);
        Ok([l, r])
    }

    // -----------------------------------------------------------------------------------------
    // Copies and deletion.

    /// A deep copy of the subtree of `top` as a new loose tree whose leaves are shadows (to
    /// restore a tree after a rejected proposal: delete the proposal's trees, then
    /// [`Forest::adopt_leaves`] and [`Forest::register_root`] the copy). Cost: O(size)
    /// statistic clones.
    pub fn copy_tree(&mut self, top: NodeKey) -> Result<NodeKey> {
        self.get(top, "copy_tree")?;
        let mut order = std::mem::take(&mut self.scratch_keys);
        order.clear();
        self.collect_preorder(top, &mut order);
        let mut map = slotmap::SecondaryMap::with_capacity(order.len());
        for &k in &order {
            let stat = self.clone_stat(k);
            let n = &self.nodes[k];
            let node = Node {
                stat,
                parent: if k == top {
                    None
                } else {
                    n.parent.map(|p| map[p])
                },
                registered: false,
                ..*n
            };
            let new = self.insert_node(node);
            map.insert(k, new);
        }
        for &k in &order {
            if let Some([l, r]) = self.nodes[k].children {
                // A node made under the open record: its children need no journal entry.
                self.nodes[map[k]].children = Some([map[l], map[r]]);
            }
        }
        self.scratch_keys = order;
        Ok(map[top])
    }

    /// Deletes the whole tree under the parentless node `root` (unregistering it if it was
    /// registered); points whose live leaf it held are left without one. Cost: O(size).
    pub fn delete_tree(&mut self, root: NodeKey) -> Result<()> {
        self.check_parentless(root, "delete_tree")?;
        self.unregister(root);
        let mut order = std::mem::take(&mut self.scratch_keys);
        order.clear();
        self.collect_preorder(root, &mut order);
        for &k in &order {
            if let Some(p) = self.nodes[k].point {
                if self.live_leaf[p] == Some(k) {
                    self.set_live_leaf(p, None);
                }
            }
            self.remove_node(k);
        }
        self.scratch_keys = order;
        Ok(())
    }

    /// Takes the subtrees under `keep` out of the tree under the parentless node `root` as
    /// loose trees, unchanged (keys, statistics, cached values and stamps), and deletes the
    /// rest of the tree (unregistering it if it was registered); points whose live leaf the
    /// deleted nodes held are left without one. For a cache that repairs a tree into another
    /// one from its unchanged parts ([`Forest::join`] then puts them together).
    ///
    /// `keep` must be nodes of `root`'s tree, none under another. `root` itself may be the
    /// only entry (the whole tree is kept). Errors, before changing anything, if `root` has a
    /// parent, a kept node does not exist, or a kept node other than `root` has no parent.
    /// Cost: O(|keep|) plus the deleted nodes.
    pub(crate) fn take_subtrees(&mut self, root: NodeKey, keep: &[NodeKey]) -> Result<()> {
        self.check_parentless(root, "take_subtrees")?;
        for &k in keep {
            let parent = self.get(k, "take_subtrees")?.parent;
            if (k == root) != (parent.is_none()) || (k == root && keep.len() > 1) {
                return Err(Error::param(
                    "take_subtrees",
                    format!("{k:?}"),
                    "the root alone, or nodes below the root none under another",
                ));
            }
        }
        if keep.contains(&root) {
            return Ok(());
        }
        for &k in keep {
            self.set_parent(k, None);
        }
        self.unregister(root);
        // Only the root and the kept nodes are parentless in the tree now: the walk stops
        // at the kept ones.
        let mut stack = std::mem::take(&mut self.scratch_keys);
        stack.clear();
        stack.push(root);
        while let Some(k) = stack.pop() {
            let node = &self.nodes[k];
            if k != root && node.parent.is_none() {
                continue;
            }
            if let Some(children) = node.children {
                stack.extend(children);
            }
            if let Some(p) = node.point {
                if self.live_leaf[p] == Some(k) {
                    self.set_live_leaf(p, None);
                }
            }
            self.remove_node(k);
        }
        self.scratch_keys = stack;
        Ok(())
    }

    /// Makes every leaf under `top` the live leaf of its point (the previous live leaves, if
    /// any, become shadows). Cost: O(size).
    pub fn adopt_leaves(&mut self, top: NodeKey) -> Result<()> {
        self.get(top, "adopt_leaves")?;
        let mut cur = Some(top);
        while let Some(k) = cur {
            if let Some(p) = self.nodes[k].point {
                self.set_live_leaf(p, Some(k));
            }
            cur = self.preorder_next(k, top);
        }
        Ok(())
    }

    // -----------------------------------------------------------------------------------------
    // θ-dependent caches.

    /// Refreshes every `θ`-dependent cache after the prior's hyperparameters changed
    /// (MATH §3.4 `Recompute`, P16): the `ln κ` table, then bottom-up in every tree of the
    /// arena (registered and loose) `ln κ`, `ℓh`, `ln d` and `ln φ`. `ℓm` and the statistics
    /// do not depend on `θ` and are left alone. Advances [`Forest::epoch`].
    ///
    /// Cost: `n + 1` evaluations of `ln κ` and O(1) per node; no marginals.
    pub fn recompute<P: NrmPrior>(&mut self, prior: &P) {
        if self.recording {
            self.undo
                .push(undo::Undo::Theta(self.ln_kappa.clone(), self.epoch));
        }
        self.fill_kappa_table(prior);
        self.epoch += 1;
        let mut order = std::mem::take(&mut self.scratch_keys);
        order.clear();
        for (k, node) in &self.nodes {
            if node.parent.is_none() && !node.dead {
                self.collect_preorder(k, &mut order);
            }
        }
        for &k in order.iter().rev() {
            self.save_image(k);
            let ln_kappa = self.kappa(self.nodes[k].size);
            let stamp = self.next_stamp();
            let node = &mut self.nodes[k];
            node.stamp = stamp;
            node.ln_kappa = ln_kappa;
            node.ln_h = ln_kappa + node.ln_marginal;
            node.ln_phi = node.ln_h;
            if node.children.is_some() {
                self.refresh_d(k);
            }
        }
        self.scratch_keys = order;
    }

    /// Recomputes `ln d` and `ln φ` of the internal node `key` from its children's `ln φ`
    /// and its own `ℓh` (the reference's `ComputeStats(nd, false)`). Cost: O(1).
    fn refresh_d(&mut self, key: NodeKey) {
        let [l, r] = self.nodes[key]
            .children
            .expect("refresh_d on an internal node");
        let sum = self.nodes[l].ln_phi + self.nodes[r].ln_phi;
        if self.journals(key) {
            let n = &self.nodes[key];
            self.undo
                .push(undo::Undo::Potentials(key, n.ln_d, n.ln_phi, n.stamp));
        }
        let stamp = self.next_stamp();
        let node = &mut self.nodes[key];
        node.stamp = stamp;
        node.ln_d = sum - node.ln_h;
        node.ln_phi = node.ln_h + softplus(node.ln_d);
    }
}
