//! TG-SAMS: tree-guided anchored sequentially-allocated merge-split (MATH §5.4 V2 on the
//! canonical trees of V3), exact for `p(Π | X, θ)`. The design notes are in the
//! [module documentation](super).

use super::cache::{SharedReference, TreeCache};
use super::groups::Groups;
use crate::error::{Error, Result};
use crate::kernel::ConjugateKernel;
use crate::math::{ln_add_exp, log_sum_exp, softplus};
use crate::partition::{Partition, Slot};
use crate::prior::NrmPrior;
use crate::sampler::{ln_v_gain, Chooser, Move, State, StepInfo};
use crate::tree::Candidates;
use std::sync::Arc;

/// An anchor pair drawn by [`TgSams::draw_anchors`] with its selection probability.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AnchorDraw {
    /// The first anchor (in the left subtree of the split node, or in the first-picked
    /// cluster of the merge route).
    pub i: usize,
    /// The second anchor.
    pub j: usize,
    /// `ln a({i, j} | Π)`: the total probability of drawing the unordered pair, summed over
    /// both routes and both orders, the same value [`TgSams::ln_anchor_probability`] gives.
    pub ln_prob: f64,
}

/// The reference prior of the canonical trees, kept by its `ln κ` alone so that a move that
/// is not generic over the prior can hold one of any type.
trait ReferenceKappa: Send + Sync + std::fmt::Debug {
    fn ln_kappa(&self, n: usize) -> f64;
}

impl<P: NrmPrior> ReferenceKappa for P {
    fn ln_kappa(&self, n: usize) -> f64 {
        NrmPrior::ln_kappa(self, n)
    }
}

/// The caches that need the kernel: canonical trees and the allocation groups.
#[derive(Clone, Debug)]
struct Engine<K: ConjugateKernel> {
    trees: TreeCache<K>,
    groups: Groups<K>,
}

/// The exact tree-guided merge-split move TG-SAMS (MATH §5.4 V2 with V3 canonical trees);
/// see the [module documentation](super) for the design, the acceptance ratio and the proof
/// of exactness.
///
/// One step is one proposal:
///
/// 1. **Anchors.** With probability `ρ_s` (the *split route*) pick a cluster `c` with
///    `n_c ≥ 2` uniformly, a node `v` of its canonical tree by SampleSub over internal nodes
///    (MATH §4.1), and `i`, `j` uniformly under `v`'s left and right child. Otherwise (the
///    *merge route*) pick a cluster `c` uniformly, a partner `c' ≠ c` with probability
///    `∝ b(c, c') = 1 / (1 + h(c) h(c') / h(c ∪ c'))`, and `i ∈ c`, `j ∈ c'` uniformly. A route
///    that is unavailable (no cluster with two points; a single cluster) gets probability 0
///    and the other 1; otherwise `ρ_s = p` and `ρ_m = 1 - p` ([`TgSams::with_split_probability`],
///    default 1/2).
/// 2. **Split** (`i`, `j` share `c`): allocate the other members of `c` to `A ∋ i` or
///    `B ∋ j` in a uniformly random order with probability `∝ κ_join(n_g) p(x_k | X_g)`.
///    `ln A = ℓh(A) + ℓh(B) - ℓh(c) + ln a'({i,j}) - ln a({i,j}) - ln q_alloc`.
/// 3. **Merge** (different clusters): propose `c_i ∪ c_j`;
///    `ln A = ℓh(c_i ∪ c_j) - ℓh(c_i) - ℓh(c_j) + ln a'({i,j}) + ln q_alloc - ln a({i,j})`,
///    with `q_alloc` the allocation replayed, forced to the actual clusters, in a fresh random
///    order.
///
/// `a` is the anchor-pair probability in the current state and `a'` in the proposed state
/// (the merge's `a'` on the canonical tree of the merged cluster). The decision is a delayed
/// acceptance: a first stage with an upper bound on `a'` that needs no tree and no pair
/// marginals, then the exact remainder, whose product is exactly `min(1, A)`. For a
/// proposal rejected by the first stage, [`StepInfo::ln_accept_sum`] records the bound.
///
/// Trees are built with `ln κ` of the reference prior, fixed for the life of the move: the one
/// given to [`TgSams::with_reference_prior`] or, without it, the prior of the first call
/// (step, draw or evaluation). Everything else uses the state's current prior. A chain that
/// resamples hyperparameters and is resumed from a checkpoint must give the chain's initial
/// prior explicitly, or the resumed move would take the checkpoint's prior as its reference
/// and build other trees than the chain that never stopped. A move instance belongs to one
/// data set.
///
/// Cost per proposal: `O(|c_i ∪ c_j|)` predictive evaluations; `O(K)` pair marginals for the
/// merge route's weights or, past the first stage, the split's reverse; a canonical tree
/// repair (`O(|Δ| depth)` pair evaluations for `Δ` the points that came or went) or build
/// (`|c| - 1`) when a split route meets a changed cluster, a build when a merge passes the
/// first stage.
#[derive(Clone, Debug)]
pub struct TgSams<K: ConjugateKernel> {
    split_prob: f64,
    reference: Option<Arc<dyn ReferenceKappa>>,
    shared: Option<SharedReference>,
    engine: Option<Engine<K>>,
    slots: Vec<Slot>,
    big: Vec<Slot>,
    partners: Vec<Slot>,
    ln_w: Vec<f64>,
    ln_w2: Vec<f64>,
    rest: Vec<usize>,
    forced: Vec<usize>,
    order: Vec<usize>,
    assigned: Vec<usize>,
    moved: Vec<usize>,
}

