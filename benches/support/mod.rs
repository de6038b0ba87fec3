//! Shared set-up of the benchmarks on the paper's `toy` (1300 × 2) and `10k` (10000 × 6) data
//! sets: reading them from the shared data folder, the seeded stand-ins used when they are
//! absent, and the reference Normal-Wishart kernel (hyperparameters from the data as in the
//! reference code, MATH §2.1).
//!
//! Included by the benchmarks with `#[path = "support/mod.rs"] mod support;`.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use nrmm::data::generate::{gaussian_mixture, partition_crp, toy_like, NormalWishartSampler};
use nrmm::data::load::{load_dense, load_labels};
use nrmm::data::{canonical_labels, DenseData};
use nrmm::kernel::{NormalWishart, NwHyper};
use nrmm::rng::SeedPlan;

/// The shared data folder: `$NRMM_DATA_DIR` if set, else `../shared/data` from the
/// repository root.
pub fn data_root() -> PathBuf {
    std::env::var_os("NRMM_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data"))
}

/// Data set `name` (`<root>/<name>/X.txt`) with its canonical ground-truth labels when
/// `gt_labels.txt` is next to it; `None` when the data file is absent.
pub fn read(name: &str) -> Option<(DenseData, Option<Vec<usize>>)> {
    let dir = data_root().join(name);
    let x_path = dir.join("X.txt");
    if !x_path.exists() {
        return None;
    }
    let data = load_dense(&x_path).expect("readable data set");
    let labels_path = dir.join("gt_labels.txt");
    let labels = labels_path.exists().then(|| {
        let raw = load_labels(&labels_path, data.n()).expect("readable labels");
        canonical_labels(&raw)
    });
    Some((data, labels))
}

/// A seeded data set shaped like `name` with its generating labels, announced on standard
/// error: [`toy_like`] for `toy`, otherwise a Normal-Wishart mixture of 10000 points in 6
/// dimensions over a Chinese-restaurant partition with about 120 clusters.
pub fn stand_in(name: &str) -> (DenseData, Vec<usize>) {
    eprintln!(
        "{} not found: benchmarking a seeded stand-in for {name}",
        data_root().join(name).display()
    );
    if name == "toy" {
        return toy_like(1);
    }
    let d = 6;
    let mut rng = SeedPlan::new(10_000).chain(0);
    let labels = partition_crp(10_000, 19.0, &mut rng).expect("valid CRP");
    let psi: Vec<f64> = (0..d * d)
        .map(|k| if k % (d + 1) == 0 { 1.0 } else { 0.0 })
        .collect();
    let prior = NormalWishartSampler::new(&vec![0.0; d], &psi, 0.01, d as f64 + 6.0)
        .expect("valid Normal-Wishart prior");
    let (data, _) = gaussian_mixture(&labels, &prior, &mut rng).expect("mixture");
    (data, labels)
}

/// The Normal-Wishart kernel over `data` with the reference hyperparameters (MATH §2.1).
pub fn reference_kernel(data: DenseData) -> NormalWishart {
    let hyper = NwHyper::from_data(&data).expect("reference hyperparameters");
    NormalWishart::new(Arc::new(data), hyper).expect("kernel")
}
