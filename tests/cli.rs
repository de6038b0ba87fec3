//! The `nrmm` command line end to end: every verb with its documented examples, the files
//! `run` writes, and every user mistake ending as one `error:` line on standard error with a
//! non-zero exit status (2 for a malformed command line, 1 for a failing verb), never a panic.
//!
//! Tests that read the real toy data print a message and return when `../shared/data/toy` is
//! absent (`NRMM_DATA_DIR` points them at another copy).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use nrmm::data::generate::data_set_b;
use nrmm::data::load;
use nrmm::kernel::MultinomialDirichlet;
use nrmm::partition::Partition;
use nrmm::prior::{Dp, Prior};
use serde_json::Value;

use crate::support::cli;
use cli::{fails_no_stdout, nrmm, ok, text, TempDir, BIN};

/// Runs `nrmm args` and parses its standard output as JSON.
fn ok_json(args: &[&str]) -> Value {
    let stdout = ok(args);
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("nrmm {args:?}: {e}: {stdout}"))
}

fn data_dir() -> PathBuf {
    std::env::var_os("NRMM_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data"))
}

/// The toy data and its true labels, or `None` (with a message) when absent.
fn toy() -> Option<(String, String)> {
    let dir = data_dir().join("toy");
    let (x, y) = (dir.join("X.txt"), dir.join("gt_labels.txt"));
    if x.is_file() && y.is_file() {
        Some((x.to_str()?.to_string(), y.to_str()?.to_string()))
    } else {
        eprintln!(
            "skipping: real data folder {} is absent (expected at ../shared/data/toy, or set \
             NRMM_DATA_DIR)",
            dir.display()
        );
        None
    }
}

fn field<'a>(v: &'a Value, name: &str) -> &'a Value {
    v.get(name)
        .unwrap_or_else(|| panic!("JSON lacks field {name}: {v}"))
}

fn f64_of(v: &Value, name: &str) -> f64 {
    field(v, name)
        .as_f64()
        .unwrap_or_else(|| panic!("{name} is not a number: {v}"))
}

fn u64_of(v: &Value, name: &str) -> u64 {
    field(v, name)
        .as_u64()
        .unwrap_or_else(|| panic!("{name} is not an integer: {v}"))
}

fn f64_list(v: &Value, name: &str) -> Vec<f64> {
    field(v, name)
        .as_array()
        .unwrap_or_else(|| panic!("{name} is not an array: {v}"))
        .iter()
        .map(|x| x.as_f64().expect("a number"))
        .collect()
}

/// Distinct labels of a labels file.
fn label_count(path: &str) -> usize {
    let body = std::fs::read_to_string(path).expect("a labels file");
    let mut labels: Vec<&str> = body
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    labels.sort_unstable();
    labels.dedup();
    labels.len()
}

/// The rows of a CSV trace: its header and the values of every row.
fn trace(path: &Path) -> (Vec<String>, Vec<Vec<f64>>) {
    let body = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = body.lines();
    let header: Vec<String> = lines
        .next()
        .expect("a header")
        .split(',')
        .map(str::to_string)
        .collect();
    let rows = lines
        .map(|l| {
            l.split(',')
                .map(|v| v.parse().expect("a number"))
                .collect::<Vec<f64>>()
        })
        .collect();
    (header, rows)
}

fn column(header: &[String], name: &str) -> usize {
    header
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("trace header {header:?} lacks {name}"))
}

/// Checks what `run` wrote for `chains` chains of `n` points, each `sweeps` sweeps long when
/// given, and returns the summary.
fn check_run_output(
    out: &TempDir,
    dir: &str,
    chains: usize,
    n: usize,
    sweeps: Option<u64>,
) -> Value {
    let summary: Value =
        serde_json::from_str(&out.read(&format!("{dir}/summary.json"))).expect("summary.json");
    let chain_summaries = field(&summary, "chains").as_array().expect("chains");
    assert_eq!(chain_summaries.len(), chains);
    for (c, s) in chain_summaries.iter().enumerate() {
        assert_eq!(u64_of(s, "chain"), c as u64);
        let (header, rows) = trace(&out.0.join(format!("{dir}/chain-{c}/trace.csv")));
        for name in ["sweep", "seconds", "n_clusters", "log_joint"] {
            column(&header, name);
        }
        assert!(header.len() > 4, "no move columns: {header:?}");
        let done = u64_of(s, "sweeps");
        if let Some(sweeps) = sweeps {
            assert_eq!(done, sweeps);
        }
        let last = rows.last().expect("at least one row");
        assert_eq!(last[column(&header, "sweep")] as u64, done);
        assert_eq!(
            last[column(&header, "n_clusters")] as u64,
            u64_of(s, "n_clusters")
        );
        assert!((last[column(&header, "log_joint")] - f64_of(s, "log_joint")).abs() < 1e-5);
        assert!(f64_of(s, "seconds") > 0.0);
        assert!(f64_of(s, "ess_n_clusters") > 0.0);
        assert!(f64_of(s, "ess_log_joint") > 0.0);
        let labels = out.read(&format!("{dir}/chain-{c}/labels.txt"));
        assert_eq!(labels.lines().count(), n);
        let mut distinct: Vec<&str> = labels.lines().collect();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len() as u64, u64_of(s, "n_clusters"));
    }
    summary
}

// ---------------------------------------------------------------------------------------------
// Every verb works.

/// The golden value of the paper's toy set under the reference model (REFERENCE_FIGURES).
#[test]
fn loglik_of_the_toy_truth_is_the_golden_value() {
    let Some((x, y)) = toy() else { return };
    // The golden value is the reference code's, under its data-based hyperparameters.
    let reference = ["--nw-defaults", "reference"];
    let out = ok(&[
        "loglik",
        "--data",
        &x,
        "--labels",
        &y,
        reference[0],
        reference[1],
    ]);
    assert!(
        out.contains("= -1577.569613"),
        "text output lacks the golden value: {out}"
    );
    assert!(
        out.contains("clusters: 13") && out.contains("points: 1300"),
        "{out}"
    );
    let v = ok_json(&[
        "loglik",
        "--data",
        &x,
        "--labels",
        &y,
        "--json",
        reference[0],
        reference[1],
    ]);
    assert!((f64_of(&v, "log_joint") + 1577.569613).abs() < 5e-7, "{v}");
    assert_eq!(u64_of(&v, "n_clusters"), 13);
    assert_eq!(u64_of(&v, "n"), 1300);
    assert_eq!(u64_of(&v, "d"), 2);
}

/// `loglik --kernel md` on a generated docword file gives the library's log joint, and the
/// kernel follows the data without the flag.
#[test]
fn loglik_md_on_generated_counts_matches_the_library() {
    let dir = TempDir::new("loglik-md");
    let (x, y) = (dir.arg("docword.txt"), dir.arg("y.txt"));
    ok(&[
        "generate",
        "counts",
        "--n",
        "30",
        "--d",
        "40",
        "--k",
        "3",
        "--seed",
        "7",
        "--out",
        &x,
        "--labels-out",
        &y,
    ]);
    let v = ok_json(&[
        "loglik", "--data", &x, "--labels", &y, "--kernel", "md", "--json",
    ]);
    assert_eq!(u64_of(&v, "n"), 30);
    assert_eq!(u64_of(&v, "d"), 40);
    assert_eq!(u64_of(&v, "n_clusters") as usize, label_count(&y));

    let counts = load::load_docword(&x).expect("the generated docword loads");
    let labels = load::load_labels(&y, 30).expect("the generated labels load");
    let kernel = MultinomialDirichlet::new(std::sync::Arc::new(counts), 0.1).expect("kernel");
    let prior = Prior::Dp(Dp::new(1.0).expect("prior"));
    let expected = Partition::from_labels(&kernel, &labels)
        .expect("partition")
        .ln_joint(&prior);
    assert!(
        (f64_of(&v, "log_joint") - expected).abs() < 1e-9 * expected.abs(),
        "{} vs {expected}",
        f64_of(&v, "log_joint")
    );
    let text = ok(&["loglik", "--data", &x, "--labels", &y, "--beta", "0.1"]);
    assert!(text.contains(&format!("{expected:.6}")), "{text}");
}

/// Under a DP with fixed α the EPPF is normalised, so `ln p(Π | X) + ln Z = ln p(X, Π)`: the
/// most probable partition of `exact` fed back to `loglik` ties the two verbs together.
#[test]
fn exact_and_loglik_agree_on_data_set_b() {
    let dir = TempDir::new("exact-loglik");
    let data = dir.arg("b.txt");
    load::write_dense(&data, &data_set_b()).expect("write data set B");
    let post = ok_json(&["exact", "--data", &data, "--json", "--top", "3"]);
    let ln_z = f64_of(&post, "ln_normaliser");
    for part in field(&post, "top_partitions").as_array().expect("top") {
        let rgs = field(part, "rgs").as_str().expect("rgs");
        let labels: String = rgs.chars().map(|c| format!("{c}\n")).collect();
        let y = dir.write("y.txt", &labels);
        let joint = f64_of(
            &ok_json(&["loglik", "--data", &data, "--labels", &y, "--json"]),
            "log_joint",
        );
        let ln_p = f64_of(part, "ln_probability");
        assert!(
            (ln_p + ln_z - joint).abs() < 1e-9,
            "{rgs}: {ln_p} + {ln_z} vs {joint}"
        );
    }
}

