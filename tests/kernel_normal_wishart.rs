//! Normal-Wishart kernel (MATH §2.1): conjugacy identities, agreement with an independent
//! raw-sum implementation, statistics and cached factors after random update sequences, the
//! downdate fallback, hyperparameter validation, and the toy data's reference figures.

use crate::kernel_support;

use std::path::PathBuf;
use std::sync::Arc;

use kernel_support::run_update_ops;
use nalgebra::{DMatrix, DVector};
use nrmm::data::DenseData;
use nrmm::kernel::{ConjugateKernel, NormalWishart, NwHyper, NwStat};
use nrmm::Error;
use proptest::prelude::*;
use statrs::function::gamma::ln_gamma;

// ---------------------------------------------------------------------------------------------
// Independent reference: MATH §2.1's first form, from raw sums s = Σx and Q = Σxxᵀ, with
// nalgebra determinants.

fn psi_n_reference(rows: &[&[f64]], h: &NwHyper) -> DMatrix<f64> {
    let d = h.dim();
    let xi = DVector::from_column_slice(h.xi());
    let psi = DMatrix::from_row_slice(d, d, h.psi());
    let mut s = DVector::zeros(d);
    let mut q = DMatrix::zeros(d, d);
    for x in rows {
        let x = DVector::from_column_slice(x);
        q += &x * x.transpose();
        s += x;
    }
    let n = rows.len() as f64;
    let rn = h.r() + n;
    let xi_n = (&xi * h.r() + s) / rn;
    psi + q + &xi * xi.transpose() * h.r() - &xi_n * xi_n.transpose() * rn
}

fn ln_marginal_reference(rows: &[&[f64]], h: &NwHyper) -> f64 {
    if rows.is_empty() {
        return 0.0;
    }
    let d = h.dim();
    let df = d as f64;
    let n = rows.len() as f64;
    let (r, nu) = (h.r(), h.nu());
    let psi = DMatrix::from_row_slice(d, d, h.psi());
    let psi_n = psi_n_reference(rows, h);
    let mut value = -0.5 * n * df * std::f64::consts::PI.ln()
        + 0.5 * df * (r.ln() - (r + n).ln())
        + 0.5 * nu * psi.determinant().ln()
        - 0.5 * (nu + n) * psi_n.determinant().ln();
    for i in 1..=d {
        value += ln_gamma((nu + n + 1.0 - i as f64) / 2.0) - ln_gamma((nu + 1.0 - i as f64) / 2.0);
    }
    value
}

fn rows_of<'a>(data: &'a DenseData, points: &[usize]) -> Vec<&'a [f64]> {
    points.iter().map(|&i| data.row(i)).collect()
}

// ---------------------------------------------------------------------------------------------
// Random problems.

#[derive(Clone, Debug)]
struct Problem {
    d: usize,
    points: Vec<Vec<f64>>,
    xi: Vec<f64>,
    psi: Vec<f64>,
    r: f64,
    nu: f64,
}

impl Problem {
    fn kernel(&self) -> NormalWishart {
        let data = DenseData::from_rows(&self.points).unwrap();
        let hyper = NwHyper::new(self.xi.clone(), self.psi.clone(), self.r, self.nu).unwrap();
        NormalWishart::new(Arc::new(data), hyper).unwrap()
    }
}

fn problem(max_n: usize) -> impl Strategy<Value = Problem> {
    (1usize..=4, 1usize..=max_n).prop_flat_map(|(d, n)| {
        (
            prop::collection::vec(prop::collection::vec(-3.0f64..3.0, d), n),
            prop::collection::vec(-1.0f64..1.0, d),
            prop::collection::vec(-1.0f64..1.0, d * d),
            0.05f64..3.0,
            0.1f64..8.0,
            0.2f64..2.0,
        )
            .prop_map(move |(points, xi, b, r, nu_excess, ridge)| {
                let b = DMatrix::from_row_slice(d, d, &b);
                let psi = &b * b.transpose() + DMatrix::identity(d, d) * ridge;
                Problem {
                    d,
                    points,
                    xi,
                    psi: psi.transpose().as_slice().to_vec(),
                    r,
                    nu: d as f64 - 1.0 + nu_excess,
                }
            })
    })
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1.0)
}

