//! Scratch state shared by the split-merge moves: two growing groups anchored at points `i`
//! and `j`, with the allocation probabilities of MATH §6.2-§6.3.

use super::Chooser;
use crate::error::Result;
use crate::kernel::ConjugateKernel;
use crate::prior::NrmPrior;

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

    /// Log weights of sending `k` (in neither group) to A or B:
    /// `ln κ_join(n_g) + ln p(x_k | X_g)` (MATH §6.2 step 2).
    pub(crate) fn ln_weights<K: ConjugateKernel<Stat = S>, P: NrmPrior>(
        &self,
        kernel: &K,
        prior: &P,
        k: usize,
    ) -> [f64; 2] {
        [0, 1].map(|g| prior.ln_kappa_join(self.sizes[g]) + kernel.ln_predictive(k, &self.stats[g]))
    }

    /// Allocates `k` to a group: drawn from its conditional when `forced` is `None`, else set
    /// to `forced`. Returns the group and the log probability of that allocation.
    pub(crate) fn allocate<K: ConjugateKernel<Stat = S>, P: NrmPrior>(
        &mut self,
        kernel: &K,
        prior: &P,
        k: usize,
        forced: Option<usize>,
        chooser: &mut dyn Chooser,
    ) -> Result<(usize, f64)> {
        let ln_w = self.ln_weights(kernel, prior, k);
        let (g, ln_p) = match forced {
            Some(g) => (g, ln_w[g] - crate::math::ln_add_exp(ln_w[0], ln_w[1])),
            None => chooser.choose_log(&ln_w)?,
        };
        self.add(kernel, k, g);
        Ok((g, ln_p))
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
