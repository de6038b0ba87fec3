//! Explicit component parameters for the conjugate kernels: posterior and prior draws of
//! `θ`, its log density, and the per-point likelihood `ln f(x_i | θ)`, for the uncollapsed
//! samplers of MATH §6.4 (Chang & Fisher's restricted and sub-cluster Gibbs, DPMM.jl's
//! direct samplers), which sample `θ_k ~ p(θ | X_k)` and then labels from `π_k f(x_i | θ_k)`.
//!
//! The label step evaluates `ln f` once per point and cluster, so each parameter stores what
//! makes that evaluation cheap and allocation-free: for Normal-Wishart the mean and a lower
//! Cholesky factor of the precision with its log normaliser (O(d²) per point), for the
//! diagonal kernel the means and precisions (O(d) per point), for Multinomial-Dirichlet the
//! log word probabilities (O(nnz of the document) per point).

use rand::Rng;
use rand_distr::{ChiSquared, Distribution, StandardNormal};

use super::cholesky::cholesky_in_place;
use super::sweep_cache::BLOCK;
use super::{ConjugateKernel, DiagStat, Diagonal, MdStat, MultinomialDirichlet, NormalWishart};
use crate::error::{Error, Result};
use crate::math::ln_gamma;
use crate::rng::uniform_open01;

/// A conjugate kernel whose component parameter `θ` can be drawn and evaluated explicitly.
///
/// Invariant (checked by the tests): for any set `S` and any `θ`,
/// `ln m(X_S) = Σ_{i∈S} ln f(x_i | θ) + ln p(θ) - ln p(θ | X_S)` (Bayes' rule for a conjugate
/// pair, the "candidate's formula").
pub trait ParametricKernel: ConjugateKernel {
    /// One component's parameter, with the caches its likelihood needs.
    type Param: Clone + Send + Sync + std::fmt::Debug;

    /// A parameter buffer of the right shape (its values are meaningless until drawn).
    fn new_param(&self) -> Self::Param;

    /// Draws `θ ~ p(θ | X_S)` into `out` given the statistic of `S` (the prior when `S` is
    /// empty), reusing `out`'s buffers.
    fn sample_posterior<R: Rng + ?Sized>(
        &self,
        s: &Self::Stat,
        rng: &mut R,
        out: &mut Self::Param,
    ) -> Result<()>;

    /// Draws `θ` from the base measure `H`.
    fn sample_prior<R: Rng + ?Sized>(&self, rng: &mut R, out: &mut Self::Param) -> Result<()> {
        let empty = self.empty_stat();
        self.sample_posterior(&empty, rng, out)
    }

    /// Raw sufficient statistics of a set of points for [`ParametricKernel::sample_moments`]:
    /// cheaper to accumulate than [`ConjugateKernel::Stat`] (no cached factor or predictive
    /// to maintain per point), and merged by addition, so parallel reductions over fixed
    /// chunks are cheap and deterministic.
    type Moments: Clone + Send + Sync + std::fmt::Debug;

    /// The moments of the empty set.
    fn new_moments(&self) -> Self::Moments;

    /// Adds data point `i` to `m`. Hot path: no allocation.
    fn moments_add(&self, m: &mut Self::Moments, i: usize);

    /// Adds the points of `b` to `a`.
    fn moments_merge(&self, a: &mut Self::Moments, b: &Self::Moments);

    /// Number of points summarised by `m`.
    fn moments_count(&self, m: &Self::Moments) -> usize;

    /// Draws `θ ~ p(θ | X_S)` into `out` given the moments of `S`: the same law as
    /// [`ParametricKernel::sample_posterior`] on the statistic of `S`.
    fn sample_moments<R: Rng + ?Sized>(
        &self,
        m: &Self::Moments,
        rng: &mut R,
        out: &mut Self::Param,
    ) -> Result<()>;

    /// `ln f(x_i | θ)`, the likelihood of data point `i`. Hot path: no allocation.
    fn ln_f(&self, i: usize, theta: &Self::Param) -> f64;

    /// The log weights of a block of consecutive points against every component, for a label
    /// pass: `out[k · BLOCK + b] = offsets[k] + ln f(x_{first+b} | params[k])` for lanes
    /// `b < count` (`count ≤ BLOCK`, [`super::sweep_cache::BLOCK`]); lanes past `count`
    /// weigh point `first` again (finite values, not to be read). `out` is resized to
    /// `offsets.len() · BLOCK`. Equal to `offsets[k] + ln_f` up to rounding in the last bits,
    /// and identical at every [`crate::simd::Level`]. Normal-Wishart computes it in vectors
    /// with the points in lanes (the kernel's `nw_lanes` module); the default calls
    /// [`ParametricKernel::ln_f`] per pair. Cost: one likelihood per (point, component).
    fn ln_f_block(
        &self,
        first: usize,
        count: usize,
        offsets: &[f64],
        params: &[Self::Param],
        out: &mut Vec<f64>,
    ) {
        debug_assert!((1..=BLOCK).contains(&count) && params.len() >= offsets.len());
        out.resize(offsets.len() * BLOCK, 0.0);
        for (k, (&a, theta)) in offsets.iter().zip(params).enumerate() {
            for b in 0..BLOCK {
                let i = first + if b < count { b } else { 0 };
                out[k * BLOCK + b] = a + self.ln_f(i, theta);
            }
        }
    }

