//! The kernel-hyperparameter update: the kernel's own hyperparameters (Normal-Wishart scale
//! multiplier, mean precision, degrees of freedom; Dirichlet concentration) resampled given
//! the partition, once per sweep (see [`crate::kernel::hyperprior`] for the priors).
//!
//! Given the partition `Π`, the hyperparameters `h` of the kernel have the conditional law
//! `p(h | Π, X) ∝ p(h) Π_{c∈Π} m(X_c | h)`: the partition prior does not involve them, and the
//! clusters' parameters are integrated out. Each free coordinate in turn gets one slice
//! sampling update (Neal 2003, [`SliceSampler`]) of `u_j = ln(h_j - o_j)`, on whose scale its
//! prior is normal. Every evaluation of the target refactorises every cluster's `Ψ_n` from its
//! count, mean and scatter, which do not depend on `h` (O(K d³) for the Normal-Wishart kernel),
//! so nothing in the state changes until the new values are known.
//!
//! A kernel is immutable while moves run; a chain holds its kernel's current values and, when
//! they change, rebuilds the kernel ([`crate::kernel::HyperKernel::with_hyper_values`]), the
//! clusters' statistics and the moves' own state ([`crate::run::Chain`]).

use crate::error::{Error, Result};
use crate::kernel::{ConjugateKernel, HyperKernel, KernelHyper, KernelHyperPriors};
use crate::partition::Partition;
use crate::prior::SliceSampler;
use crate::rng::NrmmRng;

/// What a chain needs of a kernel-hyperparameter update, for any kernel type (so that
/// [`crate::run::Chain`] needs no bound beyond [`ConjugateKernel`]).
pub trait KernelUpdate<K: ConjugateKernel>: Send {
    /// One update of the kernel's hyperparameters given `partition` (whose statistics were
    /// built by `kernel`), drawing from `rng`: the kernel at the new values, or `None` when
    /// they did not change.
    fn update(
        &mut self,
        kernel: &K,
        partition: &Partition<K>,
        rng: &mut NrmmRng,
    ) -> Result<Option<K>>;

    /// The current values of `kernel`'s hyperparameters, typed.
    fn hyper(&self, kernel: &K) -> KernelHyper;

    /// `kernel` over the same data at `values` (a checkpoint's). Errors if they do not fit.
    fn rebuild(&self, kernel: &K, values: &[f64]) -> Result<K>;

    /// Recomputes what in `stat` depends on the hyperparameters, for `kernel`'s values.
    fn refresh_stat(&self, kernel: &K, stat: &mut K::Stat);
}

/// Resamples the free hyperparameters of a [`HyperKernel`] by slice sampling on the log scale
/// (see the module documentation). Cost per update: per free coordinate, `2 + steps out +
/// shrinks` evaluations of `Σ_c ln m(X_c | h)` (typically 5-10), each O(K d³) for the
/// Normal-Wishart kernel and O(distinct words) `ln Γ` for the Multinomial-Dirichlet kernel.
#[derive(Clone, Debug)]
pub struct KernelHyperMove {
    priors: KernelHyperPriors,
    slice: SliceSampler,
}

/// Slice width on the log scale: a factor of e, wider than a posterior of `ln s` from more
/// than a handful of points; stepping out covers wider ones.
const SLICE_WIDTH: f64 = 1.0;
/// Stepping-out budget (the interval can grow to 20 widths).
const SLICE_STEPS: usize = 20;

impl KernelHyperMove {
    /// The update with these priors (one per hyperparameter of the kernel it will run on,
    /// `None` for those held fixed). Errors if no coordinate is free.
    pub fn new(priors: KernelHyperPriors) -> Result<Self> {
        if !priors.any_free() {
            return Err(Error::Usage(
                "kernel hyperpriors: no hyperparameter is free".into(),
            ));
        }
        Ok(KernelHyperMove {
            priors,
            slice: SliceSampler::new(SLICE_WIDTH, SLICE_STEPS)?,
        })
    }

    /// The priors.
    pub fn priors(&self) -> &KernelHyperPriors {
        &self.priors
    }

    /// `ln p(h) + Σ_c ln m(X_c | h)`, the log of the (unnormalised) conditional law of `h`
    /// given the partition, with `p(h)` the density of the free coordinates on the log scale.
    pub fn ln_target<K: HyperKernel>(
        &self,
        kernel: &K,
        partition: &Partition<K>,
        h: &[f64],
    ) -> f64 {
        self.priors.ln_prior(kernel, h)
            + partition
                .clusters()
                .map(|(_, c)| kernel.ln_marginal_at(c.stat(), h))
                .sum::<f64>()
    }

    /// One slice update of each free coordinate in order; returns the new values.
    pub fn resample<K: HyperKernel>(
        &self,
        kernel: &K,
        partition: &Partition<K>,
        rng: &mut NrmmRng,
    ) -> Result<Vec<f64>> {
        let mut h = kernel.hyper_values();
        if h.len() != self.priors.priors.len() {
            return Err(Error::DimensionMismatch(format!(
                "kernel hyperpriors for {} hyperparameters, but the kernel has {}",
                self.priors.priors.len(),
                h.len()
            )));
        }
        for j in 0..h.len() {
            if self.priors.priors[j].is_none() {
                continue;
            }
            let offset = kernel.hyper_offset(j);
            let u0 = (h[j] - offset).ln();
            let mut trial = h.clone();
            let u = self.slice.sample(
                u0,
                |u| {
                    trial[j] = offset + u.exp();
                    self.ln_target(kernel, partition, &trial)
                },
                rng,
            )?;
            if u != u0 {
                h[j] = offset + u.exp();
            }
        }
        Ok(h)
    }
}

impl<K: HyperKernel> KernelUpdate<K> for KernelHyperMove {
    fn update(
        &mut self,
        kernel: &K,
        partition: &Partition<K>,
        rng: &mut NrmmRng,
    ) -> Result<Option<K>> {
        let h = self.resample(kernel, partition, rng)?;
        if h == kernel.hyper_values() {
            return Ok(None);
        }
        kernel.with_hyper_values(&h).map(Some)
    }

    fn hyper(&self, kernel: &K) -> KernelHyper {
        kernel.hyperparameters()
    }

    fn rebuild(&self, kernel: &K, values: &[f64]) -> Result<K> {
        kernel.with_hyper_values(values)
    }

    fn refresh_stat(&self, kernel: &K, stat: &mut K::Stat) {
        kernel.refresh_stat(stat);
    }
}
