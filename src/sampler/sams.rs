//! Dahl's sequentially-allocated merge-split move (SAMS; Dahl 2005, MATH §6.3).

use super::two_groups::{fill_join_table, TwoGroups};
use super::{ln_v_gain, metropolis_hastings, Chooser, Move, Proposal, State, StepInfo};
use crate::error::Result;
use crate::kernel::ConjugateKernel;
use crate::prior::NrmPrior;

/// Draws two distinct points uniformly; returns them ordered as drawn.
pub(crate) fn draw_anchors(n: usize, chooser: &mut dyn Chooser) -> (usize, usize) {
    let i = chooser.choose_uniform(n);
    let mut j = chooser.choose_uniform(n - 1);
    if j >= i {
        j += 1;
    }
    (i, j)
}

/// The members of the anchors' clusters other than the anchors `i` and `j`, in member-list
/// order (the cluster of `i` first): the points a split-merge proposal allocates.
pub(crate) fn collect_rest<K: ConjugateKernel>(
    part: &crate::partition::Partition<K>,
    i: usize,
    j: usize,
    rest: &mut Vec<usize>,
) {
    let (si, sj) = (part.slot_of(i), part.slot_of(j));
    rest.clear();
    let ci = part.cluster(si).expect("live");
    rest.extend(ci.member_indices().filter(|&k| k != i && k != j));
    if si != sj {
        let cj = part.cluster(sj).expect("live");
        rest.extend(cj.member_indices().filter(|&k| k != j));
    }
}

/// The merge half of a split-merge move: proposes joining the clusters at `si` and `sj`,
/// with `reverse` computing, on demand, the log weight of the two clusters as the proposal
/// made them and the log probability `ln q_rev` of the reverse split (it must make no
/// choice); `ln A = ln h(c_i ∪ c_j) - ln h_split + ln q_rev`. Returns the decision, which
/// the caller applies.
///
/// **Early rejection.** `q_rev ≤ 1`, so `ln A` is at most the target ratio, which the
/// clusters' own statistics give in O(d³) before any point is replayed; the decision is
/// drawn through [`Chooser::accept_within`] with that bound, and `reverse` (a replay of every
/// member of both clusters) runs only when the uniform does not already reject. A merge of
/// two clusters the posterior keeps apart, nearly every merge proposed at large `n`, then
/// costs O(d³) instead of `|c_i ∪ c_j|` predictives. The draws and decisions are those of
/// the plain accept step: the uniform is the same one, and the bound carries a slack of a
/// millionth of the log weights' size, so that rounding differences between the replayed
/// statistics and the clusters' own never let the bound fall below the ratio. A proposal
/// rejected by the bound records the bound in [`StepInfo::ln_accept_sum`].
pub(crate) fn decide_merge<K: ConjugateKernel, P: NrmPrior>(
    kernel: &K,
    state: &State<K, P>,
    si: crate::partition::Slot,
    sj: crate::partition::Slot,
    reverse: &mut dyn FnMut() -> Result<(f64, f64)>,
    chooser: &mut dyn Chooser,
) -> Result<(bool, StepInfo)> {
    let part = &state.partition;
    let (ci, cj) = (
        part.cluster(si).expect("live"),
        part.cluster(sj).expect("live"),
    );
    let ln_h_merged =
        state.prior.ln_kappa(ci.size() + cj.size()) + kernel.ln_marginal_pair(ci.stat(), cj.stat());
    let ln_h_split = state.prior.ln_kappa(ci.size())
        + ci.ln_marginal()
        + state.prior.ln_kappa(cj.size())
        + cj.ln_marginal();
    // A Gibbs-type prior's V(n, K-1) / V(n, K) for the block the merge removes.
    let ln_v = ln_v_gain(&state.prior, part.n(), part.n_clusters() - 1);
    let slack = 1e-9 + 1e-6 * (ln_h_merged.abs() + ln_h_split.abs());
    let bound = ln_h_merged - ln_h_split - ln_v + slack;
    let (accepted, ln_a) = chooser.accept_within(bound, &mut || {
        let (ln_h_groups, ln_q_rev) = reverse()?;
        let proposal = Proposal {
            ln_q_fwd: 0.0,
            ln_q_rev,
            ln_target_ratio: ln_h_merged - ln_h_groups - ln_v,
        };
        Ok(proposal.ln_accept_ratio())
    })?;
    Ok((
        accepted,
        StepInfo::proposal(accepted, ln_a.unwrap_or(bound)),
    ))
}

