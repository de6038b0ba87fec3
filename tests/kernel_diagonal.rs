//! The diagonal-covariance kernel: with d = 1 it is the Normal-Wishart kernel; conjugacy
//! identities against an independent per-dimension reference; statistics after random update
//! sequences against batch statistics; the candidate's formula for its parameter draws; its
//! weighted SVA statistics; unit-equivariant defaults; the automatic choice of the kernel.

use crate::kernel_support;

use std::sync::Arc;

use kernel_support::run_update_ops;
use nrmm::data::{Dataset, DenseData};
use nrmm::kernel::diagonal::full_covariance_problem;
use nrmm::kernel::{
    ConjugateKernel, DiagHyper, DiagStat, Diagonal, NormalWishart, NwHyper, ParametricKernel,
};
use nrmm::model::{AnyKernel, KernelKind, ModelSpec, NwDefaults};
use nrmm::rng::{uniform_open01, SeedPlan};
use nrmm::sva::SvaKernel;
use proptest::prelude::*;
use statrs::function::gamma::ln_gamma;

// ---------------------------------------------------------------------------------------------
// Independent reference: per dimension, MATH §2.1's first form with d = 1, from raw sums.

fn ln_marginal_reference(rows: &[&[f64]], h: &DiagHyper) -> f64 {
    if rows.is_empty() {
        return 0.0;
    }
    let n = rows.len() as f64;
    let (r, nu) = (h.r(), h.nu());
    let rn = r + n;
    (0..h.dim())
        .map(|j| {
            let (xi, psi) = (h.xi()[j], h.psi()[j]);
            let s: f64 = rows.iter().map(|x| x[j]).sum();
            let q: f64 = rows.iter().map(|x| x[j] * x[j]).sum();
            let xi_n = (r * xi + s) / rn;
            let psi_n = psi + q + r * xi * xi - rn * xi_n * xi_n;
            -0.5 * n * std::f64::consts::PI.ln() + 0.5 * (r / rn).ln() + 0.5 * nu * psi.ln()
                - 0.5 * (nu + n) * psi_n.ln()
                + ln_gamma((nu + n) / 2.0)
                - ln_gamma(nu / 2.0)
        })
        .sum()
}

fn rows_of<'a>(data: &'a DenseData, points: &[usize]) -> Vec<&'a [f64]> {
    points.iter().map(|&i| data.row(i)).collect()
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1.0)
}

fn max_rel_diff(a: &[f64], b: &[f64]) -> f64 {
    let scale = a.iter().chain(b).fold(1.0f64, |m, v| m.max(v.abs()));
    a.iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
        / scale
}

// ---------------------------------------------------------------------------------------------
// Random problems.

#[derive(Clone, Debug)]
struct Problem {
    points: Vec<Vec<f64>>,
    xi: Vec<f64>,
    psi: Vec<f64>,
    r: f64,
    nu: f64,
}

impl Problem {
    fn kernel(&self) -> Diagonal {
        let data = DenseData::from_rows(&self.points).unwrap();
        let hyper = DiagHyper::new(self.xi.clone(), self.psi.clone(), self.r, self.nu).unwrap();
        Diagonal::new(Arc::new(data), hyper).unwrap()
    }
}

fn problem(max_d: usize, max_n: usize) -> impl Strategy<Value = Problem> {
    (1usize..=max_d, 1usize..=max_n).prop_flat_map(|(d, n)| {
        (
            prop::collection::vec(prop::collection::vec(-3.0f64..3.0, d), n),
            prop::collection::vec(-1.0f64..1.0, d),
            prop::collection::vec(0.05f64..3.0, d),
            0.05f64..3.0,
            0.1f64..8.0,
        )
            .prop_map(|(points, xi, psi, r, nu)| Problem {
                points,
                xi,
                psi,
                r,
                nu,
            })
    })
}