    /// [`ParametricKernel::ln_f_block`] for any up to [`BLOCK`] points, `points[b]` in lane
    /// `b` (a sample or the members of a cluster, for the sub-cluster launches): lanes past
    /// `points.len()` weigh `points[0]` again. Normal-Wishart gathers the points into its
    /// lanes; the default calls [`ParametricKernel::ln_f`] per pair. Cost: one likelihood
    /// per (point, component).
    fn ln_f_points(
        &self,
        points: &[usize],
        offsets: &[f64],
        params: &[Self::Param],
        out: &mut Vec<f64>,
    ) {
        debug_assert!((1..=BLOCK).contains(&points.len()) && params.len() >= offsets.len());
        out.resize(offsets.len() * BLOCK, 0.0);
        for (k, (&a, theta)) in offsets.iter().zip(params).enumerate() {
            for b in 0..BLOCK {
                let i = points[if b < points.len() { b } else { 0 }];
                out[k * BLOCK + b] = a + self.ln_f(i, theta);
            }
        }
    }

    /// `ln p(θ | X_S)`, the posterior log density (the prior's when `S` is empty).
    fn ln_posterior_density(&self, s: &Self::Stat, theta: &Self::Param) -> f64;

    /// `ln p(θ)`, the base measure's log density.
    fn ln_prior_density(&self, theta: &Self::Param) -> f64 {
        self.ln_posterior_density(&self.empty_stat(), theta)
    }
}

/// `ln G` for `G ~ Gamma(shape, 1)`, exact in log space for small shapes: for `shape < 1` it is
/// `ln G' + ln U / shape` with `G' ~ Gamma(shape + 1, 1)` (Marsaglia & Tsang 2000), which never
/// underflows. Errors if `shape` is not finite and positive. Cost: O(1) expected.
pub fn ln_gamma_variate<R: Rng + ?Sized>(shape: f64, rng: &mut R) -> Result<f64> {
    if !(shape > 0.0 && shape.is_finite()) {
        return Err(Error::param("gamma shape", shape, "a finite number > 0"));
    }
    let boosted = shape < 1.0;
    let a = if boosted { shape + 1.0 } else { shape };
    let dist = rand_distr::Gamma::new(a, 1.0)
        .map_err(|e| Error::param("gamma shape", shape, &e.to_string()))?;
    let g: f64 = dist.sample(rng);
    let mut ln_g = g.ln();
    if boosted {
        ln_g += uniform_open01(rng).ln() / shape;
    }
    Ok(ln_g)
}

// ---------------------------------------------------------------------------------------------
// Normal-Wishart.

/// A Gaussian component `(μ, Λ)` in the centred frame of a [`NormalWishart`] kernel (data
/// shifted by `ξ`): the mean `μ - ξ`, the lower Cholesky factor `C` of the precision,
/// `Λ = C Cᵀ` (column-by-column layout of [`super::cholesky`]), and the log normaliser
/// `-d/2 ln 2π + ln |C|`.
#[derive(Clone, Debug, PartialEq)]
pub struct NwParam {
    mu: Vec<f64>,
    chol: Vec<f64>,
    ln_norm: f64,
}

impl NwParam {
    /// The mean in the kernel's centred frame (`μ - ξ`).
    #[inline(always)]
    pub fn mean_centred(&self) -> &[f64] {
        &self.mu
    }

    /// The lower Cholesky factor `C` of the precision `Λ = C Cᵀ`: entry `(i, j)`, `i ≥ j`, at
    /// `j·d + i`.
    #[inline(always)]
    pub fn precision_chol(&self) -> &[f64] {
        &self.chol
    }

    /// `-d/2 ln 2π + ½ ln |Λ|`.
    #[inline(always)]
    pub fn ln_normaliser(&self) -> f64 {
        self.ln_norm
    }
}

/// Raw moments of a set of points for a [`NormalWishart`] kernel, in its centred frame: the
/// count, `Σ y` and the lower triangle of `Σ y yᵀ` (column-by-column layout of
/// [`super::cholesky`]). One heap buffer of `d + d²` values.
#[derive(Clone, Debug, PartialEq)]
pub struct NwMoments {
    n: usize,
    buf: Vec<f64>,
}

