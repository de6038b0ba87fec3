//! The exact sub-cluster sampler, data-parallel over ranks (MATH §6.4; see
//! [`crate::sampler::dpmm::SubCluster`] for the moves and their exactness).
//!
//! Every rank holds a contiguous range of the points (a [`Layout`]) and their labels, and the
//! same copy of everything else: the cluster table (moments and statistics), the prior and
//! the chain's random stream. Global quantities are functions of reductions that every rank
//! receives bit for bit, so every rank computes the same draws from the same stream; rank 0's
//! accept/reject decisions are broadcast all the same, so that no rank can drift from it.
//!
//! **Why the chain does not depend on the number of ranks.**
//! - Per-point draws take their uniform from a stream keyed by the point's position: the
//!   position `p` (a global index, or a rank within the set being launched) reads word
//!   `2 (p mod CHUNK)` of the stream `SeedPlan::new(seed).task(0, 0, p / CHUNK)`, whichever
//!   rank or thread evaluates it (the threaded engine's streams, entered at any point).
//! - Every sum over points (moments, log probabilities) is formed block by block: the points
//!   of one reduction block of `block` consecutive global indices are added in index order
//!   from an empty accumulator, and the blocks' accumulators are added to a running total in
//!   block order, across ranks by [`fold_in_rank_order`]. Rank ranges are whole blocks, so
//!   the operations are those of one process.
//! - Everything else (jumps, parameters, split/merge choices and ratios) is drawn from the
//!   chain's stream in the same order on every rank.
//!
//! The chain does depend on the block size, and it is not the threaded sampler's chain: that
//! one keeps incrementally updated statistics in an order a partition's history decides,
//! which cannot be split across processes.
//!
//! **One sweep**: the restricted Gibbs pass (jumps and parameters from the cluster moments,
//! labels drawn in parallel, then one independence Metropolis-Hastings step per block of
//! [`CHUNK`] points in global order, as the threaded sampler's), the moments rebuilt by one
//! reduction, then [`SubClusterOptions::proposals`] launch-family split/merge proposals,
//! then (optionally) the prior's hyperparameters given the cluster sizes. The
//! allocation-family proposals of the threaded sampler are not made: they allocate points one
//! after another, a sequential pass that does not distribute; the launch family alone leaves
//! the posterior invariant (each proposal pair is in detailed balance for every launch). A
//! merge's first cluster is uniform and its partner drawn as the threaded sampler draws it
//! (half uniformly, half in proportion to the merge's target ratio), from the replicated
//! cluster table, so every rank draws the same pair; a split's reverse weighs that law on
//! the split state. Cost: `O(K)` marginals of a union per proposal, on every rank. The
//! Pitman-Yor and MFM priors enter as in the threaded sampler: the jumps given the partition
//! from the urn's join weights, and `ln V(n, K±1) - ln V(n, K)` in the split/merge ratios.
//!
//! **Communication per sweep** with `K` clusters, moments of `m` bytes (`8(1 + d + d²)` for
//! Normal-Wishart), `R` ranks: the restricted pass folds `K` counts and then `K` moments
//! through the ranks (`(R - 1)` messages each, plus a broadcast); a split proposal broadcasts
//! two anchors' moments and folds two moments per launch iteration and two moments plus two
//! sums for the final scan; a merge the same without drawing.

use rand::Rng;
use rayon::prelude::*;

use super::comm::Comm;
use super::layout::Layout;
use super::wire::{all_gather_u64, fold_in_rank_order, put_f64s, put_u64, Reader};
use crate::error::{Error, Result};
use crate::kernel::NwMoments;
use crate::kernel::ParametricKernel;
use crate::kernel::{ln_gamma_variate, normal_wishart::NormalWishart, ConjugateKernel};
use crate::math::{ln_add_exp, sample_log_weights};
use crate::prior::NrmPrior;
use crate::rng::{uniform_index, uniform_open01, NrmmRng};
use crate::sampler::dpmm::engine::{
    draw_side, for_each_point_from, jump_shape, label_pass_from, side_weights, CHUNK,
};
use crate::sampler::dpmm::subcluster::{
    final_side, partner_ln_probs, sample_size, Candidate, LARGE_SET, SHARPEN,
};
use crate::sampler::dpmm::{SubClusterOptions, LAUNCH_SAMPLE};
use crate::sampler::ln_v_gain;

