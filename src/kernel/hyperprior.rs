//! Hyperpriors on a conjugate kernel's own hyperparameters (the cluster scale, the mean
//! precision, the degrees of freedom, the Dirichlet concentration), so that the data choose
//! them instead of a fixed default.
//!
//! A kernel that supports this ([`HyperKernel`]) exposes a few positive hyperparameters `h_j`
//! in a fixed order, each with an offset `o_j` below which it cannot go (0 for scales, `d - 1`
//! for the Wishart degrees of freedom), evaluates `ln m(X_S | h)` for any values from a
//! statistic built under other values (only the factor and the constants depend on `h`, never
//! the count, mean or scatter), and rebuilds itself at new values over the same data.
//!
//! **The priors** ([`KernelHyperPriors`]) are log-normal on `h_j - o_j`, centred on the
//! kernel's own values at construction (the defaults): `ln(h_j - o_j) ~ N(ln(h⁰_j - o_j), τ_j²)`.
//! * *Scale-free.* The Normal-Wishart scale is `Ψ = s Ψ₀` with `Ψ₀` the default. When `Ψ₀` is
//!   proportional to the data covariance, a change of units multiplies `Ψ₀` and leaves the law
//!   of `s`, hence the posterior over partitions, unchanged; `r` and `ν` have no units.
//! * *Weakly informative and proper.* `τ = 2` for the scale and the mean precision (one
//!   standard deviation is a factor of e² ≈ 7.4; 95 % of the mass within a factor of 50 of the
//!   default), `τ = 1` for `ν - (d - 1)` and `τ = 2` for the Dirichlet concentration. A proper
//!   prior is needed: with `r → 0` or `s → ∞` the marginal likelihood of a partition tends to a
//!   finite limit, so a flat prior on the log scale gives an improper posterior.
//! * *Precedent.* Rasmussen (2000, "The infinite Gaussian mixture model", NIPS 12) puts vague
//!   Gamma priors, centred on the data's variance, on the scale of the components' precisions
//!   and on the precision of their means, and a vague prior on the shape; Görür & Rasmussen
//!   (2010, "Dirichlet process Gaussian mixture models: choice of the base distribution",
//!   J. Comput. Sci. Technol. 25) do the same for the conjugate Normal-Wishart base measure and
//!   find the hierarchical model much less sensitive to the base measure than fixed settings.
//!   A Gamma prior with shape 1 has a log-scale standard deviation of 1.28; the log-normal with
//!   `τ = 2` is vaguer, symmetric on the log scale (the natural scale of a multiplier) and is
//!   where the slice sampler runs.
//!
//! The update itself (one slice-sampling step per free coordinate, on the log scale, given the
//! partition) is [`crate::sampler::KernelHyperMove`].

use super::{ConjugateKernel, KernelKind};
use crate::error::{Error, Result};

/// `ln(√(2π))`.
const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;

/// A normal law on `ln(h - o)`: centre `ln(h⁰ - o)` and standard deviation `τ`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LogNormalPrior {
    /// The mean of the log, `ln(h⁰ - o)`.
    pub ln_centre: f64,
    /// The standard deviation of the log, `τ > 0`.
    pub sd: f64,
}

impl LogNormalPrior {
    /// The law `ln x ~ N(ln centre, sd²)`: `centre` and `sd` finite and `> 0`.
    pub fn new(centre: f64, sd: f64) -> Result<Self> {
        if !(centre > 0.0 && centre.is_finite()) {
            return Err(Error::param(
                "hyperprior centre",
                centre,
                "a finite number > 0",
            ));
        }
        if !(sd > 0.0 && sd.is_finite()) {
            return Err(Error::param(
                "hyperprior standard deviation",
                sd,
                "a finite number > 0",
            ));
        }
        Ok(LogNormalPrior {
            ln_centre: centre.ln(),
            sd,
        })
    }

    /// The normalised log density of `u = ln x` (a normal density on the log scale).
    pub fn ln_pdf_log(&self, u: f64) -> f64 {
        let z = (u - self.ln_centre) / self.sd;
        -0.5 * z * z - self.sd.ln() - LN_SQRT_2PI
    }
}

