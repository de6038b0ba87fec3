//! The real columns of a table as one Normal-Wishart block ([`super::Mixed::full`]), with
//! missing coordinates handled exactly by data augmentation.
//!
//! **Model.** The `d` real columns of a row are one vector `x ~ N(μ, Σ)` with the
//! Normal-Wishart prior of MATH §2.1, independent of the other columns given the cluster.
//!
//! **Missing coordinates, exactly.** Under missing at random the target is
//! `p(Π | X_obs)`. The missing real coordinates `X_mis` are part of the chain's state: the
//! chain's target is `p(Π, X_mis | X_obs) ∝ p(Π) Π_c m(X_c)` with every row complete, whose
//! margin in `Π` is `p(Π | X_obs)`. Every move of every sampler sees complete rows and leaves
//! this joint invariant for fixed `X_mis`; once per sweep [`Block::redraw`] is a Gibbs pass
//! over `X_mis` given `Π`: row by row, the missing coordinates of row `i` are drawn from their
//! exact conditional `p(x_i,mis | x_i,obs, X_{c∖i})`, the conditional of the cluster's
//! multivariate Student-t predictive given the row's observed coordinates (again a Student t,
//! `ν' = ν_t + p_o` degrees of freedom, location `m_m + Σ_mo Σ_oo⁻¹ (x_o - m_o)`, scale
//! `(ν_t + δ²)/(ν_t + p_o) (Σ_mm - Σ_mo Σ_oo⁻¹ Σ_om)` with `δ² = (x_o - m_o)ᵀ Σ_oo⁻¹ (x_o - m_o)`;
//! Kotz and Nadarajah 2004, §1.10). Proven by enumeration in `tests/mixed_block_exact.rs`.
//!
//! **Defaults, unit-equivariant.** `ξ` the columns' observed means, `ν = d +`
//! [`scaled_nu_minus_d`]`(d)`, `r` = [`SCALED_R`], `Ψ = share(d)·(ν - d - 1)·C` as the full
//! kernel's scaled default ([`NwHyper::scaled_from_data`]), with `C = D^{½} R D^{½}`: `D` the
//! columns' observed variances and `R` the correlation matrix of the table with each missing
//! entry at its column's mean. Scaling or shifting a column maps `C` as the data's covariance,
//! so the posterior does not depend on the columns' units; `C` is positive semi-definite by
//! construction (falling back to its diagonal, as the full kernel does, when singular).
//! A missing coordinate starts at its column's mean.
//!
//! Cost of [`Block::redraw`]: O(N d²) for the clusters' moments and, per incomplete row,
//! O(d³) for the conditional, plus one kernel rebuild over the new values, O(N d).

use std::sync::Arc;

use rand::Rng;
use rand_distr::{Distribution, StandardNormal};

use crate::data::table::TableData;
use crate::data::DenseData;
use crate::error::{Error, Result};
use crate::kernel::normal_wishart::{NormalWishart, NwHyper, NwStat};
use crate::kernel::settings::{scaled_nu_minus_d, scaled_share, SCALED_R};
use crate::kernel::{ln_gamma_variate, HyperKernel};
use crate::math::ln_gamma;

/// `ln π`.
const LN_PI: f64 = 1.144_729_885_849_400_2;

/// The real columns of a table as one Normal-Wishart kernel over complete rows: the observed
/// entries and the current values of the missing ones.
#[derive(Clone, Debug)]
pub(super) struct Block {
    /// The Normal-Wishart kernel over the block's rows (missing coordinates at their current
    /// values).
    pub(super) nw: NormalWishart,
    /// The missing coordinates, `(row, coordinate)`, row by row.
    missing: Arc<Vec<(usize, usize)>>,
}

/// A multivariate Student t in the block's coordinates centred at `ξ`: degrees of freedom,
/// location and scale matrix (`d × d`, row-major, full).
struct Student {
    df: f64,
    loc: Vec<f64>,
    scale: Vec<f64>,
}

