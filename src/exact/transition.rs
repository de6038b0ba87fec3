//! Exact one-step transition kernels of moves over all set partitions of a tiny data set
//! (MATH §7.1, "Kernel-level exact check").
//!
//! For every start partition the move is replayed along every branch of its discrete random
//! choices by a [`PathEnumerator`], and the probabilities of the branches are summed per end
//! partition. Invariance `π K = π` and detailed balance `π_i K_ij = π_j K_ji` are then
//! checked against the exact posterior `π`, to rounding error.

use super::enumerate::{Rgs, RgsIndex, SetPartitions};
use crate::error::Result;
use crate::kernel::ConjugateKernel;
use crate::partition::Partition;
use crate::prior::NrmPrior;
use crate::sampler::{Move, PathEnumerator, State};

/// A dense row-stochastic matrix over the partitions of `n` points, rows and columns in
/// enumeration order ([`RgsIndex`]).
#[derive(Clone, Debug)]
pub struct TransitionMatrix {
    n_states: usize,
    entries: Vec<f64>,
    max_paths: usize,
}

impl TransitionMatrix {
    /// Number of partitions (rows).
    pub fn n_states(&self) -> usize {
        self.n_states
    }

    /// `K(from → to)`.
    pub fn get(&self, from: usize, to: usize) -> f64 {
        self.entries[from * self.n_states + to]
    }

    /// The largest number of enumerated paths from one start state.
    pub fn max_paths(&self) -> usize {
        self.max_paths
    }

    /// `max_i |Σ_j K_ij - 1|`.
    pub fn row_sum_error(&self) -> f64 {
        (0..self.n_states)
            .map(|i| {
                (self.entries[i * self.n_states..(i + 1) * self.n_states]
                    .iter()
                    .sum::<f64>()
                    - 1.0)
                    .abs()
            })
            .fold(0.0, f64::max)
    }

    /// `max_j |Σ_i π_i K_ij - π_j|`: zero when `π` is invariant.
    pub fn invariance_error(&self, pi: &[f64]) -> f64 {
        let b = self.n_states;
        (0..b)
            .map(|j| ((0..b).map(|i| pi[i] * self.get(i, j)).sum::<f64>() - pi[j]).abs())
            .fold(0.0, f64::max)
    }

    /// `max_{i,j} |π_i K_ij - π_j K_ji|`: zero when the kernel is reversible w.r.t. `π`.
    pub fn detailed_balance_error(&self, pi: &[f64]) -> f64 {
        let b = self.n_states;
        let mut worst = 0.0f64;
        for i in 0..b {
            for j in i + 1..b {
                worst = worst.max((pi[i] * self.get(i, j) - pi[j] * self.get(j, i)).abs());
            }
        }
        worst
    }
}

/// Builds the exact transition matrix of `mv` on `kernel`'s data (n ≤ 12; in practice n ≤ 6
/// keeps the number of paths small) with the prior's hyperparameters held at `prior`.
///
/// Cost: Σ over start states of the number of paths of the move, each one run of the move.
pub fn transition_matrix<K, P, M>(kernel: &K, prior: &P, mv: &mut M) -> Result<TransitionMatrix>
where
    K: ConjugateKernel,
    P: NrmPrior,
    M: Move<K, P>,
{
    let n = kernel.n_points();
    let index = RgsIndex::new(n)?;
    let b = index.n_partitions();
    let mut entries = vec![0.0; b * b];
    let mut max_paths = 0;
    for (from, rgs) in SetPartitions::new(n)?.enumerate() {
        let start = State {
            partition: Partition::from_labels(kernel, rgs.labels())?,
            prior: prior.clone(),
        };
        let mut paths = PathEnumerator::new();
        let mut count = 0;
        while paths.next_path() {
            let mut state = start.clone();
            mv.step(kernel, &mut state, &mut paths)?;
            let to = index.index_of(&Rgs::from_labels(&state.partition.canonical_labels())?)?;
            entries[from * b + to] += paths.ln_prob().exp();
            count += 1;
        }
        max_paths = max_paths.max(count);
    }
    Ok(TransitionMatrix {
        n_states: b,
        entries,
        max_paths,
    })
}
