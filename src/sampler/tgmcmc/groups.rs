//! Sequential allocation of points to two anchored groups (Dahl 2005, MATH §6.3), the
//! allocation step of TG-SAMS (MATH §5.4 V2).

use crate::error::Result;
use crate::kernel::ConjugateKernel;
use crate::math::ln_add_exp;
use crate::prior::{NrmPrior, PriorHyper};
use crate::sampler::Chooser;

/// Two growing groups `A ∋ i` and `B ∋ j` with their statistics. The statistics are reset
/// from a stored empty statistic with `clone_from`, so a move that keeps one `Groups` does not
/// allocate per proposal.
///
/// The join weights `ln κ_join(n)` of the allocations come from a table
/// ([`Groups::join_table`]) kept across proposals while the prior's hyperparameters stay the
/// same: the values `prior.ln_kappa_join(n)` gives (a function of the prior's
/// hyperparameters), so the allocations are the same bit for bit, at no logarithm per point.
#[derive(Clone, Debug)]
pub(super) struct Groups<K: ConjugateKernel> {
    empty: K::Stat,
    stats: [K::Stat; 2],
    sizes: [usize; 2],
    /// `ln κ_join(n)` for `n = 0..join.len()` at the hyperparameters `join_for`.
    join: Vec<f64>,
    join_for: Option<PriorHyper>,
}

impl<K: ConjugateKernel> Groups<K> {
    /// Empty groups for `kernel`'s statistics.
    pub(super) fn new(kernel: &K) -> Self {
        let empty = kernel.empty_stat();
        Groups {
            stats: [empty.clone(), empty.clone()],
            empty,
            sizes: [0, 0],
            join: Vec::new(),
            join_for: None,
        }
    }

    /// Makes the join table hold `ln κ_join(n)` of `prior` for every `n ≤ max_n`: kept as it
    /// is while the prior's hyperparameters are those it was filled at, else filled anew.
    /// Call it before [`Groups::allocate`] or [`Groups::place`] with `max_n` at least the
    /// largest group size they will meet. Cost: one `ln κ_join` per entry not yet held.
    pub(super) fn join_table<P: NrmPrior>(&mut self, prior: &P, max_n: usize) {
        let hyper = prior.hyperparameters();
        if self.join_for != Some(hyper) {
            self.join.clear();
            self.join_for = Some(hyper);
        }
        for n in self.join.len()..=max_n {
            self.join.push(prior.ln_kappa_join(n));
        }
    }

    /// Restarts from `A = {i}`, `B = {j}`.
    pub(super) fn reset(&mut self, kernel: &K, i: usize, j: usize) {
        for (g, p) in [i, j].into_iter().enumerate() {
            self.stats[g].clone_from(&self.empty);
            kernel.add(&mut self.stats[g], p);
            self.sizes[g] = 1;
        }
    }

    /// Allocates `k` to a group drawn through `chooser` with probability proportional to
    /// `κ_join(n_g) p(x_k | X_g)` (MATH §1.3), the join weights from the table
    /// ([`Groups::join_table`], long enough for both groups). Returns the group and the log
    /// probability of that allocation. Cost: two predictive evaluations and one statistic
    /// update.
    pub(super) fn allocate(
        &mut self,
        kernel: &K,
        k: usize,
        chooser: &mut dyn Chooser,
    ) -> Result<(usize, f64)> {
        let (g, ln_p) = chooser.choose_log(&self.weights(kernel, k))?;
        kernel.add(&mut self.stats[g], k);
        self.sizes[g] += 1;
        Ok((g, ln_p))
    }

    /// Allocates `k` to group `g` (the reverse replay), with the log probability that
    /// [`Groups::allocate`] would have drawn it with. Cost: as `allocate`.
    pub(super) fn place(&mut self, kernel: &K, k: usize, g: usize) -> f64 {
        let ln_w = self.weights(kernel, k);
        kernel.add(&mut self.stats[g], k);
        self.sizes[g] += 1;
        ln_w[g] - ln_add_exp(ln_w[0], ln_w[1])
    }

    /// `k`'s log weight in each group, `ln κ_join(n_g) + ln p(x_k | X_g)`.
    fn weights(&self, kernel: &K, k: usize) -> [f64; 2] {
        [0, 1].map(|g| self.join[self.sizes[g]] + kernel.ln_predictive(k, &self.stats[g]))
    }

    /// The statistic of group `g`.
    pub(super) fn stat(&self, g: usize) -> &K::Stat {
        &self.stats[g]
    }

    /// The size of group `g`.
    pub(super) fn size(&self, g: usize) -> usize {
        self.sizes[g]
    }

    /// `ℓh` of group `g` as a cluster: `ln κ(n_g) + ℓm(X_g)`.
    pub(super) fn ln_h<P: NrmPrior>(&self, kernel: &K, prior: &P, g: usize) -> f64 {
        prior.ln_kappa(self.sizes[g]) + kernel.ln_marginal(&self.stats[g])
    }
}
