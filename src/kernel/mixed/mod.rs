//! The product kernel over the columns of a table ([`crate::data::TableData`]): each column
//! its own conjugate kernel, independent of the others given the cluster, and missing entries
//! marginalised exactly.
//!
//! Per column `j` of a cluster, over its observed entries only (`n_j` of them):
//!
//! * **real**: Normal-Gamma, `x | μ, λ ~ N(μ, 1/λ)`, `μ | λ ~ N(ξ_j, 1/(r λ))`,
//!   `λ ~ Gamma(ν/2, rate ψ_j/2)` (the diagonal kernel's column, MATH §2.1 with d = 1):
//!   `ln m_j = -n_j/2 ln π - ½ ln(1 + n_j/r) + ln Γ((ν+n_j)/2) - ln Γ(ν/2) + ν/2 ln ψ_j
//!   - (ν+n_j)/2 ln ψ_{n,j}` with `ψ_{n,j} = ψ_j + M₂ + (r n_j/(r+n_j)) x̄²` (data centred by
//!   `ξ_j`); the predictive is a Student t;
//! * **binary and categorical** with `L` levels: Dirichlet-categorical with `θ ~ Dir(β, …, β)`
//!   (Beta-Bernoulli for `L = 2`): `ln m_j = ln Γ(Lβ) - ln Γ(Lβ + n_j) + Σ_l [ln Γ(β + c_l)
//!   - ln Γ(β)]`, predictive `(β + c_l)/(Lβ + n_j)`;
//! * **count**: Gamma-Poisson, `x ~ Poisson(λ)`, `λ ~ Gamma(a, rate b_j)`:
//!   `ln m_j = a ln b_j - ln Γ(a) + ln Γ(a + S) - (a + S) ln(b_j + n_j) - Σ ln x!` with `S` the
//!   sum; the predictive is negative binomial.
//!
//! `ln m(X) = Σ_j ln m_j`. **Missing entries, exactly.** Under missing at random the
//! likelihood of a row's observed entries is its full likelihood integrated (summed) over
//! the missing ones; the columns being independent given the parameters, a missing entry's
//! factor integrates to 1, so it adds nothing to its column's statistics and the marginal
//! over observed entries is exactly the complete data's marginal integrated over every
//! completion (checked by enumerating completions in the tests).
//!
//! **Defaults, unit-equivariant.** Real columns as the diagonal kernel's
//! ([`super::DiagHyper::from_data`]): `ξ_j` the observed mean, `r` = [`super::settings::SCALED_R`],
//! `ν = 1 + scaled_nu_minus_d(1)`, `ψ_j` such that the expected cluster variance is
//! `scaled_share(d_real)` of the column's observed variance (so rescaling or shifting a
//! column changes nothing); categories `β` = [`DEFAULT_BETA`] as the Beta-Bernoulli kernel's;
//! counts `a = 1` and `b_j = 1 / mean_j` (the prior mean is the column's mean; counts have no
//! units to change).
//!
//! Hyperparameters (trace columns `mixed_s`, `mixed_r`, `mixed_nu`, `mixed_beta`): the scale
//! multiplier `s` of every `ψ_j`, `r`, `ν` and `β`; `s` and `β` are free under kernel
//! hyperpriors by default (log-normal, `τ = 2`, [`super::hyperprior`]).
//!
//! **The real columns as one full-covariance block** ([`Mixed::full`], `mixed_real` full):
//! the `d_r` real columns of a row are one vector with the full Normal-Wishart kernel
//! (MATH §2.1) over the block, beside the other columns' kernels as above; its defaults are the
//! full kernel's unit-equivariant ones, and a row's missing real coordinates are latent values
//! of the chain, redrawn once per sweep from their exact conditional ([`block`]), so the
//! partition's posterior is the exact one given the observed entries. The hyperparameters
//! `s`, `r`, `ν` are then the block's (`Ψ = s Ψ₀`, `ν > d_r - 1`).
//!
//! Cost: a statistic holds O(d + Σ levels) numbers; add, remove and the predictive are O(d)
//! with a few logarithms per observed entry; the marginal is O(d + Σ levels) `ln Γ`. With the
//! block, its part costs as the Normal-Wishart kernel's in `d_r` dimensions.

use std::sync::Arc;

use rand::Rng;
use rand_distr::{Distribution, StandardNormal};
use serde::Serialize;

use super::hyperprior::HyperKernel;
use super::multinomial_dirichlet::DEFAULT_BETA;
use super::settings::{scaled_nu_minus_d, scaled_share, KernelSettings, SCALED_R};
use super::{ln_gamma_variate, ConjugateKernel, Kernel, ParametricKernel, PredictiveKernel};
use super::SvaKernel;
use super::normal_wishart::{NwPosterior, SoftNw};
use super::{NwHyper, NwParam, NwStat};
use crate::data::table::{ColumnType, TableData};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::math::{ln_gamma, log_sum_exp};

pub mod block;
mod terms;

use block::Block;
use terms::Terms;

/// `ln π`.
const LN_PI: f64 = 1.144_729_885_849_400_2;

/// The shape `a` of every count column's Gamma prior.
pub const COUNT_SHAPE: f64 = 1.0;

/// What a column is to the kernel, with its index among the columns of its family.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Part {
    /// Real column `k` (among the real ones).
    Real(usize),
    /// Discrete column `k` with `levels` levels, whose counts start at `offset`.
    Discrete {
        k: usize,
        offset: usize,
        levels: usize,
    },
    /// Count column `k`.
    Count(usize),
    /// Coordinate `k` of the full-covariance block of real columns.
    Block(usize),
}

/// The product kernel over a table (see the module documentation).
#[derive(Clone)]
pub struct Mixed {
    table: Arc<TableData>,
    /// The entries row by row: real ones centred by `ξ`, level codes, counts; NaN missing.
    x: Arc<Vec<f64>>,
    parts: Arc<Vec<Part>>,
    n_real: usize,
    n_disc: usize,
    n_levels: usize,
    n_count: usize,
    xi: Arc<Vec<f64>>,
    psi_base: Arc<Vec<f64>>,
    count_b: Arc<Vec<f64>>,
    s: f64,
    r: f64,
    nu: f64,
    beta: f64,
    /// `ψ_j = s ψ⁰_j`.
    psi: Vec<f64>,
    /// The per-count terms of `ln m` and the predictive at these hyperparameters.
    terms: Arc<Terms>,
    /// The real columns as one Normal-Wishart block, when they are ([`Mixed::full`]).
    block: Option<Block>,
}

impl std::fmt::Debug for Mixed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mixed")
            .field("n", &self.table.n())
            .field("d", &self.table.d())
            .field("s", &self.s)
            .field("r", &self.r)
            .field("nu", &self.nu)
            .field("beta", &self.beta)
            .field("full", &self.block.is_some())
            .finish()
    }
}

/// Sums over the observed entries of a set of rows, each with a weight (1 for a set of
/// points, real for SVA): per real column the weight, mean and centred sum of squares; per
/// discrete column the weight of each level and their total; per count column the weight,
/// the weighted sum and the weighted `Σ ln x!`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sums {
    real: Vec<[f64; 3]>,
    levels: Vec<f64>,
    seen: Vec<f64>,
    counts: Vec<[f64; 3]>,
}

