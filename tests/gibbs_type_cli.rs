//! The Pitman-Yor and MFM priors on the `nrmm` command line: `check-exact` puts every sampler
//! that takes them (the exact sub-cluster sampler among them) at the noise floor of the
//! exact posterior of data set B; `run` records them; and what cannot take them refuses,
//! naming what can.

use serde_json::Value;

use crate::support::cli;
use cli::{check_exact_json, fails, ok, set_b, TempDir};

const PY: [&str; 6] = ["--prior", "py", "--alpha", "-0.2", "--sigma", "0.4"];
const MFM: [&str; 6] = [
    "--prior",
    "mfm",
    "--gamma",
    "0.5",
    "--k-prior",
    "geometric:0.3",
];

#[test]
fn every_sampler_that_takes_them_is_at_the_noise_floor() {
    every_sampler_at_the_noise_floor(&[&PY[..], &MFM[..]]);
}

/// `check-exact` of every sampler that takes Gibbs-type priors under each of `priors` (its
/// flags) within twice the noise floor.
fn every_sampler_at_the_noise_floor(priors: &[&[&str]]) {
    for sampler in ["gibbs", "jain-neal", "sams", "tgmcmc", "subcluster"] {
        for prior in priors {
            let mut args = vec!["--sampler", sampler];
            args.extend_from_slice(prior);
            let (tv, floor) = check_exact_json(&args);
            assert!(
                tv < 2.0 * floor,
                "{sampler} {prior:?}: TV {tv}, floor {floor}"
            );
        }
    }
}

/// With `--hyperpriors` (Pitman-Yor: θ ~ Gamma(1, 1), σ ~ Beta(1.5, 1.5) on [0.01, 0.99];
/// MFM: γ ~ Gamma(1, 1)) the exact posterior integrates them out and every sampler, whose
/// sweeps then resample them, is at its noise floor.
#[test]
fn every_sampler_with_hyperpriors_is_at_the_noise_floor() {
    every_sampler_at_the_noise_floor(&[
        &["--prior", "py", "--hyperpriors"],
        &["--prior", "mfm", "--k-prior", "poisson:2", "--hyperpriors"],
    ]);
}

/// The exact posteriors with hyperpriors are laws over K, each different from the posterior
/// at the hyperpriors' starting values.
#[test]
fn exact_with_hyperpriors_differs_from_fixed() {
    for prior in [&["--prior", "py"][..], &["--prior", "mfm"]] {
        let mut means = Vec::new();
        for extra in [&[][..], &["--hyperpriors"]] {
            let mut args = vec!["exact", "--json"];
            args.extend_from_slice(prior);
            args.extend_from_slice(extra);
            let v: Value = serde_json::from_str(&ok(&args)).expect("exact prints JSON");
            let total: f64 = v["k_probabilities"]
                .as_array()
                .expect("k probabilities")
                .iter()
                .map(|e| e["probability"].as_f64().expect("probability"))
                .sum();
            assert!((total - 1.0).abs() < 1e-9, "{args:?}: {total}");
            means.push(v["expected_k"].as_f64().expect("expected_k"));
        }
        assert!((means[0] - means[1]).abs() > 1e-6, "{prior:?}: {means:?}");
    }
}

#[test]
fn a_run_records_the_prior_and_its_hyperparameters() {
    let dir = TempDir::new("gibbs-type-run");
    let data = set_b(&dir);
    let out = dir.arg("out");
    ok(&[
        "run",
        "--data",
        &data,
        "--prior",
        "mfm",
        "--k-prior",
        "poisson:2",
        "--hyperpriors",
        "--sweeps",
        "40",
        "--checkpoint-every",
        "20",
        "--chains",
        "2",
        "--seed",
        "3",
        "--out",
        &out,
    ]);
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{out}/run.json")).unwrap()).unwrap();
    let text = record.to_string();
    assert!(text.contains("\"prior\":\"mfm\""), "{text}");
    assert!(text.contains("\"k_prior\":\"poisson:2\""), "{text}");
    let trace = std::fs::read_to_string(format!("{out}/chain-0/trace.csv")).unwrap();
    assert!(trace.lines().next().unwrap().ends_with(",gamma"), "{trace}");
    // The run resumes with the same prior.
    ok(&["run", "--resume", &out, "--sweeps", "60"]);
}

