//! What a sweep will cost, measured before a run starts, so that a front end can warn before
//! a run whose first sweep takes minutes rather than after.

use crate::kernel::ConjugateKernel;
use std::time::Instant;

/// Points whose predictive [`predictive_seconds`] times (spread over the data set).
const PROBES: usize = 16;

/// Seconds one posterior predictive `ln p(x_i | X_c)` takes on `kernel`'s data, measured on
/// up to 16 points against the statistic of half of the data (the cost of a predictive
/// depends on the dimension and the kernel, not on the cluster's size). Every sampler weighs
/// each point against at least one existing cluster and a new one per sweep, so
/// `2 n` times this is a lower bound of a sweep's time. Cost: O(n) statistic updates plus
/// 16 predictives.
pub fn predictive_seconds<K: ConjugateKernel>(kernel: &K) -> f64 {
    let n = kernel.n_points();
    if n < 2 {
        return 0.0;
    }
    let half: Vec<usize> = (0..n).step_by(2).collect();
    let stat = kernel.stat_of(&half);
    let probes: Vec<usize> = (1..n).step_by(2).step_by((n / 2 / PROBES).max(1)).collect();
    let start = Instant::now();
    let mut sink = 0.0;
    for &i in &probes {
        sink += kernel.ln_predictive(i, &stat);
    }
    let seconds = start.elapsed().as_secs_f64() / probes.len() as f64;
    // The sum keeps the evaluations from being optimised away.
    std::hint::black_box(sink);
    seconds
}
