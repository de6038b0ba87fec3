//! A model assembled at run time from user settings: a conjugate kernel over a data set and
//! an NRM prior (the command line's shared model flags).

use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::kernel::diagonal::full_covariance_problem;
use crate::kernel::{DiagHyper, Diagonal, KernelSettings, NormalWishart, NwHyper};
use crate::prior::{
    AlphaUpdate, Dp, GammaPrior, KPrior, Mfm, Nggp, NggpHyperPriors, PitmanYor, Prior,
    PyHyperPriors,
};
use std::sync::Arc;

pub use crate::kernel::multinomial_dirichlet::DEFAULT_BETA;
pub use crate::kernel::settings::{
    scaled_nu_minus_d, scaled_share, NwDefaults, RealColumns, SCALED_NOMINAL_CLUSTERS, SCALED_R,
};
pub use crate::kernel::{AnyKernel, KernelKind};

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
    /// Pitman-Yor process, a Gibbs-type prior ([`crate::prior::pitman_yor`]).
    #[serde(rename = "py")]
    PitmanYor,
    /// Mixture of finite mixtures, a Gibbs-type prior ([`crate::prior::mfm`]).
    Mfm,
}

/// Everything that defines a model, with `None` meaning "the default".
///
/// Defaults: the kernel follows the data (Normal-Wishart for real vectors, or the diagonal
/// kernel where a full covariance cannot be estimated, [`ModelSpec::kernel_for`];
/// Multinomial-Dirichlet for counts); Normal-Wishart hyperparameters from the data as
/// [`NwDefaults`] says (unit-equivariant unless the reference choice is asked for), each
/// overridable; `β` = [`DEFAULT_BETA`]; `α = 1`; `σ = 0.5`; `u = 1`; for the MFM `γ = 1` and
/// `K - 1 ~ Poisson(1)` (Miller & Harrison 2018's choice).
/// With `hyperpriors`, `α ~ Gamma(1, 1)` (DP: Escobar-West update; Pitman-Yor: `θ`, the `α`
/// of its settings, by slice sampling), for NGGP and Pitman-Yor `σ ~ Beta(1.5, 1.5)` on
/// `[0.01, 0.99]` (MATH §1.6), and for the MFM `γ ~ Gamma(1, 1)`. The NGGP's `u` is always resampled by
/// samplers, since it is part of the augmented state. With `kernel_hyperpriors`, the kernel's
/// own hyperparameters are resampled too ([`crate::kernel::hyperprior`]).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ModelSpec {
    /// Kernel; `None` follows the data.
    pub kernel: Option<KernelKind>,
    /// Dirichlet concentration of the Multinomial-Dirichlet kernel, and the Beta(β, β)
    /// parameter of the Beta-Bernoulli kernel (`None`: [`DEFAULT_BETA`]).
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
    /// Initial or fixed γ, the Dirichlet parameter of the MFM; not serialised when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gamma: Option<f64>,
    /// The MFM's prior on the number of components; not serialised when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k_prior: Option<KPrior>,
    /// Whether α (and σ) carry the reference hyperpriors instead of being fixed.
    pub hyperpriors: bool,
    /// Whether the kernel's own hyperparameters (the Normal-Wishart and diagonal kernels' scale
    /// multiplier `s` of `Ψ = s Ψ₀`; Multinomial-Dirichlet and Beta-Bernoulli `β`) carry the default
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
    /// How the product kernel models a table's real columns (`None`: as the run's pilot
    /// chooses by evidence, [`crate::run::pilot`]; independently where no run is made); not
    /// serialised when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mixed_real: Option<RealColumns>,
    /// When a run's pilot chose how the product kernel models the real columns, what it
    /// found; not serialised when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mixed_real_choice: Option<RealColumnsChoice>,
}

/// What a pilot that chose between the product kernel's full-covariance block and
/// independent real columns found ([`crate::run::pilot`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RealColumnsChoice {
    /// The full block's log joint at its pilot's best partition minus the independent
    /// columns', in nats (rounded), over the rows the pilot ran on.
    pub full_by: i64,
    /// The rows the pilot ran on: those with every real entry observed (both kernels'
    /// marginals are then exact in closed form).
    pub rows: usize,
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
            gamma: None,
            k_prior: None,
            hyperpriors: false,
            kernel_hyperpriors: false,
            pilot: None,
            mixed_real: None,
            mixed_real_choice: None,
        }
    }
}

