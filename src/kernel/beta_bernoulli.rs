//! The Beta-Bernoulli kernel: binary vectors (values 0 and 1) with independent columns, each a
//! Bernoulli variable whose probability has a conjugate Beta prior.
//!
//! Model: `x_j | θ_j ~ Bernoulli(θ_j)` for each column `j < d`, independently, with
//! `θ_j ~ Beta(β, β)`. With `k_j` the ones of column `j` among the `n` points of a cluster,
//!
//! `ln m(X) = Σ_j [ln Γ(β + k_j) + ln Γ(β + n - k_j) - ln Γ(2β + n)] + d [ln Γ(2β) - 2 ln Γ(β)]`
//!
//! and the predictive of a point `x` is `Σ_j ln(β + c_j(x)) - d ln(2β + n)` with
//! `c_j(x) = k_j` when `x_j = 1` and `n - k_j` when `x_j = 0` (the Beta-binomial of one trial;
//! Bernardo & Smith 1994, "Bayesian Theory", §5.2). A statistic holds the count, the ones per
//! column and both logarithms per column, so a predictive is `d` additions and one logarithm,
//! and adding or removing a point refreshes `d` logarithms (those of the columns whose count
//! the point changes). The marginal is O(d) `ln Γ`.
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
use super::{ln_gamma_variate, ConjugateKernel, Kernel, ParametricKernel, PredictiveKernel};
use super::SvaKernel;
use crate::data::{Dataset, DenseData};
use crate::error::{Error, Result};
use crate::math::{ln_add_exp, ln_gamma};

/// The Beta-Bernoulli kernel over binary data (see the module documentation).
#[derive(Clone)]
pub struct BetaBernoulli {
    data: Arc<DenseData>,
    /// The data as bits, row by row (`n × d`, each 0 or 1).
    bits: Arc<Vec<u8>>,
    d: usize,
    beta: f64,
    /// `ln β`, the logarithm of both Beta parameters of the empty set.
    ln_beta: f64,
}

impl std::fmt::Debug for BetaBernoulli {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BetaBernoulli")
            .field("n", &self.data.n())
            .field("d", &self.d)
            .field("beta", &self.beta)
            .finish()
    }
}

/// The statistic of a set of points: the count, the ones per column and, per column, the
/// logarithms `ln(β + k_j)` and `ln(β + n - k_j)` that the predictive adds up.
#[derive(Clone, Debug, PartialEq)]
pub struct BbStat {
    n: usize,
    ones: Vec<u32>,
    ln_one: Vec<f64>,
    ln_zero: Vec<f64>,
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
}

impl BetaBernoulli {
    /// The kernel over `data` with `θ_j ~ Beta(β, β)`. Errors if a value is not 0 or 1 (naming
    /// its row and column, from 1) or `β` is not finite and `> 0`. Cost: O(N d).
    pub fn new(data: Arc<DenseData>, beta: f64) -> Result<Self> {
        let bits = binary_values(&data, "the data")?;
        Self::with_bits(data, Arc::new(bits), beta)
    }

    /// The kernel over data already read as bits. Cost: O(1).
    fn with_bits(data: Arc<DenseData>, bits: Arc<Vec<u8>>, beta: f64) -> Result<Self> {
        if !(beta > 0.0 && beta.is_finite()) {
            return Err(Error::param("beta", beta, "a finite number > 0"));
        }
        let d = data.d();
        Ok(BetaBernoulli {
            ln_beta: beta.ln(),
            data,
            bits,
            d,
            beta,
        })
    }

    /// The data set.
    pub fn data(&self) -> &Arc<DenseData> {
        &self.data
    }

    /// The Beta parameter `β`.
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// The bits of point `i`.
    fn row(&self, i: usize) -> &[u8] {
        &self.bits[i * self.d..(i + 1) * self.d]
    }

    /// `ln m` of `n` points (a real weight for SVA) with `ones` per column at `β = beta`: 0
    /// for the empty set. Cost: O(d) `ln Γ`.
    fn ln_marginal_counts(&self, n: f64, ones: impl Iterator<Item = f64>, beta: f64) -> f64 {
        if n == 0.0 {
            return 0.0;
        }
        let norm = self.d as f64 * (ln_gamma(2.0 * beta) - 2.0 * ln_gamma(beta));
        let columns: f64 = ones
            .map(|k| ln_gamma(beta + k) + ln_gamma(beta + n - k))
            .sum();
        columns - self.d as f64 * ln_gamma(2.0 * beta + n) + norm
    }