/// `loglik --run` scores labels under the run's own model: a chain's final labels give the
/// last log joint of its trace, and the score is the one of `loglik --data` with the scale the
/// run's pilot chose, not the one the flags' defaults would give.
#[test]
fn loglik_run_scores_labels_under_the_runs_own_model() {
    let dir = TempDir::new("loglik-run");
    let (x, y) = (dir.arg("x.txt"), dir.arg("y.txt"));
    ok(&[
        "generate",
        "gaussian",
        "--n",
        "200",
        "--d",
        "2",
        "--k",
        "3",
        "--seed",
        "5",
        "--out",
        &x,
        "--labels-out",
        &y,
    ]);
    let out = dir.arg("run");
    ok(&[
        "run", "--data", &x, "--sweeps", "30", "--chains", "2", "--seed", "1", "--out", &out,
    ]);
    let record: Value = serde_json::from_str(&dir.read("run/run.json")).expect("run.json");
    let psi: Vec<String> = field(field(&record, "model"), "nw_psi")
        .as_array()
        .expect("the pilot recorded its scale")
        .iter()
        .map(|v| v.as_f64().expect("a number").to_string())
        .collect();
    for chain in 0..2 {
        let labels = dir.arg(&format!("run/chain-{chain}/labels.txt"));
        let v = ok_json(&["loglik", "--run", &out, "--labels", &labels, "--json"]);
        let trace = dir.read(&format!("run/chain-{chain}/trace.csv"));
        let last = trace.lines().last().expect("a trace row");
        let traced: f64 = last.split(',').nth(3).expect("log_joint").parse().unwrap();
        let scored = f64_of(&v, "log_joint");
        assert!(
            (scored - traced).abs() < 1e-5,
            "{scored} vs the trace's {traced}"
        );
        let own = &field(&v, "chains").as_array().expect("chains")[chain];
        assert_eq!(f64_of(own, "gap_per_point"), 0.0, "{v}");
        assert_eq!(u64_of(&v, "n"), 200);
        let per_point = f64_of(&v, "log_joint_per_point");
        assert!((per_point * 200.0 - scored).abs() < 1e-9, "{v}");
    }
    let truth = f64_of(
        &ok_json(&["loglik", "--run", &out, "--labels", &y, "--json"]),
        "log_joint",
    );
    let flags = |extra: &[&str]| {
        let mut args = vec!["loglik", "--data", &x, "--labels", &y, "--json"];
        args.extend_from_slice(extra);
        f64_of(&ok_json(&args), "log_joint")
    };
    let at_psi = flags(&["--nw-psi", &psi.join(",")]);
    assert!((truth - at_psi).abs() < 1e-9, "{truth} vs {at_psi}");
    let at_defaults = flags(&[]);
    assert!(
        (truth - at_defaults).abs() > 1e-3,
        "the pilot's scale was not used"
    );
    let text = ok(&["loglik", "--run", &out, "--labels", &y]);
    assert!(text.contains("chain 1: final"), "{text}");
}

/// `loglik --run` refuses, naming the file: labels of the wrong length, a directory that holds
/// no run, data changed since the run, and model flags (the run's model is used).
#[test]
fn loglik_run_refuses_what_does_not_fit_the_run() {
    let dir = TempDir::new("loglik-run-bad");
    let x = dir.arg("x.txt");
    ok(&[
        "generate", "gaussian", "--n", "60", "--d", "2", "--k", "2", "--seed", "2", "--out", &x,
    ]);
    let out = dir.arg("run");
    ok(&[
        "run",
        "--data",
        &x,
        "--sweeps",
        "5",
        "--chains",
        "1",
        "--nw-defaults",
        "scaled",
        "--seed",
        "1",
        "--out",
        &out,
    ]);
    let short = dir.write("short.txt", "0\n1\n0\n");
    fails_no_stdout(
        &["loglik", "--run", &out, "--labels", &short],
        1,
        &[
            "short.txt",
            "holds 3 labels",
            "60 points",
            "one label per point",
        ],
    );
    let nowhere = dir.arg("no-such-run");
    fails_no_stdout(
        &["loglik", "--run", &nowhere, "--labels", &short],
        1,
        &["no-such-run", "expected the directory of an earlier run"],
    );
    fails_no_stdout(
        &["loglik", "--run", &dir.arg(""), "--labels", &short],
        1,
        &["no run.json"],
    );
    let labels = dir.arg("run/chain-0/labels.txt");
    fails_no_stdout(
        &["loglik", "--run", &out, "--labels", &labels, "--alpha", "2"],
        2,
        &["--run"],
    );
    ok(&[
        "generate", "gaussian", "--n", "60", "--d", "2", "--k", "2", "--seed", "3", "--out", &x,
    ]);
    fails_no_stdout(
        &["loglik", "--run", &out, "--labels", &labels],
        1,
        &["x.txt", "have changed since"],
    );
    std::fs::remove_file(&x).expect("remove the data");
    fails_no_stdout(
        &["loglik", "--run", &out, "--labels", &labels],
        1,
        &["cannot read the data of run", "x.txt"],
    );
}

#[test]
fn exact_text_and_json_describe_the_same_posterior() {
    let v = ok_json(&["exact", "--json"]);
    assert_eq!(u64_of(&v, "n_points"), 7);
    assert_eq!(u64_of(&v, "n_partitions"), 877);
    let pk = field(&v, "k_probabilities")
        .as_array()
        .expect("k probabilities");
    let total: f64 = pk.iter().map(|e| f64_of(e, "probability")).sum();
    assert!((total - 1.0).abs() < 1e-12);
    let mean: f64 = pk
        .iter()
        .map(|e| u64_of(e, "k") as f64 * f64_of(e, "probability"))
        .sum();
    let expected_k = f64_of(&v, "expected_k");
    assert!((mean - expected_k).abs() < 1e-12);
    let top: Vec<f64> = field(&v, "top_partitions")
        .as_array()
        .expect("top")
        .iter()
        .map(|p| f64_of(p, "probability"))
        .collect();
    assert_eq!(top.len(), 10, "--top defaults to 10");
    assert!(top.windows(2).all(|w| w[0] >= w[1]), "{top:?}");

    let text = ok(&["exact"]);
    assert!(
        text.starts_with("exact posterior over 877 partitions of 7 points"),
        "{text}"
    );
    assert!(text.contains(&format!("E[K] = {expected_k:.6}")), "{text}");
    assert!(text.contains(&format!("{:.6}", top[0])), "{text}");
}

/// DP and NGGP, fixed and with hyperpriors, are four different exact posteriors, each a
/// distribution over K.
#[test]
fn exact_under_each_prior_and_with_hyperpriors() {
    let runs = [
        vec!["exact", "--json"],
        vec!["exact", "--json", "--hyperpriors"],
        vec![
            "exact", "--json", "--prior", "nggp", "--alpha", "1", "--sigma", "0.5",
        ],
        vec!["exact", "--json", "--prior", "nggp", "--hyperpriors"],
    ];
    let mut means = Vec::new();
    for args in &runs {
        let v = ok_json(args);
        let total: f64 = field(&v, "k_probabilities")
            .as_array()
            .expect("k probabilities")
            .iter()
            .map(|e| f64_of(e, "probability"))
            .sum();
        assert!((total - 1.0).abs() < 1e-9, "{args:?}: {total}");
        means.push(f64_of(&v, "expected_k"));
    }
    for i in 0..means.len() {
        for j in 0..i {
            assert!(
                (means[i] - means[j]).abs() > 1e-6,
                "{:?} and {:?} give the same E[K] = {}",
                runs[i],
                runs[j],
                means[i]
            );
        }
    }
}

#[test]
fn exact_top_is_clamped_to_every_partition() {
    let v = ok_json(&["exact", "--json", "--top", "100000000000"]);
    assert_eq!(
        field(&v, "top_partitions").as_array().expect("top").len(),
        877
    );
    let v = ok_json(&["exact", "--json", "--top", "0"]);
    assert!(field(&v, "top_partitions")
        .as_array()
        .expect("top")
        .is_empty());
}

#[test]
fn exact_and_check_exact_refuse_too_many_points() {
    let dir = TempDir::new("too-many");
    let x13 = dir.arg("x13.txt");
    ok(&[
        "generate", "gaussian", "--n", "13", "--d", "2", "--k", "2", "--seed", "1", "--out", &x13,
    ]);
    fails_no_stdout(&["exact", "--data", &x13], 1, &["13 points", "at most 12"]);
    let x11 = dir.arg("x11.txt");
    ok(&[
        "generate", "gaussian", "--n", "11", "--d", "2", "--k", "2", "--seed", "1", "--out", &x11,
    ]);
    fails_no_stdout(
        &["check-exact", "--data", &x11, "--sweeps", "200"],
        1,
        &["11 points", "at most 10"],
    );
    // 11 points are fine for exact.
    let v = ok_json(&["exact", "--data", &x11, "--json", "--top", "1"]);
    assert_eq!(u64_of(&v, "n_partitions"), 678_570);
}

#[test]
fn generate_gaussian_with_k_and_each_prior_round_trips() {
    let dir = TempDir::new("generate-gaussian");
    for (tag, extra) in [
        ("k", vec!["--k", "4"]),
        ("dp", vec!["--prior", "dp", "--alpha", "2"]),
        (
            "nggp",
            vec!["--prior", "nggp", "--alpha", "1", "--sigma", "0.3"],
        ),
    ] {
        let (x, y) = (
            dir.arg(&format!("{tag}-x.txt")),
            dir.arg(&format!("{tag}-y.txt")),
        );
        let mut args = vec![
            "generate",
            "gaussian",
            "--n",
            "40",
            "--d",
            "3",
            "--seed",
            "11",
            "--out",
            &x,
            "--labels-out",
            &y,
        ];
        args.extend(extra.iter().copied());
        let said = ok(&args);
        let k = label_count(&y);
        assert_eq!(
            said.trim(),
            format!("wrote 40 points in {k} clusters to {x}")
        );
        if tag == "k" {
            assert!(k <= 4, "{k} clusters for --k 4");
        }
        let data = load::load_dense(&x).expect("generated data load");
        assert_eq!((data.n(), data.d()), (40, 3));
        let v = ok_json(&["loglik", "--data", &x, "--labels", &y, "--json"]);
        assert_eq!(u64_of(&v, "n_clusters") as usize, k);
        assert_eq!((u64_of(&v, "n"), u64_of(&v, "d")), (40, 3));
        let out = dir.arg(&format!("{tag}-run"));
        ok(&["run", "--data", &x, "--sweeps", "3", "--out", &out]);
        check_run_output(&dir, &format!("{tag}-run"), 4, 40, Some(3));
    }
}

#[test]
fn generate_counts_round_trips_through_loglik_and_run() {
    let dir = TempDir::new("generate-counts");
    let (x, y) = (dir.arg("docword.txt"), dir.arg("y.txt"));
    ok(&[
        "generate",
        "counts",
        "--n",
        "25",
        "--d",
        "60",
        "--prior",
        "nggp",
        "--sigma",
        "0.4",
        "--beta",
        "0.2",
        "--doc-length",
        "20",
        "--seed",
        "3",
        "--out",
        &x,
        "--labels-out",
        &y,
    ]);
    let header: Vec<String> = dir
        .read("docword.txt")
        .lines()
        .take(2)
        .map(str::to_string)
        .collect();
    assert_eq!(header, ["25", "60"]);
    let v = ok_json(&["loglik", "--data", &x, "--labels", &y, "--json"]);
    assert_eq!(u64_of(&v, "n_clusters") as usize, label_count(&y));
    ok(&[
        "run",
        "--data",
        &x,
        "--sampler",
        "sams",
        "--sweeps",
        "4",
        "--out",
        &dir.arg("run"),
    ]);
    check_run_output(&dir, "run", 4, 25, Some(4));
}

