//! Dense lower Cholesky factors on flat slices: factorisation, O(d²) rank-1 update and
//! downdate, forward substitution and log-determinant (MATH §2.1 "Rank-1 maintenance", P3, P6).
//!
//! Dimensions here are small (2..100) and these routines sit in the samplers' inner loops, so
//! they are hand-written loops over flat `f64` slices with no allocation.
//!
//! # Layout
//!
//! A `d × d` matrix is a flat slice of length `d²`. A lower-triangular factor `L` is stored
//! **column by column**: entry `(i, j)` with `i ≥ j` sits at index `j·d + i`, and the entries
//! above the diagonal are zero. Every loop of the rank-1 algorithms then walks one column,
//! which is contiguous. (Equivalently the buffer holds the upper factor `Lᵀ` in row-major
//! order.) [`cholesky_in_place`] reads only the entries `j·d + i` with `i ≥ j` of its input,
//! which for a symmetric matrix are the same numbers in row-major and column-major order.

use super::scratch::{out_of_line, with_scratch};
use crate::error::{Error, Result};

/// Smallest admissible `det(LLᵀ - xxᵀ) / det(LLᵀ)` in [`rank1_downdate`].
///
/// Below it the downdated matrix is, in floating point, indistinguishable from a singular one
/// (the result would keep fewer than about six significant digits on its smallest direction),
/// so the downdate reports failure and the caller refactorises from its statistics.
pub const DOWNDATE_MIN_DET_RATIO: f64 = 1e-10;

/// Overwrites the symmetric matrix `a` (`d × d`, see the module's layout note) with its lower
/// Cholesky factor `L`, `a = LLᵀ`, zeroing the entries above the diagonal.
///
/// Algorithm: left-looking column Cholesky (Golub & Van Loan, Alg. 4.2.1), column-oriented so
/// that every inner loop is contiguous. Cost: d³/3 multiply-adds, d square roots.
///
/// Errors with [`Error::NotPositiveDefinite`] naming `name` if a pivot is not strictly
/// positive or not finite (including NaN input); `a` is then left partially overwritten.
/// Errors with [`Error::DimensionMismatch`] if `a.len() != d²`.
pub fn cholesky_in_place(a: &mut [f64], d: usize, name: &str) -> Result<()> {
    check_len(a.len(), d, name)?;
    factor_in_place(a, d).map_err(|(j, pivot)| {
        Error::NotPositiveDefinite(format!("{name} (pivot {} of {d} is {pivot:e})", j + 1))
    })
}

/// The factorisation of [`cholesky_in_place`] without its checks and report, for callers
/// that pass `a.len() == d²` (with `d` a constant in the kernels' unrolled hot paths) and
/// handle a failure themselves: `Err((j, pivot))` names the first pivot that is not strictly
/// positive and finite, and `a` is then partially overwritten.
#[inline(always)]
pub(crate) fn factor_in_place(a: &mut [f64], d: usize) -> std::result::Result<(), (usize, f64)> {
    for j in 0..d {
        let (done, rest) = a.split_at_mut(j * d);
        let col_j = &mut rest[..d];
        for k in 0..j {
            let col_k = &done[k * d..(k + 1) * d];
            let ljk = col_k[j];
            if ljk != 0.0 {
                for (x, &l) in col_j[j..].iter_mut().zip(&col_k[j..]) {
                    *x -= ljk * l;
                }
            }
        }
        let pivot = col_j[j];
        if !(pivot > 0.0 && pivot.is_finite()) {
            return Err((j, pivot));
        }
        let ljj = pivot.sqrt();
        let inv = 1.0 / ljj;
        col_j[..j].fill(0.0);
        col_j[j] = ljj;
        for x in &mut col_j[j + 1..] {
            *x *= inv;
        }
    }
    Ok(())
}

/// The lower Cholesky factor of the symmetric positive definite `d × d` matrix `a` in a new
/// buffer; see [`cholesky_in_place`] for the algorithm, cost and errors.
pub fn cholesky(a: &[f64], d: usize, name: &str) -> Result<Vec<f64>> {
    let mut l = a.to_vec();
    cholesky_in_place(&mut l, d, name)?;
    Ok(l)
}