/// The statistic of a set of points: their number, their [`Sums`] and, with the
/// full-covariance block, its Normal-Wishart statistic.
#[derive(Clone, Debug)]
pub struct MixedStat {
    n: usize,
    sums: Sums,
    block: Option<NwStat>,
}

/// Equal counts and sums, and equal block statistics (count, mean and scatter).
impl PartialEq for MixedStat {
    fn eq(&self, other: &Self) -> bool {
        self.n == other.n
            && self.sums == other.sums
            && match (&self.block, &other.block) {
                (None, None) => true,
                (Some(a), Some(b)) => {
                    a.len() == b.len() && a.mean() == b.mean() && a.scatter() == b.scatter()
                }
                _ => false,
            }
    }
}

impl MixedStat {
    /// Number of points.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether it holds no point.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

impl Sums {
    /// Adds the row `x` (centred, NaN missing) with weight `w`. Welford's update for the real
    /// columns. Cost: O(d).
    fn add(&mut self, parts: &[Part], x: &[f64], w: f64) {
        for (&p, &v) in parts.iter().zip(x) {
            if v.is_nan() {
                continue;
            }
            match p {
                Part::Real(k) => {
                    let [n, mean, m2] = &mut self.real[k];
                    *n += w;
                    let delta = v - *mean;
                    *mean += w * delta / *n;
                    *m2 += w * delta * (v - *mean);
                }
                Part::Discrete { k, offset, .. } => {
                    self.levels[offset + v as usize] += w;
                    self.seen[k] += w;
                }
                Part::Count(k) => {
                    let c = &mut self.counts[k];
                    c[0] += w;
                    c[1] += w * v;
                    c[2] += w * ln_gamma(v + 1.0);
                }
                Part::Block(_) => {}
            }
        }
    }

    /// Removes the row `x` of weight 1, which must be in the sums. Cost: O(d).
    fn remove(&mut self, parts: &[Part], x: &[f64]) {
        for (&p, &v) in parts.iter().zip(x) {
            if v.is_nan() {
                continue;
            }
            match p {
                Part::Real(k) => {
                    let [n, mean, m2] = &mut self.real[k];
                    *n -= 1.0;
                    if *n <= 0.0 {
                        (*n, *mean, *m2) = (0.0, 0.0, 0.0);
                    } else {
                        let old = (*mean * (*n + 1.0) - v) / *n;
                        *m2 = (*m2 - (v - old) * (v - *mean)).max(0.0);
                        *mean = old;
                    }
                }
                Part::Discrete { k, offset, .. } => {
                    self.levels[offset + v as usize] -= 1.0;
                    self.seen[k] -= 1.0;
                }
                Part::Count(k) => {
                    let c = &mut self.counts[k];
                    c[0] -= 1.0;
                    c[1] -= v;
                    c[2] -= ln_gamma(v + 1.0);
                    if c[0] <= 0.0 {
                        *c = [0.0; 3];
                    }
                }
                Part::Block(_) => {}
            }
        }
    }

    /// Adds `b` (Chan's merge for the real columns). Cost: O(d + levels).
    fn merge(&mut self, b: &Sums) {
        for (a, b) in self.real.iter_mut().zip(&b.real) {
            let n = a[0] + b[0];
            if b[0] > 0.0 {
                let delta = b[1] - a[1];
                a[2] += b[2] + delta * delta * a[0] * b[0] / n;
                a[1] += delta * b[0] / n;
                a[0] = n;
            }
        }
        for (a, b) in self.levels.iter_mut().zip(&b.levels) {
            *a += b;
        }
        for (a, b) in self.seen.iter_mut().zip(&b.seen) {
            *a += b;
        }
        for (a, b) in self.counts.iter_mut().zip(&b.counts) {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
    }
}

/// Hyperparameter values `(s, r, ν, β)` in their fixed order.
#[derive(Clone, Copy)]
struct Hyper {
    s: f64,
    r: f64,
    nu: f64,
    beta: f64,
}

/// The priors of every column: the real columns' means `ξ`, scales `ψ⁰` (before the
/// multiplier `s`), `r` and `ν`; the count columns' Gamma rates `b` (shape [`COUNT_SHAPE`]);
/// the categories' concentration `β`.
#[derive(Clone, Debug, PartialEq)]
pub struct MixedPriors {
    /// `ξ_j` per real column, in their order among the real columns.
    pub xi: Vec<f64>,
    /// `ψ⁰_j > 0` per real column.
    pub psi: Vec<f64>,
    /// `b_j > 0` per count column.
    pub count_rate: Vec<f64>,
    /// The mean precision scale `r > 0`.
    pub r: f64,
    /// The degrees of freedom `ν > 0`.
    pub nu: f64,
    /// The Dirichlet concentration `β > 0` of binary and categorical columns.
    pub beta: f64,
}

impl MixedPriors {
    /// The defaults over `table` (see the module documentation), `r`, `ν` and `β` replaced
    /// where given. Errors if a real column has fewer than 2 observed entries. Cost: O(N d).
    pub fn defaults(
        table: &TableData,
        r: Option<f64>,
        nu: Option<f64>,
        beta: Option<f64>,
    ) -> Result<Self> {
        let (mut xi, mut var, mut count_rate) = (Vec::new(), Vec::new(), Vec::new());
        for c in table.columns() {
            let observed: Vec<f64> = c.values.iter().copied().filter(|v| !v.is_nan()).collect();
            let m = observed.len() as f64;
            let mean = observed.iter().sum::<f64>() / m;
            match c.kind {
                ColumnType::Real => {
                    if observed.len() < 2 {
                        return Err(Error::Usage(format!(
                            "real column \"{}\" has {} observed value(s); its prior's scale \
                             needs at least 2: give it another type (--types) or leave it out",
                            c.name,
                            observed.len()
                        )));
                    }
                    xi.push(mean);
                    var.push(
                        observed.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (m - 1.0),
                    );
                }
                ColumnType::Count => {
                    count_rate.push(if mean > 0.0 { COUNT_SHAPE / mean } else { 1.0 })
                }
                ColumnType::Binary | ColumnType::Categorical => {}
            }
        }
        let r = r.unwrap_or(SCALED_R);
        let nu = nu.unwrap_or(1.0 + scaled_nu_minus_d(1));
        let psi = if var.is_empty() {
            Vec::new()
        } else {
            // The diagonal kernel's default over the real columns: the expected cluster
            // variance `ψ_j / (ν - 2)` is `scaled_share(d_real)` of the column's variance.
            let share = scaled_share(var.len());
            let mean_var = var.iter().sum::<f64>() / var.len() as f64;
            let floor = if mean_var > 0.0 {
                super::diagonal::DIAG_PSI_FLOOR * mean_var
            } else {
                1.0
            };
            let nu_scale = (nu - 1.0).max(2.0) - 1.0;
            var.iter().map(|v| share * nu_scale * v.max(floor)).collect()
        };
        Ok(MixedPriors {
            xi,
            psi,
            count_rate,
            r,
            nu,
            beta: beta.unwrap_or(DEFAULT_BETA),
        })
    }
}

/// The indices of `table`'s real columns.
fn real_columns(table: &TableData) -> Vec<usize> {
    (0..table.d())
        .filter(|&j| table.columns()[j].kind == ColumnType::Real)
        .collect()
}

impl Mixed {
    /// The kernel over `table` with the default priors ([`MixedPriors::defaults`]).
    /// Cost: O(N d).
    pub fn new(table: TableData, r: Option<f64>, nu: Option<f64>, beta: Option<f64>) -> Result<Self> {
        let priors = MixedPriors::defaults(&table, r, nu, beta)?;
        Self::with_priors(table, priors)
    }

