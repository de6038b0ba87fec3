//! The samplers find the known optimum of the paper's toy data set (REFERENCE_FIGURES.md,
//! "Golden value"): under the DP with `α = 1` and the reference Normal-Wishart hyperparameters
//! (`NwHyper::from_data`, MATH §2.1), the ground-truth partition of `../shared/data/toy`
//! (1300 points, 13 clusters) has log joint `ln p(X, Π | α) = -1577.569613`, and no reference
//! run ever found a better one.
//!
//! Every sampler (Gibbs; Jain-Neal + one Gibbs sweep; SAMS + one Gibbs sweep), started from ONE
//! cluster with five seeds each, must reach a log joint within 0.01 of that value within
//! `MAX_SWEEPS` sweeps (sweeps are counted, not time, so the test does not depend on the
//! machine). The sweep at which each run first got there is printed.
//!
//! The tests skip with a message when `../shared/data/toy` is absent. Each sampler has its own
//! test so they run in parallel; together they take about 10 s in release.

use crate::support;

use nrmm::data::load::{load_dense, load_labels};
use nrmm::kernel::NormalWishart;
use nrmm::partition::Partition;
use nrmm::prior::{Dp, NrmPrior};
use nrmm::rng::SeedPlan;
use nrmm::run::Chain;
use nrmm::sampler::State;
use support::{data_dir, nw_reference, Sampler};

/// The golden log joint of the ground-truth partition (REFERENCE_FIGURES.md).
const GOLDEN: f64 = -1577.569613;
/// How close a run must get.
const TOLERANCE: f64 = 0.01;
/// The sweep budget of a run.
const MAX_SWEEPS: u64 = 2000;
/// Seeds per sampler.
const SEEDS: [u64; 5] = [1, 2, 3, 4, 5];

/// The toy kernel and the ground-truth labels, or `None` (with a message) when the data are
/// absent.
fn toy() -> Option<(NormalWishart, Vec<i64>)> {
    let dir = data_dir("toy")?;
    let x = load_dense(dir.join("X.txt")).expect("toy/X.txt is a dense matrix");
    let n = x.n();
    let labels = load_labels(dir.join("gt_labels.txt"), n).expect("toy/gt_labels.txt");
    Some((nw_reference(x), labels))
}

/// The sweep at which a run of `sampler` from one cluster first reaches `GOLDEN - TOLERANCE`,
/// or `Err(best log joint)` if it does not within `MAX_SWEEPS`.
fn sweeps_to_optimum(kernel: &NormalWishart, sampler: Sampler, seed: u64) -> Result<u64, f64> {
    let state = State {
        partition: Partition::single(kernel),
        prior: Dp::new(1.0).unwrap(),
    };
    let mut chain = Chain::new(
        kernel,
        state,
        SeedPlan::new(seed).chain(0),
        sampler.schedule(false),
    );
    let mut best = f64::NEG_INFINITY;
    while chain.sweeps_done() < MAX_SWEEPS {
        let record = chain.sweep().unwrap();
        best = best.max(record.ln_joint);
        if record.ln_joint >= GOLDEN - TOLERANCE {
            return Ok(record.sweep);
        }
    }
    Err(best)
}

/// Runs `sampler` for every seed, prints the sweeps needed, and fails listing the runs that
/// did not get there.
fn check(sampler: Sampler) {
    let Some((kernel, truth)) = toy() else {
        return;
    };
    let truth_joint = Partition::from_labels(&kernel, &truth)
        .unwrap()
        .ln_joint(&Dp::new(1.0).unwrap());
    assert!(
        (truth_joint - GOLDEN).abs() < 1e-5,
        "the ground truth's log joint is {truth_joint}, expected {GOLDEN}"
    );
    let mut misses = Vec::new();
    let mut reached = Vec::new();
    for seed in SEEDS {
        match sweeps_to_optimum(&kernel, sampler, seed) {
            Ok(sweeps) => reached.push(format!("seed {seed}: {sweeps}")),
            Err(best) => misses.push(format!(
                "seed {seed}: best {best:.6} after {MAX_SWEEPS} sweeps"
            )),
        }
    }
    println!(
        "{} (label: {}): sweeps to within {TOLERANCE} of {GOLDEN}: {}; missed: {}",
        sampler.name(),
        Dp::new(1.0).unwrap().joint_label(),
        reached.join(", "),
        if misses.is_empty() {
            "none".into()
        } else {
            misses.join(", ")
        }
    );
    assert!(
        misses.is_empty(),
        "{}: runs that did not reach the optimum: {}",
        sampler.name(),
        misses.join("; ")
    );
}

/// Gibbs alone from one cluster reaches the toy optimum within 2000 sweeps for 5 seeds.
#[test]
fn gibbs_reaches_toy_optimum() {
    check(Sampler::Gibbs);
}

/// Jain-Neal + Gibbs from one cluster reaches the toy optimum within 2000 sweeps for 5 seeds.
#[test]
fn jain_neal_reaches_toy_optimum() {
    check(Sampler::JainNealGibbs);
}

/// SAMS + Gibbs from one cluster reaches the toy optimum within 2000 sweeps for 5 seeds.
#[test]
fn sams_reaches_toy_optimum() {
    check(Sampler::SamsGibbs);
}
