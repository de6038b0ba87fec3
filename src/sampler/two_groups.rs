//! Scratch state shared by the split-merge moves: two growing groups anchored at points `i`
//! and `j`, with the allocation probabilities of MATH §6.2-§6.3.

use super::Chooser;
use crate::error::Result;
use crate::kernel::ConjugateKernel;
use crate::prior::NrmPrior;

/// Fills `table` with `ln κ_join(n)` for `n = 0..=max_n` at the prior's current
/// hyperparameters, reusing its buffer.
///
/// A proposal's allocations look up the join weight of a group size for every point they
/// place (twice per point and scan); a table built once per proposal turns those `2·|S|·scans`
/// logarithms into `|S| + 3`. Cost: `max_n + 1` prior evaluations.
pub(crate) fn fill_join_table<P: NrmPrior>(prior: &P, max_n: usize, table: &mut Vec<f64>) {
    table.clear();
    table.extend((0..=max_n).map(|n| prior.ln_kappa_join(n)));
}

/// Two disjoint groups `A ∋ i` and `B ∋ j` with their statistics.
#[derive(Clone, Debug)]
pub(crate) struct TwoGroups<S> {
    pub(crate) stats: [S; 2],
    pub(crate) sizes: [usize; 2],
}

impl<S: Clone> TwoGroups<S> {
    /// `A = {i}`, `B = {j}`.
    pub(crate) fn anchored<K: ConjugateKernel<Stat = S>>(kernel: &K, i: usize, j: usize) -> Self {
        TwoGroups {
            stats: [kernel.stat_of(&[i]), kernel.stat_of(&[j])],
            sizes: [1, 1],
        }
    }

    /// The groups of the given members (`members[g]`, non-empty, its anchor first), each
    /// statistic made in one batch. Cost: one [`ConjugateKernel::stat_of`] per group.
    pub(crate) fn of_members<K: ConjugateKernel<Stat = S>>(
        kernel: &K,
        members: &[Vec<usize>; 2],
    ) -> Self {
        TwoGroups {
            stats: [kernel.stat_of(&members[0]), kernel.stat_of(&members[1])],
            sizes: [members[0].len(), members[1].len()],
        }
    }

    /// Removes `k` from group `g`.
    pub(crate) fn remove<K: ConjugateKernel<Stat = S>>(&mut self, kernel: &K, k: usize, g: usize) {
        kernel.remove(&mut self.stats[g], k);
        self.sizes[g] -= 1;
    }

    /// Allocates `k` (in neither group) to a group, with log weights
    /// `ln κ_join(n_g) + ln p(x_k | X_g)` (MATH §6.2 step 2; `ln_join` from
    /// [`fill_join_table`], long enough for both sizes): drawn from its conditional when
    /// `forced` is `None`, else set to `forced`. Returns the group and the log probability of
    /// that allocation.
    ///
    /// Both predictives come from one [`ConjugateKernel::ln_predictive_pair`], and the add
    /// reuses the chosen group's probe ([`ConjugateKernel::add_probed`]: for Normal-Wishart,
    /// no logarithm and no dependent square roots).
    pub(crate) fn allocate<K: ConjugateKernel<Stat = S>>(
        &mut self,
        kernel: &K,
        ln_join: &[f64],
        k: usize,
        forced: Option<usize>,
        chooser: &mut dyn Chooser,
    ) -> Result<(usize, f64)> {
        if let Some(g) = forced {
            return Ok((g, self.place(kernel, ln_join, k, g)));
        }
        let pair = kernel.ln_predictive_pair(k, &self.stats[0], &self.stats[1]);
        let ln_w = [0, 1].map(|g| ln_join[self.sizes[g]] + pair[g].0);
        let (g, ln_p) = chooser.choose_log(&ln_w)?;
        kernel.add_probed(&mut self.stats[g], k, &pair[g].1);
        self.sizes[g] += 1;
        Ok((g, ln_p))
    }

    /// [`TwoGroups::allocate`] forced to group `g`, which needs no chooser: the same
    /// statistics and log probability. Returns the log probability.
    pub(crate) fn place<K: ConjugateKernel<Stat = S>>(
        &mut self,
        kernel: &K,
        ln_join: &[f64],
        k: usize,
        g: usize,
    ) -> f64 {
        let pair = kernel.ln_predictive_pair(k, &self.stats[0], &self.stats[1]);
        let ln_w = [0, 1].map(|h| ln_join[self.sizes[h]] + pair[h].0);
        kernel.add_probed(&mut self.stats[g], k, &pair[g].1);
        self.sizes[g] += 1;
        ln_w[g] - crate::math::ln_add_exp(ln_w[0], ln_w[1])
    }

