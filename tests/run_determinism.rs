//! Reproducibility (ARCHITECTURE.md, "Randomness and reproducibility"): the same seed gives the
//! same trace and the same final labels, through the library's [`Chain`] and through the
//! `nrmm run` command with several chains on one thread or two; a different seed gives a
//! different trace.
//!
//! "The same trace" means every column but the wall-clock `seconds`: sweep number, number of
//! clusters, log joint, per-move proposal and acceptance counts and mean log acceptance ratio,
//! and every hyperparameter value, compared bit for bit in the library and character for
//! character in the CLI's CSV.

use crate::support;

use nrmm::data::generate::{gaussian_mixture, partition_equal, NormalWishartSampler};
use nrmm::data::load::write_dense;
use nrmm::data::DenseData;
use nrmm::kernel::NormalWishart;
use nrmm::partition::Partition;
use nrmm::prior::{AlphaUpdate, Dp, GammaPrior, Nggp, NggpHyperPriors, Prior};
use nrmm::rng::SeedPlan;
use nrmm::run::{Chain, SweepRecord};
use nrmm::sampler::State;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::{nw_reference, Sampler};

/// 120 points in 2-D from a 4-component Normal-Wishart mixture (seeded).
fn data() -> DenseData {
    let labels = partition_equal(120, 4).unwrap();
    let nw = NormalWishartSampler::new(&[0.0, 0.0], &[0.05, 0.0, 0.0, 0.05], 0.02, 5.0).unwrap();
    let mut rng = SeedPlan::new(77).chain(0);
    gaussian_mixture(&labels, &nw, &mut rng).unwrap().0
}

