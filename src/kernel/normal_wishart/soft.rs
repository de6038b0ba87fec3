//! Weighted Normal-Wishart statistics for SVA (MATH §2.1 with a real-valued count, §6.5).
//!
//! A component that has absorbed points `x_j` with weights `ρ_j` (total `w = Σ ρ_j`) has the
//! Normal-Wishart posterior with `r_w = r + w`, `ν_w = ν + w`, `ξ_w = w x̄ / r_w` and
//! `Ψ_w = Ψ + M₂ + (r w / (r + w)) x̄ x̄ᵀ`, in coordinates centred at ξ, where `x̄` is the
//! weighted mean and `M₂ = Σ ρ_j (x_j - x̄)(x_j - x̄)ᵀ` the weighted scatter: the formulas of
//! MATH §2.1 hold with real n, and every `ln Γ` is an accurate evaluation at a real argument
//! (P7: no integer shortcut). Adding `y` with weight ρ is a weighted Welford step and the
//! rank-1 update `Ψ_{w+ρ} = Ψ_w + (ρ r_w / (r_w + ρ)) (y - ξ_w)(y - ξ_w)ᵀ` of the cached
//! Cholesky factor (the conjugate update by ρ copies of y).

use super::sweep::{NwPredictive, NwSweepCache};
use crate::data::DenseData;
use crate::error::{Error, Result};
use crate::kernel::cholesky::{
    cholesky, cholesky_in_place, ln_det, rank1_update, rank1_update_solved, shifted_solve_norm2,
};
use crate::kernel::SvaKernel;
use crate::kernel::{NormalWishart, SweepCache};
use crate::math::{ln_gamma, ln_mv_gamma_ratio};

/// A weighted Normal-Wishart statistic with its caches (see the module documentation).
///
/// Holds the weight `w`, the weighted mean `x̄` and scatter `M₂` (centred at ξ; lower
/// triangle in the column layout of [`crate::kernel::cholesky`]), the lower Cholesky factor
/// of `Ψ_w` with `ln |Ψ_w|`, and the predictive cache `ξ_w`, `1 / L_jj`,
/// `pc(w) - ½ ln |Ψ_w|`, `r_w / (r_w + 1)` and `(ν_w + 1) / 2`.
#[derive(Clone, Debug)]
pub struct SoftNw {
    w: f64,
    ln_det: f64,
    pred_offset: f64,
    pred_scale: f64,
    pred_power: f64,
    mean: Vec<f64>,
    m2: Vec<f64>,
    chol: Vec<f64>,
    centre: Vec<f64>,
    inv_diag: Vec<f64>,
}

impl SoftNw {
    /// Total weight absorbed.
    pub fn weight(&self) -> f64 {
        self.w
    }

    /// Weighted mean, centred at ξ (zero when empty).
    pub fn mean(&self) -> &[f64] {
        &self.mean
    }

    /// Weighted centred scatter `M₂`: entry `(i, j)`, `i ≥ j`, at `j·d + i`.
    pub fn scatter(&self) -> &[f64] {
        &self.m2
    }

    /// Cached `ln |Ψ_w|` (NaN if `Ψ_w` could not be factorised).
    pub fn ln_det_psi(&self) -> f64 {
        self.ln_det
    }
}

/// The weighted predictive has the kernel's form with a real count, so the kernel's sweep
/// cache holds it as it holds a statistic's (no member weights: SVA never takes a point out).
impl NwPredictive for SoftNw {
    fn predictive_cache(&self) -> (&[f64], &[f64], &[f64], [f64; 3]) {
        (
            &self.chol,
            &self.centre,
            &self.inv_diag,
            [self.pred_offset, self.pred_power, self.pred_scale],
        )
    }

    fn member_constants(&self) -> [f64; 3] {
        [f64::NAN; 3]
    }
}