impl<K: ConjugateKernel> Default for TgSams<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: ConjugateKernel> TgSams<K> {
    /// TG-SAMS with both routes equally likely.
    pub fn new() -> Self {
        TgSams {
            split_prob: 0.5,
            reference: None,
            shared: None,
            engine: None,
            slots: Vec::new(),
            big: Vec::new(),
            partners: Vec::new(),
            ln_w: Vec::new(),
            ln_w2: Vec::new(),
            rest: Vec::new(),
            forced: Vec::new(),
            order: Vec::new(),
            assigned: Vec::new(),
            moved: Vec::new(),
        }
    }

    /// TG-SAMS taking the split route with probability `p ∈ (0, 1)` when both routes are
    /// available.
    pub fn with_split_probability(p: f64) -> Result<Self> {
        if !(p > 0.0 && p < 1.0) {
            return Err(Error::param(
                "split route probability",
                p,
                "a number strictly between 0 and 1",
            ));
        }
        Ok(TgSams {
            split_prob: p,
            ..Self::new()
        })
    }

    /// Fixes the reference prior of the canonical trees to `prior` (its current
    /// hyperparameters), whatever prior the move later sees; cached trees built with another
    /// one are dropped. Give a chain's initial prior, so that a chain resumed from a checkpoint
    /// builds the trees the chain that never stopped builds. Cost: a clone of the prior.
    pub fn with_reference_prior<P: NrmPrior + 'static>(mut self, prior: &P) -> Self {
        self.reference = Some(Arc::new(prior.clone()));
        self.engine = None;
        self
    }

    /// Takes the reference tree of the canonical trees from `shared`, where the other chains of
    /// a launch over the same kernel and reference prior build it once (see
    /// [`SharedReference`]); the chain is the same, bit for bit. Dropped when the kernel
    /// changes ([`Move::kernel_changed`]). Cost: O(1).
    pub fn with_shared_reference(mut self, shared: SharedReference) -> Self {
        self.shared = Some(shared);
        self
    }

    /// Makes the caches on the first call, with `ln κ` of the reference prior (given, or else
    /// `prior`, fixed from then on), or anew if the data set changed size.
    fn prepare<P: NrmPrior>(&mut self, kernel: &K, prior: &P) -> &mut Engine<K> {
        let stale = self
            .engine
            .as_ref()
            .is_none_or(|e| e.trees.n_points() != kernel.n_points());
        if stale {
            let mut trees = match &self.reference {
                Some(r) => TreeCache::new(kernel, |s| r.ln_kappa(s)),
                None => TreeCache::new(kernel, |s| prior.ln_kappa(s)),
            };
            if let Some(shared) = &self.shared {
                trees.share(shared.clone());
            }
            self.engine = Some(Engine {
                trees,
                groups: Groups::new(kernel),
            });
        }
        self.engine.as_mut().expect("made above")
    }

    /// Lists the live slots (slot order) and those with at least two points.
    fn census(&mut self, part: &Partition<K>) {
        self.slots.clear();
        self.big.clear();
        for s in part.slots() {
            self.slots.push(s);
            if part.cluster(s).is_some_and(|c| c.size() >= 2) {
                self.big.push(s);
            }
        }
    }

    /// Draws an anchor pair from the current partition through `chooser` (step 1 of
    /// [`TgSams`]); `None` when the partition has fewer than two points. Errors if a weight is
    /// NaN. Cost: as the anchor step of a proposal.
    pub fn draw_anchors<P: NrmPrior>(
        &mut self,
        kernel: &K,
        partition: &Partition<K>,
        prior: &P,
        chooser: &mut dyn Chooser,
    ) -> Result<Option<AnchorDraw>> {
        self.prepare(kernel, prior);
        self.census(partition);
        self.draw(kernel, partition, prior, chooser)
    }

    /// `ln a({i, j} | Π)`, the probability that [`TgSams::draw_anchors`] draws the unordered
    /// pair `{i, j}` from `partition` (the reverse evaluation used in the acceptance ratio).
    /// Errors if `i == j` or an index is out of range. Cost: a canonical tree (cached or
    /// built) for a shared cluster, else `2(K - 1)` pair marginals.
    pub fn ln_anchor_probability<P: NrmPrior>(
        &mut self,
        kernel: &K,
        partition: &Partition<K>,
        prior: &P,
        i: usize,
        j: usize,
    ) -> Result<f64> {
        let n = partition.n();
        if i == j || i >= n || j >= n {
            return Err(Error::param(
                "anchor pair",
                format!("({i}, {j})"),
                &format!("two distinct points below {n}"),
            ));
        }
        self.prepare(kernel, prior);
        self.census(partition);
        let (ls, lm) = routes(self.split_prob, self.slots.len(), self.big.len());
        let (si, sj) = (partition.slot_of(i), partition.slot_of(j));
        if si == sj {
            let members = partition.cluster(si).expect("live").members();
            let n2 = self.big.len();
            let trees = &mut self.engine.as_mut().expect("prepared").trees;
            let t = trees.tree_for_members(kernel, members)?;
            Ok(ls - (n2 as f64).ln() + ln_split_pair(trees, t, i, j)?)
        } else {
            let k = self.slots.len();
            let w1 = self.ln_partner_prob(kernel, partition, prior, si, sj)?;
            let w2 = self.ln_partner_prob(kernel, partition, prior, sj, si)?;
            let (ni, nj) = (cluster_size(partition, si), cluster_size(partition, sj));
            Ok(lm - (k as f64).ln() + ln_add_exp(w1, w2) - (ni as f64).ln() - (nj as f64).ln())
        }
    }

    /// The anchor draw on a census already taken.
    fn draw<P: NrmPrior>(
        &mut self,
        kernel: &K,
        part: &Partition<K>,
        prior: &P,
        chooser: &mut dyn Chooser,
    ) -> Result<Option<AnchorDraw>> {
        let (k, n2) = (self.slots.len(), self.big.len());
        let (ls, lm) = routes(self.split_prob, k, n2);
        let split = match (ls > f64::NEG_INFINITY, lm > f64::NEG_INFINITY) {
            (true, true) => chooser.choose_log(&[ls, lm])?.0 == 0,
            (true, false) => true,
            (false, true) => false,
            (false, false) => return Ok(None),
        };
        if split {
            let slot = self.big[chooser.choose_uniform(n2)];
            let members = part.cluster(slot).expect("live").members();
            let trees = &mut self.engine.as_mut().expect("prepared").trees;
            let t = trees.tree_for_members(kernel, members)?;
            let (v, ln_p_v) =
                trees
                    .forest_mut()
                    .sample_sub(t, Candidates::InternalNodes, chooser)?;
            let forest = trees.forest();
            let [l, r] = forest
                .node(v)
                .and_then(|node| node.children())
                .ok_or_else(|| Error::Numerical("SampleSub returned a leaf".into()))?;
            // Uniform picks among the children's points, left to right, by descents on the
            // subtrees' sizes: O(depth) instead of listing O(|c|) points.
            let (n_l, n_r) = [l, r]
                .map(|c| forest.node(c).map_or(0, |n| n.size()))
                .into();
            let i = forest.nth_point(l, chooser.choose_uniform(n_l))?;
            let j = forest.nth_point(r, chooser.choose_uniform(n_r))?;
            let ln_prob = ls - (n2 as f64).ln() + ln_p_v - (n_l as f64).ln() - (n_r as f64).ln();
            Ok(Some(AnchorDraw { i, j, ln_prob }))
        } else {
            let c = self.slots[chooser.choose_uniform(k)];
            fill_partner_weights(
                kernel,
                part,
                prior,
                &self.slots,
                c,
                &mut self.partners,
                &mut self.ln_w,
            )?;
            let (pick, ln_fwd) = chooser.choose_log(&self.ln_w)?;
            let c2 = self.partners[pick];
            let ln_back = self.ln_partner_prob(kernel, part, prior, c2, c)?;
            let (m1, m2) = (
                part.cluster(c).expect("live").members(),
                part.cluster(c2).expect("live").members(),
            );
            let i = m1[chooser.choose_uniform(m1.len())] as usize;
            let j = m2[chooser.choose_uniform(m2.len())] as usize;
            let ln_prob = lm - (k as f64).ln() + ln_add_exp(ln_fwd, ln_back)
                - (m1.len() as f64).ln()
                - (m2.len() as f64).ln();
            Ok(Some(AnchorDraw { i, j, ln_prob }))
        }
    }

    /// `ln w(y | x) = ln b(x, y) - ln Σ_{z ≠ x} b(x, z)` over the census's clusters.
    fn ln_partner_prob<P: NrmPrior>(
        &mut self,
        kernel: &K,
        part: &Partition<K>,
        prior: &P,
        x: Slot,
        y: Slot,
    ) -> Result<f64> {
        fill_partner_weights(
            kernel,
            part,
            prior,
            &self.slots,
            x,
            &mut self.partners,
            &mut self.ln_w2,
        )?;
        let at = self
            .partners
            .iter()
            .position(|&s| s == y)
            .expect("y is another live cluster");
        Ok(self.ln_w2[at] - log_sum_exp(&self.ln_w2))
    }

    /// The split proposal of the cluster shared by the anchors.
    fn propose_split<P: NrmPrior>(
        &mut self,
        kernel: &K,
        state: &mut State<K, P>,
        chooser: &mut dyn Chooser,
        draw: AnchorDraw,
    ) -> Result<StepInfo> {
        let (i, j) = (draw.i, draw.j);
        let part = &state.partition;
        let prior = &state.prior;
        let slot = part.slot_of(i);
        let c = part.cluster(slot).expect("live");
        self.rest.clear();
        self.rest
            .extend(c.member_indices().filter(|&k| k != i && k != j));
        chooser.permutation(self.rest.len(), &mut self.order);
        let groups = &mut self.engine.as_mut().expect("prepared").groups;
        groups.reset(kernel, i, j);
        groups.join_table(prior, c.size());
        let mut ln_q = 0.0;
        self.assigned.clear();
        self.assigned.resize(self.rest.len(), 0);
        for &t in &self.order {
            let (g, ln_p) = groups.allocate(kernel, self.rest[t], chooser)?;
            self.assigned[t] = g;
            ln_q += ln_p;
        }
        let (n_a, n_b) = (groups.size(0), groups.size(1));
        let ln_h_c = prior.ln_kappa(c.size()) + c.ln_marginal();
        let ln_target = groups.ln_h(kernel, prior, 0) + groups.ln_h(kernel, prior, 1) - ln_h_c
            + ln_v_gain(prior, part.n(), part.n_clusters());
        let k_new = self.slots.len() + 1;
        let n2_new = self.big.len() - 1 + usize::from(n_a >= 2) + usize::from(n_b >= 2);
        let (_, ln_rho_m) = routes(self.split_prob, k_new, n2_new);
        let base = ln_target - draw.ln_prob - ln_q;
        // a' ≤ ρ'_m / K' · 2 / (|A| |B|): both partner probabilities are at most 1.
        let bound = base + ln_rho_m - (k_new as f64).ln() + std::f64::consts::LN_2
            - (n_a as f64).ln()
            - (n_b as f64).ln();
        let first = bound.min(0.0);
        if !chooser.accept(first) {
            return Ok(StepInfo::proposal(false, bound));
        }
        // a' = ρ'_m / K' · (w'(B | A) + w'(A | B)) / (|A| |B|) in Π' = Π - c + {A, B}.
        let ln_b_ab = ln_b(
            kernel,
            prior,
            [groups.stat(0), groups.stat(1)],
            [n_a, n_b],
            ln_h_c,
        )?;
        let mut ln_w_back = [0.0; 2];
        for (g, w) in ln_w_back.iter_mut().enumerate() {
            let ln_h_g = groups.ln_h(kernel, prior, g);
            self.ln_w.clear();
            self.ln_w.push(ln_b_ab);
            for &s in &self.slots {
                if s == slot {
                    continue;
                }
                let z = part.cluster(s).expect("live");
                let ln_h_union = prior.ln_kappa(groups.size(g) + z.size())
                    + checked_pair(kernel, groups.stat(g), z.stat())?;
                self.ln_w.push(ln_b_from(
                    ln_h_g,
                    prior.ln_kappa(z.size()) + z.ln_marginal(),
                    ln_h_union,
                ));
            }
            *w = ln_b_ab - log_sum_exp(&self.ln_w);
        }
        let ln_a_rev = ln_rho_m - (k_new as f64).ln() + ln_add_exp(ln_w_back[0], ln_w_back[1])
            - (n_a as f64).ln()
            - (n_b as f64).ln();
        let ln_a = base + ln_a_rev;
        let accepted = chooser.accept(ln_a - first);
        if accepted {
            self.moved.clear();
            self.moved.push(j);
            self.moved.extend(
                self.rest
                    .iter()
                    .zip(&self.assigned)
                    .filter(|(_, &g)| g == 1)
                    .map(|(&k, _)| k),
            );
            state.partition.split_off(kernel, slot, &self.moved);
        }
        Ok(StepInfo::proposal(accepted, ln_a))
    }

    /// The merge proposal of the anchors' two clusters.
    fn propose_merge<P: NrmPrior>(
        &mut self,
        kernel: &K,
        state: &mut State<K, P>,
        chooser: &mut dyn Chooser,
        draw: AnchorDraw,
    ) -> Result<StepInfo> {
        let (i, j) = (draw.i, draw.j);
        let part = &state.partition;
        let prior = &state.prior;
        let (si, sj) = (part.slot_of(i), part.slot_of(j));
        let (ci, cj) = (
            part.cluster(si).expect("live"),
            part.cluster(sj).expect("live"),
        );
        self.rest.clear();
        self.forced.clear();
        for (g, (c, anchor)) in [(ci, i), (cj, j)].into_iter().enumerate() {
            for k in c.member_indices() {
                if k != anchor {
                    self.rest.push(k);
                    self.forced.push(g);
                }
            }
        }
        chooser.permutation(self.rest.len(), &mut self.order);
        let engine = self.engine.as_mut().expect("prepared");
        let (ni, nj) = (ci.size(), cj.size());
        let ln_h_g = prior.ln_kappa(ni + nj) + checked_pair(kernel, ci.stat(), cj.stat())?;
        let (ln_h_i, ln_h_j) = (
            prior.ln_kappa(ni) + ci.ln_marginal(),
            prior.ln_kappa(nj) + cj.ln_marginal(),
        );
        let ln_target =
            ln_h_g - ln_h_i - ln_h_j - ln_v_gain(prior, part.n(), part.n_clusters() - 1);
        let k_new = self.slots.len() - 1;
        let n2_new = self.big.len() + 1 - usize::from(ni >= 2) - usize::from(nj >= 2);
        let (ln_rho_s, _) = routes(self.split_prob, k_new, n2_new);
        // a' ≤ ρ'_s / N'₂: a SampleSub probability and two uniform picks are at most 1; and
        // the forced replay's ln q ≤ 0, so the first stage's ratio is known to be at most
        // `ahead` before the replay runs (slack for rounding, as in `sams::decide_merge`):
        // the same uniform decides, and the replay runs only when it does not already reject.
        let slack = 1e-9 + 1e-6 * (ln_h_g.abs() + ln_h_i.abs() + ln_h_j.abs());
        let ahead = ln_target - draw.ln_prob + ln_rho_s - (n2_new as f64).ln() + slack;
        let (rest, order, forced) = (&self.rest, &self.order, &self.forced);
        let groups = &mut engine.groups;
        let mut base = f64::NAN;
        let (passed, first) = chooser.accept_within(ahead, &mut || {
            groups.reset(kernel, i, j);
            groups.join_table(prior, ni + nj);
            let mut ln_q = 0.0;
            for &t in order {
                ln_q += groups.place(kernel, rest[t], forced[t]);
            }
            base = ln_target + ln_q - draw.ln_prob;
            Ok((base + ln_rho_s - (n2_new as f64).ln()).min(0.0))
        })?;
        let Some(first) = first.filter(|_| passed) else {
            return Ok(StepInfo::proposal(false, first.unwrap_or(ahead)));
        };
        self.moved.clear();
        self.moved.extend(ci.member_indices());
        self.moved.extend(cj.member_indices());
        let t = engine.trees.build(kernel, &self.moved)?;
        let ln_pair = ln_split_pair(&mut engine.trees, t, i, j);
        let ln_pair = match ln_pair {
            Ok(v) => v,
            Err(e) => {
                engine.trees.discard(t)?;
                return Err(e);
            }
        };
        let ln_a = base + ln_rho_s - (n2_new as f64).ln() + ln_pair;
        let accepted = chooser.accept(ln_a - first);
        if accepted {
            state.partition.merge_clusters(kernel, si, sj);
            engine.trees.claim(t, &self.moved)?;
        } else {
            engine.trees.discard(t)?;
        }
        Ok(StepInfo::proposal(accepted, ln_a))
    }
}

