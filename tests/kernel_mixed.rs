//! The product kernel over a typed table: missing entries marginalised exactly (against every
//! completion of the discrete and count entries, and against integration over a missing real
//! entry), the invariants every conjugate kernel upholds, its hyperparameters, its parameter
//! draws (candidate's formula), its soft statistics, the table reader's types and missing
//! counts, and the command line end to end.

use crate::exact_check::{mixed_kernel, mixed_table};
use crate::kernel_support::run_update_ops;
use crate::support::cli::{fails_no_stdout, nrmm, ok, text, TempDir};
use nrmm::data::table::{Column, ColumnType};
use nrmm::data::TableData;
use nrmm::kernel::mixed::{Mixed, MixedPriors};
use nrmm::kernel::{ConjugateKernel, HyperKernel, ParametricKernel, SvaKernel};
use nrmm::math::ln_add_exp;
use proptest::prelude::*;
use rand::SeedableRng;

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

/// The table with entry `(i, j)` set to `v`.
fn with_entry(t: &TableData, i: usize, j: usize, v: f64) -> TableData {
    let mut columns: Vec<Column> = t.columns().to_vec();
    columns[j].values[i] = v;
    TableData::new(columns).unwrap()
}

/// For every subset of the six rows, the marginal with the binary, categorical and count
/// entries missing equals the sum, over every completion of those entries in the subset
/// (counts up to 150, beyond which the negative binomial's mass is below 1e-30), of the
/// completed table's marginal under the same priors.
#[test]
fn missing_discrete_and_count_entries_are_marginalised_exactly() {
    let k = mixed_kernel(6);
    let t = mixed_table(6);
    let priors = k.priors();
    assert_eq!(t.missing_per_column(), vec![1, 1, 1, 2]);
    // The real column's missing entry (row 1) is left as it is: completions of columns 1-3.
    let missing: Vec<(usize, usize)> = (0..6)
        .flat_map(|i| (1..4).map(move |j| (i, j)))
        .filter(|&(i, j)| t.value(i, j).is_none())
        .collect();
    for mask in 1u32..64 {
        let members: Vec<usize> = (0..6).filter(|i| mask >> i & 1 == 1).collect();
        let here: Vec<(usize, usize)> = missing
            .iter()
            .copied()
            .filter(|(i, _)| members.contains(i))
            .collect();
        let choices = |j: usize| match j {
            1 => 2,
            2 => 3,
            _ => 151,
        };
        let total_completions: usize = here.iter().map(|&(_, j)| choices(j)).product();
        let mut total = f64::NEG_INFINITY;
        for c in 0..total_completions {
            let mut full = t.clone();
            let mut rest = c;
            for &(i, j) in &here {
                full = with_entry(&full, i, j, (rest % choices(j)) as f64);
                rest /= choices(j);
            }
            let kf = Mixed::with_priors(full, priors.clone()).unwrap();
            total = ln_add_exp(total, kf.ln_marginal(&kf.stat_of(&members)));
        }
        let got = k.ln_marginal(&k.stat_of(&members));
        assert!(close(got, total, 1e-10), "{members:?}: {got} vs {total}");
    }
}

/// A missing real entry: the marginal of a set holding its row equals the integral over the
/// entry's value of the completed marginal (midpoint rule after `y = ξ + 3 tan u`, which maps
/// the Student t's heavy tails to a bounded interval).
#[test]
fn a_missing_real_entry_is_integrated_out_exactly() {
    let k = mixed_kernel(6);
    let t = mixed_table(6);
    assert!(t.value(1, 0).is_none());
    for members in [vec![1], vec![0, 1], vec![1, 2, 4], vec![0, 1, 2, 3, 4, 5]] {
        let steps = 4000;
        let mut total = f64::NEG_INFINITY;
        for s in 0..steps {
            let u = -std::f64::consts::FRAC_PI_2
                + (s as f64 + 0.5) / steps as f64 * std::f64::consts::PI;
            let y = 0.5 + 3.0 * u.tan();
            let jac = 3.0 / u.cos().powi(2) * std::f64::consts::PI / steps as f64;
            let kf = Mixed::with_priors(with_entry(&t, 1, 0, y), k.priors()).unwrap();
            total = ln_add_exp(total, kf.ln_marginal(&kf.stat_of(&members)) + jac.ln());
        }
        let got = k.ln_marginal(&k.stat_of(&members));
        assert!(close(got, total, 1e-6), "{members:?}: {got} vs {total}");
    }
}

