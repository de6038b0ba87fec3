//! Chang & Fisher's (2013) sub-cluster split/merge sampler, the DPMM.jl default (MATH §6.4).
//!
//! Two variants share one [`SubCluster`] move:
//!
//! * **Exact** ([`SubCluster::new`], the `subcluster` sampler). Each step is a restricted Gibbs
//!   pass followed by a fixed number of split/merge Metropolis-Hastings proposals whose
//!   proposal distribution is built by sub-cluster Gibbs iterations ("launch") on the set
//!   being split or merged, alternating at random with blocked sequential-allocation
//!   proposals. It leaves `p(Π | X)` (given `u` for NGGP) invariant; see [`SubCluster`] for
//!   the argument and the tests for the checks against enumeration.
//! * **DPMM.jl-faithful** ([`SubCluster::dpmm`], the `subcluster-dpmm` sampler): persistent
//!   sub-labels, the Chang-Fisher split and merge ratios as DPMM.jl computes them (with its
//!   `0.01` merge factor), the "splittable" heuristic as its code decides it (or as its
//!   report reads, [`Splittable`]) and pairwise first-accepted merges. Its
//!   Hastings ratios omit the normaliser of the sub-cluster auxiliary law (below), so it is
//!   not exact; its measured bias is recorded on [`SubCluster::dpmm`].
//!
//! **Why the exact variant does not keep sub-labels between steps.** In Chang & Fisher's
//! augmented space the sub-labels of cluster `k` follow the posterior of a two-component
//! mixture on `X_k`, `p̄(z̄_k | X_k) = g(z̄_k, X_k) / Z(X_k)`, whose normaliser `Z(X_k)` is a sum
//! over all `2^{N_k}` sub-labellings. A split or merge changes the clusters' point sets, so its
//! exact Hastings ratio in the augmented space contains `Z(X_A) Z(X_B) / Z(X_{A∪B})`, and so
//! does every restricted-Gibbs move of a point between clusters; neither can be evaluated.
//! Dropping the term (as the paper and DPMM.jl do) gives an approximate chain. The exact
//! variant instead draws its sub-clusters afresh for every proposal from a law that depends
//! only on the merged set `S = A ∪ B` (and auxiliary anchors drawn the same way in both
//! directions), as Jain & Neal's launch state does (MATH §6.2), so the launch law is the same
//! in both directions and cancels.

use std::collections::BTreeMap;

use rand::Rng;
use rayon::prelude::*;

use super::engine::{
    chain_rng, draw_side, for_each_point, for_each_run_from, group_moments, group_moments_of,
    group_stats, jump_shape, label_pass_from, side_log_probs, CHUNK, GATHER_AHEAD,
};
use super::{apply_labels, PassLabel};
use crate::chooser::RngChooser;
use crate::error::{Error, Result};
use crate::kernel::sweep_cache::BLOCK;
use crate::kernel::{ln_gamma_variate, ParametricKernel, PointIndex};
use crate::math::{ln_add_exp, ln_gamma, log_sum_exp};
use crate::partition::{batch_stat, Partition, Slot};
use crate::prior::{NrmPrior, PriorHyper};
use crate::rng::{uniform_index, uniform_open01, NrmmRng, SeedPlan};
use crate::sampler::{ln_v_gain, metropolis_hastings, Chooser, Move, Proposal, State, StepInfo};

/// Settings of the exact sub-cluster sampler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubClusterOptions {
    /// Sub-cluster Gibbs iterations of each launch-family proposal (after the anchor draw).
    pub launch_iters: usize,
    /// Split/merge proposals per step (a fixed number: a state-dependent count would break
    /// invariance).
    pub proposals: usize,
}

impl Default for SubClusterOptions {
    /// Four launch iterations, four proposals per step.
    fn default() -> Self {
        SubClusterOptions {
            launch_iters: 4,
            proposals: 4,
        }
    }
}

/// Settings of the DPMM.jl-faithful variant (MATH §6.4, "DPMM.jl heuristics").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DpmmOptions {
    /// The factor of the merge ratio (DPMM.jl: 0.01).
    pub merge_factor: f64,
    /// Which clusters may propose a split (DPMM.jl's "splittable" heuristic).
    pub splittable: Splittable,
}

impl Default for DpmmOptions {
    /// DPMM.jl's settings: merge factor 0.01, "splittable" as its code decides it.
    fn default() -> Self {
        DpmmOptions {
            merge_factor: 0.01,
            splittable: Splittable::Code,
        }
    }
}

/// When the DPMM.jl-faithful variant lets a cluster propose a split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Splittable {
    /// As DPMM.jl's code decides it (`maybeSplit` of its `SplitMerge.jl`). Each cluster keeps
    /// the history of `ln m(X_ℓ) + ln m(X_r)`, the log marginal likelihoods of its two
    /// sub-clusters: one value when the cluster appears (with its fresh sub-labels), one after
    /// every step's label pass, the last 4 kept. At the start of a step, before the label
    /// pass, a cluster is splittable when it has 4 values and their mean minus the latest is
    /// below 1e-2 (no absolute value: it holds unless the latest fell below the mean), so a
    /// new cluster waits 3 steps. A splittable cluster whose sub-clusters are not both
    /// occupied gets uniformly random sub-labels and a history restarted from them, and
    /// proposes that split. Only clusters that were splittable at the start of the step take
    /// part in merges (one that split keeps its slot and stays a candidate, as the code's
    /// key does).
    Code,
    /// As the DPMM.jl report's formula reads: the last 4 sums over the cluster's points of the
    /// sub-cluster log-likelihoods at the sampled sub-cluster parameters, taken after the
    /// step's label pass, their mean within 1e-2 of the latest in absolute value. Sums over
    /// 10⁵-10⁶ points move by far more than 1e-2 between steps, so large clusters never
    /// split. Clusters that are not splittable or do not split take part in merges.
    Report,
    /// No heuristic: every cluster whose sub-clusters are both occupied proposes a split
    /// (with merge factor 1, Chang & Fisher's bare ratios).
    Off,
}

/// Default number of points of the set `S` on which a launch of the exact variant fits its
/// sub-clusters ([`SubCluster::with_launch_sample`]): enough for the sub-cluster parameters
/// to be sharp (posterior spread ~1% of a cluster's scale), few enough that the launch
/// scans cost little next to the one final scan of `S`.
pub const LAUNCH_SAMPLE: usize = 8192;

/// How many points (after the two anchors) the allocation family assigns one at a time with
/// a defensive mixture, ½ predictive + ¼ each side, before its blocked predictive
/// allocation starts (see [`SubCluster`]).
pub const ALLOCATION_EARLY: usize = 32;

/// Sets of more points than this get the large-set proposals of the exact variant: launches
/// from spread anchors with restarts, and launch side probabilities sharpened by
/// [`SHARPEN`] (see [`SubCluster`]). Smaller sets keep the plain proposals, whose fuzzier
/// splits and merges mix better where a split's entropy is a few nats.
pub const LARGE_SET: usize = 1024;

/// The power `γ` to which the exact variant raises a large set's launch side weights
/// (`b_i(s) ∝ (π̄_s f(x_i | θ̄_s))^γ`; see [`SubCluster`]).
pub const SHARPEN: f64 = 10.0;

/// The most points of a set the allocation family splits or merges into (see
/// [`SubCluster`]); larger ones are left to the launch family, but for pieces of at most
/// [`PIECE_MAX`] points.
pub const ALLOCATION_MAX: usize = 16_384;

/// The most points of a piece that the allocation family splits off a set of more than
/// [`ALLOCATION_MAX`] points, or merges into one (see [`SubCluster`]).
pub const PIECE_MAX: usize = 1024;

/// Restarts of a large launch's sub-cluster fit, each from its own spread anchors, run in
/// parallel (a restart's 1,024 points are one block of the engine, so one restart alone
/// would keep one core busy).
pub const LAUNCH_RESTARTS: usize = 4;

/// Points of the uniform sample of a large launch on which its restarts run.
const RESTART_SAMPLE: usize = 1024;

/// Points per parallel chunk of the scan that collects a large set's members.
const SCAN_CHUNK: usize = 16_384;

/// Points per stage of a launch's final scan (see `final_scan`): whole chunks of the engine,
/// 1.5 MB of side probabilities.
const SCAN_STAGE: usize = 16 * CHUNK;

/// Length of the log-likelihood history of the "splittable" heuristic.
const HISTORY: usize = 4;
/// Tolerance of the "splittable" heuristic.
const SPLITTABLE_TOL: f64 = 1e-2;

/// How many times the threads a step of the exact sub-cluster sampler may make proposals at
/// once (see `SubCluster::proposals`).
const SPECULATION: usize = 4;

/// The change an accepted proposal makes: split the points off a cluster into a new one, or
/// merge the second cluster into the first.
enum Change {
    Split(Slot, Vec<u32>),
    Merge(Slot, Slot),
}

#[derive(Clone, Copy, Debug)]
enum Variant {
    Exact(SubClusterOptions),
    Dpmm(DpmmOptions),
}

