//! Jain & Neal (2004) conjugate split-merge with restricted Gibbs launch scans
//! (MATH §6.2), generalised to NRMs given `u`.

use super::sams::{collect_rest, decide_merge, draw_anchors};
use super::two_groups::{fill_join_table, TwoGroups};
use super::{ln_v_gain, metropolis_hastings, Chooser, Move, Proposal, State, StepInfo};
use crate::error::Result;
use crate::kernel::ConjugateKernel;
use crate::prior::NrmPrior;

/// The Jain-Neal split-merge move.
///
/// Anchors `i ≠ j` are uniform; the other members `S` of their clusters are placed at random
/// in the groups of `i` and `j` and refined by `launch_scans` restricted Gibbs scans, each in
/// a fresh uniformly random order. A split (`i`, `j` together) then draws one more restricted
/// scan, whose choice probabilities form `q`; a merge replays one restricted scan from the
/// launch state forced to the actual clusters, again in a random order, so both directions
/// use the same distribution of scan orders (the reference code does not, MATH §6.2).
///
/// In a restricted scan a point's own group is weighed in place when the kernel allows it
/// ([`ConjugateKernel::ln_predictive_member`]), so only points that change group update the
/// groups' statistics; the join weights come from one table per proposal. The launch
/// groups' statistics are made in one batch each ([`ConjugateKernel::stat_of`]: for
/// Normal-Wishart one factorisation instead of a rank-1 update per point).
/// Cost: O((launch_scans + 1) |S|) predictive evaluations per proposal, `|S|` prior
/// evaluations, and no allocation beyond the two anchor statistics once the buffers have
/// grown.
#[derive(Clone, Debug)]
pub struct JainNeal {
    launch_scans: usize,
    rest: Vec<usize>,
    group: Vec<usize>,
    order: Vec<usize>,
    ln_join: Vec<f64>,
    actual: Vec<usize>,
    moved: Vec<usize>,
    /// The members of each group at launch, anchor first.
    launch: [Vec<usize>; 2],
}

impl JainNeal {
    /// A Jain-Neal move with `launch_scans` intermediate restricted scans (the reference
    /// uses 10).
    pub fn new(launch_scans: usize) -> Self {
        JainNeal {
            launch_scans,
            rest: Vec::new(),
            group: Vec::new(),
            order: Vec::new(),
            ln_join: Vec::new(),
            actual: Vec::new(),
            moved: Vec::new(),
            launch: [Vec::new(), Vec::new()],
        }
    }

    /// One restricted Gibbs scan over `rest` in a random order. With `forced`, each point is
    /// sent to its entry in `self.actual` instead of drawn. Returns the log probability of the
    /// scan's choices.
    fn restricted_scan<K: ConjugateKernel>(
        &mut self,
        kernel: &K,
        groups: &mut TwoGroups<K::Stat>,
        forced: bool,
        chooser: &mut dyn Chooser,
    ) -> Result<f64> {
        chooser.permutation(self.rest.len(), &mut self.order);
        let mut ln_q = 0.0;
        for t in 0..self.order.len() {
            let idx = self.order[t];
            let k = self.rest[idx];
            let to = forced.then(|| self.actual[idx]);
            let (g, ln_p) =
                groups.reallocate(kernel, &self.ln_join, k, self.group[idx], to, chooser)?;
            self.group[idx] = g;
            ln_q += ln_p;
        }
        Ok(ln_q)
    }
}

impl<K: ConjugateKernel, P: NrmPrior> Move<K, P> for JainNeal {
    fn name(&self) -> &'static str {
        "jain-neal"
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
        let prior = &state.prior;
        fill_join_table(prior, self.rest.len() + 1, &mut self.ln_join);
        self.group.clear();
        self.launch[0].clear();
        self.launch[1].clear();
        self.launch[0].push(i);
        self.launch[1].push(j);
        for t in 0..self.rest.len() {
            let g = chooser.choose_uniform(2);
            self.launch[g].push(self.rest[t]);
            self.group.push(g);
        }
        let mut groups = TwoGroups::of_members(kernel, &self.launch);
        for _ in 0..self.launch_scans {
            self.restricted_scan(kernel, &mut groups, false, chooser)?;
        }
        if si == sj {
            let ln_q = self.restricted_scan(kernel, &mut groups, false, chooser)?;
            let proposal = Proposal {
                ln_q_fwd: ln_q,
                ln_q_rev: 0.0,
                ln_target_ratio: groups.ln_h(kernel, prior)
                    - (prior.ln_kappa(ci.size()) + ci.ln_marginal())
                    + ln_v_gain(prior, n, part.n_clusters()),
            };
            let (accepted, info) = metropolis_hastings(&proposal, chooser);
            if accepted {
                self.moved.clear();
                self.moved.push(j);
                self.moved.extend(
                    self.rest
                        .iter()
                        .zip(&self.group)
                        .filter(|(_, &g)| g == 1)
                        .map(|(&k, _)| k),
                );
                state.partition.split_off(kernel, si, &self.moved);
            }
            Ok(info)
        } else {
            self.actual.clear();
            self.actual.extend(
                self.rest
                    .iter()
                    .map(|&k| usize::from(part.slot_of(k) == sj)),
            );
            // The forced scan draws its order, so it runs before the decision: only its
            // result is left to the merge's bound.
            let ln_q = self.restricted_scan(kernel, &mut groups, true, chooser)?;
            let cj = part.cluster(sj).expect("live");
            let ln_h_split = prior.ln_kappa(ci.size())
                + ci.ln_marginal()
                + prior.ln_kappa(cj.size())
                + cj.ln_marginal();
            let (accepted, info) = decide_merge(
                kernel,
                state,
                si,
                sj,
                &mut || Ok((ln_h_split, ln_q)),
                chooser,
            )?;
            if accepted {
                state.partition.merge_clusters(kernel, si, sj);
            }
            Ok(info)
        }
    }
}
