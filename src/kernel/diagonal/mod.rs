//! The diagonal-covariance kernel: a Gaussian likelihood with independent coordinates, each
//! under its own one-dimensional Normal-Wishart (Normal-Gamma) prior (MATH §2.1 with d = 1,
//! applied per dimension).
//!
//! Model, for every dimension `j` independently: `x_j | μ_j, λ_j ~ N(μ_j, 1/λ_j)`,
//! `μ_j | λ_j ~ N(ξ_j, 1/(r λ_j))`, `λ_j ~ Gamma(ν/2, rate ψ_j/2)` (the 1-D Wishart
//! `W(ν, 1/ψ_j)`). The log marginal of a cluster is the sum over dimensions of 1-D
//! Normal-Wishart log marginals and its predictive the product of d Student-t densities, so
//! everything is O(d): no d × d matrix is ever formed. With d = 1 it is the
//! [`super::NormalWishart`] kernel.
//!
//! Per dimension, with the data centred by ξ once at construction (so ξ = 0 below), a cluster
//! of n points with mean x̄_j and centred sum of squares M₂ⱼ has `r_n = r + n`, `ν_n = ν + n`,
//! `ξ_{n,j} = n x̄_j / r_n` and `ψ_{n,j} = ψ_j + M₂ⱼ + (r n / r_n) x̄_j²`, and
//!
//! * `ln m(X) = c(n) - ν_n/2 Σ_j ln ψ_{n,j}` with
//!   `c(n) = -nd/2 ln π - d/2 ln(1 + n/r) + d [ln Γ(ν_n/2) - ln Γ(ν/2)] + ν/2 Σ_j ln ψ_j`;
//! * `ln p(y | X) = pc(n) - ½ Σ_j ln ψ_{n,j} - (ν_n + 1)/2 Σ_j ln(1 + r_n/(r_n+1) (y_j -
//!   ξ_{n,j})² / ψ_{n,j})` with
//!   `pc(n) = d [-½ ln π - ½ ln(1 + 1/r_n) + ln Γ((ν_n + 1)/2) - ln Γ(ν_n/2)]`.
//!
//! `c(n)` and `pc(n)` are tabulated per cluster size at construction (N + 3 accurate `ln Γ`
//! evaluations). A statistic holds the count, the means and centred sums of squares (two-pass
//! in batch, Welford updates, Chan merges) and the predictive cache `ξ_{n,j}`,
//! `r_n/(r_n+1) / ψ_{n,j}` and `Σ_j ln ψ_{n,j}`, refreshed in O(d) by every update. Sums of
//! logarithms are taken as logarithms of blocked products ([`ln_product`]), one `ln` per eight
//! factors.

use std::sync::Arc;

mod params;
mod soft;

pub use params::{DiagMoments, DiagParam};
pub use soft::{DiagPosterior, SoftDiag};

use super::cholesky::DOWNDATE_MIN_DET_RATIO;
use super::hyperprior::HyperKernel;
use super::settings::{
    check_dense_new, check_real_settings, dense_points, scaled_nu_minus_d, scaled_share,
    KernelSettings, NwDefaults, SCALED_R,
};
use super::{ConjugateKernel, Kernel, NwHyper, PointIndex, PredictiveKernel};
use crate::data::{Dataset, DenseData};
use crate::error::{Error, Result};
use crate::math::ln_gamma;

/// The floor of the default `ψ_j`, as a fraction of the mean column variance
/// ([`DiagHyper::from_data`]).
///
/// A constant column has variance 0, and `ψ_j` must be positive. For an exactly constant
/// column every cluster has `ψ_{n,j} = ψ_j`, so `ψ_j` enters the joint only as
/// `-Σ_c (n_c/2) ln ψ_j = -(N/2) ln ψ_j`, the same for every partition: the floor's value
/// does not change the posterior over partitions. It leaves every other column's `ψ_j`
/// proportional to its own variance (so rescaling that column changes nothing) unless the
/// column's spread is a million times below the typical one, where it is rounding rather than
/// signal.
pub const DIAG_PSI_FLOOR: f64 = 1e-12;

/// Hyperparameters `(ξ, ψ, r, ν)` of the diagonal kernel: per dimension `j` a 1-D
/// Normal-Wishart prior `(ξ_j, ψ_j, r, ν)` (MATH §2.1 with d = 1), validated (also when
/// deserialised).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "RawDiagHyper")]
pub struct DiagHyper {
    xi: Vec<f64>,
    psi: Vec<f64>,
    r: f64,
    nu: f64,
}

/// The serialised form, validated by [`DiagHyper::new`] on the way in.
#[derive(serde::Deserialize)]
struct RawDiagHyper {
    xi: Vec<f64>,
    psi: Vec<f64>,
    r: f64,
    nu: f64,
}

impl TryFrom<RawDiagHyper> for DiagHyper {
    type Error = Error;

    fn try_from(raw: RawDiagHyper) -> Result<Self> {
        DiagHyper::new(raw.xi, raw.psi, raw.r, raw.nu)
    }
}

impl DiagHyper {
    /// Validated hyperparameters: prior means `xi` (length d), scales `psi` (length d, each
    /// finite and > 0), prior sample size `r > 0` and degrees of freedom `nu > 0` (the 1-D
    /// Wishart's `ν > d - 1`), all finite. Cost: O(d).
    pub fn new(xi: Vec<f64>, psi: Vec<f64>, r: f64, nu: f64) -> Result<Self> {
        let d = xi.len();
        if d == 0 {
            return Err(Error::Empty(
                "diagonal-kernel prior mean xi has no entries".into(),
            ));
        }
        if psi.len() != d {
            return Err(Error::DimensionMismatch(format!(
                "diagonal-kernel scales psi have {} entries, expected {d} (one per dimension) \
                 to match xi",
                psi.len()
            )));
        }
        if let Some(k) = xi.iter().position(|v| !v.is_finite()) {
            return Err(Error::param(&format!("xi[{k}]"), xi[k], "a finite number"));
        }
        if let Some(k) = psi.iter().position(|v| !(v.is_finite() && *v > 0.0)) {
            return Err(Error::param(
                &format!("psi[{k}]"),
                psi[k],
                "a finite number > 0",
            ));
        }
        if !(r > 0.0 && r.is_finite()) {
            return Err(Error::param("r", r, "a finite number > 0"));
        }
        if !(nu > 0.0 && nu.is_finite()) {
            return Err(Error::param("nu", nu, "a finite number > 0"));
        }
        Ok(DiagHyper { xi, psi, r, nu })
    }