impl Block {
    /// The block over the real columns `cols` of `table`, with the default hyperparameters
    /// (see the module documentation), `r` and `ν` where given. Errors if a column has fewer
    /// than 2 observed entries or `ν ≤ d + 1`. Cost: O(N d² + d³).
    pub(super) fn new(
        table: &TableData,
        cols: &[usize],
        r: Option<f64>,
        nu: Option<f64>,
    ) -> Result<Self> {
        let (n, d) = (table.n(), cols.len());
        let mut xi = Vec::with_capacity(d);
        let mut var = Vec::with_capacity(d);
        for &j in cols {
            let c = &table.columns()[j];
            let observed: Vec<f64> = c.values.iter().copied().filter(|v| !v.is_nan()).collect();
            if observed.len() < 2 {
                return Err(Error::Usage(format!(
                    "real column \"{}\" has {} observed value(s); its prior's scale needs at \
                     least 2: give it another type (--types) or leave it out",
                    c.name,
                    observed.len()
                )));
            }
            let m = observed.len() as f64;
            let mean = observed.iter().sum::<f64>() / m;
            xi.push(mean);
            var.push(observed.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (m - 1.0));
        }
        // The table with each missing entry at its column's mean, centred.
        let (values, missing) = filled(table, cols, &xi);
        let mut cov = vec![0.0; d * d];
        for row in values.chunks_exact(d) {
            for a in 0..d {
                for b in 0..=a {
                    cov[a * d + b] += (row[a] - xi[a]) * (row[b] - xi[b]);
                }
            }
        }
        let top = var.iter().copied().fold(0.0, f64::max);
        if !(top > 0.0 && top.is_finite()) {
            return Err(Error::Usage(
                "every real column of the table is constant: the full-covariance block has \
                 nothing to model; give `mixed_real` independent"
                    .into(),
            ));
        }
        let floor = NwHyper::VARIANCE_FLOOR * top;
        let sd: Vec<f64> = var.iter().map(|v| v.max(floor).sqrt()).collect();
        let mut c = vec![0.0; d * d];
        for a in 0..d {
            for b in 0..=a {
                let v = if a == b {
                    sd[a] * sd[a]
                } else {
                    let denom = (cov[a * d + a] * cov[b * d + b]).sqrt();
                    let rho = if denom > 0.0 { cov[a * d + b] / denom } else { 0.0 };
                    rho * sd[a] * sd[b]
                };
                c[a * d + b] = v;
                c[b * d + a] = v;
            }
        }
        // Singular (columns that move together): the diagonal stands in, as in the full
        // kernel's default.
        if chol(&c, d).is_none() {
            for a in 0..d {
                for b in 0..d {
                    if a != b {
                        c[a * d + b] = 0.0;
                    }
                }
            }
        }
        let nu = nu.unwrap_or(d as f64 + scaled_nu_minus_d(d));
        if !(nu > d as f64 + 1.0 && nu.is_finite()) {
            return Err(Error::param(
                "nu",
                nu,
                &format!(
                    "a finite number > {} (the number of real columns + 1) for the \
                     full-covariance block",
                    d + 1
                ),
            ));
        }
        let factor = scaled_share(d) * (nu - d as f64 - 1.0);
        let psi = c.iter().map(|v| factor * v).collect();
        let hyper = NwHyper::new(xi, psi, r.unwrap_or(SCALED_R), nu)?;
        Self::over(n, values, missing, hyper)
    }

    /// The block over explicit hyperparameters (`hyper`'s dimension the number of real
    /// columns `cols`), missing coordinates at `ξ`. Cost: O(N d + d³).
    pub(super) fn with_hyper(table: &TableData, cols: &[usize], hyper: NwHyper) -> Result<Self> {
        let (n, d) = (table.n(), cols.len());
        if hyper.dim() != d {
            return Err(Error::DimensionMismatch(format!(
                "a Normal-Wishart block of dimension {} for {d} real columns",
                hyper.dim()
            )));
        }
        let (values, missing) = filled(table, cols, hyper.xi());
        Self::over(n, values, missing, hyper)
    }

    /// The block over `n` rows of filled values (row-major, `hyper`'s dimension per row) whose
    /// entries `missing` (row, coordinate) are latent. Cost: the kernel's construction.
    fn over(n: usize, values: Vec<f64>, missing: Vec<(usize, usize)>, hyper: NwHyper) -> Result<Self> {
        let data = DenseData::new(n, hyper.dim(), values)?;
        Ok(Block {
            nw: NormalWishart::new(Arc::new(data), hyper)?,
            missing: Arc::new(missing),
        })
    }

    /// Dimension.
    pub(super) fn dim(&self) -> usize {
        self.nw.dim()
    }