/// The posterior of one component: `(μ, Λ) ~ NW(ξ_w, r_w, ν_w, Ψ_w)` in the data's own
/// coordinates, with the mixture weight it carries.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct NwPosterior {
    /// Total responsibility `w_k` absorbed.
    pub weight: f64,
    /// `r_w = r + w`.
    pub r: f64,
    /// `ν_w = ν + w`.
    pub nu: f64,
    /// Posterior mean of μ, `ξ + ξ_w`.
    pub mean: Vec<f64>,
    /// `Ψ_w`, `d × d` row-major.
    pub psi: Vec<f64>,
}

/// The size-dependent constant of the log predictive for a real weight `w`:
/// `-d/2 ln π - d/2 ln(1 + 1/r_w) + ln Γ((ν_w + 1)/2) - ln Γ((ν_w + 1 - d)/2)` (MATH §2.1).
fn pred_const(k: &NormalWishart, w: f64) -> f64 {
    let h = k.hyper();
    let d = h.dim() as f64;
    let rw = h.r() + w;
    let nu_w = h.nu() + w;
    -0.5 * d * std::f64::consts::PI.ln() - 0.5 * d * (1.0 / rw).ln_1p()
        + ln_gamma(0.5 * (nu_w + 1.0))
        - ln_gamma(0.5 * (nu_w + 1.0 - d))
}

/// Recomputes the predictive cache from `w`, `x̄`, the factor and `ln |Ψ_w|`. Cost: O(d)
/// with two `ln Γ` evaluations.
fn refresh(k: &NormalWishart, s: &mut SoftNw) {
    let h = k.hyper();
    let d = h.dim();
    let rw = h.r() + s.w;
    let shrink = s.w / rw;
    s.pred_offset = pred_const(k, s.w) - 0.5 * s.ln_det;
    s.pred_scale = rw / (rw + 1.0);
    s.pred_power = 0.5 * (h.nu() + s.w + 1.0);
    for (c, &m) in s.centre.iter_mut().zip(&s.mean) {
        *c = shrink * m;
    }
    for (j, v) in s.inv_diag.iter_mut().enumerate() {
        *v = 1.0 / s.chol[j * d + j];
    }
}

/// The rank-1 update of the factor of `Ψ_w` by `v` for the dimension `D`, returning the
/// change of `ln |Ψ_w|`: `p = L⁻¹v` by forward substitution with the cached reciprocal
/// pivots, then the product-form update [`rank1_update_solved`], whose square roots do not
/// wait on one another (the rotations of [`rank1_update`] are one dependent chain of square
/// roots and divisions); the determinant grows by `1 + ‖p‖²` (matrix determinant lemma).
/// Cost: `D²` multiply-adds, `D` square roots and divisions, one `ln_1p`.
fn update_solved<const D: usize>(s: &mut SoftNw, v: &[f64]) -> f64 {
    let v: &[f64; D] = v.try_into().expect("D values");
    let chol = &s.chol[..D * D];
    let mut p = [0.0f64; D];
    let mut p2 = 0.0;
    for j in 0..D {
        let mut a = v[j];
        for k in 0..j {
            a -= chol[k * D + j] * p[k];
        }
        p[j] = a * s.inv_diag[j];
        p2 += p[j] * p[j];
    }
    rank1_update_solved::<D>(&mut s.chol, &p, v);
    p2.ln_1p()
}

/// Rebuilds the factor of `Ψ_w = Ψ + M₂ + (r w/(r + w)) x̄ x̄ᵀ` from the statistics
/// (NaN if it is not numerically positive definite). Cost: O(d³).
fn refactor(k: &NormalWishart, s: &mut SoftNw) {
    let h = k.hyper();
    let d = h.dim();
    let c = h.r() * s.w / (h.r() + s.w);
    let psi = h.psi();
    for j in 0..d {
        for i in j..d {
            let idx = j * d + i;
            s.chol[idx] = psi[idx] + s.m2[idx] + c * s.mean[i] * s.mean[j];
        }
        for i in 0..j {
            s.chol[j * d + i] = 0.0;
        }
    }
    s.ln_det = match cholesky_in_place(&mut s.chol, d, "Psi_w") {
        Ok(()) => ln_det(&s.chol, d),
        Err(_) => {
            s.chol.fill(f64::NAN);
            f64::NAN
        }
    };
    refresh(k, s);
}