    /// The unit-equivariant default from the data: `ξ_j` = column mean, and `ψ_j` such that
    /// the prior's expected cluster variance `E[1/λ_j] = ψ_j / (ν - 2)` is `scale` times the
    /// column's (unbiased) variance, i.e. `ψ_j = scale (ν - 2) var_j`, with `r` as given and
    /// `ν = 1 + nu_minus_d` (the Normal-Wishart's `ν - d`, per dimension). Shifting or
    /// rescaling a column shifts `ξ_j` and rescales `ψ_j` with it, which leaves the posterior
    /// over partitions unchanged. Variances below [`DIAG_PSI_FLOOR`] times the mean variance
    /// are raised to it (1 if every column is constant).
    ///
    /// Errors with fewer than 2 points, or if `nu_minus_d ≤ 1` (the expected variance would
    /// not exist), `scale` or `r` not finite and positive. Cost: O(N d).
    pub fn from_data(x: &DenseData, scale: f64, r: f64, nu_minus_d: f64) -> Result<Self> {
        let n = x.n();
        if n < 2 {
            return Err(Error::Empty(format!(
                "diagonal-kernel hyperparameters from data need at least 2 points, got {n}"
            )));
        }
        if !(scale > 0.0 && scale.is_finite()) {
            return Err(Error::param("scale", scale, "a finite number > 0"));
        }
        if !(nu_minus_d > 1.0 && nu_minus_d.is_finite()) {
            return Err(Error::param("nu - d", nu_minus_d, "a finite number > 1"));
        }
        let (xi, var) = column_moments(x);
        let nu = 1.0 + nu_minus_d;
        let psi = floored(var)
            .iter()
            .map(|&v| scale * (nu - 2.0) * v)
            .collect();
        Self::new(xi, psi, r, nu)
    }

    /// The reference code's choice ([`super::NwHyper::from_data`]) for a diagonal scale:
    /// `ξ_j` = column mean, `ψ_j` the column variances (floored as in
    /// [`DiagHyper::from_data`]) rescaled so that `Π_j ψ_j = 0.1`, `r = 0.1`, `ν = 7`; with
    /// d = 1 the Normal-Wishart reference. It depends on the data's units. Errors with fewer
    /// than 2 points. Cost: O(N d).
    pub fn reference_from_data(x: &DenseData) -> Result<Self> {
        let (n, d) = (x.n(), x.d());
        if n < 2 {
            return Err(Error::Empty(format!(
                "diagonal-kernel hyperparameters from data need at least 2 points, got {n}"
            )));
        }
        let (xi, var) = column_moments(x);
        let var = floored(var);
        let ln_det = ln_product(d, |j| var[j]);
        let scale = ((super::NwHyper::REFERENCE_DET_PSI.ln() - ln_det) / d as f64).exp();
        let psi = var.iter().map(|v| scale * v).collect();
        Self::new(
            xi,
            psi,
            super::NwHyper::REFERENCE_R,
            1.0 + super::NwHyper::REFERENCE_NU_MINUS_D,
        )
    }

    /// Dimension d.
    pub fn dim(&self) -> usize {
        self.xi.len()
    }

    /// Prior means ξ.
    pub fn xi(&self) -> &[f64] {
        &self.xi
    }

    /// Scales ψ (the diagonal of a Normal-Wishart Ψ).
    pub fn psi(&self) -> &[f64] {
        &self.psi
    }

    /// Prior sample size r of the means.
    pub fn r(&self) -> f64 {
        self.r
    }

    /// Degrees of freedom ν of every dimension.
    pub fn nu(&self) -> f64 {
        self.nu
    }
}

/// The variances raised to at least [`DIAG_PSI_FLOOR`] times their mean (to 1 if all are
/// zero). Cost: O(d).
fn floored(mut var: Vec<f64>) -> Vec<f64> {
    let mean = var.iter().sum::<f64>() / var.len() as f64;
    let floor = if mean > 0.0 {
        DIAG_PSI_FLOOR * mean
    } else {
        1.0
    };
    var.iter_mut().for_each(|v| *v = v.max(floor));
    var
}

/// Column means and unbiased column variances (two passes over centred values). Needs n ≥ 2.
/// Cost: O(N d).
pub fn column_moments(x: &DenseData) -> (Vec<f64>, Vec<f64>) {
    let (n, d) = (x.n(), x.d());
    let mut mean = vec![0.0; d];
    for i in 0..n {
        for (m, v) in mean.iter_mut().zip(x.row(i)) {
            *m += v;
        }
    }
    for m in &mut mean {
        *m /= n as f64;
    }
    let mut var = vec![0.0; d];
    for i in 0..n {
        for ((s, v), m) in var.iter_mut().zip(x.row(i)).zip(&mean) {
            *s += (v - m) * (v - m);
        }
    }
    for s in &mut var {
        *s /= (n - 1) as f64;
    }
    (mean, var)
}

/// The smallest residual share `1 - R²_j` of a column's variance, after regression on the
/// columns before it, for which [`full_covariance_problem`] deems the full covariance
/// estimable: below it the sample correlation matrix is singular up to rounding (the pivot of
/// its Cholesky factorisation has lost all but a few significant digits).
pub const COLLINEAR_RESIDUAL: f64 = 1e-10;

