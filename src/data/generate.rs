//! Seeded synthetic data: random partitions, Gaussian mixtures with Normal-Wishart components,
//! bags of words with Dirichlet topics, and the small fixed data sets of the specification.
//!
//! Every random draw comes from the generator passed in by the caller (normally an
//! [`NrmmRng`](crate::rng::NrmmRng) from a [`SeedPlan`]), so equal seeds give equal data.
//! Partitions are returned as label vectors; the CRP and Gibbs-type generators label blocks
//! `0..K` in order of first appearance. These are the prior draws of the Geweke tests
//! (MATH §7.2): `Π` from the prior, then `X | Π` from the conjugate model of MATH §2.

use std::collections::HashMap;

use rand::Rng;
use rand_distr::{ChiSquared, Distribution, Gamma, Poisson, StandardNormal};

use super::{DenseData, SparseCounts};
use crate::error::{Error, Result};
use crate::math::log_sum_exp;
use crate::rng::{uniform_index, uniform_open01, SeedPlan};

// ---------------------------------------------------------------------------------------------
// Partitions.

fn check_n(n: usize) -> Result<()> {
    if n == 0 {
        return Err(Error::param("n", 0, "at least one point"));
    }
    Ok(())
}

fn check_k(n: usize, k: usize) -> Result<()> {
    check_n(n)?;
    if k == 0 || k > n {
        return Err(Error::param(
            "k",
            k,
            &format!("a number of clusters in 1..={n} (the number of points)"),
        ));
    }
    Ok(())
}

/// `n` labels drawn independently and uniformly from `0..k` (some clusters may stay empty;
/// labels are not canonicalised). Errors unless `1 ≤ k ≤ n`. Cost: `O(n)`.
pub fn partition_uniform<R: Rng + ?Sized>(n: usize, k: usize, rng: &mut R) -> Result<Vec<usize>> {
    check_k(n, k)?;
    Ok((0..n).map(|_| uniform_index(rng, k)).collect())
}

/// `n` points in `k` contiguous blocks of equal size (sizes differ by at most one): point `i`
/// gets label `⌊i k / n⌋`. Deterministic. Errors unless `1 ≤ k ≤ n`. Cost: `O(n)`.
pub fn partition_equal(n: usize, k: usize) -> Result<Vec<usize>> {
    check_k(n, k)?;
    Ok((0..n)
        .map(|i| (i as u128 * k as u128 / n as u128) as usize)
        .collect())
}

/// A partition of `n` points from the Chinese restaurant process with concentration `alpha`
/// (the DP's EPPF, MATH §1.5): point `i + 1` opens a new block with probability
/// `α / (α + i)`, else joins the block of a uniformly chosen earlier point, i.e. block `c` with
/// probability `n_c / (α + i)`. Labels are `0..K` in order of first appearance.
///
/// `E[K] = Σ_{i<n} α / (α + i)`. Errors unless `α > 0` is finite and `n ≥ 1`. Cost: `O(n)`.
pub fn partition_crp<R: Rng + ?Sized>(n: usize, alpha: f64, rng: &mut R) -> Result<Vec<usize>> {
    check_n(n)?;
    if !(alpha > 0.0 && alpha.is_finite()) {
        return Err(Error::param("alpha", alpha, "a finite number > 0"));
    }
    let mut labels = Vec::with_capacity(n);
    labels.push(0);
    let mut k = 1;
    for i in 1..n {
        if uniform_open01(rng) * (alpha + i as f64) < alpha {
            labels.push(k);
            k += 1;
        } else {
            let j = uniform_index(rng, i);
            labels.push(labels[j]);
        }
    }
    Ok(labels)
}

/// Sequential sampler of a Gibbs-type partition prior with EPPF
/// `p(Π) = V_{n,K} Π_c Γ(n_c − σ)/Γ(1 − σ)`, given `ln V_{n,k}` as a function (MATH §1.4, §7.2).
///
/// After `m` points in `k` blocks, point `m + 1` opens a new block with probability
/// `V_{m+1,k+1} / V_{m,k}` and joins block `c` with probability `(n_c − σ) V_{m+1,k} / V_{m,k}`.
/// The two are normalised together, so quadrature error in `V` cannot make them sum to other
/// than one. Joining picks block `c ∝ n_c − σ = (n_c − 1) + (1 − σ)` in `O(1)`: a uniform
/// non-first member's block (weight `m − k`) or a uniform block (weight `k(1 − σ)`).
///
/// `ln V` is memoised by `(m, k)` across draws, so repeated draws cost two evaluations per new
/// `(m, k)` pair visited plus `O(n)`.
pub struct GibbsTypePartitions<F> {
    sigma: f64,
    ln_v: F,
    memo: HashMap<(usize, usize), f64>,
    repeats: Vec<usize>,
}

