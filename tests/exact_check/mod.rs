//! The kernel-level exact check shared by the sampler tests (MATH §7.1): a move's enumerated
//! one-step transition matrix against the exact posterior given the prior's current
//! hyperparameters (and `u` for NGGP).

use nrmm::exact::{transition_matrix, ExactPosterior, TransitionMatrix};
use nrmm::kernel::ConjugateKernel;
use nrmm::prior::NrmPrior;
use nrmm::sampler::Move;

/// Tolerance of the row sums, invariance and detailed balance: rounding error only.
pub const TOL: f64 = 1e-12;

/// The exact posterior over partitions given the prior's current hyperparameters.
pub fn posterior<K: ConjugateKernel, P: NrmPrior>(kernel: &K, prior: &P) -> Vec<f64> {
    let p = prior.clone();
    ExactPosterior::new(kernel, move |sizes: &[usize]| {
        sizes.iter().map(|&s| p.ln_kappa(s)).sum::<f64>()
    })
    .unwrap()
    .probabilities()
    .to_vec()
}

/// Asserts that `mv`'s exact kernel is stochastic, leaves the posterior invariant and is in
/// detailed balance with it, to [`TOL`]; returns the matrix for further checks.
pub fn check<K: ConjugateKernel, P: NrmPrior, M: Move<K, P>>(
    kernel: &K,
    prior: &P,
    mv: &mut M,
) -> TransitionMatrix {
    let pi = posterior(kernel, prior);
    let t = transition_matrix(kernel, prior, mv).unwrap();
    let name = mv.name();
    assert!(
        t.row_sum_error() < TOL,
        "{name}: rows sum off by {}",
        t.row_sum_error()
    );
    assert!(
        t.invariance_error(&pi) < TOL,
        "{name}: |πK - π| = {}",
        t.invariance_error(&pi)
    );
    assert!(
        t.detailed_balance_error(&pi) < TOL,
        "{name}: detailed balance off by {}",
        t.detailed_balance_error(&pi)
    );
    t
}