/// Why the full (Normal-Wishart) covariance of `x` cannot be estimated well, if it cannot:
///
/// * `d ≥ n/2`. The sample covariance of `n` points has rank at most `n - 1`, and well below
///   that it is already badly conditioned: for white noise with `d/n = γ`, its eigenvalues fill
///   `[(1 - √γ)², (1 + √γ)²]` (Marchenko & Pastur 1967), a condition number of 34 at `γ = ½`
///   where the truth has 1, and worse inside clusters, which hold fewer points. A default scale
///   matrix from it imposes spurious structure, and the full kernel's O(d²) predictive is then
///   as costly as it is unreliable.
/// * A constant column (zero variance).
/// * A column whose residual variance after regression on the columns before it is below
///   [`COLLINEAR_RESIDUAL`] of its variance (collinear columns), judged on correlations, so the
///   answer does not depend on the columns' units.
///
/// The reason is a short phrase naming the column (1-based). Needs `n ≥ 2` (`None` below).
/// Cost: O(N d) when `d ≥ n/2` or a column is constant, otherwise O(N d² + d³).
pub fn full_covariance_problem(x: &DenseData) -> Option<String> {
    let (n, d) = (x.n(), x.d());
    if n < 2 {
        return None;
    }
    if 2 * d >= n {
        return Some(format!(
            "the dimension d = {d} is at least half the number of points n = {n}"
        ));
    }
    let (mean, var) = column_moments(x);
    if let Some(j) = var.iter().position(|&v| v <= 0.0) {
        return Some(format!("column {} is constant", j + 1));
    }
    let inv_sd: Vec<f64> = var.iter().map(|v| 1.0 / v.sqrt()).collect();
    // The lower triangle of the correlation matrix, row-major.
    let mut c = vec![0.0; d * d];
    let mut z = vec![0.0; d];
    for i in 0..n {
        for (((z, v), m), s) in z.iter_mut().zip(x.row(i)).zip(&mean).zip(&inv_sd) {
            *z = (v - m) * s;
        }
        for a in 0..d {
            let row = &mut c[a * d..a * d + a + 1];
            for (cv, zb) in row.iter_mut().zip(&z) {
                *cv += z[a] * zb;
            }
        }
    }
    let inv = 1.0 / (n - 1) as f64;
    c.iter_mut().for_each(|v| *v *= inv);
    // Cholesky in place: the squared pivot of column j is its residual share 1 - R²_j.
    for j in 0..d {
        let pivot = c[j * d + j] - (0..j).map(|k| c[j * d + k] * c[j * d + k]).sum::<f64>();
        if pivot.is_nan() || pivot <= COLLINEAR_RESIDUAL {
            return Some(format!(
                "column {} is a linear combination of the columns before it (all but {:.1e} \
                 of its variance)",
                j + 1,
                pivot.max(0.0)
            ));
        }
        let l = pivot.sqrt();
        c[j * d + j] = l;
        for i in j + 1..d {
            let dot: f64 = (0..j).map(|k| c[i * d + k] * c[j * d + k]).sum();
            c[i * d + j] = (c[i * d + j] - dot) / l;
        }
    }
    None
}

/// `Σ_j ln f(j)` for `j < d`, for positive `f(j)`, as the logarithm of products of eight
/// factors: one `ln` per eight terms. A block whose product leaves the normal range of `f64`
/// (or is not finite) is summed term by term instead, so the result is the sum of logarithms
/// to rounding whatever the factors' sizes. From [`LN_CHUNK`] blocks on (d ≥ 256) the blocks'
/// logarithms are taken together, [`LN_CHUNK`] at a time, by the branch-free
/// [`crate::vecmath::ln`] in vector lanes at the CPU's best level ([`ln_blocks`]), the terms
/// added in block order, so every level gives the same bits. Below, each block's product
/// goes to the C library's `ln`: there the buffers and the level dispatch cost more than they
/// save (whole runs with the vector path at every d: 1.3-1.4 times slower at d = 13 and 30,
/// even at d = 100, 17 % faster at d = 784; the threshold, one full chunk, lies between the
/// last two and was not tuned). Cost: O(d), about d/8 logarithms.
#[inline]
pub(crate) fn ln_product(d: usize, f: impl Fn(usize) -> f64) -> f64 {
    let mut total = 0.0;
    let mut j = 0;
    if d < LN_CHUNK * LN_BLOCK {
        while j < d {
            let end = (j + LN_BLOCK).min(d);
            let p = (j..end).fold(1.0, |p, k| p * f(k));
            total += if in_range(p) {
                p.ln()
            } else {
                (j..end).map(|k| f(k).ln()).sum::<f64>()
            };
            j = end;
        }
        return total;
    }
    let mut products = [1.0; LN_CHUNK];
    let mut logs = [0.0; LN_CHUNK];
    while j < d {
        let blocks = (d - j).div_ceil(LN_BLOCK).min(LN_CHUNK);
        for (b, p) in products[..blocks].iter_mut().enumerate() {
            let start = j + b * LN_BLOCK;
            *p = (start..(start + LN_BLOCK).min(d)).fold(1.0, |p, k| p * f(k));
        }
        ln_blocks(&products[..blocks], &mut logs[..blocks]);
        for (b, (&p, &ln_p)) in products[..blocks].iter().zip(&logs[..blocks]).enumerate() {
            total += if in_range(p) {
                ln_p
            } else {
                let start = j + b * LN_BLOCK;
                (start..(start + LN_BLOCK).min(d))
                    .map(|k| crate::vecmath::ln(f(k)))
                    .sum::<f64>()
            };
        }
        j += blocks * LN_BLOCK;
    }
    total
}

/// Factors per block of [`ln_product`].
const LN_BLOCK: usize = 8;

/// Whether a block's product can stand for its factors: normal and finite (else its
/// logarithm is taken term by term).
#[inline(always)]
fn in_range(p: f64) -> bool {
    p.is_normal() && p < f64::MAX
}

/// Blocks' products whose logarithms [`ln_product`] takes in one call of [`ln_blocks`] (a
/// buffer on the stack: 256 dimensions per call).
const LN_CHUNK: usize = 32;

crate::simd::multiversion! {
    /// `out[b] = ln(x[b])` by [`crate::vecmath::ln`], the lanes in vectors at the CPU's best
    /// level, the same bits at every level.
    fn ln_blocks(x: &[f64], out: &mut [f64]) {
        for (o, &v) in out.iter_mut().zip(x) {
            *o = crate::vecmath::ln(v);
        }
    }
}

/// Sufficient statistic of a cluster under [`Diagonal`], with its predictive cache.
///
/// Holds, in coordinates centred at ξ: the count n, per dimension the mean x̄_j, the centred
/// sum of squares `M₂ⱼ`, `ψ_{n,j}`, the predictive's centre `ξ_{n,j} = n x̄_j / r_n` and
/// weight `r_n/(r_n+1) / ψ_{n,j}`, and the scalars `Σ_j ln ψ_{n,j}`, `pc(n) - ½ Σ_j ln
/// ψ_{n,j}` and `(ν_n + 1)/2`. One heap buffer of `5d` values; `clone_from` reuses it.
#[derive(Debug)]
pub struct DiagStat {
    n: usize,
    d: usize,
    ln_psi_n: f64,
    pred_offset: f64,
    pred_power: f64,
    buf: Vec<f64>,
}

impl Clone for DiagStat {
    fn clone(&self) -> Self {
        DiagStat {
            n: self.n,
            d: self.d,
            ln_psi_n: self.ln_psi_n,
            pred_offset: self.pred_offset,
            pred_power: self.pred_power,
            buf: self.buf.clone(),
        }
    }