/// Every field of `s` against the batch statistic of `members` and its definition.
fn assert_matches_batch(k: &Diagonal, s: &DiagStat, members: &[usize], tol: f64) {
    let batch = k.stat_of(members);
    assert_eq!(s.len(), members.len());
    assert!(max_rel_diff(s.mean(), batch.mean()) < tol, "mean");
    assert!(
        max_rel_diff(s.sum_squares(), batch.sum_squares()) < tol,
        "sums of squares"
    );
    assert!(max_rel_diff(s.psi_n(), batch.psi_n()) < tol, "psi_n");
    assert!(close(s.ln_psi_n(), batch.ln_psi_n(), tol), "ln psi_n");
    let xs = rows_of(k.data(), members);
    for j in 0..k.dim() {
        if xs.is_empty() {
            assert_eq!(batch.mean()[j], 0.0);
            continue;
        }
        let mean = xs.iter().map(|x| x[j]).sum::<f64>() / xs.len() as f64;
        let m2: f64 = xs.iter().map(|x| (x[j] - mean) * (x[j] - mean)).sum();
        assert!(close(batch.sum_squares()[j], m2, tol), "M2[{j}]");
        assert!(
            close(batch.mean()[j], mean - k.hyper().xi()[j], tol),
            "mean[{j}]"
        );
    }
    for i in 0..k.n_points() {
        if !members.contains(&i) {
            assert!(close(
                k.ln_predictive(i, s),
                k.ln_predictive(i, &batch),
                tol
            ));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn marginal_equals_raw_sum_reference(p in problem(5, 8), mask in any::<u16>()) {
        let k = p.kernel();
        let members: Vec<usize> = (0..p.points.len()).filter(|i| mask >> i & 1 == 1).collect();
        let got = k.ln_marginal(&k.stat_of(&members));
        let reference = ln_marginal_reference(&rows_of(k.data(), &members), k.hyper());
        prop_assert!(close(got, reference, 1e-9), "kernel {got} vs reference {reference}");
    }

    #[test]
    fn predictive_is_ratio_of_marginals(p in problem(5, 8), mask in any::<u16>(), pick in any::<usize>()) {
        let k = p.kernel();
        let n = p.points.len();
        let i = pick % n;
        let members: Vec<usize> = (0..n).filter(|&j| j != i && mask >> j & 1 == 1).collect();
        let s = k.stat_of(&members);
        let mut with_i = s.clone();
        k.add(&mut with_i, i);
        let ratio = k.ln_marginal(&with_i) - k.ln_marginal(&s);
        let pred = k.ln_predictive(i, &s);
        prop_assert!(close(pred, ratio, 1e-9), "predictive {pred} vs ratio {ratio}");
        prop_assert!(pred <= k.ln_predictive_max(&s));
        let point = k.ln_predictive_point(&p.points[i], &s).unwrap();
        prop_assert!(close(point, pred, 1e-12), "point {point} vs index {pred}");
        // The member predictive from the statistic holding i.
        if let Some(member) = k.ln_predictive_member(i, &with_i) {
            prop_assert!(close(member, pred, 1e-9), "member {member} vs {pred}");
        } else {
            prop_assert!(members.is_empty(), "declined for a cluster of {}", members.len() + 1);
        }
    }

    #[test]
    fn pair_marginal_is_marginal_of_union(p in problem(5, 8), labels in prop::collection::vec(0u8..3, 8)) {
        let k = p.kernel();
        let n = p.points.len();
        let a: Vec<usize> = (0..n).filter(|&i| labels[i] == 0).collect();
        let b: Vec<usize> = (0..n).filter(|&i| labels[i] == 1).collect();
        let union: Vec<usize> = (0..n).filter(|&i| labels[i] <= 1).collect();
        let (sa, sb) = (k.stat_of(&a), k.stat_of(&b));
        let expected = k.ln_marginal(&k.stat_of(&union));
        prop_assert!(close(k.ln_marginal_pair(&sa, &sb), expected, 1e-9));
        prop_assert!(close(k.ln_marginal_pair(&sb, &sa), expected, 1e-9));
        let mut merged = sa.clone();
        k.merge(&mut merged, &sb);
        prop_assert!(close(k.ln_marginal(&merged), expected, 1e-9));
        assert_matches_batch(&k, &merged, &union, 1e-9);
    }

    #[test]
    fn random_update_sequences_match_batch_statistics(
        p in problem(5, 10),
        ops in prop::collection::vec((0u8..4, any::<usize>(), any::<usize>()), 1..40),
    ) {
        let k = p.kernel();
        let (stats, members) = run_update_ops(&k, &ops)?;
        for c in 0..3 {
            assert_matches_batch(&k, &stats[c], &members[c], 1e-9);
        }
    }

    /// With d = 1 the diagonal kernel is the Normal-Wishart kernel.
    #[test]
    fn one_dimension_is_the_normal_wishart_kernel(
        p in problem(1, 8),
        labels in prop::collection::vec(0u8..3, 8),
        pick in any::<usize>(),
    ) {
        let diag = p.kernel();
        let data = DenseData::from_rows(&p.points).unwrap();
        let nw = NormalWishart::new(
            Arc::new(data),
            NwHyper::new(p.xi.clone(), p.psi.clone(), p.r, p.nu).unwrap(),
        )
        .unwrap();
        let n = p.points.len();
        let a: Vec<usize> = (0..n).filter(|&i| labels[i] == 0).collect();
        let b: Vec<usize> = (0..n).filter(|&i| labels[i] == 1).collect();
        let (da, db) = (diag.stat_of(&a), diag.stat_of(&b));
        let (na, nb) = (nw.stat_of(&a), nw.stat_of(&b));
        prop_assert!(close(diag.ln_marginal(&da), nw.ln_marginal(&na), 1e-12));
        prop_assert!(close(diag.ln_marginal_pair(&da, &db), nw.ln_marginal_pair(&na, &nb), 1e-12));
        prop_assert!(close(diag.ln_predictive_max(&da), nw.ln_predictive_max(&na), 1e-12));
        let i = pick % n;
        if !a.contains(&i) {
            prop_assert!(close(diag.ln_predictive(i, &da), nw.ln_predictive(i, &na), 1e-12));
        } else {
            let (x, y) = (diag.ln_predictive_member(i, &da), nw.ln_predictive_member(i, &na));
            prop_assert_eq!(x.is_some(), y.is_some());
            if let (Some(x), Some(y)) = (x, y) {
                prop_assert!(close(x, y, 1e-10), "member {x} vs {y}");
            }
        }
    }

    /// SVA's weighted statistics with integer weights are the kernel's statistics of the
    /// multiset, and a merge equals adding every point to one statistic.
    #[test]
    fn soft_statistics_with_integer_weights_are_the_kernels(
        p in problem(4, 6),
        mult in prop::collection::vec(0usize..3, 6),
        probe in any::<usize>(),
    ) {
        let k = p.kernel();
        let n = p.points.len();
        let mut soft = k.soft_empty().unwrap();
        let mut other = k.soft_empty().unwrap();
        let mut both = k.soft_empty().unwrap();
        let mut multiset = Vec::new();
        let mut point = k.new_point();
        for (i, &m) in mult.iter().enumerate().take(n) {
            k.load_point(i, &mut point);
            if m > 0 {
                k.soft_add(&mut soft, &point, m as f64);
                k.soft_add(&mut both, &point, m as f64);
                multiset.extend(std::iter::repeat_n(i, m));
            }
            k.soft_add(&mut other, &point, 0.5);
            k.soft_add(&mut both, &point, 0.5);
        }
        // The kernel's statistic of the multiset, by repeated adds.
        let mut hard = k.empty_stat();
        for &i in &multiset {
            k.add(&mut hard, i);
        }
        prop_assert!(close(k.soft_ln_marginal(&soft), k.ln_marginal(&hard), 1e-9));
        let j = probe % n;
        k.load_point(j, &mut point);
        prop_assert!(close(k.soft_ln_predictive(&point, &soft), k.ln_predictive(j, &hard), 1e-9));
        k.soft_merge(&mut soft, &other);
        prop_assert!(close(k.soft_ln_marginal(&soft), k.soft_ln_marginal(&both), 1e-9));
        prop_assert!(close(k.soft_ln_predictive(&point, &soft), k.soft_ln_predictive(&point, &both), 1e-9));
    }
}

// ---------------------------------------------------------------------------------------------
// Parameter draws.

fn noisy_kernel(n: usize, d: usize, seed: u64) -> Diagonal {
    let mut rng = SeedPlan::new(seed).chain(0);
    let rows: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            (0..d)
                .map(|j| 3.0 * uniform_open01(&mut rng) + (i % 3) as f64 * (j as f64 + 1.0))
                .collect()
        })
        .collect();
    let data = DenseData::from_rows(&rows).unwrap();
    let hyper = DiagHyper::from_data(&data, 0.25, 0.1, 3.0).unwrap();
    Diagonal::new(Arc::new(data), hyper).unwrap()
}