    /// The kernel over `table` with the given priors. Errors if their lengths do not match
    /// the table's real and count columns or a value is out of range. Cost: O(N d).
    pub fn with_priors(table: TableData, p: MixedPriors) -> Result<Self> {
        Self::assemble(table, p, None)
    }

    /// The kernel over `table` with its real columns as one full-covariance block (see the
    /// module documentation): the block's defaults are the full kernel's unit-equivariant
    /// ones ([`block`]), `r` and `ν` the block's where given, `β` the categories'. Errors if
    /// the table has fewer than 2 real columns, a real column fewer than 2 observed entries,
    /// or `ν ≤ d_r + 1`. Cost: O(N d + N d_r² + d_r³).
    pub fn full(table: TableData, r: Option<f64>, nu: Option<f64>, beta: Option<f64>) -> Result<Self> {
        let cols = real_columns(&table);
        if cols.len() < 2 {
            return Err(Error::Usage(format!(
                "the full-covariance block needs at least 2 real columns, but the table has {}: \
                 give `mixed_real` independent",
                cols.len()
            )));
        }
        let block = Block::new(&table, &cols, r, nu)?;
        let mut priors = MixedPriors::defaults(&table, r, None, beta)?;
        priors.xi.clear();
        priors.psi.clear();
        priors.r = block.nw.hyper().r();
        priors.nu = block.nw.hyper().nu();
        Self::assemble(table, priors, Some(block))
    }

    /// The kernel over `table` with its real columns as one full-covariance block with
    /// hyperparameters `block` (dimension: the number of real columns; `Ψ` is `Ψ₀`, `s = 1`)
    /// and the other columns' priors `p` (whose `xi` and `psi` must be empty; its `r` and
    /// `nu` are replaced by the block's). Errors as [`Mixed::with_priors`]. Cost: as
    /// [`Mixed::full`].
    pub fn full_with(table: TableData, mut p: MixedPriors, block: NwHyper) -> Result<Self> {
        let cols = real_columns(&table);
        let block = Block::with_hyper(&table, &cols, block)?;
        p.r = block.nw.hyper().r();
        p.nu = block.nw.hyper().nu();
        Self::assemble(table, p, Some(block))
    }

    /// The kernel from its priors and, for the full-covariance block, the block. Cost: O(N d).
    fn assemble(table: TableData, p: MixedPriors, block: Option<Block>) -> Result<Self> {
        let (n, d) = (table.n(), table.d());
        let mut parts = Vec::with_capacity(d);
        let (mut n_real, mut n_block, mut n_disc, mut n_levels, mut n_count) = (0, 0, 0, 0, 0);
        for c in table.columns() {
            match c.kind {
                ColumnType::Real if block.is_some() => {
                    parts.push(Part::Block(n_block));
                    n_block += 1;
                }
                ColumnType::Real => {
                    parts.push(Part::Real(n_real));
                    n_real += 1;
                }
                ColumnType::Binary | ColumnType::Categorical => {
                    let levels = c.n_levels();
                    parts.push(Part::Discrete {
                        k: n_disc,
                        offset: n_levels,
                        levels,
                    });
                    n_disc += 1;
                    n_levels += levels;
                }
                ColumnType::Count => {
                    parts.push(Part::Count(n_count));
                    n_count += 1;
                }
            }
        }
        if p.xi.len() != n_real || p.psi.len() != n_real || p.count_rate.len() != n_count {
            return Err(Error::DimensionMismatch(format!(
                "priors for {} real and {} count columns, but the table has {n_real} and \
                 {n_count}",
                p.xi.len(),
                p.count_rate.len()
            )));
        }
        let positive = |v: &f64| *v > 0.0 && v.is_finite();
        if !p.psi.iter().chain(&p.count_rate).all(positive) || !p.xi.iter().all(|v| v.is_finite()) {
            return Err(Error::Usage(
                "the product kernel's psi and count rates must be finite and > 0, xi finite"
                    .into(),
            ));
        }
        let mut x = vec![f64::NAN; n * d];
        for (j, (c, part)) in table.columns().iter().zip(&parts).enumerate() {
            for (i, &v) in c.values.iter().enumerate() {
                x[i * d + j] = match part {
                    Part::Real(k) => v - p.xi[*k],
                    _ => v,
                };
            }
        }
        let k = Mixed {
            table: Arc::new(table),
            x: Arc::new(x),
            parts: Arc::new(parts),
            n_real,
            n_disc,
            n_levels,
            n_count,
            xi: Arc::new(p.xi),
            psi_base: Arc::new(p.psi),
            count_b: Arc::new(p.count_rate),
            s: 1.0,
            r: p.r,
            nu: p.nu,
            beta: p.beta,
            psi: Vec::new(),
            terms: Arc::new(Terms::default()),
            block,
        };
        k.at_values(k.hyper())
    }

    /// The priors of the kernel as it stands (`ψ⁰` before the multiplier `s`).
    pub fn priors(&self) -> MixedPriors {
        MixedPriors {
            xi: self.xi.to_vec(),
            psi: self.psi_base.to_vec(),
            count_rate: self.count_b.to_vec(),
            r: self.r,
            nu: self.nu,
            beta: self.beta,
        }
    }

    /// This kernel at other hyperparameter values, checked, with its term tables ([`terms`]).
    /// Cost: O(N d) `ln Γ` and `ln`.
    fn at_values(&self, h: Hyper) -> Result<Self> {
        for (name, v) in [("mixed_s", h.s), ("r", h.r), ("nu", h.nu), ("beta", h.beta)] {
            if !(v > 0.0 && v.is_finite()) {
                return Err(Error::param(name, v, "a finite number > 0"));
            }
        }
        let psi: Vec<f64> = self.psi_base.iter().map(|p| h.s * p).collect();
        let block = match &self.block {
            Some(b) => Some(b.at(h.s, h.r, h.nu)?),
            None => None,
        };
        let n = self.table.n();
        // `ln Γ((ν+n+1)/2) - ln Γ((ν+n)/2)`, the Student t predictive's ratio.
        let t_ratio: Vec<f64> = (0..=n)
            .map(|m| {
                let nu_n = h.nu + m as f64;
                ln_gamma(0.5 * (nu_n + 1.0)) - ln_gamma(0.5 * nu_n)
            })
            .collect();
        let terms = Terms::new(
            n,
            h,
            &self.parts,
            &psi,
            &self.count_b,
            &t_ratio,
            self.count_top(),
        );
        Ok(Mixed {
            psi,
            s: h.s,
            r: h.r,
            nu: h.nu,
            beta: h.beta,
            terms: Arc::new(terms),
            block,
            ..self.clone()
        })
    }

