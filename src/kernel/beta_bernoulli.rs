//! The Beta-Bernoulli kernel: binary vectors (values 0 and 1) with independent columns, each a
//! Bernoulli variable whose probability has a conjugate Beta prior, and entries that may be
//! missing.
//!
//! Model: `x_j | θ_j ~ Bernoulli(θ_j)` for each column `j < d`, independently, with
//! `θ_j ~ Beta(β, β)`. With `k_j` the ones and `z_j` the zeros of column `j` among the points of
//! a cluster (`n_j = k_j + z_j` its observed entries),
//!
//! `ln m(X) = Σ_{j: n_j > 0} [ln Γ(β + k_j) + ln Γ(β + z_j) - ln Γ(2β + n_j) + ln Γ(2β) - 2 ln Γ(β)]`
//!
//! and the predictive of a point `x` is `Σ_{j observed in x} [ln(β + c_j(x)) - ln(2β + n_j)]`
//! with `c_j(x) = k_j` when `x_j = 1` and `z_j` when `x_j = 0` (the Beta-binomial of one trial;
//! Bernardo & Smith 1994, "Bayesian Theory", §5.2).
//!
//! **Missing entries, exactly.** Under missing at random, the likelihood of a point's observed
//! entries is its full likelihood summed over the values of the missing ones; since the columns
//! are independent given `θ`, a missing entry's factor sums to 1 and the entry contributes
//! nothing to its column's counts. The marginal above (over observed entries only) is therefore
//! exactly the sum of the complete data's marginals over every completion of the missing
//! entries (checked by enumerating the completions). A point's other entries still count.
//!
//! A statistic holds, per column, the ones, the zeros and the three logarithms the predictive
//! adds up, and the sum of the totals' logarithms, so a predictive is O(d) additions (and one
//! subtraction per missing entry of the point); adding or removing a point refreshes two
//! logarithms per observed entry. The marginal is O(d) `ln Γ`.
//!
//! Its one hyperparameter `β` (trace column `bb_beta`, the `beta` setting, default
//! [`DEFAULT_BETA`] as the Multinomial-Dirichlet concentration) has a log-normal hyperprior
//! with `τ = 2` when kernel hyperpriors are on ([`super::hyperprior`]). A small `β` favours
//! clusters whose columns are nearly constant, as latent class analysis looks for.

use std::sync::Arc;

use rand::Rng;
use serde::Serialize;

use super::hyperprior::HyperKernel;
use super::multinomial_dirichlet::DEFAULT_BETA;
use super::settings::{check_dense_new, dense_points, KernelSettings};
use super::SvaKernel;
use super::{ln_gamma_variate, ConjugateKernel, Kernel, ParametricKernel, PredictiveKernel};
use crate::data::{Dataset, DenseData};
use crate::error::{Error, Result};
use crate::math::{ln_add_exp, ln_gamma};

/// A missing entry among the kernel's bits.
const MISSING: u8 = 2;

/// The Beta-Bernoulli kernel over binary data with missing entries (see the module
/// documentation).
#[derive(Clone)]
pub struct BetaBernoulli {
    /// The entries, row by row (`n × d`): 0, 1, or [`MISSING`].
    bits: Arc<Vec<u8>>,
    n: usize,
    d: usize,
    beta: f64,
    /// `ln β`, the logarithm of both Beta parameters of the empty set.
    ln_beta: f64,
    /// `ln 2β`, the logarithm of their sum.
    ln_two_beta: f64,
}

impl std::fmt::Debug for BetaBernoulli {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BetaBernoulli")
            .field("n", &self.n)
            .field("d", &self.d)
            .field("beta", &self.beta)
            .finish()
    }
}

/// The statistic of a set of points: the count; per column the ones `k_j`, the zeros `z_j` and
/// the logarithms `ln(β + k_j)`, `ln(β + z_j)`, `ln(2β + n_j)`; and the sum of the last.
#[derive(Clone, Debug, PartialEq)]
pub struct BbStat {
    n: usize,
    ones: Vec<u32>,
    zeros: Vec<u32>,
    ln_one: Vec<f64>,
    ln_zero: Vec<f64>,
    ln_total: Vec<f64>,
    ln_total_sum: f64,
}