/// The candidate's formula `ln m(X) = Σ ln f(x_i | θ) + ln p(θ) - ln p(θ | X)` at drawn θ,
/// for posterior draws from the statistic and from the raw moments.
#[test]
fn parameter_draws_satisfy_the_candidates_formula() {
    let k = noisy_kernel(15, 4, 3);
    let mut rng = SeedPlan::new(4).chain(0);
    let mut theta = k.new_param();
    for members in [
        vec![],
        vec![2],
        vec![0, 2, 3, 5, 8, 9, 11],
        (0..15).collect(),
    ] {
        let s = k.stat_of(&members);
        let mut m = k.new_moments();
        for &i in &members {
            k.moments_add(&mut m, i);
        }
        assert_eq!(k.moments_count(&m), members.len());
        for draw in 0..20 {
            if draw % 2 == 0 {
                k.sample_posterior(&s, &mut rng, &mut theta).unwrap();
            } else {
                k.sample_moments(&m, &mut rng, &mut theta).unwrap();
            }
            let lik: f64 = members.iter().map(|&i| k.ln_f(i, &theta)).sum();
            let got = lik + k.ln_prior_density(&theta) - k.ln_posterior_density(&s, &theta);
            let want = k.ln_marginal(&s);
            assert!(close(got, want, 1e-9), "{members:?}: {got} vs {want}");
        }
    }
}

