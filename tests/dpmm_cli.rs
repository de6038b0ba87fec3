//! DPMM.jl's samplers on the `nrmm` command line: `--sampler subcluster`, `subcluster-dpmm`,
//! `direct`, `quasi-direct` and `quasi-collapsed` in `run` and `check-exact`, and the
//! rejection of NGGP by the samplers that support only the Dirichlet process.

use nrmm::data::load;
use serde_json::Value;

use crate::support::cli;
use cli::{check_exact_json, fails, ok, set_b, TempDir};

/// `nrmm run` of `sampler` on data set B: two chains of 30 sweeps, labels and summary written.
fn run_sampler(sampler: &str) {
    let dir = TempDir::new(sampler);
    let data = set_b(&dir);
    let out = dir.arg("out");
    let stdout = ok(&[
        "run",
        "--data",
        &data,
        "--sampler",
        sampler,
        "--sweeps",
        "30",
        "--chains",
        "2",
        "--seed",
        "3",
        "--out",
        &out,
    ]);
    assert!(stdout.contains("chain 1: 30 sweeps"), "{stdout}");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{out}/summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["sampler"], sampler);
    assert_eq!(
        load::load_labels(format!("{out}/chain-0/labels.txt"), 7)
            .unwrap()
            .len(),
        7
    );
}

/// `subcluster`: runs, and `check-exact` puts it at the noise floor.
#[test]
fn subcluster_runs_and_is_exact() {
    run_sampler("subcluster");
    let (tv, floor) = check_exact_json(&["--sampler", "subcluster"]);
    assert!(tv < 2.0 * floor, "subcluster: TV {tv}, floor {floor}");
}

/// `subcluster-dpmm`: runs, and `check-exact` shows its bias (TV about 0.58 on data set B,
/// `tests/dpmm_tv.rs`; its chain is sticky, so the floor of 20,000 sweeps is about 0.2).
#[test]
fn subcluster_dpmm_runs_and_is_biased() {
    run_sampler("subcluster-dpmm");
    let (tv, floor) = check_exact_json(&["--sampler", "subcluster-dpmm"]);
    assert!(tv > 2.0 * floor, "subcluster-dpmm: TV {tv}, floor {floor}");
}

/// `direct`: runs; NGGP is refused with one error line.
#[test]
fn direct_runs_and_refuses_nggp() {
    run_sampler("direct");
    let dir = TempDir::new("direct-nggp");
    let data = set_b(&dir);
    let out = dir.arg("out");
    fails(
        &[
            "run",
            "--data",
            &data,
            "--sampler",
            "direct",
            "--prior",
            "nggp",
            "--sweeps",
            "5",
            "--out",
            &out,
        ],
        1,
        &["direct", "NGGP"],
    );
}

/// `quasi-direct`: runs, also under NGGP.
#[test]
fn quasi_direct_runs() {
    run_sampler("quasi-direct");
    let (tv, _) = check_exact_json(&["--sampler", "quasi-direct", "--prior", "nggp"]);
    assert!(tv.is_finite());
}

/// `quasi-collapsed`: runs and `check-exact` reports a finite TV.
#[test]
fn quasi_collapsed_runs() {
    run_sampler("quasi-collapsed");
    let (tv, _) = check_exact_json(&["--sampler", "quasi-collapsed"]);
    assert!(tv.is_finite());
}