impl<F> std::fmt::Debug for GibbsTypePartitions<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GibbsTypePartitions")
            .field("sigma", &self.sigma)
            .field("memoised_ln_v", &self.memo.len())
            .finish()
    }
}

impl<F: FnMut(usize, usize) -> Result<f64>> GibbsTypePartitions<F> {
    /// A sampler for discount `sigma ∈ [0, 1)` and `ln_v(n, k) = ln V_{n,k}`.
    pub fn new(sigma: f64, ln_v: F) -> Result<Self> {
        if !(0.0..1.0).contains(&sigma) {
            return Err(Error::param("sigma", sigma, "a number in [0, 1)"));
        }
        Ok(GibbsTypePartitions {
            sigma,
            ln_v,
            memo: HashMap::new(),
            repeats: Vec::new(),
        })
    }

    fn ln_v(&mut self, m: usize, k: usize) -> Result<f64> {
        if let Some(&v) = self.memo.get(&(m, k)) {
            return Ok(v);
        }
        let v = (self.ln_v)(m, k)?;
        if v.is_nan() || v == f64::INFINITY {
            return Err(Error::Numerical(format!("ln V({m}, {k}) = {v}")));
        }
        self.memo.insert((m, k), v);
        Ok(v)
    }

    /// Draws a partition of `n ≥ 1` points; labels `0..K` in order of first appearance.
    pub fn sample<R: Rng + ?Sized>(&mut self, n: usize, rng: &mut R) -> Result<Vec<usize>> {
        check_n(n)?;
        let mut labels = Vec::with_capacity(n);
        labels.push(0);
        self.repeats.clear();
        let mut k = 1;
        for m in 1..n {
            let ln_new = self.ln_v(m + 1, k + 1)?;
            let join_mass = m as f64 - k as f64 * self.sigma;
            let ln_join = self.ln_v(m + 1, k)? + join_mass.ln();
            let top = ln_new.max(ln_join);
            if top == f64::NEG_INFINITY {
                return Err(Error::Numerical(format!(
                    "ln V({}, {}) and ln V({}, {k}) are both -inf",
                    m + 1,
                    k + 1,
                    m + 1
                )));
            }
            let (w_new, w_join) = ((ln_new - top).exp(), (ln_join - top).exp());
            let label = if uniform_open01(rng) * (w_new + w_join) < w_new {
                k += 1;
                k - 1
            } else {
                let label = if uniform_open01(rng) * join_mass < (m - k) as f64 {
                    self.repeats[uniform_index(rng, self.repeats.len())]
                } else {
                    uniform_index(rng, k)
                };
                self.repeats.push(label);
                label
            };
            labels.push(label);
        }
        Ok(labels)
    }
}

/// A reusable sampler of NGGP(α, σ) partitions (the `nggp.cpp` parameterisation, MATH §1.4),
/// with `ln V` from [`crate::prior::nggp::ln_v`] (quadrature, MATH §7.1) memoised across draws.
/// Errors unless `α > 0` is finite and `σ ∈ (0, 1)`.
pub fn nggp_partitions(
    alpha: f64,
    sigma: f64,
) -> Result<GibbsTypePartitions<impl FnMut(usize, usize) -> Result<f64>>> {
    if !(alpha > 0.0 && alpha.is_finite()) {
        return Err(Error::param("alpha", alpha, "a finite number > 0"));
    }
    if !(sigma > 0.0 && sigma < 1.0) {
        return Err(Error::param("sigma", sigma, "a number in (0, 1)"));
    }
    GibbsTypePartitions::new(sigma, move |m, k| {
        crate::prior::nggp::ln_v(m, k, alpha, sigma)
    })
}

/// One NGGP(α, σ) partition of `n` points by the sequential generalised CRP of MATH §7.2 (see
/// [`GibbsTypePartitions`]); for many draws keep a sampler from [`nggp_partitions`].
/// Cost: about `2n` evaluations of `ln V`.
pub fn partition_nggp<R: Rng + ?Sized>(
    n: usize,
    alpha: f64,
    sigma: f64,
    rng: &mut R,
) -> Result<Vec<usize>> {
    nggp_partitions(alpha, sigma)?.sample(n, rng)
}