/// The most hyperparameters a kernel has (a [`KernelHyper`] holds them inline, so that a
/// state's hyperparameters stay `Copy`).
pub const MAX_KERNEL_HYPER: usize = 4;

/// A kernel's own hyperparameters, typed by their kernel's names: the names exist only where
/// values become trace columns and come back from them ([`KernelHyper::columns`],
/// [`KernelHyper::from_columns`]), and come from the kernel
/// ([`HyperKernel::HYPER_NAMES`]); the sampler moves the values as coordinates in that fixed
/// order ([`KernelHyper::values`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KernelHyper {
    /// The kernel's names of its hyperparameters, in their fixed order.
    names: &'static [&'static str],
    /// Their values, in that order (the first `names.len()`; the rest 0).
    values: [f64; MAX_KERNEL_HYPER],
}

impl KernelHyper {
    /// The values `values` of the hyperparameters named `names` (a kernel's
    /// [`HyperKernel::HYPER_NAMES`]). Panics unless there are as many values as names and at
    /// most [`MAX_KERNEL_HYPER`] (a kernel's invariant, not a user's input).
    pub fn new(names: &'static [&'static str], values: &[f64]) -> Self {
        assert!(
            names.len() == values.len() && values.len() <= MAX_KERNEL_HYPER,
            "{} values for the hyperparameters {names:?}",
            values.len()
        );
        let mut v = [0.0; MAX_KERNEL_HYPER];
        v[..values.len()].copy_from_slice(values);
        KernelHyper { names, values: v }
    }

    /// The trace column names, in the fixed order of [`KernelHyper::values`].
    pub fn names(&self) -> &'static [&'static str] {
        self.names
    }

    /// The values in their fixed order.
    pub fn values(&self) -> Vec<f64> {
        self.values[..self.names.len()].to_vec()
    }

    /// Names and values as trace columns.
    pub fn columns(&self) -> Vec<(&'static str, f64)> {
        self.names().iter().copied().zip(self.values()).collect()
    }

    /// The hyperparameters that a record's columns give (`get` looks a column up by name):
    /// those of the registered kernel whose columns it has, `None` when it has no kernel's (a
    /// run without kernel hyperpriors). Errors naming a column of that kernel that the record
    /// lacks.
    pub fn from_columns(
        get: &dyn Fn(&str) -> Option<f64>,
    ) -> std::result::Result<Option<Self>, String> {
        let Some(names) = KernelKind::ALL
            .iter()
            .map(|k| k.hyper_names())
            .find(|names| names.iter().any(|n| get(n).is_some()))
        else {
            return Ok(None);
        };
        let values = names
            .iter()
            .map(|n| get(n).ok_or_else(|| format!("no column \"{n}\"")))
            .collect::<std::result::Result<Vec<f64>, String>>()?;
        Ok(Some(KernelHyper::new(names, &values)))
    }
}