impl<K: ConjugateKernel, P: NrmPrior> Move<K, P> for TgSams<K> {
    fn name(&self) -> &'static str {
        "tg-sams"
    }

    /// Drops the tree caches: their statistics, and the reference tree's shape, belong to the
    /// kernel they were built with. The next step builds them for the new kernel, as a chain
    /// resumed from a checkpoint does. Cost: the next step rebuilds the reference tree (one
    /// sequential insertion per point).
    fn kernel_changed(&mut self, _kernel: &K, _state: &State<K, P>) -> Result<()> {
        self.engine = None;
        // The launch's shared tree belongs to its kernel.
        self.shared = None;
        Ok(())
    }

    /// Keeps the reference tree, whose shape comes from the latent starting values
    /// ([`TreeCache::latent_changed`]), and drops the trees, whose statistics belong to the old
    /// values. Cost: O(n); the trees are rebuilt as proposals meet their clusters.
    fn latent_changed(&mut self, kernel: &K, _state: &State<K, P>) -> Result<()> {
        if let Some(engine) = self.engine.as_mut() {
            engine.trees.latent_changed(kernel)?;
            engine.groups = Groups::new(kernel);
        }
        Ok(())
    }

    fn step(
        &mut self,
        kernel: &K,
        state: &mut State<K, P>,
        chooser: &mut dyn Chooser,
    ) -> Result<StepInfo> {
        if state.partition.n() < 2 {
            return Ok(StepInfo::default());
        }
        self.prepare(kernel, &state.prior);
        self.census(&state.partition);
        let Some(draw) = self.draw(kernel, &state.partition, &state.prior, chooser)? else {
            return Ok(StepInfo::default());
        };
        if state.partition.slot_of(draw.i) == state.partition.slot_of(draw.j) {
            self.propose_split(kernel, state, chooser, draw)
        } else {
            self.propose_merge(kernel, state, chooser, draw)
        }
    }
}

