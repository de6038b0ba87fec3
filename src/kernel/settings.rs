//! What users set of a kernel, and the defaults of the kernels on real vectors: the settings a
//! model hands to [`super::Kernel::build`] ([`KernelSettings`]) and how the Normal-Wishart and
//! diagonal kernels derive the hyperparameters not given from the data ([`NwDefaults`]).

use crate::data::{Dataset, DenseData};
use crate::error::{Error, Result};

/// A kernel's settings as the user gave them (`None`: the default), as a model hands them to
/// [`super::Kernel::build`]. Each kernel reads those it has and refuses the others
/// ([`super::Kernel::check_settings`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelSettings {
    /// Dirichlet concentration of the Multinomial-Dirichlet kernel; the Beta(β, β) parameter
    /// of the Beta-Bernoulli kernel.
    pub beta: Option<f64>,
    /// Prior mean ξ of the kernels on real vectors.
    pub xi: Option<Vec<f64>>,
    /// Scale Ψ (row-major, d·d values) of the Normal-Wishart kernel; the d diagonal scales of
    /// the diagonal kernel.
    pub psi: Option<Vec<f64>>,
    /// Mean precision scale r.
    pub r: Option<f64>,
    /// Degrees of freedom ν.
    pub nu: Option<f64>,
    /// How the hyperparameters of the kernels on real vectors not given follow the data.
    pub defaults: NwDefaults,
    /// How the product kernel models a table's real columns (`None`: independently, unless a
    /// run's pilot chooses the full block by evidence, [`crate::run::pilot`]).
    pub mixed_real: Option<RealColumns>,
}

/// How the product kernel ([`super::mixed::Mixed`]) models a table's real columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RealColumns {
    /// Each its own Normal-Gamma kernel, independent given the cluster.
    Independent,
    /// One full-covariance Normal-Wishart block, missing coordinates drawn inside the sweep.
    Full,
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
    /// Unit-equivariant ([`NwHyper::scaled_from_data`](super::NwHyper::scaled_from_data) with [`scaled_share`], [`SCALED_R`],
    /// [`scaled_nu_minus_d`]): rescaling, shifting or any invertible affine map of the data
    /// leaves the posterior over partitions unchanged.
    Scaled,
    /// The reference code's choice ([`NwHyper::from_data`](super::NwHyper::from_data): `det Ψ = 0.1`, `r = 0.1`,
    /// `ν = d + 6`), kept for the paper reproductions and golden values. It depends on the
    /// data's units.
    Reference,
}

impl NwDefaults {
    /// What a model recorded before this choice existed used: the reference defaults.
    pub(crate) fn recorded_before_choice() -> Self {
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

/// The real vectors of `data`, `None` for counts: the new points of a kernel on real vectors.
pub(crate) fn dense_points(data: &Dataset) -> Option<&DenseData> {
    match data {
        Dataset::Dense(x) => Some(x),
        Dataset::Counts(_) | Dataset::Table(_) => None,
    }
}

/// The refusal of a table of typed columns by `kernel` `name`, which does not read one.
pub(crate) fn table_refused(name: &str) -> Error {
    Error::Usage(format!(
        "`kernel` {name} does not read a table of typed columns with missing entries: use \
         `kernel` mixed (the default for such tables)"
    ))
}

/// Errors unless the new points `new` have dimension `d`, naming them `` `new` ``.
pub(crate) fn check_dense_new(d: usize, new: &DenseData) -> Result<()> {
    if new.d() != d {
        return Err(Error::DimensionMismatch(format!(
            "`new` has points of dimension {} ({} features), but the training data have \
             dimension {d}",
            new.d(),
            new.d(),
        )));
    }
    Ok(())
}

/// The settings checks of a kernel on real vectors, for real `data` (counts are left to the
/// kernel's [`super::Kernel::build`] to refuse): no `beta`, `xi` and `psi` of magnitudes that
/// cannot overflow, `xi` of d values and `psi` of the number of values that `psi_shape(d)`
/// gives, with how to say it. Cost: O(d²).
pub(crate) fn check_real_settings(
    s: &KernelSettings,
    data: &Dataset,
    psi_shape: impl Fn(usize) -> (usize, String),
) -> Result<()> {
    let Dataset::Dense(x) = data else {
        return Ok(());
    };
    if s.beta.is_some() {
        return Err(Error::Usage(
            "`beta` is the Multinomial-Dirichlet concentration, but the data are a real \
             matrix (Normal-Wishart kernel): drop `beta`"
                .into(),
        ));
    }
    let d = x.d();
    // ξ is on the data's scale, Ψ on its square's.
    let limit = crate::data::MAX_MAGNITUDE;
    for (name, values, max) in [("xi", &s.xi, limit), ("psi", &s.psi, limit * limit)] {
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
    if let Some(xi) = &s.xi {
        if xi.len() != d {
            return Err(Error::param(
                "xi",
                format!("{} values", xi.len()),
                &format!("{d} comma-separated values, one per data column"),
            ));
        }
    }
    if let Some(psi) = &s.psi {
        let (len, expected) = psi_shape(d);
        if psi.len() != len {
            return Err(Error::param(
                "psi",
                format!("{} values", psi.len()),
                &expected,
            ));
        }
    }
    Ok(())
}
