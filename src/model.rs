//! A model assembled at run time from user settings: a conjugate kernel over a data set and
//! an NRM prior (the command line's shared model flags).

use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::kernel::{MultinomialDirichlet, NormalWishart, NwHyper};
use crate::prior::{AlphaUpdate, Dp, GammaPrior, Nggp, NggpHyperPriors, Prior};
use std::sync::Arc;

/// Which conjugate kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KernelKind {
    /// Normal-Wishart on real vectors (MATH §2.1).
    Nw,
    /// Multinomial-Dirichlet on count vectors (MATH §2.2).
    Md,
}

/// Which NRM prior.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PriorKind {
    /// Dirichlet process (MATH §1.5).
    Dp,
    /// Normalized generalized gamma process (MATH §1.4).
    Nggp,
}

/// Everything that defines a model, with `None` meaning "the reference default".
///
/// Defaults: the kernel follows the data (Normal-Wishart for real vectors,
/// Multinomial-Dirichlet for counts); Normal-Wishart hyperparameters from the data as in the
/// reference code (MATH §2.1), each overridable; `β = 0.1`; `α = 1`; `σ = 0.5`; `u = 1`.
/// With `hyperpriors`, `α ~ Gamma(1, 1)` (DP: Escobar-West update) and for NGGP
/// `σ ~ Beta(1.5, 1.5)` on `[0.01, 0.99]` (MATH §1.6). The NGGP's `u` is always resampled by
/// samplers, since it is part of the augmented state.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ModelSpec {
    /// Kernel; `None` follows the data.
    pub kernel: Option<KernelKind>,
    /// Dirichlet concentration of the Multinomial-Dirichlet kernel.
    pub beta: f64,
    /// Normal-Wishart ξ.
    pub nw_xi: Option<Vec<f64>>,
    /// Normal-Wishart Ψ, row-major.
    pub nw_psi: Option<Vec<f64>>,
    /// Normal-Wishart r.
    pub nw_r: Option<f64>,
    /// Normal-Wishart ν.
    pub nw_nu: Option<f64>,
    /// The prior.
    pub prior: PriorKind,
    /// Initial or fixed α.
    pub alpha: Option<f64>,
    /// Initial or fixed σ (NGGP).
    pub sigma: Option<f64>,
    /// Initial or fixed u (NGGP).
    pub u: Option<f64>,
    /// Whether α (and σ) carry the reference hyperpriors instead of being fixed.
    pub hyperpriors: bool,
}

impl Default for ModelSpec {
    fn default() -> Self {
        ModelSpec {
            kernel: None,
            beta: 0.1,
            nw_xi: None,
            nw_psi: None,
            nw_r: None,
            nw_nu: None,
            prior: PriorKind::Dp,
            alpha: None,
            sigma: None,
            u: None,
            hyperpriors: false,
        }
    }
}

/// A kernel of either kind over its data set.
#[derive(Clone, Debug)]
pub enum AnyKernel {
    /// Normal-Wishart.
    Nw(NormalWishart),
    /// Multinomial-Dirichlet.
    Md(MultinomialDirichlet),
}

impl AnyKernel {
    /// Dimension (NW) or vocabulary size (MD).
    pub fn dim(&self) -> usize {
        match self {
            AnyKernel::Nw(k) => k.dim(),
            AnyKernel::Md(k) => k.hyper().vocab(),
        }
    }
}

impl ModelSpec {
    /// The prior with its initial hyperparameters, as samplers use it (NGGP: `u` resampled;
    /// `α`, `σ` resampled only with `hyperpriors`).
    pub fn build_prior(&self) -> Result<Prior> {
        let alpha = self.alpha.unwrap_or(1.0);
        match self.prior {
            PriorKind::Dp => {
                if self.sigma.is_some() || self.u.is_some() {
                    return Err(Error::Usage(
                        "--sigma and --u belong to the NGGP prior: add --prior nggp".into(),
                    ));
                }
                Ok(Prior::Dp(if self.hyperpriors {
                    Dp::with_alpha_prior(alpha, GammaPrior::reference(), AlphaUpdate::EscobarWest)?
                } else {
                    Dp::new(alpha)?
                }))
            }
            PriorKind::Nggp => {
                let hyper = if self.hyperpriors {
                    NggpHyperPriors::reference()
                } else {
                    NggpHyperPriors {
                        sample_u: true,
                        ..NggpHyperPriors::fixed()
                    }
                };
                Ok(Prior::Nggp(Nggp::new(
                    alpha,
                    self.sigma.unwrap_or(0.5),
                    self.u.unwrap_or(1.0),
                    hyper,
                )?))
            }
        }
    }

    /// The kernel over `data`, checking that kernel and data agree.
    pub fn build_kernel(&self, data: Dataset) -> Result<AnyKernel> {
        match (self.kernel, data) {
            (None | Some(KernelKind::Nw), Dataset::Dense(x)) => {
                // Only ξ and Ψ come from the data; r and ν defaults do not need it.
                let reference = if self.nw_xi.is_some() && self.nw_psi.is_some() {
                    None
                } else {
                    Some(NwHyper::from_data(&x)?)
                };
                let pick = |own: &Option<Vec<f64>>, f: fn(&NwHyper) -> &[f64]| {
                    own.clone().unwrap_or_else(|| {
                        reference
                            .as_ref()
                            .map(|h| f(h).to_vec())
                            .unwrap_or_default()
                    })
                };
                let hyper = NwHyper::new(
                    pick(&self.nw_xi, NwHyper::xi),
                    pick(&self.nw_psi, NwHyper::psi),
                    self.nw_r.unwrap_or(0.1),
                    self.nw_nu.unwrap_or(x.d() as f64 + 6.0),
                )?;
                Ok(AnyKernel::Nw(NormalWishart::new(Arc::new(x), hyper)?))
            }
            (None | Some(KernelKind::Md), Dataset::Counts(c)) => {
                if self.nw_xi.is_some()
                    || self.nw_psi.is_some()
                    || self.nw_r.is_some()
                    || self.nw_nu.is_some()
                {
                    return Err(Error::Usage(
                        "--nw-* hyperparameters belong to the Normal-Wishart kernel, but the data are counts".into(),
                    ));
                }
                Ok(AnyKernel::Md(MultinomialDirichlet::new(
                    Arc::new(c),
                    self.beta,
                )?))
            }
            (Some(KernelKind::Md), Dataset::Dense(_)) => Err(Error::Usage(
                "--kernel md needs count data (docword or LDA-C), but the data are a real matrix"
                    .into(),
            )),
            (Some(KernelKind::Nw), Dataset::Counts(_)) => Err(Error::Usage(
                "--kernel nw needs a real matrix, but the data are counts: use --kernel md".into(),
            )),
        }
    }
}

/// Runs `$body` with `$k` bound to the concrete kernel inside an [`AnyKernel`], so generic
/// code is written once for both kernels.
#[macro_export]
macro_rules! with_kernel {
    ($any:expr, |$k:ident| $body:expr) => {
        match $any {
            $crate::model::AnyKernel::Nw($k) => $body,
            $crate::model::AnyKernel::Md($k) => $body,
        }
    };
}
