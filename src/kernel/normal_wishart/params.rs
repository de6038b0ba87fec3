//! Explicit component parameters of the Normal-Wishart kernel ([`super::super::params`]).

use rand::Rng;
use rand_distr::{ChiSquared, Distribution, StandardNormal};

use super::NormalWishart;
use crate::error::{Error, Result};
use crate::kernel::cholesky::cholesky_in_place;
use crate::kernel::sweep_cache::BLOCK;
use crate::kernel::{ParametricKernel, PointIndex};
use crate::math::ln_gamma;

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
    /// vectors of lanes for [`super::lanes::weigh_block`]. Cost: one likelihood per
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
        super::lanes::weigh_block(y, offsets, &params[..offsets.len()], out);
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

    /// Cost: d + d(d+1)/2 multiply-adds, no allocation; the loops unrolled for d ≤ 8.
    #[inline]
    fn moments_add(&self, m: &mut NwMoments, i: usize) {
        let y = self.centred_point(i);
        match self.dim() {
            1 => moments_add_dim(m, y, 1),
            2 => moments_add_dim(m, y, 2),
            3 => moments_add_dim(m, y, 3),
            4 => moments_add_dim(m, y, 4),
            5 => moments_add_dim(m, y, 5),
            6 => moments_add_dim(m, y, 6),
            7 => moments_add_dim(m, y, 7),
            8 => moments_add_dim(m, y, 8),
            d => moments_add_dim(m, y, d),
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

    /// The points in vector lanes (the kernel's `lanes` module): their centred coordinates gathered
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
        self.weigh_lanes(|b| first + if b < count { b } else { 0 }, offsets, params, out);
    }

    /// A prefetch of the point's coordinates (`NormalWishart::prefetch_point`).
    #[inline(always)]
    fn prefetch(&self, i: usize) {
        self.prefetch_point(i);
    }

    fn ln_f_points<I: PointIndex>(
        &self,
        points: &[I],
        offsets: &[f64],
        params: &[NwParam],
        out: &mut Vec<f64>,
    ) {
        debug_assert!((1..=BLOCK).contains(&points.len()) && params.len() >= offsets.len());
        let count = points.len();
        self.weigh_lanes(
            |b| points[if b < count { b } else { 0 }].index(),
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

/// `Σ y += y`, `Σ y yᵀ += y yᵀ` (lower triangle) for the centred point `y` of dimension `d`
/// ([`ParametricKernel::moments_add`]), in one order for every `d`; a constant `d` unrolls
/// the loops.
#[inline(always)]
fn moments_add_dim(m: &mut NwMoments, y: &[f64], d: usize) {
    let (sum, outer) = m.buf.split_at_mut(d);
    for j in 0..d {
        sum[j] += y[j];
        let yj = y[j];
        let col = &mut outer[j * d + j..(j + 1) * d];
        for (o, &yi) in col.iter_mut().zip(&y[j..]) {
            *o += yi * yj;
        }
    }
}