impl SvaKernel for NormalWishart {
    type Soft = SoftNw;
    /// The point centred at ξ.
    type Point = Vec<f64>;
    type Posterior = NwPosterior;

    /// `w = 0`, factor of Ψ. Cost: O(d³).
    fn soft_empty(&self) -> Result<SoftNw> {
        let d = self.dim();
        let chol = cholesky(self.hyper().psi(), d, "the Normal-Wishart scale matrix psi")?;
        let mut s = SoftNw {
            w: 0.0,
            ln_det: ln_det(&chol, d),
            pred_offset: 0.0,
            pred_scale: 0.0,
            pred_power: 0.0,
            mean: vec![0.0; d],
            m2: vec![0.0; d * d],
            chol,
            centre: vec![0.0; d],
            inv_diag: vec![0.0; d],
        };
        refresh(self, &mut s);
        Ok(s)
    }

    fn soft_weight(s: &SoftNw) -> f64 {
        s.w
    }

    fn new_point(&self) -> Vec<f64> {
        vec![0.0; self.dim()]
    }

    /// Centres the point at ξ. Cost: O(d).
    fn load_point(&self, i: usize, p: &mut Vec<f64>) {
        for ((y, v), m) in p.iter_mut().zip(self.data().row(i)).zip(self.hyper().xi()) {
            *y = v - m;
        }
    }

    /// Errors if the point's dimension differs from the kernel's or a coordinate is not
    /// finite. Cost: O(d).
    fn load_new(&self, data: &DenseData, j: usize, p: &mut Vec<f64>) -> Result<()> {
        let d = self.dim();
        if data.d() != d {
            return Err(Error::DimensionMismatch(format!(
                "new points have dimension {} but the Normal-Wishart kernel has dimension {d}",
                data.d()
            )));
        }
        let row = data.row(j);
        if let Some(c) = row.iter().position(|v| !v.is_finite()) {
            return Err(Error::param(
                &format!("coordinate {} of new point {}", c + 1, j + 1),
                row[c],
                "a finite number",
            ));
        }
        for ((y, v), m) in p.iter_mut().zip(row).zip(self.hyper().xi()) {
            *y = v - m;
        }
        Ok(())
    }

    /// Student-t predictive with real `w` by the determinant lemma (MATH §2.1):
    /// `pc(w) - ½ ln|Ψ_w| - (ν_w + 1)/2 · ln(1 + r_w/(r_w + 1) ‖L_w⁻¹(y - ξ_w)‖²)`.
    /// Cost: one O(d²) forward substitution and one logarithm, no allocation.
    #[inline]
    fn soft_ln_predictive(&self, p: &Vec<f64>, s: &SoftNw) -> f64 {
        let q = shifted_solve_norm2(&s.chol, &s.inv_diag, self.dim(), p, &s.centre);
        s.pred_offset - s.pred_power * (s.pred_scale * q).ln_1p()
    }

    /// Weighted Welford step of (w, x̄, M₂) and the rank-1 update of the factor by
    /// `√(ρ r_w/(r_w + ρ)) (y - ξ_w)` (the product form for d ≤ 8, `update_solved`). Cost:
    /// O(d²) and two `ln Γ`; one O(d) scratch vector, on the stack for d ≤ 8.
    fn soft_add(&self, s: &mut SoftNw, p: &Vec<f64>, weight: f64) {
        let d = self.dim();
        let rw = self.hyper().r() + s.w;
        let scale = (weight * rw / (rw + weight)).sqrt();
        // On the stack for the unrolled dimensions (a larger zeroed array costs a memset per
        // call, which at d ≤ 8 is comparable to the update).
        let mut buf = [0.0f64; 8];
        let mut heap = Vec::new();
        let v: &mut [f64] = if d <= buf.len() {
            &mut buf[..d]
        } else {
            heap.resize(d, 0.0);
            &mut heap
        };
        for ((v, &y), &c) in v.iter_mut().zip(p).zip(&s.centre) {
            *v = scale * (y - c);
        }
        let delta = match d {
            1 => update_solved::<1>(s, v),
            2 => update_solved::<2>(s, v),
            3 => update_solved::<3>(s, v),
            4 => update_solved::<4>(s, v),
            5 => update_solved::<5>(s, v),
            6 => update_solved::<6>(s, v),
            7 => update_solved::<7>(s, v),
            8 => update_solved::<8>(s, v),
            _ => rank1_update(&mut s.chol, d, v),
        };
        let w_new = s.w + weight;
        let between = weight * s.w / w_new;
        for j in 0..d {
            let dj = between * (p[j] - s.mean[j]);
            let col = &mut s.m2[j * d + j..(j + 1) * d];
            for ((m, &y), &mean) in col.iter_mut().zip(&p[j..]).zip(&s.mean[j..]) {
                *m += (y - mean) * dj;
            }
        }
        let frac = weight / w_new;
        for (m, &y) in s.mean.iter_mut().zip(p) {
            *m += (y - *m) * frac;
        }
        s.w = w_new;
        s.ln_det += delta;
        refresh(self, s);
    }