/// A table of 8 rows whose entries come from `codes` (0-4 per entry, 4 missing) over the four
/// column types.
fn random_table(codes: &[u8], real: &[f64]) -> TableData {
    let col = |j: usize, kind, levels: &[&str], f: &dyn Fn(u8, usize) -> f64| Column {
        name: format!("c{j}"),
        kind,
        levels: levels.iter().map(|s| s.to_string()).collect(),
        values: (0..8)
            .map(|i| match codes[i * 4 + j] {
                4 => f64::NAN,
                c => f(c, i),
            })
            .collect(),
    };
    let mut columns = vec![
        col(0, ColumnType::Real, &[], &|_, i| real[i]),
        col(1, ColumnType::Binary, &["a", "b"], &|c, _| f64::from(c % 2)),
        col(2, ColumnType::Categorical, &["x", "y", "z"], &|c, _| {
            f64::from(c % 3)
        }),
        col(3, ColumnType::Count, &[], &|c, _| f64::from(c * 2)),
    ];
    // Every column keeps an observed entry.
    for c in &mut columns {
        if c.values.iter().all(|v| v.is_nan()) {
            c.values[0] = 1.0;
        }
    }
    TableData::new(columns).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Predictive = ratio of marginals, the pair marginal = the union's, statistics after
    /// random updates give the batch statistics' marginal and predictives, and the marginal
    /// at other hyperparameters equals the moved kernel's.
    #[test]
    fn invariants_hold(
        codes in prop::collection::vec(0u8..5, 32),
        real in prop::collection::vec(-5.0f64..5.0, 8),
        ops in prop::collection::vec((0u8..4, 0usize..8, 0usize..8), 0..40),
        h in (0.1f64..5.0, 0.01f64..2.0, 0.5f64..8.0, 0.05f64..3.0),
    ) {
        let t = random_table(&codes, &real);
        let k = Mixed::new(t, None, None, None).unwrap();
        let (stats, members) = run_update_ops(&k, &ops)?;
        for (s, m) in stats.iter().zip(&members) {
            let batch = k.stat_of(m);
            prop_assert_eq!(k.count(s), m.len());
            prop_assert!(close(k.ln_marginal(s), k.ln_marginal(&batch), 1e-9));
            for i in (0..8).filter(|i| !m.contains(i)) {
                let mut with = batch.clone();
                k.add(&mut with, i);
                let ratio = k.ln_marginal(&with) - k.ln_marginal(&batch);
                prop_assert!(close(k.ln_predictive(i, s), ratio, 1e-9));
            }
        }
        let pair = k.ln_marginal_pair(&stats[0], &stats[1]);
        let union: Vec<usize> = members[0].iter().chain(&members[1]).copied().collect();
        prop_assert!(close(pair, k.ln_marginal(&k.stat_of(&union)), 1e-9));
        let values = [h.0, h.1, h.2, h.3];
        let moved = k.with_hyper_values(&values).unwrap();
        let s = k.stat_of(&[0, 2, 3, 5]);
        prop_assert!(close(k.ln_marginal_at(&s, &values), moved.ln_marginal(&moved.stat_of(&[0, 2, 3, 5])), 1e-12));
        prop_assert!(close(k.ln_marginal_at(&s, &k.hyper_values()), k.ln_marginal(&s), 1e-12));
    }
}

/// Candidate's formula: for any drawn parameters `θ`, `ln m(X) = ln f(X | θ) + ln p(θ) -
/// ln p(θ | X)`, which ties the draws' densities, the likelihood with missing entries and
/// the marginal together.
#[test]
fn candidates_formula_holds_for_drawn_parameters() {
    let k = mixed_kernel(6);
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    for members in [
        vec![0],
        vec![1, 3],
        vec![0, 2, 4, 5],
        vec![0, 1, 2, 3, 4, 5],
    ] {
        let s = k.stat_of(&members);
        let mut theta = k.new_param();
        for _ in 0..5 {
            k.sample_posterior(&s, &mut rng, &mut theta).unwrap();
            let ln_f: f64 = members.iter().map(|&i| k.ln_f(i, &theta)).sum();
            let got = ln_f + k.ln_prior_density(&theta) - k.ln_posterior_density(&s, &theta);
            let want = k.ln_marginal(&s);
            assert!(close(got, want, 1e-9), "{members:?}: {got} vs {want}");
        }
    }
}

