//! Explicit parameter draws of the conjugate kernels (`nrmm::kernel::params`): posterior
//! moments against their closed forms, `ln f` against a direct dense computation, and the
//! conjugacy identity `ln m(X) = ln f(X | θ) + ln p(θ) - ln p(θ | X)` at drawn `θ`.

use std::sync::Arc;

use nalgebra::{DMatrix, DVector};
use nrmm::data::generate::{bag_of_words, DocLengths};
use nrmm::data::{DenseData, SparseCounts};
use nrmm::kernel::beta_bernoulli::BetaBernoulli;
use nrmm::kernel::{
    ConjugateKernel, MultinomialDirichlet, NormalWishart, NwHyper, ParametricKernel,
};
use nrmm::math::ln_gamma;
use nrmm::rng::{uniform_open01, SeedPlan};
use proptest::prelude::*;

fn nw_kernel(rows: &[Vec<f64>]) -> NormalWishart {
    let data = DenseData::from_rows(rows).unwrap();
    let hyper = NwHyper::from_data(&data).unwrap();
    NormalWishart::new(Arc::new(data), hyper).unwrap()
}

fn nw_rows(n: usize, d: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = SeedPlan::new(seed).chain(0);
    (0..n)
        .map(|i| {
            (0..d)
                .map(|j| 3.0 * uniform_open01(&mut rng) + (i % 3) as f64 * (j as f64 + 1.0))
                .collect()
        })
        .collect()
}

fn md_kernel(seed: u64) -> MultinomialDirichlet {
    let mut rng = SeedPlan::new(seed).chain(0);
    let labels: Vec<usize> = (0..12).map(|i| i % 3).collect();
    let (counts, _) = bag_of_words(
        &labels,
        15,
        0.3,
        DocLengths::Poisson { mean: 6.0 },
        &mut rng,
    )
    .unwrap();
    MultinomialDirichlet::new(Arc::new(counts), 0.4).unwrap()
}

/// Posterior moments of the Normal-Wishart draws: `E[Λ] = ν_n Ψ_n⁻¹` and `E[μ] = ξ_n`, each
/// entry within 5 Monte Carlo standard errors over 40,000 draws.
#[test]
fn normal_wishart_posterior_moments_match_closed_form() {
    let rows = nw_rows(15, 3, 1);
    let k = nw_kernel(&rows);
    let d = 3;
    let members = [0usize, 2, 3, 5, 8, 9, 11];
    let s = k.stat_of(&members);
    // Closed form in original coordinates.
    let h = k.hyper();
    let n = members.len() as f64;
    let (r_n, nu_n) = (h.r() + n, h.nu() + n);
    let xbar: Vec<f64> = (0..d)
        .map(|j| members.iter().map(|&i| rows[i][j]).sum::<f64>() / n)
        .collect();
    let xi_n: Vec<f64> = (0..d)
        .map(|j| (h.r() * h.xi()[j] + n * xbar[j]) / r_n)
        .collect();
    let mut psi_n = DMatrix::from_row_slice(d, d, h.psi());
    let xi = DVector::from_column_slice(h.xi());
    psi_n += &xi * xi.transpose() * h.r();
    for &i in &members {
        let x = DVector::from_column_slice(&rows[i]);
        psi_n += &x * x.transpose();
    }
    let xin = DVector::from_column_slice(&xi_n);
    psi_n -= &xin * xin.transpose() * r_n;
    let mean_lambda = psi_n.try_inverse().unwrap() * nu_n;

    let draws = 40_000;
    let mut rng = SeedPlan::new(2).chain(0);
    let mut theta = k.new_param();
    let mut sum_l = vec![0.0; d * d];
    let mut sum_l2 = vec![0.0; d * d];
    let mut sum_m = vec![0.0; d];
    let mut sum_m2 = vec![0.0; d];
    for _ in 0..draws {
        k.sample_posterior(&s, &mut rng, &mut theta).unwrap();
        let lam = k.param_precision(&theta);
        let mu = k.param_mean(&theta);
        for e in 0..d * d {
            sum_l[e] += lam[e];
            sum_l2[e] += lam[e] * lam[e];
        }
        for j in 0..d {
            sum_m[j] += mu[j];
            sum_m2[j] += mu[j] * mu[j];
        }
    }
    let m = draws as f64;
    for e in 0..d * d {
        let mean = sum_l[e] / m;
        let se = ((sum_l2[e] / m - mean * mean) / m).sqrt();
        let want = mean_lambda[(e / d, e % d)];
        assert!(
            (mean - want).abs() < 5.0 * se,
            "Lambda[{e}]: {mean} vs {want} (se {se})"
        );
    }
    for j in 0..d {
        let mean = sum_m[j] / m;
        let se = ((sum_m2[j] / m - mean * mean) / m).sqrt();
        assert!(
            (mean - xi_n[j]).abs() < 5.0 * se,
            "mu[{j}]: {mean} vs {} (se {se})",
            xi_n[j]
        );
    }
}