/// A partition of `n` points from the Pitman-Yor process PY(σ, θ) by its urn (Pitman 2006,
/// §3.2): after `m` points in `K` blocks, point `m + 1` joins block `c` with probability
/// `(n_c − σ) / (θ + m)` and opens a block with probability `(θ + Kσ) / (θ + m)`. Labels are
/// `0..K` in order of first appearance. Errors unless `0 ≤ σ < 1`, `θ > −σ`, both finite, and
/// `n ≥ 1`. Cost: `O(n)` (joining picks a uniform earlier point's block, weight `m − K`, or a
/// uniform block, weight `K(1 − σ)`, as [`GibbsTypePartitions`]).
pub fn partition_pitman_yor<R: Rng + ?Sized>(
    n: usize,
    theta: f64,
    sigma: f64,
    rng: &mut R,
) -> Result<Vec<usize>> {
    check_n(n)?;
    if !(0.0..1.0).contains(&sigma) {
        return Err(Error::param("sigma", sigma, "a number in [0, 1)"));
    }
    if !(theta > -sigma && theta.is_finite()) {
        return Err(Error::param(
            "alpha",
            theta,
            &format!("a finite number above -sigma = {}", -sigma),
        ));
    }
    let mut labels = Vec::with_capacity(n);
    labels.push(0);
    // The labels of the points that joined a block: a uniform one is block c with weight
    // n_c − 1.
    let mut repeats: Vec<usize> = Vec::with_capacity(n);
    let mut k = 1usize;
    for m in 1..n {
        let open = theta + k as f64 * sigma;
        let u = uniform_open01(rng) * (theta + m as f64);
        let label = if u < open {
            k += 1;
            k - 1
        } else {
            let c = if u - open < (m - k) as f64 {
                repeats[uniform_index(rng, repeats.len())]
            } else {
                uniform_index(rng, k)
            };
            repeats.push(c);
            c
        };
        labels.push(label);
    }
    Ok(labels)
}

/// A partition of `n` points from the mixture of finite mixtures (Miller & Harrison 2018, §2)
/// by its definition: `K ~ p_K`, then each point's component among `K` with the
/// `Dirichlet(γ, …, γ)` weights integrated out (the Pólya urn: component `j` with probability
/// `(γ + n_j) / (Kγ + m)` after `m` points), labels relabelled by first appearance (empty
/// components dropped). Errors unless `γ > 0` is finite, `p_K` valid and `n ≥ 1`.
/// Cost: `O(n K)`.
pub fn partition_mfm<R: Rng + ?Sized>(
    n: usize,
    gamma: f64,
    k_prior: &crate::prior::KPrior,
    rng: &mut R,
) -> Result<Vec<usize>> {
    use crate::prior::KPrior;
    check_n(n)?;
    if !(gamma > 0.0 && gamma.is_finite()) {
        return Err(Error::param("gamma", gamma, "a finite number > 0"));
    }
    k_prior.check()?;
    let k = match *k_prior {
        KPrior::Poisson { lambda } => {
            let poisson = Poisson::new(lambda)
                .map_err(|e| Error::param("k_prior", lambda, &format!("a Poisson rate: {e}")))?;
            1 + poisson.sample(rng) as usize
        }
        // Inversion: K − 1 = ⌊ln U / ln(1 − p)⌋.
        KPrior::Geometric { p } => 1 + (uniform_open01(rng).ln() / (-p).ln_1p()).floor() as usize,
    };
    // Components are exchangeable: those used so far are labelled in order of first
    // appearance, and the K − used unused ones together weigh (K − used) γ.
    let mut counts: Vec<usize> = Vec::with_capacity(k.min(n));
    let mut labels = Vec::with_capacity(n);
    for m in 0..n {
        let mut u = uniform_open01(rng) * (k as f64 * gamma + m as f64);
        let mut label = None;
        for (c, &nc) in counts.iter().enumerate() {
            u -= gamma + nc as f64;
            if u < 0.0 {
                label = Some(c);
                break;
            }
        }
        let c = match label {
            Some(c) => c,
            None if counts.len() < k => {
                counts.push(0);
                counts.len() - 1
            }
            // Every component used and rounding left u ≥ 0: the last one.
            None => counts.len() - 1,
        };
        counts[c] += 1;
        labels.push(c);
    }
    Ok(labels)
}

/// The largest label plus one, after checking the labels describe a partition of their length.
fn label_count(labels: &[usize]) -> Result<usize> {
    let n = labels.len();
    check_n(n)?;
    let max = labels.iter().copied().max().unwrap_or(0);
    if max >= n {
        return Err(Error::param(
            "label",
            max,
            &format!("labels in 0..{n} (at most one cluster per point); canonicalise them"),
        ));
    }
    Ok(max + 1)
}

// ---------------------------------------------------------------------------------------------
// Gaussian mixtures.