    /// The largest sum a count column's terms meet: its observed total plus its largest value
    /// (0 without count columns). Cost: O(N) per count column.
    fn count_top(&self) -> usize {
        self.table
            .columns()
            .iter()
            .zip(self.parts.iter())
            .filter(|(_, p)| matches!(p, Part::Count(_)))
            .map(|(c, _)| {
                let seen = c.values.iter().filter(|v| v.is_finite() && **v >= 0.0);
                let (total, top) = seen.fold((0.0, 0.0), |(t, m): (f64, f64), &v| (t + v, m.max(v)));
                (total + top).min(terms::MAX_COUNT_TOTAL as f64) as usize
            })
            .max()
            .unwrap_or(0)
    }

    /// Whether the real columns are one full-covariance block ([`Mixed::full`]).
    pub fn is_full(&self) -> bool {
        self.block.is_some()
    }

    /// The block's coordinates of row `x` (a row as the kernel or [`Mixed::centre_new`]
    /// holds it), uncentred, NaN missing.
    fn block_coords(&self, x: &[f64]) -> Vec<f64> {
        self.parts
            .iter()
            .zip(x)
            .filter(|(p, _)| matches!(p, Part::Block(_)))
            .map(|(_, &v)| v)
            .collect()
    }

    /// The table the kernel was built on.
    pub fn table(&self) -> &TableData {
        &self.table
    }

    /// Row `i` as the kernel holds it (real entries centred, NaN missing).
    fn row(&self, i: usize) -> &[f64] {
        let d = self.table.d();
        &self.x[i * d..(i + 1) * d]
    }

    fn hyper(&self) -> Hyper {
        Hyper {
            s: self.s,
            r: self.r,
            nu: self.nu,
            beta: self.beta,
        }
    }

    /// Empty sums.
    fn empty_sums(&self) -> Sums {
        Sums {
            real: vec![[0.0; 3]; self.n_real],
            levels: vec![0.0; self.n_levels],
            seen: vec![0.0; self.n_disc],
            counts: vec![[0.0; 3]; self.n_count],
        }
    }

    /// `ln m` of sums at hyperparameters `h`. Cost: O(d + levels) `ln Γ`.
    fn ln_marginal_sums(&self, s: &Sums, h: Hyper) -> f64 {
        self.ln_marginal_terms(s, h, None)
    }

    /// `ln m` of sums at the kernel's own hyperparameters, its terms looked up in the tables
    /// (the same values, see [`terms`]). Cost: O(d + levels) lookups, one `ln` per real column.
    fn ln_marginal_own(&self, s: &Sums) -> f64 {
        self.ln_marginal_terms(s, self.hyper(), Some(&self.terms))
    }

    /// `ln m` of sums at `h`, with `terms` the tables at `h` when they are given (each term
    /// the formula's value where the table lacks it).
    fn ln_marginal_terms(&self, s: &Sums, h: Hyper, terms: Option<&Terms>) -> f64 {
        let mut total = 0.0;
        for (k, &[n, mean, m2]) in s.real.iter().enumerate() {
            if n <= 0.0 {
                continue;
            }
            let psi = h.s * self.psi_base[k];
            let psi_n = psi + m2 + h.r * n / (h.r + n) * mean * mean;
            // Left to right as written in full: the first four terms, then `½ ν ln ψ`.
            let head = terms.and_then(|t| t.real_m(n)).unwrap_or_else(|| {
                -0.5 * n * LN_PI - 0.5 * (n / h.r).ln_1p() + ln_gamma(0.5 * (h.nu + n))
                    - ln_gamma(0.5 * h.nu)
            });
            let psi_term = terms.map_or_else(|| 0.5 * h.nu * psi.ln(), |t| t.real_psi(k));
            total += head + psi_term - 0.5 * (h.nu + n) * psi_n.ln();
        }
        for p in self.parts.iter() {
            if let &Part::Discrete { k, offset, levels } = p {
                let n = s.seen[k];
                if n <= 0.0 {
                    continue;
                }
                let l = levels as f64;
                total += terms
                    .and_then(|t| t.seen_m(k, n))
                    .unwrap_or_else(|| ln_gamma(l * h.beta) - ln_gamma(l * h.beta + n));
                for &c in &s.levels[offset..offset + levels] {
                    if c > 0.0 {
                        total += terms
                            .and_then(|t| t.level_m(c))
                            .unwrap_or_else(|| ln_gamma(h.beta + c) - ln_gamma(h.beta));
                    }
                }
            }
        }
        for (k, (&[n, sum, ln_fact], &b)) in s.counts.iter().zip(self.count_b.iter()).enumerate() {
            if n <= 0.0 {
                continue;
            }
            let a = COUNT_SHAPE;
            let head = terms.map_or_else(|| a * b.ln() - ln_gamma(a), |t| t.count_m(k));
            let lg = terms
                .and_then(|t| t.shape_lg(sum))
                .unwrap_or_else(|| ln_gamma(a + sum));
            let ln_b = terms
                .and_then(|t| t.count_ln_b(k, n))
                .unwrap_or_else(|| (b + n).ln());
            total += head + lg - (a + sum) * ln_b - ln_fact;
        }
        total
    }

    /// `ln p(x | sums)` of a row `x` (centred, NaN missing) at the kernel's hyperparameters.
    /// Cost: O(d) logarithms.
    fn ln_predictive_row(&self, x: &[f64], s: &Sums) -> f64 {
        let mut total = 0.0;
        for (&p, &v) in self.parts.iter().zip(x) {
            if v.is_nan() {
                continue;
            }
            total += match p {
                Part::Real(k) => {
                    let [n, mean, m2] = s.real[k];
                    let r_n = self.r + n;
                    let nu_n = self.nu + n;
                    let psi_n = self.psi[k] + m2 + self.r * n / r_n * mean * mean;
                    let e = v - n * mean / r_n;
                    // Left to right as written in full: the first three terms.
                    let head = self.terms.real_p(n).unwrap_or_else(|| {
                        let ratio = ln_gamma(0.5 * (nu_n + 1.0)) - ln_gamma(0.5 * nu_n);
                        -0.5 * LN_PI - 0.5 * (1.0 / r_n).ln_1p() + ratio
                    });
                    head - 0.5 * psi_n.ln()
                        - 0.5 * (nu_n + 1.0) * (r_n / (r_n + 1.0) * e * e / psi_n).ln_1p()
                }
                Part::Discrete { k, offset, levels } => {
                    let c = s.levels[offset + v as usize];
                    let n = s.seen[k];
                    let t = &self.terms;
                    t.level_p(c).unwrap_or_else(|| (self.beta + c).ln())
                        - t.seen_p(k, n)
                            .unwrap_or_else(|| (levels as f64 * self.beta + n).ln())
                }
                Part::Count(k) => {
                    let [n, sum, _] = s.counts[k];
                    let a = COUNT_SHAPE + sum;
                    let b = self.count_b[k] + n;
                    let t = &self.terms;
                    let (lg_av, lg_a, lg_v) = match (
                        t.shape_lg(sum + v),
                        t.shape_lg(sum),
                        t.fact_lg(v),
                    ) {
                        (Some(x), Some(y), Some(z)) => (x, y, z),
                        _ => (ln_gamma(a + v), ln_gamma(a), ln_gamma(v + 1.0)),
                    };
                    let (ln_ratio, ln_b1) = t
                        .count_p(k, n)
                        .unwrap_or_else(|| ((b / (b + 1.0)).ln(), (b + 1.0).ln()));
                    lg_av - lg_a - lg_v + a * ln_ratio - v * ln_b1
                }
                // The block's coordinates together: `ln_predictive_new`.
                Part::Block(_) => 0.0,
            };
        }
        total
    }