    /// Reallocates `k`, a member of group `g` other than its anchor, from its conditional
    /// given both groups without `k`: the same weights, draw and result as removing `k` and
    /// calling [`TwoGroups::allocate`].
    ///
    /// When the kernel can weigh `k`'s own group in place
    /// ([`ConjugateKernel::ln_predictive_member`]), `k` is only moved if the draw moves it, so
    /// a point that stays costs no statistic update, and both groups are weighed by one
    /// [`ConjugateKernel::ln_predictive_member_pair`]. Returns the group and the log
    /// probability of the allocation.
    pub(crate) fn reallocate<K: ConjugateKernel<Stat = S>>(
        &mut self,
        kernel: &K,
        ln_join: &[f64],
        k: usize,
        g: usize,
        forced: Option<usize>,
        chooser: &mut dyn Chooser,
    ) -> Result<(usize, f64)> {
        let other = 1 - g;
        let (own, (lp_other, probe)) =
            kernel.ln_predictive_member_pair(k, &self.stats[g], &self.stats[other]);
        let Some(own) = own else {
            self.remove(kernel, k, g);
            return self.allocate(kernel, ln_join, k, forced, chooser);
        };
        let mut ln_w = [0.0; 2];
        ln_w[g] = ln_join[self.sizes[g] - 1] + own;
        ln_w[other] = ln_join[self.sizes[other]] + lp_other;
        let (h, ln_p) = decide(ln_w, forced, chooser)?;
        if h != g {
            // The probe was taken against the other group, which the removal leaves as it is.
            self.remove(kernel, k, g);
            kernel.add_probed(&mut self.stats[h], k, &probe);
            self.sizes[h] += 1;
        }
        Ok((h, ln_p))
    }

    /// `Σ_g [ln κ(n_g) + ln m(X_g)]`, the log weight of the two groups as clusters.
    pub(crate) fn ln_h<K: ConjugateKernel<Stat = S>, P: NrmPrior>(
        &self,
        kernel: &K,
        prior: &P,
    ) -> f64 {
        (0..2)
            .map(|g| prior.ln_kappa(self.sizes[g]) + kernel.ln_marginal(&self.stats[g]))
            .sum()
    }
}

/// The group chosen from log weights `ln_w`, drawn by `chooser` or set to `forced`, with its
/// log probability.
fn decide(
    ln_w: [f64; 2],
    forced: Option<usize>,
    chooser: &mut dyn Chooser,
) -> Result<(usize, f64)> {
    match forced {
        Some(g) => Ok((g, ln_w[g] - crate::math::ln_add_exp(ln_w[0], ln_w[1]))),
        None => chooser.choose_log(&ln_w),
    }
}

#[cfg(test)]
mod tests {
    use crate::data::generate::{gaussian_mixture, partition_crp, NormalWishartSampler};
    use crate::kernel::{NormalWishart, NwHyper};
    use crate::partition::Partition;
    use crate::prior::Dp;
    use crate::rng::SeedPlan;
    use crate::sampler::{JainNeal, Move, RngChooser, Sams, State};
    use crate::simd::{with_level, Level};
    use std::sync::Arc;

    /// The labels and the bits of the log joint after each of `steps` rounds of one SAMS and
    /// one Jain-Neal proposal from one cluster on 240 points of a Normal-Wishart mixture in
    /// `d` dimensions, at `level`.
    fn trace(level: Level, d: usize, steps: usize) -> Vec<(Vec<usize>, u64)> {
        let mut rng = SeedPlan::new(23).chain(d as u64);
        let labels = partition_crp(240, 2.0, &mut rng).unwrap();
        let psi: Vec<f64> = (0..d * d)
            .map(|k| if k % (d + 1) == 0 { 1.0 } else { 0.0 })
            .collect();
        let sampler = NormalWishartSampler::new(&vec![0.0; d], &psi, 0.05, d as f64 + 4.0).unwrap();
        let data = gaussian_mixture(&labels, &sampler, &mut rng).unwrap().0;
        let hyper = NwHyper::from_data(&data).unwrap();
        let kernel = NormalWishart::new(Arc::new(data), hyper).unwrap();
        let mut state = State {
            partition: Partition::single(&kernel),
            prior: Dp::new(1.0).unwrap(),
        };
        let mut rng = SeedPlan::new(23).chain(d as u64);
        let (mut sams, mut jn) = (Sams::new(), JainNeal::new(3));
        with_level(level, || {
            (0..steps)
                .map(|_| {
                    sams.step(&kernel, &mut state, &mut RngChooser::new(&mut rng))
                        .unwrap();
                    jn.step(&kernel, &mut state, &mut RngChooser::new(&mut rng))
                        .unwrap();
                    (
                        state.partition.canonical_labels(),
                        state.ln_joint().to_bits(),
                    )
                })
                .collect()
        })
    }

    /// The same seed gives the same split-merge chain, bit for bit, at every level this CPU
    /// can run (the levels it cannot run fall back to the best it can), in the unrolled
    /// dimensions and beyond them.
    #[test]
    fn every_level_gives_the_same_split_merge_chain() {
        for d in [2, 6, 9] {
            let want = trace(Level::Portable, d, 60);
            let splits = want
                .iter()
                .filter(|(l, _)| l.iter().max() > Some(&0))
                .count();
            assert!(splits > 0, "d {d}: the chain never split");
            for level in Level::ALL {
                assert!(
                    trace(level, d, 60) == want,
                    "d {d}: {level:?} differs from portable"
                );
            }
        }
    }
}