impl NwMoments {
    /// Number of points summarised.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether no point is summarised.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The buffer: `Σ y`, then `Σ y yᵀ` (lower triangle, column by column, in a `d × d`
    /// block), `d + d²` values; with [`NwMoments::len`] and [`NwMoments::from_raw`] it carries
    /// moments between processes.
    pub fn raw(&self) -> &[f64] {
        &self.buf
    }

    /// Moments from a count and a buffer laid out as [`NwMoments::raw`]'s. The caller keeps
    /// the length `d + d²` of the kernel they are used with.
    pub fn from_raw(n: usize, buf: Vec<f64>) -> Self {
        NwMoments { n, buf }
    }
}

impl NormalWishart {
    /// The log weights of one block of points against `params`, as
    /// [`ParametricKernel::ln_f_block`]: lane `b` holds the point `point(b)`, gathered into
    /// vectors of lanes for [`super::nw_lanes::weigh_block`]. Cost: one likelihood per
    /// (lane, component), in vectors.
    fn weigh_lanes(
        &self,
        point: impl Fn(usize) -> usize,
        offsets: &[f64],
        params: &[NwParam],
        out: &mut Vec<f64>,
    ) {
        let d = self.dim();
        // Every value is written by `weigh_block`.
        out.resize(offsets.len() * BLOCK, 0.0);
        // On the stack up to d = 8 (the fixed-dimension forms), so that a block allocates
        // nothing.
        let mut stack = [[0.0; BLOCK]; 8];
        let mut heap = Vec::new();
        let y = if d <= stack.len() {
            &mut stack[..d]
        } else {
            heap.resize(d, [0.0; BLOCK]);
            &mut heap[..]
        };
        for b in 0..BLOCK {
            for (lanes, &v) in y.iter_mut().zip(self.centred_point(point(b))) {
                lanes[b] = v;
            }
        }
        super::nw_lanes::weigh_block(y, offsets, &params[..offsets.len()], out);
    }

    /// Draws `Λ ~ W(ν_n, Ψ_n⁻¹)` and `μ | Λ` (see [`ParametricKernel::sample_posterior`])
    /// given `n`, the centred mean and the lower factor `l` of `Ψ_n`. Cost: O(d³).
    fn draw_from_factor<R: Rng + ?Sized>(
        &self,
        n: f64,
        mean: &[f64],
        l: &[f64],
        rng: &mut R,
        out: &mut NwParam,
    ) -> Result<()> {
        let d = self.dim();
        let (r_n, nu_n) = (self.hyper().r() + n, self.hyper().nu() + n);
        if l.iter().any(|v| !v.is_finite()) {
            return Err(Error::Numerical(
                "the posterior scale matrix Psi_n of a cluster could not be factored".into(),
            ));
        }
        // G = L⁻ᵀ A, column by column (back substitution with the upper Lᵀ), row-major.
        let mut g = vec![0.0; d * d];
        let mut col = vec![0.0; d];
        for c in 0..d {
            for (i, v) in col.iter_mut().enumerate() {
                *v = if i == c {
                    let chi = ChiSquared::new(nu_n - c as f64)
                        .map_err(|e| Error::param("nu_n", nu_n, &e.to_string()))?;
                    let x: f64 = chi.sample(rng);
                    x.sqrt()
                } else if i > c {
                    StandardNormal.sample(rng)
                } else {
                    0.0
                };
            }
            for i in (0..d).rev() {
                // Lᵀ(i, j) = L(j, i) = l[i·d + j] for j ≥ i.
                let mut v = col[i];
                for j in i + 1..d {
                    v -= l[i * d + j] * col[j];
                }
                col[i] = v / l[i * d + i];
            }
            for i in 0..d {
                g[i * d + c] = col[i];
            }
        }
        let chol = &mut out.chol;
        chol.resize(d * d, 0.0);
        for a in 0..d {
            for b in 0..=a {
                let v: f64 = (0..d).map(|k| g[a * d + k] * g[b * d + k]).sum();
                // Column-major lower: entry (a, b), a ≥ b, at b·d + a.
                chol[b * d + a] = v;
                chol[a * d + b] = v;
            }
        }
        cholesky_in_place(chol, d, "a drawn Normal-Wishart precision")?;
        // μ = ξ_n + C⁻ᵀ z / √r_n: back substitution with the upper Cᵀ.
        let mu = &mut out.mu;
        mu.resize(d, 0.0);
        for m in mu.iter_mut() {
            *m = StandardNormal.sample(rng);
        }
        for i in (0..d).rev() {
            let mut v = mu[i];
            for j in i + 1..d {
                v -= chol[i * d + j] * mu[j];
            }
            mu[i] = v / chol[i * d + i];
        }
        let shrink = n / r_n;
        let scale = r_n.sqrt().recip();
        for (m, &xbar) in mu.iter_mut().zip(mean) {
            *m = shrink * xbar + *m * scale;
        }
        out.ln_norm = -0.5 * d as f64 * (2.0 * std::f64::consts::PI).ln()
            + (0..d).map(|j| chol[j * d + j].ln()).sum::<f64>();
        Ok(())
    }

