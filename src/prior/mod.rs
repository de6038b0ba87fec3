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
//! - [`pitman_yor`]: the Pitman-Yor process, a Gibbs-type prior with `V(n, k)` in closed
//!   form, `θ` and `σ` fixed or with hyperpriors.
//! - [`mfm`]: the mixture of finite mixtures (Miller & Harrison 2018), a Gibbs-type prior
//!   with `V_n(t)` by its series, `γ` fixed or with a hyperprior.
//! - [`hyper`]: the Gamma and truncated Beta hyperpriors (§1.6).
//! - [`slice`](mod@slice): Neal's slice sampler with the randomly split stepping-out budget (§1.7, P11).
//! - [`integrated`]: `p(Π)` with `u` and random hyperparameters integrated out, tabulated for
//!   the exact posterior by enumeration (§7.1).
//! - [`Prior`]: the run-time choice between them.

pub mod dp;
pub mod hyper;
pub mod integrated;
pub mod mfm;
pub mod nggp;
mod numeric;
pub mod pitman_yor;
pub mod slice;

pub use dp::{AlphaUpdate, Dp};
pub use hyper::{sample_gamma, BetaPrior, GammaPrior};
pub use integrated::{PartitionPrior, PartitionPriorSpec};
pub use mfm::{KPrior, Mfm};
pub use nggp::{ln_v, Nggp, NggpHyperPriors};
pub use pitman_yor::{PitmanYor, PyHyperPriors};
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

    /// `ln κ(1, u)` up to the same common factor: the weight of opening a new cluster, before
    /// the factor [`NrmPrior::ln_new_shift`] of a Gibbs-type prior whose `V(n, k)` depends on
    /// `k`.
    fn ln_kappa_new(&self) -> f64;

    /// Whether the prior has a factor `V(n, k)` beyond the product of per-cluster weights
    /// (Gibbs-type priors, Gnedin & Pitman 2006: `p(Π) = V(n, K) Π_c κ(n_c)`): true for the
    /// Pitman-Yor process and the mixture of finite mixtures, false for the NRMs given `u`
    /// (DP, NGGP), whose weights are then exactly those of the product form.
    fn k_dependent(&self) -> bool {
        false
    }

    /// `ln V(n, k)`, the factor of a partition of `n` points into `k` blocks beyond
    /// [`NrmPrior::ln_joint_const`] and the per-cluster weights; `0` unless
    /// [`NrmPrior::k_dependent`]. Cost: O(1) (Pitman-Yor), a cached series (MFM).
    fn ln_v_k(&self, _n: usize, _k: usize) -> f64 {
        0.0
    }

    /// `ln V(n, k+1) - ln V(n, k)`: what opening a cluster adds beyond
    /// [`NrmPrior::ln_kappa_new`] when the other points of a partition of `n` points form `k`
    /// clusters (Pitman-Yor: `ln(θ + kσ)`; MFM: Miller & Harrison's `V_n(k+1)/V_n(k)`); `0`
    /// for `k = 0` and unless [`NrmPrior::k_dependent`]. A sampler comparing partitions with
    /// different block counts adds it once per block gained.
    fn ln_new_shift(&self, _n: usize, _k: usize) -> f64 {
        0.0
    }

    /// The whole weight of opening a cluster when the other points of a partition of `n`
    /// points form `k` clusters: [`NrmPrior::ln_kappa_new`], plus
    /// [`NrmPrior::ln_new_shift`] for a Gibbs-type prior (for the others exactly
    /// `ln_kappa_new`, bit for bit).
    fn ln_new_at(&self, n: usize, k: usize) -> f64 {
        if self.k_dependent() {
            self.ln_kappa_new() + self.ln_new_shift(n, k)
        } else {
            self.ln_kappa_new()
        }
    }

    /// The partition-independent part of the log joint for `n` points:
    /// `(n-1) ln u - ψ(u) - ln Γ(n)` for NGGP, `ln Γ(α) - ln Γ(α + n)` for the DP.
    fn ln_joint_const(&self, n: usize) -> f64;

    /// The log joint `const + Σ_c [ln κ(n_c, u) + ln m(X_c)]` given the cluster sizes and
    /// log marginals (MATH §1.2); what it means is told by [`NrmPrior::joint_label`] (P20).
    fn ln_joint(&self, sizes: &[usize], ln_marginals: &[f64]) -> f64 {
        let n = sizes.iter().sum();
        let head = if self.k_dependent() {
            self.ln_joint_const(n) + self.ln_v_k(n, sizes.len())
        } else {
            self.ln_joint_const(n)
        };
        head + sizes
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
    /// The Pitman-Yor process.
    PitmanYor {
        /// Concentration `θ`.
        alpha: f64,
        /// Discount.
        sigma: f64,
    },
    /// The mixture of finite mixtures.
    Mfm {
        /// Dirichlet parameter.
        gamma: f64,
    },
}