/// A kernel whose moments can travel between ranks and be turned into statistics.
pub trait ShardKernel: ParametricKernel + Sync {
    /// Appends `m` to `out`.
    fn encode_moments(&self, m: &Self::Moments, out: &mut Vec<u8>);
    /// Reads moments written by [`ShardKernel::encode_moments`].
    fn decode_moments(&self, r: &mut Reader<'_>) -> Result<Self::Moments>;
    /// The statistic of a set given its moments, a deterministic function of them.
    fn stat_of_moments(&self, m: &Self::Moments) -> Self::Stat;
}

impl ShardKernel for NormalWishart {
    fn encode_moments(&self, m: &NwMoments, out: &mut Vec<u8>) {
        put_u64(out, m.len() as u64);
        put_f64s(out, m.raw());
    }

    fn decode_moments(&self, r: &mut Reader<'_>) -> Result<NwMoments> {
        let n = r.u64()? as usize;
        let d = self.dim();
        Ok(NwMoments::from_raw(n, r.f64s(d + d * d)?))
    }

    fn stat_of_moments(&self, m: &NwMoments) -> Self::Stat {
        NormalWishart::stat_of_moments(self, m)
    }
}

/// One rank's points: a kernel over them (local indices `0..n_local`) and where they sit in
/// the global numbering.
#[derive(Debug)]
pub struct Shard<K> {
    /// The kernel over this rank's points.
    pub kernel: K,
    /// The layout of all ranks.
    pub layout: Layout,
    /// This rank.
    pub rank: usize,
}

impl<K: ConjugateKernel> Shard<K> {
    /// Global index of local point 0.
    pub fn offset(&self) -> usize {
        self.layout.starts[self.rank]
    }

    /// Number of local points.
    pub fn n_local(&self) -> usize {
        self.kernel.n_points()
    }
}

/// What one sweep did, for traces.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SweepInfo {
    /// Split/merge proposals made.
    pub proposed: usize,
    /// Of which accepted.
    pub accepted: usize,
}

/// The data-parallel exact sub-cluster sampler's state on one rank (see the module
/// documentation).
#[derive(Clone, Debug)]
pub struct DataParallel<K: ShardKernel, P: NrmPrior> {
    options: SubClusterOptions,
    launch_sample: usize,
    resample_hyper: bool,
    /// The prior (its hyperparameters move when resampled).
    pub prior: P,
    /// Labels of the local points: indices into the cluster table.
    labels: Vec<u32>,
    /// Moments of every cluster (same on every rank).
    moments: Vec<K::Moments>,
    /// Statistics of every cluster, from the moments.
    stats: Vec<K::Stat>,
    /// `counts[k][r]`: points of cluster `k` on rank `r`.
    counts: Vec<Vec<usize>>,
    /// The chain's stream (same on every rank).
    rng: NrmmRng,
}

/// The saved state of a [`DataParallel`] chain on one rank, apart from its labels.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    /// The chain's stream.
    pub rng: NrmmRng,
    /// The prior's hyperparameters.
    pub hyper: Vec<f64>,
}

impl<K: ShardKernel, P: NrmPrior> DataParallel<K, P> {
    /// A chain whose local points have `labels` (cluster indices `0..K`, every cluster
    /// non-empty over all ranks), stream `rng`; builds the cluster table by one reduction.
    /// Every rank must call it with its own labels and the same `rng`. Errors if a cluster
    /// is empty.
    pub fn new(
        comm: &dyn Comm,
        shard: &Shard<K>,
        prior: P,
        options: SubClusterOptions,
        labels: Vec<u32>,
        rng: NrmmRng,
    ) -> Result<Self> {
        if labels.len() != shard.n_local() {
            return Err(Error::DimensionMismatch(format!(
                "{} labels for {} local points",
                labels.len(),
                shard.n_local()
            )));
        }
        let local_k = labels.iter().map(|&l| l as u64 + 1).max().unwrap_or(0);
        let k = all_gather_u64(comm, &[local_k])?
            .into_iter()
            .max()
            .unwrap_or(0) as usize;
        let mut s = DataParallel {
            options,
            launch_sample: LAUNCH_SAMPLE,
            resample_hyper: false,
            prior,
            labels,
            moments: Vec::new(),
            stats: Vec::new(),
            counts: Vec::new(),
            rng,
        };
        s.rebuild(comm, shard, k)?;
        if let Some(j) = s
            .moments
            .iter()
            .position(|m| shard.kernel.moments_count(m) == 0)
        {
            return Err(Error::Usage(format!(
                "the initial labels leave cluster {j} of 0..{k} empty"
            )));
        }
        Ok(s)
    }

