//! The Pitman-Yor and MFM priors on the `nrmm` command line: `check-exact` puts every sampler
//! that takes them at the noise floor of the exact posterior of data set B; `run` records
//! them; and what cannot take them refuses, naming what can.

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
    for sampler in ["gibbs", "jain-neal", "sams", "tgmcmc"] {
        for prior in [&PY[..], &MFM[..]] {
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
    for sampler in ["gibbs", "jain-neal", "sams", "tgmcmc"] {
        for prior in [
            &["--prior", "py", "--hyperpriors"][..],
            &["--prior", "mfm", "--k-prior", "poisson:2", "--hyperpriors"],
        ] {
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
    for sampler in ["subcluster", "direct", "tgmcmc-paper"] {
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
            &[sampler, "gibbs, jain-neal, sams, tgmcmc"],
        );
    }
    fails(
        &["sva", "--data", &data, "--prior", "mfm"],
        1,
        &["--prior mfm", "gibbs, jain-neal, sams, tgmcmc"],
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