/// `ln det(LLᵀ) = 2 Σ_i ln L_ii` (MATH P3), taken as `2 ln Π_i L_ii` with one logarithm
/// while the product of the pivots is a normal positive number (the sum of the logarithms
/// otherwise, which never overflows). Cost: d multiplications and one logarithm.
#[inline]
pub fn ln_det(l: &[f64], d: usize) -> f64 {
    let product: f64 = (0..d).map(|i| l[i * d + i]).product();
    if product.is_normal() && product > 0.0 {
        2.0 * product.ln()
    } else {
        2.0 * (0..d).map(|i| l[i * d + i].ln()).sum::<f64>()
    }
}

/// Solves `L z = b` in place (`b` becomes `z`) and returns `‖z‖²`.
///
/// Column-oriented forward substitution: each solved `z_j` is swept out of the rest of the
/// right-hand side along column `j` of `L`, a contiguous run. For d ≤ 8 a copy specialised to
/// the dimension is used: fully unrolled, the right-hand side stays in registers instead of
/// making a store-to-load round trip per column, which roughly halves the latency of this
/// serial computation. Cost: d²/2 multiply-adds and d reciprocals (off the critical path).
/// `b.len()` must be `d`.
#[inline]
pub fn forward_substitute(l: &[f64], d: usize, b: &mut [f64]) -> f64 {
    debug_assert_eq!(b.len(), d);
    debug_assert_eq!(l.len(), d * d);
    match d {
        1 => forward_substitute_fixed::<1>(l, b),
        2 => forward_substitute_fixed::<2>(l, b),
        3 => forward_substitute_fixed::<3>(l, b),
        4 => forward_substitute_fixed::<4>(l, b),
        5 => forward_substitute_fixed::<5>(l, b),
        6 => forward_substitute_fixed::<6>(l, b),
        7 => forward_substitute_fixed::<7>(l, b),
        8 => forward_substitute_fixed::<8>(l, b),
        _ => forward_substitute_any(l, d, b),
    }
}

#[inline(always)]
fn forward_substitute_fixed<const D: usize>(l: &[f64], b: &mut [f64]) -> f64 {
    let l = &l[..D * D];
    let mut z = [0.0f64; D];
    z.copy_from_slice(&b[..D]);
    let mut norm2 = 0.0;
    for j in 0..D {
        let col = &l[j * D..j * D + D];
        // The reciprocal depends only on L, so it overlaps with earlier columns' work and
        // only a multiply stays on the b-dependency chain.
        let zj = z[j] * (1.0 / col[j]);
        z[j] = zj;
        norm2 += zj * zj;
        for i in j + 1..D {
            z[i] -= col[i] * zj;
        }
    }
    b[..D].copy_from_slice(&z);
    norm2
}

/// The general-dimension solve, two columns per sweep over the right-hand side so that each
/// remaining entry is loaded and stored once per pair of columns.
#[inline]
fn forward_substitute_any(l: &[f64], d: usize, b: &mut [f64]) -> f64 {
    let mut norm2 = 0.0;
    let mut j = 0;
    while j + 1 < d {
        let (c0, c1) = (&l[j * d..(j + 1) * d], &l[(j + 1) * d..(j + 2) * d]);
        let z0 = b[j] * (1.0 / c0[j]);
        let z1 = (b[j + 1] - c0[j + 1] * z0) * (1.0 / c1[j + 1]);
        b[j] = z0;
        b[j + 1] = z1;
        norm2 += z0 * z0 + z1 * z1;
        for ((x, &a0), &a1) in b[j + 2..].iter_mut().zip(&c0[j + 2..]).zip(&c1[j + 2..]) {
            *x -= a0 * z0 + a1 * z1;
        }
        j += 2;
    }
    if j < d {
        let z = b[j] * (1.0 / l[j * d + j]);
        b[j] = z;
        norm2 += z * z;
    }
    norm2
}