    /// Fits launches on at most `points` points of a set (see
    /// [`crate::sampler::dpmm::SubCluster::with_launch_sample`]). Errors if `points < 2`.
    pub fn with_launch_sample(mut self, points: usize) -> Result<Self> {
        self.launch_sample = sample_size("launch sample", points)?;
        Ok(self)
    }

    /// Resamples the prior's hyperparameters (given the cluster sizes) after every sweep.
    pub fn with_hyper_resampling(mut self, on: bool) -> Self {
        self.resample_hyper = on;
        self
    }

    /// Labels of the local points.
    pub fn labels(&self) -> &[u32] {
        &self.labels
    }

    /// Cluster sizes, in table order.
    pub fn sizes(&self) -> Vec<usize> {
        self.counts.iter().map(|c| c.iter().sum()).collect()
    }

    /// `ln p(X, Π | hyper)` as [`NrmPrior::ln_joint`] from the clusters' statistics.
    pub fn ln_joint(&self, kernel: &K) -> f64 {
        let ln_m: Vec<f64> = self.stats.iter().map(|s| kernel.ln_marginal(s)).collect();
        self.prior.ln_joint(&self.sizes(), &ln_m)
    }

    /// The chain's stream, for checkpoints.
    pub fn rng(&self) -> &NrmmRng {
        &self.rng
    }

    /// Rebuilds moments, statistics and per-rank counts of `k` clusters from the labels.
    fn rebuild(&mut self, comm: &dyn Comm, shard: &Shard<K>, k: usize) -> Result<()> {
        let kernel = &shard.kernel;
        let labels = &self.labels;
        let (moments, _) = reduce(comm, shard, None, k, 0, |i, m, _| {
            kernel.moments_add(&mut m[labels[i] as usize], i)
        })?;
        self.stats = moments.iter().map(|m| kernel.stat_of_moments(m)).collect();
        self.moments = moments;
        self.gather_counts(comm, shard, k)
    }

    /// `counts[k][r]` for every cluster from every rank's labels.
    fn gather_counts(&mut self, comm: &dyn Comm, shard: &Shard<K>, k: usize) -> Result<()> {
        let mut local = vec![0u64; k];
        for &l in &self.labels {
            local[l as usize] += 1;
        }
        let all = all_gather_u64(comm, &local)?;
        let size = shard.layout.starts.len() - 1;
        self.counts = (0..k)
            .map(|j| (0..size).map(|r| all[r * k + j] as usize).collect())
            .collect();
        Ok(())
    }

    /// One sweep (see the module documentation). Every rank calls it.
    pub fn sweep(&mut self, comm: &dyn Comm, shard: &Shard<K>) -> Result<SweepInfo> {
        self.restricted_gibbs(comm, shard)?;
        let mut info = SweepInfo::default();
        for _ in 0..self.options.proposals {
            info.proposed += 1;
            if self.split_merge(comm, shard)? {
                info.accepted += 1;
            }
        }
        if self.resample_hyper {
            let sizes = self.sizes();
            self.prior.resample_hyper(&sizes, &mut self.rng)?;
        }
        Ok(info)
    }