/// `ln f` against a direct evaluation of the Gaussian density, and posterior means of the
/// precisions against `ν_n / ψ_{n,j}` within 5 standard errors over 20,000 draws.
#[test]
fn parameter_draws_have_the_posterior_moments() {
    let k = noisy_kernel(12, 3, 5);
    let members = [1usize, 4, 5, 7, 10];
    let s = k.stat_of(&members);
    let mut rng = SeedPlan::new(6).chain(0);
    let mut theta = k.new_param();
    let draws = 20_000;
    let mut sums = [0.0f64; 3];
    let mut squares = [0.0f64; 3];
    for _ in 0..draws {
        k.sample_posterior(&s, &mut rng, &mut theta).unwrap();
        for j in 0..3 {
            sums[j] += theta.precision()[j];
            squares[j] += theta.precision()[j] * theta.precision()[j];
        }
    }
    let nu_n = k.hyper().nu() + members.len() as f64;
    for j in 0..3 {
        let mean = sums[j] / draws as f64;
        let sd = (squares[j] / draws as f64 - mean * mean).sqrt();
        let want = nu_n / s.psi_n()[j];
        assert!(
            (mean - want).abs() < 5.0 * sd / (draws as f64).sqrt(),
            "dimension {j}: {mean} vs {want}"
        );
    }
    let mean = k.param_mean(&theta);
    let x = k.data().row(0);
    let direct: f64 = (0..3)
        .map(|j| {
            let l = theta.precision()[j];
            -0.5 * (2.0 * std::f64::consts::PI / l).ln() - 0.5 * l * (x[j] - mean[j]).powi(2)
        })
        .sum();
    assert!(close(k.ln_f(0, &theta), direct, 1e-12));
}

// ---------------------------------------------------------------------------------------------
// Hyperparameters, defaults and the automatic choice.

#[test]
fn hyperparameters_are_validated_also_when_deserialised() {
    assert!(DiagHyper::new(vec![0.0, 1.0], vec![1.0, 2.0], 0.5, 0.5).is_ok());
    assert!(DiagHyper::new(vec![], vec![], 1.0, 3.0).is_err());
    assert!(DiagHyper::new(vec![0.0], vec![1.0, 1.0], 1.0, 3.0).is_err());
    assert!(DiagHyper::new(vec![0.0], vec![0.0], 1.0, 3.0).is_err());
    assert!(DiagHyper::new(vec![f64::NAN], vec![1.0], 1.0, 3.0).is_err());
    assert!(DiagHyper::new(vec![0.0], vec![1.0], 0.0, 3.0).is_err());
    assert!(DiagHyper::new(vec![0.0], vec![1.0], 1.0, 0.0).is_err());
    let h = DiagHyper::new(vec![0.5, -1.0], vec![1.0, 2.0], 0.5, 3.5).unwrap();
    let text = serde_json::to_string(&h).unwrap();
    assert_eq!(serde_json::from_str::<DiagHyper>(&text).unwrap(), h);
    let bad = text.replace("2.0", "-2.0");
    assert!(serde_json::from_str::<DiagHyper>(&bad).is_err());
}