/// The sub-cluster split/merge move (Chang & Fisher 2013; MATH §6.4).
///
/// **Exact variant**, one step:
///
/// 1. *Restricted Gibbs.* Given `Π`, draw the jumps of the occupied atoms,
///    `w_k ~ Gamma(κ(N_k+1,u)/κ(N_k,u)·(1+u), 1)`, i.e. `Gamma(N_k, 1)` for the DP (the
///    `Dir(N_1..N_K, α)` weights up to normalisation) and `Gamma(N_k - σ, 1)` for NGGP given
///    `u` (the jump posterior of MATH §6.4 "NRM extension"; the common rate `1 + u` cancels),
///    and `θ_k ~ p(θ | X_k)`: the exact conditional of the atoms given `Π` (and `u`). A
///    Gibbs-type prior draws its weights from the same `Gamma(κ_join(N_k), 1)`:
///    `Gamma(N_k - σ, 1)`, Pitman-Yor's `Dir(N_1 - σ, .., N_K - σ, θ + Kσ)` given the
///    partition (its stick-breaking representation) restricted to the occupied atoms, and
///    `Gamma(N_k + γ, 1)`, the MFM's finite `Dir(N_1 + γ, .., N_K + γ)` given `K = t`
///    occupied components. In each case `p(Π) p(w | Π)` is, given `n` and `K`, a function of
///    `w` times `Π_k w_k^{N_k}` (the `Γ(N_k - σ)` or `Γ(N_k + γ)` of the Dirichlet's
///    normaliser cancel the EPPF's `(1-σ)_{N_k-1}` or `γ^{(N_k)}`, and `V(n, K)` is fixed), so
///    the restricted labels below leave the prior restricted to `K` blocks invariant. Given
///    them, the labels restricted to the occupied atoms have conditional law
///    `∝ Π_i w_{z_i} f(x_i | θ_{z_i})` on labellings that leave no atom empty. All labels are
///    drawn independently in parallel from `w_k f(x_i | θ_k)`; then, block by block of
///    [`super::engine::CHUNK`] points in index order, a block's drawn labels are kept unless
///    they would leave a cluster empty given every other point's current label — one
///    independence Metropolis-Hastings step per block, whose ratio is exactly that
///    indicator, so each leaves the restricted conditional, hence `p(Π | X)`, invariant (the
///    draws do not depend on the current labels, so drawing them all first is the same as
///    drawing each block at its turn). A small cluster about to empty thus freezes one
///    block, not the whole pass.
/// 2. *Split/merge proposals*, [`SubClusterOptions::proposals`] of them, each from one of two
///    families chosen by a fair coin. In both, a fair coin picks a split (a uniformly chosen
///    cluster, `S` its points) or a merge (an ordered pair, `S` the union), and with
///    `h(c) = ln κ(n_c, u) + ln m(X_c)` the log target ratio of a split of `S` into `{A, B}`
///    is `h(A) + h(B) - h(S)`, a merge's its mirror image; a Gibbs-type prior adds
///    `ln V(n, K+1) - ln V(n, K)` to a split's and subtracts `ln V(n, K) - ln V(n, K-1)` from
///    a merge's ([`ln_v_gain`]), `h` holding its `ln (1-σ)_{n_c-1}` or `ln γ^{(n_c)}`; the
///    partner law below leaves that term out, the same for every partner. A merge's first
///    cluster `x` is uniform and its partner `y` is drawn with probability `p(y | x)`, half
///    uniform over the other clusters and half `∝ exp(h(x ∪ y) - h(x) - h(y))`, so that pieces of one
///    cluster are proposed together however many clusters there are; a split's reverse
///    evaluates the same law on the split state (`partner_ln_probs`). With uniform partners,
///    10,000 points in 119 clusters (the 10k set, 32 proposals per sweep, one chain from one
///    cluster) were cut into 311 pieces 13,102 nats below the true partition after 200 sweeps;
///    with these, 120 clusters 10 nats above it from sweep 80 on. In the formulas below,
///    `P(x, y) = p(y | x)/K` replaces the uniform `1/(K(K-1))` of an ordered pair.
///    * *Launch family* (Chang & Fisher's sub-clusters). `S` (its points sorted) gets a
///      launch: two distinct anchor points drawn uniformly from `S` seed the sub-parameters
///      `θ̄_ℓ, θ̄_r` (each drawn from the posterior given its anchor alone, so the
///      sub-clusters differ from the first scan on), then
///      [`SubClusterOptions::launch_iters`] sub-cluster Gibbs iterations — sub-labels
///      `∝ π̄_s f(x_i | θ̄_s)` in parallel, then sub-weights
///      `(π̄_ℓ, π̄_r) ~ Dir(N_ℓ + a, N_r + a)` with `a = κ(1,u)/2` (`α/2` for the DP) and
///      `θ̄_s ~ p(θ | X_s)`. These iterations run on `S` itself when `|S|` is at most the
///      launch sample ([`LAUNCH_SAMPLE`] by default, [`SubCluster::with_launch_sample`]) and
///      otherwise on that many points drawn uniformly from `S` with replacement. One final
///      scan of all of `S` gives each point independent side probabilities `b_i(s)`. A split
///      draws the sides from `b` and proposes `{A, B}` with probability
///      `q = Π_A b_i(ℓ) Π_B b_i(r) + Π_A b_i(r) Π_B b_i(ℓ)` (both orientations give the same
///      partition); a merge evaluates the same `q` of its two clusters. The split's log
///      ratio is `h(A) + h(B) - h(S) + ln(P'(A, B) + P'(B, A)) - ln(1/K) - ln q`, `P'` on the
///      split state of `K + 1` clusters. The launch law
///      depends only on `S`, so for every launch the pair of moves is in detailed balance,
///      exactly as Jain & Neal's (MATH §6.2).
///    * *Allocation family* (a blocked form of Dahl's SAMS, MATH §6.3, for which a merge's
///      reverse probability adapts to the clusters it merges). Anchors: a split draws an
///      ordered pair of distinct points of `S` uniformly; a merge of the ordered pair
///      `(x, y)` draws one point of `x` and one of `y` uniformly. The anchors seed groups 0
///      and 1; the other points of `S`, in a uniformly random order, are allocated to a
///      group with probability `b ∝ κ_join(n_g) p(x_i | X_g)` (collapsed predictive): the
///      first [`ALLOCATION_EARLY`] one at a time with the defensive mixture
///      `½ b + ¼` (a predictive from one or two points is overconfident under a tight
///      prior, which would make replaying a merge's clusters improbable), then blocks of
///      doubling length, each allocated in parallel given the groups before it. A split
///      proposes the groups with `q` the product of the allocation probabilities; a merge
///      replays the allocation forced to its two clusters. The split's log ratio is
///      `h(A) + h(B) - h(S) + ln P'(A, B) - ln(|A||B|) + ln K + ln(|S|(|S|-1)) - ln q`
///      (anchors and order are auxiliary variables drawn the same way in both directions),
///      the merge's its mirror image. Launch-family proposals find splits of well-separated
///      groups; allocation-family merges reunite pieces of one cluster that a split or the
///      restricted pass left apart, whose launch-family reverse probability is negligible
///      for large sets.
///
///    * *Large sets* (more than [`LARGE_SET`] points, [`SubCluster::with_large_sets`]). At
///      10⁵ points a launch's sides are random for every point near the boundary of its
///      two sub-clusters, so `-ln q` of a split runs to thousands of nats, and a split that
///      lowers the log joint by as much is accepted: from one cluster, 200,000 points in 6
///      overlapping clusters were cut into 15-20 fuzzy pieces within a sweep, whose
///      pairwise merges each lose (the reverse split's probability of reproducing a fuzzy
///      boundary is as small), so the chain stayed 80,000 nats below the true partition.
///      A large set's launch-family proposals therefore differ in two ways, each a
///      function of `S` alone (so the same in both directions, and the move stays exact):
///      the launch runs [`LAUNCH_RESTARTS`] restarts on a uniform sample of 1,024 points,
///      each from spread anchors (the second drawn in proportion to how poorly the first
///      one's sub-cluster explains it, k-means++ seeding), keeps the restart with the
///      highest two-component log likelihood and refines it for half the iterations on the
///      launch sample, so that it cuts `S` along its largest gap rather than through a
///      cluster; and its side probabilities are sharpened, `b_i(s) ∝ (π̄_s f(x_i | θ̄_s))^γ`
///      with `γ =` [`SHARPEN`], so that a proposed split is nearly determined by the fit and
///      is accepted only where the split partition itself is more probable. The allocation
///      family keeps its plain sequential allocation, whose merges are what reunite random
///      or spatial halves of clusters (sharpened as well, they stopped doing so on 10⁴ points
///      in `tests/scale.rs`), but on a set `S` of more than [`ALLOCATION_MAX`] points it
///      makes only splits that cut off a piece of at most [`PIECE_MAX`] points, and merges
///      of such a piece into a larger cluster (a split whose sides both exceed it is
///      rejected, as its reverse merge is, so the family stays reversible; the allocation
///      stops as soon as both of its groups exceed it): on such sets its splits into two
///      large halves carry the same thousands of nats of side entropy, and they alone kept
///      the chain over-split. The pieces are what the launch family cannot reverse: a
///      launch fits its sub-clusters on a sample, which hardly ever holds a small group of
///      10⁵ points, so a piece cut off a large cluster, whose points each fit it better
///      than their old cluster, stays. Measured in `tests/scale.rs` (10⁵ points): a ball of
///      60 points cut out of a cluster of 70,000, 359 nats below the truth, drifted to
///      2,000 below in 300 sweeps without these moves and is merged back by sweep 57 with
///      them. They do not reach every piece: at 10⁶ points in 6 overlapping clusters, a
///      piece of 30-60 points in the tail of one cluster where it meets another gains 220
///      to 420 nats on merging, and the replay of its split costs 10-15 nats more than
///      that (a cost that a nearest-first order, a slower-growing block or tempered group
///      weights did not lower), so its merges are rejected.
///      Measured on that data (one chain from one cluster, `--nw-defaults scaled`, 30
///      sweeps): K = 5, log joint -719,352 (the true partition -751,468, where overlapping
///      clusters are better explained as one; DPMM.jl's criterion -719,680), where the
///      plain proposals ended at K = 19, -878,231 after 20. The restarts run in parallel,
///      each on its own stream. Small sets keep the plain proposals.
///
/// All parallel passes run on the [`super::engine`], so a chain is bit-identical for any
/// number of threads. Each proposal draws its choices from its own stream (one seed per
/// proposal, drawn from the chain's stream after the restricted pass), so that as many
/// proposals as there are threads are made at once from the same state and the first
/// accepted one in order wins (see `proposals`): at large `n` nearly every proposal is
/// rejected, and one proposal alone keeps only a few cores busy. The launch's likelihoods
/// are computed in vectors over blocks of points ([`ParametricKernel::ln_f_points`]). The
/// exact variant keeps no state between steps.
///
/// **DPMM.jl-faithful variant** ([`SubCluster::dpmm`], DP only): see there.
///
/// Cost per step: O(N K) likelihood evaluations and exponentials (O(N K d²) for
/// Normal-Wishart), in vectors over blocks of points ([`super::engine::label_pass_from`]), for
/// the restricted pass; per launch-family proposal, O(launch_iters · min(|S|, launch sample))
/// evaluations of two sub-cluster likelihoods plus one final scan of `S` (two likelihoods,
/// one `exp`, one `ln_1p` per point), and on a large set besides, [`LAUNCH_RESTARTS`] ×
/// (launch_iters + 2) scans of 1,024 points (the restarts in parallel) with half the
/// iterations on the launch sample; per allocation-family proposal, two predictive
/// evaluations per point of `S` and its batch statistics; and O(N) to collect a large `S`,
/// in parallel chunks.
/// Choosing a merge's partner or weighing a split's reverse merge costs `O(K)` marginals of
/// a union (`O(K d³)` for Normal-Wishart).
#[derive(Clone, Debug)]
pub struct SubCluster<K: ParametricKernel> {
    variant: Variant,
    /// Exact variant: how many points of `S` a launch fits its sub-clusters on.
    launch_sample: usize,
    /// Exact variant: sets of more points than this get the large-set proposals.
    large_set: usize,
    /// Exact variant: the sample on which a large launch's restarts run.
    restart_sample: usize,
    /// Exact variant: the largest set the allocation family proposes for.
    allocation_max: usize,
    /// Exact variant: the largest piece the allocation family splits off a larger set.
    piece_max: usize,
    params: Vec<K::Param>,
    /// The restricted pass's labels (and the faithful variant's) in four bytes a point.
    labels: Vec<u32>,
    /// The restricted pass's labels in one byte a point, while there are at most 256
    /// clusters: the buffer in use of the two.
    narrow: Vec<u8>,
    /// Faithful variant: sub-label (0 = ℓ, 1 = r) of every point.
    sub: Vec<u8>,
    /// Faithful variant: canonical key of every point's cluster after the last step, to
    /// detect clusters changed by other moves.
    last_key: Vec<usize>,
    /// Faithful variant: the sub-cluster log-likelihood history by cluster key.
    history: BTreeMap<usize, Vec<f64>>,
}

impl<K: ParametricKernel> SubCluster<K> {
    /// The exact sub-cluster sampler. Any options are valid: with 0 launch iterations the
    /// launch's side probabilities come from the anchors' parameters alone; with 0 proposals
    /// the move is the restricted Gibbs pass alone (which never changes the number of
    /// clusters).
    pub fn new(options: SubClusterOptions) -> Self {
        SubCluster {
            variant: Variant::Exact(options),
            launch_sample: LAUNCH_SAMPLE,
            large_set: LARGE_SET,
            restart_sample: RESTART_SAMPLE,
            allocation_max: ALLOCATION_MAX,
            piece_max: PIECE_MAX,
            params: Vec::new(),
            labels: Vec::new(),
            narrow: Vec::new(),
            sub: Vec::new(),
            last_key: Vec::new(),
            history: BTreeMap::new(),
        }
    }