    /// The mean `μ` of `theta` in the data's original coordinates. Cost: O(d).
    pub fn param_mean(&self, theta: &NwParam) -> Vec<f64> {
        theta
            .mu
            .iter()
            .zip(self.hyper().xi())
            .map(|(m, x)| m + x)
            .collect()
    }

    /// The precision `Λ` of `theta`, `d × d` row-major. Cost: O(d³).
    pub fn param_precision(&self, theta: &NwParam) -> Vec<f64> {
        let d = self.dim();
        let c = &theta.chol;
        let mut out = vec![0.0; d * d];
        for a in 0..d {
            for b in 0..=a {
                let v: f64 = (0..=b).map(|k| c[k * d + a] * c[k * d + b]).sum();
                out[a * d + b] = v;
                out[b * d + a] = v;
            }
        }
        out
    }
}

/// `-½ ‖Cᵀ(y - μ)‖²` for a lower `C` stored column by column, dimension fixed at compile time.
#[inline(always)]
fn half_quad_fixed<const D: usize>(c: &[f64], y: &[f64], mu: &[f64]) -> f64 {
    let c = &c[..D * D];
    let mut v = [0.0f64; D];
    for i in 0..D {
        v[i] = y[i] - mu[i];
    }
    let mut q = 0.0;
    for j in 0..D {
        let col = &c[j * D..j * D + D];
        let mut t = 0.0;
        for i in j..D {
            t += col[i] * v[i];
        }
        q += t * t;
    }
    -0.5 * q
}

/// The general-dimension form of [`half_quad_fixed`], without a scratch vector.
#[inline]
fn half_quad_any(c: &[f64], d: usize, y: &[f64], mu: &[f64]) -> f64 {
    let mut q = 0.0;
    for j in 0..d {
        let col = &c[j * d..(j + 1) * d];
        let t: f64 = (j..d).map(|i| col[i] * (y[i] - mu[i])).sum();
        q += t * t;
    }
    -0.5 * q
}

/// `ln Γ_d(x)`, the multivariate gamma function.
fn ln_mv_gamma(d: usize, x: f64) -> f64 {
    0.25 * (d * (d - 1)) as f64 * std::f64::consts::PI.ln()
        + (0..d).map(|j| ln_gamma(x - 0.5 * j as f64)).sum::<f64>()
}

impl ParametricKernel for NormalWishart {
    type Param = NwParam;
    type Moments = NwMoments;

    fn new_param(&self) -> NwParam {
        let d = self.dim();
        NwParam {
            mu: vec![0.0; d],
            chol: vec![0.0; d * d],
            ln_norm: 0.0,
        }
    }

    /// `Λ ~ W(ν_n, Ψ_n⁻¹)` by the Bartlett decomposition, then `μ | Λ ~ N(ξ_n, (r_n Λ)⁻¹)`
    /// (MATH §2.1, with `ν_n = ν + n`, `r_n = r + n`, `ξ_n = n x̄ / r_n` in the centred frame).
    ///
    /// With `Ψ_n = L Lᵀ` (the statistic's cached factor) and the Bartlett factor `A` (lower,
    /// `A_jj² ~ χ²(ν_n - j)`, `A_ij ~ N(0, 1)` below the diagonal, so `A Aᵀ ~ W(ν_n, I)`),
    /// `Λ = G Gᵀ` with `G = L⁻ᵀ A` is `W(ν_n, L⁻ᵀ L⁻¹) = W(ν_n, Ψ_n⁻¹)`; it is then factored
    /// as `C Cᵀ`, and `μ = ξ_n + C⁻ᵀ z / √r_n` with `z ~ N(0, I)` has covariance
    /// `(r_n Λ)⁻¹`. Cost: O(d³) and a few small allocations (once per cluster and step, never
    /// per point). Errors if `Ψ_n` could not be factored (NaN factor) or the drawn precision
    /// is numerically singular.
    fn sample_posterior<R: Rng + ?Sized>(
        &self,
        s: &Self::Stat,
        rng: &mut R,
        out: &mut NwParam,
    ) -> Result<()> {
        self.draw_from_factor(s.len() as f64, s.mean(), s.chol(), rng, out)
    }

    /// `n`, `Σ y`, `Σ y yᵀ` start at zero.
    fn new_moments(&self) -> NwMoments {
        let d = self.dim();
        NwMoments {
            n: 0,
            buf: vec![0.0; d + d * d],
        }
    }