    /// A row of `new` in the kernel's terms (real entries centred). Cost: O(d).
    fn centre_new(&self, new: &TableData, i: usize) -> Vec<f64> {
        self.parts
            .iter()
            .enumerate()
            .map(|(j, p)| {
                let v = new.columns()[j].values[i];
                match p {
                    Part::Real(k) => v - self.xi[*k],
                    _ => v,
                }
            })
            .collect()
    }

    /// The posterior profile of a cluster with sums `s`, per column: for a real column the
    /// predictive mean and standard deviation, for a count column the same, for a binary or
    /// categorical one each level's predictive probability. Cost: O(d + levels).
    pub fn profile(&self, s: &Sums) -> Vec<ColumnProfile> {
        self.parts
            .iter()
            .map(|&p| match p {
                Part::Real(k) => {
                    let [n, mean, m2] = s.real[k];
                    let r_n = self.r + n;
                    let nu_n = self.nu + n;
                    let psi_n = self.psi[k] + m2 + self.r * n / r_n * mean * mean;
                    // Student t with ν_n degrees of freedom and scale² ψ_n (r_n+1)/(r_n ν_n).
                    let var = if nu_n > 2.0 {
                        psi_n * (r_n + 1.0) / (r_n * (nu_n - 2.0))
                    } else {
                        f64::INFINITY
                    };
                    ColumnProfile::Number {
                        mean: self.xi[k] + n * mean / r_n,
                        sd: var.sqrt(),
                    }
                }
                Part::Discrete { k, offset, levels } => {
                    let total = levels as f64 * self.beta + s.seen[k];
                    ColumnProfile::Levels(
                        s.levels[offset..offset + levels]
                            .iter()
                            .map(|c| (self.beta + c) / total)
                            .collect(),
                    )
                }
                Part::Count(k) => {
                    let [n, sum, _] = s.counts[k];
                    let (a, b) = (COUNT_SHAPE + sum, self.count_b[k] + n);
                    ColumnProfile::Number {
                        mean: a / b,
                        sd: (a / b * (1.0 + 1.0 / b)).sqrt(),
                    }
                }
                // Filled in by `profile_stat` from the block's statistic.
                Part::Block(_) => ColumnProfile::Number {
                    mean: f64::NAN,
                    sd: f64::NAN,
                },
            })
            .collect()
    }

    /// The posterior profile of a cluster with statistic `s` ([`Mixed::profile`]); with the
    /// full-covariance block, a real column's predictive mean and standard deviation are
    /// those of the block's Student-t predictive. Cost: O(d + levels + d_r³).
    pub fn profile_stat(&self, s: &MixedStat) -> Vec<ColumnProfile> {
        let nan = vec![f64::NAN; self.block.as_ref().map_or(0, Block::dim)];
        self.profile_given(s, &nan)
    }

    /// The posterior profile of a cluster with statistic `s` for row `i` of `new` (a table
    /// with the kernel's columns, [`crate::data::table::align_to`]): [`Mixed::profile_stat`],
    /// with the block's real columns conditional on the row's observed real entries (an
    /// observed one has its value and sd 0). Errors if `new` lacks row `i` or has other
    /// columns. Cost: as [`Mixed::profile_stat`].
    pub fn profile_new(&self, new: &TableData, i: usize, s: &MixedStat) -> Result<Vec<ColumnProfile>> {
        if i >= new.n() || new.d() != self.parts.len() {
            return Err(Error::DimensionMismatch(format!(
                "row {i} of a table of {} rows x {} columns for a model of {} columns",
                new.n(),
                new.d(),
                self.parts.len()
            )));
        }
        let x = self.block_coords(&self.centre_new(new, i));
        Ok(self.profile_given(s, &x))
    }

    /// [`Mixed::profile`], the block's columns conditional on its coordinates `x` (NaN
    /// missing).
    fn profile_given(&self, s: &MixedStat, x: &[f64]) -> Vec<ColumnProfile> {
        let mut out = self.profile(&s.sums);
        if let (Some(b), Some(bs)) = (&self.block, &s.block) {
            let moments = b.conditional_moments(x, bs);
            for (p, o) in self.parts.iter().zip(out.iter_mut()) {
                if let Part::Block(k) = *p {
                    let (mean, sd) = moments[k];
                    *o = ColumnProfile::Number { mean, sd };
                }
            }
        }
        out
    }

    /// With the full-covariance block, each missing real entry's predictive mean and standard
    /// deviation given the clusters `labels` (`0..K`) and its row's observed real entries:
    /// the cluster's other rows' missing coordinates are set to their conditional means given
    /// the rest, in `passes` Gauss-Seidel passes from the kernel's current values (the
    /// conditional-mean fixed point), then each entry's conditional Student t given the
    /// others. As `(row, column, mean, sd)`; empty without the block. Cost: O(passes · N d_r²
    /// + passes · incomplete rows · d_r³).
    pub fn block_conditionals(
        &self,
        labels: &[usize],
        passes: usize,
    ) -> Vec<(usize, usize, f64, f64)> {
        let Some(b) = &self.block else {
            return Vec::new();
        };
        let cols: Vec<usize> = self
            .parts
            .iter()
            .enumerate()
            .filter(|(_, p)| matches!(p, Part::Block(_)))
            .map(|(j, _)| j)
            .collect();
        b.conditional_fill(labels, passes)
            .into_iter()
            .map(|(i, k, m, sd)| (i, cols[k], m, sd))
            .collect()
    }

    /// The sums of a statistic.
    pub fn sums<'a>(&self, s: &'a MixedStat) -> &'a Sums {
        &s.sums
    }
}

/// A cluster's predictive law of one column ([`Mixed::profile`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ColumnProfile {
    /// Real or count: the predictive mean and standard deviation.
    Number {
        /// Predictive mean.
        mean: f64,
        /// Predictive standard deviation.
        sd: f64,
    },
    /// Binary or categorical: each level's predictive probability, by code.
    Levels(Vec<f64>),
}

impl ConjugateKernel for Mixed {
    type Stat = MixedStat;

    fn n_points(&self) -> usize {
        self.table.n()
    }

    fn empty_stat(&self) -> MixedStat {
        MixedStat {
            n: 0,
            sums: self.empty_sums(),
            block: self.block.as_ref().map(|b| b.nw.empty_stat()),
        }
    }

    fn count(&self, s: &MixedStat) -> usize {
        s.n
    }

    fn add(&self, s: &mut MixedStat, i: usize) {
        s.n += 1;
        s.sums.add(&self.parts, self.row(i), 1.0);
        if let (Some(b), Some(bs)) = (&self.block, s.block.as_mut()) {
            b.nw.add(bs, i);
        }
    }

    fn remove(&self, s: &mut MixedStat, i: usize) {
        debug_assert!(s.n > 0, "remove from an empty statistic");
        s.n -= 1;
        if s.n == 0 {
            s.sums = self.empty_sums();
        } else {
            s.sums.remove(&self.parts, self.row(i));
        }
        if let (Some(b), Some(bs)) = (&self.block, s.block.as_mut()) {
            b.nw.remove(bs, i);
        }
    }