/// `‖L⁻¹(y - c)‖²`, by forward substitution with the reciprocals of the diagonal of `L`
/// supplied: bit for bit the value of [`forward_substitute`] on `b = y - c`, without a
/// division and without writing `z` anywhere.
///
/// For callers that solve against the same factor many times (a cluster's predictive is
/// evaluated for every point of a Gibbs sweep), caching `inv_diag[j] = 1 / L_jj` once per
/// change of `L` takes the d divisions, whose throughput dominates the solve for small d,
/// off the hot path. For d ≤ 8 a copy specialised to the dimension keeps `y - c` in
/// registers. Cost: d²/2 multiply-adds, no heap allocation for d ≤ 1024. `y`, `c` and
/// `inv_diag` must have length `d`.
#[inline(always)]
pub fn shifted_solve_norm2(l: &[f64], inv_diag: &[f64], d: usize, y: &[f64], c: &[f64]) -> f64 {
    debug_assert_eq!(y.len(), d);
    debug_assert_eq!(c.len(), d);
    debug_assert_eq!(inv_diag.len(), d);
    debug_assert_eq!(l.len(), d * d);
    match d {
        1 => shifted_solve_fixed::<1>(l, inv_diag, y, c),
        2 => shifted_solve_fixed::<2>(l, inv_diag, y, c),
        3 => shifted_solve_fixed::<3>(l, inv_diag, y, c),
        4 => shifted_solve_fixed::<4>(l, inv_diag, y, c),
        5 => shifted_solve_fixed::<5>(l, inv_diag, y, c),
        6 => shifted_solve_fixed::<6>(l, inv_diag, y, c),
        7 => shifted_solve_fixed::<7>(l, inv_diag, y, c),
        8 => shifted_solve_fixed::<8>(l, inv_diag, y, c),
        _ => out_of_line(|| {
            with_scratch(d, |z| {
                for ((z, &y), &c) in z.iter_mut().zip(y).zip(c) {
                    *z = y - c;
                }
                forward_substitute_inv_any(l, inv_diag, d, z)
            })
        }),
    }
}

#[inline(always)]
fn shifted_solve_fixed<const D: usize>(l: &[f64], inv: &[f64], y: &[f64], c: &[f64]) -> f64 {
    let l = &l[..D * D];
    let (inv, y, c) = (&inv[..D], &y[..D], &c[..D]);
    let mut z = [0.0f64; D];
    for k in 0..D {
        z[k] = y[k] - c[k];
    }
    let mut norm2 = 0.0;
    for j in 0..D {
        let col = &l[j * D..j * D + D];
        let zj = z[j] * inv[j];
        z[j] = zj;
        norm2 += zj * zj;
        for i in j + 1..D {
            z[i] -= col[i] * zj;
        }
    }
    norm2
}

/// The solution of `L z = b` for the dimension `D`, with the reciprocals of the diagonal of
/// `L` supplied (the solve of [`shifted_solve_norm2`], keeping `z`). Cost: D²/2
/// multiply-adds.
#[inline(always)]
pub(crate) fn solve_fixed<const D: usize>(l: &[f64], inv: &[f64], b: &[f64; D]) -> [f64; D] {
    let l = &l[..D * D];
    let inv = &inv[..D];
    let mut z = *b;
    for j in 0..D {
        let col = &l[j * D..j * D + D];
        let zj = z[j] * inv[j];
        z[j] = zj;
        for i in j + 1..D {
            z[i] -= col[i] * zj;
        }
    }
    z
}

/// The general-dimension solve of [`shifted_solve_norm2`] on `b = y - c`, two columns per
/// sweep as in [`forward_substitute`].
#[inline]
fn forward_substitute_inv_any(l: &[f64], inv: &[f64], d: usize, b: &mut [f64]) -> f64 {
    let mut norm2 = 0.0;
    let mut j = 0;
    while j + 1 < d {
        let (c0, c1) = (&l[j * d..(j + 1) * d], &l[(j + 1) * d..(j + 2) * d]);
        let z0 = b[j] * inv[j];
        let z1 = (b[j + 1] - c0[j + 1] * z0) * inv[j + 1];
        b[j] = z0;
        b[j + 1] = z1;
        norm2 += z0 * z0 + z1 * z1;
        for ((x, &a0), &a1) in b[j + 2..].iter_mut().zip(&c0[j + 2..]).zip(&c1[j + 2..]) {
            *x -= a0 * z0 + a1 * z1;
        }
        j += 2;
    }
    if j < d {
        let z = b[j] * inv[j];
        b[j] = z;
        norm2 += z * z;
    }
    norm2
}

