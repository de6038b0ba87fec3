//! Weighted statistics of the diagonal kernel for SVA (the per-dimension 1-D Normal-Wishart
//! of [`crate::kernel::diagonal`] with a real-valued count, MATH §6.5).
//!
//! A component that has absorbed points `x_i` with weights `ρ_i` (total `w = Σ ρ_i`) has, per
//! dimension j, `r_w = r + w`, `ν_w = ν + w`, `ξ_{w,j} = w x̄_j / r_w` and
//! `ψ_{w,j} = ψ_j + M₂ⱼ + (r w / r_w) x̄_j²`, in coordinates centred at ξ, with `x̄` the
//! weighted mean and `M₂ⱼ = Σ ρ_i (x_ij - x̄_j)²` the weighted sum of squares: the kernel's
//! formulas with real n, every `ln Γ` an accurate evaluation at a real argument.

use crate::data::DenseData;
use crate::error::{Error, Result};
use crate::kernel::diagonal::ln_product;
use crate::kernel::Diagonal;
use crate::kernel::SvaKernel;
use crate::math::ln_gamma;

/// A weighted diagonal statistic with its caches: the weight `w`, per dimension the weighted
/// mean, sum of squares, `ψ_{w,j}`, the predictive's centre `ξ_{w,j}` and weight
/// `r_w/(r_w+1) / ψ_{w,j}`, and `Σ_j ln ψ_{w,j}`, `pc(w) - ½ Σ_j ln ψ_{w,j}`, `(ν_w + 1)/2`.
#[derive(Clone, Debug)]
pub struct SoftDiag {
    w: f64,
    ln_psi_w: f64,
    pred_offset: f64,
    pred_power: f64,
    mean: Vec<f64>,
    m2: Vec<f64>,
    psi_w: Vec<f64>,
    centre: Vec<f64>,
    weight: Vec<f64>,
}

impl SoftDiag {
    /// Total weight absorbed.
    pub fn weight(&self) -> f64 {
        self.w
    }

    /// Weighted mean, centred at ξ (zero when empty).
    pub fn mean(&self) -> &[f64] {
        &self.mean
    }

    /// Weighted centred sums of squares `M₂ⱼ`.
    pub fn sum_squares(&self) -> &[f64] {
        &self.m2
    }
}

/// The posterior of one component: per dimension a 1-D Normal-Wishart
/// `(μ_j, λ_j) ~ NW(ξ_j + ξ_{w,j}, r_w, ν_w, ψ_{w,j})` in the data's own coordinates, with the
/// mixture weight it carries.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DiagPosterior {
    /// Total responsibility `w_k` absorbed.
    pub weight: f64,
    /// `r_w = r + w`.
    pub r: f64,
    /// `ν_w = ν + w`.
    pub nu: f64,
    /// Posterior means of μ, `ξ + ξ_w`.
    pub mean: Vec<f64>,
    /// `ψ_{w,j}` per dimension.
    pub psi: Vec<f64>,
}

/// `pc(w) = d [-½ ln π - ½ ln(1 + 1/r_w) + ln Γ((ν_w + 1)/2) - ln Γ(ν_w/2)]`.
fn pred_const(k: &Diagonal, w: f64) -> f64 {
    let h = k.hyper();
    let rw = h.r() + w;
    let nu_w = h.nu() + w;
    k.dim() as f64
        * (-0.5 * std::f64::consts::PI.ln() - 0.5 * (1.0 / rw).ln_1p()
            + ln_gamma(0.5 * (nu_w + 1.0))
            - ln_gamma(0.5 * nu_w))
}

/// Recomputes `ψ_w` and the predictive cache from `w`, the means and the sums of squares.
/// Cost: O(d), two `ln Γ`.
fn refresh(k: &Diagonal, s: &mut SoftDiag) {
    let h = k.hyper();
    let rw = h.r() + s.w;
    let prior_weight = h.r() * s.w / rw;
    let shrink = s.w / rw;
    let pred_scale = rw / (rw + 1.0);
    for j in 0..k.dim() {
        let m = s.mean[j];
        let p = h.psi()[j] + s.m2[j] + prior_weight * m * m;
        s.psi_w[j] = p;
        s.centre[j] = shrink * m;
        s.weight[j] = pred_scale / p;
    }
    s.ln_psi_w = ln_product(k.dim(), |j| s.psi_w[j]);
    s.pred_offset = pred_const(k, s.w) - 0.5 * s.ln_psi_w;
    s.pred_power = 0.5 * (h.nu() + s.w + 1.0);
}