#[test]
fn what_cannot_take_them_refuses() {
    let dir = TempDir::new("gibbs-type-refusals");
    let data = set_b(&dir);
    let out = dir.arg("out");
    for sampler in [
        "subcluster-dpmm",
        "direct",
        "quasi-direct",
        "quasi-collapsed",
        "tgmcmc-paper",
    ] {
        fails(
            &[
                "run",
                "--data",
                &data,
                "--prior",
                "py",
                "--sampler",
                sampler,
                "--sweeps",
                "5",
                "--out",
                &out,
            ],
            1,
            &[sampler, "gibbs, jain-neal, sams, tgmcmc, subcluster"],
        );
    }
    fails(
        &["sva", "--data", &data, "--prior", "nggp"],
        1,
        &["--prior nggp", "Pitman-Yor process or MFM"],
    );
    fails(
        &[
            "run", "--data", &data, "--gamma", "2", "--sweeps", "5", "--out", &out,
        ],
        1,
        &["--gamma", "--prior mfm"],
    );
    fails(
        &[
            "run", "--data", &data, "--prior", "mfm", "--alpha", "2", "--sweeps", "5", "--out",
            &out,
        ],
        1,
        &["--alpha", "MFM"],
    );
    fails(
        &[
            "run", "--data", &data, "--prior", "py", "--alpha", "-0.5", "--sigma", "0.3",
            "--sweeps", "5", "--out", &out,
        ],
        1,
        &["--alpha"],
    );
}

/// `generate` draws partitions from Pitman-Yor's urn and the MFM's definition, the same for the
/// same seed, and names the flags that do not belong.
#[test]
fn generate_draws_from_them() {
    let dir = TempDir::new("gibbs-type-generate");
    let (a, b, labels) = (dir.arg("a.txt"), dir.arg("b.txt"), dir.arg("labels.txt"));
    for prior in [
        &["--prior", "py", "--alpha", "0.5", "--sigma", "0.3"][..],
        &[
            "--prior",
            "mfm",
            "--gamma",
            "2",
            "--k-prior",
            "geometric:0.4",
        ],
    ] {
        for out in [&a, &b] {
            let mut args = vec![
                "generate",
                "gaussian",
                "--n",
                "60",
                "--d",
                "2",
                "--seed",
                "5",
                "--out",
                out,
                "--labels-out",
                &labels,
            ];
            args.extend_from_slice(prior);
            assert!(ok(&args).contains("wrote 60 points"), "{prior:?}");
        }
        assert_eq!(
            std::fs::read_to_string(&a).unwrap(),
            std::fs::read_to_string(&b).unwrap()
        );
        assert_eq!(
            std::fs::read_to_string(&labels).unwrap().lines().count(),
            60
        );
    }
    let base = [
        "generate", "gaussian", "--n", "9", "--d", "2", "--seed", "1", "--out", &a,
    ];
    let with = |extra: &[&'static str]| {
        let mut v = base.to_vec();
        v.extend_from_slice(extra);
        v
    };
    fails(&with(&["--gamma", "2"]), 1, &["--gamma", "--prior mfm"]);
    fails(
        &with(&["--prior", "mfm", "--sigma", "0.2"]),
        1,
        &["--sigma", "--gamma"],
    );
    fails(
        &with(&["--prior", "py", "--alpha", "-0.6", "--sigma", "0.5"]),
        1,
        &["--alpha", "-sigma"],
    );
}

/// A Pitman-Yor prior with a negative concentration (θ > -σ) runs from the default start,
/// whose SVA pass weighs its components by the Pitman-Yor urn.
#[test]
fn a_negative_concentration_runs_from_the_default_start() {
    let dir = TempDir::new("gibbs-type-negative-theta");
    let data = set_b(&dir);
    let out = dir.arg("out");
    let mut args = vec![
        "run", "--data", &data, "--sweeps", "20", "--chains", "2", "--out", &out,
    ];
    args.extend_from_slice(&PY);
    ok(&args);
}
