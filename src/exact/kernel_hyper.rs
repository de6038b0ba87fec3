//! The exact posterior over partitions with the kernel's own hyperparameters integrated out
//! by quadrature, the reference for [`crate::sampler::KernelHyperMove`].
//!
//! `p(Π | X) ∝ p(Π) ∫ p(h) Π_{c∈Π} m(X_c | h) dh`. The free hyperparameters are integrated on
//! their sampling scale `u_j = ln(h_j - o_j)`, where the prior is normal: a product grid of
//! spacing `Δ` over `μ_j ± W τ_j`, each node weighted by `Δ` per coordinate times its prior
//! density. For an integrand that is smooth and decays like the normal prior this rule (the
//! trapezoid rule on the line, its end weights negligible) converges faster than any power of
//! `Δ`; the tests check it by halving `Δ`. Each node's subset table is computed by the kernel
//! rebuilt at that node ([`HyperKernel::with_hyper_values`] and
//! [`crate::kernel::ConjugateKernel::ln_marginal`]), independently of the sampler's
//! [`HyperKernel::ln_marginal_at`].

use super::posterior::{subset_ln_marginals, ExactPosterior};
use crate::error::{Error, Result};
use crate::kernel::{HyperKernel, KernelHyperPriors};

/// The posterior over the partitions of `kernel`'s points (at most 12) under the partition
/// prior `ln_prior` (a function of block sizes) with the free hyperparameters of `priors`
/// integrated out on a grid of spacing `spacing` over `± half_width` prior standard
/// deviations (see the module documentation); fixed hyperparameters keep `kernel`'s values.
///
/// Cost: one kernel rebuild and one subset table (`2^n` batch statistics) per node, and per
/// partition `Q (K + 1)` operations for `Q` nodes. Errors for a non-positive or non-finite
/// spacing or width, more than 10⁶ nodes, or as [`ExactPosterior::from_subset_mixture`].
pub fn hyper_integrated_posterior<K, F>(
    kernel: &K,
    priors: &KernelHyperPriors,
    spacing: f64,
    half_width: f64,
    ln_prior: F,
) -> Result<ExactPosterior>
where
    K: HyperKernel,
    F: FnMut(&[usize]) -> f64,
{
    if !(spacing > 0.0 && spacing.is_finite() && half_width > 0.0 && half_width.is_finite()) {
        return Err(Error::param(
            "quadrature spacing and half-width",
            format!("({spacing}, {half_width})"),
            "finite numbers > 0",
        ));
    }
    let base = kernel.hyper_values();
    if priors.priors.len() != base.len() {
        return Err(Error::DimensionMismatch(format!(
            "kernel hyperpriors for {} hyperparameters, but the kernel has {}",
            priors.priors.len(),
            base.len()
        )));
    }
    // Per free coordinate: its index and its nodes (u, ln weight).
    let mut axes: Vec<(usize, Vec<(f64, f64)>)> = Vec::new();
    for (j, p) in priors.priors.iter().enumerate() {
        let Some(p) = p else { continue };
        let steps = (half_width * p.sd / spacing).ceil() as i64;
        let nodes = (-steps..=steps)
            .map(|k| {
                let u = p.ln_centre + k as f64 * spacing;
                (u, spacing.ln() + p.ln_pdf_log(u))
            })
            .collect();
        axes.push((j, nodes));
    }
    let total: usize = axes.iter().map(|(_, a)| a.len()).product();
    if total > 1_000_000 {
        return Err(Error::TooLarge(format!(
            "a quadrature of {total} nodes; widen the spacing"
        )));
    }
    let mut tables = Vec::with_capacity(total);
    let mut at = vec![0usize; axes.len()];
    loop {
        let mut h = base.clone();
        let mut ln_w = 0.0;
        for ((j, nodes), &k) in axes.iter().zip(&at) {
            let (u, w) = nodes[k];
            h[*j] = kernel.hyper_offset(*j) + u.exp();
            ln_w += w;
        }
        let node_kernel = kernel.with_hyper_values(&h)?;
        tables.push((ln_w, subset_ln_marginals(&node_kernel)?));
        // The next node, odometer order.
        let mut axis = 0;
        loop {
            if axis == at.len() {
                let n = kernel.n_points();
                return ExactPosterior::from_subset_mixture(n, &tables, ln_prior);
            }
            at[axis] += 1;
            if at[axis] < axes[axis].1.len() {
                break;
            }
            at[axis] = 0;
            axis += 1;
        }
    }
}
