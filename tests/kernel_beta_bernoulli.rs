//! The Beta-Bernoulli kernel: its marginal against numerical integration over `θ`, the
//! invariants every conjugate kernel upholds (predictive as a ratio of marginals, the pair
//! marginal, statistics after any updates equal to batch ones), its hyperparameter, its
//! refusals of non-binary data, its exact marginalisation of missing entries (against every
//! completion), and the command line end to end (run, predict, SVA).

use crate::kernel_support::run_update_ops;
use crate::support::cli::{fails_no_stdout, ok, TempDir};
use nrmm::data::{Dataset, DenseData, SparseCounts};
use nrmm::kernel::beta_bernoulli::BetaBernoulli;
use nrmm::kernel::{ConjugateKernel, HyperKernel, KernelKind, PredictiveKernel};
use nrmm::math::{ln_add_exp, ln_gamma};
use nrmm::model::{Model, ModelSpec};
use proptest::prelude::*;

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

/// The kernel over `bits` in rows of `d` with `Beta(β, β)`; a 2 is a missing entry.
fn kernel(bits: &[u8], d: usize, beta: f64) -> BetaBernoulli {
    let entries: Vec<Option<bool>> = bits.iter().map(|&b| (b < 2).then_some(b == 1)).collect();
    BetaBernoulli::with_missing(bits.len() / d, d, &entries, beta).unwrap()
}

/// Missing entries are marginalised exactly: for every subset of six points with five missing
/// entries (one point missing all but one), the marginal equals the sum, over every
/// completion of the subset's missing entries, of the complete data's marginal; so the
/// posterior over partitions, a product of such marginals, is the completions' too.
#[test]
fn missing_entries_are_marginalised_exactly() {
    let bits = [1, 2, 0, 1, 1, 0, 2, 0, 1, 0, 2, 2, 1, 1, 0, 0, 2, 1];
    let k = kernel(&bits, 3, 0.6);
    assert_eq!(k.missing_per_column(), vec![1, 3, 1]);
    let missing: Vec<usize> = (0..bits.len()).filter(|&t| bits[t] == 2).collect();
    for mask in 1u32..64 {
        let members: Vec<usize> = (0..6).filter(|i| mask >> i & 1 == 1).collect();
        let here: Vec<usize> = missing
            .iter()
            .copied()
            .filter(|t| members.contains(&(t / 3)))
            .collect();
        let mut total = f64::NEG_INFINITY;
        for c in 0u32..1 << here.len() {
            let mut full = bits;
            for (b, &t) in here.iter().enumerate() {
                full[t] = (c >> b & 1) as u8;
            }
            let kf = kernel(&full, 3, 0.6);
            total = ln_add_exp(total, kf.ln_marginal(&kf.stat_of(&members)));
        }
        let got = k.ln_marginal(&k.stat_of(&members));
        assert!(close(got, total, 1e-12), "{members:?}: {got} vs {total}");
    }
}

/// `ln ∫ θ^k (1-θ)^(n-k) Beta(θ; β, β) dθ` by the midpoint rule on `u = θ^β`-spaced points,
/// whose density stays bounded at 0 for `β < 1`: with `θ = u^(1/β)`, `dθ = θ/(β u) du`.
fn ln_column_integral(k: f64, n: f64, beta: f64) -> f64 {
    let ln_b = 2.0 * ln_gamma(beta) - ln_gamma(2.0 * beta);
    let (steps, mut sum) = (100_000, 0.0);
    // Both halves, each integrated from its end at 0 (θ and 1 - θ) so that both singularities
    // of a small β are handled.
    for (ones, zeros) in [(k, n - k), (n - k, k)] {
        for s in 0..steps {
            let u = (s as f64 + 0.5) / steps as f64 * 0.5f64.powf(beta);
            let t = u.powf(1.0 / beta);
            // θ^(ones + β - 1) (1-θ)^(zeros + β - 1) dθ/du = θ^ones (1-θ)^(zeros+β-1) / β
            let f = t.powf(ones) * (1.0 - t).powf(zeros + beta - 1.0) / beta;
            sum += f * 0.5f64.powf(beta) / steps as f64;
        }
    }
    sum.ln() - ln_b
}