    /// The restricted Gibbs pass and the reduction that rebuilds the cluster table.
    fn restricted_gibbs(&mut self, comm: &dyn Comm, shard: &Shard<K>) -> Result<()> {
        let kernel = &shard.kernel;
        let k = self.moments.len();
        let sizes = self.sizes();
        let mut ln_w = Vec::with_capacity(k);
        for &n in &sizes {
            ln_w.push(ln_gamma_variate(
                jump_shape(&self.prior, n)?,
                &mut self.rng,
            )?);
        }
        let mut params = Vec::with_capacity(k);
        for m in &self.moments {
            let mut p = kernel.new_param();
            kernel.sample_moments(m, &mut self.rng, &mut p)?;
            params.push(p);
        }
        let seed = self.rng.next_u64();
        let mut drawn = vec![0u32; shard.n_local()];
        label_pass_from(
            kernel,
            seed,
            shard.offset() as u64,
            &ln_w,
            &params,
            &mut drawn,
            |_, z, out, _| {
                *out = z as u32;
                Ok(())
            },
        )?;
        // One independence Metropolis-Hastings step per block of CHUNK points in global
        // order, which keeps the block's draws unless a cluster would empty (the threaded
        // sampler's rule); the running counts pass through the ranks in order.
        let labels = &mut self.labels;
        let enc = |c: &Vec<u64>| {
            let mut out = Vec::with_capacity(8 * c.len());
            for &v in c {
                put_u64(&mut out, v);
            }
            out
        };
        let dec = |b: &[u8]| {
            let mut r = Reader::new(b);
            (0..b.len() / 8)
                .map(|_| r.u64())
                .collect::<Result<Vec<u64>>>()
        };
        let init: Vec<u64> = sizes.iter().map(|&n| n as u64).collect();
        fold_in_rank_order(
            comm,
            init,
            |mut counts| {
                for start in (0..labels.len()).step_by(CHUNK) {
                    let end = (start + CHUNK).min(labels.len());
                    for i in start..end {
                        counts[labels[i] as usize] -= 1;
                        counts[drawn[i] as usize] += 1;
                    }
                    if counts.contains(&0) {
                        for i in start..end {
                            counts[drawn[i] as usize] -= 1;
                            counts[labels[i] as usize] += 1;
                        }
                    } else {
                        labels[start..end].copy_from_slice(&drawn[start..end]);
                    }
                }
                Ok(counts)
            },
            enc,
            dec,
        )?;
        self.rebuild(comm, shard, k)
    }