/// The largest difference relative to the largest value, or to 1 when all are smaller (as
/// `close`): the data are of order 1, and removing a point cancels to an error that is small
/// against the statistic before the removal, not against what remains (two nearly equal
/// points leave a scatter of 1e-8 after their neighbours are removed).
fn max_rel_diff(a: &[f64], b: &[f64]) -> f64 {
    let scale = a.iter().chain(b).fold(1.0f64, |m, v| m.max(v.abs()));
    a.iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
        / scale
}

/// The cached factor against an independent factorisation of Ψ_n built from raw data.
fn assert_factor_is_fresh(k: &NormalWishart, s: &NwStat, members: &[usize], tol: f64) {
    let d = k.dim();
    let psi_n = psi_n_reference(&rows_of(k.data(), members), k.hyper());
    let l = psi_n.clone().cholesky().expect("Psi_n is SPD").l();
    let cached = DMatrix::from_fn(d, d, |i, j| if i >= j { s.chol()[j * d + i] } else { 0.0 });
    let diff = (&cached - &l).abs().max() / l.abs().max();
    assert!(
        diff < tol,
        "cached factor differs from a fresh one by {diff:e}"
    );
    let ln_det = psi_n.determinant().ln();
    assert!(close(s.ln_det_psi_n(), ln_det, tol));
}