/// Soft statistics with weight 1 are the statistics: the same marginal and predictive.
#[test]
fn soft_statistics_of_unit_weights_are_the_statistics() {
    let k = mixed_kernel(6);
    let members = [0, 1, 3, 5];
    let mut soft = k.soft_empty().unwrap();
    let mut p = k.new_point();
    for &i in &members {
        k.load_point(i, &mut p);
        k.soft_add(&mut soft, &p, 1.0);
    }
    let s = k.stat_of(&members);
    assert!(close(k.soft_ln_marginal(&soft), k.ln_marginal(&s), 1e-12));
    k.load_point(2, &mut p);
    assert!(close(
        k.soft_ln_predictive(&p, &soft),
        k.ln_predictive(2, &s),
        1e-12
    ));
    assert_eq!(Mixed::soft_weight(&soft), 4.0);
}

/// The defaults follow each column: shifting and rescaling a real column leaves every
/// marginal unchanged up to the Jacobian of the change of units.
#[test]
fn real_defaults_are_unit_equivariant() {
    let t = mixed_table(6);
    let k = Mixed::new(t.clone(), None, None, None).unwrap();
    let mut columns = t.columns().to_vec();
    columns[0]
        .values
        .iter_mut()
        .for_each(|v| *v = 100.0 + 1000.0 * *v);
    let scaled = Mixed::new(TableData::new(columns).unwrap(), None, None, None).unwrap();
    for members in [vec![0, 2], vec![0, 1, 2, 3, 4, 5]] {
        // Each observed real entry's density is divided by 1000.
        let observed = members.iter().filter(|&&i| t.value(i, 0).is_some()).count();
        let a = k.ln_marginal(&k.stat_of(&members));
        let b = scaled.ln_marginal(&scaled.stat_of(&members)) + observed as f64 * 1000f64.ln();
        assert!(close(a, b, 1e-10), "{members:?}: {a} vs {b}");
    }
    let p = MixedPriors::defaults(&t, None, None, None).unwrap();
    assert_eq!((p.xi.len(), p.count_rate.len()), (1, 1));
}

/// A table of two groups of 30 rows: a real column, a yes/no column, a colour and a count,
/// with a tenth of the entries missing (empty, NA, ?).
fn two_groups(dir: &TempDir) -> String {
    let mut text = String::from("height,smoker,colour,visits\n");
    for i in 0..60 {
        let first = i < 30;
        let h = if first { 150.0 } else { 190.0 } + ((i * 37) % 11) as f64 - 5.0;
        let smoker = if first == (i % 7 != 0) { "yes" } else { "no" };
        let colour = if first {
            ["red", "red", "blue"][i % 3]
        } else {
            ["green", "green", "blue"][i % 3]
        };
        let visits = if first { i % 6 } else { 10 + i % 7 };
        let mut row = [
            format!("{h}"),
            smoker.to_string(),
            colour.to_string(),
            visits.to_string(),
        ];
        let gone = (i * 13) % 10;
        if gone < 4 {
            row[gone] = ["", "NA", "?", "NaN"][gone].to_string();
        }
        text.push_str(&row.join(","));
        text.push('\n');
    }
    dir.write("mixed.csv", &text)
}