impl PriorHyper {
    /// Names and values as trace columns, in their fixed order (`alpha`, then `sigma` and `u`
    /// for NGGP, `sigma` for Pitman-Yor; `gamma` alone for the MFM): the one place where the
    /// prior's hyperparameters are named.
    pub fn columns(&self) -> Vec<(&'static str, f64)> {
        match *self {
            PriorHyper::Dp { alpha } => vec![("alpha", alpha)],
            PriorHyper::Nggp { alpha, sigma, u } => {
                vec![("alpha", alpha), ("sigma", sigma), ("u", u)]
            }
            PriorHyper::PitmanYor { alpha, sigma } => vec![("alpha", alpha), ("sigma", sigma)],
            PriorHyper::Mfm { gamma } => vec![("gamma", gamma)],
        }
    }

    /// The hyperparameters that a record's columns give (`get` looks a column up by name):
    /// the MFM's when it has `gamma`, NGGP's when it has `u`, Pitman-Yor's when it has `sigma`
    /// without `u`, else the DP's. Errors naming the first column of the prior that the
    /// record lacks.
    pub fn from_columns(get: &dyn Fn(&str) -> Option<f64>) -> std::result::Result<Self, String> {
        let need = |name: &str| get(name).ok_or_else(|| format!("no column \"{name}\""));
        Ok(if get("gamma").is_some() {
            PriorHyper::Mfm {
                gamma: need("gamma")?,
            }
        } else if get("u").is_some() {
            PriorHyper::Nggp {
                alpha: need("alpha")?,
                sigma: need("sigma")?,
                u: need("u")?,
            }
        } else if get("sigma").is_some() {
            PriorHyper::PitmanYor {
                alpha: need("alpha")?,
                sigma: need("sigma")?,
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
    /// The Pitman-Yor process.
    PitmanYor(PitmanYor),
    /// The mixture of finite mixtures.
    Mfm(Mfm),
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
            (
                Prior::PitmanYor(py),
                PriorHyper::PitmanYor { .. },
                PriorHyper::PitmanYor { alpha, sigma },
            ) => {
                // Both at once from a state that accepts either order: θ > -σ may need σ set
                // first (σ rising) or θ first (θ falling).
                let mut next = py.clone();
                if next
                    .set_sigma(sigma)
                    .and_then(|()| next.set_theta(alpha))
                    .is_err()
                {
                    next = py.clone();
                    next.set_theta(alpha)?;
                    next.set_sigma(sigma)?;
                }
                *py = next;
            }
            (Prior::Mfm(m), PriorHyper::Mfm { .. }, PriorHyper::Mfm { gamma }) => {
                m.set_gamma(gamma)?;
            }
            _ => {
                return Err(Error::Usage(format!(
                    "hyperparameters {hyper:?} are not those of this prior"
                )))
            }
        }
        Ok(p)
    }

    /// `ln p(Π)` given the current hyperparameters, with `u` integrated out: the EPPF
    /// ([`Dp::ln_eppf`], [`Nggp::ln_eppf`], [`PitmanYor::ln_eppf`], [`Mfm::ln_eppf`]).
    pub fn ln_eppf(&self, sizes: &[usize]) -> Result<f64> {
        match self {
            Prior::Dp(p) => p.ln_eppf(sizes),
            Prior::Nggp(p) => p.ln_eppf(sizes),
            Prior::PitmanYor(p) => p.ln_eppf(sizes),
            Prior::Mfm(p) => p.ln_eppf(sizes),
        }
    }

    /// The current concentration: `α` (DP, NGGP), `θ` (Pitman-Yor); the MFM's `γ`.
    pub fn alpha(&self) -> f64 {
        match self {
            Prior::Dp(p) => p.alpha(),
            Prior::Nggp(p) => p.alpha(),
            Prior::PitmanYor(p) => p.theta(),
            Prior::Mfm(p) => p.gamma(),
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

impl From<PitmanYor> for Prior {
    fn from(p: PitmanYor) -> Self {
        Prior::PitmanYor(p)
    }
}

impl From<Mfm> for Prior {
    fn from(p: Mfm) -> Self {
        Prior::Mfm(p)
    }
}

impl NrmPrior for Prior {
    fn ln_kappa(&self, n: usize) -> f64 {
        match self {
            Prior::Dp(p) => p.ln_kappa(n),
            Prior::Nggp(p) => p.ln_kappa(n),
            Prior::PitmanYor(p) => p.ln_kappa(n),
            Prior::Mfm(p) => p.ln_kappa(n),
        }
    }

    fn ln_kappa_join(&self, n: usize) -> f64 {
        match self {
            Prior::Dp(p) => p.ln_kappa_join(n),
            Prior::Nggp(p) => p.ln_kappa_join(n),
            Prior::PitmanYor(p) => p.ln_kappa_join(n),
            Prior::Mfm(p) => p.ln_kappa_join(n),
        }
    }

    fn ln_kappa_new(&self) -> f64 {
        match self {
            Prior::Dp(p) => p.ln_kappa_new(),
            Prior::Nggp(p) => p.ln_kappa_new(),
            Prior::PitmanYor(p) => p.ln_kappa_new(),
            Prior::Mfm(p) => p.ln_kappa_new(),
        }
    }

    fn k_dependent(&self) -> bool {
        matches!(self, Prior::PitmanYor(_) | Prior::Mfm(_))
    }

    fn ln_v_k(&self, n: usize, k: usize) -> f64 {
        match self {
            Prior::Dp(_) | Prior::Nggp(_) => 0.0,
            Prior::PitmanYor(p) => p.ln_v_k(n, k),
            Prior::Mfm(p) => p.ln_v_k(n, k),
        }
    }

    fn ln_new_shift(&self, n: usize, k: usize) -> f64 {
        match self {
            Prior::Dp(_) | Prior::Nggp(_) => 0.0,
            Prior::PitmanYor(p) => p.ln_new_shift(n, k),
            Prior::Mfm(p) => p.ln_new_shift(n, k),
        }
    }

    fn ln_joint_const(&self, n: usize) -> f64 {
        match self {
            Prior::Dp(p) => p.ln_joint_const(n),
            Prior::Nggp(p) => p.ln_joint_const(n),
            Prior::PitmanYor(p) => p.ln_joint_const(n),
            Prior::Mfm(p) => p.ln_joint_const(n),
        }
    }

    fn ln_joint(&self, sizes: &[usize], ln_marginals: &[f64]) -> f64 {
        match self {
            Prior::Dp(p) => p.ln_joint(sizes, ln_marginals),
            Prior::Nggp(p) => p.ln_joint(sizes, ln_marginals),
            Prior::PitmanYor(p) => p.ln_joint(sizes, ln_marginals),
            Prior::Mfm(p) => p.ln_joint(sizes, ln_marginals),
        }
    }

    fn joint_label(&self) -> &'static str {
        match self {
            Prior::Dp(p) => p.joint_label(),
            Prior::Nggp(p) => p.joint_label(),
            Prior::PitmanYor(p) => p.joint_label(),
            Prior::Mfm(p) => p.joint_label(),
        }
    }

    fn resample_hyper(&mut self, sizes: &[usize], rng: &mut NrmmRng) -> Result<()> {
        match self {
            Prior::Dp(p) => p.resample_hyper(sizes, rng),
            Prior::Nggp(p) => p.resample_hyper(sizes, rng),
            Prior::PitmanYor(p) => p.resample_hyper(sizes, rng),
            Prior::Mfm(p) => p.resample_hyper(sizes, rng),
        }
    }

    fn hyperparameters(&self) -> PriorHyper {
        match self {
            Prior::Dp(p) => p.hyperparameters(),
            Prior::Nggp(p) => p.hyperparameters(),
            Prior::PitmanYor(p) => p.hyperparameters(),
            Prior::Mfm(p) => p.hyperparameters(),
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