    /// One launch-family split or merge proposal; returns whether it was accepted.
    fn split_merge(&mut self, comm: &dyn Comm, shard: &Shard<K>) -> Result<bool> {
        let kernel = &shard.kernel;
        let k = self.moments.len();
        let sizes = self.sizes();
        let prior = self.prior.clone();
        let h = |n: usize, s: &K::Stat| prior.ln_kappa(n) + kernel.ln_marginal(s);
        if uniform_index(&mut self.rng, 2) == 0 {
            let c = uniform_index(&mut self.rng, k);
            if sizes[c] < 2 {
                return Ok(false);
            }
            let members: Vec<u32> = local_members(&self.labels, c, None);
            let offsets = set_offsets(&self.counts[c], None);
            let launched = self.launch(comm, shard, &members, &offsets, true)?;
            // Side moments, the side count and the two orientations' log probabilities.
            let (m, sums) = reduce(comm, shard, Some(&members), 2, 2, |j, m, s| {
                let (p, v) = launched[j];
                kernel.moments_add(&mut m[v as usize], members[j] as usize);
                s[0] += p[v as usize];
                s[1] += p[1 - v as usize];
            })?;
            let n_b = kernel.moments_count(&m[1]);
            if n_b == 0 || n_b == sizes[c] {
                return Ok(false);
            }
            let ln_q = ln_add_exp(sums[0], sums[1]);
            let (sa, sb) = (kernel.stat_of_moments(&m[0]), kernel.stat_of_moments(&m[1]));
            let (ha, hb) = (h(sizes[c] - n_b, &sa), h(n_b, &sb));
            // The reverse merge's unordered pair on the split state of K + 1 clusters.
            let mut split: Vec<Candidate<'_, K::Stat>> = (0..k)
                .filter(|&j| j != c)
                .map(|j| Candidate {
                    n: sizes[j],
                    stat: &self.stats[j],
                    h: h(sizes[j], &self.stats[j]),
                })
                .collect();
            split.push(Candidate {
                n: sizes[c] - n_b,
                stat: &sa,
                h: ha,
            });
            split.push(Candidate {
                n: n_b,
                stat: &sb,
                h: hb,
            });
            let (ia, ib) = (k - 1, k);
            let ln_rev_pair = -((k + 1) as f64).ln()
                + ln_add_exp(
                    partner_ln_probs(kernel, &prior, &split, ia)[ib],
                    partner_ln_probs(kernel, &prior, &split, ib)[ia],
                );
            let n: usize = sizes.iter().sum();
            let ln_a =
                ha + hb - h(sizes[c], &self.stats[c]) + ln_v_gain(&prior, n, k) + ln_rev_pair
                    - (ln_q - (k as f64).ln());
            let ln_u = uniform_open01(&mut self.rng).ln();
            if !self.decide(comm, ln_a > ln_u)? {
                return Ok(false);
            }
            for (&i, l) in members.iter().zip(&launched) {
                if l.1 == 1 {
                    self.labels[i as usize] = k as u32;
                }
            }
            let [ma, mb]: [K::Moments; 2] = m.try_into().map_err(|_| bug())?;
            self.moments[c] = ma;
            self.moments.push(mb);
            self.stats[c] = sa;
            self.stats.push(sb);
            self.gather_counts(comm, shard, k + 1)?;
            Ok(true)
        } else {
            if k < 2 {
                return Ok(false);
            }
            // The first cluster uniform, its partner by the merge target (as the shared-memory
            // sampler's `partner_ln_probs`), the pair unordered.
            let clusters: Vec<Candidate<'_, K::Stat>> = (0..k)
                .map(|j| Candidate {
                    n: sizes[j],
                    stat: &self.stats[j],
                    h: h(sizes[j], &self.stats[j]),
                })
                .collect();
            let x = uniform_index(&mut self.rng, k);
            let ln_p = partner_ln_probs(kernel, &prior, &clusters, x);
            let y = sample_log_weights(&mut self.rng, &ln_p)?;
            let ln_pair = -(k as f64).ln()
                + ln_add_exp(ln_p[y], partner_ln_probs(kernel, &prior, &clusters, y)[x]);
            let (nx, ny) = (sizes[x], sizes[y]);
            let ln_target = prior.ln_kappa(nx + ny)
                + kernel.ln_marginal_pair(&self.stats[x], &self.stats[y])
                - clusters[x].h
                - clusters[y].h
                - ln_v_gain(&prior, sizes.iter().sum(), k - 1);
            let ln_rest = ln_target - ((k - 1) as f64).ln() - ln_pair;
            let ln_u = uniform_open01(&mut self.rng).ln();
            // ln q ≤ ln 2: a merge this bound already rejects skips its launch.
            if ln_rest + std::f64::consts::LN_2 <= ln_u {
                return Ok(false);
            }
            let members = local_members(&self.labels, x, Some(y));
            let offsets = set_offsets(&self.counts[x], Some(&self.counts[y]));
            let launched = self.launch(comm, shard, &members, &offsets, false)?;
            let labels = &self.labels;
            let (_, sums) = reduce(comm, shard, Some(&members), 0, 2, |j, _, s| {
                let v = usize::from(labels[members[j] as usize] as usize == y);
                s[0] += launched[j].0[v];
                s[1] += launched[j].0[1 - v];
            })?;
            let ln_a = ln_rest + ln_add_exp(sums[0], sums[1]);
            if !self.decide(comm, ln_a > ln_u)? {
                return Ok(false);
            }
            // y joins x, and the last cluster takes y's place in the table (so x moves to
            // y's place when it is the last).
            let last = k - 1;
            let target = if x == last { y } else { x };
            for l in self.labels.iter_mut() {
                let v = *l as usize;
                if v == x || v == y {
                    *l = target as u32;
                } else if v == last {
                    *l = y as u32;
                }
            }
            let my = self.moments.swap_remove(y);
            self.stats.swap_remove(y);
            let cy = self.counts.swap_remove(y);
            let x = target;
            kernel.moments_merge(&mut self.moments[x], &my);
            self.stats[x] = kernel.stat_of_moments(&self.moments[x]);
            for (a, b) in self.counts[x].iter_mut().zip(cy) {
                *a += b;
            }
            Ok(true)
        }
    }

