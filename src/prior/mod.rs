//! Normalized random measure priors on partitions, with the auxiliary variable `u`
//! (James, Lijoi & Prünster 2009; MATH §1).
//!
//! The joint law is `p(X, Π, u) = u^{n-1} e^{-ψ(u)} / Γ(n) · Π_c κ(n_c, u) m(X_c)`. A prior
//! exposes the per-cluster weight `ln κ(n, u)`, the Gibbs weights up to a common factor, the
//! constant of the log joint, and updates of its hyperparameters given the partition.
//!
//! - [`dp`]: the Dirichlet process (MATH §1.5), `α` fixed or Gamma with the Escobar–West or
//!   `u`-augmented update (§1.7).
//! - [`nggp`]: the normalized generalized gamma process (§1.4) with state `(α, σ, u)`, its
//!   updates (§1.7) and `ln V_{n,k}` by quadrature (§7.1).
//! - [`hyper`]: the Gamma and truncated Beta hyperpriors (§1.6).
//! - [`slice`](mod@slice): Neal's slice sampler with the randomly split stepping-out budget (§1.7, P11).
//! - [`integrated`]: `p(Π)` with `u` and random hyperparameters integrated out, tabulated for
//!   the exact posterior by enumeration (§7.1).
//! - [`Prior`]: the run-time choice between the two.

pub mod dp;
pub mod hyper;
pub mod integrated;
pub mod nggp;
mod numeric;
pub mod slice;

pub use dp::{AlphaUpdate, Dp};
pub use hyper::{sample_gamma, BetaPrior, GammaPrior};
pub use integrated::{PartitionPrior, PartitionPriorSpec};
pub use nggp::{ln_v, Nggp, NggpHyperPriors};
pub use slice::SliceSampler;

use crate::error::{Error, Result};
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

    /// The current hyperparameter values, typed.
    fn hyperparameters(&self) -> PriorHyper;

    /// Current hyperparameter values by their trace column names ([`PriorHyper::columns`]).
    fn hyper_values(&self) -> Vec<(&'static str, f64)> {
        self.hyperparameters().columns()
    }
}

/// The hyperparameters of a prior, typed: which prior it is and its values. Names exist only
/// where values become trace columns and come back from them ([`PriorHyper::columns`],
/// [`PriorHyper::from_columns`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PriorHyper {
    /// The Dirichlet process.
    Dp {
        /// Concentration.
        alpha: f64,
    },
    /// The normalized generalized gamma process.
    Nggp {
        /// Concentration.
        alpha: f64,
        /// Discount.
        sigma: f64,
        /// Auxiliary variable.
        u: f64,
    },
}

impl PriorHyper {
    /// Names and values as trace columns, in their fixed order (`alpha`, then `sigma` and `u`
    /// for NGGP): the one place where the prior's hyperparameters are named.
    pub fn columns(&self) -> Vec<(&'static str, f64)> {
        match *self {
            PriorHyper::Dp { alpha } => vec![("alpha", alpha)],
            PriorHyper::Nggp { alpha, sigma, u } => {
                vec![("alpha", alpha), ("sigma", sigma), ("u", u)]
            }
        }
    }

    /// The hyperparameters that a record's columns give (`get` looks a column up by name):
    /// NGGP's when it has `sigma` or `u`, else the DP's. Errors naming the first column of the
    /// prior that the record lacks.
    pub fn from_columns(get: &dyn Fn(&str) -> Option<f64>) -> std::result::Result<Self, String> {
        let need = |name: &str| get(name).ok_or_else(|| format!("no column \"{name}\""));
        Ok(if get("sigma").is_some() || get("u").is_some() {
            PriorHyper::Nggp {
                alpha: need("alpha")?,
                sigma: need("sigma")?,
                u: need("u")?,
            }
        } else {
            PriorHyper::Dp {
                alpha: need("alpha")?,
            }
        })
    }
}

/// The prior chosen at run time (e.g. on the command line): every [`NrmPrior`] method
/// dispatches to the variant.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Prior {
    /// The Dirichlet process.
    Dp(Dp),
    /// The normalized generalized gamma process.
    Nggp(Nggp),
}