/// `(ln ρ_s, ln ρ_m)` for split-route probability `p` in a state with `k` clusters of which
/// `n2` have two points or more: an unavailable route gets probability 0, the other 1.
fn routes(p: f64, k: usize, n2: usize) -> (f64, f64) {
    match (n2 > 0, k > 1) {
        (true, true) => (p.ln(), (-p).ln_1p()),
        (true, false) => (0.0, f64::NEG_INFINITY),
        (false, true) => (f64::NEG_INFINITY, 0.0),
        (false, false) => (f64::NEG_INFINITY, f64::NEG_INFINITY),
    }
}

/// The size of a live cluster.
fn cluster_size<K: ConjugateKernel>(part: &Partition<K>, slot: Slot) -> usize {
    part.cluster(slot).map_or(0, |c| c.size())
}

/// `ℓm(A ∪ B)`, or an error when the kernel returns NaN.
fn checked_pair<K: ConjugateKernel>(kernel: &K, a: &K::Stat, b: &K::Stat) -> Result<f64> {
    let v = kernel.ln_marginal_pair(a, b);
    if v.is_nan() {
        return Err(Error::Numerical(
            "the log marginal of the union of two clusters is NaN".into(),
        ));
    }
    Ok(v)
}

/// `ln b = -softplus(ℓh(x) + ℓh(y) - ℓh(x ∪ y))`: the probability that two clusters are one
/// rather than two, judged on the pair alone.
fn ln_b_from(ln_h_x: f64, ln_h_y: f64, ln_h_union: f64) -> f64 {
    -softplus(ln_h_x + ln_h_y - ln_h_union)
}