    /// Cost: d + d(d+1)/2 multiply-adds, no allocation.
    #[inline]
    fn moments_add(&self, m: &mut NwMoments, i: usize) {
        let d = self.dim();
        let y = self.centred_point(i);
        let (sum, outer) = m.buf.split_at_mut(d);
        for j in 0..d {
            sum[j] += y[j];
            let yj = y[j];
            let col = &mut outer[j * d + j..(j + 1) * d];
            for (o, &yi) in col.iter_mut().zip(&y[j..]) {
                *o += yi * yj;
            }
        }
        m.n += 1;
    }

    fn moments_merge(&self, a: &mut NwMoments, b: &NwMoments) {
        a.n += b.n;
        for (x, y) in a.buf.iter_mut().zip(&b.buf) {
            *x += y;
        }
    }

    fn moments_count(&self, m: &NwMoments) -> usize {
        m.n
    }

    /// Forms `Ψ_n = Ψ + M₂ + (r n/(r+n)) x̄ x̄ᵀ` from the moments (`M₂ = Σ y yᵀ - n x̄ x̄ᵀ`),
    /// factors it and draws as [`ParametricKernel::sample_posterior`]. Cost: O(d³). Errors
    /// if `Ψ_n` cannot be factored.
    fn sample_moments<R: Rng + ?Sized>(
        &self,
        m: &NwMoments,
        rng: &mut R,
        out: &mut NwParam,
    ) -> Result<()> {
        let d = self.dim();
        let n = m.n as f64;
        let (sum, outer) = m.buf.split_at(d);
        let mean: Vec<f64> = if m.n == 0 {
            vec![0.0; d]
        } else {
            sum.iter().map(|v| v / n).collect()
        };
        let r = self.hyper().r();
        let c = r * n / (r + n) - n;
        let psi = self.hyper().psi();
        let mut l = vec![0.0; d * d];
        for j in 0..d {
            for i in j..d {
                l[j * d + i] = psi[i * d + j] + outer[j * d + i] + c * mean[i] * mean[j];
            }
        }
        cholesky_in_place(
            &mut l,
            d,
            "the posterior scale matrix Psi_n of a sub-cluster",
        )?;
        self.draw_from_factor(n, &mean, &l, rng, out)
    }

    /// `-d/2 ln 2π + ½ ln|Λ| - ½ ‖Cᵀ(y_i - μ)‖²` on the centred point; unrolled for d ≤ 4.
    /// Cost: d(d+1)/2 multiply-adds, no allocation. Always inlined: it is the inner loop of
    /// every label pass.
    #[inline(always)]
    fn ln_f(&self, i: usize, theta: &NwParam) -> f64 {
        let y = self.centred_point(i);
        let (c, mu) = (&theta.chol[..], &theta.mu[..]);
        theta.ln_norm
            + match self.dim() {
                1 => half_quad_fixed::<1>(c, y, mu),
                2 => half_quad_fixed::<2>(c, y, mu),
                3 => half_quad_fixed::<3>(c, y, mu),
                4 => half_quad_fixed::<4>(c, y, mu),
                d => half_quad_any(c, d, y, mu),
            }
    }

    /// The points in vector lanes (the `nw_lanes` module): their centred coordinates gathered
    /// once per block, then `d(d+3)/2 + 1` multiply-adds per (point, component) across the
    /// lanes.
    fn ln_f_block(
        &self,
        first: usize,
        count: usize,
        offsets: &[f64],
        params: &[NwParam],
        out: &mut Vec<f64>,
    ) {
        debug_assert!((1..=BLOCK).contains(&count) && params.len() >= offsets.len());
        self.weigh_lanes(
            |b| first + if b < count { b } else { 0 },
            offsets,
            params,
            out,
        );
    }

    fn ln_f_points(
        &self,
        points: &[usize],
        offsets: &[f64],
        params: &[NwParam],
        out: &mut Vec<f64>,
    ) {
        debug_assert!((1..=BLOCK).contains(&points.len()) && params.len() >= offsets.len());
        let count = points.len();
        self.weigh_lanes(
            |b| points[if b < count { b } else { 0 }],
            offsets,
            params,
            out,
        );
    }