    fn clone_from(&mut self, source: &Self) {
        self.n = source.n;
        self.d = source.d;
        self.ln_psi_n = source.ln_psi_n;
        self.pred_offset = source.pred_offset;
        self.pred_power = source.pred_power;
        self.buf.clone_from(&source.buf);
    }
}

impl DiagStat {
    /// Number of points summarised.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether the statistic summarises no point.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Mean of the points, centred at ξ (zero when empty).
    pub fn mean(&self) -> &[f64] {
        &self.buf[..self.d]
    }

    /// Centred sums of squares `M₂ⱼ = Σ (x_j - x̄_j)²`.
    pub fn sum_squares(&self) -> &[f64] {
        &self.buf[self.d..2 * self.d]
    }

    /// Posterior scales `ψ_{n,j} = ψ_j + M₂ⱼ + (r n / r_n) x̄_j²`.
    pub fn psi_n(&self) -> &[f64] {
        &self.buf[2 * self.d..3 * self.d]
    }

    /// Cached `Σ_j ln ψ_{n,j}`.
    pub fn ln_psi_n(&self) -> f64 {
        self.ln_psi_n
    }

    /// The predictive's centre `ξ_{n,j}` and weights `r_n/(r_n+1) / ψ_{n,j}`.
    fn predictive_parts(&self) -> (&[f64], &[f64]) {
        let d = self.d;
        (&self.buf[3 * d..4 * d], &self.buf[4 * d..5 * d])
    }
}

/// The diagonal-covariance conjugate kernel over a dense data set (see the module
/// documentation).
///
/// Construction centres the data by ξ and tabulates `c(n)` and `pc(n)` for every cluster
/// size `n ≤ N + 1` (sizes beyond are computed directly). Cost: O(N d) time, O(N d) memory
/// shared between clones. Every method is O(d) with no heap allocation but `empty_stat`.
#[derive(Clone)]
pub struct Diagonal {
    data: Arc<DenseData>,
    hyper: DiagHyper,
    d: usize,
    centred: crate::kernel::centred::Centred,
    ln_psi: f64,
    marg_const: Arc<[f64]>,
    pred_const: Arc<[f64]>,
    /// The scales the kernel was first made with, `ψ⁰`, with `Σ ln ψ⁰_j`, and the multiplier
    /// `s` of `ψ = s ψ⁰` ([`HyperKernel`]).
    psi_base: Arc<[f64]>,
    ln_psi_base: f64,
    psi_scale: f64,
}

impl std::fmt::Debug for Diagonal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Diagonal")
            .field("n", &self.data.n())
            .field("d", &self.d)
            .field("hyper", &self.hyper)
            .finish_non_exhaustive()
    }
}

impl Diagonal {
    /// The kernel over `data` with hyperparameters `hyper`; errors if their dimensions differ.
    /// Cost: O(N d).
    pub fn new(data: Arc<DenseData>, hyper: DiagHyper) -> Result<Self> {
        let d = hyper.dim();
        if data.d() != d {
            return Err(Error::DimensionMismatch(format!(
                "data points have dimension {} but the diagonal-kernel prior has dimension {d}",
                data.d()
            )));
        }
        let centred = crate::kernel::centred::centred(&data, &hyper.xi);
        let ln_psi = ln_product(d, |j| hyper.psi[j]);
        let max_n = data.n() + 1;
        // g(m) = ln Γ((ν + m)/2) for m = 0..=max_n + 1.
        let g: Vec<f64> = (0..max_n + 2)
            .map(|m| ln_gamma(0.5 * (hyper.nu + m as f64)))
            .collect();
        let marg_const = (0..=max_n)
            .map(|n| marg_const_from(&hyper, ln_psi, n, g[n] - g[0]))
            .collect();
        let pred_const = (0..=max_n)
            .map(|n| pred_const_from(&hyper, n, g[n + 1] - g[n]))
            .collect();
        let psi_base: Arc<[f64]> = hyper.psi.clone().into();
        Ok(Diagonal {
            data,
            hyper,
            d,
            centred,
            ln_psi,
            marg_const,
            pred_const,
            psi_base,
            ln_psi_base: ln_psi,
            psi_scale: 1.0,
        })
    }

    /// The same hyperparameters bound to another data set of the same dimension (held-out
    /// data or prediction). Cost: O(N d).
    pub fn with_data(&self, data: Arc<DenseData>) -> Result<Self> {
        Self::new(data, self.hyper.clone())
    }

    /// The hyperparameters.
    pub fn hyper(&self) -> &DiagHyper {
        &self.hyper
    }

    /// The data set.
    pub fn data(&self) -> &Arc<DenseData> {
        &self.data
    }

    /// Dimension d.
    pub fn dim(&self) -> usize {
        self.d
    }

    /// `Σ_j ln ψ_j`.
    pub fn ln_psi(&self) -> f64 {
        self.ln_psi
    }

    /// Point `i` in the kernel's centred coordinates (`x_i - ξ`). Cost: O(1).
    #[inline]
    pub fn centred_point(&self, i: usize) -> &[f64] {
        &self.centred[i * self.d..(i + 1) * self.d]
    }

    /// `ln p(x | X_S)` for a point `x` that need not be in the data set (the product of d
    /// Student-t densities). Errors if `x` has the wrong length or a non-finite entry, or `s`
    /// belongs to a kernel of another dimension. Cost: O(d).
    pub fn ln_predictive_point(&self, x: &[f64], s: &DiagStat) -> Result<f64> {
        let d = self.d;
        if x.len() != d || s.d != d {
            return Err(Error::DimensionMismatch(format!(
                "predictive of a point of dimension {} from a statistic of dimension {} under \
                 a kernel of dimension {d}",
                x.len(),
                s.d
            )));
        }
        if let Some(k) = x.iter().position(|v| !v.is_finite()) {
            return Err(Error::param(
                &format!("coordinate {k} of the point"),
                x[k],
                "a finite number",
            ));
        }
        let xi = &self.hyper.xi;
        let (centre, weight) = s.predictive_parts();
        let ln_ratio = ln_product(d, |j| {
            let e = x[j] - xi[j] - centre[j];
            1.0 + weight[j] * e * e
        });
        Ok(s.pred_offset - s.pred_power * ln_ratio)
    }

    /// `c(n)`, the size-dependent constant of `ln m` (includes `ν/2 Σ ln ψ_j`).
    #[inline]
    fn marg_const(&self, n: usize) -> f64 {
        match self.marg_const.get(n) {
            Some(&c) => c,
            None => marg_const_from(
                &self.hyper,
                self.ln_psi,
                n,
                ln_gamma(0.5 * (self.hyper.nu + n as f64)) - ln_gamma(0.5 * self.hyper.nu),
            ),
        }
    }