/// Every field of `s` against the batch statistic of `members`.
fn assert_matches_batch(k: &NormalWishart, s: &NwStat, members: &[usize], tol: f64) {
    let batch = k.stat_of(members);
    assert_eq!(s.len(), members.len());
    assert!(max_rel_diff(s.mean(), batch.mean()) < tol, "mean");
    assert!(max_rel_diff(s.scatter(), batch.scatter()) < tol, "scatter");
    assert!(max_rel_diff(s.chol(), batch.chol()) < tol, "factor");
    assert!(close(s.ln_det_psi_n(), batch.ln_det_psi_n(), tol), "ln det");
    // The batch scatter itself against its definition Σ (x - x̄)(x - x̄)ᵀ.
    let d = k.dim();
    if !members.is_empty() {
        let xs = rows_of(k.data(), members);
        let mut mean = vec![0.0; d];
        for x in &xs {
            for (m, v) in mean.iter_mut().zip(x.iter()) {
                *m += v / xs.len() as f64;
            }
        }
        for j in 0..d {
            for i in j..d {
                let m2: f64 = xs.iter().map(|x| (x[i] - mean[i]) * (x[j] - mean[j])).sum();
                assert!(close(s.scatter()[j * d + i], m2, tol), "M2[{i}][{j}]");
            }
            assert!(
                close(s.mean()[j], mean[j] - k.hyper().xi()[j], tol),
                "mean[{j}]"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Conjugacy identities.

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn marginal_equals_raw_sum_reference(p in problem(8), mask in any::<u16>()) {
        let k = p.kernel();
        let members: Vec<usize> = (0..p.points.len()).filter(|i| mask >> i & 1 == 1).collect();
        let s = k.stat_of(&members);
        let reference = ln_marginal_reference(&rows_of(k.data(), &members), k.hyper());
        let got = k.ln_marginal(&s);
        prop_assert!(close(got, reference, 1e-9), "kernel {got} vs reference {reference}");
    }

    #[test]
    fn predictive_is_ratio_of_marginals(p in problem(8), mask in any::<u16>(), pick in any::<usize>()) {
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
        let point = k.ln_predictive_point(&p.points[i], &s).unwrap();
        prop_assert!(close(point, pred, 1e-12), "point {point} vs index {pred}");
        // The Student-t form of MATH §2.1, from the reference Ψ_n.
        let d = p.d as f64;
        let h = k.hyper();
        let nf = members.len() as f64;
        let rn = h.r() + nf;
        let nu_t = h.nu() + nf - d + 1.0;
        let rows = rows_of(k.data(), &members);
        let mut xi_n = DVector::from_column_slice(h.xi()) * h.r();
        for x in &rows {
            xi_n += DVector::from_column_slice(x);
        }
        xi_n /= rn;
        let sigma = psi_n_reference(&rows, h) * ((rn + 1.0) / (rn * nu_t));
        let diff = DVector::from_column_slice(&p.points[i]) - xi_n;
        let maha = (diff.transpose() * sigma.clone().try_inverse().unwrap() * &diff)[(0, 0)];
        let student_t = ln_gamma((nu_t + d) / 2.0) - ln_gamma(nu_t / 2.0)
            - d / 2.0 * (nu_t * std::f64::consts::PI).ln()
            - 0.5 * sigma.determinant().ln()
            - (nu_t + d) / 2.0 * (maha / nu_t).ln_1p();
        prop_assert!(close(pred, student_t, 1e-9), "predictive {pred} vs Student-t {student_t}");
    }

    #[test]
    fn pair_marginal_is_marginal_of_union(p in problem(8), labels in prop::collection::vec(0u8..3, 8)) {
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
        assert_factor_is_fresh(&k, &merged, &union, 1e-9);
    }

    #[test]
    fn random_update_sequences_match_batch_statistics(
        p in problem(10),
        ops in prop::collection::vec((0u8..4, any::<usize>(), any::<usize>()), 1..40),
    ) {
        let k = p.kernel();
        let (stats, members) = run_update_ops(&k, &ops)?;
        for c in 0..3 {
            assert_matches_batch(&k, &stats[c], &members[c], 1e-9);
            assert_factor_is_fresh(&k, &stats[c], &members[c], 1e-9);
            let reference = ln_marginal_reference(&rows_of(k.data(), &members[c]), k.hyper());
            prop_assert!(close(k.ln_marginal(&stats[c]), reference, 1e-9));
        }
    }
}

#[test]
fn empty_statistic_gives_zero_marginal_and_prior_predictive() {
    let p = Problem {
        d: 2,
        points: vec![vec![0.5, -1.0], vec![2.0, 0.3]],
        xi: vec![0.1, 0.2],
        psi: vec![2.0, 0.3, 0.3, 1.0],
        r: 0.5,
        nu: 3.0,
    };
    let k = p.kernel();
    let empty = k.empty_stat();
    assert_eq!(k.ln_marginal(&empty), 0.0);
    let single = k.stat_of(&[1]);
    assert!(close(
        k.ln_predictive(1, &empty),
        k.ln_marginal(&single),
        1e-13
    ));
    assert!(close(
        k.ln_marginal_pair(&empty, &single),
        k.ln_marginal(&single),
        0.0
    ));
    assert!(close(
        k.ln_marginal_pair(&single, &empty),
        k.ln_marginal(&single),
        0.0
    ));
}

/// Adding a point far along the direction in which Ψ is tiny, then removing it again, asks
/// the downdate to shrink a pivot by a factor ~1e-13: it must refuse (leaving the factor
/// alone) and the statistic must be rebuilt from (n, x̄, M₂).
///
/// Any such removal also cancels in the statistics themselves (MATH P5): M₂ loses about
/// ε / (det ratio) ≈ 1e-5 relative on the small direction. So the rebuilt factor is checked
/// exactly against the statistics it now holds, and against the batch statistics to the
/// precision those statistics can carry.
#[test]
fn failed_downdate_refactorises_from_the_statistics() {
    let p = Problem {
        d: 2,
        points: vec![
            vec![1000.0, 0.3],
            vec![0.001, 0.0],
            vec![-0.002, 0.5],
            vec![0.0015, -0.4],
        ],
        xi: vec![0.0, 0.0],
        psi: vec![1e-8, 0.0, 0.0, 1.0],
        r: 1.0,
        nu: 2.5,
    };
    let k = p.kernel();
    let d = 2;
    let mut s = k.stat_of(&[1, 2, 3]);
    assert_eq!(s.downdate_failures(), 0);
    k.add(&mut s, 0);
    let before_remove = s.clone();
    k.remove(&mut s, 0);
    assert_eq!(
        s.downdate_failures(),
        1,
        "the downdate must have been refused"
    );

    // The factor is a fresh factorisation of Ψ + M₂ + (r n/(r+n)) x̄ x̄ᵀ from s's own fields.
    let n = s.len() as f64;
    let c = k.hyper().r() * n / (k.hyper().r() + n);
    let psi_n = DMatrix::from_fn(d, d, |i, j| {
        let (a, b) = (i.max(j), i.min(j));
        k.hyper().psi()[i * d + j] + s.scatter()[b * d + a] + c * s.mean()[i] * s.mean()[j]
    });
    let l = psi_n.clone().cholesky().unwrap().l();
    for j in 0..d {
        for i in j..d {
            assert!(close(s.chol()[j * d + i], l[(i, j)], 1e-13), "L[{i}][{j}]");
        }
    }
    assert!(close(s.ln_det_psi_n(), psi_n.determinant().ln(), 1e-13));
    assert_ne!(s.chol(), before_remove.chol());

    // Against the batch statistics, at the precision the removal leaves.
    assert_matches_batch(&k, &s, &[1, 2, 3], 1e-4);
    assert_factor_is_fresh(&k, &s, &[1, 2, 3], 1e-4);
    let reference = ln_marginal_reference(&rows_of(k.data(), &[1, 2, 3]), k.hyper());
    assert!(close(k.ln_marginal(&s), reference, 1e-4));

    // Well-conditioned removals keep using the O(d²) downdate.
    k.remove(&mut s, 2);
    assert_eq!(s.downdate_failures(), 1);
    assert_factor_is_fresh(&k, &s, &[1, 3], 1e-4);
}

/// MATH P4: the marginal is invariant under translating data and ξ together; raw sums would
/// lose about 12 digits at an offset of 1e6.
#[test]
fn far_from_origin_data_keep_their_digits() {
    let base = Problem {
        d: 2,
        points: vec![
            vec![0.3, -1.1],
            vec![1.2, 0.4],
            vec![-0.8, 0.9],
            vec![0.1, 0.05],
        ],
        xi: vec![0.2, -0.1],
        psi: vec![1.0, 0.2, 0.2, 0.7],
        r: 0.3,
        nu: 4.0,
    };
    let mut shifted = base.clone();
    for x in shifted
        .points
        .iter_mut()
        .chain(std::iter::once(&mut shifted.xi))
    {
        for v in x.iter_mut() {
            *v += 1e6;
        }
    }
    let (k0, k1) = (base.kernel(), shifted.kernel());
    let all = [0, 1, 2, 3];
    let mut s0 = k0.stat_of(&all);
    let mut s1 = k1.stat_of(&all);
    assert!(close(k0.ln_marginal(&s0), k1.ln_marginal(&s1), 1e-8));
    k0.remove(&mut s0, 2);
    k1.remove(&mut s1, 2);
    assert!(close(
        k0.ln_predictive(2, &s0),
        k1.ln_predictive(2, &s1),
        1e-8
    ));
}

#[test]
fn with_data_rebinds_the_same_prior() {
    let train = Problem {
        d: 2,
        points: vec![vec![0.3, -1.1], vec![1.2, 0.4], vec![-0.8, 0.9]],
        xi: vec![0.2, -0.1],
        psi: vec![1.0, 0.2, 0.2, 0.7],
        r: 0.3,
        nu: 4.0,
    };
    let k = train.kernel();
    let test_rows = vec![vec![5.0, 1.0], vec![-2.0, 0.5]];
    let test = Arc::new(DenseData::from_rows(&test_rows).unwrap());
    let kt = k.with_data(test.clone()).unwrap();
    assert_eq!(kt.n_points(), 2);
    let direct = NormalWishart::new(test, k.hyper().clone()).unwrap();
    let s = kt.stat_of(&[0, 1]);
    assert_eq!(
        kt.ln_marginal(&s),
        direct.ln_marginal(&direct.stat_of(&[0, 1]))
    );
    // A statistic of the training data predicts a test point identically through either.
    let s_train = k.stat_of(&[0, 2]);
    let via_index = kt.ln_predictive(0, &s_train);
    let via_point = k.ln_predictive_point(&test_rows[0], &s_train).unwrap();
    assert!(close(via_index, via_point, 1e-13));
    let wrong_dim = Arc::new(DenseData::from_rows(&[vec![1.0, 2.0, 3.0]]).unwrap());
    assert!(matches!(
        k.with_data(wrong_dim),
        Err(Error::DimensionMismatch(_))
    ));
}

// ---------------------------------------------------------------------------------------------
// Validation.

#[test]
fn invalid_hyperparameters_are_errors() {
    let psi = || vec![1.0, 0.0, 0.0, 1.0];
    let xi = || vec![0.0, 0.0];
    let cases: Vec<(&str, Result<NwHyper, Error>)> = vec![
        ("nu = d - 1", NwHyper::new(xi(), psi(), 1.0, 1.0)),
        ("nu < d - 1", NwHyper::new(xi(), psi(), 1.0, 0.5)),
        ("nu NaN", NwHyper::new(xi(), psi(), 1.0, f64::NAN)),
        ("nu inf", NwHyper::new(xi(), psi(), 1.0, f64::INFINITY)),
        ("r = 0", NwHyper::new(xi(), psi(), 0.0, 3.0)),
        ("r < 0", NwHyper::new(xi(), psi(), -0.1, 3.0)),
        ("r NaN", NwHyper::new(xi(), psi(), f64::NAN, 3.0)),
        ("xi NaN", NwHyper::new(vec![0.0, f64::NAN], psi(), 1.0, 3.0)),
        (
            "psi NaN",
            NwHyper::new(xi(), vec![1.0, f64::NAN, f64::NAN, 1.0], 1.0, 3.0),
        ),
        (
            "psi indefinite",
            NwHyper::new(xi(), vec![1.0, 2.0, 2.0, 1.0], 1.0, 3.0),
        ),
        (
            "psi singular",
            NwHyper::new(xi(), vec![1.0, 1.0, 1.0, 1.0], 1.0, 3.0),
        ),
        (
            "psi asymmetric",
            NwHyper::new(xi(), vec![1.0, 0.5, 0.0, 1.0], 1.0, 3.0),
        ),
        (
            "psi wrong size",
            NwHyper::new(xi(), vec![1.0, 0.0, 0.0], 1.0, 3.0),
        ),
        ("xi empty", NwHyper::new(vec![], vec![], 1.0, 3.0)),
    ];
    for (what, result) in cases {
        match result {
            Err(e) => assert!(!e.to_string().is_empty(), "{what}"),
            Ok(h) => panic!("{what} was accepted: {h:?}"),
        }
    }
    // The messages say what is wrong.
    let msg = NwHyper::new(xi(), psi(), 1.0, 0.5).unwrap_err().to_string();
    assert!(msg.contains("nu") && msg.contains("d - 1 = 1"), "{msg}");
    let msg = NwHyper::new(xi(), vec![1.0, 2.0, 2.0, 1.0], 1.0, 3.0)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("psi") && msg.contains("positive definite"),
        "{msg}"
    );
    // Deserialisation validates too.
    let bad = r#"{"xi":[0.0,0.0],"psi":[1.0,0.0,0.0,1.0],"r":1.0,"nu":0.5}"#;
    assert!(serde_json::from_str::<NwHyper>(bad).is_err());
    let good = NwHyper::new(xi(), vec![2.0, 0.3, 0.3, 1.0], 0.5, 4.5).unwrap();
    let text = serde_json::to_string(&good).unwrap();
    assert_eq!(serde_json::from_str::<NwHyper>(&text).unwrap(), good);
    // Real-valued nu just above d - 1 and tiny float asymmetry are fine.
    assert!(NwHyper::new(xi(), psi(), 1.0, 1.0 + 1e-9).is_ok());
    assert!(NwHyper::new(xi(), vec![1.0, 0.3, 0.3 + 1e-15, 1.0], 1.0, 3.0).is_ok());
}

#[test]
fn invalid_data_are_errors() {
    let h = NwHyper::new(vec![0.0, 0.0], vec![1.0, 0.0, 0.0, 1.0], 1.0, 3.0).unwrap();
    let three_d = Arc::new(DenseData::from_rows(&[vec![1.0, 2.0, 3.0]]).unwrap());
    assert!(matches!(
        NormalWishart::new(three_d, h.clone()),
        Err(Error::DimensionMismatch(_))
    ));
    let one_point = DenseData::from_rows(&[vec![1.0, 2.0]]).unwrap();
    assert!(matches!(
        NwHyper::from_data(&one_point),
        Err(Error::Empty(_))
    ));
    let constant_column =
        DenseData::from_rows(&[vec![1.0, 2.0], vec![3.0, 2.0], vec![5.0, 2.0]]).unwrap();
    assert!(matches!(
        NwHyper::from_data(&constant_column),
        Err(Error::NotPositiveDefinite(_))
    ));
    let data = Arc::new(DenseData::from_rows(&[vec![1.0, 2.0], vec![0.0, 1.0]]).unwrap());
    let k = NormalWishart::new(data, h).unwrap();
    let s = k.stat_of(&[0]);
    assert!(matches!(
        k.ln_predictive_point(&[1.0], &s),
        Err(Error::DimensionMismatch(_))
    ));
    assert!(matches!(
        k.ln_predictive_point(&[1.0, f64::NAN], &s),
        Err(Error::InvalidParameter { .. })
    ));
}

// ---------------------------------------------------------------------------------------------
// Reference figures on the toy data set.

fn shared_data(sub: &str) -> Option<PathBuf> {
    let root = std::env::var_os("NRMM_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data"));
    let dir = root.join(sub);
    if dir.is_dir() {
        Some(dir)
    } else {
        println!(
            "skipping: data folder {} not found (set NRMM_DATA_DIR to the shared data folder)",
            dir.display()
        );
        None
    }
}

fn read_toy(dir: &std::path::Path) -> (DenseData, Vec<usize>) {
    let x = std::fs::read_to_string(dir.join("X.txt")).unwrap();
    let rows: Vec<Vec<f64>> = x
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(|v| v.parse().unwrap()).collect())
        .collect();
    let labels = std::fs::read_to_string(dir.join("gt_labels.txt")).unwrap();
    let labels: Vec<usize> = labels
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect();
    (DenseData::from_rows(&rows).unwrap(), labels)
}