    /// Whether some coordinate is missing.
    pub(super) fn has_missing(&self) -> bool {
        !self.missing.is_empty()
    }

    /// The current values of the missing coordinates, in the order of `missing`.
    pub(super) fn latent(&self) -> Vec<f64> {
        let x = self.nw.data();
        self.missing.iter().map(|&(i, k)| x.row(i)[k]).collect()
    }

    /// The rows with a missing coordinate, in increasing order.
    pub(super) fn latent_rows(&self) -> Vec<usize> {
        let mut rows: Vec<usize> = self.missing.iter().map(|&(i, _)| i).collect();
        rows.dedup();
        rows
    }

    /// The starting values of the missing coordinates, each at its column's `ξ` (the observed
    /// mean by default), in the order of [`Block::latent`].
    pub(super) fn start_values(&self) -> Vec<f64> {
        let xi = self.nw.hyper().xi();
        self.missing.iter().map(|&(_, k)| xi[k]).collect()
    }

    /// The block with the missing coordinates at `values` (in the order of
    /// [`Block::latent`]). Errors if their number differs or one is not finite.
    pub(super) fn with_latent(&self, values: &[f64]) -> Result<Self> {
        if values.len() != self.missing.len() {
            return Err(Error::DimensionMismatch(format!(
                "{} values for the {} missing real coordinates",
                values.len(),
                self.missing.len()
            )));
        }
        if let Some(v) = values.iter().find(|v| !v.is_finite()) {
            return Err(Error::param("missing coordinate's value", *v, "a finite number"));
        }
        let data = self.nw.data();
        let d = data.d();
        let mut x = data.values().to_vec();
        for (&(i, k), &v) in self.missing.iter().zip(values) {
            x[i * d + k] = v;
        }
        self.with_values(x)
    }

    /// The block over new row-major values, the same hyperparameters. Cost: O(N d).
    fn with_values(&self, x: Vec<f64>) -> Result<Self> {
        let data = self.nw.data();
        Ok(Block {
            nw: self
                .nw
                .with_data(Arc::new(DenseData::new(data.n(), data.d(), x)?))?,
            missing: self.missing.clone(),
        })
    }

    /// The block at the Normal-Wishart values `(s, r, ν)` over the same rows.
    pub(super) fn at(&self, s: f64, r: f64, nu: f64) -> Result<Self> {
        Ok(Block {
            nw: self.nw.with_hyper_values(&[s, r, nu])?,
            missing: self.missing.clone(),
        })
    }

    /// One Gibbs pass over the missing coordinates given the clusters `clusters` (their
    /// members), drawing from `rng`: in each cluster with an incomplete row, row by row in
    /// member order, the row's missing coordinates from their conditional given its observed
    /// ones and the cluster's other rows (see the module documentation). `None` when no
    /// coordinate is missing. Cost: see the module documentation.
    pub(super) fn redraw<R: Rng + ?Sized>(
        &self,
        clusters: &[&[usize]],
        rng: &mut R,
    ) -> Result<Option<Self>> {
        if self.missing.is_empty() {
            return Ok(None);
        }
        let data = self.nw.data();
        let (n, d) = (data.n(), data.d());
        let xi = self.nw.hyper().xi();
        let (mask, incomplete) = self.masks(n, d);
        let mut x = data.values().to_vec();
        let mut y = vec![0.0; d];
        for members in clusters {
            if !members.iter().any(|&i| incomplete[i]) {
                continue;
            }
            let (mut sum, mut outer) = centred_moments(members, &x, xi, &mut y);
            let mut m = members.len();
            for &i in members.iter().filter(|&&i| incomplete[i]) {
                centre(&x[i * d..(i + 1) * d], xi, &mut y);
                accumulate(&mut sum, &mut outer, &y, -1.0);
                m -= 1;
                let t = self.student_of_moments(m, &sum, &outer);
                draw_conditional(&t, &mut y, &mask[i * d..(i + 1) * d], rng)?;
                accumulate(&mut sum, &mut outer, &y, 1.0);
                m += 1;
                for k in 0..d {
                    x[i * d + k] = y[k] + xi[k];
                }
            }
        }
        self.with_values(x).map(Some)
    }