#[test]
fn generate_is_a_function_of_its_seed() {
    let dir = TempDir::new("generate-seed");
    let make = |name: &str, seed: &str| {
        let x = dir.arg(name);
        ok(&[
            "generate", "gaussian", "--n", "20", "--d", "2", "--seed", seed, "--out", &x,
        ]);
        dir.read(name)
    };
    let (a, b, c) = (make("a.txt", "5"), make("b.txt", "5"), make("c.txt", "6"));
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn run_writes_trace_labels_and_summary() {
    let dir = TempDir::new("run-files");
    let out = dir.arg("o");
    let said = ok(&[
        "run", "--sweeps", "6", "--thin", "2", "--seed", "4", "--out", &out,
    ]);
    assert!(said.starts_with("chain 0: 6 sweeps in "), "{said}");
    assert!(said.trim_end().ends_with(&format!("wrote {out}")), "{said}");
    for needle in [
        "after a burn-in of 3 sweeps per chain (4 chains",
        "log_joint",
        "n_clusters",
        "ESS bulk",
        "R-hat",
        "P(K): ",
        "point estimate (estimate.txt: the minimiser of the expected VI, among 8 draws)",
        "Dahl's estimate (estimate-dahl.txt, among 8 draws)",
        "best state visited",
    ] {
        assert!(said.contains(needle), "{needle:?} not in {said}");
    }
    let summary = check_run_output(&dir, "o", 4, 1300, Some(6));
    assert_eq!(field(&summary, "sampler"), "tgmcmc");
    assert_eq!(u64_of(&summary, "seed"), 4);
    let command: Vec<&str> = field(&summary, "command")
        .as_array()
        .expect("the command line")
        .iter()
        .map(|v| v.as_str().expect("an argument"))
        .collect();
    assert_eq!(
        command[1..],
        ["run", "--sweeps", "6", "--thin", "2", "--seed", "4", "--out", &out]
    );
    for name in ["log_joint", "n_clusters"] {
        let d = field(field(&summary, "diagnostics"), name);
        for stat in ["mean", "sd", "ess_bulk", "ess_tail", "rhat", "draws"] {
            field(d, stat);
        }
    }
    let p_k: f64 = field(&summary, "k_distribution")
        .as_object()
        .expect("K distribution")
        .values()
        .map(|p| p.as_f64().expect("a probability"))
        .sum();
    assert!((p_k - 1.0).abs() < 1e-9, "{p_k}");
    // The default estimate is the VI's, Dahl's beside it.
    assert_eq!(field(&summary, "default_estimate"), "vi");
    let vi = &field(field(&summary, "by_loss"), "estimates")[0];
    assert_eq!(field(vi, "loss"), "vi");
    assert_eq!(
        label_count(&dir.arg("o/estimate.txt")) as u64,
        u64_of(vi, "n_clusters")
    );
    assert_eq!(dir.read("o/estimate.txt"), dir.read("o/estimate-vi.txt"));
    assert_eq!(dir.read("o/estimate.txt").lines().count(), 1300);
    let estimate = field(&summary, "point_estimate");
    let k = u64_of(estimate, "n_clusters");
    assert_eq!(label_count(&dir.arg("o/estimate-dahl.txt")) as u64, k);
    assert_eq!(
        label_count(&dir.arg("o/map.txt")) as u64,
        u64_of(field(&summary, "map"), "n_clusters")
    );
    assert!(f64_of(field(&summary, "map"), "log_joint") >= f64_of(estimate, "log_joint"));
    let (header, rows) = trace(&dir.0.join("o/chain-0/trace.csv"));
    let sweeps: Vec<f64> = rows.iter().map(|r| r[column(&header, "sweep")]).collect();
    assert_eq!(sweeps, [2.0, 4.0, 6.0], "--thin 2 keeps every second sweep");
    column(&header, "alpha");
}

#[test]
fn run_with_a_time_budget_and_two_chains() {
    let dir = TempDir::new("run-seconds");
    let x = dir.arg("x.txt");
    ok(&[
        "generate", "gaussian", "--n", "60", "--d", "2", "--k", "3", "--seed", "2", "--out", &x,
    ]);
    let said = ok(&[
        "run",
        "--data",
        &x,
        "--seconds",
        "0.2",
        "--chains",
        "2",
        "--out",
        &dir.arg("o"),
    ]);
    assert!(
        said.contains("chain 0: ") && said.contains("chain 1: "),
        "{said}"
    );
    let summary = check_run_output(&dir, "o", 2, 60, None);
    for s in field(&summary, "chains").as_array().expect("chains") {
        assert!(f64_of(s, "seconds") >= 0.2, "{s}");
    }
    // Different chains draw from different streams.
    assert_ne!(
        dir.read("o/chain-0/trace.csv"),
        dir.read("o/chain-1/trace.csv")
    );
}

/// A Gibbs sweep over one random point (`--gibbs-subset 1`) changes K by at most one, so the
/// first row of the trace shows where the chain started.
#[test]
fn run_starts_where_init_says() {
    let dir = TempDir::new("run-init");
    let (x, y) = (dir.arg("x.txt"), dir.arg("y.txt"));
    ok(&[
        "generate",
        "gaussian",
        "--n",
        "30",
        "--d",
        "2",
        "--k",
        "4",
        "--seed",
        "9",
        "--out",
        &x,
        "--labels-out",
        &y,
    ]);
    let k0 = label_count(&y) as f64;
    let labels_init = format!("labels:{y}");
    for (name, init, start) in [
        ("single", "single", 1.0),
        ("singletons", "singletons", 30.0),
        ("labels", labels_init.as_str(), k0),
    ] {
        ok(&[
            "run",
            "--data",
            &x,
            "--init",
            init,
            "--sweeps",
            "1",
            "--sampler",
            "gibbs",
            "--gibbs-subset",
            "1",
            "--out",
            &dir.arg(name),
        ]);
        let (header, rows) = trace(&dir.0.join(format!("{name}/chain-0/trace.csv")));
        let k = rows[0][column(&header, "n_clusters")];
        assert!(
            (k - start).abs() <= 1.0,
            "--init {init}: K = {k} after one point moved"
        );
    }
}

#[test]
fn run_each_sampler_under_each_prior() {
    let dir = TempDir::new("run-samplers");
    let x = dir.arg("x.txt");
    ok(&[
        "generate", "gaussian", "--n", "50", "--d", "2", "--k", "3", "--seed", "8", "--out", &x,
    ]);
    for sampler in ["gibbs", "jain-neal", "sams"] {
        for (tag, prior) in [
            ("dp", vec![]),
            ("dp-hyper", vec!["--hyperpriors"]),
            ("nggp", vec!["--prior", "nggp", "--sigma", "0.3"]),
            ("nggp-hyper", vec!["--prior", "nggp", "--hyperpriors"]),
        ] {
            let name = format!("{sampler}-{tag}");
            let out = dir.arg(&name);
            let mut args = vec![
                "run",
                "--data",
                &x,
                "--sampler",
                sampler,
                "--sweeps",
                "5",
                "--out",
                &out,
            ];
            args.extend(prior.iter().copied());
            ok(&args);
            let summary = check_run_output(&dir, &name, 4, 50, Some(5));
            assert_eq!(field(&summary, "sampler"), sampler);
            let (header, _) = trace(&dir.0.join(format!("{name}/chain-0/trace.csv")));
            if tag.starts_with("nggp") {
                for h in ["u", "alpha", "sigma"] {
                    column(&header, h);
                }
            }
        }
    }
}

#[test]
fn run_is_a_function_of_its_seed() {
    let dir = TempDir::new("run-seed");
    let x = dir.arg("x.txt");
    ok(&[
        "generate", "gaussian", "--n", "40", "--d", "2", "--k", "3", "--seed", "1", "--out", &x,
    ]);
    for (name, seed) in [("a", "3"), ("b", "3"), ("c", "4")] {
        ok(&[
            "run",
            "--data",
            &x,
            "--sampler",
            "sams",
            "--init",
            "singletons",
            "--sweeps",
            "10",
            "--chains",
            "2",
            "--seed",
            seed,
            "--out",
            &dir.arg(name),
        ]);
    }
    for c in 0..2 {
        let labels = |run: &str| dir.read(&format!("{run}/chain-{c}/labels.txt"));
        assert_eq!(labels("a"), labels("b"));
    }
    let column_of = |run: &str, name: &str| -> Vec<f64> {
        let (header, rows) = trace(&dir.0.join(format!("{run}/chain-0/trace.csv")));
        let i = column(&header, name);
        rows.iter().map(|r| r[i]).collect()
    };
    assert_eq!(column_of("a", "log_joint"), column_of("b", "log_joint"));
    assert_ne!(column_of("a", "log_joint"), column_of("c", "log_joint"));
}

#[test]
fn check_exact_reports_tv_and_both_k_distributions() {
    let v = ok_json(&[
        "check-exact",
        "--sampler",
        "sams",
        "--prior",
        "nggp",
        "--hyperpriors",
        "--sweeps",
        "2000",
        "--json",
    ]);
    let tv = f64_of(&v, "tv");
    let floor = f64_of(&v, "tv_noise_floor");
    assert!((0.0..=1.0).contains(&tv), "{tv}");
    assert!(floor > 0.0 && floor <= 1.0, "{floor}");
    for name in ["p_k_exact", "p_k_sampler"] {
        let p = f64_list(&v, name);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{name}: {p:?}");
    }
    let text = ok(&["check-exact", "--sweeps", "500"]);
    assert!(
        text.contains("total variation to the exact posterior"),
        "{text}"
    );
    assert!(text.contains("450 draws after 10% burn-in"), "{text}");
}

/// Every `nrmm ...` line of the README's command-line section runs as written (in a scratch
/// directory, with `../shared/data` pointing at the data).
#[test]
fn readme_examples_work() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let dir = TempDir::new("readme");
    let data = data_dir();
    let lines: Vec<&str> = readme
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("nrmm "))
        .collect();
    assert!(lines.len() >= 6, "README lost its examples: {lines:?}");
    // Every verb has its example.
    let help = ok(&["--help"]);
    let verbs: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|&v| v != "help")
        .collect();
    assert!(verbs.len() >= 9, "{help}");
    for verb in verbs {
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with(&format!("nrmm {verb} "))),
            "the README has no example of `nrmm {verb}`"
        );
    }
    for line in lines {
        if line.contains("../shared/data") && toy().is_none() {
            continue;
        }
        let line = line.replace("../shared/data", data.to_str().expect("UTF-8 data path"));
        let args: Vec<&str> = line.split_whitespace().skip(1).collect();
        let out = Command::new(BIN)
            .args(&args)
            .current_dir(&dir.0)
            .stdin(Stdio::null())
            .output()
            .expect("nrmm runs");
        assert!(
            out.status.success(),
            "README example `{line}` failed: {}",
            text(&out.stderr)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Every user mistake is one line and a non-zero exit.

#[test]
fn malformed_command_lines_exit_2_with_one_line() {
    fails_no_stdout(
        &[],
        2,
        &["no verb given", "loglik, exact, generate, run, check-exact"],
    );
    fails_no_stdout(&["cluster"], 2, &["'cluster'", "expected one of loglik"]);
    fails_no_stdout(
        &["run", "--out", "x", "--sampler", "gibs"],
        2,
        &["--sampler", "gibbs, jain-neal, sams"],
    );
    fails_no_stdout(
        &["loglik", "--labels", "y", "--kernel", "gauss"],
        2,
        &["--kernel", "nw, md"],
    );
    fails_no_stdout(
        &["exact", "--prior", "pitman-yor"],
        2,
        &["--prior", "dp, nggp"],
    );
    fails_no_stdout(&["loglik"], 2, &["--labels"]);
    fails_no_stdout(&["run"], 2, &["--out"]);
    fails_no_stdout(
        &["generate", "gaussian", "--n", "5"],
        2,
        &["--d", "--seed", "--out"],
    );
    fails_no_stdout(
        &[
            "generate", "images", "--n", "5", "--d", "2", "--seed", "1", "--out", "x",
        ],
        2,
        &["gaussian, counts"],
    );
    fails_no_stdout(
        &["run", "--out", "x", "--init", "random"],
        2,
        &["--init", "single, singletons or labels:FILE"],
    );
    fails_no_stdout(
        &["run", "--out", "x", "--init", "labels:"],
        2,
        &["labels:FILE"],
    );
    fails_no_stdout(
        &["run", "--out", "x", "--sweeps", "3", "--seconds", "1"],
        2,
        &["--sweeps", "--seconds"],
    );
    fails_no_stdout(
        &["run", "--out", "x", "--chains", "-1"],
        2,
        &["--chains", "-1"],
    );
    fails_no_stdout(
        &["run", "--out", "x", "--sweeps", "many"],
        2,
        &["--sweeps", "many"],
    );
    fails_no_stdout(&["exact", "--alpha", "one"], 2, &["--alpha", "one"]);
    fails_no_stdout(&["exact", "--nw-psi", "1,x,0,1"], 2, &["--nw-psi", "x"]);
    fails_no_stdout(&["exact", "--unknown-flag"], 2, &["--unknown-flag"]);
    fails_no_stdout(
        &[
            "generate", "gaussian", "--n", "9", "--d", "2", "--k", "2", "--alpha", "1", "--seed",
            "1", "--out", "x",
        ],
        2,
        &["--k", "--alpha"],
    );
}

#[test]
fn help_and_version_succeed() {
    let help = ok(&["--help"]);
    assert!(
        help.contains("check-exact") && help.contains("Exit status"),
        "{help}"
    );
    assert!(ok(&["run", "--help"]).contains("--seconds"));
    assert!(ok(&["--version"]).starts_with("nrmm "));
}

#[test]
fn unreadable_and_malformed_files_are_named() {
    let dir = TempDir::new("bad-files");
    let missing = dir.arg("missing.txt");
    // One column: three 2-D points would get the diagonal kernel, with a note on stderr.
    let good = dir.write("good.txt", "0\n1\n0.3\n");
    let labels3 = dir.write("y3.txt", "1\n1\n2\n");
    fails_no_stdout(
        &["loglik", "--data", &missing, "--labels", &labels3],
        1,
        &["cannot read", "missing.txt"],
    );
    fails_no_stdout(
        &["loglik", "--data", &good, "--labels", &missing],
        1,
        &["cannot read", "missing.txt"],
    );
    fails_no_stdout(
        &[
            "run",
            "--data",
            &good,
            "--init",
            &format!("labels:{missing}"),
            "--out",
            &dir.arg("o"),
        ],
        1,
        &["cannot read", "missing.txt"],
    );
    fails_no_stdout(&["exact", "--data", &dir.arg("")], 1, &["cannot read"]);

    // NaN is a missing value: the text is a table, which the matrix kernels refuse.
    let nan = dir.write("nan.txt", "0 0\n1 NaN\n0.3 2\n");
    fails_no_stdout(
        &[
            "loglik", "--data", &nan, "--labels", &labels3, "--kernel", "nw",
        ],
        1,
        &["--kernel nw does not read a table", "mixed"],
    );
    let ragged = dir.write("ragged.txt", "0 0\n1\n0.3 2\n");
    fails_no_stdout(
        &["loglik", "--data", &ragged, "--labels", &labels3],
        1,
        &["ragged.txt:2", "expected 2"],
    );
    let word = dir.write("word.txt", "0 0\n1 x\n0.3 2\n");
    fails_no_stdout(
        &["exact", "--data", &word, "--format", "dense"],
        1,
        &["word.txt:2"],
    );
    let empty = dir.write("empty.txt", "");
    fails_no_stdout(&["exact", "--data", &empty], 1, &["empty.txt", "empty"]);

    // Docword: too few entries, ids out of range, a non-integer count.
    let short = dir.write("short.docword", "3\n5\n3\n1 1 1\n3 5 2\n");
    fails_no_stdout(
        &["exact", "--data", &short, "--format", "docword"],
        1,
        &["short.docword", "NNZ = 3"],
    );
    let word_id = dir.write("id.docword", "3\n5\n2\n1 1 1\n3 6 2\n");
    fails_no_stdout(
        &["exact", "--data", &word_id, "--format", "docword"],
        1,
        &["id.docword:5", "word id 6"],
    );
    let doc_id = dir.write("doc.docword", "3\n5\n2\n1 1 1\n4 5 2\n");
    fails_no_stdout(
        &["exact", "--data", &doc_id, "--format", "docword"],
        1,
        &["doc.docword:5", "document id 4"],
    );
    let count = dir.write("count.docword", "3\n5\n2\n1 1 1\n3 5 2.5\n");
    fails_no_stdout(
        &["exact", "--data", &count, "--format", "docword"],
        1,
        &["count.docword:5", "2.5"],
    );
    let idx = dir.write("not.idx", "this is text\n");
    fails_no_stdout(
        &["exact", "--data", &idx, "--format", "idx"],
        1,
        &["not.idx", "IDX"],
    );

    let bad_labels = dir.write("bad-labels.txt", "1\ntwo\n3\n");
    fails_no_stdout(
        &["loglik", "--data", &good, "--labels", &bad_labels],
        1,
        &["bad-labels.txt:2"],
    );
    let labels2 = dir.write("y2.txt", "1\n2\n");
    fails_no_stdout(
        &["loglik", "--data", &good, "--labels", &labels2],
        1,
        &["2 labels", "3 points"],
    );
    fails_no_stdout(
        &[
            "run",
            "--data",
            &good,
            "--init",
            &format!("labels:{labels2}"),
            "--out",
            &dir.arg("o"),
        ],
        1,
        &["2 labels", "3 points"],
    );
    fails_no_stdout(
        &["loglik", "--labels", &labels2],
        1,
        &["2 labels", "1300 points"],
    );
    fails_no_stdout(
        &["exact", "--format", "dense"],
        1,
        &["--format needs --data"],
    );
}

#[test]
fn kernel_and_data_must_agree() {
    let dir = TempDir::new("kernel-data");
    let dense = dir.write("x.txt", "0 0\n1 0.5\n0.3 2\n");
    let counts = dir.write("c.docword", "3\n5\n3\n1 1 1\n2 2 4\n3 5 2\n");
    fails_no_stdout(
        &["exact", "--data", &dense, "--kernel", "md"],
        1,
        &["--kernel md", "count data"],
    );
    fails_no_stdout(
        &["exact", "--data", &counts, "--kernel", "nw"],
        1,
        &["--kernel nw", "counts"],
    );
    fails_no_stdout(
        &["exact", "--data", &counts, "--nw-r", "2"],
        1,
        &["--nw-*", "counts"],
    );
    fails_no_stdout(
        &["exact", "--data", &dense, "--beta", "0.5"],
        1,
        &["--beta", "real matrix"],
    );
    // Each works with the kernel that fits.
    ok(&[
        "exact", "--data", &counts, "--kernel", "md", "--beta", "0.5",
    ]);
    ok(&["exact", "--data", &dense, "--kernel", "nw"]);
}

#[test]
fn impossible_hyperparameters_name_their_flag() {
    fails_no_stdout(
        &["exact", "--sigma", "0.5"],
        1,
        &["--sigma", "--prior nggp"],
    );
    fails_no_stdout(&["exact", "--u", "2"], 1, &["--u", "--prior nggp"]);
    for alpha in ["0", "-1", "NaN", "inf"] {
        fails_no_stdout(&["exact", "--alpha", alpha], 1, &["--alpha", "> 0"]);
    }
    for sigma in ["0", "1", "1.5", "-0.2", "nan"] {
        fails_no_stdout(
            &["exact", "--prior", "nggp", "--sigma", sigma],
            1,
            &["--sigma", "(0, 1)"],
        );
    }
    fails_no_stdout(
        &[
            "exact",
            "--prior",
            "nggp",
            "--hyperpriors",
            "--sigma",
            "0.995",
        ],
        1,
        &["--sigma", "[0.01, 0.99]"],
    );
    fails_no_stdout(
        &["exact", "--prior", "nggp", "--u", "0"],
        1,
        &["--u", "> 0"],
    );
    // The built-in data set B is 2-D: ν must exceed 1.
    fails_no_stdout(&["exact", "--nw-nu", "1"], 1, &["--nw-nu", "> d - 1 = 1"]);
    fails_no_stdout(&["exact", "--nw-nu", "-3"], 1, &["--nw-nu"]);
    fails_no_stdout(&["exact", "--nw-r", "0"], 1, &["--nw-r", "> 0"]);
    fails_no_stdout(
        &["exact", "--nw-psi", "1,2,2,1"],
        1,
        &["--nw-psi", "positive definite"],
    );
    fails_no_stdout(
        &["exact", "--nw-psi", "1,2,3,1"],
        1,
        &["--nw-psi[1][0]", "symmetric"],
    );
    fails_no_stdout(
        &["exact", "--nw-psi", "1,0,0"],
        1,
        &["--nw-psi", "3 values", "4 comma-separated"],
    );
    fails_no_stdout(
        &["exact", "--nw-psi", "1,0,0,1,0"],
        1,
        &["--nw-psi", "5 values"],
    );
    fails_no_stdout(
        &["exact", "--nw-xi", "0,0,0"],
        1,
        &["--nw-xi", "3 values", "2 comma-separated"],
    );
    fails_no_stdout(&["exact", "--nw-xi", "0,inf"], 1, &["--nw-xi[1]", "finite"]);
    let dir = TempDir::new("hyper");
    let counts = dir.write("c.docword", "2\n4\n2\n1 1 1\n2 2 4\n");
    fails_no_stdout(
        &["exact", "--data", &counts, "--beta", "0"],
        1,
        &["--beta", "> 0"],
    );
    // Collinear points leave no reference default (the unit-equivariant one falls back to the
    // covariance's diagonal; without --kernel, the diagonal kernel takes over); explicit ones
    // work.
    let line = dir.write("line.txt", "1 2\n2 4\n3 6\n");
    fails_no_stdout(
        &[
            "exact",
            "--data",
            &line,
            "--kernel",
            "nw",
            "--nw-defaults",
            "reference",
        ],
        1,
        &["sample covariance", "give --nw-xi and --nw-psi"],
    );
    ok(&["exact", "--data", &line, "--kernel", "nw"]);
    ok(&["exact", "--data", &line, "--kernel", "diag"]);
    ok(&[
        "exact", "--data", &line, "--nw-xi", "0,0", "--nw-psi", "1,0,0,1", "--nw-r", "1",
        "--nw-nu", "3",
    ]);
}

#[test]
fn run_budget_and_settings_are_checked_before_sampling() {
    let dir = TempDir::new("run-budget");
    let out = dir.arg("o");
    fails_no_stdout(
        &["run", "--chains", "0", "--out", &out],
        1,
        &["--chains", "at least 1"],
    );
    fails_no_stdout(
        &["run", "--sweeps", "0", "--out", &out],
        1,
        &["--sweeps", "at least 1"],
    );
    fails_no_stdout(
        &["run", "--thin", "0", "--out", &out],
        1,
        &["--thin", "at least 1"],
    );
    for seconds in ["0", "-1", "NaN", "inf"] {
        fails_no_stdout(
            &["run", "--seconds", seconds, "--out", &out],
            1,
            &["--seconds", "> 0"],
        );
    }
    fails_no_stdout(
        &["run", "--gibbs-subset", "0", "--sweeps", "1", "--out", &out],
        1,
        &["--gibbs-subset"],
    );
    fails_no_stdout(
        &[
            "run",
            "--sampler",
            "sams",
            "--proposals",
            "0",
            "--gibbs-sweeps",
            "0",
            "--out",
            &out,
        ],
        1,
        &["--proposals 0", "--gibbs-sweeps 0"],
    );
    fails_no_stdout(
        &["check-exact", "--sweeps", "10"],
        1,
        &["--sweeps", "at least 100"],
    );
    assert!(
        !dir.0.join("o").exists(),
        "a refused run created its output directory"
    );
}

#[test]
fn generate_parameters_name_their_flag() {
    let dir = TempDir::new("generate-bad");
    let out = dir.arg("x.txt");
    let g = |extra: &[&'static str]| {
        let mut args: Vec<String> = ["generate", "gaussian", "--seed", "1", "--out", &out]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    };
    let check = |args: Vec<String>, needles: &[&str]| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        fails_no_stdout(&args, 1, needles);
    };
    check(g(&["--n", "0", "--d", "2"]), &["--n", "at least 1"]);
    check(g(&["--n", "10", "--d", "0"]), &["--d", "at least 1"]);
    check(
        g(&["--n", "10", "--d", "2", "--k", "0"]),
        &["--k", "1..=10"],
    );
    check(
        g(&["--n", "10", "--d", "2", "--k", "11"]),
        &["--k", "1..=10"],
    );
    check(
        g(&["--n", "10", "--d", "2", "--alpha", "0"]),
        &["--alpha", "> 0"],
    );
    check(
        g(&["--n", "10", "--d", "2", "--sigma", "0.5"]),
        &["--sigma", "--prior nggp"],
    );
    check(
        g(&["--n", "10", "--d", "2", "--prior", "nggp", "--sigma", "1"]),
        &["--sigma", "(0, 1)"],
    );
    check(
        g(&["--n", "10", "--d", "2", "--beta", "0.5"]),
        &["--beta", "counts only"],
    );
    check(
        g(&["--n", "1000000000000", "--d", "2"]),
        &["--n", "at most"],
    );
    check(
        g(&["--n", "100000", "--d", "100000", "--k", "1"]),
        &["GiB", "lower --n or --d"],
    );
    let c = |extra: &[&str]| {
        let mut args = vec![
            "generate", "counts", "--seed", "1", "--out", &out, "--n", "10", "--d", "20",
        ];
        args.extend_from_slice(extra);
        fails_no_stdout(&args, 1, &[extra[0]]);
    };
    c(&["--doc-length", "0"]);
    c(&["--doc-length", "nan"]);
    c(&["--beta", "-1"]);
    assert!(
        !dir.0.join("x.txt").exists(),
        "a refused generate wrote its output"
    );
}

#[test]
fn outputs_that_cannot_be_written_are_named() {
    let dir = TempDir::new("unwritable");
    // A path below a regular file cannot be created, whatever the user's permissions.
    let file = dir.write("file", "not a directory\n");
    let below = format!("{file}/x.txt");
    fails_no_stdout(
        &[
            "generate", "gaussian", "--n", "5", "--d", "2", "--seed", "1", "--out", &below,
        ],
        1,
        &["cannot write", "file/x.txt"],
    );
    fails_no_stdout(
        &[
            "generate",
            "gaussian",
            "--n",
            "5",
            "--d",
            "2",
            "--seed",
            "1",
            "--out",
            &dir.arg("ok.txt"),
            "--labels-out",
            &below,
        ],
        1,
        &["cannot write", "file/x.txt"],
    );
    fails_no_stdout(
        &[
            "generate",
            "counts",
            "--n",
            "5",
            "--d",
            "4",
            "--seed",
            "1",
            "--out",
            &dir.arg(""),
        ],
        1,
        &["cannot write"],
    );
    fails_no_stdout(
        &["run", "--sweeps", "1", "--out", &file],
        1,
        &["cannot create directory", "file"],
    );
    fails_no_stdout(
        &["run", "--sweeps", "1", "--out", &format!("{file}/run")],
        1,
        &["cannot create directory", "file/run"],
    );
    // An existing directory where the trace goes.
    let run = dir.arg("run");
    std::fs::create_dir_all(dir.0.join("run/chain-0/trace.csv")).expect("a blocking directory");
    fails_no_stdout(
        &["run", "--sweeps", "1", "--out", &run],
        1,
        &["cannot write", "trace.csv"],
    );
}

/// A reader that stops early (`| head`) ends the output quietly; a full disk is an error.
#[test]
fn closed_or_full_standard_output_is_not_a_panic() {
    let mut child = Command::new(BIN)
        .args(["exact", "--prior", "nggp", "--hyperpriors", "--top", "877"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nrmm runs");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("nrmm ends");
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{}: {stderr}", out.status);
    assert!(stderr.is_empty(), "{stderr}");

    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("skipping the full-disk case: no /dev/full on this system");
        return;
    };
    let out = Command::new(BIN)
        .args(["exact", "--json"])
        .stdout(full)
        .output()
        .expect("nrmm runs");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("cannot write to standard output"),
        "{stderr}"
    );
}

/// Paths need not be UTF-8: the summary records the command line lossily instead of failing.
#[cfg(unix)]
#[test]
fn non_utf8_output_paths_work() {
    use std::os::unix::ffi::OsStrExt;
    let dir = TempDir::new("non-utf8");
    let out = dir.0.join(OsStr::from_bytes(b"run-\xff"));
    let result = nrmm(&[
        OsStr::new("run"),
        OsStr::new("--sweeps"),
        OsStr::new("2"),
        OsStr::new("--out"),
        out.as_os_str(),
    ]);
    assert!(result.status.success(), "{}", text(&result.stderr));
    assert!(out.join("summary.json").is_file());
    assert!(out.join("chain-0/labels.txt").is_file());
}

/// A chain that fails stops the others at their next sweep, and its error is the one
/// reported: a one-minute budget ends at once.
#[test]
fn a_failing_chain_stops_the_others() {
    let dir = TempDir::new("chain-fails");
    std::fs::create_dir_all(dir.0.join("run/chain-0/trace.csv")).expect("a blocking directory");
    let start = std::time::Instant::now();
    fails_no_stdout(
        &[
            "run",
            "--seconds",
            "60",
            "--chains",
            "2",
            "--out",
            &dir.arg("run"),
        ],
        1,
        &["cannot write", "chain-0", "trace.csv"],
    );
    let elapsed = start.elapsed().as_secs_f64();
    assert!(elapsed < 20.0, "the healthy chain ran on for {elapsed} s");
    assert!(!dir.0.join("run/summary.json").exists());
}

// ---------------------------------------------------------------------------------------------
// Checkpoints, resume and Ctrl-C.

/// A generated 2-D Gaussian mixture (and its labels) in `dir`: `x.txt`, `y.txt`.
fn mixture(dir: &TempDir, n: usize, k: usize, seed: u64) -> (String, String) {
    let (x, y) = (dir.arg("x.txt"), dir.arg("y.txt"));
    let (n, k, seed) = (n.to_string(), k.to_string(), seed.to_string());
    ok(&[
        "generate",
        "gaussian",
        "--n",
        &n,
        "--d",
        "2",
        "--k",
        &k,
        "--seed",
        &seed,
        "--out",
        &x,
        "--labels-out",
        &y,
    ]);
    (x, y)
}

/// The lines of a trace without its `seconds` column, the only one that depends on the clock.
fn timeless_trace(path: &Path) -> Vec<String> {
    let body = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    body.lines()
        .map(|l| {
            let mut fields: Vec<&str> = l.split(',').collect();
            fields.remove(1);
            fields.join(",")
        })
        .collect()
}

/// Asserts that chain `c` of runs `a` and `b` (directories under `dir`) went the same way:
/// traces (but for timing), draws, best states, final labels.
fn same_chain(dir: &TempDir, a: &str, b: &str, c: u64) {
    let path = |run: &str, file: &str| dir.0.join(format!("{run}/chain-{c}/{file}"));
    let ta = timeless_trace(&path(a, "trace.csv"));
    assert!(ta.len() > 1, "an empty trace");
    assert_eq!(
        ta,
        timeless_trace(&path(b, "trace.csv")),
        "chain {c}: traces"
    );
    for file in ["draws.jsonl", "best.json", "labels.txt"] {
        assert_eq!(
            std::fs::read(path(a, file)).expect("a file of the run"),
            std::fs::read(path(b, file)).expect("a file of the run"),
            "chain {c}: {file}"
        );
    }
}

/// The sweep of chain `c`'s checkpoint in run directory `run`.
fn checkpoint_sweep(run: &Path, c: u64) -> u64 {
    let path = run.join(format!("chain-{c}/checkpoint.json"));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("a checkpoint"))
        .expect("checkpoint JSON");
    u64_of(field(&v, "state"), "sweep")
}