    /// The exact sampler fitting each launch's sub-clusters on at most `points` points of the
    /// set `S` (drawn uniformly with replacement when `|S|` exceeds it; all of `S`
    /// otherwise). The default is [`LAUNCH_SAMPLE`]. Any value `≥ 2` keeps the move exact
    /// (the launch law still depends only on `S`); smaller values make launches on large
    /// sets cheaper and noisier. Errors if `points < 2`. No effect on the faithful variant.
    pub fn with_launch_sample(mut self, points: usize) -> Result<Self> {
        self.launch_sample = sample_size("launch sample", points)?;
        Ok(self)
    }

    /// The exact sampler with the large-set proposals (spread anchors, restarts on a sample
    /// of `restart_sample` points drawn uniformly with replacement, sharpened launch sides;
    /// see [`SubCluster`]) for every set of more than `above` points instead of more than
    /// [`LARGE_SET`], the restarts on `restart_sample` points instead of 1,024, and the
    /// allocation family limited to sets of at most `allocation_max` points instead of
    /// [`ALLOCATION_MAX`], and above that to pieces of at most `piece_max` points instead of
    /// [`PIECE_MAX`] (0: none). Any values keep the move exact (the proposal law still
    /// depends only on `S`, and the limits refuse a split and its reverse merge alike); the
    /// tests use small ones so that the exact checks on a few points cover these paths.
    /// Errors if `restart_sample < 2`. No effect on the faithful variant.
    pub fn with_large_sets(
        mut self,
        above: usize,
        restart_sample: usize,
        allocation_max: usize,
        piece_max: usize,
    ) -> Result<Self> {
        self.large_set = above;
        self.restart_sample = sample_size("restart sample", restart_sample)?;
        self.allocation_max = allocation_max;
        self.piece_max = piece_max;
        Ok(self)
    }

    /// The DPMM.jl-faithful sub-cluster sampler (DP only; NGGP is rejected with an error at
    /// the first step). One step: draw `π ~ Dir(N_1..N_K, α)` and `θ_k`, and per cluster
    /// `(π̄_kℓ, π̄_kr) ~ Dir(N_kℓ + α/2, N_kr + α/2)` and `θ̄_ks`; draw every label
    /// `z_i ∝ π_k f(x_i | θ_k)` over the existing clusters (a cluster may empty and vanish)
    /// and then its sub-label `z̄_i ∝ π̄_{z_i s} f(x_i | θ̄_{z_i s})`; propose to split every
    /// cluster (in slot order) whose sub-clusters are both non-empty and which is
    /// "splittable" ([`DpmmOptions::splittable`], [`Splittable`]) with the ratio
    /// `H = α Γ(N_ℓ) m(X_ℓ) Γ(N_r) m(X_r) / (Γ(N) m(X))`, a split cluster's two halves getting
    /// uniformly random sub-labels; then try merges of pairs of the merge candidates (as
    /// [`Splittable`] says) in slot order, the first accepted partner winning, with
    /// `H = f Γ(N₁+N₂)/(α Γ(N₁)Γ(N₂)) · m(X₁∪X₂)/(m(X₁)m(X₂)) · Γ(α)/Γ(α+N₁+N₂) ·
    /// Γ(α/2+N₁)Γ(α/2+N₂)/Γ(α/2)²` (`f` = [`DpmmOptions::merge_factor`]), the merged
    /// cluster's sub-clusters being the two old clusters.
    ///
    /// The sub-labels are this move's state, keyed by point: clusters changed by other moves
    /// get uniformly random sub-labels; [`Move::save_aux`] / [`Move::restore_aux`] carry
    /// them (and the heuristic's history, keyed by each cluster's smallest point) through
    /// checkpoints.
    ///
    /// **Not exact** (see the module documentation). Measured on the 7-point data sets of
    /// MATH §5.3 (DP, α = 1, 4 chains × 40,000 sweeps, `tests/dpmm_tv.rs`, noise floor
    /// `E[TV]` 0.02 to 0.09): TV to the exact posterior 0.24 on data set A and 0.58 on data
    /// set B with DPMM.jl's settings ([`DpmmOptions::default`], "splittable" as its code
    /// decides it); 0.97 and 0.81 with the report's formula ([`Splittable::Report`], which
    /// rarely lets a cluster split); and still 0.18 and 0.58 with Chang & Fisher's bare ratios
    /// (merge factor 1, [`Splittable::Off`]): the missing proposal and auxiliary-normaliser
    /// terms, not only DPMM.jl's heuristics, bias it.
    pub fn dpmm(options: DpmmOptions) -> Self {
        SubCluster {
            variant: Variant::Dpmm(options),
            ..Self::new(SubClusterOptions::default())
        }
    }

    /// Draws `θ_k ~ p(θ | X_k)` for the clusters in `slots` into `self.params`.
    fn draw_cluster_params(
        &mut self,
        kernel: &K,
        partition: &Partition<K>,
        slots: &[Slot],
        rng: &mut NrmmRng,
    ) -> Result<()> {
        while self.params.len() < slots.len() + 1 {
            self.params.push(kernel.new_param());
        }
        for (j, &s) in slots.iter().enumerate() {
            let c = partition.cluster(s).expect("live slot");
            kernel.sample_posterior(c.stat(), rng, &mut self.params[j])?;
        }
        Ok(())
    }

    /// The restricted label pass: labels into `labels` (`n` of them) given log weights `ln_w`
    /// and the first `ln_w.len()` parameters.
    fn label_pass<L: PassLabel>(
        &self,
        kernel: &K,
        ln_w: &[f64],
        seed: u64,
        labels: &mut Vec<L>,
    ) -> Result<()> {
        let n = kernel.n_points();
        labels.resize(n, L::of(0));
        let params = &self.params[..ln_w.len()];
        label_pass_from(kernel, seed, 0, ln_w, params, labels, |_, z, out, _| {
            *out = L::of(z);
            Ok(())
        })
    }

    /// Step 1 of the exact variant (see the type's documentation). The labels are held in
    /// one byte a point while there are at most 256 clusters (the pass draws among the
    /// existing ones), in four otherwise; the buffer is kept from step to step.
    fn restricted_gibbs<P: NrmPrior>(
        &mut self,
        kernel: &K,
        state: &mut State<K, P>,
        rng: &mut NrmmRng,
    ) -> Result<()> {
        let slots: Vec<Slot> = state.partition.slots().collect();
        let mut ln_w = Vec::with_capacity(slots.len());
        for &s in &slots {
            let n = state.partition.cluster(s).expect("live").size();
            ln_w.push(ln_gamma_variate(jump_shape(&state.prior, n)?, rng)?);
        }
        self.draw_cluster_params(kernel, &state.partition, &slots, rng)?;
        let seed = rng.next_u64();
        if slots.len() <= 1 << u8::BITS {
            let mut labels = std::mem::take(&mut self.narrow);
            self.labels = Vec::new();
            let done = self.restricted_pass(kernel, state, &slots, &ln_w, seed, &mut labels);
            self.narrow = labels;
            done
        } else {
            let mut labels = std::mem::take(&mut self.labels);
            self.narrow = Vec::new();
            let done = self.restricted_pass(kernel, state, &slots, &ln_w, seed, &mut labels);
            self.labels = labels;
            done
        }
    }

    /// The label pass of [`SubCluster::restricted_gibbs`] into `labels`, its blocks' checks
    /// and the move of the points.
    fn restricted_pass<P: NrmPrior, L: PassLabel>(
        &self,
        kernel: &K,
        state: &mut State<K, P>,
        slots: &[Slot],
        ln_w: &[f64],
        seed: u64,
        labels: &mut Vec<L>,
    ) -> Result<()> {
        self.label_pass(kernel, ln_w, seed, labels)?;
        let partition = &state.partition;
        let mut index_of = vec![u32::MAX; partition.slot_capacity()];
        for (j, &s) in slots.iter().enumerate() {
            index_of[s] = j as u32;
        }
        let mut counts: Vec<i64> = slots
            .iter()
            .map(|&s| partition.cluster(s).expect("live").size() as i64)
            .collect();
        // One independence Metropolis-Hastings step per block of points, in block order:
        // the block's drawn labels are kept unless they would leave a cluster empty given
        // the labels of every other point. What each block would change in the counts is
        // found in parallel; only the decisions, O(K) a block, are made in order.
        let k = slots.len();
        let deltas: Vec<Vec<i64>> = labels
            .par_chunks(CHUNK)
            .enumerate()
            .map(|(b, chunk)| {
                let mut delta = vec![0i64; k];
                for (j, &new) in chunk.iter().enumerate() {
                    let old = index_of[partition.slot_of(b * CHUNK + j)];
                    let new = new.get();
                    if old != new {
                        delta[old as usize] -= 1;
                        delta[new as usize] += 1;
                    }
                }
                delta
            })
            .collect();
        for (b, delta) in deltas.iter().enumerate() {
            for (c, &x) in counts.iter_mut().zip(delta) {
                *c += x;
            }
            if counts.contains(&0) {
                for (c, &x) in counts.iter_mut().zip(delta) {
                    *c -= x;
                }
                let end = ((b + 1) * CHUNK).min(labels.len());
                for i in b * CHUNK..end {
                    labels[i] = L::of(index_of[partition.slot_of(i)] as usize);
                }
            }
        }
        apply_labels(kernel, &mut state.partition, slots, labels);
        Ok(())
    }