/// `nrmm run` reads a table with words and missing values with no option, names each
/// column's type and missing entries in its header, chooses the product kernel, and finds
/// the two groups; `--types` overrides a type; a column of numbers with a word is refused
/// naming the line and the remedy; the sub-cluster sampler and SVA run on the table.
#[test]
fn the_command_line_runs_tables_with_missing_values() {
    let dir = TempDir::new("mixed-cli");
    let data = two_groups(&dir);
    let out = dir.arg("run");
    let run = nrmm(&[
        "run", "--data", &data, "--sweeps", "60", "--chains", "2", "--seed", "3", "--out", &out,
    ]);
    let err = text(&run.stderr);
    assert!(run.status.success(), "{err}");
    assert!(err.contains("product kernel"), "{err}");
    assert!(err.contains("smoker binary (no, yes)"), "{err}");
    assert!(err.contains("height real, 6 missing"), "{err}");
    assert!(err.contains("visits count"), "{err}");
    let estimate = std::fs::read_to_string(format!("{out}/estimate.txt")).unwrap();
    let labels: Vec<&str> = estimate.lines().collect();
    assert_eq!(labels.len(), 60);
    assert!(labels[..30].iter().all(|l| *l == labels[0]), "{estimate}");
    assert!(labels[30..].iter().all(|l| *l == labels[30]), "{estimate}");
    assert_ne!(labels[0], labels[30]);
    // Every missing entry filled, with its probability (levels) or mean and sd (numbers);
    // heights filled near their group's mean, colours by their group's levels.
    let table = dir.arg("filled.csv");
    ok(&["impute", "--run", &out, "--out", &table]);
    let filled = std::fs::read_to_string(dir.arg("filled.filled.csv")).unwrap();
    assert_eq!(filled.lines().count(), 1 + 24, "{filled}");
    for line in filled.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let row: usize = f[0].parse().unwrap();
        match f[1] {
            "height" => {
                let want = if row <= 30 { 150.0 } else { 190.0 };
                assert!((f[2].parse::<f64>().unwrap() - want).abs() < 6.0, "{line}");
            }
            "colour" => assert!(f[3].parse::<f64>().unwrap() > 0.3, "{line}"),
            _ => {}
        }
    }
    let written = std::fs::read_to_string(&table).unwrap();
    assert_eq!(written.lines().count(), 61);
    assert!(
        !written.contains(",,") && !written.contains("NA"),
        "{written}"
    );
    assert!(std::fs::read_to_string(dir.arg("filled.profiles.json"))
        .unwrap()
        .contains("\"size\""));
    let typed = dir.arg("typed");
    let run = nrmm(&[
        "run",
        "--data",
        &data,
        "--types",
        "visits:cat",
        "--sweeps",
        "5",
        "--out",
        &typed,
    ]);
    let err = text(&run.stderr);
    assert!(run.status.success(), "{err}");
    assert!(err.contains("visits cat"), "{err}");
    for sampler in ["subcluster", "gibbs", "jain-neal", "tgmcmc"] {
        ok(&[
            "run",
            "--data",
            &data,
            "--sampler",
            sampler,
            "--sweeps",
            "5",
            "--chains",
            "1",
            "--out",
            &dir.arg(sampler),
        ]);
    }
    ok(&["sva", "--data", &data, "--out", &dir.arg("sva")]);
    let bad = dir.write("bad.csv", "a,b\n1,2\n2,x\n3,4\n4,5\n");
    fails_no_stdout(
        &[
            "run",
            "--data",
            &bad,
            "--sweeps",
            "2",
            "--out",
            &dir.arg("bad"),
        ],
        1,
        &["bad.csv:3", "\"x\", which is not a number", "--types b:cat"],
    );
}

/// `nrmm run` reads an `.npy` array with NaN entries as real columns with missing entries:
/// its header counts them per column, the product kernel runs and finds the two groups.
#[test]
fn the_command_line_runs_npy_arrays_with_nan() {
    let dir = TempDir::new("npy-nan");
    let mut values = Vec::new();
    for i in 0..40 {
        let centre = if i < 20 { 0.0 } else { 10.0 };
        let wiggle = ((i * 37) % 11) as f64 / 10.0 - 0.5;
        let mut row = [centre + wiggle, centre - wiggle];
        if i % 5 == 0 {
            row[i % 2] = f64::NAN;
        }
        values.extend(row);
    }
    let data = dir.arg("x.npy");
    std::fs::write(
        &data,
        crate::data_formats::npy("<f8", false, "(40, 2)", &crate::data_formats::f8(&values)),
    )
    .unwrap();
    let out = dir.arg("run");
    let run = nrmm(&[
        "run", "--data", &data, "--sweeps", "60", "--chains", "2", "--seed", "3", "--out", &out,
    ]);
    let err = text(&run.stderr);
    assert!(run.status.success(), "{err}");
    assert!(
        err.contains("table of 40 rows x 2 columns, 8 missing entries"),
        "{err}"
    );
    assert!(
        err.contains("1 real, 4 missing; 2 real, 4 missing"),
        "{err}"
    );
    let estimate = std::fs::read_to_string(format!("{out}/estimate.txt")).unwrap();
    let labels: Vec<&str> = estimate.lines().collect();
    assert_eq!(labels.len(), 40);
    assert!(labels[..20].iter().all(|l| *l == labels[0]), "{estimate}");
    assert!(labels[20..].iter().all(|l| *l == labels[20]), "{estimate}");
    assert_ne!(labels[0], labels[20]);
}