/// The model and sampler flags of the resume tests: every hyperparameter resampled, so that
/// the prior's state and the RNG's continuous draws are part of what must continue exactly.
fn resume_flags(x: &str) -> Vec<String> {
    [
        "run",
        "--data",
        x,
        "--sampler",
        "sams",
        "--prior",
        "nggp",
        "--hyperpriors",
        "--chains",
        "2",
        "--thin",
        "2",
        "--checkpoint-every",
        "10",
        "--seed",
        "7",
    ]
    .map(str::to_string)
    .to_vec()
}

fn with<'a>(base: &'a [String], more: &[&'a str]) -> Vec<&'a str> {
    base.iter()
        .map(String::as_str)
        .chain(more.iter().copied())
        .collect()
}

/// A run stopped after its checkpoint at sweep 30 (having traced 31 to 35 beyond it) and
/// resumed to 70 sweeps is the run that went straight to 70: same traces, draws, best states,
/// labels and diagnostics.
#[test]
fn resume_continues_exactly_as_a_straight_run() {
    let dir = TempDir::new("resume");
    let (x, _) = mixture(&dir, 80, 3, 5);
    let base = resume_flags(&x);
    let (a, b) = (dir.arg("a"), dir.arg("b"));
    ok(&with(&base, &["--sweeps", "35", "--out", &a]));
    assert_eq!(checkpoint_sweep(&dir.0.join("a"), 0), 30);
    let said = ok(&["run", "--resume", &a, "--sweeps", "70"]);
    assert!(said.contains("chain 1: 70 sweeps"), "{said}");
    ok(&with(&base, &["--sweeps", "70", "--out", &b]));
    for c in 0..2 {
        same_chain(&dir, "a", "b", c);
    }
    let summary = |run: &str| -> Value {
        serde_json::from_str(&dir.read(&format!("{run}/summary.json"))).expect("summary.json")
    };
    let (sa, sb) = (summary("a"), summary("b"));
    for key in ["diagnostics", "k_distribution"] {
        assert_eq!(field(&sa, key), field(&sb, key), "{key}");
    }
    for key in ["chain", "sweep", "log_joint"] {
        assert_eq!(
            field(field(&sa, "point_estimate"), key),
            field(field(&sb, "point_estimate"), key)
        );
    }
    assert_eq!(dir.read("a/estimate.txt"), dir.read("b/estimate.txt"));
    let settings: Value = serde_json::from_str(&dir.read("a/run.json")).expect("run.json");
    assert_eq!(
        field(&settings, "commands").as_array().map(Vec::len),
        Some(2)
    );
    // Resuming a finished run at its last checkpoint without a new budget changes nothing.
    ok(&["run", "--resume", &a]);
    same_chain(&dir, "a", "b", 0);
}

/// The tree-guided samplers resume exactly too, with every hyperparameter resampled: `tgmcmc`
/// builds its canonical trees at the run's initial prior (rebuilt from `run.json`, not taken
/// from the checkpoint), and `tgmcmc-paper` keeps its trees in the checkpoint. A run stopped
/// after its checkpoint at sweep 20 and resumed to 40 is the run that went straight to 40,
/// from a noisy-IBHC start.
#[test]
fn tree_guided_runs_resume_exactly_as_straight_runs() {
    let dir = TempDir::new("resume-tree");
    let (x, _) = mixture(&dir, 80, 3, 5);
    for sampler in ["tgmcmc", "tgmcmc-paper"] {
        let base: Vec<String> = resume_flags(&x)
            .into_iter()
            .map(|f| if f == "sams" { sampler.to_string() } else { f })
            .chain(["--global-moves", "3", "--init", "noisy-ibhc"].map(str::to_string))
            .collect();
        let (a, b) = (format!("{sampler}-a"), format!("{sampler}-b"));
        ok(&with(&base, &["--sweeps", "25", "--out", &dir.arg(&a)]));
        assert_eq!(checkpoint_sweep(&dir.0.join(&a), 0), 20);
        ok(&["run", "--resume", &dir.arg(&a), "--sweeps", "40"]);
        ok(&with(&base, &["--sweeps", "40", "--out", &dir.arg(&b)]));
        for c in 0..2 {
            same_chain(&dir, &a, &b, c);
        }
    }
}

/// Ctrl-C stops every chain at its next sweep with the traces flushed and the checkpoints
/// intact, says on one line how to resume, and exits with 130; the resumed run is the run
/// that never stopped.
#[cfg(unix)]
#[test]
fn ctrl_c_stops_cleanly_and_the_run_resumes() {
    let dir = TempDir::new("sigint");
    let (x, _) = mixture(&dir, 200, 4, 6);
    let base = resume_flags(&x);
    let run = dir.arg("r");
    let child = Command::new(BIN)
        .args(with(&base, &["--sweeps", "100000000", "--out", &run]))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nrmm starts");
    let start = std::time::Instant::now();
    let ready = |c: u64| dir.0.join(format!("r/chain-{c}/checkpoint.json")).is_file();
    while !(ready(0) && ready(1)) {
        assert!(
            start.elapsed().as_secs() < 120,
            "no checkpoints after two minutes"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let out = child.wait_with_output().expect("nrmm ends");
    let stderr = cli::without_run_header(&text(&out.stderr));
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("interrupted: "), "{stderr}");
    assert!(
        stderr.contains(&format!("resume with: nrmm run --resume {run}")),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    assert!(!dir.0.join("r/summary.json").exists());
    let mut furthest = 0;
    for c in 0..2 {
        let sweep = checkpoint_sweep(&dir.0.join("r"), c);
        assert!(sweep >= 10 && sweep.is_multiple_of(10), "{sweep}");
        let rows = timeless_trace(&dir.0.join(format!("r/chain-{c}/trace.csv")));
        let last: u64 = rows
            .last()
            .and_then(|r| r.split(',').next())
            .and_then(|s| s.parse().ok())
            .expect("a traced sweep");
        assert!(
            last >= sweep,
            "trace flushed to {last}, checkpoint at {sweep}"
        );
        furthest = furthest.max(sweep);
    }
    // What the interrupted run did can be read before it is resumed.
    let said = ok(&["diagnose", &run]);
    for needle in [
        "warning: chain 0",
        "did not finish",
        "best state visited",
        "2 chains",
    ] {
        assert!(said.contains(needle), "{needle:?} not in {said}");
    }
    let target = (furthest + 20).to_string();
    ok(&["run", "--resume", &run, "--sweeps", &target]);
    ok(&with(
        &base,
        &["--sweeps", &target, "--out", &dir.arg("straight")],
    ));
    for c in 0..2 {
        same_chain(&dir, "r", "straight", c);
    }
}

#[test]
fn checkpoint_and_resume_mistakes_are_one_line() {
    let dir = TempDir::new("resume-errors");
    let (x, _) = mixture(&dir, 30, 2, 1);
    let base = resume_flags(&x);
    let a = dir.arg("a");
    ok(&with(&base, &["--sweeps", "20", "--out", &a]));
    fails_no_stdout(
        &["run", "--resume", &dir.arg("absent")],
        1,
        &["absent", "is not a directory"],
    );
    std::fs::create_dir_all(dir.0.join("empty")).expect("a directory");
    fails_no_stdout(
        &["run", "--resume", &dir.arg("empty")],
        1,
        &["empty", "not a run directory", "run.json"],
    );
    ok(&[
        "run",
        "--data",
        &x,
        "--sweeps",
        "3",
        "--out",
        &dir.arg("plain"),
    ]);
    fails_no_stdout(
        &["run", "--resume", &dir.arg("plain")],
        1,
        &["without --checkpoint-every"],
    );
    fails_no_stdout(
        &["run", "--resume", &a, "--data", &x],
        2,
        &["--resume", "--data"],
    );
    fails_no_stdout(
        &["run", "--resume", &a, "--seed", "3"],
        2,
        &["--resume", "--seed"],
    );
    fails_no_stdout(&["run"], 2, &["--out"]);
    fails_no_stdout(
        &["run", "--checkpoint-every", "0", "--out", &dir.arg("o")],
        1,
        &["--checkpoint-every"],
    );
    fails_no_stdout(
        &[
            "run",
            "--burn-in",
            "5",
            "--sweeps",
            "5",
            "--out",
            &dir.arg("o"),
        ],
        1,
        &["--burn-in", "5 of each chain"],
    );
    fails_no_stdout(
        &["run", "--resume", &a, "--sweeps", "10"],
        1,
        &["checkpointed at sweep 20", "--sweeps 20"],
    );
    fails_no_stdout(
        &["run", "--resume", &a, "--burn-in", "30"],
        1,
        &["--burn-in"],
    );
    // A checkpoint of another run (another seed) is refused, as is a damaged one.
    let other = dir.arg("other");
    let mut flags = base.clone();
    let seed = flags.iter().position(|f| f == "--seed").expect("--seed") + 1;
    flags[seed] = "8".to_string();
    ok(&with(&flags, &["--sweeps", "20", "--out", &other]));
    let checkpoint = |run: &str| dir.0.join(format!("{run}/chain-0/checkpoint.json"));
    let own = std::fs::read(checkpoint("a")).expect("a checkpoint");
    std::fs::copy(checkpoint("other"), checkpoint("a")).expect("copy a checkpoint");
    fails_no_stdout(
        &["run", "--resume", &a],
        1,
        &["checkpoint.json", "belongs to another run"],
    );
    // Damaged, with no good previous checkpoint to fall back to.
    let previous = dir.0.join("a/chain-0/checkpoint.prev.json");
    let kept = std::fs::read(&previous).expect("the previous checkpoint");
    std::fs::write(&previous, "").expect("damage the previous checkpoint");
    std::fs::write(checkpoint("a"), "{\"format\": 3").expect("damage a checkpoint");
    fails_no_stdout(
        &["run", "--resume", &a],
        1,
        &["checkpoint.json", "corrupt", "checkpoint.prev.json"],
    );
    std::fs::write(&previous, kept).expect("restore the previous checkpoint");
    std::fs::write(checkpoint("a"), own).expect("restore the checkpoint");
    ok(&["run", "--resume", &a]);
    // Changed data, and a run file of another kind.
    let changed = std::fs::read_to_string(&x)
        .expect("the data")
        .replacen('.', "1", 1);
    std::fs::write(&x, changed).expect("change the data");
    fails_no_stdout(
        &["run", "--resume", &a],
        1,
        &["differ from those", "same data"],
    );
    std::fs::write(dir.0.join("a/run.json"), "{\"format\": \"nrmm-run/0\"}").expect("write");
    fails_no_stdout(&["run", "--resume", &a], 1, &["run.json", "nrmm-run/0"]);
}

// ---------------------------------------------------------------------------------------------
// diagnose, predict, compare, plot.

/// Chains run as separate processes with `--chain-offset` are the chains of one run: their
/// merged diagnostics equal those of the run that had them all.
#[test]
fn chains_run_apart_merge_into_one_run() {
    let dir = TempDir::new("diagnose");
    let (x, _) = mixture(&dir, 60, 3, 2);
    let flags = |chains: &str, offset: &str, out: &str| -> Vec<String> {
        [
            "run",
            "--data",
            &x,
            "--sampler",
            "jain-neal",
            "--sweeps",
            "40",
            "--seed",
            "2",
            "--chains",
            chains,
            "--chain-offset",
            offset,
            "--out",
            out,
        ]
        .map(str::to_string)
        .to_vec()
    };
    let (all, p0, p1) = (dir.arg("all"), dir.arg("p0"), dir.arg("p1"));
    for args in [
        flags("4", "0", &all),
        flags("2", "0", &p0),
        flags("2", "2", &p1),
    ] {
        ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    }
    assert!(dir.0.join("p1/chain-3/trace.csv").is_file());
    assert_eq!(
        timeless_trace(&dir.0.join("p1/chain-3/trace.csv")),
        timeless_trace(&dir.0.join("all/chain-3/trace.csv"))
    );
    let merged = ok_json(&["diagnose", &p0, &p1, "--json"]);
    let whole: Value = serde_json::from_str(&dir.read("all/summary.json")).expect("summary");
    for key in ["diagnostics", "k_distribution"] {
        assert_eq!(field(&merged, key), field(&whole, key), "{key}");
    }
    for key in ["chain", "sweep", "log_joint", "n_clusters"] {
        assert_eq!(
            field(field(&merged, "point_estimate"), key),
            field(field(&whole, "point_estimate"), key),
            "{key}"
        );
    }
    let chains = field(&merged, "chains").as_array().expect("chains");
    let ids: Vec<u64> = chains.iter().map(|c| u64_of(c, "chain")).collect();
    assert_eq!(ids, [0, 1, 2, 3]);
    let text = ok(&[
        "diagnose",
        &p0,
        &p1,
        "--burn-in",
        "10",
        "--out",
        &dir.arg("merged"),
    ]);
    assert!(
        text.contains("burn-in of 10 sweeps per chain (4 chains"),
        "{text}"
    );
    assert!(text.contains("R-hat"), "{text}");
    for file in ["summary.json", "estimate.txt", "map.txt"] {
        assert!(dir.0.join("merged").join(file).is_file(), "{file}");
    }
    fails_no_stdout(
        &["diagnose", &p0, &all],
        1,
        &["chain 0", "same chain", "--chain-offset"],
    );
    let (other, _) = {
        let sub = TempDir::new("diagnose-other");
        let (ox, oy) = mixture(&sub, 50, 2, 9);
        let moved = (dir.arg("ox.txt"), dir.arg("oy.txt"));
        std::fs::copy(&ox, &moved.0).expect("copy");
        std::fs::copy(&oy, &moved.1).expect("copy");
        moved
    };
    let o = dir.arg("o");
    ok(&[
        "run",
        "--data",
        &other,
        "--sweeps",
        "5",
        "--chain-offset",
        "9",
        "--out",
        &o,
    ]);
    fails_no_stdout(&["diagnose", &p0, &o], 1, &["different data"]);
    std::fs::create_dir_all(dir.0.join("nothing")).expect("a directory");
    fails_no_stdout(&["diagnose", &dir.arg("nothing")], 1, &["holds no run"]);
    fails_no_stdout(&["diagnose"], 2, &["DIR"]);
    // A diagnosis of an interrupted chain reads what there is.
    std::fs::remove_file(dir.0.join("p1/chain-2/end.json")).expect("remove end.json");
    let text = ok(&["diagnose", &p1]);
    assert!(text.contains("warning: chain 2"), "{text}");
}

/// Prediction of the training points themselves recovers the point estimate's clusters, with
/// probabilities that sum to one and finite predictive densities.
#[test]
fn predict_writes_labels_and_probabilities() {
    let dir = TempDir::new("predict");
    let (x, _) = mixture(&dir, 90, 3, 4);
    let run = dir.arg("run");
    ok(&[
        "run",
        "--data",
        &x,
        "--sampler",
        "sams",
        "--sweeps",
        "60",
        "--chains",
        "2",
        "--out",
        &run,
    ]);
    let csv = ok(&["predict", "--run", &run, "--data", &x]);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    assert_eq!(
        header[..4],
        ["point", "label", "probability", "ln_predictive_density"]
    );
    assert_eq!(header.last(), Some(&"p_new"));
    let k = header.len() - 5;
    // Prediction builds on Dahl's estimate (a draw, with its hyperparameters).
    let estimate: Vec<usize> = dir
        .read("run/estimate-dahl.txt")
        .lines()
        .map(|l| l.parse().expect("a label"))
        .collect();
    assert_eq!(label_count(&dir.arg("run/estimate-dahl.txt")), k);
    let mut agree = 0;
    for (i, line) in lines.enumerate() {
        let v: Vec<f64> = line
            .split(',')
            .map(|s| s.parse().expect("a number"))
            .collect();
        assert_eq!(v[0] as usize, i);
        let probs = &v[4..];
        assert!((probs.iter().sum::<f64>() - 1.0).abs() < 1e-4, "{line}");
        assert!((v[2] - probs[v[1] as usize]).abs() < 1e-9, "{line}");
        assert!(v[3].is_finite(), "{line}");
        agree += usize::from(v[1] as usize == estimate[i]);
    }
    assert!(
        agree >= 80,
        "{agree} of 90 training points predicted into their own cluster"
    );
    let said = ok(&[
        "predict",
        "--run",
        &run,
        "--data",
        &x,
        "--out",
        &dir.arg("p.csv"),
    ]);
    assert!(said.starts_with("wrote 90 predictions"), "{said}");
    assert_eq!(dir.read("p.csv"), csv);

    let x3 = dir.arg("x3.txt");
    ok(&[
        "generate", "gaussian", "--n", "5", "--d", "3", "--k", "1", "--seed", "1", "--out", &x3,
    ]);
    fails_no_stdout(
        &["predict", "--run", &run, "--data", &x3],
        1,
        &["x3.txt", "dimension 3", "dimension 2"],
    );
    let counts = dir.arg("c.txt");
    ok(&[
        "generate", "counts", "--n", "5", "--d", "10", "--k", "1", "--seed", "1", "--out", &counts,
    ]);
    fails_no_stdout(
        &["predict", "--run", &run, "--data", &counts],
        1,
        &["c.txt", "counts"],
    );
    fails_no_stdout(
        &["predict", "--run", &dir.arg("none"), "--data", &x],
        1,
        &["none", "not a directory"],
    );
    fails_no_stdout(
        &["predict", "--run", &run, "--data", &dir.arg("missing.txt")],
        1,
        &["missing.txt"],
    );
    fails_no_stdout(
        &["predict", "--run", &run, "--data", &x, "--burn-in", "60"],
        1,
        &["no partition draws", "--burn-in"],
    );
    fails_no_stdout(&["predict", "--data", &x], 2, &["--run"]);
}

/// An SVG file that is not empty and parses as XML with an `svg` root.
fn assert_svg(path: &Path) {
    let body = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(!body.is_empty(), "{} is empty", path.display());
    let doc = roxmltree::Document::parse(&body)
        .unwrap_or_else(|e| panic!("{} is not XML: {e}", path.display()));
    assert_eq!(
        doc.root_element().tag_name().name(),
        "svg",
        "{}",
        path.display()
    );
    assert!(
        doc.descendants().count() > 20,
        "{} draws nearly nothing",
        path.display()
    );
}

#[test]
fn compare_runs_samplers_side_by_side() {
    let dir = TempDir::new("compare");
    let (x, y) = mixture(&dir, 60, 3, 3);
    let out = dir.arg("c");
    let said = ok(&[
        "compare",
        "--data",
        &x,
        "--labels",
        &y,
        "--samplers",
        "gibbs,sams",
        "--seconds",
        "0.3",
        "--seeds",
        "2",
        "--out",
        &out,
    ]);
    assert!(
        said.starts_with("2 samplers x 2 seeds, 0.3 s each"),
        "{said}"
    );
    for needle in [
        "| gibbs | 2 |",
        "| sams | 2 |",
        "ARI",
        "within 1 nat",
        "compare.md",
    ] {
        assert!(said.contains(needle), "{needle:?} not in {said}");
    }
    let csv = dir.read("c/compare.csv");
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 5, "{csv}");
    let col = |name: &str| rows[0].iter().position(|h| *h == name).expect(name);
    for r in &rows[1..] {
        let ari: f64 = r[col("ari")].parse().expect("an ARI");
        assert!((-1.0..=1.0).contains(&ari), "{ari}");
        let speed: f64 = r[col("sweeps_per_second")].parse().expect("a speed");
        assert!(speed > 0.0);
        assert!(r[col("seconds")].parse::<f64>().expect("seconds") >= 0.3);
    }
    // The best log joint seen is reached by at least the run that saw it.
    assert!(rows[1..]
        .iter()
        .any(|r| !r[col("time_to_within_1_nat")].is_empty()));
    let md = dir.read("c/compare.md");
    assert!(md.contains("| sampler | seed |"), "{md}");
    // Each run's leave-one-out predictive fit, by run name.
    assert!(md.contains("## Predictive fit"), "{md}");
    assert!(md.contains("| gibbs-seed1 | "), "{md}");
    for name in ["gibbs-seed1", "gibbs-seed2", "sams-seed1", "sams-seed2"] {
        assert!(
            dir.0.join("c").join(name).join("summary.json").is_file(),
            "{name}"
        );
    }
    for svg in [
        "log_joint",
        "n_clusters",
        "acceptance",
        "scatter",
        "k_posterior",
        "similarity",
        "density",
    ] {
        assert_svg(&dir.0.join(format!("c/{svg}.svg")));
    }
    // The comparison is a set of runs: diagnose and plot read it.
    let text = ok(&["diagnose", &out]);
    assert!(text.contains("4 chains"), "{text}");
    let plotted = ok(&["plot", &out, "--out", &dir.arg("plots")]);
    assert_eq!(plotted.lines().count(), 7, "{plotted}");

    fails_no_stdout(
        &["compare", "--samplers", "gibbs,gibs", "--out", &out],
        2,
        &["'gibs'", "gibbs, jain-neal, sams"],
    );
    fails_no_stdout(
        &["compare", "--samplers", "sams,sams", "--out", &out],
        1,
        &["--samplers", "sams twice"],
    );
    fails_no_stdout(&["compare", "--seeds", "0", "--out", &out], 1, &["--seeds"]);
    fails_no_stdout(
        &["compare", "--seconds", "0", "--out", &out],
        1,
        &["--seconds"],
    );
    fails_no_stdout(
        &[
            "compare",
            "--data",
            &x,
            "--labels",
            &dir.arg("x.txt"),
            "--out",
            &out,
        ],
        1,
        &["x.txt"],
    );
    fails_no_stdout(&["compare", "--samplers", "gibbs"], 2, &["--out"]);
}

#[test]
fn plot_draws_what_the_run_has() {
    let dir = TempDir::new("plot");
    let x3 = dir.arg("x3.txt");
    ok(&[
        "generate", "gaussian", "--n", "40", "--d", "3", "--k", "2", "--seed", "1", "--out", &x3,
    ]);
    let run = dir.arg("run");
    ok(&[
        "run",
        "--data",
        &x3,
        "--sampler",
        "gibbs",
        "--sweeps",
        "30",
        "--chains",
        "2",
        "--out",
        &run,
    ]);
    let said = ok(&["plot", &run]);
    assert_eq!(
        said.matches("wrote ").count(),
        5,
        "Gibbs has no proposals, 3-D data no scatter, and the density's margins: {said}"
    );
    assert!(!said.contains("note: no density"), "{said}");
    for svg in [
        "log_joint",
        "n_clusters",
        "k_posterior",
        "similarity",
        "density",
    ] {
        assert_svg(&dir.0.join(format!("run/{svg}.svg")));
    }
    assert!(!dir.0.join("run/acceptance.svg").exists());
    assert!(!dir.0.join("run/scatter.svg").exists());
    // The pictures follow the run's default estimate (the VI estimate) and its credible ball.
    let svg = |name: &str| std::fs::read_to_string(dir.0.join(format!("run/{name}.svg"))).unwrap();
    let k = svg("k_posterior");
    assert!(
        k.contains("VI estimate") && k.contains("credible ball"),
        "{k}"
    );
    assert!(svg("similarity").contains("VI estimate"));
    // A run whose default is Dahl's (its search skipped, as above 20,000 points) is pictured
    // by Dahl's estimate, whatever files lie beside it.
    let summary_path = dir.0.join("run/summary.json");
    let text = std::fs::read_to_string(&summary_path).unwrap();
    std::fs::write(
        &summary_path,
        text.replace(
            "\"default_estimate\": \"vi\"",
            "\"default_estimate\": \"dahl\"",
        ),
    )
    .unwrap();
    ok(&["plot", &run]);
    let k = svg("k_posterior");
    assert!(k.contains("Dahl") && !k.contains("VI estimate") && !k.contains("credible ball"));
    let (x, _) = mixture(&dir, 40, 2, 1);
    let run2 = dir.arg("run2");
    ok(&[
        "run",
        "--data",
        &x,
        "--sampler",
        "jain-neal",
        "--sweeps",
        "30",
        "--out",
        &run2,
    ]);
    let said = ok(&["plot", &run2]);
    assert_eq!(said.lines().count(), 7, "{said}");
    assert_svg(&dir.0.join("run2/scatter.svg"));
    assert_svg(&dir.0.join("run2/density.svg"));
    assert_svg(&dir.0.join("run2/acceptance.svg"));
    // A run that traced no sweep (its --thin outlasted its time budget) still plots.
    let empty = dir.arg("empty");
    ok(&[
        "run",
        "--data",
        &x,
        "--seconds",
        "0.05",
        "--thin",
        "1000000000",
        "--out",
        &empty,
    ]);
    assert_eq!(ok(&["plot", &empty]).lines().count(), 2);
    assert_svg(&dir.0.join("empty/log_joint.svg"));
    // Runs whose data are not here (copied from another machine) plot all but the scatter.
    std::fs::rename(&x, dir.arg("moved.txt")).expect("move the data");
    let said = ok(&["plot", &run2]);
    assert_eq!(said.matches("wrote ").count(), 5, "{said}");
    assert!(said.contains("note: no scatter"), "{said}");
    assert!(said.contains("note: no density"), "{said}");
    fails_no_stdout(&["plot", &dir.arg("none")], 1, &["none"]);
    fails_no_stdout(&["plot"], 2, &["DIR"]);
}

/// Rows of `n` points in `d` dimensions from a fixed pseudo-random formula (in (-1, 1)), scaled by `scale`
/// and shifted by `shift` in every other point.
fn formula_points(n: usize, d: usize, scale: f64, shift: f64) -> String {
    let mut text = String::new();
    for i in 0..n {
        let row: Vec<String> = (0..d)
            .map(|j| {
                let v = ((i as f64 * 12.9898 + j as f64 * 78.233).sin() * 43758.5453).fract();
                format!("{}", scale * (v + if i % 2 == 1 { shift } else { 0.0 }))
            })
            .collect();
        text.push_str(&row.join(" "));
        text.push('\n');
    }
    text
}

/// `run` of Gibbs from one cluster on `data` with `chains` chains of 20 sweeps into `out`, under the
/// reference prior when `reference`: what it prints.
fn run_from_one_cluster(data: &str, chains: &str, out: &str, reference: bool) -> String {
    let mut args = vec![
        "run",
        "--data",
        data,
        "--sampler",
        "gibbs",
        "--init",
        "single",
        "--chains",
        chains,
        "--sweeps",
        "20",
        "--out",
        out,
    ];
    if reference {
        args.extend(["--nw-defaults", "reference"]);
    }
    ok(&args)
}

/// `run` says when a chain never left its start and when clusters crumble into a few points
/// each, in its output and in summary.json.
#[test]
fn run_warns_of_stuck_and_crowded_chains() {
    let dir = TempDir::new("run-warnings");
    // Under the reference prior, data in tiny units look like one cluster: Gibbs from one
    // cluster never moves.
    let tiny = dir.write("tiny.txt", &formula_points(40, 2, 1e-4, 3.0));
    let out = dir.arg("stuck");
    let text = run_from_one_cluster(&tiny, "1", &out, true);
    assert!(
        text.contains("ended in the partition it started from")
            && text.contains("(--sampler sams)"),
        "{text}"
    );
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{out}/summary.json")).unwrap())
            .unwrap();
    let warnings = summary["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains("may be stuck")),
        "{summary}"
    );
    // Chains that all stay in the same state agree: nothing is reported.
    let text = run_from_one_cluster(&tiny, "2", &dir.arg("agree"), true);
    assert!(!text.contains("started from"), "{text}");
    // The same start under the default prior moves, and says nothing of it.
    let text = run_from_one_cluster(&tiny, "1", &dir.arg("moves"), false);
    assert!(!text.contains("started from"), "{text}");
    // Twenty dimensions of 60 points under the reference prior: dozens of crumbs.
    let wide = dir.write("wide.txt", &formula_points(60, 20, 4.0, 0.0));
    let out = dir.arg("crowded");
    let text = ok(&[
        "run",
        "--data",
        &wide,
        "--nw-defaults",
        "reference",
        "--init",
        "singletons",
        "--chains",
        "1",
        "--sweeps",
        "5",
        "--out",
        &out,
    ]);
    assert!(text.contains("clusters this small"), "{text}");
}

/// `run` opens with one line on standard error naming the model, the kernel, the sampler and
/// its moves, the chains and the budget; chains that have not mixed are told how many sweeps
/// to try; a stuck split-merge chain is told what helps it, not to use the sampler it runs.
#[test]
fn run_announces_itself_and_its_warnings_say_what_to_try() {
    let dir = TempDir::new("run-messages");
    let two = dir.write("two.txt", &formula_points(40, 2, 1.0, 3.0));
    let out = nrmm(&[
        "run",
        "--data",
        &two,
        "--chains",
        "2",
        "--sweeps",
        "8",
        "--out",
        &dir.arg("short"),
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    let header: Vec<&str> = stderr.lines().filter(|l| l.starts_with("run: ")).collect();
    assert_eq!(header.len(), 1, "{stderr}");
    for needle in [
        "DP(α = 1) mixture",
        "Normal-Wishart kernel (scale from a pilot's 3 clusters, 2 chains of 200 sweeps)",
        "40 × 2 points",
        "sampler tgmcmc (chosen for n = 40; 10 tree-guided proposals + 1 Gibbs sweep per sweep)",
        "2 chains of 8 sweeps",
        "--init auto",
        "--seed 1",
    ] {
        assert!(header[0].contains(needle), "{needle:?} not in {stderr}");
    }
    assert!(
        stdout.contains("the chains have not mixed") && stdout.contains("(try --sweeps 80)"),
        "{stdout}"
    );
    // SAMS without proposals, from one cluster of data that look like one under the
    // reference prior: stuck, and told to propose more.
    let tiny = dir.write("tiny.txt", &formula_points(40, 2, 1e-4, 3.0));
    let stuck = ok(&[
        "run",
        "--data",
        &tiny,
        "--nw-defaults",
        "reference",
        "--init",
        "single",
        "--chains",
        "1",
        "--sweeps",
        "20",
        "--sampler",
        "sams",
        "--proposals",
        "0",
        "--out",
        &dir.arg("stuck"),
    ]);
    assert!(
        stuck.contains("may be stuck") && stuck.contains("(--proposals 10)"),
        "{stuck}"
    );
    assert!(!stuck.contains("--sampler"), "{stuck}");
}

/// Column names from a CSV header name the scatter's axes.
#[test]
fn plot_names_the_scatter_axes_from_the_header() {
    let dir = TempDir::new("plot-axes");
    let mut csv = String::from("sepal_length,petal_width\n");
    csv.push_str(&formula_points(30, 2, 1.0, 3.0).replace(' ', ","));
    let data = dir.write("iris.csv", &csv);
    let out = dir.arg("run");
    ok(&["run", "--data", &data, "--sweeps", "20", "--out", &out]);
    let plots = dir.arg("plots");
    ok(&["plot", &out, "--out", &plots]);
    let svg = std::fs::read_to_string(format!("{plots}/scatter.svg")).expect("a scatter");
    assert!(
        svg.contains("sepal_length") && svg.contains("petal_width"),
        "axes unnamed"
    );
}

/// `sva` and `tree` read a CSV with an id column as the other verbs do (`--skip-columns`),
/// held-out points too.
#[test]
fn sva_and_tree_skip_columns_of_a_header() {
    let dir = TempDir::new("sva-tree-columns");
    let mut csv = String::from("id,a,b\n");
    for (i, line) in formula_points(30, 2, 1.0, 3.0).lines().enumerate() {
        csv.push_str(&format!("{},{}\n", i + 1, line.replace(' ', ",")));
    }
    let data = dir.write("points.csv", &csv);
    let said = ok(&[
        "sva",
        "--data",
        &data,
        "--skip-columns",
        "id",
        "--heldout",
        &data,
    ]);
    assert!(said.contains("over 30 points (dimension 2)"), "{said}");
    let tree = ok(&["tree", "--data", &data, "--skip-columns", "id"]);
    assert!(tree.trim_end().ends_with(';'), "{tree}");
    fails_no_stdout(
        &["sva", "--data", &data, "--skip-columns", "nope"],
        1,
        &["nope"],
    );
}