/// `ln b(A, B)` of two groups whose union has the known `ℓh`.
fn ln_b<K: ConjugateKernel, P: NrmPrior>(
    kernel: &K,
    prior: &P,
    stats: [&K::Stat; 2],
    sizes: [usize; 2],
    ln_h_union: f64,
) -> Result<f64> {
    let h = [0, 1].map(|g| prior.ln_kappa(sizes[g]) + kernel.ln_marginal(stats[g]));
    if h.iter().any(|v| v.is_nan()) {
        return Err(Error::Numerical("a cluster's log marginal is NaN".into()));
    }
    Ok(ln_b_from(h[0], h[1], ln_h_union))
}

/// The merge route's partner weights `ln b(x, z)` for every live cluster `z ≠ x` of `slots`,
/// written to `partners` and `ln_w` in slot order. Cost: `K - 1` pair marginals.
fn fill_partner_weights<K: ConjugateKernel, P: NrmPrior>(
    kernel: &K,
    part: &Partition<K>,
    prior: &P,
    slots: &[Slot],
    x: Slot,
    partners: &mut Vec<Slot>,
    ln_w: &mut Vec<f64>,
) -> Result<()> {
    partners.clear();
    ln_w.clear();
    let cx = part.cluster(x).expect("live");
    let ln_h_x = prior.ln_kappa(cx.size()) + cx.ln_marginal();
    for &z in slots {
        if z == x {
            continue;
        }
        let cz = part.cluster(z).expect("live");
        let ln_h_union =
            prior.ln_kappa(cx.size() + cz.size()) + checked_pair(kernel, cx.stat(), cz.stat())?;
        partners.push(z);
        ln_w.push(ln_b_from(
            ln_h_x,
            prior.ln_kappa(cz.size()) + cz.ln_marginal(),
            ln_h_union,
        ));
    }
    Ok(())
}

/// `ln [P_sub(v) / (|l(v)| |r(v)|)]` with `v = lca(i, j)` in the tree `t`: the split route's
/// probability of the pair once the cluster is chosen. Cost: O(|t|).
fn ln_split_pair<K: ConjugateKernel>(
    trees: &mut TreeCache<K>,
    t: crate::tree::NodeKey,
    i: usize,
    j: usize,
) -> Result<f64> {
    let [li, lj] = trees.leaves_in(t, i, j)?;
    let forest = trees.forest();
    let v = forest
        .lca(li, lj)?
        .ok_or_else(|| Error::Numerical(format!("points {i} and {j} have no common ancestor")))?;
    let [l, r] = forest
        .node(v)
        .and_then(|n| n.children())
        .ok_or_else(|| Error::Numerical("a common ancestor of two leaves is a leaf".into()))?;
    let size = |k| forest.node(k).map_or(0, |n| n.size()) as f64;
    Ok(forest.ln_prob_sub(t, v, Candidates::InternalNodes)? - size(l).ln() - size(r).ln())
}
