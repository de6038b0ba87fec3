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

    /// Adds `k` to group `g`.
    pub(crate) fn add<K: ConjugateKernel<Stat = S>>(&mut self, kernel: &K, k: usize, g: usize) {
        kernel.add(&mut self.stats[g], k);
        self.sizes[g] += 1;
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
    pub(crate) fn allocate<K: ConjugateKernel<Stat = S>>(
        &mut self,
        kernel: &K,
        ln_join: &[f64],
        k: usize,
        forced: Option<usize>,
        chooser: &mut dyn Chooser,
    ) -> Result<(usize, f64)> {
        let ln_w = [0, 1].map(|g| ln_join[self.sizes[g]] + kernel.ln_predictive(k, &self.stats[g]));
        let (g, ln_p) = decide(ln_w, forced, chooser)?;
        self.add(kernel, k, g);
        Ok((g, ln_p))
    }

    /// Reallocates `k`, a member of group `g` other than its anchor, from its conditional
    /// given both groups without `k`: the same weights, draw and result as removing `k` and
    /// calling [`TwoGroups::allocate`].
    ///
    /// When the kernel can weigh `k`'s own group in place
    /// ([`ConjugateKernel::ln_predictive_member`]), `k` is only moved if the draw moves it, so
    /// a point that stays costs no statistic update. Returns the group and the log
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
        let Some(own) = kernel.ln_predictive_member(k, &self.stats[g]) else {
            self.remove(kernel, k, g);
            return self.allocate(kernel, ln_join, k, forced, chooser);
        };
        let other = 1 - g;
        let mut ln_w = [0.0; 2];
        ln_w[g] = ln_join[self.sizes[g] - 1] + own;
        ln_w[other] = ln_join[self.sizes[other]] + kernel.ln_predictive(k, &self.stats[other]);
        let (h, ln_p) = decide(ln_w, forced, chooser)?;
        if h != g {
            self.remove(kernel, k, g);
            self.add(kernel, k, h);
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