/// Rescaling and shifting columns changes every cluster's log marginal by `-n_c Σ ln|a_j|`
/// under the default hyperparameters, so the posterior over partitions is unchanged; a
/// constant column only adds a term that is the same for every partition with the same sizes.
#[test]
fn defaults_are_unit_equivariant() {
    let base = noisy_kernel(10, 3, 7);
    let scales = [1e-3, 250.0, -4.0];
    let shifts = [5.0, -1e4, 0.3];
    let rows: Vec<Vec<f64>> = (0..10)
        .map(|i| {
            (0..3)
                .map(|j| scales[j] * base.data().row(i)[j] + shifts[j])
                .collect()
        })
        .collect();
    let data = DenseData::from_rows(&rows).unwrap();
    let hyper = DiagHyper::from_data(&data, 0.25, 0.1, 3.0).unwrap();
    let moved = Diagonal::new(Arc::new(data), hyper).unwrap();
    let ln_jacobian: f64 = scales.iter().map(|a: &f64| a.abs().ln()).sum();
    for members in [vec![0], vec![1, 2, 9], (0..10).collect::<Vec<_>>()] {
        let a = base.ln_marginal(&base.stat_of(&members));
        let b = moved.ln_marginal(&moved.stat_of(&members));
        let want = a - members.len() as f64 * ln_jacobian;
        assert!(close(b, want, 1e-9), "{members:?}: {b} vs {want}");
    }
}

/// For d = 1 the diagonal defaults are the Normal-Wishart ones with the same constants.
#[test]
fn one_dimensional_defaults_match_the_normal_wishart_policy() {
    let rows: Vec<Vec<f64>> = [0.3, 1.7, -2.0, 4.5, 0.9]
        .iter()
        .map(|&v| vec![v])
        .collect();
    let data = DenseData::from_rows(&rows).unwrap();
    let (share, r, nu_minus_d) = (0.25, 0.1, 3.0);
    let h = DiagHyper::from_data(&data, share, r, nu_minus_d).unwrap();
    let mean = rows.iter().map(|x| x[0]).sum::<f64>() / 5.0;
    let var = rows.iter().map(|x| (x[0] - mean).powi(2)).sum::<f64>() / 4.0;
    let nu = 1.0 + nu_minus_d;
    assert!(close(h.xi()[0], mean, 1e-15));
    assert_eq!(h.nu(), nu);
    assert_eq!(h.r(), r);
    // The expected cluster variance ψ / (ν - 2) is `share` times the data variance.
    assert!(close(h.psi()[0] / (nu - 2.0), share * var, 1e-14));
}

/// For d = 1 the model's default diagonal kernel is its default Normal-Wishart kernel, under
/// both default policies and with a given ν.
#[test]
fn one_dimensional_model_defaults_are_the_normal_wishart_ones() {
    let rows: Vec<Vec<f64>> = [0.3, 1.7, -2.0, 4.5, 0.9, 2.2]
        .iter()
        .map(|&v| vec![v])
        .collect();
    let data = DenseData::from_rows(&rows).unwrap();
    for defaults in [NwDefaults::Scaled, NwDefaults::Reference] {
        for nu in [None, Some(1.5), Some(9.0)] {
            let spec = ModelSpec {
                nw_defaults: defaults,
                nw_nu: nu,
                ..ModelSpec::default()
            };
            let (d, w) = (
                DiagHyper::for_settings(&spec.kernel_settings(), &data).unwrap(),
                NwHyper::for_settings(&spec.kernel_settings(), &data).unwrap(),
            );
            assert!(close(d.xi()[0], w.xi()[0], 1e-14), "{defaults:?} {nu:?}");
            assert!(close(d.psi()[0], w.psi()[0], 1e-12), "{defaults:?} {nu:?}");
            assert_eq!((d.r(), d.nu()), (w.r(), w.nu()), "{defaults:?} {nu:?}");
        }
    }
}