/// `ln f(x_i | μ, Λ)` equals the Gaussian log density computed densely (nalgebra determinant
/// and quadratic form) in the original coordinates, for d = 1..6.
#[test]
fn normal_wishart_ln_f_matches_dense_density() {
    for d in 1..=6 {
        let rows = nw_rows(12, d, 10 + d as u64);
        let k = nw_kernel(&rows);
        let mut rng = SeedPlan::new(3).chain(d as u64);
        let mut theta = k.new_param();
        for round in 0..5 {
            let s = k.stat_of(&(0..round * 2).collect::<Vec<_>>());
            k.sample_posterior(&s, &mut rng, &mut theta).unwrap();
            let lam = DMatrix::from_row_slice(d, d, &k.param_precision(&theta));
            let mu = DVector::from_vec(k.param_mean(&theta));
            for (i, row) in rows.iter().enumerate() {
                let x = DVector::from_column_slice(row);
                let v = &x - &mu;
                let q = (v.transpose() * &lam * &v)[(0, 0)];
                let want = -0.5 * d as f64 * (2.0 * std::f64::consts::PI).ln()
                    + 0.5 * lam.determinant().ln()
                    - 0.5 * q;
                let got = k.ln_f(i, &theta);
                assert!(
                    (got - want).abs() < 1e-9 * want.abs().max(1.0),
                    "d {d} point {i}: {got} vs {want}"
                );
            }
        }
    }
}

/// Dirichlet posterior means `E[φ_w] = (β + C_w) / (Vβ + N_S)`, within 5 standard errors
/// over 20,000 draws.
#[test]
fn multinomial_dirichlet_posterior_means_match_closed_form() {
    let k = md_kernel(4);
    let s = k.stat_of(&[0, 3, 6, 9]);
    let v = k.hyper().vocab();
    let beta = k.hyper().beta();
    let mut counts = vec![0.0; v];
    for &(w, c) in s.words() {
        counts[w as usize] = f64::from(c);
    }
    let total = v as f64 * beta + s.total() as f64;
    let draws = 20_000;
    let mut rng = SeedPlan::new(5).chain(0);
    let mut theta = k.new_param();
    let mut sum = vec![0.0; v];
    let mut sum2 = vec![0.0; v];
    for _ in 0..draws {
        k.sample_posterior(&s, &mut rng, &mut theta).unwrap();
        let norm: f64 = theta.ln_phi().iter().map(|x| x.exp()).sum();
        assert!((norm - 1.0).abs() < 1e-12);
        for (w, x) in theta.ln_phi().iter().enumerate() {
            sum[w] += x.exp();
            sum2[w] += x.exp() * x.exp();
        }
    }
    let m = draws as f64;
    for w in 0..v {
        let mean = sum[w] / m;
        let se = ((sum2[w] / m - mean * mean) / m).sqrt();
        let want = (beta + counts[w]) / total;
        assert!(
            (mean - want).abs() < 5.0 * se,
            "phi[{w}]: {mean} vs {want} (se {se})"
        );
    }
}