impl BbStat {
    /// Number of points.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether it holds no point.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The ones per column.
    pub fn ones(&self) -> &[u32] {
        &self.ones
    }

    /// The zeros per column.
    pub fn zeros(&self) -> &[u32] {
        &self.zeros
    }
}

impl BetaBernoulli {
    /// The kernel over `data` with `θ_j ~ Beta(β, β)`. Errors if a value is not 0 or 1 (naming
    /// its row and column, from 1) or `β` is not finite and `> 0`. Cost: O(N d).
    pub fn new(data: &DenseData, beta: f64) -> Result<Self> {
        let bits = binary_values(data, "the data")?;
        Self::with_bits(data.n(), data.d(), Arc::new(bits), beta)
    }

    /// The kernel over `n` points of `d` entries, row by row, each `Some(value)` or `None`
    /// where missing (at random: the kernel marginalises it exactly, see the module
    /// documentation). Errors if `entries` does not hold `n · d` values or `β` is not finite
    /// and `> 0`. Cost: O(N d).
    pub fn with_missing(n: usize, d: usize, entries: &[Option<bool>], beta: f64) -> Result<Self> {
        if entries.len() != n * d {
            return Err(Error::DimensionMismatch(format!(
                "{} entries for {n} points of dimension {d}",
                entries.len()
            )));
        }
        let bits = entries
            .iter()
            .map(|e| e.map_or(MISSING, u8::from))
            .collect();
        Self::with_bits(n, d, Arc::new(bits), beta)
    }

    /// The kernel over entries already read. Cost: O(1).
    fn with_bits(n: usize, d: usize, bits: Arc<Vec<u8>>, beta: f64) -> Result<Self> {
        if !(beta > 0.0 && beta.is_finite()) {
            return Err(Error::param("beta", beta, "a finite number > 0"));
        }
        Ok(BetaBernoulli {
            bits,
            n,
            d,
            beta,
            ln_beta: beta.ln(),
            ln_two_beta: (2.0 * beta).ln(),
        })
    }

    /// The Beta parameter `β`.
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// Entry `(i, j)`: `Some(value)`, or `None` where missing.
    pub fn entry(&self, i: usize, j: usize) -> Option<bool> {
        match self.bits[i * self.d + j] {
            MISSING => None,
            b => Some(b == 1),
        }
    }

    /// The missing entries per column.
    pub fn missing_per_column(&self) -> Vec<usize> {
        let mut out = vec![0; self.d];
        for row in self.bits.chunks(self.d.max(1)) {
            for (m, &b) in out.iter_mut().zip(row) {
                *m += usize::from(b == MISSING);
            }
        }
        out
    }

    /// The entries of point `i`.
    fn row(&self, i: usize) -> &[u8] {
        &self.bits[i * self.d..(i + 1) * self.d]
    }

    /// `ln m` at `β = beta` of columns with `ones` and `zeros` (real weights for SVA): the
    /// columns without an observed entry contribute 0. Cost: O(d) `ln Γ`.
    fn ln_marginal_counts(
        &self,
        counts: impl Iterator<Item = (f64, f64)>,
        beta: f64,
    ) -> f64 {
        let norm = ln_gamma(2.0 * beta) - 2.0 * ln_gamma(beta);
        counts
            .filter(|&(k, z)| k + z > 0.0)
            .map(|(k, z)| ln_gamma(beta + k) + ln_gamma(beta + z) - ln_gamma(2.0 * beta + k + z) + norm)
            .sum()
    }

    /// Recomputes the logarithms of `s` from its counts. Cost: O(d) logarithms.
    fn refresh(&self, s: &mut BbStat) {
        for j in 0..self.d {
            let (k, z) = (s.ones[j] as f64, s.zeros[j] as f64);
            s.ln_one[j] = (self.beta + k).ln();
            s.ln_zero[j] = (self.beta + z).ln();
            s.ln_total[j] = (2.0 * self.beta + k + z).ln();
        }
        s.ln_total_sum = s.ln_total.iter().sum();
    }