    fn merge(&self, a: &mut MixedStat, b: &MixedStat) {
        a.n += b.n;
        a.sums.merge(&b.sums);
        if let (Some(k), Some(x), Some(y)) = (&self.block, a.block.as_mut(), &b.block) {
            k.nw.merge(x, y);
        }
    }

    fn ln_marginal(&self, s: &MixedStat) -> f64 {
        let block = match (&self.block, &s.block) {
            (Some(b), Some(bs)) => b.nw.ln_marginal(bs),
            _ => 0.0,
        };
        self.ln_marginal_own(&s.sums) + block
    }

    fn ln_marginal_pair(&self, a: &MixedStat, b: &MixedStat) -> f64 {
        let mut sums = a.sums.clone();
        sums.merge(&b.sums);
        let block = match (&self.block, &a.block, &b.block) {
            (Some(k), Some(x), Some(y)) => k.nw.ln_marginal_pair(x, y),
            _ => 0.0,
        };
        self.ln_marginal_own(&sums) + block
    }

    fn ln_predictive(&self, i: usize, s: &MixedStat) -> f64 {
        let block = match (&self.block, &s.block) {
            (Some(b), Some(bs)) => b.nw.ln_predictive(i, bs),
            _ => 0.0,
        };
        self.ln_predictive_row(self.row(i), &s.sums) + block
    }

    /// With the full-covariance block over rows with a missing real entry: those entries
    /// (see the module documentation of [`block`]).
    fn has_latent(&self) -> bool {
        self.block.as_ref().is_some_and(Block::has_missing)
    }

    fn latent(&self) -> Vec<f64> {
        self.block.as_ref().map(Block::latent).unwrap_or_default()
    }

    fn with_latent(&self, values: &[f64]) -> Result<Self> {
        match &self.block {
            Some(b) => Ok(Mixed {
                block: Some(b.with_latent(values)?),
                ..self.clone()
            }),
            None if values.is_empty() => Ok(self.clone()),
            None => Err(Error::Usage(format!(
                "{} latent values given to the product kernel without a full-covariance block",
                values.len()
            ))),
        }
    }

    fn latent_points(&self) -> Vec<usize> {
        self.block
            .as_ref()
            .map(Block::latent_rows)
            .unwrap_or_default()
    }

    /// The block's missing coordinates at `ξ`, the columns' observed means, as [`Block::new`]
    /// starts them.
    fn at_latent_start(&self) -> Result<Option<Self>> {
        match &self.block {
            Some(b) if b.has_missing() => Ok(Some(Mixed {
                block: Some(b.with_latent(&b.start_values())?),
                ..self.clone()
            })),
            _ => Ok(None),
        }
    }

    /// [`Block::redraw`]: one Gibbs pass over the missing real coordinates given the
    /// clusters.
    fn redraw_latent(
        &self,
        clusters: &[&[usize]],
        rng: &mut crate::rng::NrmmRng,
    ) -> Result<Option<Self>> {
        let Some(b) = &self.block else {
            return Ok(None);
        };
        Ok(b.redraw(clusters, rng)?.map(|b| Mixed {
            block: Some(b),
            ..self.clone()
        }))
    }
}

/// `s`, `r`, `ν`, `β`; `s` and `β` free by default.
impl HyperKernel for Mixed {
    const HYPER_NAMES: &'static [&'static str] = &["mixed_s", "mixed_r", "mixed_nu", "mixed_beta"];

    fn hyper_values(&self) -> Vec<f64> {
        vec![self.s, self.r, self.nu, self.beta]
    }

    /// `ν > d_r - 1` for the full-covariance block.
    fn hyper_offset(&self, j: usize) -> f64 {
        match &self.block {
            Some(b) if j == 2 => b.dim() as f64 - 1.0,
            _ => 0.0,
        }
    }

    fn hyper_default_sd(&self, j: usize) -> f64 {
        if j == 2 {
            1.0
        } else {
            2.0
        }
    }

    /// The scale multiplier and the concentration, as the diagonal and Beta-Bernoulli kernels
    /// free theirs.
    fn hyper_free_by_default(&self, j: usize) -> bool {
        j == 0 || j == 3
    }

    fn ln_marginal_at(&self, s: &MixedStat, h: &[f64]) -> f64 {
        let h = Hyper {
            s: h[0],
            r: h[1],
            nu: h[2],
            beta: h[3],
        };
        let block = match (&self.block, &s.block) {
            (Some(b), Some(bs)) => b.nw.ln_marginal_at(bs, &[h.s, h.r, h.nu]),
            _ => 0.0,
        };
        self.ln_marginal_sums(&s.sums, h) + block
    }

    fn with_hyper_values(&self, h: &[f64]) -> Result<Self> {
        if h.len() != 4 {
            return Err(Error::DimensionMismatch(format!(
                "{} product-kernel hyperparameter values, expected 4 (s, r, nu, beta)",
                h.len()
            )));
        }
        self.at_values(Hyper {
            s: h[0],
            r: h[1],
            nu: h[2],
            beta: h[3],
        })
    }

    /// Nothing is cached in a statistic but the block's factor of `Ψ_n`.
    fn refresh_stat(&self, s: &mut MixedStat) {
        if let (Some(b), Some(bs)) = (&self.block, s.block.as_mut()) {
            b.nw.refresh_stat(bs);
        }
    }
}

/// A component's parameters: per real column its mean (centred) and precision; per
/// discrete column the logarithms of its level probabilities; per count column the
/// logarithm of its rate.
#[derive(Clone, Debug, PartialEq)]
pub struct MixedParam {
    mu: Vec<f64>,
    precision: Vec<f64>,
    ln_p: Vec<f64>,
    ln_rate: Vec<f64>,
    /// The full-covariance block's mean and precision.
    block: Option<NwParam>,
}

impl Mixed {
    /// Draws parameters from the posterior given the statistic `s`: the block's (first, when
    /// there is one), then the other columns'. Cost: O(d + levels) variates, and the block's
    /// Normal-Wishart draw.
    fn draw_stat<R: Rng + ?Sized>(
        &self,
        s: &MixedStat,
        rng: &mut R,
        out: &mut MixedParam,
    ) -> Result<()> {
        if let (Some(b), Some(bs)) = (&self.block, &s.block) {
            let p = out.block.get_or_insert_with(|| b.nw.new_param());
            b.nw.sample_posterior(bs, rng, p)?;
        }
        self.draw(&s.sums, rng, out)
    }