    /// The launch on the sorted points `s` (see the type's documentation): returns `ln q`,
    /// the log probability of the sides `sides` (`ln [Π_j b_j(side_j) + Π_j b_j(1 - side_j)]`
    /// from each point's log side probabilities `(ln b_ℓ, ln b_r)`), the sides drawn into
    /// `sides` when `draw` is set and read from it (one per point of `s`) otherwise. Needs
    /// `|s| ≥ 2`.
    #[allow(clippy::too_many_arguments)]
    fn launch<P: NrmPrior>(
        &self,
        kernel: &K,
        prior: &P,
        s: &[u32],
        iters: usize,
        draw: bool,
        rng: &mut NrmmRng,
        sides: &mut Vec<u8>,
    ) -> Result<f64> {
        let a = 0.5 * prior.ln_kappa_new().exp();
        if s.len() <= self.large_set {
            // Two distinct anchor points, uniformly from S, each seeding one sub-cluster with
            // a draw from the posterior given that point alone: the sub-clusters differ from
            // the first scan on, where a random bisection of S gives two near-identical
            // sub-clusters whose symmetry takes many scans to break.
            let mut theta = [kernel.new_param(), kernel.new_param()];
            let first = uniform_index(rng, s.len());
            let mut second = uniform_index(rng, s.len() - 1);
            if second >= first {
                second += 1;
            }
            for (side, &j) in [first, second].iter().enumerate() {
                anchor_draw(kernel, s[j] as usize, rng, &mut theta[side])?;
            }
            let mut ln_pi = [0.0; 2];
            fit_sub_clusters(kernel, a, s, iters, &mut ln_pi, &mut theta, rng)?;
            return final_scan(kernel, s, &ln_pi, &theta, 1.0, draw, rng, sides);
        }
        // A large S: the scans that fit the sub-clusters run on a uniform sample of S (with
        // replacement) when S exceeds the launch sample; only the final scan visits all of S.
        let sample: Vec<u32>;
        let fit: &[u32] = if iters == 0 || s.len() <= self.launch_sample {
            s
        } else {
            sample = (0..self.launch_sample)
                .map(|_| s[uniform_index(rng, s.len())])
                .collect();
            &sample
        };
        // Restarts on a smaller uniform sample, each from its own spread anchors, the best by
        // its two-component log likelihood refined on the whole fit set.
        let small: Vec<u32> = (0..self.restart_sample)
            .map(|_| fit[uniform_index(rng, fit.len())])
            .collect();
        let restarts = if iters == 0 { 1 } else { LAUNCH_RESTARTS };
        // The restarts run in parallel, each on its own stream of one seed drawn from the
        // chain's, and the first best in restart order wins: the same on any thread count.
        let plan = SeedPlan::new(rng.next_u64());
        let fits = (0..restarts)
            .into_par_iter()
            .map(|r| {
                let rng = &mut plan.chain(r as u64);
                let mut theta = [kernel.new_param(), kernel.new_param()];
                spread_anchors(kernel, &small, &mut theta, rng)?;
                let mut ln_pi = [0.0; 2];
                fit_sub_clusters(kernel, a, &small, iters, &mut ln_pi, &mut theta, rng)?;
                let score = two_component_ln_lik(kernel, &small, &ln_pi, &theta)?;
                Ok((score, ln_pi, theta))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut best: Option<(f64, [f64; 2], [K::Param; 2])> = None;
        for f in fits {
            if best.as_ref().is_none_or(|b| f.0 > b.0) {
                best = Some(f);
            }
        }
        let (_, mut ln_pi, mut theta) = best.expect("at least one restart");
        fit_sub_clusters(
            kernel,
            a,
            fit,
            iters.div_ceil(2),
            &mut ln_pi,
            &mut theta,
            rng,
        )?;
        final_scan(kernel, s, &ln_pi, &theta, SHARPEN, draw, rng, sides)
    }

    /// The blocked sequential allocation of the sorted points `s` to two groups seeded by
    /// the anchors `s[first]` (group 0) and `s[second]` (group 1); see [`SubCluster`].
    /// With `forced`, replays the allocation forced to those sides instead of drawing.
    /// Returns the sides and `ln q`, the log probability of the allocation; stops early,
    /// returning the partial sum, once that falls to `stop_below` or less (every further
    /// term is `≤ 0`, so the caller's decision is already made). With `piece = Some(m)`,
    /// returns `None` as soon as both groups hold more than `m` points (groups only grow,
    /// so the allocation can no longer end in a split with a side of at most `m` points).
    /// Cost: O(|s|) predictive evaluations and statistic additions, parallel within blocks.
    #[allow(clippy::too_many_arguments)]
    fn allocate<P: NrmPrior>(
        &self,
        kernel: &K,
        prior: &P,
        s: &[u32],
        first: usize,
        second: usize,
        forced: Option<&[u8]>,
        stop_below: f64,
        piece: Option<usize>,
        rng: &mut NrmmRng,
    ) -> Result<Option<(Vec<u8>, f64)>> {
        let n = s.len();
        let mut order: Vec<usize> = (0..n).filter(|&j| j != first && j != second).collect();
        // A uniform order. With a piece limit it is drawn block by block (Fisher-Yates from
        // the front), as far as the allocation goes: a split of a large set usually stops
        // after a few blocks.
        let mut ordered = 0;
        if piece.is_none() {
            for j in (1..order.len()).rev() {
                order.swap(j, uniform_index(rng, j + 1));
            }
            ordered = order.len();
        }
        let mut draw_order = |order: &mut [usize], upto: usize, rng: &mut NrmmRng| {
            for p in ordered..upto {
                order.swap(p, p + uniform_index(rng, order.len() - p));
            }
            ordered = ordered.max(upto);
        };
        let mut sides = vec![0u8; n];
        sides[second] = 1;
        let mut stats = [
            kernel.stat_of(&[s[first] as usize]),
            kernel.stat_of(&[s[second] as usize]),
        ];
        // Grown block by block, as far as the allocation goes.
        let mut drawn: Vec<(u8, f64)> = vec![(0, 0.0); order.len().min(ALLOCATION_EARLY)];
        let mut block_points: [Vec<usize>; 2] = [Vec::new(), Vec::new()];
        // The first points go to either side with probability ½ (see the type's
        // documentation); then blocks of doubling length, each allocated in parallel.
        let early = order.len().min(ALLOCATION_EARLY);
        draw_order(&mut order, early, rng);
        for (p, &j) in order[..early].iter().enumerate() {
            let i = s[j] as usize;
            let w0 =
                prior.ln_kappa_join(kernel.count(&stats[0])) + kernel.ln_predictive(i, &stats[0]);
            let w1 =
                prior.ln_kappa_join(kernel.count(&stats[1])) + kernel.ln_predictive(i, &stats[1]);
            let pred = side_log_probs(w0, w1)?;
            let b1 = 0.25 + 0.5 * pred[1].exp();
            let side = match forced {
                Some(f) => f[j],
                None => u8::from(crate::rng::uniform_open01(rng) < b1),
            };
            drawn[p] = (side, if side == 1 { b1.ln() } else { (1.0 - b1).ln() });
            sides[j] = side;
            kernel.add(&mut stats[side as usize], i);
        }
        let mut ln_q: f64 = drawn[..early].iter().map(|d| d.1).sum();
        let too_big = |stats: &[K::Stat; 2]| {
            piece.is_some_and(|m| kernel.count(&stats[0]) > m && kernel.count(&stats[1]) > m)
        };
        let (mut start, mut len) = (early, early);
        while start < order.len() && ln_q > stop_below {
            if too_big(&stats) {
                return Ok(None);
            }
            let end = (start + len).min(order.len());
            draw_order(&mut order, end, rng);
            drawn.resize(end, (0, 0.0));
            let ln_w = [
                prior.ln_kappa_join(kernel.count(&stats[0])),
                prior.ln_kappa_join(kernel.count(&stats[1])),
            ];
            let seed = if forced.is_none() { rng.next_u64() } else { 0 };
            let (st, ord) = (&stats, &order[start..end]);
            for_each_point(
                seed,
                &mut drawn[start..end],
                || (),
                |p, o, _, rng| {
                    let j = ord[p];
                    let i = s[j] as usize;
                    let w0 = ln_w[0] + kernel.ln_predictive(i, &st[0]);
                    let w1 = ln_w[1] + kernel.ln_predictive(i, &st[1]);
                    *o = match forced {
                        Some(f) => {
                            let side = f[j];
                            (side, side_log_probs(w0, w1)?[side as usize])
                        }
                        None => {
                            let (side, ln_b) = draw_side(w0, w1, rng)?;
                            (side, ln_b[side as usize])
                        }
                    };
                    Ok(())
                },
            )?;
            for side_points in &mut block_points {
                side_points.clear();
            }
            for (p, &j) in order[start..end].iter().enumerate() {
                let side = drawn[start + p].0;
                sides[j] = side;
                block_points[side as usize].push(s[j] as usize);
            }
            for (t, points) in stats.iter_mut().zip(&block_points) {
                if points.len() < 8 {
                    for &i in points {
                        kernel.add(t, i);
                    }
                } else {
                    kernel.merge(t, &kernel.stat_of(points));
                }
            }
            ln_q += drawn[start..end].iter().map(|d| d.1).sum::<f64>();
            start = end;
            len = 2 * len.max(1);
        }
        if too_big(&stats) {
            return Ok(None);
        }
        Ok(Some((sides, ln_q)))
    }

    /// One split or merge proposal of the allocation family (see [`SubCluster`]): its
    /// decision and, when accepted, the change to make.
    fn allocation_split_merge<P: NrmPrior>(
        &self,
        kernel: &K,
        state: &State<K, P>,
        chooser: &mut dyn Chooser,
    ) -> Result<(StepInfo, Option<Change>)> {
        let k = state.partition.n_clusters();
        let slots: Vec<Slot> = state.partition.slots().collect();
        let split = chooser.choose_uniform(2) == 0;
        let prior = state.prior.clone();
        let h = |n: usize, ln_m: f64| prior.ln_kappa(n) + ln_m;
        let pairs = |n: usize| ((n * (n - 1)) as f64).ln();
        if split {
            let slot = slots[chooser.choose_uniform(k)];
            let c = state.partition.cluster(slot).expect("live");
            // Above the limit, both directions refuse a split whose sides both exceed the
            // piece limit, so the family stays reversible.
            let piece = (c.size() > self.allocation_max).then_some(self.piece_max);
            if c.size() < 2 || piece.is_some_and(|m| m == 0) {
                return Ok((REJECTED, None));
            }
            let (s, _) = sorted_members(&state.partition, slot, None);
            let h_s = h(c.size(), c.ln_marginal());
            let rng = chain_rng(chooser, "subcluster")?;
            let first = uniform_index(rng, s.len());
            let mut second = uniform_index(rng, s.len() - 1);
            if second >= first {
                second += 1;
            }
            let Some((sides, ln_q)) = self.allocate(
                kernel,
                &prior,
                &s,
                first,
                second,
                None,
                f64::NEG_INFINITY,
                piece,
                rng,
            )?
            else {
                return Ok((REJECTED, None));
            };
            split_by_sides(
                kernel,
                &prior,
                slot,
                &s,
                |j| sides[j] == 1,
                ln_q - (k as f64).ln() - pairs(s.len()),
                ln_v_gain(&prior, state.partition.n(), k),
                |a, b| {
                    let anchors = ((a.n * b.n) as f64).ln();
                    split_pair_ln_probs(kernel, &prior, &state.partition, slot, a, b).0 - anchors
                },
                h_s,
                chooser,
            )
        } else {
            if k < 2 {
                return Ok((REJECTED, None));
            }
            let clusters = candidates(&state.partition, &prior, &slots);
            let (x, y, ln_p) = pick_pair(kernel, &prior, &clusters, chooser)?;
            let (sx, sy) = (slots[x], slots[y]);
            let (cx, cy) = (
                state.partition.cluster(sx).expect("live"),
                state.partition.cluster(sy).expect("live"),
            );
            let (nx, ny) = (cx.size(), cy.size());
            if nx + ny > self.allocation_max && nx.min(ny) > self.piece_max {
                return Ok((REJECTED, None));
            }
            let ln_target_ratio = h(nx + ny, kernel.ln_marginal_pair(cx.stat(), cy.stat()))
                - h(nx, cx.ln_marginal())
                - h(ny, cy.ln_marginal())
                - ln_v_gain(&prior, state.partition.n(), k - 1);
            // ln A = ln_rest + ln q with ln q ≤ 0: the uniform of the decision is drawn first
            // so that a hopeless merge stops as soon as its partial ln q decides it.
            let ln_pair = -(k as f64).ln() + ln_p[y];
            let ln_rest = ln_target_ratio - ((k - 1) as f64).ln() - pairs(nx + ny) - ln_pair
                + ((nx * ny) as f64).ln();
            let rng = chain_rng(chooser, "subcluster")?;
            let ln_u = uniform_open01(rng).ln();
            if ln_rest <= ln_u {
                return Ok((decide(ln_rest, ln_u), None));
            }
            let (points, sides) = sorted_members(&state.partition, sx, Some(sy));
            // The anchors: the r-th point of each cluster in index order.
            let nth = |side: u8, r: usize| {
                sides
                    .iter()
                    .enumerate()
                    .filter(|(_, &v)| v == side)
                    .nth(r)
                    .map(|(j, _)| j)
                    .expect("the cluster has that many points")
            };
            let first = nth(0, uniform_index(rng, nx));
            let second = nth(1, uniform_index(rng, ny));
            let stop_below = ln_u - ln_rest;
            let Some((_, ln_q)) = self.allocate(
                kernel,
                &prior,
                &points,
                first,
                second,
                Some(&sides),
                stop_below,
                None,
                rng,
            )?
            else {
                // Unreachable: a replay without a piece limit always returns its sides.
                return Ok((REJECTED, None));
            };
            let info = decide(ln_rest + ln_q, ln_u);
            Ok((info, (info.accepted == 1).then_some(Change::Merge(sx, sy))))
        }
    }

    /// One split or merge proposal of the launch family (see [`SubCluster`]): its decision
    /// and, when accepted, the change to make.
    fn split_merge<P: NrmPrior>(
        &self,
        kernel: &K,
        state: &State<K, P>,
        chooser: &mut dyn Chooser,
        iters: usize,
    ) -> Result<(StepInfo, Option<Change>)> {
        let k = state.partition.n_clusters();
        let slots: Vec<Slot> = state.partition.slots().collect();
        let split = chooser.choose_uniform(2) == 0;
        let prior = state.prior.clone();
        let h = |n: usize, ln_m: f64| prior.ln_kappa(n) + ln_m;
        if split {
            let slot = slots[chooser.choose_uniform(k)];
            let c = state.partition.cluster(slot).expect("live");
            if c.size() < 2 {
                return Ok((REJECTED, None));
            }
            let (s, _) = sorted_members(&state.partition, slot, None);
            let (h_s, n_s) = (h(c.size(), c.ln_marginal()), c.size());
            let rng = chain_rng(chooser, "subcluster")?;
            // The launch keeps the drawn sides alone (1 byte a point): on a million points
            // its side probabilities (16 bytes a point) are summed as they are computed.
            let mut sides = Vec::new();
            let ln_q = self.launch(kernel, &prior, &s, iters, true, rng, &mut sides)?;
            let n_b = sides.iter().filter(|&&v| v == 1).count();
            if n_b == 0 || n_b == n_s {
                return Ok((REJECTED, None));
            }
            split_by_sides(
                kernel,
                &prior,
                slot,
                &s,
                |j| sides[j] == 1,
                ln_q - (k as f64).ln(),
                ln_v_gain(&prior, state.partition.n(), k),
                |a, b| {
                    let (ab, ba) =
                        split_pair_ln_probs(kernel, &prior, &state.partition, slot, a, b);
                    ln_add_exp(ab, ba)
                },
                h_s,
                chooser,
            )
        } else {
            if k < 2 {
                return Ok((REJECTED, None));
            }
            let clusters = candidates(&state.partition, &prior, &slots);
            let (x, y, ln_p) = pick_pair(kernel, &prior, &clusters, chooser)?;
            // The unordered pair: picked as (x, y) or as (y, x).
            let ln_pair = -(k as f64).ln()
                + ln_add_exp(ln_p[y], partner_ln_probs(kernel, &prior, &clusters, y)[x]);
            let (sx, sy) = (slots[x], slots[y]);
            let (cx, cy) = (
                state.partition.cluster(sx).expect("live"),
                state.partition.cluster(sy).expect("live"),
            );
            let ln_m_union = kernel.ln_marginal_pair(cx.stat(), cy.stat());
            let ln_target_ratio = h(cx.size() + cy.size(), ln_m_union)
                - h(cx.size(), cx.ln_marginal())
                - h(cy.size(), cy.ln_marginal())
                - ln_v_gain(&prior, state.partition.n(), k - 1);
            // ln A = ln_rest + ln q with ln q ≤ ln 2 (two orientations, each ≤ 1): the
            // uniform of the decision is drawn first, and a merge that this bound already
            // rejects skips its launch.
            let ln_rest = ln_target_ratio - ((k - 1) as f64).ln() - ln_pair;
            let rng = chain_rng(chooser, "subcluster")?;
            let ln_u = uniform_open01(rng).ln();
            if ln_rest + std::f64::consts::LN_2 <= ln_u {
                return Ok((decide(ln_rest + std::f64::consts::LN_2, ln_u), None));
            }
            let (points, mut sides) = sorted_members(&state.partition, sx, Some(sy));
            let ln_q = self.launch(kernel, &prior, &points, iters, false, rng, &mut sides)?;
            let info = decide(ln_rest + ln_q, ln_u);
            Ok((info, (info.accepted == 1).then_some(Change::Merge(sx, sy))))
        }
    }

    /// The split/merge proposals of one step of the exact variant, proposal `p` drawing all
    /// its random choices (family, split or merge, which clusters, the launch or the
    /// allocation, the decision) from its own stream of `seeds[p]`, in order, each from the
    /// state its predecessors left: several proposals are made at once, in parallel, each
    /// from the state the earlier ones leave when all of them are rejected (speculative
    /// moves, Byrd, Jarvis & Bhalerao 2008): as many as there are threads after an accepted
    /// one, twice as many after a round without one, up to [`SPECULATION`] times the
    /// threads, so that long proposals overlap where nearly all are rejected; the first
    /// accepted one in order is applied and those after it are made again from the new
    /// state. Which proposals run together thus never changes a result, so the chain is the
    /// same on any thread count, and at large `n`, where nearly every proposal is rejected,
    /// a step's proposals keep every core busy where each alone keeps only a few (a
    /// launch's restarts, its final scan of `S`). Cost: that of the proposals, plus one
    /// wasted proposal for each of those made after an accepted one.
    fn proposals<P: NrmPrior>(
        &self,
        kernel: &K,
        state: &mut State<K, P>,
        seeds: &[u64],
        iters: usize,
    ) -> Result<StepInfo> {
        let mut info = StepInfo::default();
        let threads = rayon::current_num_threads().max(1);
        let mut width = threads;
        let mut next = 0;
        while next < seeds.len() {
            let end = (next + width).min(seeds.len());
            let current = &*state;
            let made: Vec<Result<(StepInfo, Option<Change>)>> = seeds[next..end]
                .par_iter()
                .map(|&seed| self.proposal(kernel, current, seed, iters))
                .collect();
            let mut applied = None;
            for (p, outcome) in made.into_iter().enumerate() {
                let (step, change) = outcome?;
                info.absorb(step);
                if let Some(change) = change {
                    applied = Some((next + p + 1, change));
                    break;
                }
            }
            match applied {
                Some((after, change)) => {
                    match change {
                        Change::Split(slot, b) => {
                            state.partition.split_off_compact(kernel, slot, &b);
                        }
                        Change::Merge(x, y) => state.partition.merge_clusters(kernel, x, y),
                    }
                    next = after;
                    width = threads;
                }
                None => {
                    next = end;
                    width = (2 * width).min(SPECULATION * threads);
                }
            }
        }
        Ok(info)
    }

    /// One proposal of the exact variant from the state `state`, all its choices drawn from
    /// the stream of `seed`: a fair coin picks the launch or the allocation family.
    fn proposal<P: NrmPrior>(
        &self,
        kernel: &K,
        state: &State<K, P>,
        seed: u64,
        iters: usize,
    ) -> Result<(StepInfo, Option<Change>)> {
        let mut rng = SeedPlan::new(seed).chain(0);
        let chooser = &mut RngChooser::new(&mut rng);
        if chooser.choose_uniform(2) == 0 {
            self.split_merge(kernel, state, chooser, iters)
        } else {
            self.allocation_split_merge(kernel, state, chooser)
        }
    }

    /// Re-randomises the sub-labels of every cluster whose point set differs from the one this
    /// move left (or of all points on the first step), and drops their histories.
    fn sync_sub_labels(&mut self, partition: &Partition<K>, rng: &mut NrmmRng) {
        let n = partition.n();
        let fresh = self.sub.len() != n || self.last_key.len() != n;
        if fresh {
            self.sub = vec![0; n];
            self.last_key = vec![usize::MAX; n];
            self.history.clear();
        }
        let mut old_sizes: BTreeMap<usize, usize> = BTreeMap::new();
        for &key in &self.last_key {
            *old_sizes.entry(key).or_default() += 1;
        }
        let mut live_keys = Vec::new();
        for (_, c) in partition.clusters() {
            let m = c.members();
            let key = self.last_key[m[0] as usize];
            let same = key != usize::MAX
                && m.iter().all(|&i| self.last_key[i as usize] == key)
                && old_sizes.get(&key) == Some(&m.len());
            if same {
                live_keys.push(c.key());
            } else {
                let mut sorted = m.to_vec();
                sorted.sort_unstable();
                for i in sorted {
                    self.sub[i as usize] = (rng.next_u64() >> 63) as u8;
                }
            }
        }
        self.history.retain(|key, _| live_keys.contains(key));
    }

    /// Records each point's cluster key for [`SubCluster::sync_sub_labels`].
    fn remember(&mut self, partition: &Partition<K>) {
        self.last_key.resize(partition.n(), usize::MAX);
        for (_, c) in partition.clusters() {
            let key = c.key();
            for i in c.member_indices() {
                self.last_key[i] = key;
            }
        }
    }

    /// One step of the DPMM.jl-faithful variant (see [`SubCluster::dpmm`]).
    fn dpmm_step<P: NrmPrior>(
        &mut self,
        kernel: &K,
        state: &mut State<K, P>,
        chooser: &mut dyn Chooser,
        opts: DpmmOptions,
    ) -> Result<StepInfo> {
        if !matches!(state.prior.hyperparameters(), PriorHyper::Dp { .. }) {
            return Err(Error::Usage(
                "subcluster-dpmm: the DPMM.jl sub-cluster ratios are defined for the Dirichlet \
                 process only; use --sampler subcluster for NGGP"
                    .into(),
            ));
        }
        let ln_alpha = state.prior.ln_kappa_new();
        let alpha = ln_alpha.exp();
        let rng = chain_rng(chooser, "subcluster-dpmm")?;
        self.sync_sub_labels(&state.partition, rng);
        if opts.splittable == Splittable::Code {
            // A cluster without a history is new to this move: its history starts from its
            // sub-labels, as a cluster DPMM.jl creates does.
            for (_, c) in state.partition.clusters() {
                if !self.history.contains_key(&c.key()) {
                    let mut sorted: Vec<usize> = c.member_indices().collect();
                    sorted.sort_unstable();
                    let ll = sub_ln_marginals(kernel, &sorted, &self.sub);
                    self.history.insert(c.key(), vec![ll]);
                }
            }
        }
        // Parameters of clusters and sub-clusters.
        let slots: Vec<Slot> = state.partition.slots().collect();
        let k = slots.len();
        let mut ln_w = Vec::with_capacity(k);
        for &s in &slots {
            let n = state.partition.cluster(s).expect("live").size();
            ln_w.push(ln_gamma_variate(n as f64, rng)?);
        }
        self.draw_cluster_params(kernel, &state.partition, &slots, rng)?;
        let mut slot_index = vec![u32::MAX; state.partition.slot_capacity()];
        for (j, &s) in slots.iter().enumerate() {
            slot_index[s] = j as u32;
        }
        let groups: Vec<u32> = (0..state.partition.n())
            .map(|i| 2 * slot_index[state.partition.slot_of(i)] + u32::from(self.sub[i]))
            .collect();
        let sub_stats = group_moments(kernel, &groups, 2 * k);
        let mut sub_params: Vec<K::Param> = (0..2 * k).map(|_| kernel.new_param()).collect();
        let mut sub_ln_w = vec![0.0; 2 * k];
        for g in 0..2 * k {
            let count = kernel.moments_count(&sub_stats[g]) as f64;
            sub_ln_w[g] = ln_gamma_variate(count + alpha / 2.0, rng)?;
            kernel.sample_moments(&sub_stats[g], rng, &mut sub_params[g])?;
        }
        // Joint pass: label, then sub-label given the label.
        let n = state.partition.n();
        let mut out = vec![(0u32, 0u8, 0.0f64); n];
        let params = &self.params[..k];
        label_pass_from(
            kernel,
            rng.next_u64(),
            0,
            &ln_w,
            params,
            &mut out,
            |i, z, o, rng| {
                let f = [
                    kernel.ln_f(i, &sub_params[2 * z]),
                    kernel.ln_f(i, &sub_params[2 * z + 1]),
                ];
                let v =
                    draw_side(sub_ln_w[2 * z] + f[0], sub_ln_w[2 * z + 1] + f[1], rng)?.0 as usize;
                *o = (z as u32, v as u8, f[v]);
                Ok(())
            },
        )?;
        self.labels.clear();
        self.labels.extend(out.iter().map(|o| o.0));
        for (s, o) in self.sub.iter_mut().zip(&out) {
            *s = o.1;
        }
        let code = opts.splittable == Splittable::Code;
        // The clusters' keys before the pass, and which may split (DPMM.jl decides this
        // before its label pass, from the history up to the last step).
        let old_keys: Vec<usize> = slots
            .iter()
            .map(|&s| state.partition.cluster(s).expect("live").key())
            .collect();
        let may_split: Vec<bool> = old_keys
            .iter()
            .map(|key| code && self.history.get(key).is_some_and(|h| code_splittable(h)))
            .collect();
        let mut sub_ll = vec![0.0; k];
        for o in &out {
            sub_ll[o.0 as usize] += o.2;
        }
        apply_labels(kernel, &mut state.partition, &slots, &self.labels);
        // Histories of the clusters that survived (keyed by their smallest point).
        let mut first = vec![usize::MAX; k];
        for (i, &l) in self.labels.iter().enumerate().rev() {
            first[l as usize] = i;
        }
        let keyed_ll: BTreeMap<usize, f64> = if code {
            // The sub-clusters' log marginal likelihoods after the pass; each history moves
            // to its cluster's new key.
            let groups: Vec<u32> = self
                .labels
                .iter()
                .zip(&self.sub)
                .map(|(&l, &v)| 2 * l + u32::from(v))
                .collect();
            let stats = group_stats(kernel, &groups, 2 * k);
            let mut moved = BTreeMap::new();
            for j in (0..k).filter(|&j| first[j] != usize::MAX) {
                let mut hist = self.history.remove(&old_keys[j]).unwrap_or_default();
                hist.push(
                    kernel.ln_marginal(&stats[2 * j]) + kernel.ln_marginal(&stats[2 * j + 1]),
                );
                if hist.len() > HISTORY {
                    hist.remove(0);
                }
                moved.insert(first[j], hist);
            }
            self.history = moved;
            BTreeMap::new()
        } else {
            first
                .iter()
                .zip(&sub_ll)
                .filter(|(&i, _)| i != usize::MAX)
                .map(|(&i, &ll)| (i, ll))
                .collect()
        };
        let may_split_now: BTreeMap<usize, bool> = (0..k)
            .filter(|&j| first[j] != usize::MAX)
            .map(|j| (first[j], may_split[j]))
            .collect();
        let mut info = StepInfo::default();
        // Splits, in slot order, of the clusters present now.
        let slots: Vec<Slot> = state.partition.slots().collect();
        let mut merge_candidates = Vec::new();
        for &slot in &slots {
            let c = state.partition.cluster(slot).expect("live");
            let key = c.key();
            let splittable = match opts.splittable {
                Splittable::Code => may_split_now.get(&key).copied().unwrap_or(false),
                Splittable::Report => {
                    let hist = self.history.entry(key).or_default();
                    if let Some(&ll) = keyed_ll.get(&key) {
                        hist.push(ll);
                        if hist.len() > HISTORY {
                            hist.remove(0);
                        }
                    }
                    hist.len() == HISTORY
                        && (hist.iter().sum::<f64>() / HISTORY as f64 - hist[HISTORY - 1]).abs()
                            < SPLITTABLE_TOL
                }
                Splittable::Off => true,
            };
            if code && splittable {
                merge_candidates.push(slot);
            }
            let members = c.members();
            if code
                && splittable
                && !(members.iter().any(|&i| self.sub[i as usize] == 0)
                    && members.iter().any(|&i| self.sub[i as usize] == 1))
            {
                // DPMM.jl's `reset_cluster!`: fresh sub-labels, a history restarted from them.
                let mut sorted: Vec<usize> = c.member_indices().collect();
                sorted.sort_unstable();
                let rng = chain_rng(chooser, "subcluster-dpmm")?;
                for &i in &sorted {
                    self.sub[i] = (rng.next_u64() >> 63) as u8;
                }
                self.history
                    .insert(key, vec![sub_ln_marginals(kernel, &sorted, &self.sub)]);
            }
            let c = state.partition.cluster(slot).expect("live");
            let (mut l, mut r) = (Vec::new(), Vec::new());
            for i in c.member_indices() {
                if self.sub[i] == 0 {
                    l.push(i)
                } else {
                    r.push(i)
                }
            }
            if !splittable || l.is_empty() || r.is_empty() {
                if !code {
                    merge_candidates.push(slot);
                }
                continue;
            }
            r.sort_unstable();
            let (sl, sr) = (kernel.stat_of(&l), kernel.stat_of(&r));
            let ln_h = ln_alpha + ln_gamma(l.len() as f64) + ln_gamma(r.len() as f64)
                - ln_gamma(c.size() as f64)
                + kernel.ln_marginal(&sl)
                + kernel.ln_marginal(&sr)
                - c.ln_marginal();
            let proposal = Proposal {
                ln_q_fwd: 0.0,
                ln_q_rev: 0.0,
                ln_target_ratio: ln_h,
            };
            let (accepted, step) = metropolis_hastings(&proposal, chooser);
            info.absorb(step);
            if accepted {
                self.history.remove(&key);
                state.partition.split_off(kernel, slot, &r);
                let rng = chain_rng(chooser, "subcluster-dpmm")?;
                l.sort_unstable();
                for &i in l.iter().chain(&r) {
                    self.sub[i] = (rng.next_u64() >> 63) as u8;
                }
                if code {
                    // Both halves start their histories, as new clusters do.
                    self.history
                        .insert(l[0], vec![sub_ln_marginals(kernel, &l, &self.sub)]);
                    self.history
                        .insert(r[0], vec![sub_ln_marginals(kernel, &r, &self.sub)]);
                }
            } else if !code {
                merge_candidates.push(slot);
            }
        }
        // Pairwise merges in slot order; the first accepted partner wins.
        let mut used = vec![false; merge_candidates.len()];
        for x in 0..merge_candidates.len() {
            if used[x] {
                continue;
            }
            for y in x + 1..merge_candidates.len() {
                if used[y] {
                    continue;
                }
                let (s1, s2) = (merge_candidates[x], merge_candidates[y]);
                let (c1, c2) = (
                    state.partition.cluster(s1).expect("live"),
                    state.partition.cluster(s2).expect("live"),
                );
                let (n1, n2) = (c1.size() as f64, c2.size() as f64);
                let ln_h = opts.merge_factor.ln() + ln_gamma(n1 + n2)
                    - ln_alpha
                    - ln_gamma(n1)
                    - ln_gamma(n2)
                    + kernel.ln_marginal_pair(c1.stat(), c2.stat())
                    - c1.ln_marginal()
                    - c2.ln_marginal()
                    + ln_gamma(alpha)
                    - ln_gamma(alpha + n1 + n2)
                    + ln_gamma(alpha / 2.0 + n1)
                    + ln_gamma(alpha / 2.0 + n2)
                    - 2.0 * ln_gamma(alpha / 2.0);
                let proposal = Proposal {
                    ln_q_fwd: 0.0,
                    ln_q_rev: 0.0,
                    ln_target_ratio: ln_h,
                };
                let (accepted, step) = metropolis_hastings(&proposal, chooser);
                info.absorb(step);
                if accepted {
                    let (k1, k2) = (c1.key(), c2.key());
                    for i in c1.member_indices() {
                        self.sub[i] = 0;
                    }
                    for i in c2.member_indices() {
                        self.sub[i] = 1;
                    }
                    self.history.remove(&k1);
                    self.history.remove(&k2);
                    if code {
                        // The merged cluster's sub-clusters are the two old clusters.
                        self.history
                            .insert(k1.min(k2), vec![c1.ln_marginal() + c2.ln_marginal()]);
                    }
                    state.partition.merge_clusters(kernel, s1, s2);
                    used[x] = true;
                    used[y] = true;
                    break;
                }
            }
        }
        self.remember(&state.partition);
        let keys: Vec<usize> = state.partition.clusters().map(|(_, c)| c.key()).collect();
        self.history.retain(|key, _| keys.contains(key));
        Ok(info)
    }
}

/// `points` as the size of the sample that setting `name` asks for, or an error naming it
/// when it is below 2 (a sub-cluster fit needs two points).
pub(crate) fn sample_size(name: &str, points: usize) -> Result<usize> {
    if points < 2 {
        return Err(Error::param(name, points as f64, "at least 2 points"));
    }
    Ok(points)
}

/// Draws `θ̄ ~ p(θ | x_i)`, the posterior given the anchor point `i` alone, into `theta`.
fn anchor_draw<K: ParametricKernel>(
    kernel: &K,
    i: usize,
    rng: &mut NrmmRng,
    theta: &mut K::Param,
) -> Result<()> {
    let mut m = kernel.new_moments();
    kernel.moments_add(&mut m, i);
    kernel.sample_moments(&m, rng, theta)
}

/// The anchors of a restart of a large launch (see [`SubCluster`]): the first uniform on
/// `pts`, the second drawn in proportion to how poorly the first one's sub-cluster explains
/// it, `max_j ln f(x_j | θ̄_ℓ) - ln f(x | θ̄_ℓ)` (half a squared Mahalanobis distance for
/// Gaussians: k-means++ seeding), so that the two fall in different modes of a multi-modal
/// set; uniform when every point is explained equally well. Cost: one likelihood per point.
fn spread_anchors<K: ParametricKernel, I: PointIndex>(
    kernel: &K,
    pts: &[I],
    theta: &mut [K::Param; 2],
    rng: &mut NrmmRng,
) -> Result<()> {
    anchor_draw(
        kernel,
        pts[uniform_index(rng, pts.len())].index(),
        rng,
        &mut theta[0],
    )?;
    let th0 = &theta[0];
    let ln_f: Vec<f64> = pts
        .par_iter()
        .map(|&i| kernel.ln_f(i.index(), th0))
        .collect();
    let top = ln_f.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let total: f64 = ln_f.iter().map(|&l| top - l).sum();
    let second = if total > 0.0 && total.is_finite() {
        let mut u = uniform_open01(rng) * total;
        let mut pick = pts.len() - 1;
        for (j, &l) in ln_f.iter().enumerate() {
            u -= top - l;
            if u <= 0.0 {
                pick = j;
                break;
            }
        }
        pts[pick].index()
    } else {
        pts[uniform_index(rng, pts.len())].index()
    };
    anchor_draw(kernel, second, rng, &mut theta[1])
}

/// `iters` sub-cluster Gibbs iterations on the points `pts` from the log sub-weights `ln_pi`
/// and parameters `theta`: sub-labels `∝ π̄_s f(x_i | θ̄_s)` in parallel, then
/// `(π̄_ℓ, π̄_r) ~ Dir(N_ℓ + a, N_r + a)` (as log jumps) and `θ̄_s ~ p(θ | X_s)`. Cost: `iters`
/// scans of two likelihoods per point, and two group moments.
#[allow(clippy::too_many_arguments)]
fn fit_sub_clusters<K: ParametricKernel, I: PointIndex>(
    kernel: &K,
    a: f64,
    pts: &[I],
    iters: usize,
    ln_pi: &mut [f64; 2],
    theta: &mut [K::Param; 2],
    rng: &mut NrmmRng,
) -> Result<()> {
    let mut sides = vec![0u32; if iters > 0 { pts.len() } else { 0 }];
    for _ in 0..iters {
        let (lp, th) = (*ln_pi, &*theta);
        side_pass(
            kernel,
            rng.next_u64(),
            0,
            pts,
            &lp,
            th,
            &mut sides,
            |_, w0, w1, o, rng| {
                *o = u32::from(draw_side(w0, w1, rng)?.0);
                Ok(())
            },
        )?;
        let moments = group_moments_of(kernel, pts, &sides, 2);
        for side in 0..2 {
            let count = kernel.moments_count(&moments[side]) as f64;
            ln_pi[side] = ln_gamma_variate(count + a, rng)?;
            kernel.sample_moments(&moments[side], rng, &mut theta[side])?;
        }
    }
    Ok(())
}

/// `Σ_i ln(π̄_ℓ f(x_i | θ̄_ℓ) + π̄_r f(x_i | θ̄_r))` over `pts` with the sub-weights normalised:
/// how well a restart's sub-clusters fit the points. Summed in index order after a parallel
/// map, so it does not depend on the thread count. Cost: two likelihoods per point.
fn two_component_ln_lik<K: ParametricKernel, I: PointIndex>(
    kernel: &K,
    pts: &[I],
    ln_pi: &[f64; 2],
    theta: &[K::Param; 2],
) -> Result<f64> {
    let norm = ln_add_exp(ln_pi[0], ln_pi[1]);
    let lp = [ln_pi[0] - norm, ln_pi[1] - norm];
    let mut terms = vec![0.0; pts.len()];
    side_pass(
        kernel,
        0,
        0,
        pts,
        &lp,
        theta,
        &mut terms,
        |_, w0, w1, o, _| {
            *o = ln_add_exp(w0, w1);
            Ok(())
        },
    )?;
    Ok(terms.iter().sum())
}

/// The final scan of a launch over all of `s`: each point's log side probabilities
/// `∝ γ (ln π̄_s + ln f(x_i | θ̄_s))` (sharpened by `gamma ≥ 1`) and, with `draw`, a side drawn
/// from them into `sides` (otherwise `sides` holds one side per point); returns `ln q` of the
/// sides ([`SideProb`]). The scan runs in stages of [`SCAN_STAGE`] points, each in parallel
/// and then summed in index order, so that it holds one stage's probabilities rather than
/// all of them (24 bytes a point, 24 MB a launch on a million points); the stages are whole
/// chunks of the engine, so the streams, the draws and the sums are those of one pass over
/// `s`. Cost: two likelihoods per point, in parallel.
#[allow(clippy::too_many_arguments)]
fn final_scan<K: ParametricKernel>(
    kernel: &K,
    s: &[u32],
    ln_pi: &[f64; 2],
    theta: &[K::Param; 2],
    gamma: f64,
    draw: bool,
    rng: &mut NrmmRng,
    sides: &mut Vec<u8>,
) -> Result<f64> {
    if draw {
        sides.clear();
        sides.resize(s.len(), 0);
    }
    debug_assert_eq!(sides.len(), s.len());
    let seed = if draw { rng.next_u64() } else { 0 };
    let mut stage = vec![([0.0; 2], 0u8); s.len().min(SCAN_STAGE)];
    let mut q = SideProb::default();
    for (c, (pts, stage_sides)) in s
        .chunks(SCAN_STAGE)
        .zip(sides.chunks_mut(SCAN_STAGE))
        .enumerate()
    {
        let out = &mut stage[..pts.len()];
        let first = (c * SCAN_STAGE) as u64;
        side_pass(
            kernel,
            seed,
            first,
            pts,
            ln_pi,
            theta,
            out,
            |_, w0, w1, o, rng| {
                *o = final_side(w0, w1, gamma, draw, rng)?;
                Ok(())
            },
        )?;
        for ((ln_b, drawn), side) in out.iter().zip(stage_sides) {
            if draw {
                *side = *drawn;
            }
            q.add(ln_b, *side);
        }
    }
    Ok(q.ln())
}

/// `f(j, w0, w1, &mut out[j], rng)` for every position `j` of `pts`, with the side weights
/// `w_s = ln π̄_s + ln f(x_{pts[j]} | θ̄_s)`, in parallel over the chunks of
/// [`super::engine::for_each_point_from`] (whose streams and draws it shares; `pts` are the
/// positions `first..` of a longer sequence, `first` a multiple of
/// [`super::engine::CHUNK`] where the pass draws), the weights of each block of [`BLOCK`]
/// points computed together in vectors ([`ParametricKernel::ln_f_points`]). Cost: two
/// likelihoods per point, in vectors.
#[allow(clippy::too_many_arguments)]
fn side_pass<K: ParametricKernel, I: PointIndex, T: Send>(
    kernel: &K,
    seed: u64,
    first: u64,
    pts: &[I],
    ln_pi: &[f64; 2],
    theta: &[K::Param; 2],
    out: &mut [T],
    f: impl Fn(usize, f64, f64, &mut T, &mut NrmmRng) -> Result<()> + Sync,
) -> Result<()> {
    for_each_run_from(seed, first, out, Vec::new, |start, run, w, rng| {
        for (c, block) in run.chunks_mut(BLOCK).enumerate() {
            let j0 = start + c * BLOCK;
            // The points of `pts` lie anywhere in the data: ask for the block's successors.
            let ahead = (j0 + GATHER_AHEAD).min(pts.len());
            for &i in &pts[ahead..(ahead + BLOCK).min(pts.len())] {
                kernel.prefetch(i.index());
            }
            kernel.ln_f_points(&pts[j0..j0 + block.len()], ln_pi, theta, w);
            for (b, o) in block.iter_mut().enumerate() {
                f(j0 + b, w[b], w[BLOCK + b], o, rng)?;
            }
        }
        Ok(())
    })
}

/// One point of a launch's final scan from its side weights `w0, w1`: the log side
/// probabilities `∝ γ w` and, with `draw`, a side drawn from them (otherwise 0). Shared by
/// the threaded and the data-parallel sampler. Cost: one exponential and one `ln_1p`.
pub(crate) fn final_side(
    w0: f64,
    w1: f64,
    gamma: f64,
    draw: bool,
    rng: &mut NrmmRng,
) -> Result<([f64; 2], u8)> {
    let (w0, w1) = (gamma * w0, gamma * w1);
    if draw {
        let (side, ln_b) = draw_side(w0, w1, rng)?;
        Ok((ln_b, side))
    } else {
        Ok((side_log_probs(w0, w1)?, 0))
    }
}

/// DPMM.jl's `maybeSplit` on a cluster's history of sub-cluster log marginal likelihoods
/// ([`Splittable::Code`]): 4 values whose mean minus the latest is below 1e-2.
fn code_splittable(hist: &[f64]) -> bool {
    hist.len() == HISTORY
        && hist.iter().sum::<f64>() / HISTORY as f64 - hist[HISTORY - 1] < SPLITTABLE_TOL
}

/// `ln m(X_ℓ) + ln m(X_r)` of the sub-clusters of the points `members` (sorted) under the
/// sub-labels `sub`. Cost: two batch statistics over `members`.
fn sub_ln_marginals<K: ParametricKernel>(kernel: &K, members: &[usize], sub: &[u8]) -> f64 {
    let (l, r): (Vec<usize>, Vec<usize>) = members.iter().partition(|&&i| sub[i] == 0);
    kernel.ln_marginal(&kernel.stat_of(&l)) + kernel.ln_marginal(&kernel.stat_of(&r))
}

/// A proposal that could not be made (a singleton to split, a single cluster to merge, a
/// launch that left a side empty): counted as proposed and rejected.
const REJECTED: StepInfo = StepInfo {
    proposed: 1,
    accepted: 0,
    ln_accept_sum: f64::NEG_INFINITY,
};

/// One cluster as the choice of a merge partner sees it: its size, statistic and
/// `h = ln κ(n, u) + ln m(X_c)`.
pub(crate) struct Candidate<'a, S> {
    pub(crate) n: usize,
    pub(crate) stat: &'a S,
    pub(crate) h: f64,
}

/// The candidates of every cluster of `partition`, in slot order.
fn candidates<'a, K: ParametricKernel, P: NrmPrior>(
    partition: &'a Partition<K>,
    prior: &P,
    slots: &[Slot],
) -> Vec<Candidate<'a, K::Stat>> {
    slots
        .iter()
        .map(|&s| {
            let c = partition.cluster(s).expect("live");
            Candidate {
                n: c.size(),
                stat: c.stat(),
                h: prior.ln_kappa(c.size()) + c.ln_marginal(),
            }
        })
        .collect()
}