    /// `pc(n)`, the size-dependent constant of `ln p(x | X_S)` for `|S| = n`.
    #[inline]
    fn pred_const(&self, n: usize) -> f64 {
        match self.pred_const.get(n) {
            Some(&c) => c,
            None => {
                let nu_n = self.hyper.nu + n as f64;
                pred_const_from(
                    &self.hyper,
                    n,
                    ln_gamma(0.5 * (nu_n + 1.0)) - ln_gamma(0.5 * nu_n),
                )
            }
        }
    }

    /// Recomputes `ψ_{n,j}` and the predictive cache from the count, means and sums of
    /// squares. Cost: O(d), d divisions and d/8 logarithms.
    fn refresh(&self, s: &mut DiagStat) {
        let d = self.d;
        let n = s.n as f64;
        let (r, nu) = (self.hyper.r, self.hyper.nu);
        let rn = r + n;
        let prior_weight = r * n / rn;
        let shrink = n / rn;
        let pred_scale = rn / (rn + 1.0);
        let (mean, rest) = s.buf.split_at_mut(d);
        let (m2, rest) = rest.split_at_mut(d);
        let (psi_n, rest) = rest.split_at_mut(d);
        let (centre, weight) = rest.split_at_mut(d);
        for j in 0..d {
            let m = mean[j];
            let p = self.hyper.psi[j] + m2[j] + prior_weight * m * m;
            psi_n[j] = p;
            centre[j] = shrink * m;
            weight[j] = pred_scale / p;
        }
        s.ln_psi_n = ln_product(d, |j| psi_n[j]);
        s.pred_offset = self.pred_const(s.n) - 0.5 * s.ln_psi_n;
        s.pred_power = 0.5 * (nu + n + 1.0);
    }

    /// `Σ_j ln(1 + r_n/(r_n+1) (y_j - ξ_{n,j})² / ψ_{n,j})` for the centred point `y`.
    #[inline]
    fn ln_ratio(&self, y: &[f64], s: &DiagStat) -> f64 {
        let (centre, weight) = s.predictive_parts();
        ln_product(self.d, |j| {
            let e = y[j] - centre[j];
            1.0 + weight[j] * e * e
        })
    }
}

/// `c(n)` given `ln Γ(ν_n/2) - ln Γ(ν/2)`.
fn marg_const_from(h: &DiagHyper, ln_psi: f64, n: usize, gamma_ratio: f64) -> f64 {
    let d = h.dim() as f64;
    let nf = n as f64;
    -0.5 * nf * d * std::f64::consts::PI.ln() - 0.5 * d * (nf / h.r).ln_1p()
        + d * gamma_ratio
        + 0.5 * h.nu * ln_psi
}

/// `pc(n)` given `ln Γ((ν_n + 1)/2) - ln Γ(ν_n/2)`.
fn pred_const_from(h: &DiagHyper, n: usize, gamma_ratio: f64) -> f64 {
    let d = h.dim() as f64;
    let rn = h.r + n as f64;
    d * (-0.5 * std::f64::consts::PI.ln() - 0.5 * (1.0 / rn).ln_1p() + gamma_ratio)
}

impl Diagonal {
    /// [`ConjugateKernel::stat_of`] of a list of points in either width ([`PointIndex`]).
    fn batch_stat_of<I: PointIndex>(&self, points: &[I]) -> DiagStat {
        let mut s = self.empty_stat();
        if points.is_empty() {
            return s;
        }
        let d = self.d;
        let inv_n = 1.0 / points.len() as f64;
        let (mean, rest) = s.buf.split_at_mut(d);
        let m2 = &mut rest[..d];
        for &i in points {
            let i = i.index();
            for (m, &y) in mean.iter_mut().zip(self.centred_point(i)) {
                *m += y;
            }
        }
        for m in mean.iter_mut() {
            *m *= inv_n;
        }
        for &i in points {
            let i = i.index();
            for ((q, &y), &m) in m2.iter_mut().zip(self.centred_point(i)).zip(mean.iter()) {
                *q += (y - m) * (y - m);
            }
        }
        s.n = points.len();
        self.refresh(&mut s);
        s
    }
}

impl ConjugateKernel for Diagonal {
    type Stat = DiagStat;

    fn n_points(&self) -> usize {
        self.data.n()
    }

    /// n = 0, x̄ = 0, `M₂ = 0`, `ψ_n = ψ`. Cost: O(d) (one allocation).
    fn empty_stat(&self) -> DiagStat {
        let mut s = DiagStat {
            n: 0,
            d: self.d,
            ln_psi_n: 0.0,
            pred_offset: 0.0,
            pred_power: 0.0,
            buf: vec![0.0; 5 * self.d],
        };
        self.refresh(&mut s);
        s
    }

    /// Two-pass means and centred sums of squares. Cost: O(n d).
    fn stat_of(&self, points: &[usize]) -> DiagStat {
        self.batch_stat_of(points)
    }

    fn stat_of_compact(&self, points: &[u32]) -> DiagStat {
        self.batch_stat_of(points)
    }

    fn count(&self, s: &DiagStat) -> usize {
        s.n
    }

    /// Welford update of (n, x̄_j, M₂ⱼ), then the cache. Cost: O(d), no allocation.
    fn add(&self, s: &mut DiagStat, i: usize) {
        debug_assert_eq!(s.d, self.d);
        let d = self.d;
        let inv = 1.0 / (s.n + 1) as f64;
        let y = self.centred_point(i);
        let (mean, rest) = s.buf.split_at_mut(d);
        for ((m, q), &y) in mean.iter_mut().zip(&mut rest[..d]).zip(y) {
            let delta = y - *m;
            *m += delta * inv;
            *q += delta * (y - *m);
        }
        s.n += 1;
        self.refresh(s);
    }