    /// Each missing coordinate's conditional mean and standard deviation given the clusters
    /// `labels` (`0..K`): `passes` Gauss-Seidel passes set every missing coordinate, row by
    /// row, to its conditional mean given its row's observed coordinates and the cluster's
    /// other rows (from the current values), then each gets the mean and standard deviation
    /// of its conditional Student t given the others. As `(row, coordinate, mean, sd)` in the
    /// order of the missing coordinates. Cost: O(passes · (N d² + incomplete rows · d³)).
    pub(super) fn conditional_fill(
        &self,
        labels: &[usize],
        passes: usize,
    ) -> Vec<(usize, usize, f64, f64)> {
        let data = self.nw.data();
        let (n, d) = (data.n(), data.d());
        let xi = self.nw.hyper().xi();
        let (mask, incomplete) = self.masks(n, d);
        let k = labels.iter().max().map_or(0, |m| m + 1);
        let mut members = vec![Vec::new(); k];
        for (i, &l) in labels.iter().enumerate() {
            members[l].push(i);
        }
        let mut x: Vec<f64> = data.values().to_vec();
        let mut y = vec![0.0; d];
        let mut moments = vec![(0.0, 0.0); n * d];
        for pass in 0..=passes {
            for members in &members {
                if !members.iter().any(|&i| incomplete[i]) {
                    continue;
                }
                let (mut sum, mut outer) = centred_moments(members, &x, xi, &mut y);
                let m = members.len();
                for &i in members.iter().filter(|&&i| incomplete[i]) {
                    centre(&x[i * d..(i + 1) * d], xi, &mut y);
                    accumulate(&mut sum, &mut outer, &y, -1.0);
                    let t = self.student_of_moments(m - 1, &sum, &outer);
                    let row_mask = &mask[i * d..(i + 1) * d];
                    let (loc, scale, df) = conditional(&t, &y, row_mask);
                    let q = loc.len();
                    let missing = (0..d).filter(|&c| row_mask[c]);
                    for (a, c) in missing.enumerate() {
                        y[c] = loc[a];
                        if pass == passes {
                            let var = if df > 2.0 {
                                scale[a * q + a] * df / (df - 2.0)
                            } else {
                                f64::INFINITY
                            };
                            moments[i * d + c] = (loc[a] + xi[c], var.sqrt());
                        }
                    }
                    accumulate(&mut sum, &mut outer, &y, 1.0);
                    for c in 0..d {
                        x[i * d + c] = y[c] + xi[c];
                    }
                }
            }
        }
        self.missing
            .iter()
            .map(|&(i, c)| {
                let (m, sd) = moments[i * d + c];
                (i, c, m, sd)
            })
            .collect()
    }

    /// Per coordinate of the `n × d` data whether it is missing, and per row whether any of
    /// its coordinates is. Cost: O(n d).
    fn masks(&self, n: usize, d: usize) -> (Vec<bool>, Vec<bool>) {
        let mut mask = vec![false; n * d];
        let mut incomplete = vec![false; n];
        for &(i, k) in self.missing.iter() {
            mask[i * d + k] = true;
            incomplete[i] = true;
        }
        (mask, incomplete)
    }

    /// The predictive Student t of a cluster of `m` rows with centred sum `sum` and raw
    /// second moments `outer` (`d × d`, full). Cost: O(d²).
    fn student_of_moments(&self, m: usize, sum: &[f64], outer: &[f64]) -> Student {
        let d = self.dim();
        let mf = m as f64;
        let mean: Vec<f64> = if m > 0 {
            sum.iter().map(|s| s / mf).collect()
        } else {
            vec![0.0; d]
        };
        let mut scatter = vec![0.0; d * d];
        if m > 0 {
            for a in 0..d {
                for b in 0..d {
                    scatter[a * d + b] = outer[a * d + b] - mf * mean[a] * mean[b];
                }
            }
        }
        self.student(mf, &mean, &scatter)
    }

    /// The predictive Student t of a cluster with statistic `s`. Cost: O(d²).
    fn student_of_stat(&self, s: &NwStat) -> Student {
        let d = self.dim();
        let tri = s.scatter();
        let mut scatter = vec![0.0; d * d];
        for a in 0..d {
            for b in 0..=a {
                scatter[a * d + b] = tri[b * d + a];
                scatter[b * d + a] = tri[b * d + a];
            }
        }
        self.student(s.len() as f64, s.mean(), &scatter)
    }