    /// `ln p(x | X_S)` of the entries `x`. Cost: O(d).
    fn ln_predictive_bits(&self, x: &[u8], s: &BbStat) -> f64 {
        let mut sum = -s.ln_total_sum;
        for (j, &b) in x.iter().enumerate() {
            sum += match b {
                1 => s.ln_one[j],
                0 => s.ln_zero[j],
                _ => s.ln_total[j],
            };
        }
        sum
    }

    /// Adds (`add`) or removes point `i`'s observed entries. Cost: two
    /// logarithms per observed entry and O(d) for the sum.
    fn update(&self, s: &mut BbStat, i: usize, add: bool) {
        for (j, &b) in self.row(i).iter().enumerate() {
            if b == MISSING {
                continue;
            }
            let count = if b == 1 { &mut s.ones[j] } else { &mut s.zeros[j] };
            if add {
                *count += 1;
            } else {
                *count -= 1;
            }
            let c = (self.beta + *count as f64).ln();
            if b == 1 {
                s.ln_one[j] = c;
            } else {
                s.ln_zero[j] = c;
            }
            s.ln_total[j] = (2.0 * self.beta + (s.ones[j] + s.zeros[j]) as f64).ln();
        }
        s.ln_total_sum = s.ln_total.iter().sum();
    }

    /// Draws `θ ~ p(θ | X_S)` given `ones` and `zeros` per column: each
    /// `θ_j ~ Beta(β + k_j, β + z_j)` as `G₁ / (G₁ + G₂)` of two Gamma variates, in log space
    /// ([`ln_gamma_variate`]) so that a tiny `β` cannot underflow. Cost: O(d).
    fn draw<R: Rng + ?Sized>(
        &self,
        ones: &[u32],
        zeros: &[u32],
        rng: &mut R,
        out: &mut BbParam,
    ) -> Result<()> {
        out.ln_p.resize(self.d, 0.0);
        out.ln_q.resize(self.d, 0.0);
        for j in 0..self.d {
            let g1 = ln_gamma_variate(self.beta + ones[j] as f64, rng)?;
            let g2 = ln_gamma_variate(self.beta + zeros[j] as f64, rng)?;
            let total = ln_add_exp(g1, g2);
            (out.ln_p[j], out.ln_q[j]) = (g1 - total, g2 - total);
        }
        Ok(())
    }
}

/// The values of `data` as bits, row by row; errors naming `what` and the first value that is
/// not 0 or 1 (its row and column, from 1). Cost: O(N d).
fn binary_values(data: &DenseData, what: &str) -> Result<Vec<u8>> {
    let mut bits = Vec::with_capacity(data.values().len());
    for i in 0..data.n() {
        push_bits(data.row(i), &mut bits, |j| {
            format!("row {}, column {} of {what}", i + 1, j + 1)
        })?;
    }
    Ok(bits)
}

/// Appends the values of `row` to `bits` as bits; errors naming `place(j)` of the first value
/// `j` that is not 0 or 1. Cost: O(d).
fn push_bits(row: &[f64], bits: &mut Vec<u8>, place: impl Fn(usize) -> String) -> Result<()> {
    for (j, &v) in row.iter().enumerate() {
        if v == 0.0 || v == 1.0 {
            bits.push(u8::from(v == 1.0));
        } else {
            return Err(Error::Usage(format!(
                "the Beta-Bernoulli kernel (`kernel` bb) needs binary values (0 or 1), but {} \
                 holds {v}",
                place(j)
            )));
        }
    }
    Ok(())
}

impl ConjugateKernel for BetaBernoulli {
    type Stat = BbStat;

    fn n_points(&self) -> usize {
        self.n
    }

    fn empty_stat(&self) -> BbStat {
        BbStat {
            n: 0,
            ones: vec![0; self.d],
            zeros: vec![0; self.d],
            ln_one: vec![self.ln_beta; self.d],
            ln_zero: vec![self.ln_beta; self.d],
            ln_total: vec![self.ln_two_beta; self.d],
            // Summed as `refresh` sums, so that an emptied statistic predicts bit for bit as
            // an empty one.
            ln_total_sum: std::iter::repeat_n(self.ln_two_beta, self.d).sum(),
        }
    }