/// Draws from the Normal-Wishart prior of MATH §2.1: `Λ ~ Wishart(ν, Ψ⁻¹)` and
/// `μ | Λ ~ N(ξ, (rΛ)⁻¹)`, the model behind the Normal-Wishart kernel.
///
/// `Λ` comes from the Bartlett decomposition: with `L Lᵀ = Ψ⁻¹` (Cholesky) and `A` lower
/// triangular, `A_ii² ~ χ²(ν − i + 1)`, `A_ij ~ N(0, 1)` below the diagonal, `Λ = (LA)(LA)ᵀ`
/// (Bartlett 1933; e.g. Anderson, *An Introduction to Multivariate Statistical Analysis*,
/// §7.2). Since `M = LA` is a lower-triangular square root of `Λ`, `M⁻ᵀz` with `z ~ N(0, I)`
/// has covariance `Λ⁻¹`, which gives `μ` and the points by one triangular solve each.
#[derive(Clone, Debug)]
pub struct NormalWishartSampler {
    d: usize,
    xi: Vec<f64>,
    r: f64,
    nu: f64,
    /// Lower Cholesky factor of `Ψ⁻¹`, row-major.
    chol_psi_inv: Vec<f64>,
    chi: Vec<ChiSquared<f64>>,
}

impl NormalWishartSampler {
    /// Validates `ξ ∈ ℝ^d`, `Ψ` (row-major `d × d`, symmetric positive definite), `r > 0` and
    /// `ν > d − 1` (all finite), and factors `Ψ⁻¹`. Cost: `O(d³)`.
    pub fn new(xi: &[f64], psi: &[f64], r: f64, nu: f64) -> Result<Self> {
        let d = xi.len();
        if d == 0 {
            return Err(Error::param("xi", "[]", "a mean of dimension at least 1"));
        }
        if let Some(v) = xi.iter().find(|v| !v.is_finite()) {
            return Err(Error::param("xi", v, "finite entries"));
        }
        if psi.len() != d * d {
            return Err(Error::DimensionMismatch(format!(
                "Psi has {} entries, expected {d} x {d} = {} to match xi",
                psi.len(),
                d * d
            )));
        }
        if let Some(v) = psi.iter().find(|v| !v.is_finite()) {
            return Err(Error::param("Psi", v, "finite entries"));
        }
        let scale = psi.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for i in 0..d {
            for j in 0..i {
                let (a, b) = (psi[i * d + j], psi[j * d + i]);
                if (a - b).abs() > 1e-10 * scale {
                    return Err(Error::param(
                        &format!("Psi[{i}][{j}] vs Psi[{j}][{i}]"),
                        format!("{a} vs {b}"),
                        "a symmetric matrix",
                    ));
                }
            }
        }
        if !(r > 0.0 && r.is_finite()) {
            return Err(Error::param("r", r, "a finite number > 0"));
        }
        if !(nu > d as f64 - 1.0 && nu.is_finite()) {
            return Err(Error::param(
                "nu",
                nu,
                &format!("a finite number > d - 1 = {}", d - 1),
            ));
        }
        let not_pd = || Error::NotPositiveDefinite("the Normal-Wishart scale matrix Psi".into());
        let psi_m = nalgebra::DMatrix::from_row_slice(d, d, psi);
        let psi_m = (&psi_m + psi_m.transpose()) * 0.5;
        let inv = nalgebra::Cholesky::new(psi_m).ok_or_else(not_pd)?.inverse();
        let inv = (&inv + inv.transpose()) * 0.5;
        let l = nalgebra::Cholesky::new(inv).ok_or_else(not_pd)?.l();
        let mut chol_psi_inv = vec![0.0; d * d];
        for i in 0..d {
            for j in 0..=i {
                chol_psi_inv[i * d + j] = l[(i, j)];
            }
        }
        let chi = (0..d)
            .map(|i| {
                ChiSquared::new(nu - i as f64)
                    .map_err(|e| Error::param("nu", nu, &format!("a valid chi-square dof ({e})")))
            })
            .collect::<Result<_>>()?;
        Ok(NormalWishartSampler {
            d,
            xi: xi.to_vec(),
            r,
            nu,
            chol_psi_inv,
            chi,
        })
    }

    /// The dimension `d`.
    pub fn dim(&self) -> usize {
        self.d
    }

    /// The degrees of freedom `ν`.
    pub fn nu(&self) -> f64 {
        self.nu
    }

    /// The lower-triangular `M = LA` of the Bartlett decomposition, `Λ = M Mᵀ`. Cost: `O(d³)`.
    fn sample_precision_factor<R: Rng + ?Sized>(&self, rng: &mut R) -> Vec<f64> {
        let d = self.d;
        let mut a = vec![0.0; d * d];
        for i in 0..d {
            a[i * d + i] = self.chi[i].sample(rng).sqrt();
            for j in 0..i {
                a[i * d + j] = StandardNormal.sample(rng);
            }
        }
        let l = &self.chol_psi_inv;
        let mut m = vec![0.0; d * d];
        for i in 0..d {
            for j in 0..=i {
                m[i * d + j] = (j..=i).map(|k| l[i * d + k] * a[k * d + j]).sum();
            }
        }
        m
    }