    /// MATH §2.1's predictive from the count `n`, the centred mean and the scatter (full):
    /// `ν_n - d + 1` degrees of freedom, location `n x̄ / r_n`, scale
    /// `Ψ_n (r_n + 1) / (r_n (ν_n - d + 1))`.
    fn student(&self, n: f64, mean: &[f64], scatter: &[f64]) -> Student {
        let d = self.dim();
        let h = self.nw.hyper();
        let (r, nu) = (h.r(), h.nu());
        let r_n = r + n;
        let df = nu + n - d as f64 + 1.0;
        let shrink = r * n / r_n;
        let factor = (r_n + 1.0) / (r_n * df);
        let mut scale = vec![0.0; d * d];
        for a in 0..d {
            for b in 0..d {
                let psi_n = h.psi()[a * d + b] + scatter[a * d + b] + shrink * mean[a] * mean[b];
                scale[a * d + b] = factor * psi_n;
            }
        }
        Student {
            df,
            loc: mean.iter().map(|m| n * m / r_n).collect(),
            scale,
        }
    }

    /// `ln p(y_o | cluster)`, the density of the observed coordinates `y_o` of `x` (the
    /// block's coordinates, uncentred, NaN missing) under the predictive of a cluster with
    /// statistic `s`: the Student t's margin in the observed coordinates. 0 when none is
    /// observed. Cost: O(d³).
    pub(super) fn ln_predictive_observed(&self, x: &[f64], s: &NwStat) -> f64 {
        let t = self.student_of_stat(s);
        let xi = self.nw.hyper().xi();
        let o: Vec<usize> = (0..x.len()).filter(|&k| !x[k].is_nan()).collect();
        let p = o.len();
        if p == 0 {
            return 0.0;
        }
        let d = self.dim();
        let sub: Vec<f64> = o
            .iter()
            .flat_map(|&a| o.iter().map(move |&b| (a, b)))
            .map(|(a, b)| t.scale[a * d + b])
            .collect();
        let Some(l) = chol(&sub, p) else {
            return f64::NEG_INFINITY;
        };
        let mut e: Vec<f64> = o.iter().map(|&k| x[k] - xi[k] - t.loc[k]).collect();
        forward(&l, p, &mut e);
        let delta2: f64 = e.iter().map(|v| v * v).sum();
        let ln_det: f64 = 2.0 * (0..p).map(|a| l[a * p + a].ln()).sum::<f64>();
        let pf = p as f64;
        ln_gamma(0.5 * (t.df + pf)) - ln_gamma(0.5 * t.df) - 0.5 * pf * (t.df.ln() + LN_PI)
            - 0.5 * ln_det
            - 0.5 * (t.df + pf) * (delta2 / t.df).ln_1p()
    }

    /// The predictive mean and standard deviation of each missing coordinate of `x` (the
    /// block's coordinates, uncentred, NaN missing) given its observed ones, under the
    /// predictive of a cluster with statistic `s`: the conditional Student t's location and
    /// the square roots of its scale's diagonal times `ν'/(ν' - 2)` (infinite for `ν' ≤ 2`).
    /// Observed coordinates give `(x_k, 0)`. Cost: O(d³).
    pub(super) fn conditional_moments(&self, x: &[f64], s: &NwStat) -> Vec<(f64, f64)> {
        let t = self.student_of_stat(s);
        let xi = self.nw.hyper().xi();
        let mask: Vec<bool> = x.iter().map(|v| v.is_nan()).collect();
        let mut y: Vec<f64> = x.iter().zip(xi).map(|(v, m)| v - m).collect();
        let (loc, scale, df) = conditional(&t, &y, &mask);
        let m: Vec<usize> = (0..x.len()).filter(|&k| mask[k]).collect();
        for (a, &k) in m.iter().enumerate() {
            y[k] = loc[a];
        }
        let q = m.len();
        let mut out: Vec<(f64, f64)> = x.iter().map(|&v| (v, 0.0)).collect();
        for (a, &k) in m.iter().enumerate() {
            let var = if df > 2.0 {
                scale[a * q + a] * df / (df - 2.0)
            } else {
                f64::INFINITY
            };
            out[k] = (y[k] + xi[k], var.sqrt());
        }
        out
    }
}

