//! A model assembled at run time from user settings: a conjugate kernel over a data set and
//! an NRM prior (the command line's shared model flags).

use crate::data::{Dataset, DenseData};
use crate::error::{Error, Result};
use crate::kernel::diagonal::full_covariance_problem;
use crate::kernel::{DiagHyper, Diagonal, MultinomialDirichlet, NormalWishart, NwHyper};
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
    /// Independent Normal-Gamma per dimension (diagonal covariance) on real vectors
    /// ([`crate::kernel::diagonal`]).
    Diag,
}

/// The kernel a model uses for its data, and why, when it was chosen automatically for a
/// reason the user should hear ([`ModelSpec::kernel_for`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelChoice {
    /// The kernel.
    pub kind: KernelKind,
    /// Why the diagonal kernel replaced the default Normal-Wishart one (one line), if it did.
    pub reason: Option<String>,
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

/// How the Normal-Wishart hyperparameters the user does not give are derived from the data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NwDefaults {
    /// As [`NwDefaults::Scaled`], then, for a run, the scale set by empirical Bayes from a
    /// short pilot run ([`crate::run::pilot`]): a cluster's expected covariance is the pooled
    /// within-cluster covariance of the pilot's best partition instead of a share of the
    /// whole data's covariance (which holds the spread between clusters too). Unit-equivariant
    /// as `Scaled` is. Where no run is made (exact enumeration, a tree or SVA fit), it is
    /// `Scaled`.
    #[default]
    Pooled,
    /// Unit-equivariant ([`NwHyper::scaled_from_data`] with [`scaled_share`], [`SCALED_R`],
    /// [`scaled_nu_minus_d`]): rescaling, shifting or any invertible affine map of the data
    /// leaves the posterior over partitions unchanged.
    Scaled,
    /// The reference code's choice ([`NwHyper::from_data`]: `det Ψ = 0.1`, `r = 0.1`,
    /// `ν = d + 6`), kept for the paper reproductions and golden values. It depends on the
    /// data's units.
    Reference,
}

impl NwDefaults {
    /// What a model recorded before this choice existed used: the reference defaults.
    fn recorded_before_choice() -> Self {
        NwDefaults::Reference
    }
}

/// The number of equal clusters whose volumes fill the data's, by which the unit-equivariant
/// default sets the expected cluster covariance ([`scaled_share`]).
pub const SCALED_NOMINAL_CLUSTERS: f64 = 10.0;
/// The unit-equivariant default's mean precision scale `r`: a cluster mean's prior covariance
/// is `Σ / r`. A small `r` (mclust's default shrinkage, Fraley & Raftery 2007) makes a new
/// cluster's predictive broad; in high dimension a larger one lets lone points of a single
/// Gaussian open clusters of their own (`r = 0.1` finds hundreds of clusters in 600 points of
/// N(0, I) at d = 100; `r = 0.01` finds one).
pub const SCALED_R: f64 = 0.01;
/// The unit-equivariant default's `ν - d` in dimension `d`: `3 + d/2`.
///
/// Why: with `ν` barely above `d + 1` (scikit-learn's `ν = d`, mclust's `d + 2`) the prior on a
/// cluster's covariance leaves its shape almost free, and a cluster of fewer points than
/// dimensions can then claim a covariance flattened onto the span of its points; pure noise,
/// N(0, I) with n = 600 and d = 100, has a higher log joint split into 34 clusters than as one
/// at `ν = d + 3` (−96737 against −104060), and the one cluster wins from `ν ≈ 1.5 d` on
/// (−90881 against −92973 at `ν = 150`). Growing `ν - d` with `d` keeps shapes near the
/// expected covariance in high dimension, while in low dimension (`d ≤ 4`: `ν - d ≤ 5`) the
/// prior stays weak; on iris, wine and breast cancer the held-out density changes by at most
/// 0.12 nats per point against `ν = d + 3` (the real-data benchmark). Cost: O(1).
pub fn scaled_nu_minus_d(d: usize) -> f64 {
    3.0 + 0.5 * d as f64
}