    /// One draw `Λ ~ Wishart(ν, Ψ⁻¹)`, row-major `d × d`; `E[Λ] = ν Ψ⁻¹`. Cost: `O(d³)`.
    pub fn sample_precision<R: Rng + ?Sized>(&self, rng: &mut R) -> Vec<f64> {
        outer_lower(&self.sample_precision_factor(rng), self.d)
    }

    /// One component `(μ, Λ)` from the Normal-Wishart prior. Cost: `O(d³)`.
    pub fn sample_component<R: Rng + ?Sized>(&self, rng: &mut R) -> GaussianComponent {
        let d = self.d;
        let factor = self.sample_precision_factor(rng);
        let mut mean = vec![0.0; d];
        let z: Vec<f64> = (0..d).map(|_| StandardNormal.sample(rng)).collect();
        solve_upper_transposed(&factor, d, &z, &mut mean);
        let scale = self.r.sqrt().recip();
        for (m, x) in mean.iter_mut().zip(&self.xi) {
            *m = x + *m * scale;
        }
        GaussianComponent {
            precision: outer_lower(&factor, d),
            mean,
            factor,
        }
    }
}

/// `M Mᵀ` for a lower-triangular row-major `M`.
fn outer_lower(m: &[f64], d: usize) -> Vec<f64> {
    let mut out = vec![0.0; d * d];
    for i in 0..d {
        for j in 0..=i {
            let v: f64 = (0..=j).map(|k| m[i * d + k] * m[j * d + k]).sum();
            out[i * d + j] = v;
            out[j * d + i] = v;
        }
    }
    out
}

/// Solves `Mᵀ y = z` for lower-triangular `M` by back substitution, so `Cov(y) = (M Mᵀ)⁻¹`
/// when `z ~ N(0, I)`.
fn solve_upper_transposed(m: &[f64], d: usize, z: &[f64], y: &mut [f64]) {
    for i in (0..d).rev() {
        let s: f64 = ((i + 1)..d).map(|k| m[k * d + i] * y[k]).sum();
        y[i] = (z[i] - s) / m[i * d + i];
    }
}

/// One Gaussian component of a mixture: mean `μ` and precision `Λ` (row-major `d × d`).
#[derive(Clone, Debug, PartialEq)]
pub struct GaussianComponent {
    /// The mean `μ`.
    pub mean: Vec<f64>,
    /// The precision matrix `Λ`, row-major.
    pub precision: Vec<f64>,
    /// Lower-triangular `M` with `Λ = M Mᵀ`.
    factor: Vec<f64>,
}

/// A Gaussian mixture data set for a given partition: for each cluster label `0..=max` one
/// component `(μ, Λ)` from the Normal-Wishart prior, then each point `x_i ~ N(μ_{c_i}, Λ_c⁻¹)`
/// (MATH §2.1, §7.2). Returns the points and the components, indexed by label.
///
/// Errors if `labels` is empty or holds a label `≥ labels.len()`.
/// Cost: `O(K d³ + n d²)`, one allocation for the points.
pub fn gaussian_mixture<R: Rng + ?Sized>(
    labels: &[usize],
    prior: &NormalWishartSampler,
    rng: &mut R,
) -> Result<(DenseData, Vec<GaussianComponent>)> {
    let k = label_count(labels)?;
    let d = prior.dim();
    let components: Vec<GaussianComponent> = (0..k).map(|_| prior.sample_component(rng)).collect();
    let mut values = vec![0.0; labels.len() * d];
    let mut z = vec![0.0; d];
    for (point, &c) in values.chunks_exact_mut(d).zip(labels) {
        for zi in z.iter_mut() {
            *zi = StandardNormal.sample(rng);
        }
        let comp = &components[c];
        solve_upper_transposed(&comp.factor, d, &z, point);
        for (x, m) in point.iter_mut().zip(&comp.mean) {
            *x += m;
        }
    }
    Ok((DenseData::new(labels.len(), d, values)?, components))
}

// ---------------------------------------------------------------------------------------------
// Bags of words.

/// How [`bag_of_words`] sets the length (total word count) of each document.
#[derive(Clone, Copy, Debug)]
pub enum DocLengths<'a> {
    /// One length `≥ 1` per document.
    Given(&'a [usize]),
    /// `1 + Poisson(mean − 1)` per document: at least one word, mean exactly `mean ≥ 1`.
    Poisson {
        /// The mean length, in `[1, 1e8]`.
        mean: f64,
    },
}