/// Replaces `L` by the factor of `LLᵀ + xxᵀ` and returns `ln det(L'L'ᵀ) - ln det(LLᵀ)`;
/// `x` is used as scratch and overwritten.
///
/// Algorithm: the standard sequence of d Givens rotations (Golub & Van Loan §6.5.4; the
/// `cholupdate` of the Das 2014 slides cited in MATH §2.1). Rotation `k` zeroes `x_k` against
/// `L_kk`, so the new pivot is `r_k = hypot(L_kk, x_k)` and `det` grows by `Π (r_k/L_kk)²`,
/// accumulated as a product of cosines (one logarithm per call). An update of a positive
/// definite factor by a finite `x` cannot fail. Cost: 2d² multiply-adds, d square roots.
#[inline(always)]
pub fn rank1_update(l: &mut [f64], d: usize, x: &mut [f64]) -> f64 {
    debug_assert_eq!(x.len(), d);
    debug_assert_eq!(l.len(), d * d);
    let mut cos_prod = 1.0f64;
    let mut ln_acc = 0.0;
    for k in 0..d {
        let col = &mut l[k * d..(k + 1) * d];
        let lkk = col[k];
        let xk = x[k];
        if xk == 0.0 {
            continue;
        }
        let r = (lkk * lkk + xk * xk).sqrt();
        let c = lkk / r;
        let s = xk / r;
        col[k] = r;
        for (lik, xi) in col[k + 1..].iter_mut().zip(x[k + 1..].iter_mut()) {
            let li = *lik;
            *lik = c * li + s * *xi;
            *xi = c * *xi - s * li;
        }
        cos_prod *= c;
        // A far-away x can drive the product of cosines towards underflow; fold it into the
        // logarithm before precision is lost.
        if cos_prod < 1e-150 {
            ln_acc += cos_prod.ln();
            cos_prod = 1.0;
        }
    }
    -2.0 * (ln_acc + cos_prod.ln())
}

/// Replaces `L` (`D × D`) by the factor of `LLᵀ + vvᵀ`, given `v` and the solution
/// `p = L⁻¹v`, which a caller often has at hand (a predictive evaluation solved it).
///
/// Algorithm: `L' = L L̃` with `L̃` the factor of `I + ppᵀ`, whose entries are known in closed
/// form (Gill, Golub, Murray & Saunders 1974, Math. Comp. 28, the product form of their
/// method C1): with `t₀ = 1` and `t_{j+1} = t_j + p_j²`, `L̃_jj = √(t_{j+1}/t_j)` and
/// `L̃_ij = p_i p_j / √(t_j t_{j+1})` for `i > j`. Column `j` of `L'` is therefore
/// `L̃_jj L_{:,j} + p_j/√(t_j t_{j+1}) · w_j` with `w_j = Σ_{i>j} p_i L_{:,i} = v - Σ_{i≤j} p_i
/// L_{:,i}`, the running residual of the forward substitution. The square roots and
/// reciprocals of the `t_j` do not depend on one another (the `t_j` are a chain of
/// additions), unlike the rotations of [`rank1_update`], whose d square roots and divisions
/// form one dependent chain. `det` grows by `t_D`, which the caller has as `1 + ‖p‖²`. For
/// an update (a positive rank-1 term) every `t_j ≥ 1`, so no cancellation arises in them.
/// Returns `L_jj / L'_jj = √(t_j / t_{j+1})`, with which the caller rescales the reciprocals
/// of the pivots it keeps. Cost: `D²` multiply-adds, `D` square roots, `D` divisions.
#[inline(always)]
pub(crate) fn rank1_update_solved<const D: usize>(
    l: &mut [f64],
    p: &[f64; D],
    v: &[f64; D],
) -> [f64; D] {
    let l = &mut l[..D * D];
    let mut w = *v;
    let mut shrink = [1.0f64; D];
    let mut t = 1.0f64;
    let (mut s, mut inv_s) = (1.0f64, 1.0f64);
    for j in 0..D {
        let t_next = t + p[j] * p[j];
        let s_next = t_next.sqrt();
        let inv_s_next = 1.0 / s_next;
        let a = s_next * inv_s;
        let q = p[j] * inv_s * inv_s_next;
        shrink[j] = s * inv_s_next;
        let col = &mut l[j * D..(j + 1) * D];
        col[j] *= a;
        for i in j + 1..D {
            w[i] -= p[j] * col[i];
            col[i] = a * col[i] + q * w[i];
        }
        t = t_next;
        (s, inv_s) = (s_next, inv_s_next);
    }
    shrink
}