/// `ln f(y_i | φ)` equals the multinomial log pmf computed over the dense count vector.
#[test]
fn multinomial_dirichlet_ln_f_matches_dense_pmf() {
    let k = md_kernel(6);
    let v = k.hyper().vocab();
    let mut rng = SeedPlan::new(7).chain(0);
    let mut theta = k.new_param();
    k.sample_prior(&mut rng, &mut theta).unwrap();
    let data: &SparseCounts = k.data();
    for i in 0..data.n() {
        let (ids, cs) = data.row(i);
        let mut dense = vec![0u32; v];
        for (&w, &c) in ids.iter().zip(cs) {
            dense[w as usize] = c;
        }
        let total: u32 = dense.iter().sum();
        let mut want = ln_gamma(f64::from(total) + 1.0);
        for (w, &c) in dense.iter().enumerate() {
            want += f64::from(c) * theta.ln_phi()[w] - ln_gamma(f64::from(c) + 1.0);
        }
        let got = k.ln_f(i, &theta);
        assert!(
            (got - want).abs() < 1e-10 * want.abs().max(1.0),
            "{got} vs {want}"
        );
    }
}

/// 12 random binary points in 5 columns from `seed`, a tenth of the entries missing, under
/// `Beta(β, β)`.
fn bb_kernel(seed: u64, beta: f64) -> BetaBernoulli {
    let mut rng = SeedPlan::new(seed).chain(3);
    let entries: Vec<Option<bool>> = (0..60)
        .map(|_| {
            let u = uniform_open01(&mut rng);
            (u >= 0.1).then_some(u < 0.45)
        })
        .collect();
    BetaBernoulli::with_missing(12, 5, &entries, beta).unwrap()
}

/// The Beta-Bernoulli draws: `θ_j ~ Beta(β + k_j, β + z_j)` has mean `(β + k_j)/(2β + n_j)`;
/// 4,000 draws put each column's mean within 5 standard errors, and the moments path draws
/// the same values as the statistic's.
#[test]
fn beta_bernoulli_posterior_means_match_closed_form() {
    let k = bb_kernel(7, 0.6);
    let members = [0, 2, 3, 5, 8, 11];
    let s = k.stat_of(&members);
    let mut m = k.new_moments();
    members.iter().for_each(|&i| k.moments_add(&mut m, i));
    let mut rng = SeedPlan::new(5).chain(0);
    let (mut theta, mut other) = (k.new_param(), k.new_param());
    let draws = 4000;
    let mut sum = [0.0; 5];
    for t in 0..draws {
        k.sample_posterior(&s, &mut rng, &mut theta).unwrap();
        for (acc, lp) in sum.iter_mut().zip(theta.ln_p()) {
            *acc += lp.exp();
        }
        k.sample_moments(&m, &mut SeedPlan::new(t).chain(0), &mut other)
            .unwrap();
        let mut again = k.new_param();
        k.sample_posterior(&s, &mut SeedPlan::new(t).chain(0), &mut again)
            .unwrap();
        assert_eq!(other, again);
    }
    for (j, acc) in sum.iter().enumerate() {
        let count = |v| {
            members
                .iter()
                .filter(|&&i| k.entry(i, j) == Some(v))
                .count() as f64
        };
        let (a, b) = (0.6 + count(true), 0.6 + count(false));
        let mean = a / (a + b);
        let sd = (a * b / ((a + b) * (a + b) * (a + b + 1.0)) / draws as f64).sqrt();
        let got = acc / draws as f64;
        assert!((got - mean).abs() < 5.0 * sd, "column {j}: {got} vs {mean}");
    }
}