/// `y = x - ξ`.
fn centre(x: &[f64], xi: &[f64], y: &mut [f64]) {
    for ((y, v), m) in y.iter_mut().zip(x).zip(xi) {
        *y = v - m;
    }
}

/// The raw moments of the rows `members` of `x` (`d` columns, `d = xi.len()`) centred at
/// `xi`: their sum and the sum of their outer products (`d × d`); `y` is scratch of length
/// `d`. Cost: O(|members| d²).
fn centred_moments(members: &[usize], x: &[f64], xi: &[f64], y: &mut [f64]) -> (Vec<f64>, Vec<f64>) {
    let d = xi.len();
    let mut sum = vec![0.0; d];
    let mut outer = vec![0.0; d * d];
    for &i in members {
        centre(&x[i * d..(i + 1) * d], xi, y);
        accumulate(&mut sum, &mut outer, y, 1.0);
    }
    (sum, outer)
}

/// Adds `sign` times `y` to `sum` and `sign · y yᵀ` to `outer`.
fn accumulate(sum: &mut [f64], outer: &mut [f64], y: &[f64], sign: f64) {
    let d = y.len();
    for a in 0..d {
        sum[a] += sign * y[a];
        for b in 0..d {
            outer[a * d + b] += sign * y[a] * y[b];
        }
    }
}

/// The conditional of the missing coordinates (`mask`) of `y` (centred) given the others
/// under `t`: its location and scale (over the missing coordinates in order, `q × q`) and
/// degrees of freedom. Cost: O(d³).
fn conditional(t: &Student, y: &[f64], mask: &[bool]) -> (Vec<f64>, Vec<f64>, f64) {
    let d = y.len();
    let o: Vec<usize> = (0..d).filter(|&k| !mask[k]).collect();
    let m: Vec<usize> = (0..d).filter(|&k| mask[k]).collect();
    let (p, q) = (o.len(), m.len());
    let s = |a: usize, b: usize| t.scale[a * d + b];
    let mut loc: Vec<f64> = m.iter().map(|&k| t.loc[k]).collect();
    let mut scale: Vec<f64> = m
        .iter()
        .flat_map(|&a| m.iter().map(move |&b| (a, b)))
        .map(|(a, b)| s(a, b))
        .collect();
    let mut delta2 = 0.0;
    if p > 0 {
        let sub: Vec<f64> = o
            .iter()
            .flat_map(|&a| o.iter().map(move |&b| (a, b)))
            .map(|(a, b)| s(a, b))
            .collect();
        // The block's scale is positive definite, so its principal submatrices are.
        let l = chol(&sub, p).expect("a principal submatrix of a positive definite matrix");
        // w = L⁻¹ (y_o - m_o), δ² = ‖w‖²; loc += Σ_mo L⁻ᵀ w.
        let mut w: Vec<f64> = o.iter().map(|&k| y[k] - t.loc[k]).collect();
        forward(&l, p, &mut w);
        delta2 = w.iter().map(|v| v * v).sum();
        // Columns of V = L⁻¹ Σ_om, one per missing coordinate.
        let v: Vec<Vec<f64>> = m
            .iter()
            .map(|&b| {
                let mut col: Vec<f64> = o.iter().map(|&a| s(a, b)).collect();
                forward(&l, p, &mut col);
                col
            })
            .collect();
        for a in 0..q {
            loc[a] += v[a].iter().zip(&w).map(|(x, y)| x * y).sum::<f64>();
            for b in 0..q {
                scale[a * q + b] -= v[a].iter().zip(&v[b]).map(|(x, y)| x * y).sum::<f64>();
            }
        }
    }
    let df = t.df + p as f64;
    let factor = (t.df + delta2) / df;
    scale.iter_mut().for_each(|v| *v *= factor);
    (loc, scale, df)
}