    /// Recomputes the logarithms of `s` from its counts. Cost: O(d) logarithms.
    fn refresh(&self, s: &mut BbStat) {
        let n = s.n as f64;
        for ((&k, one), zero) in s.ones.iter().zip(&mut s.ln_one).zip(&mut s.ln_zero) {
            *one = (self.beta + k as f64).ln();
            *zero = (self.beta + n - k as f64).ln();
        }
    }

    /// `ln p(x | X_S)` of the bits `x`. Cost: O(d) and one logarithm.
    fn ln_predictive_bits(&self, x: &[u8], s: &BbStat) -> f64 {
        let sum: f64 = x
            .iter()
            .zip(s.ln_one.iter().zip(&s.ln_zero))
            .map(|(&b, (&one, &zero))| if b == 1 { one } else { zero })
            .sum();
        sum - self.d as f64 * (2.0 * self.beta + s.n as f64).ln()
    }

    /// Draws `θ ~ p(θ | X_S)` given `n` points with `ones` per column: each
    /// `θ_j ~ Beta(β + k_j, β + n - k_j)` as `G₁ / (G₁ + G₂)` of two Gamma variates, in log
    /// space ([`ln_gamma_variate`]) so that a tiny `β` cannot underflow. Cost: O(d).
    fn draw<R: Rng + ?Sized>(
        &self,
        n: usize,
        ones: &[u32],
        rng: &mut R,
        out: &mut BbParam,
    ) -> Result<()> {
        out.ln_p.resize(self.d, 0.0);
        out.ln_q.resize(self.d, 0.0);
        for ((&k, p), q) in ones.iter().zip(&mut out.ln_p).zip(&mut out.ln_q) {
            let g1 = ln_gamma_variate(self.beta + k as f64, rng)?;
            let g2 = ln_gamma_variate(self.beta + (n as u32 - k) as f64, rng)?;
            let total = ln_add_exp(g1, g2);
            (*p, *q) = (g1 - total, g2 - total);
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
        self.data.n()
    }

    fn empty_stat(&self) -> BbStat {
        BbStat {
            n: 0,
            ones: vec![0; self.d],
            ln_one: vec![self.ln_beta; self.d],
            ln_zero: vec![self.ln_beta; self.d],
        }
    }

    fn count(&self, s: &BbStat) -> usize {
        s.n
    }

    /// A one raises its column's `k_j`, a zero its `n - k_j`: one logarithm per column.
    fn add(&self, s: &mut BbStat, i: usize) {
        s.n += 1;
        let n = s.n as f64;
        for (j, &b) in self.row(i).iter().enumerate() {
            if b == 1 {
                s.ones[j] += 1;
                s.ln_one[j] = (self.beta + s.ones[j] as f64).ln();
            } else {
                s.ln_zero[j] = (self.beta + n - s.ones[j] as f64).ln();
            }
        }
    }

    fn remove(&self, s: &mut BbStat, i: usize) {
        debug_assert!(s.n > 0, "remove from an empty statistic");
        s.n -= 1;
        let n = s.n as f64;
        for (j, &b) in self.row(i).iter().enumerate() {
            if b == 1 {
                s.ones[j] -= 1;
                s.ln_one[j] = (self.beta + s.ones[j] as f64).ln();
            } else {
                s.ln_zero[j] = (self.beta + n - s.ones[j] as f64).ln();
            }
        }
    }

    fn merge(&self, a: &mut BbStat, b: &BbStat) {
        a.n += b.n;
        for (x, y) in a.ones.iter_mut().zip(&b.ones) {
            *x += y;
        }
        self.refresh(a);
    }

    fn ln_marginal(&self, s: &BbStat) -> f64 {
        self.ln_marginal_at(s, &[self.beta])
    }

    fn ln_marginal_pair(&self, a: &BbStat, b: &BbStat) -> f64 {
        let ones = a.ones.iter().zip(&b.ones).map(|(x, y)| (x + y) as f64);
        self.ln_marginal_counts((a.n + b.n) as f64, ones, self.beta)
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
        let ones = s.ones.iter().map(|&k| k as f64);
        self.ln_marginal_counts(s.n as f64, ones, h[0])
    }

    /// Errors unless `h` is one finite `β > 0`. Cost: O(1); the bits are shared.
    fn with_hyper_values(&self, h: &[f64]) -> Result<Self> {
        if h.len() != 1 {
            return Err(Error::DimensionMismatch(format!(
                "{} Beta-Bernoulli hyperparameter values, expected 1 (beta)",
                h.len()
            )));
        }
        Self::with_bits(Arc::clone(&self.data), Arc::clone(&self.bits), h[0])
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

/// Raw moments: the count and the ones per column, merged by addition.
#[derive(Clone, Debug, PartialEq)]
pub struct BbMoments {
    n: usize,
    ones: Vec<u32>,
}

/// `θ_j ~ Beta(β + k_j, β + n - k_j)`, independently; `ln f` is O(d).
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
        self.draw(s.n, &s.ones, rng, out)
    }

    fn new_moments(&self) -> BbMoments {
        BbMoments {
            n: 0,
            ones: vec![0; self.d],
        }
    }

    fn moments_add(&self, m: &mut BbMoments, i: usize) {
        m.n += 1;
        for (k, &b) in m.ones.iter_mut().zip(self.row(i)) {
            *k += u32::from(b);
        }
    }

    fn moments_merge(&self, a: &mut BbMoments, b: &BbMoments) {
        a.n += b.n;
        for (x, y) in a.ones.iter_mut().zip(&b.ones) {
            *x += y;
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
        self.draw(m.n, &m.ones, rng, out)
    }

    fn ln_f(&self, i: usize, theta: &BbParam) -> f64 {
        self.row(i)
            .iter()
            .zip(theta.ln_p.iter().zip(&theta.ln_q))
            .map(|(&b, (&p, &q))| if b == 1 { p } else { q })
            .sum()
    }

    /// `Σ_j [(a_j - 1) ln θ_j + (b_j - 1) ln(1 - θ_j) - ln B(a_j, b_j)]` with
    /// `a_j = β + k_j`, `b_j = β + n - k_j`. Cost: O(d) `ln Γ`.
    fn ln_posterior_density(&self, s: &BbStat, theta: &BbParam) -> f64 {
        let n = s.n as f64;
        s.ones
            .iter()
            .zip(theta.ln_p.iter().zip(&theta.ln_q))
            .map(|(&k, (&p, &q))| {
                let (a, b) = (self.beta + k as f64, self.beta + n - k as f64);
                (a - 1.0) * p + (b - 1.0) * q - (ln_gamma(a) + ln_gamma(b) - ln_gamma(a + b))
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

/// A soft statistic: the total weight and the weighted ones per column.
#[derive(Clone, Debug, PartialEq)]
pub struct SoftBb {
    w: f64,
    ones: Vec<f64>,
}

/// A component's posterior: its weight and each column's Beta parameters.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BbPosterior {
    /// The weight absorbed.
    pub weight: f64,
    /// `β + k_j` per column.
    pub a: Vec<f64>,
    /// `β + w - k_j` per column.
    pub b: Vec<f64>,
}

/// Weighted counts: a point of weight `ρ` adds `ρ` to the weight and `ρ x_j` to the ones.
impl SvaKernel for BetaBernoulli {
    type Soft = SoftBb;
    type Point = Vec<u8>;
    type Posterior = BbPosterior;

    fn soft_empty(&self) -> Result<SoftBb> {
        Ok(SoftBb {
            w: 0.0,
            ones: vec![0.0; self.d],
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

    /// `Σ_j ln(β + c_j) - d ln(2β + w)`. Cost: O(d) logarithms.
    fn soft_ln_predictive(&self, p: &Vec<u8>, s: &SoftBb) -> f64 {
        let sum: f64 = p
            .iter()
            .zip(&s.ones)
            .map(|(&b, &k)| (self.beta + if b == 1 { k } else { s.w - k }).ln())
            .sum();
        sum - self.d as f64 * (2.0 * self.beta + s.w).ln()
    }

    fn soft_add(&self, s: &mut SoftBb, p: &Vec<u8>, weight: f64) {
        s.w += weight;
        for (k, &b) in s.ones.iter_mut().zip(p) {
            if b == 1 {
                *k += weight;
            }
        }
    }

    /// The prior is not in the counts, so merging adds them.
    fn soft_merge(&self, a: &mut SoftBb, b: &SoftBb) {
        a.w += b.w;
        for (x, y) in a.ones.iter_mut().zip(&b.ones) {
            *x += y;
        }
    }

    fn soft_ln_marginal(&self, s: &SoftBb) -> f64 {
        self.ln_marginal_counts(s.w, s.ones.iter().copied(), self.beta)
    }

    fn posterior(&self, s: &SoftBb) -> BbPosterior {
        BbPosterior {
            weight: s.w,
            a: s.ones.iter().map(|k| self.beta + k).collect(),
            b: s.ones.iter().map(|k| self.beta + s.w - k).collect(),
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
                BetaBernoulli::new(Arc::new(x), settings.beta.unwrap_or(DEFAULT_BETA))
            }
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