/// A matrix of numbers with yes/no columns coded 1/0 runs the product kernel with those
/// columns binary and says so (the header names each column's type); `--kernel nw` keeps
/// every column real; `predict` takes new rows as a matrix of numbers, and a value the run
/// never saw in a binary column is refused naming it.
#[test]
fn a_matrix_with_two_valued_columns_models_them_as_binary() {
    let dir = TempDir::new("matrix-binary");
    let mut rows = String::new();
    for i in 0..60 {
        let first = i < 30;
        let x = if first { 0.0 } else { 8.0 } + ((i * 37) % 11) as f64 / 10.0;
        let answers = [first == (i % 7 != 0), first == (i % 5 != 0), !first];
        let coded: Vec<&str> = answers.iter().map(|&a| if a { "1" } else { "0" }).collect();
        rows.push_str(&format!("{x} {}\n", coded.join(" ")));
    }
    let data = dir.write("x.txt", &rows);
    let out = dir.arg("run");
    let run = nrmm(&[
        "run", "--data", &data, "--sweeps", "60", "--chains", "2", "--seed", "3", "--out", &out,
    ]);
    let err = text(&run.stderr);
    assert!(run.status.success(), "{err}");
    assert!(
        err.contains("columns 2, 3 and 4 are binary (two values each)"),
        "{err}"
    );
    assert!(err.contains("1 real; 2 binary (0, 1)"), "{err}");
    let estimate = std::fs::read_to_string(format!("{out}/estimate.txt")).unwrap();
    let labels: Vec<&str> = estimate.lines().collect();
    assert!(labels[..30].iter().all(|l| *l == labels[0]), "{estimate}");
    assert!(labels[30..].iter().all(|l| *l == labels[30]), "{estimate}");
    assert_ne!(labels[0], labels[30]);
    let new = dir.write("new.txt", "0.5 1 1 0\n8.5 0 0 1\n");
    let csv = ok(&["predict", "--run", &out, "--data", &new]);
    let predicted: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap())
        .collect();
    assert_eq!(predicted, [labels[0], labels[30]], "{csv}");
    let bad = dir.write("bad.txt", "0.5 1 2 0\n");
    fails_no_stdout(
        &["predict", "--run", &out, "--data", &bad],
        1,
        &["bad.txt", "column \"3\""],
    );
    let gaussian = dir.arg("nw");
    let run = nrmm(&[
        "run", "--data", &data, "--kernel", "nw", "--sweeps", "20", "--chains", "1", "--seed", "3",
        "--out", &gaussian,
    ]);
    let err = text(&run.stderr);
    assert!(run.status.success(), "{err}");
    assert!(!err.contains("binary"), "{err}");
}

/// `nrmm predict` on a table's run takes new rows with their columns in another order, missing
/// entries and only some of the levels (so typed differently on their own), matched to the run's
/// columns and levels by name, and assigns each row to its group; a level the run's table lacks
/// is refused naming the file, the row, the column, the level and the known levels.
#[test]
fn predict_matches_new_rows_to_the_run_by_name() {
    let dir = TempDir::new("mixed-predict");
    let data = two_groups(&dir);
    let out = dir.arg("run");
    ok(&[
        "run", "--data", &data, "--sweeps", "60", "--chains", "2", "--seed", "3", "--out", &out,
    ]);
    let new = dir.write(
        "new.csv",
        "colour,height,smoker,visits\nred,151,yes,2\ngreen,,no,12\n,188,,\nred,,,\n",
    );
    let csv = ok(&["predict", "--run", &out, "--data", &new]);
    let labels: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap())
        .collect();
    assert_eq!(labels.len(), 4, "{csv}");
    assert_eq!(labels[0], labels[3], "{csv}");
    assert_eq!(labels[1], labels[2], "{csv}");
    assert_ne!(labels[0], labels[1], "{csv}");
    let bad = dir.write(
        "bad.csv",
        "height,smoker,colour,visits\n151,yes,red,2\n160,no,purple,3\n",
    );
    fails_no_stdout(
        &["predict", "--run", &out, "--data", &bad],
        1,
        &[
            "row 2 of",
            "bad.csv",
            "column \"colour\"",
            "\"purple\" is not a level",
            "blue, green, red",
        ],
    );
    let short = dir.write("short.csv", "height,smoker\n151,yes\n");
    fails_no_stdout(
        &["predict", "--run", &out, "--data", &short],
        1,
        &["short.csv", "lacks the training table's column \"colour\""],
    );
}