    /// Chan's weighted merge `M₂ = M₂ᴬ + M₂ᴮ + (w_A w_B / w)(x̄_B - x̄_A)(x̄_B - x̄_A)ᵀ` of the
    /// data parts, then one factorisation of `Ψ + M₂ + (r w/(r + w)) x̄ x̄ᵀ`: the statistics
    /// hold data only, so Ψ and r enter once. Cost: O(d³).
    fn soft_merge(&self, a: &mut SoftNw, b: &SoftNw) {
        if b.w == 0.0 {
            return;
        }
        if a.w == 0.0 {
            a.clone_from(b);
            return;
        }
        let d = self.dim();
        let w = a.w + b.w;
        let c = a.w * b.w / w;
        for j in 0..d {
            let dj = c * (b.mean[j] - a.mean[j]);
            for i in j..d {
                let idx = j * d + i;
                a.m2[idx] += b.m2[idx] + (b.mean[i] - a.mean[i]) * dj;
            }
        }
        let frac = b.w / w;
        for (m, &mb) in a.mean.iter_mut().zip(&b.mean) {
            *m += (mb - *m) * frac;
        }
        a.w = w;
        refactor(self, a);
    }

    /// `-w d/2 ln π + d/2 ln(r/r_w) + ν/2 ln|Ψ| - ν_w/2 ln|Ψ_w| + ln Γ_d(ν_w/2) - ln Γ_d(ν/2)`
    /// with real w (MATH §2.1). Cost: 2d `ln Γ`.
    fn soft_ln_marginal(&self, s: &SoftNw) -> f64 {
        if s.w == 0.0 {
            return 0.0;
        }
        let h = self.hyper();
        let d = h.dim() as f64;
        -0.5 * s.w * d * std::f64::consts::PI.ln() - 0.5 * d * (s.w / h.r()).ln_1p()
            + 0.5 * h.nu() * self.ln_det_psi()
            - 0.5 * (h.nu() + s.w) * s.ln_det
            + ln_mv_gamma_ratio(h.dim(), 0.5 * (h.nu() + s.w), 0.5 * h.nu())
    }

    /// Cost: O(d³) (Ψ_w rebuilt from its factor).
    fn posterior(&self, s: &SoftNw) -> NwPosterior {
        let h = self.hyper();
        let d = h.dim();
        let mut psi = vec![0.0; d * d];
        for i in 0..d {
            for j in 0..=i {
                let v: f64 = (0..=j).map(|k| s.chol[k * d + i] * s.chol[k * d + j]).sum();
                psi[i * d + j] = v;
                psi[j * d + i] = v;
            }
        }
        NwPosterior {
            weight: s.w,
            r: h.r() + s.w,
            nu: h.nu() + s.w,
            mean: s.centre.iter().zip(h.xi()).map(|(c, x)| c + x).collect(),
            psi,
        }
    }

    /// The kernel's own sweep cache, which holds soft statistics as it holds the kernel's.
    fn soft_sweep_cache(&self) -> Option<Box<dyn SweepCache<SoftNw>>> {
        Some(Box::new(NwSweepCache::new(self)))
    }
}