    /// Rank 0's decision, given to every rank.
    fn decide(&self, comm: &dyn Comm, accept: bool) -> Result<bool> {
        if comm.size() == 1 {
            return Ok(accept);
        }
        let mut b = vec![u8::from(accept)];
        comm.broadcast(0, &mut b)?;
        Ok(b.first() == Some(&1))
    }

    /// The launch on the set whose local members are `members` (sorted local indices) and
    /// whose positions on rank `r` start at `offsets[r]` (`offsets[size]` = `|S|`): anchors,
    /// sub-cluster Gibbs iterations on all of `S` or a sample of it, then one scan of the local
    /// members giving each its log side probabilities and, with `draw`, a side.
    fn launch(
        &mut self,
        comm: &dyn Comm,
        shard: &Shard<K>,
        members: &[u32],
        offsets: &[usize],
        draw: bool,
    ) -> Result<Vec<([f64; 2], u8)>> {
        let kernel = &shard.kernel;
        let rank = shard.rank;
        let n_s = *offsets.last().expect("offsets");
        let iters = self.options.launch_iters;
        let a = 0.5 * self.prior.ln_kappa_new().exp();
        let first = uniform_index(&mut self.rng, n_s);
        let mut second = uniform_index(&mut self.rng, n_s - 1);
        if second >= first {
            second += 1;
        }
        let mut theta = [kernel.new_param(), kernel.new_param()];
        for (side, &p) in [first, second].iter().enumerate() {
            let owner = owner_of(offsets, p);
            let mut bytes = Vec::new();
            if owner == rank {
                let mut m = kernel.new_moments();
                kernel.moments_add(&mut m, members[p - offsets[rank]] as usize);
                kernel.encode_moments(&m, &mut bytes);
            }
            if comm.size() > 1 {
                comm.broadcast(owner, &mut bytes)?;
            }
            let m = kernel.decode_moments(&mut Reader::new(&bytes))?;
            kernel.sample_moments(&m, &mut self.rng, &mut theta[side])?;
        }
        let mut ln_pi = [0.0; 2];
        // The fitting scans run on a sorted uniform sample of S (with replacement) when S is
        // large: sorted so that each rank's entries are contiguous and in index order.
        let sample: Option<Vec<usize>> = (iters > 0 && n_s > self.launch_sample).then(|| {
            let mut v: Vec<usize> = (0..self.launch_sample)
                .map(|_| uniform_index(&mut self.rng, n_s))
                .collect();
            v.sort_unstable();
            v
        });
        let (lo, hi) = (offsets[rank], offsets[rank + 1]);
        // This rank's fit entries (as local member positions) and the global position of the
        // first one.
        let (fit, fit_first): (Vec<u32>, usize) = match &sample {
            Some(v) => {
                let a = v.partition_point(|&p| p < lo);
                let b = v.partition_point(|&p| p < hi);
                (v[a..b].iter().map(|&p| members[p - lo]).collect(), a)
            }
            None => (members.to_vec(), lo),
        };
        let mut sides = vec![0u8; fit.len()];
        for _ in 0..iters {
            let seed = self.rng.next_u64();
            let (lp, th) = (ln_pi, &theta);
            for_each_point_from(
                seed,
                fit_first as u64,
                &mut sides,
                || (),
                |j, o, _, rng| {
                    let (w0, w1) = side_weights(kernel, fit[j] as usize, &lp, th);
                    *o = draw_side(w0, w1, rng)?.0;
                    Ok(())
                },
            )?;
            let (m, _) = reduce(comm, shard, Some(&fit), 2, 0, |j, m, _| {
                kernel.moments_add(&mut m[sides[j] as usize], fit[j] as usize)
            })?;
            for side in 0..2 {
                let count = kernel.moments_count(&m[side]) as f64;
                ln_pi[side] = ln_gamma_variate(count + a, &mut self.rng)?;
                kernel.sample_moments(&m[side], &mut self.rng, &mut theta[side])?;
            }
        }
        let seed = if draw { self.rng.next_u64() } else { 0 };
        let mut out = vec![([0.0; 2], 0u8); members.len()];
        let (lp, th) = (ln_pi, &theta);
        // A large set's sides sharpened as the threaded sampler's (see its large-set
        // proposals): a function of |S| alone, so the same for a split and its merge.
        let gamma = if n_s > LARGE_SET { SHARPEN } else { 1.0 };
        for_each_point_from(
            seed,
            lo as u64,
            &mut out,
            || (),
            |j, o, _, rng| {
                let (w0, w1) = side_weights(kernel, members[j] as usize, &lp, th);
                *o = final_side(w0, w1, gamma, draw, rng)?;
                Ok(())
            },
        )?;
        Ok(out)
    }