/// A sweep record without its wall-clock time, with every float as its bit pattern.
#[derive(Debug, PartialEq, Eq)]
struct Row {
    sweep: u64,
    n_clusters: usize,
    ln_joint: u64,
    moves: Vec<(&'static str, usize, usize, u64)>,
    hyper: Vec<(&'static str, u64)>,
}

impl From<&SweepRecord> for Row {
    fn from(r: &SweepRecord) -> Self {
        Row {
            sweep: r.sweep,
            n_clusters: r.n_clusters,
            ln_joint: r.ln_joint.to_bits(),
            moves: r
                .moves
                .iter()
                .map(|(name, info)| {
                    (
                        *name,
                        info.proposed,
                        info.accepted,
                        info.ln_accept_sum.to_bits(),
                    )
                })
                .collect(),
            hyper: r
                .hyper
                .columns()
                .into_iter()
                .map(|(name, v)| (name, v.to_bits()))
                .collect(),
        }
    }
}

/// The trace (without seconds) and final canonical labels of a library chain.
fn run_library(
    kernel: &NormalWishart,
    prior: &Prior,
    sampler: Sampler,
    seed: u64,
) -> (Vec<Row>, Vec<usize>) {
    let state = State {
        partition: Partition::single(kernel),
        prior: prior.clone(),
    };
    let mut chain = Chain::new(
        kernel,
        state,
        SeedPlan::new(seed).chain(0),
        sampler.schedule(true),
    );
    let rows = (0..150)
        .map(|_| Row::from(&chain.sweep().unwrap()))
        .collect();
    (rows, chain.state().partition.canonical_labels())
}

/// Same seed, same trace and labels; another seed, another trace; for every sampler, under
/// the DP with random `α` and the NGGP with the reference hyperpriors.
#[test]
fn library_chain_is_reproducible() {
    let kernel = nw_reference(data());
    let priors: [Prior; 2] = [
        Dp::with_alpha_prior(1.0, GammaPrior::reference(), AlphaUpdate::EscobarWest)
            .unwrap()
            .into(),
        Nggp::new(1.0, 0.5, 1.0, NggpHyperPriors::reference())
            .unwrap()
            .into(),
    ];
    for prior in &priors {
        for sampler in [Sampler::Gibbs, Sampler::JainNealGibbs, Sampler::SamsGibbs] {
            let what = format!("{} / {prior:?}", sampler.name());
            let (a, labels_a) = run_library(&kernel, prior, sampler, 5);
            let (b, labels_b) = run_library(&kernel, prior, sampler, 5);
            let (c, _) = run_library(&kernel, prior, sampler, 6);
            assert_eq!(a, b, "{what}: same seed, different traces");
            assert_eq!(labels_a, labels_b, "{what}: same seed, different labels");
            assert_ne!(a, c, "{what}: seeds 5 and 6 gave the same trace");
            assert!(
                a.iter().any(|r| r.n_clusters > 1),
                "{what}: the chain never left one cluster, so the comparison is vacuous"
            );
        }
    }
}

/// A fresh directory for this file's test `name`.
fn scratch(name: &str) -> PathBuf {
    let dir = crate::support::scratch("run_determinism", name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `nrmm run` with `RAYON_NUM_THREADS=threads` and returns its output directory.
fn run_cli(data: &Path, out: &Path, threads: usize, seed: u64, extra: &[&str]) -> PathBuf {
    let output = Command::new(env!("CARGO_BIN_EXE_nrmm"))
        .env("RAYON_NUM_THREADS", threads.to_string())
        .args(["run", "--data"])
        .arg(data)
        .args(["--chains", "2", "--sweeps", "150", "--seed"])
        .arg(seed.to_string())
        .args(extra)
        .arg("--out")
        .arg(out)
        .output()
        .expect("the nrmm binary runs");
    assert!(
        output.status.success(),
        "nrmm run failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    out.to_path_buf()
}

/// A chain's trace CSV without its `seconds` column, and its labels file.
fn chain_outputs(dir: &Path, chain: usize) -> (Vec<Vec<String>>, String) {
    let chain_dir = dir.join(format!("chain-{chain}"));
    let trace = std::fs::read_to_string(chain_dir.join("trace.csv")).unwrap();
    let mut lines = trace.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let seconds = header
        .iter()
        .position(|&h| h == "seconds")
        .expect("a seconds column");
    let keep = |line: &str| -> Vec<String> {
        line.split(',')
            .enumerate()
            .filter(|&(i, _)| i != seconds)
            .map(|(_, v)| v.to_string())
            .collect()
    };
    let mut rows = vec![keep(&header.join(","))];
    rows.extend(lines.map(keep));
    let labels = std::fs::read_to_string(chain_dir.join("labels.txt")).unwrap();
    (rows, labels)
}

/// `nrmm run --chains 2` gives identical traces (all columns but `seconds`) and labels on one
/// thread and on two; the two chains differ from each other; another seed differs.
#[test]
fn cli_run_is_reproducible_across_thread_counts() {
    let dir = scratch("cli");
    let data_path = dir.join("X.txt");
    write_dense(&data_path, &data()).unwrap();
    let settings: [&[&str]; 2] = [
        &["--sampler", "sams", "--prior", "nggp", "--hyperpriors"],
        &[
            "--sampler",
            "jain-neal",
            "--hyperpriors",
            "--launch-scans",
            "3",
        ],
    ];
    for (s, extra) in settings.iter().enumerate() {
        let one = run_cli(&data_path, &dir.join(format!("s{s}-t1")), 1, 21, extra);
        let two = run_cli(&data_path, &dir.join(format!("s{s}-t2")), 2, 21, extra);
        let other = run_cli(&data_path, &dir.join(format!("s{s}-seed")), 2, 22, extra);
        for chain in 0..2 {
            let (trace1, labels1) = chain_outputs(&one, chain);
            let (trace2, labels2) = chain_outputs(&two, chain);
            let (trace3, _) = chain_outputs(&other, chain);
            assert_eq!(trace1.len(), 151, "{extra:?}: a header and 150 rows");
            assert_eq!(trace1, trace2, "{extra:?} chain {chain}: 1 vs 2 threads");
            assert_eq!(
                labels1, labels2,
                "{extra:?} chain {chain}: labels, 1 vs 2 threads"
            );
            assert_ne!(
                trace1, trace3,
                "{extra:?} chain {chain}: seeds 21 and 22 agree"
            );
        }
        assert_ne!(
            chain_outputs(&one, 0).0,
            chain_outputs(&one, 1).0,
            "{extra:?}: chains 0 and 1 have the same trace"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