    /// `ln N(μ | ξ_n, (r_n Λ)⁻¹) + ln W(Λ | ν_n, Ψ_n⁻¹)` with
    /// `ln W(Λ | ν, Ψ⁻¹) = (ν-d-1)/2 ln|Λ| - ½ tr(Ψ Λ) - νd/2 ln 2 + ν/2 ln|Ψ| - ln Γ_d(ν/2)`
    /// and `tr(Ψ_n Λ) = ‖Lᵀ C‖²_F`. Cost: O(d³).
    fn ln_posterior_density(&self, s: &Self::Stat, theta: &NwParam) -> f64 {
        let d = self.dim();
        let df = d as f64;
        let n = s.len() as f64;
        let (r_n, nu_n) = (self.hyper().r() + n, self.hyper().nu() + n);
        let c = &theta.chol;
        let l = s.chol();
        let ln_det_lambda = 2.0 * (0..d).map(|j| c[j * d + j].ln()).sum::<f64>();
        let shrink = n / r_n;
        let centre: Vec<f64> = s.mean().iter().map(|m| shrink * m).collect();
        let ln_normal = -0.5 * df * (2.0 * std::f64::consts::PI).ln()
            + 0.5 * df * r_n.ln()
            + 0.5 * ln_det_lambda
            + r_n * half_quad_any(c, d, &theta.mu, &centre);
        // (Lᵀ C)(a, b) = Σ_k L(k, a) C(k, b), both lower.
        let mut trace = 0.0;
        for a in 0..d {
            for b in 0..d {
                let v: f64 = (a.max(b)..d).map(|k| l[a * d + k] * c[b * d + k]).sum();
                trace += v * v;
            }
        }
        let ln_wishart = 0.5 * (nu_n - df - 1.0) * ln_det_lambda
            - 0.5 * trace
            - 0.5 * nu_n * df * std::f64::consts::LN_2
            + 0.5 * nu_n * s.ln_det_psi_n()
            - ln_mv_gamma(d, 0.5 * nu_n);
        ln_normal + ln_wishart
    }
}

// ---------------------------------------------------------------------------------------------
// Diagonal.

/// A Gaussian component with independent coordinates in the centred frame of a [`Diagonal`]
/// kernel (data shifted by `ξ`): the means `μ_j - ξ_j`, the precisions `λ_j` and the log
/// normaliser `-d/2 ln 2π + ½ Σ_j ln λ_j`.
#[derive(Clone, Debug, PartialEq)]
pub struct DiagParam {
    mu: Vec<f64>,
    precision: Vec<f64>,
    ln_norm: f64,
}

impl DiagParam {
    /// The means in the kernel's centred frame (`μ - ξ`).
    #[inline(always)]
    pub fn mean_centred(&self) -> &[f64] {
        &self.mu
    }

    /// The precisions `λ_j` (the inverse variances).
    pub fn precision(&self) -> &[f64] {
        &self.precision
    }

    /// `-d/2 ln 2π + ½ Σ_j ln λ_j`.
    #[inline(always)]
    pub fn ln_normaliser(&self) -> f64 {
        self.ln_norm
    }
}

/// Raw moments of a set of points for a [`Diagonal`] kernel, in its centred frame: the count,
/// `Σ y_j` and `Σ y_j²`. One heap buffer of `2d` values.
#[derive(Clone, Debug, PartialEq)]
pub struct DiagMoments {
    n: usize,
    buf: Vec<f64>,
}

impl DiagMoments {
    /// Number of points summarised.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether no point is summarised.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

impl Diagonal {
    /// Draws, per dimension, `λ_j ~ Gamma(ν_n/2, rate ψ_{n,j}/2)` and
    /// `μ_j | λ_j ~ N(ξ_{n,j}, 1/(r_n λ_j))` given `n`, the centred means and `ψ_{n,j}`.
    /// Cost: O(d) draws.
    fn draw_diag<R: Rng + ?Sized>(
        &self,
        n: f64,
        mean: &[f64],
        psi_n: &[f64],
        rng: &mut R,
        out: &mut DiagParam,
    ) -> Result<()> {
        let d = self.dim();
        let (r_n, nu_n) = (self.hyper().r() + n, self.hyper().nu() + n);
        let shrink = n / r_n;
        out.mu.resize(d, 0.0);
        out.precision.resize(d, 0.0);
        let mut ln_det = 0.0;
        for j in 0..d {
            let p = psi_n[j];
            if !(p > 0.0 && p.is_finite()) {
                return Err(Error::Numerical(format!(
                    "the posterior scale psi_n of dimension {j} of a cluster is {p}"
                )));
            }
            // λ = 2 G / ψ_n with G ~ Gamma(ν_n/2, 1), drawn in log space.
            let ln_lambda = ln_gamma_variate(0.5 * nu_n, rng)? + std::f64::consts::LN_2 - p.ln();
            let lambda = ln_lambda.exp();
            if !(lambda > 0.0 && lambda.is_finite()) {
                return Err(Error::Numerical(format!(
                    "a drawn precision of dimension {j} is {lambda}"
                )));
            }
            let z: f64 = StandardNormal.sample(rng);
            out.precision[j] = lambda;
            out.mu[j] = shrink * mean[j] + z / (r_n * lambda).sqrt();
            ln_det += ln_lambda;
        }
        out.ln_norm = -0.5 * d as f64 * (2.0 * std::f64::consts::PI).ln() + 0.5 * ln_det;
        Ok(())
    }