impl ModelSpec {
    /// The prior with its initial hyperparameters, as samplers use it (NGGP: `u` resampled;
    /// `α`, `σ` (and the MFM's `γ`) resampled only with `hyperpriors`). Settings of another
    /// prior are refused, naming the prior they belong to.
    pub fn build_prior(&self) -> Result<Prior> {
        let alpha = self.alpha.unwrap_or(1.0);
        if self.prior != PriorKind::Mfm && (self.gamma.is_some() || self.k_prior.is_some()) {
            return Err(Error::Usage(
                "`gamma` and `k_prior` belong to the MFM prior: add `prior` mfm".into(),
            ));
        }
        match self.prior {
            PriorKind::PitmanYor => {
                if self.u.is_some() {
                    return Err(Error::Usage(
                        "`u` belongs to the NGGP prior: the Pitman-Yor process has none".into(),
                    ));
                }
                let hyper = if self.hyperpriors {
                    PyHyperPriors::reference()
                } else {
                    PyHyperPriors::fixed()
                };
                Ok(Prior::PitmanYor(PitmanYor::new(
                    alpha,
                    self.sigma.unwrap_or(0.5),
                    hyper,
                )?))
            }
            PriorKind::Mfm => {
                for (given, name) in [
                    (self.alpha.is_some(), "alpha"),
                    (self.sigma.is_some(), "sigma"),
                    (self.u.is_some(), "u"),
                ] {
                    if given {
                        return Err(Error::Usage(format!(
                            "`{name}` is not a parameter of the MFM prior, whose parameters are \
                             `gamma` and `k_prior`: drop `{name}`"
                        )));
                    }
                }
                let gamma_prior = self.hyperpriors.then(GammaPrior::reference);
                Ok(Prior::Mfm(Mfm::new(
                    self.gamma.unwrap_or(1.0),
                    self.k_prior.unwrap_or(KPrior::Poisson { lambda: 1.0 }),
                    gamma_prior,
                )?))
            }
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
            (None, Dataset::Table(_)) => plain(KernelKind::Mixed),
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

    /// The kernel's settings as given ([`KernelSettings`]).
    pub fn kernel_settings(&self) -> KernelSettings {
        KernelSettings {
            beta: self.beta,
            xi: self.nw_xi.clone(),
            psi: self.nw_psi.clone(),
            r: self.nw_r,
            nu: self.nw_nu,
            defaults: self.nw_defaults,
            mixed_real: self.mixed_real,
        }
    }

    /// The kernel over `data` ([`ModelSpec::kernel_for`] when none is given), checking that
    /// kernel and data agree ([`crate::kernel::Kernel::build`]).
    pub fn build_kernel(&self, data: Dataset) -> Result<AnyKernel> {
        let kind = self.kernel_for(&data).kind;
        kind.build(&self.kernel_settings(), data)
    }
}

impl ModelSpec {
    /// Whether samplers resample any hyperparameter of the prior: with `hyperpriors`, and
    /// always for the NGGP (its `u` is part of the augmented state).
    pub fn resamples_hyper(&self) -> bool {
        self.hyperpriors || self.prior == PriorKind::Nggp
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
    /// The data's columns the kernel models, when constant columns were left out
    /// ([`KeptColumns`]); `None` when it models them all.
    pub columns: Option<KeptColumns>,
    /// The best partition of the pilot that set the kernel's scale, carried to every point
    /// (labels `0..K`; [`crate::run::pilot`]): where the exact sub-cluster sampler's chains
    /// start under `--init auto`. `None` without such a pilot.
    pub pilot_partition: Option<Arc<[u32]>>,
}

/// The columns of a dense data set that a Gaussian kernel models when the data's other
/// columns are constant (every point has the same value there).
///
/// **Why they are left out.** A column with one value cannot tell clusters apart: modelled
/// as a point mass it gives every partition the same likelihood. A Gaussian kernel whose
/// scale is fitted to the data gets a zero variance there instead, which the defaults floor
/// to a tiny one; with no scatter in that column, each cluster's marginal then grows with its
/// size alone (a ratio of gamma functions), so every constant column pushes clusters to merge,
/// hides the data's covariance from the full kernel, and blocks the pilot's pooled scale. On
/// the 8 × 8 digit images (1797 × 64, three constant border pixels) the default run gave ARI
/// 0.10 against the digit labels with them and 0.48 without. Cost to find them: O(N d).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptColumns {
    /// The data's number of columns.
    pub of: usize,
    /// The columns modelled (0-based, increasing).
    pub kept: Vec<usize>,
}

impl KeptColumns {
    /// The columns left out, 0-based. Cost: O(d).
    pub fn left_out(&self) -> Vec<usize> {
        (0..self.of)
            .filter(|j| self.kept.binary_search(j).is_err())
            .collect()
    }

    /// One line for the user: which columns were left out and why (1-based, the first ten).
    pub fn note(&self) -> String {
        format!(
            "{} constant: left out of the model, which sees the other {} of {} columns (a \
             column with one value cannot tell clusters apart)",
            columns_are(&self.left_out()),
            self.kept.len(),
            self.of
        )
    }

    /// `new` points of the data's `of` columns, reduced to the kept ones; errors when they
    /// have another number of columns (named `` `new` `` for front ends to rename). Cost:
    /// O(m · kept).
    pub fn select(&self, new: &crate::data::DenseData) -> Result<crate::data::DenseData> {
        crate::kernel::settings::check_dense_new(self.of, new)?;
        new.select_columns(&self.kept)
    }
}

/// "column 3 is" or "columns 1, 2 and 5 are" for the 0-based columns `columns` (the first
/// ten named, then how many more).
fn columns_are(columns: &[usize]) -> String {
    let mut named: Vec<String> = columns
        .iter()
        .take(10)
        .map(|j| (j + 1).to_string())
        .collect();
    if columns.len() > 10 {
        named.push(format!("{} more", columns.len() - 10));
    }
    match named.len() {
        1 => format!("column {} is", named[0]),
        _ => {
            let last = named.pop().unwrap_or_default();
            format!("columns {} and {last} are", named.join(", "))
        }
    }
}

impl Model {
    /// The model `spec` over `data`: the prior, checks of the settings against the data
    /// ([`crate::kernel::Kernel::check_settings`]), the kernel ([`ModelSpec::kernel_for`],
    /// [`ModelSpec::build_kernel`]) and the fingerprint. Errors name the parameter to change.
    /// Cost: the kernel's construction (for Normal-Wishart defaults O(N d² + d³)) and a pass
    /// over the data.
    ///
    /// Constant columns of dense data are left out of a Gaussian kernel (the Normal-Wishart or
    /// diagonal one, asked for or chosen) when some column varies and no `xi` or `psi` was
    /// given (a pilot's `psi`, recorded with its run, is over the kept columns) ([`KeptColumns`]);
    /// the fingerprint is the whole data's. Data whose every column is constant are refused
    /// (there is nothing to cluster).
    ///
    /// A matrix of numbers whose varying columns mostly hold exactly two values, given no
    /// kernel and no Gaussian scale, is modelled as a table whose two-valued columns are
    /// binary ([`crate::data::table::with_binary_columns`]), with the product kernel, and the
    /// kernel note says so; given the product kernel, any two-valued column is binary.
    pub fn build(spec: &ModelSpec, data: Dataset) -> Result<Model> {
        let as_table = matches!(spec.kernel, None | Some(KernelKind::Mixed))
            && spec.nw_xi.is_none()
            && spec.nw_psi.is_none();
        if let (true, Dataset::Dense(x)) = (as_table, &data) {
            let asked = spec.kernel == Some(KernelKind::Mixed);
            if let Some(table) = crate::data::table::with_binary_columns(x, asked)? {
                let binary: Vec<usize> = (0..table.d())
                    .filter(|&j| table.columns()[j].levels.len() == 2)
                    .collect();
                let mut model = Self::build_all_columns(spec, Dataset::Table(table))?;
                model.kernel_note = Some(format!(
                    "{} binary (two values each): the product kernel (`kernel` mixed) models \
                     them as yes/no answers and the other columns as real numbers (give \
                     `kernel` nw to model every column as real)",
                    columns_are(&binary)
                ));
                return Ok(model);
            }
        }
        let gaussian = matches!(spec.kernel, None | Some(KernelKind::Nw | KernelKind::Diag));
        // A scale a pilot chose is over the kept columns; one given is over all of them.
        let given = spec.nw_xi.is_some() || (spec.nw_psi.is_some() && spec.pilot.is_none());
        let (data, reduced) = match data {
            Dataset::Dense(x) if gaussian && !given => {
                let kept = x.varying_columns();
                if kept.is_empty() && x.n() > 1 {
                    return Err(Error::Usage(format!(
                        "every column of the data is constant (all {} points are one point): \
                         there is nothing to cluster",
                        x.n()
                    )));
                }
                if kept.is_empty() || kept.len() == x.d() {
                    (Dataset::Dense(x), None)
                } else {
                    let reduced = x.select_columns(&kept)?;
                    let columns = KeptColumns { of: x.d(), kept };
                    let whole = crate::data::Fingerprint::of(&Dataset::Dense(x));
                    (Dataset::Dense(reduced), Some((columns, whole)))
                }
            }
            other => (other, None),
        };
        match reduced {
            Some((columns, whole)) => Self::assemble(spec, data, whole, Some(columns)),
            None => Self::build_all_columns(spec, data),
        }
    }

    /// [`Model::build`] over every column of `data`, constant or not: the model of a pilot's
    /// subsample, whose kernel must keep the whole model's columns. Cost: as
    /// [`Model::build`].
    pub fn build_all_columns(spec: &ModelSpec, data: Dataset) -> Result<Model> {
        let fingerprint = crate::data::Fingerprint::of(&data);
        Self::assemble(spec, data, fingerprint, None)
    }

    /// The model `spec` over `data` (the columns `columns` of the data `fingerprint` names,
    /// or all of them).
    fn assemble(
        spec: &ModelSpec,
        data: Dataset,
        fingerprint: crate::data::Fingerprint,
        columns: Option<KeptColumns>,
    ) -> Result<Model> {
        let prior = spec.build_prior()?;
        let choice = spec.kernel_for(&data);
        choice.kind.check_settings(&spec.kernel_settings(), &data)?;
        if spec.mixed_real.is_some() && choice.kind != KernelKind::Mixed {
            return Err(Error::Usage(format!(
                "`mixed_real` belongs to the product kernel over a table (`kernel` mixed), but \
                 the kernel is `kernel` {}: drop `mixed_real`",
                choice.kind.name()
            )));
        }
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
            columns,
            pilot_partition: None,
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
                NwHyper::for_settings(&spec.kernel_settings(), k.data())?,
            )?),
            AnyKernel::Diag(k) => AnyKernel::Diag(Diagonal::new(
                Arc::clone(k.data()),
                DiagHyper::for_settings(&spec.kernel_settings(), k.data())?,
            )?),
            _ => {
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
            columns: self.columns.clone(),
            pilot_partition: None,
        })
    }

    /// The number of points.
    pub fn n_points(&self) -> usize {
        crate::with_kernel!(&self.kernel, |k| crate::kernel::ConjugateKernel::n_points(
            k
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DenseData;
    use crate::kernel::ConjugateKernel;
    use crate::partition::Partition;
    use crate::rng::SeedPlan;
    use crate::sampler::{Gibbs, GibbsScan, Move, RngChooser, Sams, State};
    use proptest::prelude::*;
    use rand_distr::Distribution;

    #[test]
    fn constant_columns_are_found_selected_and_named() {
        let x = DenseData::from_rows(&[
            vec![1.0, 5.0, 0.5, 7.0],
            vec![2.0, 5.0, 0.5, 7.0],
            vec![1.5, 5.0, 0.25, 7.0],
        ])
        .unwrap();
        assert_eq!(x.varying_columns(), vec![0, 2]);
        let kept = KeptColumns {
            of: 4,
            kept: x.varying_columns(),
        };
        assert_eq!(kept.left_out(), vec![1, 3]);
        let reduced = kept.select(&x).unwrap();
        assert_eq!(reduced.values(), &[1.0, 0.5, 2.0, 0.5, 1.5, 0.25]);
        assert!(kept
            .note()
            .starts_with("columns 2 and 4 are constant: left out"));
        let one = KeptColumns {
            of: 3,
            kept: vec![0, 2],
        };
        assert!(one.note().starts_with("column 2 is constant: left out"));
        let many = KeptColumns {
            of: 20,
            kept: vec![19],
        };
        assert!(
            many.note()
                .starts_with("columns 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 9 more are constant"),
            "{}",
            many.note()
        );
        let model = Model::build(&ModelSpec::default(), Dataset::Dense(x.clone())).unwrap();
        assert_eq!(model.columns, Some(kept));
        assert_eq!(
            model.fingerprint,
            crate::data::Fingerprint::of(&Dataset::Dense(x))
        );
        assert_eq!(model.kernel.dim(), 2);
    }

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
