//! Normalized random measure priors on partitions, with the auxiliary variable `u`
//! (James, Lijoi & Prünster 2009; MATH §1).
//!
//! The joint law is `p(X, Π, u) = u^{n-1} e^{-ψ(u)} / Γ(n) · Π_c κ(n_c, u) m(X_c)`. A prior
//! exposes the per-cluster weight `ln κ(n, u)`, the Gibbs weights up to a common factor, the
//! constant of the log joint, and updates of its hyperparameters given the partition.

pub mod dp;
pub mod hyper;
pub mod nggp;
pub mod slice;

use crate::error::Result;
use crate::rng::NrmmRng;

/// A normalized random measure prior as seen by the samplers (MATH §1.2-§1.5).
pub trait NrmPrior: Clone + Send + Sync + std::fmt::Debug {
    /// `ln κ(n, u)`, the weight of a cluster of size `n ≥ 1` at the current `u` (for the DP the
    /// common factor `(1+u)^{-n}` is dropped, MATH §1.5).
    fn ln_kappa(&self, n: usize) -> f64;

    /// `ln κ(n+1, u) - ln κ(n, u)` up to a factor common with [`NrmPrior::ln_kappa_new`]:
    /// the weight of joining a cluster of size `n` (MATH §1.3).
    fn ln_kappa_join(&self, n: usize) -> f64;

    /// `ln κ(1, u)` up to the same common factor: the weight of opening a new cluster.
    fn ln_kappa_new(&self) -> f64;

    /// The partition-independent part of the log joint for `n` points:
    /// `(n-1) ln u - ψ(u) - ln Γ(n)` for NGGP, `ln Γ(α) - ln Γ(α + n)` for the DP.
    fn ln_joint_const(&self, n: usize) -> f64;

    /// The log joint `const + Σ_c [ln κ(n_c, u) + ln m(X_c)]` given the cluster sizes and
    /// log marginals (MATH §1.2); what it means is told by [`NrmPrior::joint_label`] (P20).
    fn ln_joint(&self, sizes: &[usize], ln_marginals: &[f64]) -> f64 {
        let n = sizes.iter().sum();
        self.ln_joint_const(n)
            + sizes
                .iter()
                .zip(ln_marginals)
                .map(|(&s, &m)| self.ln_kappa(s) + m)
                .sum::<f64>()
    }

    /// What [`NrmPrior::ln_joint`] is: `"ln p(X, partition | alpha)"` for the DP,
    /// `"ln p(X, partition, u | alpha, sigma)"` for NGGP.
    fn joint_label(&self) -> &'static str;

    /// Resamples every hyperparameter not held fixed (`u`, then `α`, then `σ` for NGGP;
    /// `α` for the DP) given the cluster sizes of the current partition (MATH §1.7).
    fn resample_hyper(&mut self, sizes: &[usize], rng: &mut NrmmRng) -> Result<()>;

    /// Current hyperparameter values by name (`alpha`, `sigma`, `u`), for traces.
    fn hyper_values(&self) -> Vec<(&'static str, f64)>;
}