    fn count(&self, s: &BbStat) -> usize {
        s.n
    }

    fn add(&self, s: &mut BbStat, i: usize) {
        s.n += 1;
        self.update(s, i, true);
    }

    fn remove(&self, s: &mut BbStat, i: usize) {
        debug_assert!(s.n > 0, "remove from an empty statistic");
        s.n -= 1;
        self.update(s, i, false);
    }

    fn merge(&self, a: &mut BbStat, b: &BbStat) {
        a.n += b.n;
        for j in 0..self.d {
            a.ones[j] += b.ones[j];
            a.zeros[j] += b.zeros[j];
        }
        self.refresh(a);
    }

    fn ln_marginal(&self, s: &BbStat) -> f64 {
        self.ln_marginal_at(s, &[self.beta])
    }

    fn ln_marginal_pair(&self, a: &BbStat, b: &BbStat) -> f64 {
        let counts = (0..self.d).map(|j| {
            (
                (a.ones[j] + b.ones[j]) as f64,
                (a.zeros[j] + b.zeros[j]) as f64,
            )
        });
        self.ln_marginal_counts(counts, self.beta)
    }

    fn ln_predictive(&self, i: usize, s: &BbStat) -> f64 {
        self.ln_predictive_bits(self.row(i), s)
    }
}

/// `β`, free by default, log-normal with `τ = 2` around its value.
impl HyperKernel for BetaBernoulli {
    const HYPER_NAMES: &'static [&'static str] = &["bb_beta"];

    /// `β`.
    fn hyper_values(&self) -> Vec<f64> {
        vec![self.beta]
    }

    fn hyper_offset(&self, _: usize) -> f64 {
        0.0
    }

    fn hyper_default_sd(&self, _: usize) -> f64 {
        2.0
    }

    fn hyper_free_by_default(&self, _: usize) -> bool {
        true
    }

    /// The marginal from the counts at `β = h[0]`. Cost: O(d) `ln Γ`.
    fn ln_marginal_at(&self, s: &BbStat, h: &[f64]) -> f64 {
        let counts = s.ones.iter().zip(&s.zeros);
        self.ln_marginal_counts(counts.map(|(&k, &z)| (k as f64, z as f64)), h[0])
    }

    /// Errors unless `h` is one finite `β > 0`. Cost: O(1); the entries are shared.
    fn with_hyper_values(&self, h: &[f64]) -> Result<Self> {
        if h.len() != 1 {
            return Err(Error::DimensionMismatch(format!(
                "{} Beta-Bernoulli hyperparameter values, expected 1 (beta)",
                h.len()
            )));
        }
        Self::with_bits(self.n, self.d, Arc::clone(&self.bits), h[0])
    }

    fn refresh_stat(&self, s: &mut BbStat) {
        self.refresh(s);
    }
}

/// A component's parameter: `ln θ_j` and `ln(1 - θ_j)` per column.
#[derive(Clone, Debug, PartialEq)]
pub struct BbParam {
    ln_p: Vec<f64>,
    ln_q: Vec<f64>,
}

impl BbParam {
    /// `ln θ_j`, the log probability of a one in each column.
    pub fn ln_p(&self) -> &[f64] {
        &self.ln_p
    }
}

/// Raw moments: the count and the ones and zeros per column, merged by addition.
#[derive(Clone, Debug, PartialEq)]
pub struct BbMoments {
    n: usize,
    ones: Vec<u32>,
    zeros: Vec<u32>,
}

/// `θ_j ~ Beta(β + k_j, β + z_j)`, independently; `ln f` is O(d), a missing entry's factor 1.
impl ParametricKernel for BetaBernoulli {
    type Param = BbParam;
    type Moments = BbMoments;

    fn new_param(&self) -> BbParam {
        BbParam {
            ln_p: vec![0.0; self.d],
            ln_q: vec![0.0; self.d],
        }
    }