/// `ln p(y | x)` for every cluster `y` of `clusters` (`-∞` at `x`): the probability that a
/// merge proposal whose first cluster is `x` takes `y` as its partner. Half of it is
/// uniform over the other clusters, half `∝ exp(r(x, y))`, with
/// `r(x, y) = h(x ∪ y) - h(x) - h(y)` the log target ratio of merging them, so that merges
/// are proposed where the target favours them: with many clusters a uniform partner is
/// almost never another piece of the same cluster (10,000 points in 119 clusters, cut into
/// 300 pieces early on, had about one such proposal in twenty sweeps), while the uniform half
/// keeps every pair proposable. A function of the clusters alone, so the reverse of a split
/// evaluates it on the split state. Cost: `K - 1` marginals of a union.
pub(crate) fn partner_ln_probs<K: ParametricKernel, P: NrmPrior>(
    kernel: &K,
    prior: &P,
    clusters: &[Candidate<'_, K::Stat>],
    x: usize,
) -> Vec<f64> {
    let k = clusters.len();
    let cx = &clusters[x];
    let r: Vec<f64> = clusters
        .iter()
        .enumerate()
        .map(|(y, cy)| {
            if y == x {
                f64::NEG_INFINITY
            } else {
                prior.ln_kappa(cx.n + cy.n) + kernel.ln_marginal_pair(cx.stat, cy.stat)
                    - cx.h
                    - cy.h
            }
        })
        .collect();
    let norm = log_sum_exp(&r);
    let ln_uniform = -(((k - 1) as f64).ln()) - std::f64::consts::LN_2;
    r.iter()
        .map(|&v| {
            if v == f64::NEG_INFINITY {
                f64::NEG_INFINITY
            } else {
                ln_add_exp(ln_uniform, v - norm - std::f64::consts::LN_2)
            }
        })
        .collect()
}

/// A merge proposal's ordered pair of clusters: the first uniformly, its partner by
/// [`partner_ln_probs`]; returns them and the partner's log probabilities.
fn pick_pair<K: ParametricKernel, P: NrmPrior>(
    kernel: &K,
    prior: &P,
    clusters: &[Candidate<'_, K::Stat>],
    chooser: &mut dyn Chooser,
) -> Result<(usize, usize, Vec<f64>)> {
    let x = chooser.choose_uniform(clusters.len());
    let ln_p = partner_ln_probs(kernel, prior, clusters, x);
    let (y, _) = chooser.choose_log(&ln_p)?;
    Ok((x, y, ln_p))
}

/// `ln P(x, y)`, `ln P(y, x)` of the split state in which the cluster at `slot` of
/// `partition` is replaced by the two clusters `a` and `b` (the reverse merge's ordered
/// pairs, [`pick_pair`], `K + 1` clusters). Cost: `2K` marginals of a union.
fn split_pair_ln_probs<K: ParametricKernel, P: NrmPrior>(
    kernel: &K,
    prior: &P,
    partition: &Partition<K>,
    slot: Slot,
    a: Candidate<'_, K::Stat>,
    b: Candidate<'_, K::Stat>,
) -> (f64, f64) {
    let others: Vec<Slot> = partition.slots().filter(|&s| s != slot).collect();
    let mut clusters = candidates(partition, prior, &others);
    clusters.push(a);
    clusters.push(b);
    let k1 = clusters.len();
    let (ia, ib) = (k1 - 2, k1 - 1);
    let ln_first = -(k1 as f64).ln();
    let ab = ln_first + partner_ln_probs(kernel, prior, &clusters, ia)[ib];
    let ba = ln_first + partner_ln_probs(kernel, prior, &clusters, ib)[ia];
    (ab, ba)
}

/// The split of the cluster at `slot` (its points `members`, in order) into the points `j`
/// with `in_b(j)` and the rest, accepted by Metropolis-Hastings with forward log probability
/// `ln_q_fwd`, reverse `ln_q_rev(a, b)` of the two sides and the target ratio from
/// `h_s = ln κ(n) + ln m` of the whole cluster and `ln_v`, what a Gibbs-type prior gains
/// with the block added ([`ln_v_gain`], `0` for the DP and NGGP); returns the decision and,
/// when accepted, the split to make. Both proposal families end here. Cost: two `stat_of`
/// and two marginals.
#[allow(clippy::too_many_arguments)]
fn split_by_sides<K: ParametricKernel, P: NrmPrior>(
    kernel: &K,
    prior: &P,
    slot: Slot,
    members: &[u32],
    in_b: impl Fn(usize) -> bool + Sync,
    ln_q_fwd: f64,
    ln_v: f64,
    ln_q_rev: impl Fn(Candidate<'_, K::Stat>, Candidate<'_, K::Stat>) -> f64,
    h_s: f64,
    chooser: &mut dyn Chooser,
) -> Result<(StepInfo, Option<Change>)> {
    // Each chunk of the members counts its side-b points, then writes both sides into its own
    // ranges of the two lists, all in parallel: the lists one scan would give, at their sizes
    // (on a million points, lists grown by doubling would hold up to twice their length),
    // without a serial pass over the points or a transient copy of them.
    let counts: Vec<usize> = members
        .par_chunks(SCAN_CHUNK)
        .enumerate()
        .map(|(c, chunk)| {
            (0..chunk.len())
                .filter(|&j| in_b(c * SCAN_CHUNK + j))
                .count()
        })
        .collect();
    let n_b: usize = counts.iter().sum();
    let (mut a, mut b) = (vec![0u32; members.len() - n_b], vec![0u32; n_b]);
    let mut ranges = Vec::with_capacity(counts.len());
    let (mut rest_a, mut rest_b) = (a.as_mut_slice(), b.as_mut_slice());
    for (chunk, &nb) in members.chunks(SCAN_CHUNK).zip(&counts) {
        let (ra, ta) = std::mem::take(&mut rest_a).split_at_mut(chunk.len() - nb);
        let (rb, tb) = std::mem::take(&mut rest_b).split_at_mut(nb);
        ranges.push((ra, rb));
        (rest_a, rest_b) = (ta, tb);
    }
    members
        .par_chunks(SCAN_CHUNK)
        .zip(ranges)
        .enumerate()
        .for_each(|(c, (chunk, (ra, rb)))| {
            let (mut ia, mut ib) = (ra.iter_mut(), rb.iter_mut());
            for (j, &i) in chunk.iter().enumerate() {
                let slot = if in_b(c * SCAN_CHUNK + j) {
                    ib.next()
                } else {
                    ia.next()
                };
                *slot.expect("the chunk's count") = i;
            }
        });
    let (sa, sb) = rayon::join(|| batch_stat(kernel, &a), || batch_stat(kernel, &b));
    let h = |n: usize, ln_m: f64| prior.ln_kappa(n) + ln_m;
    let (ha, hb) = (
        h(a.len(), kernel.ln_marginal(&sa)),
        h(b.len(), kernel.ln_marginal(&sb)),
    );
    let side = |points: &[u32], stat, h| Candidate {
        n: points.len(),
        stat,
        h,
    };
    let proposal = Proposal {
        ln_q_fwd,
        ln_q_rev: ln_q_rev(side(&a, &sa, ha), side(&b, &sb, hb)),
        ln_target_ratio: ha + hb - h_s + ln_v,
    };
    let (accepted, info) = metropolis_hastings(&proposal, chooser);
    Ok((info, accepted.then_some(Change::Split(slot, b))))
}

/// The Metropolis-Hastings decision with the uniform `u` drawn by the caller: accept when
/// `ln A > ln u` (probability `min(1, A)`; a NaN ratio rejects, MATH P12). The merges draw
/// `u` before their expensive part so that they can stop once an upper bound of `ln A`
/// falls to `ln u`; the recorded `min(0, ln A)` is then that bound.
fn decide(ln_a: f64, ln_u: f64) -> StepInfo {
    StepInfo::proposal(ln_a > ln_u, ln_a)
}

/// `ln [Π_j b_j(side_j) + Π_j b_j(1 - side_j)]` from `((ln b_j(0), ln b_j(1)), side_j)`,
/// summed in index order as the points are added ([`SideProb::add`]).
#[derive(Clone, Copy, Debug, Default)]
struct SideProb {
    /// `Σ_j ln b_j(side_j)`.
    same: f64,
    /// `Σ_j ln b_j(1 - side_j)`.
    swapped: f64,
}

impl SideProb {
    /// Adds the next point: its log side probabilities and its side.
    #[inline]
    fn add(&mut self, ln_b: &[f64; 2], side: u8) {
        self.same += ln_b[side as usize];
        self.swapped += ln_b[1 - side as usize];
    }

    /// `ln q` of the points added so far.
    fn ln(&self) -> f64 {
        ln_add_exp(self.same, self.swapped)
    }
}

/// The points of the cluster at `slot` (and of the cluster at `other`, if given) in
/// increasing order, with 0 for a point of `slot` and 1 for one of `other` (no sides without
/// `other`: an empty list). The points are in 32 bits, as the partition holds them (a set
/// of a million points takes 4 MB, not 8, while a proposal on it runs). A large set is
/// collected by one scan of the labels (O(n)), a small one by sorting its members
/// (O(m log m)); both give the same result.
fn sorted_members<K: ParametricKernel>(
    partition: &Partition<K>,
    slot: Slot,
    other: Option<Slot>,
) -> (Vec<u32>, Vec<u8>) {
    let size = |s: Slot| partition.cluster(s).expect("live").size();
    let m = size(slot) + other.map_or(0, size);
    let mut points = Vec::with_capacity(m);
    let mut sides = Vec::with_capacity(if other.is_some() { m } else { 0 });
    if m * 16 >= partition.n() {
        // Chunks of the labels scanned in parallel and concatenated in chunk order: the
        // same list as one scan, without a serial O(n) pass per proposal. Each chunk keeps
        // its points and sides as two lists (5 bytes a point; pairs would take 8).
        let n = partition.n();
        let parts: Vec<(Vec<u32>, Vec<u8>)> = (0..n.div_ceil(SCAN_CHUNK))
            .into_par_iter()
            .map(|c| {
                let (mut points, mut sides) = (Vec::new(), Vec::new());
                for i in c * SCAN_CHUNK..((c + 1) * SCAN_CHUNK).min(n) {
                    let s = partition.slot_of(i);
                    if s == slot || Some(s) == other {
                        points.push(i as u32);
                        if other.is_some() {
                            sides.push(u8::from(s != slot));
                        }
                    }
                }
                (points, sides)
            })
            .collect();
        for (p, v) in parts {
            points.extend_from_slice(&p);
            sides.extend_from_slice(&v);
        }
    } else {
        let mut tagged: Vec<(u32, u8)> = Vec::with_capacity(m);
        let members = |s: Slot| partition.cluster(s).expect("live").members();
        tagged.extend(members(slot).iter().map(|&i| (i, 0u8)));
        if let Some(o) = other {
            tagged.extend(members(o).iter().map(|&i| (i, 1u8)));
        }
        tagged.par_sort_unstable();
        for (i, v) in tagged {
            points.push(i);
            if other.is_some() {
                sides.push(v);
            }
        }
    }
    (points, sides)
}

/// The faithful variant's checkpoint state.
#[derive(serde::Serialize, serde::Deserialize)]
struct DpmmAux {
    sub_labels: Vec<u8>,
    history: Vec<(usize, Vec<f64>)>,
}

impl<K: ParametricKernel, P: NrmPrior> Move<K, P> for SubCluster<K> {
    fn name(&self) -> &'static str {
        match self.variant {
            Variant::Exact(_) => "subcluster",
            Variant::Dpmm(_) => "subcluster-dpmm",
        }
    }

    fn step(
        &mut self,
        kernel: &K,
        state: &mut State<K, P>,
        chooser: &mut dyn Chooser,
    ) -> Result<StepInfo> {
        match self.variant {
            Variant::Exact(opts) => {
                let rng = chain_rng(chooser, "subcluster")?;
                self.restricted_gibbs(kernel, state, rng)?;
                let seeds: Vec<u64> = (0..opts.proposals).map(|_| rng.next_u64()).collect();
                self.proposals(kernel, state, &seeds, opts.launch_iters)
            }
            Variant::Dpmm(opts) => self.dpmm_step(kernel, state, chooser, opts),
        }
    }

    fn save_aux(&self) -> Result<Option<serde_json::Value>> {
        match self.variant {
            Variant::Exact(_) => Ok(None),
            Variant::Dpmm(_) => {
                if self.sub.is_empty() {
                    return Ok(None);
                }
                let aux = DpmmAux {
                    sub_labels: self.sub.clone(),
                    history: self.history.iter().map(|(k, v)| (*k, v.clone())).collect(),
                };
                serde_json::to_value(aux)
                    .map(Some)
                    .map_err(|e| Error::Usage(format!("checkpoint: sub-cluster state: {e}")))
            }
        }
    }

    fn restore_aux(
        &mut self,
        _kernel: &K,
        state: &State<K, P>,
        aux: Option<serde_json::Value>,
    ) -> Result<()> {
        match (self.variant, aux) {
            (_, None) => {
                self.sub.clear();
                self.last_key.clear();
                self.history.clear();
                Ok(())
            }
            (Variant::Exact(_), Some(_)) => Err(Error::Usage(
                "checkpoint: it holds a state for move `subcluster`, which keeps none".into(),
            )),
            (Variant::Dpmm(_), Some(v)) => {
                let aux: DpmmAux = serde_json::from_value(v).map_err(|e| {
                    Error::Usage(format!("checkpoint: sub-cluster state is malformed: {e}"))
                })?;
                let n = state.partition.n();
                if aux.sub_labels.len() != n || aux.sub_labels.iter().any(|&s| s > 1) {
                    return Err(Error::Usage(format!(
                        "checkpoint: {} sub-labels (each 0 or 1 expected) for {n} points",
                        aux.sub_labels.len()
                    )));
                }
                self.sub = aux.sub_labels;
                self.history = aux.history.into_iter().collect();
                self.last_key.clear();
                self.remember(&state.partition);
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_sample_below_two_is_an_error() {
        let mv = SubCluster::<crate::kernel::NormalWishart>::new(SubClusterOptions::default());
        assert!(mv.clone().with_launch_sample(1).is_err());
        assert_eq!(mv.with_launch_sample(2).unwrap().launch_sample, 2);
    }

    #[test]
    fn side_probability_counts_both_orientations() {
        let p = |a: f64, b: f64| [a.ln(), b.ln()];
        let side_prob = |points: &[([f64; 2], u8)]| {
            let mut q = SideProb::default();
            for (ln_b, side) in points {
                q.add(ln_b, *side);
            }
            q.ln()
        };
        let probs = [(p(0.3, 0.7), 0u8), (p(0.9, 0.1), 1u8)];
        let got = side_prob(&probs).exp();
        assert!((got - (0.3 * 0.1 + 0.7 * 0.9)).abs() < 1e-15);
        let flipped = [(p(0.3, 0.7), 1u8), (p(0.9, 0.1), 0u8)];
        assert_eq!(side_prob(&probs), side_prob(&flipped));
    }
}