/// Draws the missing coordinates (`mask`) of `y` (centred) from their conditional under
/// `t` given the others: `loc + z / √(g/ν')`, `z ~ N(0, scale)`, `g ~ χ²_ν'`. Errors if the
/// conditional's scale is not positive definite.
fn draw_conditional<R: Rng + ?Sized>(
    t: &Student,
    y: &mut [f64],
    mask: &[bool],
    rng: &mut R,
) -> Result<()> {
    let (loc, scale, df) = conditional(t, y, mask);
    let q = loc.len();
    let l = chol(&scale, q).ok_or_else(|| {
        Error::Numerical(
            "the conditional scale of a row's missing real coordinates is not positive \
             definite"
                .into(),
        )
    })?;
    let z: Vec<f64> = (0..q).map(|_| StandardNormal.sample(rng)).collect();
    // g/ν' with g = 2 G, G ~ Gamma(ν'/2, 1).
    let w = (ln_gamma_variate(0.5 * df, rng)? + std::f64::consts::LN_2 - df.ln()).exp();
    let inv = 1.0 / w.sqrt();
    let missing: Vec<usize> = (0..y.len()).filter(|&k| mask[k]).collect();
    for (a, &k) in missing.iter().enumerate() {
        let lz: f64 = (0..=a).map(|b| l[a * q + b] * z[b]).sum();
        y[k] = loc[a] + lz * inv;
    }
    Ok(())
}

/// The lower Cholesky factor (row-major, `a = L Lᵀ`) of the symmetric `d × d` matrix `a`, or
/// `None` when it is not positive definite. Cost: d³/3.
fn chol(a: &[f64], d: usize) -> Option<Vec<f64>> {
    let mut l = vec![0.0; d * d];
    for i in 0..d {
        for j in 0..=i {
            let s: f64 = a[i * d + j] - (0..j).map(|k| l[i * d + k] * l[j * d + k]).sum::<f64>();
            if i == j {
                if !(s > 0.0 && s.is_finite()) {
                    return None;
                }
                l[i * d + i] = s.sqrt();
            } else {
                l[i * d + j] = s / l[j * d + j];
            }
        }
    }
    Some(l)
}

/// Solves `L z = b` in place (`L` lower, row-major). Cost: d²/2.
fn forward(l: &[f64], d: usize, b: &mut [f64]) {
    for i in 0..d {
        let s: f64 = (0..i).map(|k| l[i * d + k] * b[k]).sum();
        b[i] = (b[i] - s) / l[i * d + i];
    }
}


/// The real columns `cols` of `table` as a row-major matrix with each missing entry at its
/// column's `fill` value, and the missing entries as (row, coordinate). Cost: O(N d).
fn filled(table: &TableData, cols: &[usize], fill: &[f64]) -> (Vec<f64>, Vec<(usize, usize)>) {
    let mut values = Vec::with_capacity(table.n() * cols.len());
    let mut missing = Vec::new();
    for i in 0..table.n() {
        for (k, &j) in cols.iter().enumerate() {
            match table.value(i, j) {
                Some(v) => values.push(v),
                None => {
                    missing.push((i, k));
                    values.push(fill[k]);
                }
            }
        }
    }
    (values, missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The conditional of a Student t: its density times the observed margin's is the joint
    /// density (checked at a point, d = 3, one coordinate observed).
    #[test]
    fn conditional_times_margin_is_joint() {
        let t = Student {
            df: 5.5,
            loc: vec![0.3, -0.2, 1.0],
            scale: vec![2.0, 0.6, 0.3, 0.6, 1.5, -0.4, 0.3, -0.4, 1.2],
        };
        let ln_t = |x: &[f64], loc: &[f64], scale: &[f64], df: f64| {
            let p = x.len();
            let l = chol(scale, p).unwrap();
            let mut e: Vec<f64> = x.iter().zip(loc).map(|(a, b)| a - b).collect();
            forward(&l, p, &mut e);
            let q: f64 = e.iter().map(|v| v * v).sum();
            let ln_det: f64 = 2.0 * (0..p).map(|a| l[a * p + a].ln()).sum::<f64>();
            let pf = p as f64;
            ln_gamma(0.5 * (df + pf)) - ln_gamma(0.5 * df) - 0.5 * pf * (df * std::f64::consts::PI).ln()
                - 0.5 * ln_det
                - 0.5 * (df + pf) * (q / df).ln_1p()
        };
        let y = [0.7, -1.1, 2.0];
        let mask = [true, false, true];
        let (loc, scale, df) = conditional(&t, &y, &mask);
        let joint = ln_t(&y, &t.loc, &t.scale, t.df);
        let margin = ln_t(&[y[1]], &[t.loc[1]], &[t.scale[4]], t.df);
        let cond = ln_t(&[y[0], y[2]], &loc, &scale, df);
        assert!((joint - margin - cond).abs() < 1e-12, "{joint} {margin} {cond}");
    }
}