    /// Draws parameters from the posterior given sums `s`. Cost: O(d + levels) variates.
    fn draw<R: Rng + ?Sized>(&self, s: &Sums, rng: &mut R, out: &mut MixedParam) -> Result<()> {
        out.mu.resize(self.n_real, 0.0);
        out.precision.resize(self.n_real, 1.0);
        out.ln_p.resize(self.n_levels, 0.0);
        out.ln_rate.resize(self.n_count, 0.0);
        for (k, &[n, mean, m2]) in s.real.iter().enumerate() {
            let r_n = self.r + n;
            let psi_n = self.psi[k] + m2 + self.r * n / r_n * mean * mean;
            // λ = 2 G / ψ_n with G ~ Gamma(ν_n/2, 1).
            let lambda = (ln_gamma_variate(0.5 * (self.nu + n), rng)? + std::f64::consts::LN_2
                - psi_n.ln())
            .exp();
            if !(lambda > 0.0 && lambda.is_finite()) {
                return Err(Error::Numerical(format!(
                    "a drawn precision of real column {k} is {lambda}"
                )));
            }
            let z: f64 = StandardNormal.sample(rng);
            out.precision[k] = lambda;
            out.mu[k] = n * mean / r_n + z / (r_n * lambda).sqrt();
        }
        for p in self.parts.iter() {
            if let &Part::Discrete { offset, levels, .. } = p {
                let g = &mut out.ln_p[offset..offset + levels];
                for (l, gl) in g.iter_mut().enumerate() {
                    *gl = ln_gamma_variate(self.beta + s.levels[offset + l], rng)?;
                }
                let total = log_sum_exp(g);
                g.iter_mut().for_each(|v| *v -= total);
            }
        }
        for (k, &[n, sum, _]) in s.counts.iter().enumerate() {
            out.ln_rate[k] =
                ln_gamma_variate(COUNT_SHAPE + sum, rng)? - (self.count_b[k] + n).ln();
        }
        Ok(())
    }
}

/// Parameters drawn column by column; moments are the statistic itself.
impl ParametricKernel for Mixed {
    type Param = MixedParam;
    type Moments = MixedStat;

    fn new_param(&self) -> MixedParam {
        MixedParam {
            mu: vec![0.0; self.n_real],
            precision: vec![1.0; self.n_real],
            ln_p: vec![0.0; self.n_levels],
            ln_rate: vec![0.0; self.n_count],
            block: self.block.as_ref().map(|b| b.nw.new_param()),
        }
    }

    fn sample_posterior<R: Rng + ?Sized>(
        &self,
        s: &MixedStat,
        rng: &mut R,
        out: &mut MixedParam,
    ) -> Result<()> {
        self.draw_stat(s, rng, out)
    }

    fn new_moments(&self) -> MixedStat {
        self.empty_stat()
    }

    fn moments_add(&self, m: &mut MixedStat, i: usize) {
        self.add(m, i);
    }

    fn moments_merge(&self, a: &mut MixedStat, b: &MixedStat) {
        self.merge(a, b);
    }

    fn moments_count(&self, m: &MixedStat) -> usize {
        m.n
    }

    fn sample_moments<R: Rng + ?Sized>(
        &self,
        m: &MixedStat,
        rng: &mut R,
        out: &mut MixedParam,
    ) -> Result<()> {
        self.draw_stat(m, rng, out)
    }

    /// The observed entries' log densities; a missing entry's factor is 1.
    fn ln_f(&self, i: usize, t: &MixedParam) -> f64 {
        let mut total = 0.0;
        for (&p, &v) in self.parts.iter().zip(self.row(i)) {
            if v.is_nan() {
                continue;
            }
            total += match p {
                Part::Real(k) => {
                    let e = v - t.mu[k];
                    0.5 * (t.precision[k].ln() - (2.0 * std::f64::consts::PI).ln())
                        - 0.5 * t.precision[k] * e * e
                }
                Part::Discrete { offset, .. } => t.ln_p[offset + v as usize],
                Part::Count(k) => v * t.ln_rate[k] - t.ln_rate[k].exp() - ln_gamma(v + 1.0),
                Part::Block(_) => 0.0,
            };
        }
        if let (Some(b), Some(p)) = (&self.block, &t.block) {
            total += b.nw.ln_f(i, p);
        }
        total
    }

    /// Normal-Gamma densities in `(μ, λ)`, Dirichlet densities in the first `L - 1`
    /// probabilities, Gamma densities in the rates. Cost: O(d + levels) `ln Γ`.
    fn ln_posterior_density(&self, s: &MixedStat, t: &MixedParam) -> f64 {
        let mut total = match (&self.block, &s.block, &t.block) {
            (Some(b), Some(bs), Some(p)) => b.nw.ln_posterior_density(bs, p),
            _ => 0.0,
        };
        let s = &s.sums;
        for (k, &[n, mean, m2]) in s.real.iter().enumerate() {
            let (r_n, nu_n) = (self.r + n, self.nu + n);
            let psi_n = self.psi[k] + m2 + self.r * n / r_n * mean * mean;
            let (a, rate) = (0.5 * nu_n, 0.5 * psi_n);
            let lambda = t.precision[k];
            let e = t.mu[k] - n * mean / r_n;
            total += a * rate.ln() - ln_gamma(a) + (a - 1.0) * lambda.ln() - rate * lambda
                + 0.5 * ((r_n * lambda).ln() - (2.0 * std::f64::consts::PI).ln())
                - 0.5 * r_n * lambda * e * e;
        }
        for p in self.parts.iter() {
            if let &Part::Discrete { offset, levels, .. } = p {
                let a: Vec<f64> = (0..levels)
                    .map(|l| self.beta + s.levels[offset + l])
                    .collect();
                total += ln_gamma(a.iter().sum()) - a.iter().map(|&x| ln_gamma(x)).sum::<f64>()
                    + a.iter()
                        .zip(&t.ln_p[offset..offset + levels])
                        .map(|(a, lp)| (a - 1.0) * lp)
                        .sum::<f64>();
            }
        }
        for (k, &[n, sum, _]) in s.counts.iter().enumerate() {
            let (a, b) = (COUNT_SHAPE + sum, self.count_b[k] + n);
            let ln_l = t.ln_rate[k];
            total += a * b.ln() - ln_gamma(a) + (a - 1.0) * ln_l - b * ln_l.exp();
        }
        total
    }
}

/// New points are rows of a table with the training table's columns, types and levels.
impl PredictiveKernel for Mixed {
    type NewData = TableData;

    fn n_new(data: &TableData) -> usize {
        data.n()
    }

    /// With the full-covariance block, its observed coordinates' margin of the cluster's
    /// predictive ([`Block::ln_predictive_observed`]).
    fn ln_predictive_new(&self, data: &TableData, j: usize, s: &MixedStat) -> Result<f64> {
        let x = self.centre_new(data, j);
        let block = match (&self.block, &s.block) {
            (Some(b), Some(bs)) => b.ln_predictive_observed(&self.block_coords(&x), bs),
            _ => 0.0,
        };
        Ok(self.ln_predictive_row(&x, &s.sums) + block)
    }
}

/// A soft statistic: the total weight, the weighted [`Sums`] and, with the full-covariance
/// block, its soft Normal-Wishart statistic.
#[derive(Clone, Debug)]
pub struct SoftMixed {
    w: f64,
    sums: Sums,
    block: Option<SoftNw>,
}

/// A component's posterior for SVA reports: its weight and its profile per column.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MixedPosterior {
    /// The weight absorbed.
    pub weight: f64,
    /// Per column, the predictive mean and sd or the level probabilities.
    pub columns: Vec<ColumnProfile>,
}

impl Mixed {
    /// The block's coordinates of an SVA point (centred at the block's `ξ`).
    fn soft_block_point(&self, p: &[f64]) -> Vec<f64> {
        self.block_coords(p)
    }
}