    /// Reverse Welford update; removing the last point restores the empty statistic exactly
    /// and leaving one point sets `M₂ = 0` exactly (a sum of squares that rounds below zero
    /// is set to zero). Cost: O(d), no allocation.
    fn remove(&self, s: &mut DiagStat, i: usize) {
        debug_assert_eq!(s.d, self.d);
        debug_assert!(s.n > 0, "remove from an empty diagonal statistic");
        let d = self.d;
        if s.n <= 1 {
            s.buf.fill(0.0);
            s.n = 0;
            self.refresh(s);
            return;
        }
        let inv = 1.0 / (s.n - 1) as f64;
        let leaves_one = s.n == 2;
        let y = self.centred_point(i);
        let (mean, rest) = s.buf.split_at_mut(d);
        for ((m, q), &y) in mean.iter_mut().zip(&mut rest[..d]).zip(y) {
            let old = *m;
            *m -= (y - old) * inv;
            *q = if leaves_one {
                0.0
            } else {
                (*q - (y - old) * (y - *m)).max(0.0)
            };
        }
        s.n -= 1;
        self.refresh(s);
    }

    /// Chan's merge `M₂ = M₂ᴬ + M₂ᴮ + (n_A n_B / n)(x̄_B - x̄_A)²` per dimension. Cost: O(d).
    fn merge(&self, a: &mut DiagStat, b: &DiagStat) {
        debug_assert_eq!(a.d, b.d);
        if b.n == 0 {
            return;
        }
        if a.n == 0 {
            a.clone_from(b);
            return;
        }
        let d = self.d;
        let (na, nb) = (a.n as f64, b.n as f64);
        let n = na + nb;
        let between = na * nb / n;
        let frac_b = nb / n;
        let (mean, rest) = a.buf.split_at_mut(d);
        for j in 0..d {
            let delta = b.buf[j] - mean[j];
            rest[j] += b.buf[d + j] + between * delta * delta;
            mean[j] += delta * frac_b;
        }
        a.n += b.n;
        self.refresh(a);
    }

    /// `c(n) - ν_n/2 Σ_j ln ψ_{n,j}` from the cache. Cost: O(1).
    fn ln_marginal(&self, s: &DiagStat) -> f64 {
        if s.n == 0 {
            return 0.0;
        }
        self.marg_const(s.n) - 0.5 * (self.hyper.nu + s.n as f64) * s.ln_psi_n
    }

    /// `ψ_{A∪B,j} = ψ_j + M₂ᴬⱼ + M₂ᴮⱼ + (n_A n_B/n) δ_j² + (r n/(r+n)) x̄_j²` (Chan's formula,
    /// δ = x̄_B - x̄_A, x̄ the pooled mean) summed in logarithms. Cost: O(d), no allocation.
    fn ln_marginal_pair(&self, a: &DiagStat, b: &DiagStat) -> f64 {
        if a.n == 0 {
            return self.ln_marginal(b);
        }
        if b.n == 0 {
            return self.ln_marginal(a);
        }
        let d = self.d;
        let (na, nb) = (a.n as f64, b.n as f64);
        let n = na + nb;
        let between = na * nb / n;
        let prior_weight = self.hyper.r * n / (self.hyper.r + n);
        let ln_psi_union = ln_product(d, |j| {
            let (ma, mb) = (a.buf[j], b.buf[j]);
            let delta = mb - ma;
            let pooled = (na * ma + nb * mb) / n;
            self.hyper.psi[j]
                + a.buf[d + j]
                + b.buf[d + j]
                + between * delta * delta
                + prior_weight * pooled * pooled
        });
        self.marg_const(a.n + b.n) - 0.5 * (self.hyper.nu + n) * ln_psi_union
    }

    /// Product of d Student-t densities from the cache. Cost: O(d), d/8 logarithms.
    fn ln_predictive(&self, i: usize, s: &DiagStat) -> f64 {
        debug_assert_eq!(s.d, self.d);
        s.pred_offset - s.pred_power * self.ln_ratio(self.centred_point(i), s)
    }

    /// Every Student-t factor is largest at its centre: `pc(n) - ½ Σ_j ln ψ_{n,j}`.
    /// Cost: O(1).
    fn ln_predictive_max(&self, s: &DiagStat) -> f64 {
        s.pred_offset
    }

    /// The predictive of a member from the statistic that holds it: per dimension
    /// `ψ_{n-1,j} = ρ_j ψ_{n,j}` with `ρ_j = 1 - r_n/r_{n-1} (y_j - ξ_{n,j})² / ψ_{n,j}`, so
    /// `ln p(y | S∖{i}) = pc(n-1) - ½ Σ ln ψ_{n,j} + (ν_{n-1}/2) Σ ln ρ_j`. `None` when
    /// `n < 2` or some `ρ_j` is below [`DOWNDATE_MIN_DET_RATIO`] (the subtraction would
    /// cancel most digits; the caller removes the point instead). Cost: O(d).
    fn ln_predictive_member(&self, i: usize, s: &DiagStat) -> Option<f64> {
        debug_assert_eq!(s.d, self.d);
        if s.n < 2 {
            return None;
        }
        let y = self.centred_point(i);
        let (centre, weight) = s.predictive_parts();
        let rn = self.hyper.r + s.n as f64;
        // weight = r_n/(r_n+1)/ψ_n, so r_n/(r_n-1)/ψ_n = weight (r_n+1)/(r_n-1).
        let factor = (rn + 1.0) / (rn - 1.0);
        let rho = |j: usize| {
            let e = y[j] - centre[j];
            1.0 - factor * weight[j] * e * e
        };
        // A NaN fails the comparison too.
        if !(0..self.d).all(|j| rho(j) >= DOWNDATE_MIN_DET_RATIO) {
            return None;
        }
        let ln_rho = ln_product(self.d, rho);
        Some(
            self.pred_const(s.n - 1) - 0.5 * s.ln_psi_n
                + 0.5 * (self.hyper.nu + s.n as f64 - 1.0) * ln_rho,
        )
    }
}