/// A bag-of-words data set for a given partition (the model of the Multinomial-Dirichlet
/// kernel, MATH §2.2): per cluster a topic `φ_c ~ Dir(β, …, β)` over `vocab` words, per
/// document `y_i ~ Multinomial(len_i, φ_{c_i})`. Returns the counts and the topics (indexed by
/// label, each summing to one).
///
/// The Dirichlet draw normalises Gamma variates in log space, drawing `Gamma(β)` as
/// `Gamma(β + 1) · U^{1/β}` when `β < 1` (Marsaglia & Tsang 2000), so tiny `β` cannot underflow
/// a topic to zero. Multinomial counts are `len_i` categorical draws by binary search in the
/// topic's cumulative sums. Errors for empty or out-of-range labels, `vocab` outside
/// `1..=2^32 − 1`, `β` not finite and `> 0`, and bad lengths.
/// Cost: `O(K V + Σ_i len_i log V)`; memory `O(K V + nnz)`.
pub fn bag_of_words<R: Rng + ?Sized>(
    labels: &[usize],
    vocab: usize,
    beta: f64,
    lengths: DocLengths<'_>,
    rng: &mut R,
) -> Result<(SparseCounts, Vec<Vec<f64>>)> {
    let k = label_count(labels)?;
    let n = labels.len();
    if vocab == 0 || vocab as u64 > u64::from(u32::MAX) {
        return Err(Error::param(
            "vocab",
            vocab,
            "a vocabulary size in 1..=4294967295",
        ));
    }
    if !(beta > 0.0 && beta.is_finite()) {
        return Err(Error::param("beta", beta, "a finite number > 0"));
    }
    let lens: Vec<u32> = match lengths {
        DocLengths::Given(given) => {
            if given.len() != n {
                return Err(Error::DimensionMismatch(format!(
                    "{} document lengths for {n} documents",
                    given.len()
                )));
            }
            given
                .iter()
                .enumerate()
                .map(|(i, &len)| match u32::try_from(len) {
                    Ok(l) if l >= 1 => Ok(l),
                    _ => Err(Error::param(
                        &format!("length of document {}", i + 1),
                        len,
                        "a number of words in 1..=4294967295",
                    )),
                })
                .collect::<Result<_>>()?
        }
        DocLengths::Poisson { mean } => {
            if !(1.0..=1e8).contains(&mean) {
                return Err(Error::param(
                    "mean document length",
                    mean,
                    "a number in [1, 1e8]",
                ));
            }
            if mean == 1.0 {
                vec![1; n]
            } else {
                let poisson = Poisson::new(mean - 1.0).map_err(|e| {
                    Error::param("mean document length", mean, &format!("a valid mean ({e})"))
                })?;
                (0..n)
                    .map(|_| {
                        let extra: f64 = poisson.sample(rng);
                        (extra.min(f64::from(u32::MAX - 1)) as u32) + 1
                    })
                    .collect()
            }
        }
    };
    let topics = (0..k)
        .map(|_| sample_dirichlet(vocab, beta, rng))
        .collect::<Result<Vec<_>>>()?;
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| labels[i]);
    let mut cdf = vec![0.0; vocab];
    let mut scratch = vec![0u32; vocab];
    let mut touched: Vec<u32> = Vec::new();
    let mut triplets = Vec::new();
    let mut current = usize::MAX;
    for &doc in &order {
        let c = labels[doc];
        if c != current {
            current = c;
            let mut acc = 0.0;
            for (s, p) in cdf.iter_mut().zip(&topics[c]) {
                acc += p;
                *s = acc;
            }
        }
        let total = cdf[vocab - 1];
        for _ in 0..lens[doc] {
            let u = uniform_open01(rng) * total;
            let w = cdf.partition_point(|&s| s <= u).min(vocab - 1);
            if scratch[w] == 0 {
                touched.push(w as u32);
            }
            scratch[w] += 1;
        }
        touched.sort_unstable();
        for &w in &touched {
            triplets.push((doc as u32, w, scratch[w as usize]));
            scratch[w as usize] = 0;
        }
        touched.clear();
    }
    Ok((SparseCounts::from_triplets(n, vocab, triplets)?, topics))
}

/// `φ ~ Dir(β, …, β)` of length `v`, via Gamma variates normalised in log space.
fn sample_dirichlet<R: Rng + ?Sized>(v: usize, beta: f64, rng: &mut R) -> Result<Vec<f64>> {
    let bad = |e| Error::param("beta", beta, &format!("a valid Gamma shape ({e})"));
    let mut ln_g = Vec::with_capacity(v);
    if beta < 1.0 {
        let gamma = Gamma::new(beta + 1.0, 1.0).map_err(bad)?;
        for _ in 0..v {
            let g: f64 = gamma.sample(rng);
            ln_g.push(g.ln() + uniform_open01(rng).ln() / beta);
        }
    } else {
        let gamma = Gamma::new(beta, 1.0).map_err(bad)?;
        for _ in 0..v {
            let g: f64 = gamma.sample(rng);
            ln_g.push(g.ln());
        }
    }
    let ln_total = log_sum_exp(&ln_g);
    if !ln_total.is_finite() {
        return Err(Error::Numerical(format!(
            "Dirichlet draw with beta = {beta} has log total {ln_total}"
        )));
    }
    for x in ln_g.iter_mut() {
        *x = (*x - ln_total).exp();
    }
    Ok(ln_g)
}