/// A conjugate kernel whose hyperparameters can be resampled given a partition.
///
/// Invariants (checked by the kernel tests): `ln_marginal_at(s, &hyper_values())` equals
/// `ln_marginal(s)` up to rounding; `with_hyper_values(h)` depends on `h` and the data only
/// (not on the values the kernel has now), so that a kernel rebuilt from a checkpoint's
/// values is bit-identical; after `refresh_stat` under a kernel `k`, a statistic gives what
/// `k` gives for a statistic of the same points built by its own updates, up to rounding.
pub trait HyperKernel: ConjugateKernel {
    /// Names of the hyperparameters, in their fixed order: their trace columns, the one place
    /// where they are named (unique among the registered kernels, which tells a file's kernel
    /// by them).
    const HYPER_NAMES: &'static [&'static str];

    /// Their current values, in that order.
    fn hyper_values(&self) -> Vec<f64>;

    /// The current values, typed.
    fn hyperparameters(&self) -> KernelHyper {
        KernelHyper::new(Self::HYPER_NAMES, &self.hyper_values())
    }

    /// Names of the hyperparameters, in their fixed order (trace columns).
    fn hyper_names(&self) -> &'static [&'static str] {
        Self::HYPER_NAMES
    }

    /// The offset `o_j` of hyperparameter `j`: it must stay above it (0 for scales, `d - 1` for
    /// the Wishart degrees of freedom).
    fn hyper_offset(&self, j: usize) -> f64;

    /// The default standard deviation `τ_j` of the log-normal hyperprior of hyperparameter
    /// `j` (see the module documentation).
    fn hyper_default_sd(&self, j: usize) -> f64;

    /// Whether hyperparameter `j` is free by default when hyperpriors are on.
    fn hyper_free_by_default(&self, j: usize) -> bool;

    /// `ln m(X_S | h)` of the points summarised by `s` (built by this kernel), at values `h`.
    fn ln_marginal_at(&self, s: &Self::Stat, h: &[f64]) -> f64;

    /// The kernel over the same data at values `h`; errors if `h` is out of range.
    fn with_hyper_values(&self, h: &[f64]) -> Result<Self>;

    /// Recomputes what in `s` depends on the hyperparameters (built by a kernel over the same
    /// data at other values) for this kernel's values.
    fn refresh_stat(&self, s: &mut Self::Stat);

    /// The kernel over the same data at the values `hyper`; errors if they are another
    /// kernel's or out of range. Cost: one [`HyperKernel::with_hyper_values`].
    fn at(&self, hyper: &KernelHyper) -> Result<Self>
    where
        Self: Sized,
    {
        if hyper.names() != Self::HYPER_NAMES {
            return Err(Error::Usage(format!(
                "hyperparameters {hyper:?} are not those of this kernel"
            )));
        }
        self.with_hyper_values(&hyper.values())
    }
}

/// Which hyperparameters of a [`HyperKernel`] are free, and their priors (index `j` holds
/// the prior of hyperparameter `j`, `None` when it is held fixed).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct KernelHyperPriors {
    /// Per hyperparameter, its prior or `None`.
    pub priors: Vec<Option<LogNormalPrior>>,
}

impl KernelHyperPriors {
    /// The default hyperpriors of `kernel`: the coordinates free by default, each log-normal
    /// on `h_j - o_j` centred on the kernel's current value with the default `τ_j`.
    pub fn default_for<K: HyperKernel>(kernel: &K) -> Result<Self> {
        Self::with_free(kernel, |j| kernel.hyper_free_by_default(j))
    }

    /// As [`KernelHyperPriors::default_for`], with the free coordinates chosen by `free`.
    pub fn with_free<K: HyperKernel>(kernel: &K, free: impl Fn(usize) -> bool) -> Result<Self> {
        let values = kernel.hyper_values();
        let priors = values
            .iter()
            .enumerate()
            .map(|(j, &v)| {
                if free(j) {
                    LogNormalPrior::new(v - kernel.hyper_offset(j), kernel.hyper_default_sd(j))
                        .map(Some)
                } else {
                    Ok(None)
                }
            })
            .collect::<Result<_>>()?;
        Ok(KernelHyperPriors { priors })
    }

    /// `ln p(h)` of the free coordinates, as densities of `ln(h_j - o_j)` (the scale the
    /// sampler moves on); `-∞` if a free coordinate is at or below its offset.
    pub fn ln_prior<K: HyperKernel>(&self, kernel: &K, h: &[f64]) -> f64 {
        self.priors
            .iter()
            .enumerate()
            .filter_map(|(j, p)| p.map(|p| (j, p)))
            .map(|(j, p)| {
                let x = h[j] - kernel.hyper_offset(j);
                if x > 0.0 {
                    p.ln_pdf_log(x.ln())
                } else {
                    f64::NEG_INFINITY
                }
            })
            .sum()
    }

    /// Whether any coordinate is free.
    pub fn any_free(&self) -> bool {
        self.priors.iter().any(Option::is_some)
    }
}