/// The marginal equals the product over columns of numerically integrated likelihoods under
/// the Beta prior, for small and large `β`.
#[test]
fn marginal_matches_numerical_integration() {
    let bits = [1, 0, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1, 1, 1];
    let k = kernel(&bits, 3, 0.7);
    for beta in [0.3, 0.7, 2.5] {
        let k = k.with_hyper_values(&[beta]).unwrap();
        for members in [vec![0], vec![0, 1], vec![1, 2, 4], vec![0, 1, 2, 3, 4]] {
            let s = k.stat_of(&members);
            let n = members.len() as f64;
            let want: f64 = (0..3)
                .map(|j| {
                    let ones = members.iter().filter(|&&i| bits[i * 3 + j] == 1).count();
                    ln_column_integral(ones as f64, n, beta)
                })
                .sum();
            let got = k.ln_marginal(&s);
            assert!(
                close(got, want, 1e-6),
                "β {beta} {members:?}: {got} vs {want}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Predictive = ratio of marginals, the pair marginal = the union's, and statistics after
    /// random adds, probed adds, removes and merges give the batch statistics' marginal and
    /// predictives.
    #[test]
    fn invariants_hold(
        bits in prop::collection::vec(0u8..3, 8 * 4),
        beta in 0.05f64..4.0,
        ops in prop::collection::vec((0u8..4, 0usize..8, 0usize..8), 0..40),
    ) {
        let k = kernel(&bits, 4, beta);
        let (stats, members) = run_update_ops(&k, &ops)?;
        for (s, m) in stats.iter().zip(&members) {
            let batch = k.stat_of(m);
            prop_assert_eq!(k.count(s), m.len());
            prop_assert!(close(k.ln_marginal(s), k.ln_marginal(&batch), 1e-12));
            for i in (0..8).filter(|i| !m.contains(i)) {
                let mut with = batch.clone();
                k.add(&mut with, i);
                let ratio = k.ln_marginal(&with) - k.ln_marginal(&batch);
                prop_assert!(close(k.ln_predictive(i, s), ratio, 1e-10));
            }
        }
        let pair = k.ln_marginal_pair(&stats[0], &stats[1]);
        let union: Vec<usize> = members[0].iter().chain(&members[1]).copied().collect();
        prop_assert!(close(pair, k.ln_marginal(&k.stat_of(&union)), 1e-12));
    }

    /// The marginal at other values equals the marginal of the kernel moved to them, and a
    /// statistic refreshed for the moved kernel predicts as one built by it.
    #[test]
    fn hyperparameters_move_the_kernel(
        bits in prop::collection::vec(0u8..3, 6 * 3),
        beta in 0.05f64..4.0,
        other in 0.05f64..4.0,
    ) {
        let k = kernel(&bits, 3, beta);
        let moved = k.with_hyper_values(&[other]).unwrap();
        let members = [0, 2, 3, 5];
        let mut s = k.stat_of(&members);
        prop_assert!(close(k.ln_marginal_at(&s, &[other]), moved.ln_marginal(&moved.stat_of(&members)), 1e-12));
        prop_assert!(close(k.ln_marginal_at(&s, &k.hyper_values()), k.ln_marginal(&s), 1e-12));
        moved.refresh_stat(&mut s);
        let built = moved.stat_of(&members);
        prop_assert!(close(moved.ln_predictive(1, &s), moved.ln_predictive(1, &built), 1e-12));
    }
}

/// The empty set's marginal is 0, a lone point's predictive is `-d ln 2` whatever `β`
/// (each column is a fair coin a priori), and the hyperparameter is named `bb_beta`.
#[test]
fn prior_predictive_is_a_fair_coin_per_column() {
    let k = kernel(&[1, 0, 1, 0, 0, 1], 3, 0.37);
    assert_eq!(k.ln_marginal(&k.empty_stat()), 0.0);
    let want = -3.0 * std::f64::consts::LN_2;
    assert!(close(k.ln_predictive(0, &k.empty_stat()), want, 1e-14));
    assert_eq!(k.hyper_names(), &["bb_beta"]);
    let new = DenseData::new(1, 3, vec![0.0, 1.0, 1.0]).unwrap();
    let got = k.ln_predictive_new(&new, 0, &k.empty_stat()).unwrap();
    assert!(close(got, want, 1e-14));
}

/// Values other than 0 and 1 are refused, naming where; so are counts, the Normal-Wishart
/// settings and new points that are not binary.
#[test]
fn non_binary_input_is_refused() {
    let data = DenseData::new(2, 2, vec![1.0, 0.0, 0.5, 1.0]).unwrap();
    let e = BetaBernoulli::new(&data, 0.5).unwrap_err().to_string();
    assert!(e.contains("row 2, column 1") && e.contains("0.5"), "{e}");
    let spec = ModelSpec {
        kernel: Some(KernelKind::named("bb").unwrap()),
        ..ModelSpec::default()
    };
    let counts = SparseCounts::from_rows(3, &[vec![(0, 1)], vec![(2, 2)]]).unwrap();
    let e = Model::build(&spec, Dataset::Counts(counts))
        .unwrap_err()
        .to_string();
    assert!(e.contains("`kernel` bb needs a matrix of 0s and 1s"), "{e}");
    let binary = DenseData::new(2, 2, vec![1.0, 0.0, 0.0, 1.0]).unwrap();
    let with_r = ModelSpec {
        nw_r: Some(0.5),
        ..spec.clone()
    };
    let e = Model::build(&with_r, Dataset::Dense(binary.clone()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("`nw_r`"), "{e}");
    let model = Model::build(&spec, Dataset::Dense(binary)).unwrap();
    let new = Dataset::Dense(DenseData::new(1, 2, vec![1.0, 2.0]).unwrap());
    let e = nrmm::predict::check_new(&model.kernel, &new)
        .unwrap_err()
        .to_string();
    assert!(e.contains("row 1, column 2 of `new` holds 2"), "{e}");
}

/// Binary rows of two groups (columns 1-3 on in the first, 4-6 in the second, a few flips).
fn two_groups(dir: &TempDir) -> String {
    let mut text = String::from("a,b,c,d,e,f\n");
    for i in 0..40 {
        let first = i < 20;
        let row: Vec<&str> = (0..6)
            .map(|j| {
                let on = (j < 3) == first;
                let flip = (i * 7 + j * 3) % 11 == 0;
                if on != flip {
                    "1"
                } else {
                    "0"
                }
            })
            .collect();
        text.push_str(&row.join(","));
        text.push('\n');
    }
    dir.write("binary.csv", &text)
}

/// `--kernel bb` runs with every front-end verb that takes a kernel: a run finds the two
/// groups, predict places new rows in them, SVA fits them, and the header names the kernel.
#[test]
fn the_command_line_runs_the_kernel() {
    let dir = TempDir::new("bb-cli");
    let data = two_groups(&dir);
    let out = dir.arg("run");
    ok(&[
        "run",
        "--data",
        &data,
        "--kernel",
        "bb",
        "--sampler",
        "sams",
        "--sweeps",
        "60",
        "--chains",
        "2",
        "--seed",
        "3",
        "--kernel-hyperpriors",
        "--out",
        &out,
    ]);
    let estimate = std::fs::read_to_string(format!("{out}/estimate.txt")).unwrap();
    let labels: Vec<&str> = estimate.lines().collect();
    assert_eq!(labels.len(), 40);
    assert!(labels[..20].iter().all(|l| *l == labels[0]), "{estimate}");
    assert!(labels[20..].iter().all(|l| *l == labels[20]), "{estimate}");
    assert_ne!(labels[0], labels[20]);
    let trace = std::fs::read_to_string(format!("{out}/chain-0/trace.csv")).unwrap();
    assert!(trace.lines().next().unwrap().contains("bb_beta"), "{trace}");
    let new = dir.write("new.csv", "a,b,c,d,e,f\n1,1,1,0,0,0\n0,0,0,1,1,1\n");
    let pred = dir.arg("pred.csv");
    ok(&["predict", "--run", &out, "--data", &new, "--out", &pred]);
    let rows: Vec<Vec<String>> = std::fs::read_to_string(&pred)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    assert_eq!(rows.len(), 2);
    assert_ne!(rows[0][1], rows[1][1], "{rows:?}");
    let sva = dir.arg("sva");
    ok(&["sva", "--data", &data, "--kernel", "bb", "--out", &sva]);
    let bad = dir.write("bad.csv", "a,b\n1,0\n0,3\n");
    fails_no_stdout(
        &[
            "run",
            "--data",
            &bad,
            "--kernel",
            "bb",
            "--sweeps",
            "2",
            "--out",
            &dir.arg("bad"),
        ],
        1,
        &["binary values", "row 2, column 2"],
    );
}
