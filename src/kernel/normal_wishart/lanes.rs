//! The Gaussian log likelihoods `ln f(x_i | μ_k, Λ_k)` of a block of points against many
//! drawn components at once, in vectors with the points in lanes: the label passes of the
//! uncollapsed samplers (MATH §6.4) weigh every point against every cluster's drawn
//! parameter, and one point at a time that is a chain of dependent multiply-adds per cluster.
//!
//! For each component (mean `μ` and lower Cholesky factor `C` of the precision, both in the
//! kernel's centred frame) and each lane `b`: `v = y_b - μ`, `t_j = C_jj v_j + Σ_{i>j} C_ij v_i`
//! (`mul_add` in order of `i`), `q = Σ_j t_j²` (`mul_add` in order of `j`) and the weight
//! `(offset + ln_norm) - ½ q`. For `d ≤ 8` the dimension is a compile-time constant, so the
//! loops unroll and each sum `t_j` stays in registers. Every operation is the same at every
//! [`crate::simd::Level`] (`mul_add` is correctly rounded everywhere), so the weights are too.

use super::params::NwParam;
use crate::kernel::sweep_cache::BLOCK;
use crate::simd::multiversion;

/// One value per point of a block.
type Lanes = [f64; BLOCK];

multiversion! {
    /// `out[k · BLOCK + b] = offsets[k] + ln f(y_b | params[k])` for the centred points
    /// `y[j][b]` (coordinate `j` of lane `b`), at the CPU's best level. `out` holds
    /// `offsets.len() · BLOCK` values. Cost: `d(d+3)/2 + 1` multiply-adds per (point, component).
    pub(crate) fn weigh_block(y: &[Lanes], offsets: &[f64], params: &[NwParam], out: &mut [f64]) {
        match y.len() {
            1 => weigh_fixed::<1>(y, offsets, params, out),
            2 => weigh_fixed::<2>(y, offsets, params, out),
            3 => weigh_fixed::<3>(y, offsets, params, out),
            4 => weigh_fixed::<4>(y, offsets, params, out),
            5 => weigh_fixed::<5>(y, offsets, params, out),
            6 => weigh_fixed::<6>(y, offsets, params, out),
            7 => weigh_fixed::<7>(y, offsets, params, out),
            8 => weigh_fixed::<8>(y, offsets, params, out),
            _ => weigh_any(y, offsets, params, out),
        }
    }
}

/// The weight of each lane from its `q`: `(offset + ln_norm) - ½ q`.
#[inline(always)]
fn finish(offset: f64, p: &NwParam, q: &Lanes, out: &mut [f64]) {
    let base = offset + p.ln_normaliser();
    for b in 0..BLOCK {
        out[b] = (-0.5f64).mul_add(q[b], base);
    }
}

/// [`weigh_block`] for the dimension `D`: the centred differences `v_i = y_i - μ_i` once per
/// component, then one sum `t_j` at a time (its terms in order of `i`, as every form adds
/// them) squared into `q`. Only `t_j` and `q` stay in registers: keeping all `D` sums live
/// at once (row by row) spilled them to the stack and reloaded them at every term on
/// 16-register AVX2 at `D = 8`; the operations and their order are those of that form.
#[inline(always)]
fn weigh_fixed<const D: usize>(y: &[Lanes], offsets: &[f64], params: &[NwParam], out: &mut [f64]) {
    let y: &[Lanes; D] = y.try_into().expect("D coordinates");
    for ((out, &offset), p) in out.chunks_exact_mut(BLOCK).zip(offsets).zip(params) {
        let mu: &[f64; D] = p.mean_centred().try_into().expect("a mean of D values");
        let c = &p.precision_chol()[..D * D];
        let mut v = [[0.0; BLOCK]; D];
        for i in 0..D {
            for b in 0..BLOCK {
                v[i][b] = y[i][b] - mu[i];
            }
        }
        let mut q = [0.0; BLOCK];
        for j in 0..D {
            let col = &c[j * D..(j + 1) * D];
            let mut t = [0.0; BLOCK];
            for b in 0..BLOCK {
                t[b] = col[j] * v[j][b];
            }
            for i in j + 1..D {
                for b in 0..BLOCK {
                    t[b] = col[i].mul_add(v[i][b], t[b]);
                }
            }
            for b in 0..BLOCK {
                q[b] = t[b].mul_add(t[b], q[b]);
            }
        }
        finish(offset, p, &q, out);
    }
}