fn dense(rows: Vec<Vec<f64>>) -> DenseData {
    DenseData::from_rows(&rows).unwrap()
}

fn wobble(i: usize, j: usize) -> f64 {
    ((i * 7 + j * 13) % 11) as f64 * 0.37 + ((i * j) % 5) as f64
}

#[test]
fn the_full_covariance_is_refused_for_high_dimension_constant_or_collinear_columns() {
    let fine = dense(
        (0..20)
            .map(|i| vec![wobble(i, 0), wobble(i, 1), wobble(i, 2)])
            .collect(),
    );
    assert_eq!(full_covariance_problem(&fine), None);
    let wide = dense(
        (0..8)
            .map(|i| (0..4).map(|j| wobble(i, j)).collect())
            .collect(),
    );
    assert!(full_covariance_problem(&wide).unwrap().contains("d = 4"));
    let constant = dense(
        (0..20)
            .map(|i| vec![wobble(i, 0), 3.0, wobble(i, 2)])
            .collect(),
    );
    assert!(full_covariance_problem(&constant)
        .unwrap()
        .contains("column 2 is constant"));
    let collinear = dense(
        (0..20)
            .map(|i| {
                vec![
                    wobble(i, 0),
                    wobble(i, 1),
                    2.0 * wobble(i, 0) - wobble(i, 1) + 1.0,
                ]
            })
            .collect(),
    );
    assert!(full_covariance_problem(&collinear)
        .unwrap()
        .contains("column 3"));
    // Judged on correlations: wildly different units change nothing.
    let units = dense(
        (0..20)
            .map(|i| vec![1e-6 * wobble(i, 0), 1e6 * wobble(i, 1), wobble(i, 2)])
            .collect(),
    );
    assert_eq!(full_covariance_problem(&units), None);
}

#[test]
fn the_model_chooses_the_diagonal_kernel_and_says_why() {
    let spec = ModelSpec::default();
    let wide = Dataset::Dense(dense(
        (0..8)
            .map(|i| (0..4).map(|j| wobble(i, j)).collect())
            .collect(),
    ));
    let choice = spec.kernel_for(&wide);
    assert_eq!(choice.kind, KernelKind::Diag);
    assert!(choice.reason.unwrap().contains("diagonal"));
    assert!(matches!(
        spec.build_kernel(wide.clone()).unwrap(),
        AnyKernel::Diag(_)
    ));
    // Asked for, or with a scale matrix given, the kernel is not replaced and nothing is said.
    let nw = ModelSpec {
        kernel: Some(KernelKind::Nw),
        ..ModelSpec::default()
    };
    assert_eq!(nw.kernel_for(&wide).reason, None);
    let fine = Dataset::Dense(dense(
        (0..20).map(|i| vec![wobble(i, 0), wobble(i, 1)]).collect(),
    ));
    let choice = spec.kernel_for(&fine);
    assert_eq!((choice.kind, choice.reason), (KernelKind::Nw, None));
    let diag = ModelSpec {
        kernel: Some(KernelKind::Diag),
        nw_psi: Some(vec![1.0, 2.0]),
        nw_r: Some(0.5),
        ..ModelSpec::default()
    };
    let AnyKernel::Diag(k) = diag.build_kernel(fine).unwrap() else {
        panic!("not the diagonal kernel");
    };
    assert_eq!(k.hyper().psi(), &[1.0, 2.0]);
    assert_eq!(k.hyper().r(), 0.5);
}

/// Every column constant: the floor keeps ψ positive and the kernel usable.
#[test]
fn constant_columns_get_a_positive_scale() {
    let data = dense((0..6).map(|i| vec![2.0, wobble(i, 1)]).collect());
    let h = DiagHyper::from_data(&data, 0.25, 0.1, 3.0).unwrap();
    assert!(h.psi()[0] > 0.0 && h.psi()[0] < 1e-9 * h.psi()[1]);
    let all = dense((0..6).map(|_| vec![2.0, -1.0]).collect());
    let h = DiagHyper::from_data(&all, 0.25, 0.1, 3.0).unwrap();
    assert!(h.psi().iter().all(|&p| p > 0.0));
    let k = Diagonal::new(Arc::new(all), h).unwrap();
    assert!(k.ln_marginal(&k.stat_of(&[0, 1, 2])).is_finite());
}