    /// The means `μ` of `theta` in the data's original coordinates. Cost: O(d).
    pub fn param_mean(&self, theta: &DiagParam) -> Vec<f64> {
        theta
            .mu
            .iter()
            .zip(self.hyper().xi())
            .map(|(m, x)| m + x)
            .collect()
    }
}

impl ParametricKernel for Diagonal {
    type Param = DiagParam;
    type Moments = DiagMoments;

    fn new_param(&self) -> DiagParam {
        let d = self.dim();
        DiagParam {
            mu: vec![0.0; d],
            precision: vec![1.0; d],
            ln_norm: 0.0,
        }
    }

    /// Per dimension, the 1-D Normal-Wishart draw: `λ_j ~ Gamma(ν_n/2, rate ψ_{n,j}/2)`
    /// (the 1-D `W(ν_n, 1/ψ_{n,j})`), then `μ_j | λ_j ~ N(ξ_{n,j}, 1/(r_n λ_j))`. Cost: O(d)
    /// draws, no allocation once `out` has its size. Errors only if a draw is not finite.
    fn sample_posterior<R: Rng + ?Sized>(
        &self,
        s: &DiagStat,
        rng: &mut R,
        out: &mut DiagParam,
    ) -> Result<()> {
        self.draw_diag(s.len() as f64, s.mean(), s.psi_n(), rng, out)
    }

    /// `n`, `Σ y`, `Σ y²` start at zero.
    fn new_moments(&self) -> DiagMoments {
        DiagMoments {
            n: 0,
            buf: vec![0.0; 2 * self.dim()],
        }
    }

    /// Cost: 2d multiply-adds, no allocation.
    #[inline]
    fn moments_add(&self, m: &mut DiagMoments, i: usize) {
        let d = self.dim();
        let (sum, squares) = m.buf.split_at_mut(d);
        for ((s, q), &y) in sum.iter_mut().zip(squares).zip(self.centred_point(i)) {
            *s += y;
            *q += y * y;
        }
        m.n += 1;
    }

    fn moments_merge(&self, a: &mut DiagMoments, b: &DiagMoments) {
        a.n += b.n;
        for (x, y) in a.buf.iter_mut().zip(&b.buf) {
            *x += y;
        }
    }

    fn moments_count(&self, m: &DiagMoments) -> usize {
        m.n
    }

    /// `ψ_{n,j} = ψ_j + Σ y_j² - (Σ y_j)²/(r + n)` (the statistic's `ψ_j + M₂ⱼ + (r n/(r+n))
    /// x̄_j²` from raw moments), then the draw of [`ParametricKernel::sample_posterior`].
    /// Cost: O(d) draws and one O(d) allocation.
    fn sample_moments<R: Rng + ?Sized>(
        &self,
        m: &DiagMoments,
        rng: &mut R,
        out: &mut DiagParam,
    ) -> Result<()> {
        let d = self.dim();
        let n = m.n as f64;
        let (sum, squares) = m.buf.split_at(d);
        let rn = self.hyper().r() + n;
        let mut mean = vec![0.0; 2 * d];
        let (mean, psi_n) = mean.split_at_mut(d);
        for j in 0..d {
            mean[j] = if m.n == 0 { 0.0 } else { sum[j] / n };
            psi_n[j] = self.hyper().psi()[j] + squares[j] - sum[j] * sum[j] / rn;
        }
        self.draw_diag(n, mean, psi_n, rng, out)
    }

    /// `-d/2 ln 2π + ½ Σ ln λ_j - ½ Σ λ_j (y_j - μ_j)²` on the centred point. Cost: O(d), no
    /// allocation.
    #[inline]
    fn ln_f(&self, i: usize, theta: &DiagParam) -> f64 {
        let y = self.centred_point(i);
        let q: f64 = y
            .iter()
            .zip(&theta.mu)
            .zip(&theta.precision)
            .map(|((&y, &m), &l)| l * (y - m) * (y - m))
            .sum();
        theta.ln_norm - 0.5 * q
    }