/// Weighted sums: a row of weight `ρ` adds `ρ` to each observed entry's column. With the
/// full-covariance block, its coordinates are the Normal-Wishart kernel's soft statistic over
/// the rows as the kernel holds them (a missing coordinate at its current value: its
/// column's mean in a model as built), so an SVA fit or start treats them as observed there;
/// new rows must have every real entry.
impl SvaKernel for Mixed {
    type Soft = SoftMixed;
    type Point = Vec<f64>;
    type Posterior = MixedPosterior;

    fn soft_empty(&self) -> Result<SoftMixed> {
        Ok(SoftMixed {
            w: 0.0,
            sums: self.empty_sums(),
            block: match &self.block {
                Some(b) => Some(b.nw.soft_empty()?),
                None => None,
            },
        })
    }

    fn soft_weight(s: &SoftMixed) -> f64 {
        s.w
    }

    fn new_point(&self) -> Vec<f64> {
        vec![0.0; self.table.d()]
    }

    fn load_point(&self, i: usize, p: &mut Vec<f64>) {
        p.clear();
        p.extend_from_slice(self.row(i));
        if let Some(b) = &self.block {
            let y = b.nw.centred_point(i);
            for (v, part) in p.iter_mut().zip(self.parts.iter()) {
                if let Part::Block(k) = *part {
                    *v = y[k];
                }
            }
        }
    }

    fn load_new(&self, data: &TableData, j: usize, p: &mut Vec<f64>) -> Result<()> {
        self.check_new(data)?;
        *p = self.centre_new(data, j);
        if let Some(b) = &self.block {
            let xi = b.nw.hyper().xi();
            for (c, (v, part)) in p.iter_mut().zip(self.parts.iter()).enumerate() {
                if let Part::Block(k) = *part {
                    if v.is_nan() {
                        return Err(Error::Usage(format!(
                            "row {} of `new` has no value in real column \"{}\": an SVA fit with \
                             the full-covariance block needs every real entry of new rows",
                            j + 1,
                            data.columns()[c].name
                        )));
                    }
                    *v -= xi[k];
                }
            }
        }
        Ok(())
    }

    fn soft_ln_predictive(&self, p: &Vec<f64>, s: &SoftMixed) -> f64 {
        let block = match (&self.block, &s.block) {
            (Some(b), Some(sb)) => b.nw.soft_ln_predictive(&self.soft_block_point(p), sb),
            _ => 0.0,
        };
        self.ln_predictive_row(p, &s.sums) + block
    }

    fn soft_add(&self, s: &mut SoftMixed, p: &Vec<f64>, weight: f64) {
        if weight > 0.0 {
            s.w += weight;
            s.sums.add(&self.parts, p, weight);
            if let (Some(b), Some(sb)) = (&self.block, s.block.as_mut()) {
                b.nw.soft_add(sb, &self.soft_block_point(p), weight);
            }
        }
    }

    fn soft_merge(&self, a: &mut SoftMixed, b: &SoftMixed) {
        a.w += b.w;
        a.sums.merge(&b.sums);
        if let (Some(k), Some(x), Some(y)) = (&self.block, a.block.as_mut(), &b.block) {
            k.nw.soft_merge(x, y);
        }
    }

    fn soft_ln_marginal(&self, s: &SoftMixed) -> f64 {
        let block = match (&self.block, &s.block) {
            (Some(b), Some(sb)) => b.nw.soft_ln_marginal(sb),
            _ => 0.0,
        };
        self.ln_marginal_own(&s.sums) + block
    }

    fn posterior(&self, s: &SoftMixed) -> MixedPosterior {
        let mut columns = self.profile(&s.sums);
        if let (Some(b), Some(sb)) = (&self.block, &s.block) {
            let post: NwPosterior = b.nw.posterior(sb);
            let d = b.dim();
            // The Student-t predictive's mean and variance Ψ_w,kk (r_w+1)/(r_w (ν_w-d-1)).
            for (part, c) in self.parts.iter().zip(columns.iter_mut()) {
                if let Part::Block(k) = *part {
                    let dof = post.nu - d as f64 - 1.0;
                    let var = if dof > 0.0 {
                        post.psi[k * d + k] * (post.r + 1.0) / (post.r * dof)
                    } else {
                        f64::INFINITY
                    };
                    *c = ColumnProfile::Number {
                        mean: post.mean[k],
                        sd: var.sqrt(),
                    };
                }
            }
        }
        MixedPosterior {
            weight: s.w,
            columns,
        }
    }
}

/// The product kernel as models and front ends name and build it.
impl Kernel for Mixed {
    const NAME: &'static str = "mixed";
    const ABOUT: &'static str = "Product over the columns of a table: Normal-Gamma (real), \
                                 Beta-Bernoulli (binary), Dirichlet-categorical (cat), \
                                 Gamma-Poisson (count); missing entries marginalised exactly";
    const TITLE: &'static str = "product kernel over typed columns";
    const DATA: &'static str = "a table of typed columns";

    /// [`Mixed::new`] over a table, or over a real matrix (every column real). `xi` and `psi`
    /// are refused (the defaults follow each column); `r`, `nu` and `beta` apply.
    fn build(settings: &KernelSettings, data: Dataset) -> Result<Self> {
        if settings.xi.is_some() || settings.psi.is_some() {
            return Err(Error::Usage(
                "`nw_xi` and `nw_psi` do not apply to `kernel` mixed, whose real columns' \
                 defaults follow each column: drop them"
                    .into(),
            ));
        }
        let table = match data {
            Dataset::Table(t) => t,
            Dataset::Dense(x) => TableData::new(
                (0..x.d())
                    .map(|j| crate::data::table::Column {
                        name: (j + 1).to_string(),
                        kind: ColumnType::Real,
                        levels: Vec::new(),
                        values: (0..x.n()).map(|i| x.row(i)[j]).collect(),
                    })
                    .collect(),
            )?,
            Dataset::Counts(_) => {
                return Err(Error::Usage(
                    "`kernel` mixed reads tables, but the data are sparse counts: use `kernel` md"
                        .into(),
                ))
            }
        };
        match settings.mixed_real {
            Some(super::settings::RealColumns::Full) => {
                Mixed::full(table, settings.r, settings.nu, settings.beta)
            }
            _ => Mixed::new(table, settings.r, settings.nu, settings.beta),
        }
    }

    fn dim(&self) -> usize {
        self.table.d()
    }

    fn points_of(data: &Dataset) -> Option<&TableData> {
        match data {
            Dataset::Table(t) => Some(t),
            _ => None,
        }
    }

    /// The same columns (names, types, levels) as the training table.
    fn check_new(&self, new: &TableData) -> Result<()> {
        if new.d() != self.table.d() {
            return Err(Error::DimensionMismatch(format!(
                "`new` has {} columns, but the training table has {}",
                new.d(),
                self.table.d()
            )));
        }
        for (a, b) in self.table.columns().iter().zip(new.columns()) {
            if a.name != b.name || a.kind != b.kind || (a.kind.has_levels() && a.levels != b.levels)
            {
                return Err(Error::Usage(format!(
                    "column \"{}\" of `new` ({}) differs from the training table's \"{}\" ({}, \
                     levels {:?}): read it with the training table's columns",
                    b.name,
                    b.kind.name(),
                    a.name,
                    a.kind.name(),
                    a.levels
                )));
            }
        }
        Ok(())
    }
}