/// [`weigh_block`] for any dimension: the same operations in the same order, `v` recomputed
/// per column rather than kept (it would not fit in registers).
#[inline(always)]
fn weigh_any(y: &[Lanes], offsets: &[f64], params: &[NwParam], out: &mut [f64]) {
    let d = y.len();
    for ((out, &offset), p) in out.chunks_exact_mut(BLOCK).zip(offsets).zip(params) {
        let (mu, c) = (p.mean_centred(), p.precision_chol());
        let mut q = [0.0; BLOCK];
        for j in 0..d {
            let col = &c[j * d..(j + 1) * d];
            let mut t = [0.0; BLOCK];
            for b in 0..BLOCK {
                t[b] = col[j] * (y[j][b] - mu[j]);
            }
            for i in j + 1..d {
                for b in 0..BLOCK {
                    t[b] = col[i].mul_add(y[i][b] - mu[i], t[b]);
                }
            }
            for b in 0..BLOCK {
                q[b] = t[b].mul_add(t[b], q[b]);
            }
        }
        finish(offset, p, &q, out);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::data::DenseData;
    use crate::kernel::sweep_cache::BLOCK;
    use crate::kernel::{ConjugateKernel, NormalWishart, NwHyper, ParametricKernel};
    use crate::rng::{uniform_open01, SeedPlan};
    use crate::simd::{with_level, Level};

    /// Every (point, component) weight of a block is `offset + ln_f` to rounding, for every
    /// dimension form (unrolled up to 8, general beyond), lanes past the count weigh the
    /// block's first point, and every level gives the same bits.
    #[test]
    fn block_weights_are_the_likelihoods_at_every_level() {
        for d in [1, 2, 3, 5, 6, 8, 9, 12] {
            let mut rng = SeedPlan::new(d as u64).chain(3);
            let rows: Vec<Vec<f64>> = (0..40)
                .map(|i| {
                    (0..d)
                        .map(|j| {
                            4.0 * ((i % 4) as f64) * ((j % 3) as f64) + uniform_open01(&mut rng)
                        })
                        .collect()
                })
                .collect();
            let data = DenseData::from_rows(&rows).unwrap();
            let hyper = NwHyper::from_data(&data).unwrap();
            let kernel = NormalWishart::new(Arc::new(data), hyper).unwrap();
            // Eleven components drawn from posteriors of subsets, and one from the prior.
            let mut params = Vec::new();
            for c in 0..11 {
                let members: Vec<usize> = (0..40).filter(|i| i % 11 == c).collect();
                let mut p = kernel.new_param();
                kernel
                    .sample_posterior(&kernel.stat_of(&members), &mut rng, &mut p)
                    .unwrap();
                params.push(p);
            }
            let mut p = kernel.new_param();
            kernel.sample_prior(&mut rng, &mut p).unwrap();
            params.push(p);
            let offsets: Vec<f64> = (0..params.len()).map(|k| 0.3 * k as f64 - 1.0).collect();
            for (first, count) in [(0, BLOCK), (13, 5), (39, 1)] {
                let weigh = |level| {
                    with_level(level, || {
                        let mut out = Vec::new();
                        kernel.ln_f_block(first, count, &offsets, &params, &mut out);
                        out
                    })
                };
                let out = weigh(Level::Portable);
                assert_eq!(out.len(), params.len() * BLOCK);
                for (k, theta) in params.iter().enumerate() {
                    for b in 0..BLOCK {
                        let i = first + if b < count { b } else { 0 };
                        let want = offsets[k] + kernel.ln_f(i, theta);
                        let got = out[k * BLOCK + b];
                        assert!(
                            (got - want).abs() <= 1e-12 * want.abs().max(1.0),
                            "d = {d}, point {i}, component {k}: {got} vs {want}"
                        );
                    }
                }
                for level in Level::ALL.into_iter().filter(|l| l.available()) {
                    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&weigh(level)), bits(&out), "d = {d} at {level:?}");
                }
            }
        }
    }
}