    /// `Σ_j [ln N(μ_j | ξ_{n,j}, 1/(r_n λ_j)) + ln Gamma(λ_j | ν_n/2, ψ_{n,j}/2)]`. Cost: O(d).
    fn ln_posterior_density(&self, s: &DiagStat, theta: &DiagParam) -> f64 {
        let n = s.len() as f64;
        let (r_n, nu_n) = (self.hyper().r() + n, self.hyper().nu() + n);
        let shrink = n / r_n;
        let half_ln_2pi = 0.5 * (2.0 * std::f64::consts::PI).ln();
        let gamma_norm = ln_gamma(0.5 * nu_n);
        let mut total = 0.0;
        for j in 0..self.dim() {
            let (lambda, mu, p) = (theta.precision[j], theta.mu[j], s.psi_n()[j]);
            let e = mu - shrink * s.mean()[j];
            let ln_normal = -half_ln_2pi + 0.5 * (r_n * lambda).ln() - 0.5 * r_n * lambda * e * e;
            let ln_gamma_density = 0.5 * nu_n * (0.5 * p).ln() - gamma_norm
                + (0.5 * nu_n - 1.0) * lambda.ln()
                - 0.5 * p * lambda;
            total += ln_normal + ln_gamma_density;
        }
        total
    }
}

// ---------------------------------------------------------------------------------------------
// Multinomial-Dirichlet.

/// A topic: log word probabilities `ln φ_w` over the whole vocabulary (they sum to one in
/// linear scale).
#[derive(Clone, Debug, PartialEq)]
pub struct MdParam {
    ln_phi: Vec<f64>,
}

impl MdParam {
    /// `ln φ_w` for every word id `w < V`.
    pub fn ln_phi(&self) -> &[f64] {
        &self.ln_phi
    }
}

impl ParametricKernel for MultinomialDirichlet {
    type Param = MdParam;
    /// The statistic itself: a document's word counts are already what the draw needs.
    type Moments = MdStat;

    fn new_moments(&self) -> MdStat {
        self.empty_stat()
    }

    fn moments_add(&self, m: &mut MdStat, i: usize) {
        self.add(m, i);
    }

    fn moments_merge(&self, a: &mut MdStat, b: &MdStat) {
        self.merge(a, b);
    }

    fn moments_count(&self, m: &MdStat) -> usize {
        m.len()
    }

    fn sample_moments<R: Rng + ?Sized>(
        &self,
        m: &MdStat,
        rng: &mut R,
        out: &mut MdParam,
    ) -> Result<()> {
        self.sample_posterior(m, rng, out)
    }

    fn new_param(&self) -> MdParam {
        MdParam {
            ln_phi: vec![0.0; self.hyper().vocab()],
        }
    }

    /// `φ ~ Dir(β + C_1, …, β + C_V)` (MATH §2.2) as normalised Gamma variates drawn in log
    /// space ([`ln_gamma_variate`]), so a tiny `β` cannot underflow a word to probability
    /// zero. Cost: O(V) Gamma draws.
    fn sample_posterior<R: Rng + ?Sized>(
        &self,
        s: &Self::Stat,
        rng: &mut R,
        out: &mut MdParam,
    ) -> Result<()> {
        let v = self.hyper().vocab();
        let beta = self.hyper().beta();
        out.ln_phi.resize(v, 0.0);
        let mut words = s.words().iter().peekable();
        for (w, slot) in out.ln_phi.iter_mut().enumerate() {
            let mut a = beta;
            if let Some(&&(id, c)) = words.peek() {
                if id as usize == w {
                    a += f64::from(c);
                    words.next();
                }
            }
            *slot = ln_gamma_variate(a, rng)?;
        }
        let total = crate::math::log_sum_exp(&out.ln_phi);
        for x in &mut out.ln_phi {
            *x -= total;
        }
        Ok(())
    }

    /// `ln [N_i! / Π_w y_iw!] + Σ_w y_iw ln φ_w` over the document's non-zero words.
    /// Cost: O(nnz of the document), no allocation.
    #[inline]
    fn ln_f(&self, i: usize, theta: &MdParam) -> f64 {
        let (ids, counts) = self.data().row(i);
        let mut acc = self.doc_ln_multinomial_coef(i);
        for (&w, &c) in ids.iter().zip(counts) {
            acc += f64::from(c) * theta.ln_phi[w as usize];
        }
        acc
    }

    /// `ln Γ(Vβ + N_S) - Σ_w ln Γ(β + C_w) + Σ_w (β + C_w - 1) ln φ_w`, with the sums over
    /// zero counts folded into `V ln Γ(β)` and `(β - 1) Σ_w ln φ_w`. Cost: O(V).
    fn ln_posterior_density(&self, s: &Self::Stat, theta: &MdParam) -> f64 {
        let v = self.hyper().vocab() as f64;
        let beta = self.hyper().beta();
        let sum_ln_phi: f64 = theta.ln_phi.iter().sum();
        let counts: f64 = s
            .words()
            .iter()
            .map(|&(w, c)| f64::from(c) * theta.ln_phi[w as usize])
            .sum();
        ln_gamma(v * beta + s.total() as f64) - v * ln_gamma(beta) - s.ln_word_term()
            + (beta - 1.0) * sum_ln_phi
            + counts
    }
}