    /// The state to save besides the labels.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            rng: self.rng.clone(),
            hyper: self.prior.hyper_values().iter().map(|(_, v)| *v).collect(),
        }
    }
}

fn bug() -> Error {
    Error::Numerical("a reduction returned the wrong number of groups".into())
}

/// Local points of cluster `a` (or `a` and `b`), in index order.
fn local_members(labels: &[u32], a: usize, b: Option<usize>) -> Vec<u32> {
    let (a, b) = (a as u32, b.map(|b| b as u32));
    (0..labels.len() as u32)
        .filter(|&i| labels[i as usize] == a || Some(labels[i as usize]) == b)
        .collect()
}

/// First position of every rank in a set with `counts[r]` (plus `extra[r]`) points on rank
/// `r`, and the set's size last.
fn set_offsets(counts: &[usize], extra: Option<&[usize]>) -> Vec<usize> {
    let mut out = vec![0];
    for (r, &c) in counts.iter().enumerate() {
        let e = extra.map_or(0, |x| x[r]);
        out.push(out[r] + c + e);
    }
    out
}

/// The rank whose positions contain `p`.
fn owner_of(offsets: &[usize], p: usize) -> usize {
    offsets.partition_point(|&o| o <= p) - 1
}

/// Moments of `n_groups` groups and `n_sums` sums over this rank's entries, folded over all
/// ranks: entry `j` is local point `entries[j]` (or `j` when `entries` is `None`; entries
/// sorted by point), and `add(j, moments, sums)` adds its contribution. Entries are
/// accumulated block by block of the layout's reduction block in entry order, blocks in
/// parallel, and the blocks' accumulators added to the running total in block order across
/// ranks ([`fold_in_rank_order`]): the result does not depend on the number of ranks or
/// threads. Cost: one `add` per entry, one moments merge per group and non-empty block.
fn reduce<K: ShardKernel>(
    comm: &dyn Comm,
    shard: &Shard<K>,
    entries: Option<&[u32]>,
    n_groups: usize,
    n_sums: usize,
    add: impl Fn(usize, &mut [K::Moments], &mut [f64]) + Sync,
) -> Result<(Vec<K::Moments>, Vec<f64>)> {
    let kernel = &shard.kernel;
    let block = shard.layout.block;
    let n_entries = entries.map_or(shard.n_local(), <[u32]>::len);
    let point = |j: usize| entries.map_or(j, |e| e[j] as usize);
    // Entry ranges of the non-empty blocks, in order.
    let mut ranges = Vec::new();
    let mut j = 0;
    while j < n_entries {
        let b = point(j) / block;
        let end = match entries {
            None => ((b + 1) * block).min(n_entries),
            Some(e) => j + e[j..].partition_point(|&p| (p as usize) / block == b),
        };
        ranges.push(j..end);
        j = end;
    }
    let empty = || -> (Vec<K::Moments>, Vec<f64>) {
        (
            (0..n_groups).map(|_| kernel.new_moments()).collect(),
            vec![0.0; n_sums],
        )
    };
    let partials: Vec<(Vec<K::Moments>, Vec<f64>)> = ranges
        .into_par_iter()
        .map(|r| {
            let (mut m, mut s) = empty();
            for j in r {
                add(j, &mut m, &mut s);
            }
            (m, s)
        })
        .collect();
    let encode = |acc: &(Vec<K::Moments>, Vec<f64>)| {
        let mut out = Vec::new();
        for m in &acc.0 {
            kernel.encode_moments(m, &mut out);
        }
        put_f64s(&mut out, &acc.1);
        out
    };
    let decode = |bytes: &[u8]| {
        let mut r = Reader::new(bytes);
        let m = (0..n_groups)
            .map(|_| kernel.decode_moments(&mut r))
            .collect::<Result<Vec<_>>>()?;
        Ok((m, r.f64s(n_sums)?))
    };
    fold_in_rank_order(
        comm,
        empty(),
        |mut acc| {
            for (m, s) in &partials {
                for (a, b) in acc.0.iter_mut().zip(m) {
                    kernel.moments_merge(a, b);
                }
                for (a, b) in acc.1.iter_mut().zip(s) {
                    *a += b;
                }
            }
            Ok(acc)
        },
        encode,
        decode,
    )
}