/// The diagonal kernel's hyperparameters for hyperpriors, as the Normal-Wishart kernel's: the
/// multiplier `s` of every dimension's scale `ψ = s ψ⁰` (`ψ⁰` the scales the kernel was made
/// with), the mean precision `r` and the degrees of freedom `ν > 0` (the 1-D Wishart's offset
/// `d - 1 = 0`); `s` and `r` free by default (see [`super::hyperprior`]).
impl HyperKernel for Diagonal {
    const HYPER_NAMES: &'static [&'static str] = &["diag_s", "diag_r", "diag_nu"];

    /// `s`, `r`, `ν`.
    fn hyper_values(&self) -> Vec<f64> {
        vec![self.psi_scale, self.hyper.r, self.hyper.nu]
    }

    fn hyper_offset(&self, _j: usize) -> f64 {
        0.0
    }

    fn hyper_default_sd(&self, j: usize) -> f64 {
        if j == 2 {
            1.0
        } else {
            2.0
        }
    }

    /// Only the scale multiplier `s`: with the mean precision `r` free as well, the clusters'
    /// means may all crowd the data mean (large `r`), and pure noise then splits into many
    /// clusters of one covariance (K = 9-17 of 600 points in 10 dimensions, against K = 1
    /// with `s` alone free).
    fn hyper_free_by_default(&self, j: usize) -> bool {
        j == 0
    }

    /// `ψ_{n,j} = s ψ⁰_j + M₂ⱼ + (r n/(r + n)) x̄_j²` from the statistic's means and sums of
    /// squares, with the size constants at `(r, ν)`. Cost: O(d) and 2 `ln Γ`.
    fn ln_marginal_at(&self, st: &DiagStat, h: &[f64]) -> f64 {
        if st.n == 0 {
            return 0.0;
        }
        let (scale, r, nu) = (h[0], h[1], h[2]);
        let (d, n) = (self.d, st.n as f64);
        let prior_weight = r * n / (r + n);
        let (mean, m2) = (st.mean(), st.sum_squares());
        let ln_psi_n = ln_product(d, |j| {
            scale * self.psi_base[j] + m2[j] + prior_weight * mean[j] * mean[j]
        });
        let df = d as f64;
        let ln_psi = df * scale.ln() + self.ln_psi_base;
        -0.5 * n * df * std::f64::consts::PI.ln() - 0.5 * df * (n / r).ln_1p()
            + df * (ln_gamma(0.5 * (nu + n)) - ln_gamma(0.5 * nu))
            + 0.5 * nu * ln_psi
            - 0.5 * (nu + n) * ln_psi_n
    }

    /// `ψ = s ψ⁰` with the given `r` and `ν`, over the same data; the size tables are made
    /// anew. Errors if `h` does not hold three values or one is out of range. Cost: O(N d).
    fn with_hyper_values(&self, h: &[f64]) -> Result<Self> {
        if h.len() != 3 {
            return Err(Error::DimensionMismatch(format!(
                "{} diagonal-kernel hyperparameter values, expected 3 (s, r, nu)",
                h.len()
            )));
        }
        let scale = h[0];
        if !(scale > 0.0 && scale.is_finite()) {
            return Err(Error::param("diag_s", scale, "a finite number > 0"));
        }
        let psi = self.psi_base.iter().map(|&v| scale * v).collect();
        let hyper = DiagHyper::new(self.hyper.xi.clone(), psi, h[1], h[2])?;
        let mut k = Diagonal::new(self.data.clone(), hyper)?;
        k.psi_base = self.psi_base.clone();
        k.ln_psi_base = self.ln_psi_base;
        k.psi_scale = scale;
        Ok(k)
    }

    /// Recomputes `ψ_{n,j}` and the predictive cache from the means and sums of squares.
    /// Cost: O(d).
    fn refresh_stat(&self, s: &mut DiagStat) {
        self.refresh(s);
    }
}

impl DiagHyper {
    /// The diagonal kernel's hyperparameters for `x`: the user's `ξ`, `ψ` (d values), `r`, `ν`
    /// where given, the rest by the policy of [`NwDefaults`] applied to a diagonal scale.
    /// Unit-equivariant ([`DiagHyper::from_data`]): `r` = [`SCALED_R`],
    /// `ν = 1 + scaled_nu_minus_d(1)` (per dimension, as the Normal-Wishart's `ν - d` at d = 1), and `ψ`
    /// so that the expected cluster variances are [`scaled_share`]`(d)` of the column
    /// variances (a cluster's box then has a tenth of the data's volume, as the
    /// Normal-Wishart's ellipsoid); a given `ν ≤ 3` sets the scale as `ν = 3` does. Reference:
    /// `r = 0.1`, `ν = 7` and `ψ` the variances rescaled to `Π ψ_j = 0.1`. With d = 1 both
    /// are the Normal-Wishart defaults. Cost: O(N d).
    pub fn for_settings(s: &KernelSettings, x: &DenseData) -> Result<DiagHyper> {
        let d = x.d();
        let (r, nu) = match s.defaults {
            NwDefaults::Pooled | NwDefaults::Scaled => (SCALED_R, 1.0 + scaled_nu_minus_d(1)),
            NwDefaults::Reference => (NwHyper::REFERENCE_R, 1.0 + NwHyper::REFERENCE_NU_MINUS_D),
        };
        let (r, nu) = (s.r.unwrap_or(r), s.nu.unwrap_or(nu));
        let (xi, psi) = match (&s.xi, &s.psi) {
            (Some(xi), Some(psi)) => (xi.clone(), psi.clone()),
            (xi, psi) => {
                let from_data = match s.defaults {
                    NwDefaults::Pooled | NwDefaults::Scaled => {
                        Self::from_data(x, scaled_share(d), r, (nu - 1.0).max(2.0))?
                    }
                    NwDefaults::Reference => Self::reference_from_data(x)?,
                };
                (
                    xi.clone().unwrap_or_else(|| from_data.xi().to_vec()),
                    psi.clone().unwrap_or_else(|| from_data.psi().to_vec()),
                )
            }
        };
        Self::new(xi, psi, r, nu)
    }
}

/// New points are real vectors of the training data's dimension.
impl PredictiveKernel for Diagonal {
    type NewData = DenseData;

    fn n_new(data: &DenseData) -> usize {
        data.n()
    }

    fn ln_predictive_new(&self, data: &DenseData, j: usize, s: &Self::Stat) -> Result<f64> {
        self.ln_predictive_point(data.row(j), s)
    }
}

/// The diagonal kernel as models and front ends name and build it.
impl Kernel for Diagonal {
    const NAME: &'static str = "diag";
    const ABOUT: &'static str = "Independent Normal-Gamma per dimension (diagonal covariance) on \
                                 real vectors: O(d) per point, for high dimensions";
    const TITLE: &'static str = "diagonal Normal-Gamma kernel";
    const DATA: &'static str = "real vectors";
    const SCALE_DEFAULTS: bool = true;

    /// [`DiagHyper::for_settings`] over real data. Cost: O(N d), then the kernel's
    /// construction.
    fn build(settings: &KernelSettings, data: Dataset) -> Result<Self> {
        match data {
            Dataset::Dense(x) => {
                let hyper = DiagHyper::for_settings(settings, &x)?;
                Diagonal::new(Arc::new(x), hyper)
            }
            Dataset::Table(_) => Err(super::settings::table_refused("diag")),
            Dataset::Counts(_) => Err(Error::Usage(
                "`kernel` diag needs a real matrix, but the data are counts: use `kernel` md"
                    .into(),
            )),
        }
    }