/// The unit-equivariant default's expected cluster covariance as a share of the data
/// covariance in dimension `d`: `G^{-2/d}` with `G` = [`SCALED_NOMINAL_CLUSTERS`], so that a
/// cluster's ellipsoid has `1/G` of the data's volume (the scale of mclust's default conjugate
/// prior, Fraley & Raftery 2007). In high dimension the share approaches 1, which keeps noise
/// in one cluster. Cost: O(1).
pub fn scaled_share(d: usize) -> f64 {
    SCALED_NOMINAL_CLUSTERS.powf(-2.0 / d as f64)
}

/// Everything that defines a model, with `None` meaning "the default".
///
/// Defaults: the kernel follows the data (Normal-Wishart for real vectors, or the diagonal
/// kernel where a full covariance cannot be estimated, [`ModelSpec::kernel_for`];
/// Multinomial-Dirichlet for counts); Normal-Wishart hyperparameters from the data as
/// [`NwDefaults`] says (unit-equivariant unless the reference choice is asked for), each
/// overridable; `β` = [`DEFAULT_BETA`]; `α = 1`; `σ = 0.5`; `u = 1`.
/// With `hyperpriors`, `α ~ Gamma(1, 1)` (DP: Escobar-West update) and for NGGP
/// `σ ~ Beta(1.5, 1.5)` on `[0.01, 0.99]` (MATH §1.6). The NGGP's `u` is always resampled by
/// samplers, since it is part of the augmented state. With `kernel_hyperpriors`, the kernel's
/// own hyperparameters are resampled too ([`crate::kernel::hyperprior`]).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ModelSpec {
    /// Kernel; `None` follows the data.
    pub kernel: Option<KernelKind>,
    /// Dirichlet concentration of the Multinomial-Dirichlet kernel (`None`: [`DEFAULT_BETA`]).
    pub beta: Option<f64>,
    /// Normal-Wishart ξ.
    pub nw_xi: Option<Vec<f64>>,
    /// Normal-Wishart Ψ, row-major; for the diagonal kernel its d diagonal entries ψ_j.
    pub nw_psi: Option<Vec<f64>>,
    /// Normal-Wishart r.
    pub nw_r: Option<f64>,
    /// Normal-Wishart ν.
    pub nw_nu: Option<f64>,
    /// How the Normal-Wishart hyperparameters not given are derived from the data.
    #[serde(default = "NwDefaults::recorded_before_choice")]
    pub nw_defaults: NwDefaults,
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
    /// Whether the kernel's own hyperparameters (the Normal-Wishart and diagonal kernels' scale
    /// multiplier `s` of `Ψ = s Ψ₀`; Multinomial-Dirichlet `β`) carry the default
    /// log-normal hyperpriors of [`crate::kernel::KernelHyperPriors::default_for`], centred on
    /// the kernel this spec builds, and are resampled every sweep
    /// ([`crate::sampler::KernelHyperMove`]). Off by default, and then not serialised (as
    /// run files have always recorded it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kernel_hyperpriors: bool,
    /// The pilot run that set `nw_psi` ([`NwDefaults::Pooled`]), if one did: a run records
    /// its model with the scale the pilot chose, so that resuming and predicting use it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pilot: Option<PilotScale>,
}

/// What a pilot run that chose the cluster scale found ([`NwDefaults::Pooled`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PilotScale {
    /// Sweeps of each pilot chain.
    pub sweeps: u64,
    /// Pilot chains.
    pub chains: usize,
    /// Clusters of the partition whose pooled within-cluster covariance set the scale.
    pub clusters: usize,
    /// When the pilot chose the diagonal kernel over the default full-covariance one by
    /// evidence ([`crate::run::pilot`]), by how many nats (rounded) its log joint at its best
    /// partition was above the full kernel's at its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagonal_by: Option<i64>,
    /// When the pilot ran on a random subsample of the points
    /// ([`crate::run::pilot::pilot_rows`]), how many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub points: Option<usize>,
}