/// Replaces `L` by the factor of `LLᵀ - xxᵀ` and returns `ln det(L'L'ᵀ) - ln det(LLᵀ)`, or
/// `None` when the result would not be (numerically) positive definite; `x` is overwritten.
///
/// Algorithm: the orthogonal downdate of LINPACK `dchdd` (Saunders; Golub & Van Loan
/// §6.5.4), which is more stable than hyperbolic rotations. Solve `L p = x`; the determinant
/// ratio is `ρ² = 1 - ‖p‖²` (matrix determinant lemma). If `ρ²` is below
/// [`DOWNDATE_MIN_DET_RATIO`] (or not finite) the downdate fails **before touching `L`**.
/// Otherwise Givens rotations `k = d-1 … 0` fold `p_k` into `ρ`, and the same rotations applied
/// to the columns of `L` against a zero row produce `L'`; every new pivot is `c_k L_kk > 0`.
/// Cost: d²/2 multiply-adds for the solve, 2d² for the rotations, d square roots.
#[inline(always)]
pub fn rank1_downdate(l: &mut [f64], d: usize, x: &mut [f64]) -> Option<f64> {
    debug_assert_eq!(x.len(), d);
    debug_assert_eq!(l.len(), d * d);
    let p2 = forward_substitute(l, d, x);
    let rho2 = 1.0 - p2;
    if rho2.is_nan() || rho2 < DOWNDATE_MIN_DET_RATIO {
        return None;
    }
    // `x` now holds p = L⁻¹x. Rotation k folds p_k into ρ and acts on the pair (w, column k
    // of L), where w is the extra row, initially zero. Rotations run from k = d-1 down, and
    // w_j is non-zero only for j > k, so p_k is read just before its slot is reused for w_k.
    let p = x;
    let mut rho = rho2.sqrt();
    for k in (0..d).rev() {
        let pk = p[k];
        let t = (rho * rho + pk * pk).sqrt();
        let c = rho / t;
        let s = pk / t;
        rho = t;
        let col = &mut l[k * d..(k + 1) * d];
        let lkk = col[k];
        col[k] = c * lkk;
        p[k] = s * lkk;
        for (lik, wi) in col[k + 1..].iter_mut().zip(p[k + 1..].iter_mut()) {
            let li = *lik;
            let w = *wi;
            *lik = c * li - s * w;
            *wi = c * w + s * li;
        }
    }
    Some(rho2.ln())
}