    /// `psi` holds d values, one scale per column ([`check_real_settings`]).
    fn check_settings(settings: &KernelSettings, data: &Dataset) -> Result<()> {
        check_real_settings(settings, data, |d| {
            (
                d,
                format!("{d} comma-separated values with `kernel` diag, one scale per data column"),
            )
        })
    }

    fn dim(&self) -> usize {
        Diagonal::dim(self)
    }

    fn points_of(data: &Dataset) -> Option<&DenseData> {
        dense_points(data)
    }

    fn check_new(&self, new: &DenseData) -> Result<()> {
        check_dense_new(Diagonal::dim(self), new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel() -> Diagonal {
        let data = DenseData::from_rows(&[
            vec![0.3, -1.2, 2.0],
            vec![1.1, 0.4, -0.5],
            vec![-0.7, 0.9, 0.1],
            vec![2.2, -0.3, 1.4],
            vec![0.0, 0.5, -1.0],
        ])
        .unwrap();
        let hyper = DiagHyper::new(vec![0.1, -0.2, 0.3], vec![1.0, 0.8, 1.5], 0.7, 3.5).unwrap();
        Diagonal::new(Arc::new(data), hyper).unwrap()
    }

    /// The blocks' logarithms are the same bits at every level this CPU runs, those of the
    /// scalar branch-free `ln`, within a few ulps of the standard library's.
    #[test]
    fn block_logarithms_are_the_same_at_every_level() {
        use crate::simd::{with_level, Level};
        let x: Vec<f64> = (0..LN_CHUNK)
            .map(|b| {
                (1.0 + b as f64 * 0.37).powi(b as i32 % 7) * if b % 3 == 0 { 1e-200 } else { 1e5 }
            })
            .collect();
        let want: Vec<f64> = x.iter().map(|&v| crate::vecmath::ln(v)).collect();
        for (&v, &w) in x.iter().zip(&want) {
            assert!(
                (w - v.ln()).abs() <= 4.0 * f64::EPSILON * v.ln().abs(),
                "{v}"
            );
        }
        for level in Level::ALL {
            let mut got = vec![0.0; LN_CHUNK];
            with_level(level, || ln_blocks(&x, &mut got));
            let same = got
                .iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{level:?}: {got:?}");
        }
    }

    #[test]
    fn ln_product_is_the_sum_of_logarithms_at_any_scale() {
        for scale in [1e-300, 1e-40, 1.0, 1e40, 1e300] {
            let f = |j: usize| scale * (1.0 + j as f64);
            let direct: f64 = (0..19).map(|j| f(j).ln()).sum();
            let got = ln_product(19, f);
            assert!(
                (got - direct).abs() < 1e-12 * direct.abs().max(1.0),
                "{scale}"
            );
        }
        assert_eq!(ln_product(0, |_| 2.0), 0.0);
        // Several chunks of blocks, a last block cut short, and blocks whose products leave
        // the range of `f64` (dimensions 300-307 and 600-603) in the second and third chunks.
        let f = |j: usize| match j {
            300..=307 => 1e-60,
            600..=603 => 1e250,
            _ => 1.0 + (j % 13) as f64 * 0.25,
        };
        let direct: f64 = (0..605).map(|j| f(j).ln()).sum();
        let got = ln_product(605, f);
        assert!(
            (got - direct).abs() < 1e-12 * direct.abs(),
            "{got} {direct}"
        );
    }

    #[test]
    fn tables_equal_direct_formulas_beyond_their_end() {
        let k = kernel();
        let end = k.marg_const.len();
        let nu = k.hyper.nu;
        for n in [0, 3, end - 1] {
            let direct = marg_const_from(
                &k.hyper,
                k.ln_psi,
                n,
                ln_gamma(0.5 * (nu + n as f64)) - ln_gamma(0.5 * nu),
            );
            assert!((k.marg_const(n) - direct).abs() < 1e-12 * direct.abs().max(1.0));
        }
        assert!(k.marg_const(end + 2).is_finite());
        assert!(k.pred_const(end + 2).is_finite());
    }

    #[test]
    fn emptying_restores_the_prior_and_member_predictive_declines_for_one_point() {
        let k = kernel();
        let mut s = k.stat_of(&[0, 3]);
        k.remove(&mut s, 3);
        assert!(s.sum_squares().iter().all(|&v| v == 0.0));
        assert_eq!(k.ln_predictive_member(0, &s), None);
        k.remove(&mut s, 0);
        let empty = k.empty_stat();
        assert_eq!(s.buf, empty.buf);
        assert_eq!(k.ln_marginal(&s), 0.0);
    }

    /// The hyperkernel invariants: the marginal at the kernel's own values is its marginal,
    /// and a kernel rebuilt at other values agrees with `ln_marginal_at` and refreshes
    /// statistics to its own.
    #[test]
    fn hyperparameter_values_move_the_marginal_consistently() {
        let k = kernel();
        let s = k.stat_of(&[0, 2, 3]);
        let own = k.ln_marginal_at(&s, &k.hyper_values());
        assert!((own - k.ln_marginal(&s)).abs() < 1e-10 * own.abs().max(1.0));
        let h = [2.5, 0.3, 5.0];
        let other = k.with_hyper_values(&h).unwrap();
        assert_eq!(other.hyper_values(), h.to_vec());
        let mut moved = s.clone();
        other.refresh_stat(&mut moved);
        let fresh = other.stat_of(&[0, 2, 3]);
        let want = other.ln_marginal(&fresh);
        assert!((other.ln_marginal(&moved) - want).abs() < 1e-10 * want.abs().max(1.0));
        assert!((k.ln_marginal_at(&s, &h) - want).abs() < 1e-10 * want.abs().max(1.0));
        // Values depend on h only: rebuilt twice, the same scales.
        let again = other.with_hyper_values(&h).unwrap();
        assert_eq!(again.hyper().psi(), other.hyper().psi());
        assert!(k.with_hyper_values(&[0.0, 1.0, 1.0]).is_err());
    }

    #[test]
    fn clone_from_reuses_the_buffer() {
        let k = kernel();
        let a = k.stat_of(&[0, 1]);
        let mut b = k.stat_of(&[2]);
        let ptr = b.buf.as_ptr();
        b.clone_from(&a);
        assert_eq!(b.buf.as_ptr(), ptr);
        assert_eq!(b.buf, a.buf);
    }
}