// ---------------------------------------------------------------------------------------------
// Built-in data sets.

/// A seeded 2-D data set shaped like the tgMCMC paper's toy set (`../shared/data/toy`): 13
/// round Gaussian clusters of 100 points, one at the origin and twelve on a ring of radius 1.25
/// at 30° steps (the first straight up), each with principal standard deviations uniform in
/// `[0.07, 0.14]` at a uniform random orientation, as measured on the paper's set. Adjacent
/// ring centres are 0.65 apart, over four standard deviations, so the clusters are well
/// separated. Returns the points (cluster after cluster) and labels `0..13`.
pub fn toy_like(seed: u64) -> (DenseData, Vec<usize>) {
    const CLUSTERS: usize = 13;
    const SIZE: usize = 100;
    const RADIUS: f64 = 1.25;
    let mut rng = SeedPlan::new(seed).chain(0);
    let mut values = Vec::with_capacity(CLUSTERS * SIZE * 2);
    let mut labels = Vec::with_capacity(CLUSTERS * SIZE);
    for c in 0..CLUSTERS {
        let centre = if c == 0 {
            [0.0, 0.0]
        } else {
            let angle = (c - 1) as f64 * std::f64::consts::PI / 6.0;
            [RADIUS * angle.sin(), RADIUS * angle.cos()]
        };
        let s1 = 0.07 + 0.07 * uniform_open01(&mut rng);
        let s2 = 0.07 + 0.07 * uniform_open01(&mut rng);
        let (sin, cos) = (std::f64::consts::PI * uniform_open01(&mut rng)).sin_cos();
        for _ in 0..SIZE {
            let z1: f64 = StandardNormal.sample(&mut rng);
            let z2: f64 = StandardNormal.sample(&mut rng);
            let (a, b) = (s1 * z1, s2 * z2);
            values.push(centre[0] + cos * a - sin * b);
            values.push(centre[1] + sin * a + cos * b);
            labels.push(c);
        }
    }
    (
        DenseData {
            n: CLUSTERS * SIZE,
            d: 2,
            values: values.into(),
        },
        labels,
    )
}

/// Data set A of MATH §5.3 (7 points in 2-D), verbatim:
/// `(0,0), (.3,-.2), (-.2,.4), (2,2.1), (2.4,1.8), (1.1,1), (2.2,2.6)`.
pub fn data_set_a() -> DenseData {
    DenseData {
        n: 7,
        d: 2,
        values: vec![
            0.0, 0.0, 0.3, -0.2, -0.2, 0.4, 2.0, 2.1, 2.4, 1.8, 1.1, 1.0, 2.2, 2.6,
        ]
        .into(),
    }
}

/// Data set B of MATH §5.3 (7 points in 2-D, a diffuse posterior), verbatim:
/// `(0,0), (.1,-.08), (-.07,.12), (1,1.05), (1.12,.93), (.55,.5), (1.05,1.2)`.
pub fn data_set_b() -> DenseData {
    DenseData {
        n: 7,
        d: 2,
        values: vec![
            0.0, 0.0, 0.1, -0.08, -0.07, 0.12, 1.0, 1.05, 1.12, 0.93, 0.55, 0.5, 1.05, 1.2,
        ]
        .into(),
    }
}