impl SvaKernel for Diagonal {
    type Soft = SoftDiag;
    /// The point centred at ξ.
    type Point = Vec<f64>;
    type Posterior = DiagPosterior;

    /// `w = 0`, `ψ_w = ψ`. Cost: O(d).
    fn soft_empty(&self) -> Result<SoftDiag> {
        let d = self.dim();
        let mut s = SoftDiag {
            w: 0.0,
            ln_psi_w: 0.0,
            pred_offset: 0.0,
            pred_power: 0.0,
            mean: vec![0.0; d],
            m2: vec![0.0; d],
            psi_w: vec![0.0; d],
            centre: vec![0.0; d],
            weight: vec![0.0; d],
        };
        refresh(self, &mut s);
        Ok(s)
    }

    fn soft_weight(s: &SoftDiag) -> f64 {
        s.w
    }

    fn new_point(&self) -> Vec<f64> {
        vec![0.0; self.dim()]
    }

    /// The centred point. Cost: O(d).
    fn load_point(&self, i: usize, p: &mut Vec<f64>) {
        p.copy_from_slice(self.centred_point(i));
    }

    /// Errors if the point's dimension differs from the kernel's or a coordinate is not
    /// finite. Cost: O(d).
    fn load_new(&self, data: &DenseData, j: usize, p: &mut Vec<f64>) -> Result<()> {
        let d = self.dim();
        if data.d() != d {
            return Err(Error::DimensionMismatch(format!(
                "new points have dimension {} but the diagonal kernel has dimension {d}",
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

    /// The product of d Student-t densities with real `w`. Cost: O(d), d/8 logarithms.
    #[inline]
    fn soft_ln_predictive(&self, p: &Vec<f64>, s: &SoftDiag) -> f64 {
        let ln_ratio = ln_product(self.dim(), |j| {
            let e = p[j] - s.centre[j];
            1.0 + s.weight[j] * e * e
        });
        s.pred_offset - s.pred_power * ln_ratio
    }

    /// Weighted Welford step of (w, x̄_j, M₂ⱼ), then the cache. Cost: O(d) and two `ln Γ`.
    fn soft_add(&self, s: &mut SoftDiag, p: &Vec<f64>, weight: f64) {
        let w_new = s.w + weight;
        let frac = weight / w_new;
        for ((m, q), &y) in s.mean.iter_mut().zip(&mut s.m2).zip(p) {
            let delta = y - *m;
            *m += delta * frac;
            *q += weight * delta * (y - *m);
        }
        s.w = w_new;
        refresh(self, s);
    }

    /// Chan's weighted merge `M₂ⱼ = M₂ᴬⱼ + M₂ᴮⱼ + (w_A w_B / w)(x̄_Bj - x̄_Aj)²`: the
    /// statistics hold data only, so ψ and r enter once. Cost: O(d).
    fn soft_merge(&self, a: &mut SoftDiag, b: &SoftDiag) {
        if b.w == 0.0 {
            return;
        }
        if a.w == 0.0 {
            a.clone_from(b);
            return;
        }
        let w = a.w + b.w;
        let between = a.w * b.w / w;
        let frac = b.w / w;
        for j in 0..self.dim() {
            let delta = b.mean[j] - a.mean[j];
            a.m2[j] += b.m2[j] + between * delta * delta;
            a.mean[j] += delta * frac;
        }
        a.w = w;
        refresh(self, a);
    }

    /// `-w d/2 ln π - d/2 ln(1 + w/r) + d [ln Γ(ν_w/2) - ln Γ(ν/2)] + ν/2 Σ ln ψ_j
    /// - ν_w/2 Σ ln ψ_{w,j}` with real w. Cost: two `ln Γ`.
    fn soft_ln_marginal(&self, s: &SoftDiag) -> f64 {
        if s.w == 0.0 {
            return 0.0;
        }
        let h = self.hyper();
        let d = self.dim() as f64;
        -0.5 * s.w * d * std::f64::consts::PI.ln() - 0.5 * d * (s.w / h.r()).ln_1p()
            + d * (ln_gamma(0.5 * (h.nu() + s.w)) - ln_gamma(0.5 * h.nu()))
            + 0.5 * h.nu() * self.ln_psi()
            - 0.5 * (h.nu() + s.w) * s.ln_psi_w
    }

    /// Cost: O(d).
    fn posterior(&self, s: &SoftDiag) -> DiagPosterior {
        let h = self.hyper();
        DiagPosterior {
            weight: s.w,
            r: h.r() + s.w,
            nu: h.nu() + s.w,
            mean: s.centre.iter().zip(h.xi()).map(|(c, x)| c + x).collect(),
            psi: s.psi_w.clone(),
        }
    }
}