/// Candidate's formula for a kernel: at a drawn θ (from the posterior or the prior),
/// `ln m(X_S) = Σ ln f + ln p(θ) - ln p(θ | X_S)`.
fn check_identity<K: ParametricKernel>(k: &K, members: &[usize], seed: u64) {
    let s = k.stat_of(members);
    let mut rng = SeedPlan::new(seed).chain(0);
    let mut theta = k.new_param();
    for from_posterior in [true, false] {
        if from_posterior {
            k.sample_posterior(&s, &mut rng, &mut theta).unwrap();
        } else {
            k.sample_prior(&mut rng, &mut theta).unwrap();
        }
        let lhs = k.ln_marginal(&s);
        let rhs = members.iter().map(|&i| k.ln_f(i, &theta)).sum::<f64>()
            + k.ln_prior_density(&theta)
            - k.ln_posterior_density(&s, &theta);
        assert!(
            (lhs - rhs).abs() < 1e-7 * lhs.abs().max(1.0),
            "ln m {lhs} vs {rhs} for {members:?}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The conjugacy identity for Normal-Wishart, any dimension 1..5 and subset.
    #[test]
    fn normal_wishart_conjugacy_identity(d in 1usize..6, seed in 0u64..1000, mask in 0u32..4096) {
        let rows = nw_rows(12, d, seed);
        let k = nw_kernel(&rows);
        let members: Vec<usize> = (0..12).filter(|i| mask >> i & 1 == 1).collect();
        check_identity(&k, &members, seed + 1);
    }

    /// The conjugacy identity for Beta-Bernoulli, any subset of 12 random binary points.
    #[test]
    fn beta_bernoulli_conjugacy_identity(seed in 0u64..1000, mask in 0u32..4096, beta in 0.05f64..3.0) {
        let k = bb_kernel(seed, beta);
        let members: Vec<usize> = (0..12).filter(|i| mask >> i & 1 == 1).collect();
        check_identity(&k, &members, seed + 1);
    }

    /// The conjugacy identity for Multinomial-Dirichlet, any subset.
    #[test]
    fn multinomial_dirichlet_conjugacy_identity(seed in 0u64..1000, mask in 0u32..4096) {
        let k = md_kernel(seed);
        let members: Vec<usize> = (0..12).filter(|i| mask >> i & 1 == 1).collect();
        check_identity(&k, &members, seed + 1);
    }
}

/// The moments path of the parameter draw (`sample_moments`, used by the parallel launches)
/// draws the same `θ` as `sample_posterior` on the statistic of the same points, given the
/// same stream (up to rounding), for both kernels, with moments merged from two halves.
#[test]
fn moments_draws_equal_statistic_draws() {
    let k = nw_kernel(&nw_rows(30, 3, 9));
    let members: Vec<usize> = (0..30).filter(|i| i % 4 != 1).collect();
    let (lo, hi) = members.split_at(members.len() / 2);
    let mut m = k.new_moments();
    let mut m_hi = k.new_moments();
    lo.iter().for_each(|&i| k.moments_add(&mut m, i));
    hi.iter().for_each(|&i| k.moments_add(&mut m_hi, i));
    k.moments_merge(&mut m, &m_hi);
    assert_eq!(k.moments_count(&m), members.len());
    let stat = k.stat_of(&members);
    for seed in 0..20 {
        let (mut a, mut b) = (k.new_param(), k.new_param());
        k.sample_posterior(&stat, &mut SeedPlan::new(seed).chain(0), &mut a)
            .unwrap();
        k.sample_moments(&m, &mut SeedPlan::new(seed).chain(0), &mut b)
            .unwrap();
        for (x, y) in k.param_mean(&a).iter().zip(k.param_mean(&b)) {
            assert!((x - y).abs() < 1e-9 * (1.0 + x.abs()), "{x} vs {y}");
        }
        for (x, y) in k.param_precision(&a).iter().zip(k.param_precision(&b)) {
            assert!((x - y).abs() < 1e-9 * (1.0 + x.abs()), "{x} vs {y}");
        }
    }
    let md = md_kernel(4);
    let docs: Vec<usize> = (0..12).filter(|i| i % 3 == 0).collect();
    let mut m = md.new_moments();
    docs.iter().for_each(|&i| md.moments_add(&mut m, i));
    let stat = md.stat_of(&docs);
    let (mut a, mut b) = (md.new_param(), md.new_param());
    md.sample_posterior(&stat, &mut SeedPlan::new(1).chain(0), &mut a)
        .unwrap();
    md.sample_moments(&m, &mut SeedPlan::new(1).chain(0), &mut b)
        .unwrap();
    assert_eq!(a, b);
}