    fn sample_posterior<R: Rng + ?Sized>(
        &self,
        s: &BbStat,
        rng: &mut R,
        out: &mut BbParam,
    ) -> Result<()> {
        self.draw(&s.ones, &s.zeros, rng, out)
    }

    fn new_moments(&self) -> BbMoments {
        BbMoments {
            n: 0,
            ones: vec![0; self.d],
            zeros: vec![0; self.d],
        }
    }

    fn moments_add(&self, m: &mut BbMoments, i: usize) {
        m.n += 1;
        for (j, &b) in self.row(i).iter().enumerate() {
            m.ones[j] += u32::from(b == 1);
            m.zeros[j] += u32::from(b == 0);
        }
    }

    fn moments_merge(&self, a: &mut BbMoments, b: &BbMoments) {
        a.n += b.n;
        for j in 0..self.d {
            a.ones[j] += b.ones[j];
            a.zeros[j] += b.zeros[j];
        }
    }

    fn moments_count(&self, m: &BbMoments) -> usize {
        m.n
    }

    fn sample_moments<R: Rng + ?Sized>(
        &self,
        m: &BbMoments,
        rng: &mut R,
        out: &mut BbParam,
    ) -> Result<()> {
        self.draw(&m.ones, &m.zeros, rng, out)
    }

    fn ln_f(&self, i: usize, theta: &BbParam) -> f64 {
        self.row(i)
            .iter()
            .zip(theta.ln_p.iter().zip(&theta.ln_q))
            .map(|(&b, (&p, &q))| match b {
                1 => p,
                0 => q,
                _ => 0.0,
            })
            .sum()
    }

    /// `Σ_j [(a_j - 1) ln θ_j + (b_j - 1) ln(1 - θ_j) - ln B(a_j, b_j)]` with
    /// `a_j = β + k_j`, `b_j = β + z_j`. Cost: O(d) `ln Γ`.
    fn ln_posterior_density(&self, s: &BbStat, theta: &BbParam) -> f64 {
        (0..self.d)
            .map(|j| {
                let (a, b) = (self.beta + s.ones[j] as f64, self.beta + s.zeros[j] as f64);
                (a - 1.0) * theta.ln_p[j] + (b - 1.0) * theta.ln_q[j]
                    - (ln_gamma(a) + ln_gamma(b) - ln_gamma(a + b))
            })
            .sum()
    }
}

/// New points are binary vectors of the training data's dimension.
impl PredictiveKernel for BetaBernoulli {
    type NewData = DenseData;

    fn n_new(data: &DenseData) -> usize {
        data.n()
    }

    /// Errors if the point has another dimension or a value other than 0 and 1.
    fn ln_predictive_new(&self, data: &DenseData, j: usize, s: &BbStat) -> Result<f64> {
        let mut x = Vec::new();
        self.load_new(data, j, &mut x)?;
        Ok(self.ln_predictive_bits(&x, s))
    }
}

/// A soft statistic: the total weight and the weighted ones and zeros per column.
#[derive(Clone, Debug, PartialEq)]
pub struct SoftBb {
    w: f64,
    ones: Vec<f64>,
    zeros: Vec<f64>,
}

/// A component's posterior: its weight and each column's Beta parameters.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BbPosterior {
    /// The weight absorbed.
    pub weight: f64,
    /// `β + k_j` per column.
    pub a: Vec<f64>,
    /// `β + z_j` per column.
    pub b: Vec<f64>,
}

/// Weighted counts: a point of weight `ρ` adds `ρ` to the weight and to the ones or zeros of
/// each of its observed entries.
impl SvaKernel for BetaBernoulli {
    type Soft = SoftBb;
    type Point = Vec<u8>;
    type Posterior = BbPosterior;

    fn soft_empty(&self) -> Result<SoftBb> {
        Ok(SoftBb {
            w: 0.0,
            ones: vec![0.0; self.d],
            zeros: vec![0.0; self.d],
        })
    }

    fn soft_weight(s: &SoftBb) -> f64 {
        s.w
    }