fn check_len(len: usize, d: usize, name: &str) -> Result<()> {
    if d == 0 || len != d * d {
        return Err(Error::DimensionMismatch(format!(
            "{name} has {len} entries, expected {d} x {d} with d > 0"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::DMatrix;
    use proptest::prelude::*;

    /// A symmetric positive definite matrix B Bᵀ + δ I from free entries, row-major.
    fn spd(d: usize, entries: &[f64], ridge: f64) -> Vec<f64> {
        let b = DMatrix::from_row_slice(d, d, &entries[..d * d]);
        let a = &b * b.transpose() + DMatrix::identity(d, d) * ridge;
        a.transpose().as_slice().to_vec()
    }

    fn to_lower(l: &[f64], d: usize) -> DMatrix<f64> {
        DMatrix::from_fn(d, d, |i, j| if i >= j { l[j * d + i] } else { 0.0 })
    }

    /// `A + xxᵀ` for a `d × d` matrix `A` (full layout).
    fn plus_outer(a: &[f64], x: &[f64], d: usize) -> Vec<f64> {
        let mut out = a.to_vec();
        for i in 0..d {
            for j in 0..d {
                out[i * d + j] += x[i] * x[j];
            }
        }
        out
    }

    fn max_rel_diff(a: &[f64], b: &[f64]) -> f64 {
        let scale = a.iter().chain(b).fold(0.0f64, |m, v| m.max(v.abs()));
        a.iter()
            .zip(b)
            .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
            / scale
    }

    #[test]
    fn factor_of_a_known_matrix() {
        // A = L Lᵀ with L = [[2,0,0],[1,3,0],[-1,0.5,1]].
        let a = [4.0, 2.0, -2.0, 2.0, 10.0, 0.5, -2.0, 0.5, 2.25];
        let l = cholesky(&a, 3, "A").unwrap();
        let expected = [2.0, 1.0, -1.0, 0.0, 3.0, 0.5, 0.0, 0.0, 1.0];
        assert!(max_rel_diff(&l, &expected) < 1e-15, "{l:?}");
        assert!((ln_det(&l, 3) - 36f64.ln()).abs() < 1e-14);
    }

    /// One logarithm of the product, or the sum of logarithms when the product would leave
    /// the normal range; a non-positive or NaN pivot stays visible.
    #[test]
    fn log_determinant_of_extreme_pivots() {
        let diag = |v: &[f64]| {
            let d = v.len();
            let mut l = vec![0.0; d * d];
            for (i, &x) in v.iter().enumerate() {
                l[i * d + i] = x;
            }
            l
        };
        let sum_of_logs = |v: &[f64]| 2.0 * v.iter().map(|x| x.ln()).sum::<f64>();
        for v in [
            vec![2.0, 3.0],
            vec![1e200, 1e200, 1e-5],
            vec![1e-200, 1e-200, 3.0],
            vec![1e300; 8],
            vec![0.5, 0.25, 4.0, 1e-3, 7.0, 0.9, 1.1, 2.5],
        ] {
            let got = ln_det(&diag(&v), v.len());
            let want = sum_of_logs(&v);
            assert!(
                (got - want).abs() <= 1e-13 * want.abs().max(1.0),
                "{v:?}: {got} vs {want}"
            );
        }
        assert!(ln_det(&diag(&[1.0, f64::NAN]), 2).is_nan());
        assert_eq!(ln_det(&diag(&[1.0, 0.0]), 2), f64::NEG_INFINITY);
        assert!(ln_det(&diag(&[1.0, -1.0]), 2).is_nan());
    }

    #[test]
    fn not_positive_definite_is_an_error_naming_the_matrix() {
        let a = [1.0, 2.0, 2.0, 1.0];
        match cholesky(&a, 2, "Psi_n of cluster 3") {
            Err(Error::NotPositiveDefinite(msg)) => {
                assert!(msg.contains("Psi_n of cluster 3"), "{msg}");
                assert!(msg.contains("pivot 2"), "{msg}");
            }
            other => panic!("expected NotPositiveDefinite, got {other:?}"),
        }
        assert!(matches!(
            cholesky(&[f64::NAN, 0.0, 0.0, 1.0], 2, "A"),
            Err(Error::NotPositiveDefinite(_))
        ));
        assert!(matches!(
            cholesky(&[0.0, 0.0, 0.0, 1.0], 2, "A"),
            Err(Error::NotPositiveDefinite(_))
        ));
        assert!(matches!(
            cholesky(&[1.0; 5], 2, "A"),
            Err(Error::DimensionMismatch(_))
        ));
        assert!(matches!(
            cholesky(&[], 0, "A"),
            Err(Error::DimensionMismatch(_))
        ));
    }

    #[test]
    fn downdate_to_singular_fails_and_leaves_the_factor_untouched() {
        // A = I₂, x = e₁: A - xxᵀ is singular.
        let mut l = cholesky(&[1.0, 0.0, 0.0, 1.0], 2, "I").unwrap();
        let before = l.clone();
        assert!(rank1_downdate(&mut l, 2, &mut [1.0, 0.0]).is_none());
        assert_eq!(l, before);
        assert!(rank1_downdate(&mut l, 2, &mut [1.5, 0.0]).is_none());
        assert!(rank1_downdate(&mut l, 2, &mut [f64::NAN, 0.0]).is_none());
        assert_eq!(l, before);
        // Just inside the threshold it succeeds.
        let ln_ratio = rank1_downdate(&mut l, 2, &mut [0.5, 0.0]).unwrap();
        assert!((ln_ratio - 0.75f64.ln()).abs() < 1e-15);
    }

    proptest! {
        #[test]
        fn factorisation_reconstructs(d in 1usize..12, entries in prop::collection::vec(-3.0f64..3.0, 144)) {
            let a = spd(d, &entries, 0.1);
            let l = cholesky(&a, d, "A").unwrap();
            let lm = to_lower(&l, d);
            let back = &lm * lm.transpose();
            let am = DMatrix::from_row_slice(d, d, &a);
            prop_assert!(max_rel_diff(back.as_slice(), am.as_slice()) < 1e-13);
            // Strictly upper entries of the buffer are zero.
            for j in 0..d {
                for i in 0..j {
                    prop_assert_eq!(l[j * d + i], 0.0);
                }
            }
            let ln_det_ref = am.determinant().ln();
            prop_assert!((ln_det(&l, d) - ln_det_ref).abs() < 1e-10 * ln_det_ref.abs().max(1.0));
        }

        #[test]
        fn forward_substitution_solves(d in 1usize..12, entries in prop::collection::vec(-3.0f64..3.0, 144),
                                       b in prop::collection::vec(-5.0f64..5.0, 12)) {
            let l = cholesky(&spd(d, &entries, 0.1), d, "A").unwrap();
            let mut z = b[..d].to_vec();
            let norm2 = forward_substitute(&l, d, &mut z);
            let lm = to_lower(&l, d);
            let zm = nalgebra::DVector::from_column_slice(&z);
            let back = &lm * &zm;
            for i in 0..d {
                prop_assert!((back[i] - b[i]).abs() < 1e-10 * (1.0 + b[i].abs()));
            }
            prop_assert!((norm2 - zm.norm_squared()).abs() <= 1e-12 * norm2.max(1.0));
        }

        #[test]
        fn shifted_solve_with_cached_reciprocals_is_bit_identical(d in 1usize..14,
                                                                  entries in prop::collection::vec(-3.0f64..3.0, 196),
                                                                  y in prop::collection::vec(-5.0f64..5.0, 14),
                                                                  c in prop::collection::vec(-5.0f64..5.0, 14)) {
            let l = cholesky(&spd(d, &entries, 0.1), d, "A").unwrap();
            let inv: Vec<f64> = (0..d).map(|j| 1.0 / l[j * d + j]).collect();
            let (y, c) = (&y[..d], &c[..d]);
            let mut z: Vec<f64> = y.iter().zip(c).map(|(y, c)| y - c).collect();
            let norm2 = forward_substitute(&l, d, &mut z);
            let norm2_shifted = shifted_solve_norm2(&l, &inv, d, y, c);
            prop_assert_eq!(norm2.to_bits(), norm2_shifted.to_bits());
        }

        /// The update from a solved vector gives the factor of `A + vvᵀ`, for every
        /// dimension it is specialised to.
        #[test]
        fn update_from_a_solve_matches_fresh_factors(d in 1usize..9,
                                                     entries in prop::collection::vec(-3.0f64..3.0, 64),
                                                     x in prop::collection::vec(-4.0f64..4.0, 8)) {
            fn run<const D: usize>(a: &[f64], x: &[f64]) -> (Vec<f64>, f64) {
                let mut l = cholesky(a, D, "A").unwrap();
                let mut v = [0.0f64; D];
                v.copy_from_slice(&x[..D]);
                let inv: Vec<f64> = (0..D).map(|j| 1.0 / l[j * D + j]).collect();
                let p = solve_fixed::<D>(&l, &inv, &v);
                let old_diag: Vec<f64> = (0..D).map(|j| l[j * D + j]).collect();
                let shrink = rank1_update_solved::<D>(&mut l, &p, &v);
                for j in 0..D {
                    assert!((shrink[j] - old_diag[j] / l[j * D + j]).abs() < 1e-14);
                }
                (l, p.iter().map(|p| p * p).sum::<f64>().ln_1p())
            }
            let a = spd(d, &entries, 0.5);
            let (l, ln_ratio) = match d {
                1 => run::<1>(&a, &x),
                2 => run::<2>(&a, &x),
                3 => run::<3>(&a, &x),
                4 => run::<4>(&a, &x),
                5 => run::<5>(&a, &x),
                6 => run::<6>(&a, &x),
                7 => run::<7>(&a, &x),
                _ => run::<8>(&a, &x),
            };
            let a_up = plus_outer(&a, &x, d);
            let fresh_up = cholesky(&a_up, d, "A + vvᵀ").unwrap();
            prop_assert!(max_rel_diff(&l, &fresh_up) < 1e-12, "{:?} vs {:?}", l, fresh_up);
            let ln0 = ln_det(&cholesky(&a, d, "A").unwrap(), d);
            prop_assert!((ln0 + ln_ratio - ln_det(&fresh_up, d)).abs() < 1e-11);
        }

        #[test]
        fn update_then_downdate_match_fresh_factors(d in 1usize..12,
                                                    entries in prop::collection::vec(-3.0f64..3.0, 144),
                                                    x in prop::collection::vec(-4.0f64..4.0, 12)) {
            let a = spd(d, &entries, 0.5);
            let x = &x[..d];
            let mut l = cholesky(&a, d, "A").unwrap();
            let l0 = l.clone();
            let ln0 = ln_det(&l, d);

            let mut scratch = x.to_vec();
            let delta_up = rank1_update(&mut l, d, &mut scratch);
            let a_up = plus_outer(&a, x, d);
            let fresh_up = cholesky(&a_up, d, "A + xxᵀ").unwrap();
            prop_assert!(max_rel_diff(&l, &fresh_up) < 1e-12, "{:?} vs {:?}", l, fresh_up);
            prop_assert!((ln0 + delta_up - ln_det(&fresh_up, d)).abs() < 1e-11);

            scratch.copy_from_slice(x);
            let delta_down = rank1_downdate(&mut l, d, &mut scratch).unwrap();
            prop_assert!(max_rel_diff(&l, &l0) < 1e-10, "{:?} vs {:?}", l, l0);
            prop_assert!((delta_up + delta_down).abs() < 1e-10);
        }

        #[test]
        fn downdate_fails_exactly_when_definiteness_is_lost(d in 1usize..12,
                                                            entries in prop::collection::vec(-3.0f64..3.0, 144),
                                                            x in prop::collection::vec(-4.0f64..4.0, 12),
                                                            scale in 0.0f64..2.0) {
            let a = spd(d, &entries, 0.5);
            let l = cholesky(&a, d, "A").unwrap();
            let x = &x[..d];
            let mut p = x.to_vec();
            let p2 = forward_substitute(&l, d, &mut p);
            prop_assume!(p2 > 1e-6);
            // Scale x so that 1 - s²‖p‖² = 1 - scale²·(1/2): positive definite iff scale < √2.
            let s = scale / (2.0 * p2).sqrt();
            let mut v: Vec<f64> = x.iter().map(|v| v * s).collect();
            let mut l1 = l.clone();
            let res = rank1_downdate(&mut l1, d, &mut v);
            let ratio = 1.0 - scale * scale / 2.0;
            if ratio <= DOWNDATE_MIN_DET_RATIO / 2.0 {
                prop_assert!(res.is_none());
                prop_assert_eq!(&l1, &l);
            } else if ratio > 1e-6 {
                let delta = res.unwrap();
                prop_assert!((delta - ratio.ln()).abs() < 1e-8);
            }
        }
    }
}
