//! One point weighed against the two groups of a split-merge proposal at once, for the
//! Normal-Wishart kernel (SAMS and Jain-Neal restricted scans, MATH §6.2-§6.3).
//!
//! A restricted scan weighs every point against exactly two statistics. Done one after the
//! other, each predictive is a short dependent chain (a forward substitution, then the C
//! library's `ln`); here both forward substitutions run interleaved, so the two chains overlap,
//! every update is a `mul_add`, and both logarithms are the branch-free
//! [`crate::vecmath::ln`], compiled for the CPU's best [`crate::simd::Level`] and giving the
//! same bits at every level.

use crate::simd::multiversion;
use crate::vecmath;

/// What a predictive reads from a statistic: the lower factor (column-by-column layout of
/// [`super::cholesky`]), the centre `ξ_n` and the reciprocals `1 / L_jj`.
pub(crate) type Parts<'a> = (&'a [f64], &'a [f64], &'a [f64]);

multiversion! {
    /// For the centred point `y` (dimension `1..=8`) and the two statistics `a` and `b`, with
    /// `q_g = ‖L_g⁻¹(y - ξ_g)‖²`: the argument `t_g = 1 + c_g q_g` (one rounding) and its
    /// logarithm, for each. Cost: two forward substitutions of `d²/2` multiply-adds,
    /// interleaved, and two logarithms, no division.
    pub(crate) fn ln_pair(y: &[f64], a: Parts<'_>, b: Parts<'_>, c: [f64; 2]) -> [(f64, f64); 2] {
        match y.len() {
            1 => pair_fixed::<1>(y, [a, b], c),
            2 => pair_fixed::<2>(y, [a, b], c),
            3 => pair_fixed::<3>(y, [a, b], c),
            4 => pair_fixed::<4>(y, [a, b], c),
            5 => pair_fixed::<5>(y, [a, b], c),
            6 => pair_fixed::<6>(y, [a, b], c),
            7 => pair_fixed::<7>(y, [a, b], c),
            8 => pair_fixed::<8>(y, [a, b], c),
            d => unreachable!("ln_pair is for dimensions 1 to 8, not {d}"),
        }
    }
}

/// [`ln_pair`] for the dimension `D`: both solutions in registers, column-oriented forward
/// substitution (`z_j /= L_jj`, then `z_i -= L_ij z_j` below), one step of each group in turn.
#[inline(always)]
fn pair_fixed<const D: usize>(y: &[f64], parts: [Parts<'_>; 2], c: [f64; 2]) -> [(f64, f64); 2] {
    let y = &y[..D];
    let l = parts.map(|(l, _, _)| &l[..D * D]);
    let centre = parts.map(|(_, m, _)| &m[..D]);
    let inv = parts.map(|(_, _, r)| &r[..D]);
    let mut z = [[0.0f64; D]; 2];
    for g in 0..2 {
        for k in 0..D {
            z[g][k] = y[k] - centre[g][k];
        }
    }
    let mut q = [0.0f64; 2];
    for j in 0..D {
        for g in 0..2 {
            let zj = z[g][j] * inv[g][j];
            z[g][j] = zj;
            q[g] = zj.mul_add(zj, q[g]);
            let col = &l[g][j * D..j * D + D];
            for i in j + 1..D {
                z[g][i] = (-col[i]).mul_add(zj, z[g][i]);
            }
        }
    }
    let t = [c[0].mul_add(q[0], 1.0), c[1].mul_add(q[1], 1.0)];
    [(t[0], vecmath::ln(t[0])), (t[1], vecmath::ln(t[1]))]
}

#[cfg(test)]
mod tests {
    use crate::data::DenseData;
    use crate::kernel::{ConjugateKernel, NormalWishart, NwHyper};
    use crate::rng::{uniform_open01, SeedPlan};
    use crate::simd::{with_level, Level};
    use std::sync::Arc;

    fn kernel(d: usize) -> NormalWishart {
        let mut rng = SeedPlan::new(40 + d as u64).chain(0);
        let rows: Vec<Vec<f64>> = (0..50)
            .map(|i| {
                (0..d)
                    .map(|j| 2.0 * ((i % 4) as f64) * ((j % 3) as f64) + uniform_open01(&mut rng))
                    .collect()
            })
            .collect();
        let data = DenseData::from_rows(&rows).unwrap();
        let hyper = NwHyper::from_data(&data).unwrap();
        NormalWishart::new(Arc::new(data), hyper).unwrap()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * a.abs().max(1.0)
    }

    /// Both pair forms equal the single-statistic methods to rounding (the member form
    /// declining where the single one does), their probes add as plain adds do, and every
    /// level gives the same bits.
    #[test]
    fn pairs_are_the_single_predictives_at_every_level() {
        for d in [1, 2, 3, 6, 8, 9] {
            let k = kernel(d);
            let a = k.stat_of(&(0..50).filter(|i| i % 3 == 0).collect::<Vec<_>>());
            let b = k.stat_of(&(0..50).filter(|i| i % 3 == 1).collect::<Vec<_>>());
            let tiny = k.stat_of(&[2, 5]);
            for i in [2, 5, 7, 11, 49] {
                let [(pa, qa), (pb, _)] = k.ln_predictive_pair(i, &a, &b);
                assert!(close(pa, k.ln_predictive(i, &a)), "d {d} point {i}");
                assert!(close(pb, k.ln_predictive(i, &b)), "d {d} point {i}");
                let (mut plain, mut probed) = (a.clone(), a.clone());
                k.add(&mut plain, i);
                k.add_probed(&mut probed, i, &qa);
                assert!(close(k.ln_marginal(&plain), k.ln_marginal(&probed)));
                for own in [&a, &b, &tiny] {
                    let (m, (po, _)) = k.ln_predictive_member_pair(i, own, &b);
                    match (m, k.ln_predictive_member(i, own)) {
                        (Some(x), Some(y)) => assert!(close(x, y), "d {d} point {i}"),
                        (None, None) => {}
                        (x, y) => panic!("d {d} point {i}: {x:?} vs {y:?}"),
                    }
                    assert!(close(po, pb));
                }
                let bits = |v: [(f64, crate::kernel::Probe); 2]| v.map(|(x, _)| x.to_bits());
                let want = bits(k.ln_predictive_pair(i, &a, &b));
                let want_member = k.ln_predictive_member_pair(i, &a, &b).0.map(f64::to_bits);
                for level in Level::ALL {
                    with_level(level, || {
                        assert_eq!(bits(k.ln_predictive_pair(i, &a, &b)), want, "{level:?}");
                        let m = k.ln_predictive_member_pair(i, &a, &b).0.map(f64::to_bits);
                        assert_eq!(m, want_member, "{level:?}");
                    });
                }
            }
        }
    }
}