impl Default for ModelSpec {
    fn default() -> Self {
        ModelSpec {
            kernel: None,
            beta: None,
            nw_xi: None,
            nw_psi: None,
            nw_r: None,
            nw_nu: None,
            nw_defaults: NwDefaults::Pooled,
            prior: PriorKind::Dp,
            alpha: None,
            sigma: None,
            u: None,
            hyperpriors: false,
            kernel_hyperpriors: false,
            pilot: None,
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
    /// Diagonal covariance.
    Diag(Diagonal),
}

impl AnyKernel {
    /// Dimension (NW) or vocabulary size (MD).
    pub fn dim(&self) -> usize {
        match self {
            AnyKernel::Nw(k) => k.dim(),
            AnyKernel::Md(k) => k.hyper().vocab(),
            AnyKernel::Diag(k) => k.dim(),
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
                        "`sigma` and `u` belong to the NGGP prior: add `prior` nggp".into(),
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

    /// The Normal-Wishart hyperparameters for `x`: the user's values where given, the rest
    /// from the data as [`NwDefaults`] says. Under the unit-equivariant default, a given
    /// `ν` also sets the scale's factor `ν - d - 1`, so the expected cluster covariance stays
    /// [`scaled_share`] of the data's. Cost: O(N d² + d³) unless ξ and Ψ are both given.
    pub fn nw_hyper(&self, x: &DenseData) -> Result<NwHyper> {
        let d = x.d() as f64;
        let (r, nu) = match self.nw_defaults {
            NwDefaults::Pooled | NwDefaults::Scaled => (SCALED_R, d + scaled_nu_minus_d(x.d())),
            NwDefaults::Reference => (NwHyper::REFERENCE_R, d + NwHyper::REFERENCE_NU_MINUS_D),
        };
        let (r, nu) = (self.nw_r.unwrap_or(r), self.nw_nu.unwrap_or(nu));
        let (xi, psi) = match (&self.nw_xi, &self.nw_psi) {
            (Some(xi), Some(psi)) => (xi.clone(), psi.clone()),
            (xi, psi) => {
                let from_data = match self.nw_defaults {
                    // ν ≤ d + 1 has no expected covariance; its scale then follows ν = d + 2.
                    NwDefaults::Pooled | NwDefaults::Scaled => {
                        NwHyper::scaled_from_data(x, scaled_share(x.d()), r, (nu - d).max(2.0))?
                    }
                    NwDefaults::Reference => NwHyper::from_data(x)?,
                };
                (
                    xi.clone().unwrap_or_else(|| from_data.xi().to_vec()),
                    psi.clone().unwrap_or_else(|| from_data.psi().to_vec()),
                )
            }
        };
        NwHyper::new(xi, psi, r, nu)
    }

    /// The kernel for `data`: the one asked for; else Multinomial-Dirichlet for counts; else
    /// for real data Normal-Wishart, unless its scale matrix would come from a covariance that
    /// cannot be estimated ([`full_covariance_problem`]: `d ≥ n/2`, a constant column, or a
    /// column that is a linear combination of others; only when `nw_psi` is not given), when
    /// the diagonal kernel takes its place and the reason is returned for the caller to
    /// report. Cost: O(N d) for counts, a constant column or `d ≥ n/2`; otherwise
    /// O(N d² + d³).
    pub fn kernel_for(&self, data: &Dataset) -> KernelChoice {
        let plain = |kind| KernelChoice { kind, reason: None };
        match (self.kernel, data) {
            (Some(kind), _) => plain(kind),
            (None, Dataset::Counts(_)) => plain(KernelKind::Md),
            (None, Dataset::Dense(_)) if self.nw_psi.is_some() => plain(KernelKind::Nw),
            (None, Dataset::Dense(x)) => match full_covariance_problem(x) {
                Some(why) => KernelChoice {
                    kind: KernelKind::Diag,
                    reason: Some(format!(
                        "using the diagonal kernel (`kernel` diag): {why}, so a full \
                         covariance cannot be estimated (give `kernel` nw to insist)"
                    )),
                },
                None => plain(KernelKind::Nw),
            },
        }
    }

    /// The diagonal kernel's hyperparameters for `x`: the user's `ξ`, `ψ` (d values), `r`, `ν`
    /// where given, the rest by the policy of [`NwDefaults`] applied to a diagonal scale.
    /// Unit-equivariant ([`DiagHyper::from_data`]): `r` = [`SCALED_R`],
    /// `ν = 1 + scaled_nu_minus_d(1)` (per dimension, as the Normal-Wishart's `ν - d` at d = 1), and `ψ`
    /// so that the expected cluster variances are [`scaled_share`]`(d)` of the column
    /// variances (a cluster's box then has a tenth of the data's volume, as the
    /// Normal-Wishart's ellipsoid); a given `ν ≤ 3` sets the scale as `ν = 3` does. Reference:
    /// `r = 0.1`, `ν = 7` and `ψ` the variances rescaled to `Π ψ_j = 0.1`. With d = 1 both
    /// are the Normal-Wishart defaults. Cost: O(N d).
    pub fn diag_hyper(&self, x: &DenseData) -> Result<DiagHyper> {
        let d = x.d();
        let (r, nu) = match self.nw_defaults {
            NwDefaults::Pooled | NwDefaults::Scaled => (SCALED_R, 1.0 + scaled_nu_minus_d(1)),
            NwDefaults::Reference => (NwHyper::REFERENCE_R, 1.0 + NwHyper::REFERENCE_NU_MINUS_D),
        };
        let (r, nu) = (self.nw_r.unwrap_or(r), self.nw_nu.unwrap_or(nu));
        let (xi, psi) = match (&self.nw_xi, &self.nw_psi) {
            (Some(xi), Some(psi)) => (xi.clone(), psi.clone()),
            (xi, psi) => {
                let from_data = match self.nw_defaults {
                    NwDefaults::Pooled | NwDefaults::Scaled => {
                        DiagHyper::from_data(x, scaled_share(d), r, (nu - 1.0).max(2.0))?
                    }
                    NwDefaults::Reference => DiagHyper::reference_from_data(x)?,
                };
                (
                    xi.clone().unwrap_or_else(|| from_data.xi().to_vec()),
                    psi.clone().unwrap_or_else(|| from_data.psi().to_vec()),
                )
            }
        };
        DiagHyper::new(xi, psi, r, nu)
    }

    /// The kernel over `data` ([`ModelSpec::kernel_for`] when none is given), checking that
    /// kernel and data agree.
    pub fn build_kernel(&self, data: Dataset) -> Result<AnyKernel> {
        let kind = self.kernel_for(&data).kind;
        match (kind, data) {
            (KernelKind::Nw, Dataset::Dense(x)) => {
                let hyper = self.nw_hyper(&x)?;
                Ok(AnyKernel::Nw(NormalWishart::new(Arc::new(x), hyper)?))
            }
            (KernelKind::Diag, Dataset::Dense(x)) => {
                let hyper = self.diag_hyper(&x)?;
                Ok(AnyKernel::Diag(Diagonal::new(Arc::new(x), hyper)?))
            }
            (KernelKind::Md, Dataset::Counts(c)) => {
                if self.nw_xi.is_some()
                    || self.nw_psi.is_some()
                    || self.nw_r.is_some()
                    || self.nw_nu.is_some()
                {
                    return Err(Error::Usage(
                        "`nw_*` hyperparameters (`nw_xi`, `nw_psi`, `nw_r`, `nw_nu`) belong to the \
                         Normal-Wishart kernel, but the data are counts"
                            .into(),
                    ));
                }
                Ok(AnyKernel::Md(MultinomialDirichlet::new(
                    Arc::new(c),
                    self.beta.unwrap_or(DEFAULT_BETA),
                )?))
            }
            (KernelKind::Md, Dataset::Dense(_)) => Err(Error::Usage(
                "`kernel` md needs count data (docword or LDA-C), but the data are a real matrix"
                    .into(),
            )),
            (KernelKind::Nw, Dataset::Counts(_)) => Err(Error::Usage(
                "`kernel` nw needs a real matrix, but the data are counts: use `kernel` md".into(),
            )),
            (KernelKind::Diag, Dataset::Counts(_)) => Err(Error::Usage(
                "`kernel` diag needs a real matrix, but the data are counts: use `kernel` md"
                    .into(),
            )),
        }
    }
}

/// Dirichlet concentration of the Multinomial-Dirichlet kernel when none is given.
pub const DEFAULT_BETA: f64 = 0.1;

impl ModelSpec {
    /// Whether samplers resample any hyperparameter of the prior: with `hyperpriors`, and
    /// always for the NGGP (its `u` is part of the augmented state).
    pub fn resamples_hyper(&self) -> bool {
        self.hyperpriors || self.prior == PriorKind::Nggp
    }

    /// Refuses settings that `data` make meaningless, naming the parameter: `beta` for real
    /// data under a Normal-Wishart or diagonal kernel, `xi` and `psi` of the wrong length for
    /// the data's dimension or of a magnitude that would overflow. (Kernel/data mismatches and
    /// Normal-Wishart settings on count data are refused by [`ModelSpec::build_kernel`].)
    pub fn check_for(&self, data: &Dataset) -> Result<()> {
        let Dataset::Dense(x) = data else {
            return Ok(());
        };
        if self.kernel == Some(KernelKind::Md) {
            return Ok(());
        }
        if self.beta.is_some() {
            return Err(Error::Usage(
                "`beta` is the Multinomial-Dirichlet concentration, but the data are a real \
                 matrix (Normal-Wishart kernel): drop `beta`"
                    .into(),
            ));
        }
        let d = x.d();
        // ξ is on the data's scale, Ψ on its square's.
        let limit = crate::data::MAX_MAGNITUDE;
        for (name, values, max) in [
            ("xi", &self.nw_xi, limit),
            ("psi", &self.nw_psi, limit * limit),
        ] {
            // Non-finite values are the kernel's to refuse, naming their index.
            if let Some(v) = values
                .iter()
                .flatten()
                .find(|v| v.is_finite() && v.abs() > max)
            {
                return Err(Error::param(
                    name,
                    v,
                    &format!(
                        "values of magnitude at most {max:e} (they enter squares and sums with \
                         the data and would overflow): rescale the data and the hyperparameters"
                    ),
                ));
            }
        }
        if let Some(xi) = &self.nw_xi {
            if xi.len() != d {
                return Err(Error::param(
                    "xi",
                    format!("{} values", xi.len()),
                    &format!("{d} comma-separated values, one per data column"),
                ));
            }
        }
        if let Some(psi) = &self.nw_psi {
            if self.kernel == Some(KernelKind::Diag) {
                if psi.len() != d {
                    return Err(Error::param(
                        "psi",
                        format!("{} values", psi.len()),
                        &format!(
                            "{d} comma-separated values with `kernel` diag, one scale per data \
                             column"
                        ),
                    ));
                }
            } else if psi.len() != d * d {
                return Err(Error::param(
                    "psi",
                    format!("{} values", psi.len()),
                    &format!("{d} x {d} = {} comma-separated values, row by row", d * d),
                ));
            }
        }
        Ok(())
    }

    /// Ties a failed positive-definiteness check of [`ModelSpec::build_kernel`] to what can be
    /// changed: the given `psi`, or the data-based defaults of `xi` and `psi`, which giving both
    /// replaces.
    fn explain_kernel_error(&self, e: Error) -> Error {
        match e {
            Error::NotPositiveDefinite(what) if self.nw_psi.is_some() && what.contains("psi") => {
                Error::Usage(format!(
                    "`psi` must be symmetric positive definite: {what} is not"
                ))
            }
            // One point has no covariance: not an empty input, a model that needs its settings.
            Error::Empty(what) if what.contains("Normal-Wishart") => Error::Usage(format!(
                "{what}: the Normal-Wishart defaults (xi the data mean, psi from the data \
                 covariance) cannot be derived from fewer than 2 points; give `xi` and `psi`"
            )),
            Error::NotPositiveDefinite(what) if what.contains("data") || self.nw_psi.is_none() => {
                Error::Usage(format!(
                    "{what} is not symmetric positive definite, so the Normal-Wishart defaults \
                     cannot be derived from the data (the covariance of fewer points than \
                     dimensions + 1, of a constant column or of collinear columns is singular): \
                     give `xi` and `psi`"
                ))
            }
            other => other,
        }
    }
}

/// A model built over its data: the kernel, the prior with its initial hyperparameters, the
/// settings as asked for and as resolved, and the data's fingerprint.
#[derive(Clone, Debug)]
pub struct Model {
    /// The settings as asked for (defaults unresolved), as a run records them.
    pub requested: ModelSpec,
    /// The settings with the kernel and `beta` resolved.
    pub spec: ModelSpec,
    /// The kernel over the data.
    pub kernel: AnyKernel,
    /// The prior with its initial hyperparameters.
    pub prior: Prior,
    /// What identifies the data.
    pub fingerprint: crate::data::Fingerprint,
    /// Why the kernel differs from the default one asked for, when it does (one line, for
    /// the user to hear; see [`ModelSpec::kernel_for`]).
    pub kernel_note: Option<String>,
}

impl Model {
    /// The model `spec` over `data`: the prior, checks of the settings against the data
    /// ([`ModelSpec::check_for`]), the kernel ([`ModelSpec::kernel_for`],
    /// [`ModelSpec::build_kernel`]) and the fingerprint. Errors name the parameter to change.
    /// Cost: the kernel's construction (for Normal-Wishart defaults O(N d² + d³)) and a pass
    /// over the data.
    pub fn build(spec: &ModelSpec, data: Dataset) -> Result<Model> {
        let prior = spec.build_prior()?;
        spec.check_for(&data)?;
        let fingerprint = crate::data::Fingerprint::of(&data);
        let choice = spec.kernel_for(&data);
        let resolved = ModelSpec {
            kernel: Some(choice.kind),
            beta: Some(spec.beta.unwrap_or(DEFAULT_BETA)),
            ..spec.clone()
        };
        let kernel = resolved
            .build_kernel(data)
            .map_err(|e| spec.explain_kernel_error(e))?;
        Ok(Model {
            requested: spec.clone(),
            spec: resolved,
            kernel,
            prior,
            fingerprint,
            kernel_note: choice.reason,
        })
    }

    /// This model with the kernel's scale `nw_psi` set to `psi` (d·d values for the
    /// Normal-Wishart kernel, d for the diagonal one), as a pilot run found it
    /// ([`crate::run::pilot`]); both specs record it, with the kernel kind made explicit, so
    /// that a run records the model it ran and rebuilds it on resume. Cost: the kernel's
    /// construction over the same (shared) data.
    pub fn with_pilot_scale(&self, psi: Vec<f64>, pilot: PilotScale) -> Result<Model> {
        let settle = |spec: &ModelSpec| ModelSpec {
            kernel: self.spec.kernel,
            nw_psi: Some(psi.clone()),
            pilot: Some(pilot),
            ..spec.clone()
        };
        let (requested, spec) = (settle(&self.requested), settle(&self.spec));
        let kernel = match &self.kernel {
            AnyKernel::Nw(k) => AnyKernel::Nw(NormalWishart::new(
                Arc::clone(k.data()),
                spec.nw_hyper(k.data())?,
            )?),
            AnyKernel::Diag(k) => AnyKernel::Diag(Diagonal::new(
                Arc::clone(k.data()),
                spec.diag_hyper(k.data())?,
            )?),
            AnyKernel::Md(_) => {
                return Err(Error::Usage(
                    "a pilot sets the scale of a kernel on real vectors, not of counts".into(),
                ))
            }
        };
        Ok(Model {
            requested,
            spec,
            kernel,
            prior: self.prior.clone(),
            fingerprint: self.fingerprint.clone(),
            kernel_note: self.kernel_note.clone(),
        })
    }

    /// The number of points.
    pub fn n_points(&self) -> usize {
        crate::with_kernel!(&self.kernel, |k| crate::kernel::ConjugateKernel::n_points(
            k
        ))
    }
}

/// Runs `$body` with `$k` bound to the concrete kernel inside an [`AnyKernel`], so generic
/// code is written once for every kernel.
#[macro_export]
macro_rules! with_kernel {
    ($any:expr, |$k:ident| $body:expr) => {
        match $any {
            $crate::model::AnyKernel::Nw($k) => $body,
            $crate::model::AnyKernel::Md($k) => $body,
            $crate::model::AnyKernel::Diag($k) => $body,
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::ConjugateKernel;
    use crate::partition::Partition;
    use crate::rng::SeedPlan;
    use crate::sampler::{Gibbs, GibbsScan, Move, RngChooser, Sams, State};
    use proptest::prelude::*;
    use rand_distr::Distribution;

    /// Labels after `sweeps` sweeps of SAMS and Gibbs from one cluster, seed `seed`, under the
    /// default model of `x`.
    fn chain_labels(x: DenseData, seed: u64, sweeps: usize) -> Vec<usize> {
        let spec = ModelSpec::default();
        let AnyKernel::Nw(kernel) = spec.build_kernel(Dataset::Dense(x)).unwrap() else {
            unreachable!("real data get the Normal-Wishart kernel")
        };
        let prior = spec.build_prior().unwrap();
        let partition = Partition::from_labels(&kernel, &vec![0; kernel.n_points()]).unwrap();
        let mut state = State { partition, prior };
        let mut rng = SeedPlan::new(seed).chain(0);
        let mut gibbs = Gibbs::new(GibbsScan::Full).unwrap();
        let mut sams = Sams::new();
        for _ in 0..sweeps {
            let mut chooser = RngChooser::new(&mut rng);
            sams.step(&kernel, &mut state, &mut chooser).unwrap();
            gibbs.step(&kernel, &mut state, &mut chooser).unwrap();
        }
        state.partition.canonical_labels()
    }

    /// Three groups of 12 points in `d` dimensions, 4 standard deviations apart, from `seed`.
    fn grouped(d: usize, seed: u64) -> Vec<Vec<f64>> {
        let mut rng = SeedPlan::new(seed).chain(1);
        (0..36)
            .map(|i| {
                (0..d)
                    .map(|j| {
                        let centre = if (i / 12 + j) % 3 == 0 { 4.0 } else { 0.0 };
                        let noise: f64 = rand_distr::StandardNormal.sample(&mut rng);
                        centre + noise
                    })
                    .collect()
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// The unit-equivariant defaults: the same seed on the data and on the data with
        /// random per-column scales (10⁻³ to 10³) and shifts gives the same partitions, and so
        /// does a random invertible linear map with a shift.
        #[test]
        fn default_prior_ignores_units(
            d in 1usize..5,
            seed in 0u64..1000,
            log_scales in proptest::collection::vec(-3.0f64..3.0, 4),
            shifts in proptest::collection::vec(-1e3f64..1e3, 4),
            mix in proptest::collection::vec(-0.5f64..0.5, 16),
        ) {
            let rows = grouped(d, seed);
            let base = chain_labels(DenseData::from_rows(&rows).unwrap(), seed, 6);
            let rescaled: Vec<Vec<f64>> = rows
                .iter()
                .map(|r| {
                    r.iter()
                        .enumerate()
                        .map(|(j, v)| v * 10f64.powf(log_scales[j]) + shifts[j])
                        .collect()
                })
                .collect();
            let same = chain_labels(DenseData::from_rows(&rescaled).unwrap(), seed, 6);
            prop_assert_eq!(&base, &same);
            // x ↦ (I + M) x + b with |M_jk| < 0.5 / d: diagonally dominant, so invertible.
            let mapped: Vec<Vec<f64>> = rows
                .iter()
                .map(|r| {
                    (0..d)
                        .map(|j| {
                            let mut v = r[j] + shifts[j];
                            for (k, x) in r.iter().enumerate() {
                                v += mix[j * 4 + k] / d as f64 * x;
                            }
                            v
                        })
                        .collect()
                })
                .collect();
            let same = chain_labels(DenseData::from_rows(&mapped).unwrap(), seed, 6);
            prop_assert_eq!(&base, &same);
        }
    }

    /// `ln m(three groups) - ln m(one cluster)` of [`grouped`] data scaled by `scale`, under
    /// the model of `spec`.
    fn split_gain(spec: &ModelSpec, scale: f64) -> f64 {
        let x: Vec<Vec<f64>> = grouped(2, 3)
            .iter()
            .map(|r| r.iter().map(|v| v * scale).collect())
            .collect();
        let data = Dataset::Dense(DenseData::from_rows(&x).unwrap());
        let AnyKernel::Nw(k) = spec.build_kernel(data).unwrap() else {
            unreachable!("real data get the Normal-Wishart kernel")
        };
        let ln_m =
            |points: std::ops::Range<usize>| k.ln_marginal(&k.stat_of(&points.collect::<Vec<_>>()));
        (0..3).map(|g| ln_m(12 * g..12 * g + 12)).sum::<f64>() - ln_m(0..36)
    }

    /// The reference defaults depend on units, which is why they are not the default; the
    /// unit-equivariant ones change every cluster's marginal by the same Jacobian.
    #[test]
    fn reference_defaults_depend_on_units() {
        let reference = ModelSpec {
            nw_defaults: NwDefaults::Reference,
            ..ModelSpec::default()
        };
        assert!((split_gain(&reference, 1.0) - split_gain(&reference, 1000.0)).abs() > 1.0);
        let scaled = ModelSpec::default();
        assert!((split_gain(&scaled, 1.0) - split_gain(&scaled, 1000.0)).abs() < 1e-8);
    }
}