#[test]
fn toy_hyperparameters_match_the_reference() {
    let Some(dir) = shared_data("toy") else {
        return;
    };
    let (data, _) = read_toy(&dir);
    let h = NwHyper::from_data(&data).unwrap();
    // REFERENCE_FIGURES.md prints 8 decimals: agree to half a unit in the last place.
    let xi = [-0.00280009, 0.00053204];
    let psi = [0.31653940, 0.00195568, 0.00195568, 0.31592852];
    for (got, want) in h.xi().iter().zip(xi) {
        assert!((got - want).abs() <= 5e-9, "xi {got} vs {want}");
    }
    for (got, want) in h.psi().iter().zip(psi) {
        assert!((got - want).abs() <= 5e-9, "psi {got} vs {want}");
    }
    assert_eq!(h.r(), 0.1);
    assert_eq!(h.nu(), 8.0);
    let det = h.psi()[0] * h.psi()[3] - h.psi()[1] * h.psi()[2];
    assert!((det - 0.1).abs() < 1e-14);
}

#[test]
fn toy_ground_truth_dp_log_joint_is_the_golden_value() {
    let Some(dir) = shared_data("toy") else {
        return;
    };
    let (data, labels) = read_toy(&dir);
    assert_eq!(labels.len(), data.n());
    let h = NwHyper::from_data(&data).unwrap();
    let k = NormalWishart::new(Arc::new(data), h).unwrap();
    let n_labels = *labels.iter().max().unwrap();
    let mut clusters = vec![Vec::new(); n_labels];
    for (i, &l) in labels.iter().enumerate() {
        clusters[l - 1].push(i);
    }
    let alpha: f64 = 1.0;
    let n = k.n_points() as f64;
    let mut joint = ln_gamma(alpha) - ln_gamma(alpha + n);
    for c in clusters.iter().filter(|c| !c.is_empty()) {
        joint += alpha.ln() + ln_gamma(c.len() as f64) + k.ln_marginal(&k.stat_of(c));
    }
    assert!(
        (joint - -1577.569613).abs() < 1e-6,
        "DP log joint of the ground truth: {joint:.9}"
    );
}