/// A seeded synthetic set shaped like the one of Lin (2013, NIPS, §5, synthetic data) used to
/// test SVA: 10,000 points in 2-D from 9 Gaussian components with unit covariance `I`, whose
/// centres are drawn from the base measure `N(0, 100² I)`; each point's component is drawn
/// uniformly (so sizes are about 1,111 each). The dimension, the equal proportions and the
/// exact covariances are choices made here: the paper's full text was not available. With
/// centres at this spread, two components closer than 4 standard deviations occur in about 1%
/// of seeds, so the components are usually well separated; their tails still overlap the
/// broad prior's predictive, which is what drives SVA's new-component test. Returns the points
/// and labels `0..9`. Cost: O(n).
pub fn lin2013_like(seed: u64) -> (DenseData, Vec<usize>) {
    const N: usize = 10_000;
    const COMPONENTS: usize = 9;
    const CENTRE_SD: f64 = 100.0;
    let mut rng = SeedPlan::new(seed).chain(0);
    let centres: Vec<[f64; 2]> = (0..COMPONENTS)
        .map(|_| {
            let a: f64 = StandardNormal.sample(&mut rng);
            let b: f64 = StandardNormal.sample(&mut rng);
            [CENTRE_SD * a, CENTRE_SD * b]
        })
        .collect();
    let mut values = Vec::with_capacity(2 * N);
    let mut labels = Vec::with_capacity(N);
    for _ in 0..N {
        let c = uniform_index(&mut rng, COMPONENTS);
        for centre in centres[c] {
            let z: f64 = StandardNormal.sample(&mut rng);
            values.push(centre + z);
        }
        labels.push(c);
    }
    (
        DenseData {
            n: N,
            d: 2,
            values: values.into(),
        },
        labels,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rng(seed: u64) -> crate::rng::NrmmRng {
        SeedPlan::new(seed).chain(0)
    }

    /// Restricted growth strings of all set partitions of `n` (MATH §7.1).
    fn all_partitions(n: usize) -> Vec<Vec<usize>> {
        let mut out = vec![vec![0]];
        for _ in 1..n {
            out = out
                .into_iter()
                .flat_map(|p| {
                    let k = p.iter().max().unwrap() + 1;
                    (0..=k).map(move |c| {
                        let mut q = p.clone();
                        q.push(c);
                        q
                    })
                })
                .collect();
        }
        out
    }

    fn pitman_yor_ln_v(theta: f64, sigma: f64) -> impl FnMut(usize, usize) -> Result<f64> {
        move |n, k| {
            let num: f64 = (1..k).map(|i| (theta + i as f64 * sigma).ln()).sum();
            let den: f64 = (1..n).map(|i| (theta + i as f64).ln()).sum();
            Ok(num - den)
        }
    }

    /// The Gibbs-type sequential sampler reproduces a closed-form EPPF (Pitman-Yor, whose
    /// `V_{n,k}` is known exactly) partition by partition.
    #[test]
    fn gibbs_type_sampler_matches_pitman_yor_eppf() {
        let (theta, sigma, n, draws) = (1.3, 0.4, 4, 40_000);
        let mut ln_v = pitman_yor_ln_v(theta, sigma);
        let mut sampler = GibbsTypePartitions::new(sigma, pitman_yor_ln_v(theta, sigma)).unwrap();
        let parts = all_partitions(n);
        let mut freq: HashMap<Vec<usize>, usize> = HashMap::new();
        let mut r = rng(11);
        for _ in 0..draws {
            *freq.entry(sampler.sample(n, &mut r).unwrap()).or_default() += 1;
        }
        let mut total = 0.0;
        for p in &parts {
            let k = p.iter().max().unwrap() + 1;
            let mut ln_p = ln_v(n, k).unwrap();
            for c in 0..k {
                let size = p.iter().filter(|&&x| x == c).count();
                ln_p += (1..size).map(|j| (j as f64 - sigma).ln()).sum::<f64>();
            }
            let prob = ln_p.exp();
            total += prob;
            let observed = *freq.get(p).unwrap_or(&0) as f64 / draws as f64;
            let se = (prob * (1.0 - prob) / draws as f64).sqrt();
            assert!(
                (observed - prob).abs() < 4.5 * se,
                "{p:?}: observed {observed}, exact {prob}, se {se}"
            );
        }
        assert!((total - 1.0).abs() < 1e-12);
        assert_eq!(freq.len(), parts.len());
    }

    #[test]
    fn gibbs_type_sampler_reports_bad_weights() {
        let mut s = GibbsTypePartitions::new(0.5, |_, _| Ok(f64::NAN)).unwrap();
        assert!(matches!(s.sample(3, &mut rng(1)), Err(Error::Numerical(_))));
        let mut s = GibbsTypePartitions::new(0.5, |_, _| Ok(f64::NEG_INFINITY)).unwrap();
        assert!(matches!(s.sample(3, &mut rng(1)), Err(Error::Numerical(_))));
        assert!(GibbsTypePartitions::new(1.0, |_, _| Ok(0.0)).is_err());
    }

    #[test]
    fn triangular_helpers_invert_each_other() {
        // M = [[2, 0], [1, 3]]: M Mᵀ = [[4, 2], [2, 10]].
        let m = [2.0, 0.0, 1.0, 3.0];
        assert_eq!(outer_lower(&m, 2), vec![4.0, 2.0, 2.0, 10.0]);
        let mut y = [0.0; 2];
        solve_upper_transposed(&m, 2, &[5.0, 6.0], &mut y);
        // Mᵀ y = [2 y0 + y1, 3 y1] = [5, 6].
        assert_eq!(y, [1.5, 2.0]);
    }

    #[test]
    fn dirichlet_with_tiny_beta_stays_a_distribution() {
        let phi = sample_dirichlet(50, 1e-3, &mut rng(3)).unwrap();
        let s: f64 = phi.iter().sum();
        assert!((s - 1.0).abs() < 1e-12);
        assert!(phi.iter().all(|p| p.is_finite() && *p >= 0.0));
    }
}