    fn new_point(&self) -> Vec<u8> {
        vec![0; self.d]
    }

    fn load_point(&self, i: usize, p: &mut Vec<u8>) {
        p.clear();
        p.extend_from_slice(self.row(i));
    }

    fn load_new(&self, data: &DenseData, j: usize, p: &mut Vec<u8>) -> Result<()> {
        check_dense_new(self.d, data)?;
        p.clear();
        push_bits(data.row(j), p, |c| {
            format!("column {} of new point {}", c + 1, j + 1)
        })
    }

    /// `Σ_{j observed} [ln(β + c_j) - ln(2β + n_j)]`. Cost: O(d) logarithms.
    fn soft_ln_predictive(&self, p: &Vec<u8>, s: &SoftBb) -> f64 {
        p.iter()
            .enumerate()
            .filter(|&(_, &b)| b != MISSING)
            .map(|(j, &b)| {
                let c = if b == 1 { s.ones[j] } else { s.zeros[j] };
                (self.beta + c).ln() - (2.0 * self.beta + s.ones[j] + s.zeros[j]).ln()
            })
            .sum()
    }

    fn soft_add(&self, s: &mut SoftBb, p: &Vec<u8>, weight: f64) {
        s.w += weight;
        for (j, &b) in p.iter().enumerate() {
            match b {
                1 => s.ones[j] += weight,
                0 => s.zeros[j] += weight,
                _ => {}
            }
        }
    }

    /// The prior is not in the counts, so merging adds them.
    fn soft_merge(&self, a: &mut SoftBb, b: &SoftBb) {
        a.w += b.w;
        for j in 0..self.d {
            a.ones[j] += b.ones[j];
            a.zeros[j] += b.zeros[j];
        }
    }

    fn soft_ln_marginal(&self, s: &SoftBb) -> f64 {
        let counts = s.ones.iter().copied().zip(s.zeros.iter().copied());
        self.ln_marginal_counts(counts, self.beta)
    }

    fn posterior(&self, s: &SoftBb) -> BbPosterior {
        BbPosterior {
            weight: s.w,
            a: s.ones.iter().map(|k| self.beta + k).collect(),
            b: s.zeros.iter().map(|z| self.beta + z).collect(),
        }
    }
}

/// The Beta-Bernoulli kernel as models and front ends name and build it.
impl Kernel for BetaBernoulli {
    const NAME: &'static str = "bb";
    const ABOUT: &'static str =
        "Beta-Bernoulli per column on binary vectors (values 0 and 1), columns independent";
    const TITLE: &'static str = "Beta-Bernoulli kernel";
    const DATA: &'static str = "binary vectors";

    /// `β` given (the `beta` setting) or [`DEFAULT_BETA`]; the Normal-Wishart settings are
    /// refused. Cost: O(N d).
    fn build(settings: &KernelSettings, data: Dataset) -> Result<Self> {
        match data {
            Dataset::Dense(x) => {
                if settings.xi.is_some()
                    || settings.psi.is_some()
                    || settings.r.is_some()
                    || settings.nu.is_some()
                {
                    return Err(Error::Usage(
                        "`nw_*` hyperparameters (`nw_xi`, `nw_psi`, `nw_r`, `nw_nu`) belong to \
                         the Normal-Wishart kernel, not to `kernel` bb: give `beta`"
                            .into(),
                    ));
                }
                BetaBernoulli::new(&x, settings.beta.unwrap_or(DEFAULT_BETA))
            }
            Dataset::Table(_) => Err(super::settings::table_refused("bb")),
            Dataset::Counts(_) => Err(Error::Usage(
                "`kernel` bb needs a matrix of 0s and 1s, but the data are counts: use `kernel` md"
                    .into(),
            )),
        }
    }

    fn dim(&self) -> usize {
        self.d
    }

    fn points_of(data: &Dataset) -> Option<&DenseData> {
        dense_points(data)
    }

    /// The dimension and every value (0 or 1).
    fn check_new(&self, new: &DenseData) -> Result<()> {
        check_dense_new(self.d, new)?;
        binary_values(new, "`new`").map(|_| ())
    }
}
