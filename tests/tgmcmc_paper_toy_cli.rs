//! `nrmm run --sampler tgmcmc-paper` on the paper's toy data (`../shared/data/toy`, 1300 points
//! in 2-D, 13 clusters) from the paper's start (`--init noisy-ibhc`, whose forest the move takes
//! over; G = 10, D = 2): the best state a chain visits comes within 1 nat of the log joint of
//! the true partition, for at least 4 of seeds 1-5, under DP(α = 1) and under NGGP with the
//! reference hyperpriors. The true partition is the best any run reaches (DP: the golden
//! optimum -1577.569613); for NGGP it is evaluated by `nrmm loglik` at the hyperparameters of
//! the chain's best state, which the chain moves.
//!
//! The routine test runs a fixed number of sweeps (DP 450, NGGP 1000). The test of the issue's
//! budget, 5 s per chain, is ignored (it takes a minute of an idle machine):
//! `cargo test --release --test integration tgmcmc_paper_toy_cli:: -- --ignored --nocapture`.
//!
//! The Normal-Wishart hyperparameters are given on the command line as the reference computes
//! them from the data ([`NwHyper::from_data`]), so that the optimum does not move with the
//! command line's defaults. The tests print a message and pass when the data are absent.

use std::path::{Path, PathBuf};

use nrmm::data::load;
use nrmm::kernel::NwHyper;
use serde_json::Value;

use crate::support::cli;
use cli::{ok, TempDir};

/// The DP(1) log joint of the true partition of `toy`.
const DP_OPTIMUM: f64 = -1577.569613;

fn toy_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/toy");
    if dir.join("X.txt").is_file() {
        Some(dir)
    } else {
        println!("skipping: {} is absent", dir.display());
        None
    }
}

/// The data and model flags: the toy data with the reference Normal-Wishart hyperparameters.
fn model_flags(dir: &Path) -> Vec<String> {
    let data = dir.join("X.txt");
    let hyper = NwHyper::from_data(&load::load_dense(&data).unwrap()).unwrap();
    let list = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:e}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    vec![
        "--data".into(),
        data.display().to_string(),
        format!("--nw-xi={}", list(hyper.xi())),
        format!("--nw-psi={}", list(hyper.psi())),
        format!("--nw-r={:e}", hyper.r()),
        format!("--nw-nu={:e}", hyper.nu()),
    ]
}

/// The two priors of the paper's toy experiment.
fn priors() -> [(&'static str, Vec<&'static str>); 2] {
    [
        ("DP(1)", vec!["--prior", "dp", "--alpha", "1"]),
        (
            "NGGP, reference hyperpriors",
            vec!["--prior", "nggp", "--hyperpriors"],
        ),
    ]
}

/// Runs one chain of `budget` (`--sweeps N` or `--seconds S`) and returns how far its best
/// state's log joint is below that of the true partition at the best state's
/// hyperparameters, and the sweep at which it was visited.
fn gap(dir: &Path, prior: &[&str], budget: [&str; 2], seed: u64, tmp: &TempDir) -> (f64, u64) {
    let out = tmp.arg(&format!("{}-{seed}", prior[1]));
    let model = model_flags(dir);
    let seed = seed.to_string();
    let mut args: Vec<&str> = vec!["run"];
    args.extend(model.iter().map(String::as_str));
    args.extend(prior);
    args.extend([
        "--sampler",
        "tgmcmc-paper",
        "--global-moves",
        "10",
        "--depth",
        "2",
        "--init",
        "noisy-ibhc",
        "--seed",
        &seed,
        "--out",
        &out,
    ]);
    args.extend(budget);
    ok(&args);
    let best: Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(&out).join("chain-0/best.json")).unwrap(),
    )
    .unwrap();
    let best = &best["best"];
    let ln_best = best["log_joint"].as_f64().unwrap();
    let truth = if prior[1] == "dp" {
        DP_OPTIMUM
    } else {
        let hyper = |name: &str| best["hyper"][name].as_f64().unwrap().to_string();
        let (alpha, sigma, u) = (hyper("alpha"), hyper("sigma"), hyper("u"));
        let labels = dir.join("gt_labels.txt").display().to_string();
        let mut args: Vec<&str> = vec!["loglik"];
        args.extend(model.iter().map(String::as_str));
        args.extend([
            "--labels", &labels, "--prior", "nggp", "--alpha", &alpha, "--sigma", &sigma, "--u",
            &u, "--json",
        ]);
        let v: Value = serde_json::from_str(&ok(&args)).unwrap();
        v["log_joint"].as_f64().unwrap()
    };
    (truth - ln_best, best["sweep"].as_u64().unwrap())
}

/// Seeds 1-5 under both priors with `budget(prior index)`; asserts at least 4 of 5 within
/// 1 nat for each prior.
fn four_of_five(budget: impl Fn(usize) -> [&'static str; 2]) {
    let Some(dir) = toy_dir() else { return };
    let tmp = TempDir::new("tgmcmc-paper-toy");
    for (p, (name, prior)) in priors().iter().enumerate() {
        let mut reached = 0;
        for seed in 1..=5 {
            let (gap, sweep) = gap(&dir, prior, budget(p), seed, &tmp);
            println!("{name}, {:?}, seed {seed}: best {gap:.3} nats below the true partition (sweep {sweep})", budget(p));
            reached += usize::from(gap < 1.0);
        }
        println!("{name}: {reached} of 5 seeds within 1 nat");
        assert!(
            reached >= 4,
            "{name}: {reached} of 5 seeds came within 1 nat of the true partition"
        );
    }
}

#[test]
fn paper_sampler_from_the_command_line_reaches_the_toy_optimum() {
    four_of_five(|p| ["--sweeps", if p == 0 { "450" } else { "1000" }]);
}

#[test]
#[ignore = "a minute: cargo test --release --test integration tgmcmc_paper_toy_cli:: -- --ignored --nocapture"]
fn paper_sampler_reaches_the_toy_optimum_in_five_seconds() {
    four_of_five(|_| ["--seconds", "5"]);
}