/// The SAMS move: anchors `i ≠ j` uniform. If they share a cluster `c`, propose splitting it
/// by allocating the other members, in a uniformly random order, to the group of `i` or `j`
/// with probability ∝ `κ_join(n_g) p(x_k | X_g)`; the proposal probability is the product of
/// those choices and `ln A = ln h(A) + ln h(B) - ln h(c) - ln q`. Otherwise propose merging
/// the two clusters, with `ln q` from replaying the allocation forced to the actual clusters
/// in a fresh random order: `ln A = ln h(c_i ∪ c_j) - ln h(c_i) - ln h(c_j) + ln q`.
///
/// Exact for the priors given `u`: `h(c) = κ(n_c, u) m(X_c)` and the `u`-constant cancels;
/// for a Gibbs-type prior the ratio gains `V(n, K±1) / V(n, K)` ([`ln_v_gain`]).
/// Cost: O(|c_i ∪ c_j|) predictive evaluations and additions to a statistic per proposal,
/// `|c_i ∪ c_j|` prior evaluations (one table of join weights), and no allocation beyond the
/// two anchor statistics once the buffers have grown.
#[derive(Clone, Debug, Default)]
pub struct Sams {
    rest: Vec<usize>,
    order: Vec<usize>,
    group: Vec<usize>,
    ln_join: Vec<f64>,
    moved: Vec<usize>,
}

impl Sams {
    /// A SAMS move.
    pub fn new() -> Self {
        Self::default()
    }
}

impl<K: ConjugateKernel, P: NrmPrior> Move<K, P> for Sams {
    fn name(&self) -> &'static str {
        "sams"
    }

    fn step(
        &mut self,
        kernel: &K,
        state: &mut State<K, P>,
        chooser: &mut dyn Chooser,
    ) -> Result<StepInfo> {
        let part = &state.partition;
        let n = part.n();
        if n < 2 {
            return Ok(StepInfo::default());
        }
        let (i, j) = draw_anchors(n, chooser);
        let (si, sj) = (part.slot_of(i), part.slot_of(j));
        let ci = part.cluster(si).expect("live");
        collect_rest(part, i, j, &mut self.rest);
        chooser.permutation(self.rest.len(), &mut self.order);
        let prior = &state.prior;
        if si != sj {
            // A merge: the reverse split replays the allocation forced to the actual
            // clusters, in the order drawn above, only if the bound does not already reject.
            let (rest, order, ln_join) = (&self.rest, &self.order, &mut self.ln_join);
            let mut reverse = || {
                fill_join_table(prior, rest.len() + 1, ln_join);
                let mut groups = TwoGroups::anchored(kernel, i, j);
                let mut ln_q = 0.0;
                for &t in order {
                    let k = rest[t];
                    ln_q += groups.place(kernel, ln_join, k, usize::from(part.slot_of(k) == sj));
                }
                Ok((groups.ln_h(kernel, prior), ln_q))
            };
            let (accepted, info) = decide_merge(kernel, state, si, sj, &mut reverse, chooser)?;
            if accepted {
                state.partition.merge_clusters(kernel, si, sj);
            }
            return Ok(info);
        }
        fill_join_table(prior, self.rest.len() + 1, &mut self.ln_join);
        let mut groups = TwoGroups::anchored(kernel, i, j);
        let mut ln_q = 0.0;
        self.group.clear();
        for t in 0..self.order.len() {
            let k = self.rest[self.order[t]];
            let (g, ln_p) = groups.allocate(kernel, &self.ln_join, k, None, chooser)?;
            self.group.push(g);
            ln_q += ln_p;
        }
        let ln_h_groups = groups.ln_h(kernel, prior);
        let ln_h_c = prior.ln_kappa(ci.size()) + ci.ln_marginal();
        let ln_v = ln_v_gain(prior, n, part.n_clusters());
        let proposal = Proposal {
            ln_q_fwd: ln_q,
            ln_q_rev: 0.0,
            ln_target_ratio: ln_h_groups - ln_h_c + ln_v,
        };
        let (accepted, info) = metropolis_hastings(&proposal, chooser);
        if accepted {
            self.moved.clear();
            self.moved.push(j);
            self.moved.extend(
                self.order
                    .iter()
                    .zip(&self.group)
                    .filter(|(_, &g)| g == 1)
                    .map(|(&t, _)| self.rest[t]),
            );
            state.partition.split_off(kernel, si, &self.moved);
        }
        Ok(info)
    }
}