impl Prior {
    /// This prior at the values `hyper`; errors if they are of another prior or out of range.
    /// Cost: O(1).
    pub fn at(&self, hyper: PriorHyper) -> Result<Prior> {
        let mut p = self.clone();
        // Only the values that differ are set: setting `u` goes through its logarithm.
        match (&mut p, self.hyperparameters(), hyper) {
            (Prior::Dp(dp), PriorHyper::Dp { alpha: a0 }, PriorHyper::Dp { alpha }) => {
                if alpha != a0 {
                    dp.set_alpha(alpha)?;
                }
            }
            (
                Prior::Nggp(ng),
                PriorHyper::Nggp {
                    alpha: a0,
                    sigma: s0,
                    u: u0,
                },
                PriorHyper::Nggp { alpha, sigma, u },
            ) => {
                if alpha != a0 {
                    ng.set_alpha(alpha)?;
                }
                if sigma != s0 {
                    ng.set_sigma(sigma)?;
                }
                if u != u0 {
                    ng.set_u(u)?;
                }
            }
            _ => {
                return Err(Error::Usage(format!(
                    "hyperparameters {hyper:?} are not those of this prior"
                )))
            }
        }
        Ok(p)
    }

    /// `ln p(Π)` given the current hyperparameters, with `u` integrated out: the DP or NGGP
    /// EPPF ([`Dp::ln_eppf`], [`Nggp::ln_eppf`]).
    pub fn ln_eppf(&self, sizes: &[usize]) -> Result<f64> {
        match self {
            Prior::Dp(p) => p.ln_eppf(sizes),
            Prior::Nggp(p) => p.ln_eppf(sizes),
        }
    }

    /// The current concentration `α`.
    pub fn alpha(&self) -> f64 {
        match self {
            Prior::Dp(p) => p.alpha(),
            Prior::Nggp(p) => p.alpha(),
        }
    }
}

impl From<Dp> for Prior {
    fn from(p: Dp) -> Self {
        Prior::Dp(p)
    }
}

impl From<Nggp> for Prior {
    fn from(p: Nggp) -> Self {
        Prior::Nggp(p)
    }
}

impl NrmPrior for Prior {
    fn ln_kappa(&self, n: usize) -> f64 {
        match self {
            Prior::Dp(p) => p.ln_kappa(n),
            Prior::Nggp(p) => p.ln_kappa(n),
        }
    }

    fn ln_kappa_join(&self, n: usize) -> f64 {
        match self {
            Prior::Dp(p) => p.ln_kappa_join(n),
            Prior::Nggp(p) => p.ln_kappa_join(n),
        }
    }

    fn ln_kappa_new(&self) -> f64 {
        match self {
            Prior::Dp(p) => p.ln_kappa_new(),
            Prior::Nggp(p) => p.ln_kappa_new(),
        }
    }

    fn ln_joint_const(&self, n: usize) -> f64 {
        match self {
            Prior::Dp(p) => p.ln_joint_const(n),
            Prior::Nggp(p) => p.ln_joint_const(n),
        }
    }

    fn ln_joint(&self, sizes: &[usize], ln_marginals: &[f64]) -> f64 {
        match self {
            Prior::Dp(p) => p.ln_joint(sizes, ln_marginals),
            Prior::Nggp(p) => p.ln_joint(sizes, ln_marginals),
        }
    }

    fn joint_label(&self) -> &'static str {
        match self {
            Prior::Dp(p) => p.joint_label(),
            Prior::Nggp(p) => p.joint_label(),
        }
    }

    fn resample_hyper(&mut self, sizes: &[usize], rng: &mut NrmmRng) -> Result<()> {
        match self {
            Prior::Dp(p) => p.resample_hyper(sizes, rng),
            Prior::Nggp(p) => p.resample_hyper(sizes, rng),
        }
    }

    fn hyperparameters(&self) -> PriorHyper {
        match self {
            Prior::Dp(p) => p.hyperparameters(),
            Prior::Nggp(p) => p.hyperparameters(),
        }
    }
}

/// `(n, K)` of a partition given its block sizes; errors if there are no blocks or a block is
/// empty. Cost: O(K).
pub(crate) fn block_counts(sizes: &[usize]) -> Result<(usize, usize)> {
    if sizes.is_empty() {
        return Err(Error::Empty("a partition needs at least one block".into()));
    }
    if let Some(i) = sizes.iter().position(|&s| s == 0) {
        return Err(Error::param(
            &format!("block size #{i}"),
            0,
            "a positive number of points in every block",
        ));
    }
    Ok((sizes.iter().sum(), sizes.len()))
}