/// This rank's [`Shard`] for a Normal-Wishart model of all ranks' points with the
/// unit-equivariant default hyperparameters ([`crate::model::NwDefaults::Scaled`]): `ξ` the
/// mean and `Ψ` proportional to the covariance of the data of all ranks (two reductions,
/// centred in the second; the diagonal with a floor when the covariance is singular, as
/// [`crate::kernel::normal_wishart::NwHyper::scaled_from_data`]). Every rank calls it. Errors
/// if a rank holds no point or every column is constant.
pub fn normal_wishart_shard(
    comm: &dyn Comm,
    data: crate::data::DenseData,
    layout: Layout,
) -> Result<Shard<NormalWishart>> {
    use crate::kernel::normal_wishart::NwHyper;
    use crate::model::{scaled_nu_minus_d, scaled_share, SCALED_R};
    use std::sync::Arc;
    let rank = comm.rank();
    if let Some(r) = (0..comm.size()).find(|&r| layout.range(r).is_empty()) {
        return Err(Error::Usage(format!(
            "rank {r} holds no point: {} points in blocks of {} give fewer blocks than the {} \
             ranks; use fewer ranks or a smaller block",
            layout.n(),
            layout.block,
            comm.size()
        )));
    }
    let d = data.d();
    let identity: Vec<f64> = (0..d * d)
        .map(|k| if k % (d + 1) == 0 { 1.0 } else { 0.0 })
        .collect();
    let data = Arc::new(data);
    let n = layout.n() as f64;
    let mut xi = vec![0.0; d];
    // Pass 1 about the origin gives the mean; pass 2 about the mean the covariance.
    let mut cov = vec![0.0; d * d];
    for pass in 0..2 {
        let hyper = NwHyper::new(xi.clone(), identity.clone(), 1.0, d as f64 + 1.0)?;
        let shard = Shard {
            kernel: NormalWishart::new(data.clone(), hyper)?,
            layout: layout.clone(),
            rank,
        };
        let kernel = &shard.kernel;
        let (m, _) = reduce(comm, &shard, None, 1, 0, |i, m, _| {
            kernel.moments_add(&mut m[0], i)
        })?;
        let (sum, outer) = m[0].raw().split_at(d);
        if pass == 0 {
            xi = sum.iter().map(|s| s / n).collect();
        } else {
            for j in 0..d {
                for i in j..d {
                    let v = (outer[j * d + i] - sum[i] * sum[j] / n) / (n - 1.0);
                    cov[i * d + j] = v;
                    cov[j * d + i] = v;
                }
            }
        }
    }
    let nu = d as f64 + scaled_nu_minus_d(d);
    let factor = scaled_share(d) * (nu - d as f64 - 1.0);
    let scaled: Vec<f64> = cov.iter().map(|v| v * factor).collect();
    let hyper = match NwHyper::new(xi.clone(), scaled, SCALED_R, nu) {
        Ok(h) => h,
        Err(_) => {
            let top = (0..d).map(|a| cov[a * d + a]).fold(0.0, f64::max);
            if top <= 0.0 || !top.is_finite() {
                return Err(Error::Usage(
                    "every column of the data is constant: there is nothing to cluster".into(),
                ));
            }
            let diag: Vec<f64> = (0..d * d)
                .map(|k| {
                    if k % (d + 1) == 0 {
                        factor * cov[k].max(NwHyper::VARIANCE_FLOOR * top)
                    } else {
                        0.0
                    }
                })
                .collect();
            NwHyper::new(xi, diag, SCALED_R, nu)?
        }
    };
    Ok(Shard {
        kernel: NormalWishart::new(data, hyper)?,
        layout,
        rank,
    })
}