/// A new row's missing level is filled with its probability given the row's observed entries
/// under one draw: the ratio of the posterior predictive densities of the row with that level
/// and of the row without it (`predict`'s, each marginalising what is missing), with
/// independent real columns and with the full-covariance block; a missing real entry gets a
/// finite mean and a positive sd, and the observed entries stay.
#[test]
fn new_rows_are_filled_from_their_conditional_predictive() {
    use nrmm::data::Dataset;
    use nrmm::kernel::settings::RealColumns;
    use nrmm::kernel::KernelKind;
    use nrmm::model::{Model, ModelSpec};
    use nrmm::prior::NrmPrior;
    use nrmm::run::HyperState;
    let nan = f64::NAN;
    let col = |name: &str, kind: ColumnType, levels: &[&str], values: &[f64]| Column {
        name: name.into(),
        kind,
        levels: levels.iter().map(|l| l.to_string()).collect(),
        values: values.to_vec(),
    };
    let table = |x: &[f64], y: &[f64], b: &[f64], c: &[f64]| {
        TableData::new(vec![
            col("x", ColumnType::Real, &[], x),
            col("y", ColumnType::Real, &[], y),
            col("b", ColumnType::Binary, &["no", "yes"], b),
            col("c", ColumnType::Categorical, &["p", "q", "r"], c),
        ])
        .unwrap()
    };
    let train = table(
        &[0.1, 0.5, nan, 0.3, 3.0, 3.4, 2.9, 6.0],
        &[1.0, 1.2, 0.8, nan, -2.0, -2.5, -1.9, 4.0],
        &[0.0, 0.0, 1.0, 0.0, 1.0, 1.0, nan, 1.0],
        &[0.0, 1.0, 0.0, 0.0, 2.0, nan, 2.0, 1.0],
    );
    let labels = vec![0, 0, 0, 0, 1, 1, 1, 2];
    // Row 0 misses y and b, row 1 misses x, y and c, row 2 misses nothing.
    let new = |b0: f64, c1: f64| {
        table(
            &[0.4, nan, 3.1],
            &[nan, nan, -2.2],
            &[b0, 1.0, 1.0],
            &[1.0, c1, 2.0],
        )
    };
    for real in [RealColumns::Independent, RealColumns::Full] {
        let spec = ModelSpec {
            kernel: Some(KernelKind::named("mixed").unwrap()),
            mixed_real: Some(real),
            ..ModelSpec::default()
        };
        let model = Model::build(&spec, Dataset::Table(train.clone())).unwrap();
        let hyper = HyperState {
            prior: model.prior.hyperparameters(),
            kernel: None,
        };
        let draw = || [Ok((labels.clone(), hyper))];
        let ln_density = |t: TableData, row: usize| {
            nrmm::predict::predict(&model, &Dataset::Table(t), (&labels, &hyper), draw())
                .unwrap()
                .ln_density[row]
        };
        let done =
            nrmm::impute::impute_new(&model, &Dataset::Table(new(nan, nan)), draw()).unwrap();
        assert_eq!(done.draws, 1);
        assert_eq!(done.filled.len(), 5, "{:?}", done.filled);
        // The level's probability given the row's observed entries, by the densities.
        let check = |row: usize, column: &str, with: &dyn Fn(f64) -> TableData, levels: usize| {
            let without = ln_density(new(nan, nan), row);
            let p: Vec<f64> = (0..levels)
                .map(|v| (ln_density(with(v as f64), row) - without).exp())
                .collect();
            assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{p:?}");
            let f = done
                .filled
                .iter()
                .find(|f| f.row == row && f.column == column)
                .unwrap();
            let best = p.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let got = f.probability.unwrap();
            assert!(
                (got - best).abs() < 1e-9,
                "{real:?} {column}: {got} against {p:?}"
            );
        };
        check(0, "b", &|v| new(v, nan), 2);
        check(1, "c", &|v| new(nan, v), 3);
        for f in done
            .filled
            .iter()
            .filter(|f| f.column == "x" || f.column == "y")
        {
            assert!(f.mean.unwrap().is_finite() && f.sd.unwrap() > 0.0, "{f:?}");
        }
        assert_eq!(done.table.value(0, 0), Some(0.4), "observed entries stay");
        assert!(done.profiles.is_empty());
    }
}
